"""What a policy sees of one resource: :class:`Resource`, its properties already decoded (kind, apiVersion, names).
A module of its own below the registry (which hands it to resource policies) and the stack view (which holds one
per resource of the stack), so neither imports the other to reach it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional

from gpuplatform.policies import k8s


@dataclass(frozen=True)
class Resource:
    """What a resource validation sees, already decoded (kind, apiVersion, names)."""

    type: str
    name: str
    urn: str
    props: Mapping[str, Any]
    protect: bool
    kind: Optional[str]
    api_version: Optional[str]

    @property
    def obj_name(self) -> str:
        return k8s.name_of(self.props) or self.name

    @property
    def namespace(self) -> str:
        return k8s.namespace_of(self.props)

    @property
    def label(self) -> str:
        """How messages name the object: ``Deployment inference/flower``."""
        if self.kind and self.type.startswith("kubernetes:"):
            ns = k8s.get(self.props, "metadata", "namespace")
            return f"{self.kind} {ns + '/' if ns else ''}{self.obj_name}"
        return f"{self.type.rsplit(':', 1)[-1]} {self.name}"


def resource_from(resource_type: str, name: str, urn: str, props: Mapping[str, Any], protect: bool) -> Resource:
    return Resource(resource_type, name, urn, props, bool(protect), k8s.kind_of(resource_type, props),
                    k8s.api_version_of(resource_type, props))
