"""Checking a component's args the way a stack file is checked: every problem at once, each naming the component,
the key (with its path into the TypedDicts, lists and dicts the args nest), the value and what is allowed, before
the component registers anything. :func:`raise_for` ends the check of one component; the program's check
(components/assembly.py) keeps its problems and fails the program with those of every component once it has run.

Args are ``TypedDict`` s, so the keys, whether each is required and its type are read from the class itself:
the documentation a consumer reads and the check cannot drift apart.
"""
import difflib
import functools
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Optional, Union

import pulumi
import typing_extensions

from gpuplatform.components.errors import ConfigError, ConfigIssue, fmt, one_of


class ArgsIssue(ConfigIssue):
    """A problem in a component's args: the path starts at the component, not at the stack file."""

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class ArgsError(ConfigError):
    """All problems of one component's args (a :class:`ConfigError`, so the CLI exits 2 on it)."""

    def render(self) -> str:
        n = len(self.issues)
        return "\n".join([f"invalid component args ({n} problem{'s' if n != 1 else ''}):",
                          *(f"  - {issue}" for issue in self.issues)])


def component_label(type_name: str, name: str) -> str:
    """``GpuNodePool 'a10'``: how messages name a component."""
    return f"{type_name} {name!r}"


def did_you_mean(value: str, choices) -> str:
    near = difflib.get_close_matches(value, list(choices), n=2, cutoff=0.6)
    if not near:
        # snake_case for camelCase and back are the most common slips between args and stack files
        flat = {c.replace("_", "").lower(): c for c in choices}
        hit = flat.get(value.replace("_", "").lower())
        near = [hit] if hit else []
    return f"; did you mean {one_of(repr(n) for n in near)}?" if near else ""


def _type_text(tp) -> str:
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        parts = [a for a in typing.get_args(tp) if a is not type(None)]
        return " or ".join(dict.fromkeys(_type_text(a) for a in parts))
    if origin is typing.Literal:
        return f"one of {one_of(repr(a) for a in typing.get_args(tp))}"
    if origin is typing.Annotated:
        return _type_text(typing.get_args(tp)[0])
    if origin is not None:
        return getattr(origin, "__name__", str(origin))
    return getattr(tp, "__name__", str(tp))


def _accepts(tp, value) -> bool:
    """Whether ``value`` has the annotated type. Pulumi outputs and other awaitables stand for any input type (their
    value is only known at deployment); generic containers are checked one level deep."""
    if isinstance(value, pulumi.Output) or hasattr(value, "__await__"):
        return True
    origin = typing.get_origin(tp)
    if tp is Any or tp is object:
        return True
    if origin is typing.Annotated:
        return _accepts(typing.get_args(tp)[0], value)
    if origin in (Union, types.UnionType):
        return any(_accepts(a, value) for a in typing.get_args(tp))
    if origin is typing.Literal:
        return value in typing.get_args(tp)
    if tp is type(None):
        return value is None
    if origin in (list, tuple, Sequence):
        if not isinstance(value, (list, tuple)):
            return False
        (item,) = typing.get_args(tp)[:1] or (Any,)
        return all(_accepts(item, v) for v in value)
    if origin in (dict, Mapping):
        if not isinstance(value, Mapping):
            return False
        args = typing.get_args(tp)
        return all(_accepts(args[1], v) for v in value.values()) if len(args) == 2 else True
    if origin is not None:
        return isinstance(value, origin)
    if isinstance(tp, type):
        if tp is bool:
            return isinstance(value, bool)
        if tp is int:
            return isinstance(value, int) and not isinstance(value, bool)
        if tp is float:
            return isinstance(value, (int, float)) and not isinstance(value, bool)
        if typing_extensions.is_typeddict(tp):
            return isinstance(value, Mapping)
        return isinstance(value, tp)
    return True  # a forward reference or an exotic annotation: left to the component's own checks


def _shown(value) -> str:
    if isinstance(value, pulumi.Resource):
        return f"a {type(value).__name__}"
    if isinstance(value, (dict, list, tuple)):
        return f"a {type(value).__name__}"
    return fmt(value)


_LOCALNS = {"Output": pulumi.Output, "Resource": pulumi.Resource, "T": Any}
"""``pulumi.Input`` names ``Output`` by a forward reference that its own module resolves, not the args' module."""

_NOT_REQUIRED = {typing_extensions.NotRequired, getattr(typing, "NotRequired", None)} - {None}
_REQUIRED = {typing_extensions.Required, getattr(typing, "Required", None)} - {None}
_READ_ONLY = {getattr(typing_extensions, "ReadOnly", None), getattr(typing, "ReadOnly", None)} - {None}


