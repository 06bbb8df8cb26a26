"""A small declarative layer over ``pulumi_policy``: one decorator per policy, one registry for the pack.

Each policy is declared once with its id, description, severity, default enforcement level, config schema
(with defaults), remediation text, and the ids of equivalent checks in other tools, and becomes a real
``ResourceValidationPolicy`` / ``StackValidationPolicy``. The pack, the offline runner and the docs table all
read :data:`REGISTRY`, so they cannot disagree about what a policy is.

Declaring a policy imports nothing of the Pulumi SDK: ``pulumi_policy`` pulls in ``pulumi``, gRPC, protobuf and
OpenTelemetry (most of the start-up of ``gpuplatform check`` on one file), and only the pack served to the CLI
and the runner's path for preview values need its objects, which :attr:`PolicyDef.policy` builds on first use.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Optional, Sequence, Union

from gpuplatform.policies import k8s
# Resource and resource_from live below the registry and the stack view, which both read them; policies name
# them through the registry
from gpuplatform.policies.resource import Resource, resource_from  # noqa: F401
from gpuplatform.policies.stack import StackView

if TYPE_CHECKING:
    from pulumi_policy import ResourceValidationPolicy, StackValidationPolicy


class EnforcementLevel(Enum):
    """What the engine does with a violation: the values of ``pulumi_policy.EnforcementLevel`` (pulumi-policy
    ``sdk/python/lib/pulumi_policy/policy.py``), which :attr:`PolicyDef.policy` hands over by value."""

    ADVISORY = "advisory"
    MANDATORY = "mandatory"
    REMEDIATE = "remediate"
    DISABLED = "disabled"


class Severity(Enum):
    """How bad a violation is: the values of ``pulumi_policy.Severity`` (same file)."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"


ADVISORY = EnforcementLevel.ADVISORY
MANDATORY = EnforcementLevel.MANDATORY
LOW, MEDIUM, HIGH, CRITICAL = Severity.LOW, Severity.MEDIUM, Severity.HIGH, Severity.CRITICAL


def _every_resource(_r: Resource) -> bool:
    return True


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
    check: Callable[[Any, dict, Report], None]
    """The declared function: ``check(resource, config, report)`` for a resource policy, ``check(view, config,
    report)`` for a stack policy. :meth:`validate_resource` / :meth:`validate_stack` call it as the pack's
    ``pulumi_policy`` objects do."""
    applies: Callable[[Resource], bool] = _every_resource
    """Which resources a resource policy judges (its ``kinds``/``types``, patches skipped)."""
    fix: Optional[Callable[[Resource, dict], Optional[dict]]] = None
    """The remediation: the fixed properties, or None when there is nothing to fix."""
    remediable: bool = False
    hardening: bool = False
    """A hardening gap rather than a defect: advisory by default, mandatory under the strict pack config."""
    reset: Optional[Callable[[], None]] = None
    """Forget what the policy remembered of earlier ``Analyze`` calls; the offline runner calls it before each run
    (under the CLI every update has its own analyzer process)."""
    _policy: Any = field(default=None, init=False, repr=False, compare=False)

    def config_with_defaults(self, given: Optional[Mapping[str, Any]]) -> dict[str, Any]:
        out = {k: v.get("default") for k, v in self.config.items()}
        out.update({k: v for k, v in (given or {}).items() if k != "enforcementLevel"})
        return out

    # ------------------------------------------------------------------------------------ running it
    def validate_resource(self, r: Resource, given: Optional[Mapping[str, Any]], report: Callable[[str], None]) -> None:
        """Judge one resource under the policy's config ``given`` (without defaults), if the policy applies."""
        if self.applies(r):
            self.check(r, self.config_with_defaults(given), report)

    def remediate_resource(self, r: Resource, given: Optional[Mapping[str, Any]]) -> Optional[dict]:
        if self.fix is None or not self.applies(r):
            return None
        return self.fix(r, self.config_with_defaults(given))

    def validate_stack(self, resources: Iterable[Resource], given: Optional[Mapping[str, Any]],
                       report_violation: Callable[[str, Optional[str]], None]) -> None:
        """Judge the stack: ``report_violation(message, urn)``, the urn None for a stack-wide violation."""
        def report(message: str, resource: Optional[Resource] = None) -> None:
            report_violation(message, resource.urn if resource is not None and resource.urn else None)

        self.check(StackView(resources), self.config_with_defaults(given), report)

    # ------------------------------------------------------------------------------------ the SDK's object
    @property
    def policy(self) -> Union[ResourceValidationPolicy, StackValidationPolicy]:
        """The ``ResourceValidationPolicy`` / ``StackValidationPolicy`` the pack serves, built on first use."""
        if self._policy is None:
            self._policy = self._sdk_policy()
        return self._policy

    def _sdk_policy(self) -> Union[ResourceValidationPolicy, StackValidationPolicy]:
        import pulumi_policy as sdk

        common = dict(name=self.id, description=self.description,
                      enforcement_level=sdk.EnforcementLevel(self.level.value),
                      config_schema=sdk.PolicyConfigSchema(properties=dict(self.config)) if self.config else None,
                      severity=sdk.Severity(self.severity.value) if self.severity else None, tags=[self.category],
                      remediation_steps=self.remediation or None)
        if self.scope == "stack":
            def validate_stack(args: sdk.StackValidationArgs, report_violation) -> None:
                self.validate_stack(StackView.from_policy_resources(args.resources).resources, args.get_config(),
                                    report_violation)

            return sdk.StackValidationPolicy(validate=validate_stack, **common)

        def resource_of(args: sdk.ResourceValidationArgs) -> Resource:
            return resource_from(args.resource_type, args.name, args.urn, args.props,
                                 getattr(args.opts, "protect", False) if args.opts else False)

        def validate(args: sdk.ResourceValidationArgs, report_violation) -> None:
            self.validate_resource(resource_of(args), args.get_config(), lambda msg: report_violation(msg))

        def remediate(args: sdk.ResourceValidationArgs):
            return self.remediate_resource(resource_of(args), args.get_config())

        return sdk.ResourceValidationPolicy(validate=validate, remediate=remediate if self.fix else None, **common)


REGISTRY: list[PolicyDef] = []

Report = Callable[..., None]


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
        _register(PolicyDef(id, description, category, _severity(severity), _level(level), "resource", tuple(refs),
                            config, remediation, fn, applies=applies, fix=remediate,
                            remediable=remediate is not None, hardening=hardening, reset=reset))
        return fn

    return decorate


def stack_policy(id: str, description: str, *, category: str, severity: Severity,
                 level: EnforcementLevel = MANDATORY, refs: Sequence[str] = (),
                 config: Optional[dict[str, dict]] = None, remediation: str = "", hardening: bool = False):
    """Declare a stack policy. ``fn(view, config, report)``; ``report(message, resource)`` names the resource."""
    config = dict(config or {})

    def decorate(fn: Callable[[Any, dict, Report], None]):
        _register(PolicyDef(id, description, category, _severity(severity), _level(level), "stack", tuple(refs),
                            config, remediation, fn, hardening=hardening))
        return fn

    return decorate


def _level(level: Any) -> EnforcementLevel:
    """The level given to a decorator, as this module's enum (a ``pulumi_policy`` member converts by value)."""
    return EnforcementLevel(getattr(level, "value", level))


def _severity(severity: Any) -> Severity:
    return Severity(getattr(severity, "value", severity))


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

