"""Plain properties as a policy receives them from the engine, without the Pulumi SDK or protobuf.

Under the CLI a policy's properties cross gRPC as a ``google.protobuf.Struct``; ``pulumi_policy`` turns the
Struct back into Python with ``json_format.MessageToDict``, decodes Pulumi's special values
(``deserialize_properties``) and wraps the result so that reading a preview unknown raises
(``unknown_checking_proxy``): pulumi-policy ``sdk/python/lib/pulumi_policy/policy.py`` (``Analyze``,
``AnalyzeStack``), ``deserialize.py`` and ``proxy.py``. :func:`gpuplatform.check.as_policy_sees` runs exactly that.

Plain data (what a YAML or JSON manifest holds: strings, numbers, booleans, nulls, string-keyed maps, lists) has no
unknowns, secrets, assets or archives, so the only effects of that trip are the Struct's (protobuf
``struct.proto``; ``_SetStructValue`` in ``google/protobuf/internal/well_known_types.py``, ``_ValueMessageToJsonObject``
in ``json_format.py``):

* every number is a ``google.protobuf.Value.number_value``, a double: an int arrives as a float, rounded to 53 bits
  of precision above 2**53 (``9007199254740993`` arrives as ``9007199254740992.0``);
* booleans stay booleans (tested before numbers), nulls stay ``None`` in maps and lists, tuples become lists,
  maps and lists nest to any depth;
* maps and lists arrive as read-only views, ``Mapping`` and ``Sequence`` but not ``dict`` and ``list``, as the
  unknown-checking proxy hands them over (a slice of a list is a plain list, as there).

:func:`as_received` does only that. It refuses (:class:`NotPlain`) whatever the trip would change in any other way
or refuse itself, and the caller sends such properties the SDK's way: values that are not JSON data (dates, bytes,
preview unknowns), NaN and infinities (``MessageToDict`` raises on them), ints beyond a double's range, keys that
are not strings, maps carrying Pulumi's signature key (secrets, assets, archives), strings that are preview-unknown
sentinels (the proxy raises on reading them) or not encodable as UTF-8. The order of a map's keys is not part of
the contract (a protobuf map has none: the engine marshals sorted keys, and the Python runtime iterates its own
order); here they keep the order they were written in. tests/gpuplatform/test_wire.py runs the corpora both
ways and requires the same violations.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Iterator

SIGNATURE_KEY = "4dabf18193072939515e22adb298388d"
"""The key that marks a secret, asset or archive in a property map (pulumi ``sdk/go/common/resource/properties.go``,
``SigKey``; ``SPECIAL_SIG_KEY`` in pulumi-policy's ``deserialize.py``)."""

UNKNOWN_SENTINELS = frozenset({
    "1c4a061d-8072-4f0a-a4cb-0ff528b18fe7",  # boolean
    "3eeb2bf0-c639-47a8-9e75-3b44932eb421",  # number
    "04da6b54-80e4-46f7-96ec-b56ff0331ba9",  # string
    "6a19a0b0-7e62-4c92-b797-7f8e31da9cc2",  # array
    "030794c1-ac77-496b-92df-f27374a8bd58",  # asset
    "e48ece36-62e2-4504-bad9-02848725956a",  # archive
    "dd056dcd-154b-4c76-9bd3-c8f88648b5ff",  # object
})
"""Strings that stand for a value unknown during preview (the ``UNKNOWN_*_VALUE`` constants of pulumi-policy's
``proxy.py``): reading one raises ``UnknownValueError`` there."""


class NotPlain(ValueError):
    """Properties that are not plain data: the protobuf trip does more to them than :func:`as_received` does."""

    def __init__(self, path: tuple, why: str):
        self.path, self.why = path, why
        super().__init__(f"{'.'.join(map(str, path)) or '(top)'}: {why}")


class PropertyMap(Mapping):
    """A read-only map of received properties: a ``Mapping``, not a ``dict``, like pulumi-policy's ``_DictProxy``.
    Writes fail: the runner hands one decoded copy to every policy, so none may change what the next one sees."""

    __slots__ = ("_data",)

    def __init__(self, data: dict):
        self._data = data

    def __getitem__(self, key: Any) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"PropertyMap({self._data!r})"


class PropertyList(Sequence):
    """A read-only list of received properties: a ``Sequence``, not a ``list``, like pulumi-policy's
    ``_ListProxy`` (no ``==`` against lists, no ``+``; a slice is a plain ``list``)."""

    __slots__ = ("_items",)

    def __init__(self, items: list):
        self._items = items

    def __getitem__(self, index: Any) -> Any:
        return self._items[index]

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"PropertyList({self._items!r})"


def as_received(props: Mapping[str, Any]) -> PropertyMap:
    """``props`` (a ``dict``) as a policy receives them under the CLI, for plain data; :class:`NotPlain` otherwise."""
    if not isinstance(props, dict):
        raise NotPlain((), f"the properties are a {type(props).__name__}, not a map")
    return _value(props, ())


def _value(value: Any, path: tuple) -> Any:
    # the order of these tests is _SetStructValue's: None, bool before int, str, numbers, dict, list/tuple
    if value is None or value is True or value is False:
        return value
    if isinstance(value, str):
        if value in UNKNOWN_SENTINELS:
            raise NotPlain(path, "a preview-unknown sentinel")
        return _string(value, path)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, (int, float)):
        try:
            number = float(value)
        except OverflowError:
            raise NotPlain(path, "an int beyond a double's range") from None
        if not math.isfinite(number):
            raise NotPlain(path, "NaN or an infinity, which the Struct encoding refuses")
        return number
    if isinstance(value, dict):
        if SIGNATURE_KEY in value:
            raise NotPlain(path, "a secret, asset or archive")
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise NotPlain(path, f"a key that is not a string ({key!r})")
            out[_string(key, path)] = _value(item, path + (key,))
        return PropertyMap(out)
    if isinstance(value, (list, tuple)):
        return PropertyList([_value(item, path + (i,)) for i, item in enumerate(value)])
    raise NotPlain(path, f"a {type(value).__name__}, not JSON data")


def _string(value: str, path: tuple) -> str:
    if not value.isascii():
        try:
            value.encode("utf-8")  # what the Struct's wire format holds; a lone surrogate cannot be sent
        except UnicodeEncodeError:
            raise NotPlain(path, "a string that is not valid Unicode") from None
    return value if type(value) is str else str(value)