def _qualified(tp) -> tuple[Any, Optional[bool]]:
    """(the type without ``Required``/``NotRequired``/``ReadOnly``, True/False where one of the first two marks the
    key, None where the class's totality decides)."""
    required = None
    while True:
        origin = typing.get_origin(tp)
        inner = typing.get_args(tp)[0] if typing.get_args(tp) else tp
        if origin in _NOT_REQUIRED or origin in _REQUIRED:
            required = origin in _REQUIRED if required is None else required
        elif origin in _READ_ONLY:
            pass
        elif origin is typing.Annotated and typing.get_origin(inner) in (_NOT_REQUIRED | _REQUIRED | _READ_ONLY):
            pass  # Annotated[NotRequired[int], ...] (PEP 655 allows either nesting)
        else:
            return tp, required
        tp = inner


def _resolved(spec: type) -> dict:
    """Every key's annotation, evaluated with its extras (``NotRequired`` ...). A key whose annotation names what
    its module cannot resolve (an import under ``TYPE_CHECKING``) accepts any value rather than fail the check."""
    try:
        return typing_extensions.get_type_hints(spec, localns=_LOCALNS, include_extras=True)
    except Exception:  # noqa: BLE001 the per-key evaluation below says which keys cannot be resolved
        pass
    out = {}
    for key, annotation in getattr(spec, "__annotations__", {}).items():
        holder = type(key, (), {"__annotations__": {key: annotation}, "__module__": spec.__module__})
        try:
            out[key] = typing_extensions.get_type_hints(holder, localns=_LOCALNS, include_extras=True)[key]
        except Exception:  # noqa: BLE001 an annotation that cannot be evaluated is not the consumer's mistake
            out[key] = Any
    return out


@functools.lru_cache(maxsize=256)
def typed_keys(spec: type) -> tuple[dict, frozenset]:
    """(key -> type, required keys) of an args ``TypedDict``.

    ``__required_keys__`` is computed when the class is created, from annotations that are still strings in a
    module with ``from __future__ import annotations`` (or quoted): ``NotRequired[int]`` is then not recognized and
    the key counts as required (Python docs, typing.TypedDict ``__required_keys__`` note; python/cpython#97727,
    open). The annotations are evaluated here instead, and ``Required``/``NotRequired`` read from them; a key with
    neither keeps the class's verdict, which its totality decided correctly."""
    hints, required = {}, set()
    declared = getattr(spec, "__required_keys__", frozenset())
    for key, annotation in _resolved(spec).items():
        tp, marked = _qualified(annotation)
        hints[key] = tp
        if marked if marked is not None else key in declared:
            required.add(key)
    return hints, frozenset(required)


def _hints(spec: type) -> dict:
    """The keys of an args ``TypedDict`` and their types (``Required``/``NotRequired`` taken off)."""
    return typed_keys(spec)[0]


def _key_path(base: str, key) -> str:
    return f"{base}.{key}" if isinstance(key, str) and key.isidentifier() else f"{base}[{key!r}]"


def _check_value(path: str, tp, value, out: list) -> None:
    """``value`` against ``tp`` at ``path``, into nested TypedDicts, lists and dicts: every mistake with its path."""
    if isinstance(value, pulumi.Output) or hasattr(value, "__await__"):
        return
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        _check_value(path, typing.get_args(tp)[0], value, out)
    elif typing_extensions.is_typeddict(tp):
        if isinstance(value, Mapping):
            _check_mapping(path, ".", tp, value, out)
        else:
            out.append(ArgsIssue(path, f"{_shown(value)}: expected a dict of {tp.__name__} keys: "
                                       f"{one_of(sorted(_hints(tp)))}"))
    elif origin in (Union, types.UnionType):
        fitting = [a for a in typing.get_args(tp) if _accepts(a, value)]
        if fitting:
            _check_value(path, fitting[0], value, out)
        else:
            out.append(ArgsIssue(path, f"{_shown(value)}: expected {_type_text(tp)}"))
    elif origin is typing.Literal:
        if value not in typing.get_args(tp):
            choices = [str(a) for a in typing.get_args(tp) if isinstance(a, str)]
            near = did_you_mean(value, choices) if isinstance(value, str) else ""
            out.append(ArgsIssue(path, f"{_shown(value)}: expected {_type_text(tp)}{near}"))
    elif origin in (list, tuple, Sequence) and isinstance(value, (list, tuple)):
        args = typing.get_args(tp)
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(args) != len(value):
                out.append(ArgsIssue(path, f"{len(value)} items: expected {len(args)}"))
                return
            items = args
        else:
            items = (args[0] if args else Any,) * len(value)
        for i, (item_tp, item) in enumerate(zip(items, value)):
            _check_value(f"{path}[{i}]", item_tp, item, out)
    elif origin in (dict, Mapping) and isinstance(value, Mapping):
        args = typing.get_args(tp)
        for key, item in value.items():
            if len(args) == 2 and not _accepts(args[0], key):
                out.append(ArgsIssue(_key_path(path, key), f"key {_shown(key)}: expected {_type_text(args[0])}"))
            elif len(args) == 2:
                _check_value(_key_path(path, key), args[1], item, out)
    elif not _accepts(tp, value):
        out.append(ArgsIssue(path, f"{_shown(value)}: expected {_type_text(tp)}"))


