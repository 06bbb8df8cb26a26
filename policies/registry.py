"""A small declarative layer over ``pulumi_policy``: one decorator per policy, one registry for the pack.

Each policy is declared once with its id, description, severity, default enforcement level, config schema
(with defaults), remediation text, and the ids of equivalent checks in other tools, and becomes a real
``ResourceValidationPolicy`` / ``StackValidationPolicy``. The pack, the offline runner and the docs table all
read :data:`REGISTRY`, so they cannot disagree about what a policy is.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from pulumi_policy import (EnforcementLevel, PolicyConfigSchema, ResourceValidationArgs, ResourceValidationPolicy,
                           Severity, StackValidationArgs, StackValidationPolicy)

from gpuplatform.policies import k8s

ADVISORY = EnforcementLevel.ADVISORY
MANDATORY = EnforcementLevel.MANDATORY
LOW, MEDIUM, HIGH, CRITICAL = Severity.LOW, Severity.MEDIUM, Severity.HIGH, Severity.CRITICAL


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


@dataclass
class PolicyDef:
    id: str
    description: str
    category: str
    severity: Severity
    level: EnforcementLevel
    scope: str
    """``resource`` or ``stack``."""
    refs: tuple[str, ...]
    config: dict[str, dict]
    """JSON-schema properties, each with a ``default``."""
    remediation: str
    policy: Union[ResourceValidationPolicy, StackValidationPolicy]
    remediable: bool = False
    hardening: bool = False
    """A hardening gap rather than a defect: advisory by default, mandatory under the strict pack config."""
    reset: Optional[Callable[[], None]] = None
    """Forget what the policy remembered of earlier ``Analyze`` calls; the offline runner calls it before each run
    (under the CLI every update has its own analyzer process)."""

    def config_with_defaults(self, given: Optional[Mapping[str, Any]]) -> dict[str, Any]:
        out = {k: v.get("default") for k, v in self.config.items()}
        out.update({k: v for k, v in (given or {}).items() if k != "enforcementLevel"})
        return out


REGISTRY: list[PolicyDef] = []

Report = Callable[..., None]


def _schema(config: Optional[dict[str, dict]]) -> Optional[PolicyConfigSchema]:
    return PolicyConfigSchema(properties=dict(config)) if config else None


def _register(pdef: PolicyDef) -> None:
    if any(p.id == pdef.id for p in REGISTRY):
        raise ValueError(f"duplicate policy id {pdef.id}")
    REGISTRY.append(pdef)


def resource_policy(id: str, description: str, *, category: str, severity: Severity,
                    level: EnforcementLevel = MANDATORY, kinds: Sequence[str] = (), types: Sequence[str] = (),
                    refs: Sequence[str] = (), config: Optional[dict[str, dict]] = None, remediation: str = "",
                    remediate: Optional[Callable[[Resource, dict], Optional[dict]]] = None,
                    skip_patches: bool = True, hardening: bool = False,
                    reset: Optional[Callable[[], None]] = None):
    """Declare a resource policy. ``fn(resource, config, report)`` runs only for the listed kinds/types."""
    config = dict(config or {})

    def applies(r: Resource) -> bool:
        if skip_patches and k8s.is_patch(r.type):
            return False
        if types and r.type not in types:
            return False
        if kinds and not (r.type.startswith("kubernetes:") and r.kind in kinds):
            return False
        return True

    def decorate(fn: Callable[[Resource, dict, Report], None]):
        holder: dict[str, PolicyDef] = {}

        def _resource(args: ResourceValidationArgs) -> Resource:
            return resource_from(args.resource_type, args.name, args.urn, args.props,
                                 getattr(args.opts, "protect", False) if args.opts else False)

        def validate(args: ResourceValidationArgs, report_violation) -> None:
            r = _resource(args)
            if applies(r):
                fn(r, holder["def"].config_with_defaults(args.get_config()), lambda msg: report_violation(msg))

        def remediate_fn(args: ResourceValidationArgs):
            r = _resource(args)
            if not applies(r):
                return None
            return remediate(r, holder["def"].config_with_defaults(args.get_config()))

        policy = ResourceValidationPolicy(
            name=id, description=description, validate=validate, enforcement_level=level,
            config_schema=_schema(config), remediate=remediate_fn if remediate else None, severity=severity,
            tags=[category], remediation_steps=remediation or None)
        pdef = PolicyDef(id, description, category, severity, level, "resource", tuple(refs), config, remediation,
                         policy, remediable=remediate is not None, hardening=hardening, reset=reset)
        holder["def"] = pdef
        _register(pdef)
        return fn

    return decorate


def stack_policy(id: str, description: str, *, category: str, severity: Severity,
                 level: EnforcementLevel = MANDATORY, refs: Sequence[str] = (),
                 config: Optional[dict[str, dict]] = None, remediation: str = "", hardening: bool = False):
    """Declare a stack policy. ``fn(view, config, report)``; ``report(message, resource)`` names the resource."""
    from gpuplatform.policies.stack import StackView

    config = dict(config or {})

    def decorate(fn: Callable[[Any, dict, Report], None]):
        holder: dict[str, PolicyDef] = {}

        def validate(args: StackValidationArgs, report_violation) -> None:
            view = StackView.from_policy_resources(args.resources)

            def report(message: str, resource: Optional[Resource] = None) -> None:
                report_violation(message, resource.urn if resource is not None and resource.urn else None)

            fn(view, holder["def"].config_with_defaults(args.get_config()), report)

        policy = StackValidationPolicy(
            name=id, description=description, validate=validate, enforcement_level=level,
            config_schema=_schema(config), severity=severity, tags=[category], remediation_steps=remediation or None)
        pdef = PolicyDef(id, description, category, severity, level, "stack", tuple(refs), config, remediation,
                         policy, hardening=hardening)
        holder["def"] = pdef
        _register(pdef)
        return fn

    return decorate


def strict_config() -> dict[str, str]:
    """The pack config that raises every hardening policy to mandatory (``policies/strict.json``,
    ``gpuplatform check --strict``)."""
    return {p.id: MANDATORY.value for p in REGISTRY if p.hardening}


def by_id(policy_id: str) -> PolicyDef:
    for p in REGISTRY:
        if p.id == policy_id:
            return p
    raise KeyError(policy_id)


def prop(type_: str, description: str, default: Any, **extra) -> dict:
    return {"type": type_, "description": description, "default": default, **extra}

