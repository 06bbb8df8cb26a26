"""The shape in which synthesized resources are handed to the plan writer, the policy runner and tests."""
from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass
class RegisteredResource:
    type: str
    """Pulumi type token, e.g. ``kubernetes:apps/v1:Deployment``, ``alicloud:cs/nodePool:NodePool``."""
    name: str
    """Logical (Pulumi) name."""
    inputs: dict[str, Any]
    """Inputs as registered: camelCase keys; integral floats turned back into ints."""
    parent: Optional[str] = None
    """Logical name of the parent component (None for top-level resources)."""
    custom: bool = True
    """False for ComponentResources."""
    protect: bool = False
    """The ``protect`` resource option."""
    import_id: str = ""
    """The ``import`` resource option: the id of an existing object the engine adopts instead of creating."""
    ignore_changes: tuple = ()
    """The ``ignore_changes`` resource option."""
    custom_timeouts: dict = field(default_factory=dict)
    """The ``custom_timeouts`` resource option (``create``/``update``/``delete`` durations that are set)."""
    retain_on_delete: bool = False
    """The ``retain_on_delete`` resource option: ``pulumi destroy`` forgets the resource instead of deleting it."""
    depends_on: list[str] = field(default_factory=list)
    """Logical names of explicit ``depends_on`` resources."""
    urn: str = ""
    aliases: tuple = ()
    """(parent URN, type, name) the resource had in earlier releases: its ``aliases`` option, resolved."""
    parent_urn: str = ""
    """The parent's URN as registered (empty for top-level resources)."""
    provider: str = ""
    """The explicit provider reference (``<provider urn>::<id>``) the engine receives; empty when the resource
    uses its package's default provider (configured from stack config such as ``alicloud:region``)."""
    secret_strings: frozenset = frozenset()
    """Every string registered inside a secret. The SDK marks a whole top-level input secret when any value in
    it is, so this is a superset of the secret values themselves: tests use it to prove a secret was registered
    as one; the plan masks the known secret values only, so the rest stays reviewable."""
    outputs: Optional[dict[str, Any]] = None
    """What the engine stores as the resource's outputs, where it differs from its inputs: for a component,
    exactly what it passed to ``register_outputs`` (None: it never did, and the engine keeps no outputs at all).
    None for a custom resource: a first preview's provider hands back its inputs (see :func:`engine_outputs`)."""

    def engine_outputs(self) -> dict[str, Any]:
        """The properties ``AnalyzeStack`` receives for this resource in a first preview: its outputs
        (pulumi ``pkg/resource/deploy/step_generator.go``, ``AnalyzeResources``). A component contributes only
        what it registered; a custom resource in preview, what its provider returned, which for a Kubernetes
        object the provider cannot dry-run is its inputs (pulumi-kubernetes ``provider.go``, ``Create``)."""
        if self.outputs is not None:
            return self.outputs
        return self.inputs if self.custom else {}

    @property
    def is_kubernetes_object(self) -> bool:
        """An object we author (not a Helm release, provider or component)."""
        return (self.custom and self.type.startswith("kubernetes:") and "helm.sh" not in self.type
                and self.type != "pulumi:providers:kubernetes" and "apiVersion" in self.inputs)


SECRET_SIG = ("4dabf18193072939515e22adb298388d", "1b47061264138c4ac30d75fd1eb44270")
"""Pulumi's wire marker of a secret value (``{<sig key>: <secret sig>, "value": ...}``)."""


def normalize(value: Any, secrets: Optional[set] = None) -> Any:
    """Mocks hand numbers over as floats (``maxReplicas: 10.0``); restore the ints we wrote. Secret markers are
    unwrapped, and the strings inside them added to ``secrets``."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict) and value.get(SECRET_SIG[0]) == SECRET_SIG[1]:
        inner = normalize(value.get("value"), secrets)
        if secrets is not None:
            secrets.update(_strings(inner))
        return inner
    if isinstance(value, dict):
        return {k: normalize(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [normalize(v, secrets) for v in value]
    return value


def restore_nulls(raw: Any, decoded: Any) -> Any:
    """Put back the ``null`` s the SDK's ``deserialize_properties`` drops from a registration request.

    The engine receives them (the SDK serializes ``None`` inside a map or list as a protobuf null), and Helm
    coalesces a ``null`` value by deleting the chart's default for that key, so a plan without them would not show
    what ``pulumi up`` sends. ``raw`` is the request's Struct (or one of its values); ``decoded`` the SDK's
    decoding of it, which may have moved a secret marker up a level."""
    from google.protobuf import struct_pb2  # only a synthesis has requests to read; a check of manifests has none

    if isinstance(raw, struct_pb2.Value):
        kind = raw.WhichOneof("kind")
        raw = raw.struct_value if kind == "struct_value" else raw.list_value if kind == "list_value" else None
        if raw is None:
            return decoded
    if isinstance(decoded, dict) and decoded.get(SECRET_SIG[0]) == SECRET_SIG[1]:
        fields = raw.fields if isinstance(raw, struct_pb2.Struct) else {}
        inner = fields["value"] if SECRET_SIG[0] in fields else raw
        return {**decoded, "value": restore_nulls(inner, decoded.get("value"))}
    if isinstance(raw, struct_pb2.Struct) and isinstance(decoded, dict):
        out = dict(decoded)
        for key, value in raw.fields.items():
            if value.WhichOneof("kind") == "null_value" and key not in out and not key.startswith("__"):
                out[key] = None
            elif key in out:
                out[key] = restore_nulls(value, out[key])
        return out
    if isinstance(raw, struct_pb2.ListValue) and isinstance(decoded, list) and len(raw.values) == len(decoded):
        return [None if v.WhichOneof("kind") == "null_value" else restore_nulls(v, d)
                for v, d in zip(raw.values, decoded)]
    return decoded


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value else []
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [str(value)] if isinstance(value, (int, float)) and not isinstance(value, bool) else []