def _check_mapping(base: str, sep: str, spec: type, args: Mapping, out: list) -> None:
    """The keys of ``args`` against the ``TypedDict`` ``spec``. A required key that a misspelt key is close to is
    named in that key's "did you mean", not again as missing."""
    hints, required = typed_keys(spec)
    suggested: set = set()
    for key, value in args.items():
        path = f"{base}{sep}{key}"
        if key not in hints:
            hint = did_you_mean(str(key), hints)
            suggested |= {k for k in hints if f"{k!r}" in hint}
            out.append(ArgsIssue(path, f"unknown key{hint}; allowed: {one_of(sorted(hints))} (see {spec.__name__})"))
        else:
            _check_value(path, hints[key], value, out)
    for key in sorted(required - set(args) - suggested):
        out.append(ArgsIssue(f"{base}{sep}{key}", f"required key is missing (expected {_type_text(hints[key])})"))


def check_args(type_name: str, name: str, args: Any, spec: type) -> list[ArgsIssue]:
    """Unknown keys (with "did you mean"), missing required keys and values of the wrong type in ``args``, checked
    against the ``TypedDict`` ``spec`` and into the TypedDicts, lists and dicts it nests."""
    label = component_label(type_name, name)
    if not isinstance(args, Mapping):
        return [ArgsIssue(f"{label} args", f"{_shown(args)}: expected a dict of {spec.__name__} keys: "
                                            f"{one_of(sorted(_hints(spec)))}")]
    out: list[ArgsIssue] = []
    _check_mapping(f"{label} args", ".", spec, args, out)
    return out


def raise_for(issues: list) -> None:
    """Stop checking the component with every issue found so far: :func:`assembly.checking` records them for the
    program and leaves the component out."""
    if issues:
        raise ArgsError(list(issues))


def reprefix(issues: list[ConfigIssue], mapping: dict[str, str]) -> list[ArgsIssue]:
    """Stack-file paths of a config a component assembled from its args (``workloads[0].gpu``) -> the args' own
    (``InferenceService 'x' args.workload.gpu``): a consumer never wrote a stack file."""
    out = []
    for issue in issues:
        path = issue.path
        for prefix, replacement in sorted(mapping.items(), key=lambda kv: -len(kv[0])):
            if path == prefix or path.startswith(prefix + ".") or path.startswith(prefix + "["):
                path = replacement + path[len(prefix):]
                break
        out.append(ArgsIssue(path, issue.message))
    return out


def stop_on_config_error(exc: ConfigError, mapping: dict[str, str]) -> None:
    raise ArgsError(reprefix(exc.issues, mapping)) from None


def read_project_config(spec: type, namespace: Optional[str] = None) -> dict:
    """A consumer project's own config keys, read through ``pulumi.Config`` and checked against the ``TypedDict``
    ``spec`` like component args: an unknown key (a misspelling) gets "did you mean", a missing required key and a
    value of the wrong type are named with what is allowed, and ``pulumi.RunError`` stops the program before
    anything is registered. Values are parsed as YAML/JSON objects where they are (``pulumi config set --path``);
    secret keys stay secret (``pulumi.Output.secret``)."""
    from pulumi.runtime import config as rc
    from pulumi.runtime.config import is_config_secret

    config = pulumi.Config(namespace)
    prefix = f"{config.name}:"
    keys = sorted({k[len(prefix):] for k in list(rc.CONFIG.get()) + list(rc.get_config_env())
                   if k.startswith(prefix)})
    hints = _hints(spec)
    values: dict = {}
    issues: list[ArgsIssue] = []
    for key in keys:
        if hints.get(key) is str:
            value = config.get(key)  # "1.30" stays the string it was set as
        else:
            try:
                value = config.get_object(key)
            except pulumi.ConfigTypeError:
                value = config.get(key)
            if isinstance(value, str):
                value = _scalar(value)
        if is_config_secret(config.full_key(key)):
            # checked like any value, named without it
            if key in hints and not _accepts(hints[key], value):
                issues.append(ArgsIssue(f"{config.name}:{key}", f"a secret (value not shown): expected "
                                                                f"{_type_text(hints[key])}"))
            value = pulumi.Output.secret(value)
        values[key] = value
    _check_mapping(config.name, ":", spec, values, issues)
    if issues:
        raise pulumi.RunError(ArgsError(issues).render().replace("invalid component args",
                                                                 "invalid project configuration"))
    return values


def _scalar(text: str):
    """``pulumi config set replicas 3`` stores the string "3": read numbers and booleans as YAML would."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


__all__ = ["ArgsError", "ArgsIssue", "check_args", "raise_for", "read_project_config", "typed_keys"]
