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
    depends_on: list[str] = field(default_factory=list)
    """Logical names of explicit ``depends_on`` resources."""
    urn: str = ""

    @property
    def is_kubernetes_object(self) -> bool:
        """An object we author (not a Helm release, provider or component)."""
        return (self.custom and self.type.startswith("kubernetes:") and "helm.sh" not in self.type
                and self.type != "pulumi:providers:kubernetes" and "apiVersion" in self.inputs)


SECRET_SIG = ("4dabf18193072939515e22adb298388d", "1b47061264138c4ac30d75fd1eb44270")
"""Pulumi's wire marker of a secret value (``{<sig key>: <secret sig>, "value": ...}``)."""


def normalize(value: Any) -> Any:
    """Mocks hand numbers over as floats (``maxReplicas: 10.0``); restore the ints we wrote. Secret markers are
    unwrapped: the plan masks the secret strings themselves, so the rest of a secret input stays reviewable."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict) and value.get(SECRET_SIG[0]) == SECRET_SIG[1]:
        return normalize(value.get("value"))
    if isinstance(value, dict):
        return {k: normalize(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalize(v) for v in value]
    return value
