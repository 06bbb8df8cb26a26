"""Running the pack's policies over resources, as ``pulumi preview --policy-pack`` runs them: resource policies over
each resource's inputs, stack policies over the stack's outputs, plain data without the SDK (:mod:`gpuplatform.wire`),
anything else through it (:mod:`gpuplatform.check.wire_encoding`). ``pulumi_policy`` is imported where it is used,
for the start-up of a check (benchmarks/check_manifests.py)."""
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

from gpuplatform.check.findings import Violation
from gpuplatform.check.policy_config import _policy_config
from gpuplatform.check.wire_encoding import as_policy_sees
from gpuplatform.policies.pack import POLICY_DEFS
from gpuplatform.policies.registry import EnforcementLevel, PolicyDef, resource_from
from gpuplatform.records import RegisteredResource
from gpuplatform.wire import NotPlain, as_received


def _opts(protect: bool):
    from pulumi_policy import PolicyCustomTimeouts, PolicyResourceOptions

    return PolicyResourceOptions(protect=protect, ignore_changes=[], delete_before_replace=None, aliases=[],
                                 custom_timeouts=PolicyCustomTimeouts(0, 0, 0), additional_secret_outputs=[])


def _urn(r: RegisteredResource) -> str:
    return r.urn or f"urn:pulumi:offline::gpu-platform::{r.type}::{r.name}"


WIRES = ("auto", "protobuf", "plain")
"""How :func:`run_policies` hands properties to the policies: ``protobuf``, through the SDK as the CLI does
(:func:`as_policy_sees`); ``plain``, the same result for plain data without the SDK (:mod:`gpuplatform.wire`),
refusing anything else; ``auto``, plain when every property is plain data and no policy remediates, else
protobuf."""


StackState = Callable[[RegisteredResource], Mapping[str, Any]]
"""What ``AnalyzeStack`` receives for one resource: its outputs at some point of its life."""


def first_preview_outputs(r: RegisteredResource) -> Mapping[str, Any]:
    return r.engine_outputs()


def run_policies(resources: Sequence[RegisteredResource], config: Optional[Mapping[str, Any]] = None,
                 policies: Optional[Iterable[PolicyDef]] = None,
                 stack_state: StackState = first_preview_outputs, wire: str = "auto") -> list[Violation]:
    """Run every policy of the pack (or ``policies``) over ``resources``; disabled policies are skipped.
    Resource policies judge inputs; stack policies judge ``stack_state`` (default: a first preview's outputs).
    ``wire`` (:data:`WIRES`) chooses how the properties reach the policies; the violations are the same."""
    if wire not in WIRES:
        raise ValueError(f"wire {wire!r}: allowed: {', '.join(WIRES)}")
    defs = list(policies) if policies is not None else POLICY_DEFS
    levels = [(pdef,) + _policy_config(pdef, config) for pdef in defs]
    levels = [(pdef, level, props) for pdef, level, props in levels if level != EnforcementLevel.DISABLED]
    remediates = any(level == EnforcementLevel.REMEDIATE and pdef.remediable for pdef, level, _ in levels)
    if wire == "plain" and remediates:
        raise ValueError("remediation runs through the SDK's objects: wire 'protobuf' or 'auto'")
    plain = None
    if wire != "protobuf" and not remediates:
        try:
            plain = _plain_run(resources, stack_state, any(pdef.scope == "stack" for pdef, _, _ in levels))
        except NotPlain:
            if wire == "plain":
                raise
    if plain is not None:
        return _run_plain(levels, resources, *plain)
    return _run_sdk(levels, resources, stack_state)


def _plain_run(resources: Sequence[RegisteredResource], stack_state: StackState, stacked: bool):
    """What the policies receive, decoded once per resource (and per stack) as ``pulumi_policy`` decodes a
    request's properties; :class:`NotPlain` unless every property is plain data."""
    judged = [resource_from(r.type, r.name, _urn(r), as_received(r.inputs), r.protect) for r in resources]
    stack = [resource_from(r.type, r.name, _urn(r), as_received(stack_state(r)), r.protect) for r in resources] \
        if stacked else []
    return judged, stack


def _reported(level: EnforcementLevel) -> EnforcementLevel:
    """The level a violation is reported at: a remediating policy that still finds one fails the update."""
    return EnforcementLevel.MANDATORY if level == EnforcementLevel.REMEDIATE else level


def _violation(pdef: PolicyDef, level: EnforcementLevel, r: Optional[RegisteredResource], message: str) -> Violation:
    return Violation(pdef.id, level.value, r.type if r else "", r.name if r else "", message,
                     pdef.severity.value if pdef.severity else "")


def _run_plain(levels, resources: Sequence[RegisteredResource], judged: list, stack: list) -> list[Violation]:
    """The policies' own functions over plain data, as their ``pulumi_policy`` objects would call them."""
    by_urn = {_urn(r): r for r in resources}
    out: list[Violation] = []
    for pdef, level, props in levels:
        reported = _reported(level)
        if pdef.scope == "resource":
            if pdef.reset is not None:
                pdef.reset()  # a run is one update: nothing carries over from an earlier one
            for r, seen in zip(resources, judged):
                pdef.validate_resource(seen, props, lambda msg, r=r: out.append(_violation(pdef, reported, r, msg)))
        else:
            pdef.validate_stack(stack, props,
                                lambda msg, urn=None: out.append(_violation(pdef, reported, by_urn.get(urn), msg)))
    return out


def _run_sdk(levels, resources: Sequence[RegisteredResource], stack_state: StackState) -> list[Violation]:
    """The pack's ``pulumi_policy`` objects over properties sent through protobuf, as under the CLI."""
    from pulumi_policy import PolicyResource, StackValidationArgs
    from pulumi_policy.proxy import UnknownValueError

    by_urn = {_urn(r): r for r in resources}
    out: list[Violation] = []
    # decoded once per resource and once per stack (pulumi-policy decodes them again for each policy; the
    # policies never write to what they are given, which the plain path's read-only maps hold them to)
    seen_inputs: dict[int, Any] = {}
    stack_view: list[PolicyResource] = []

    def inputs_seen(r: RegisteredResource) -> Any:
        if id(r) not in seen_inputs:
            seen_inputs[id(r)] = as_policy_sees(r.inputs)
        return seen_inputs[id(r)]

    for pdef, level, props in levels:
        reported = _reported(level)

        def add(message: str, r: Optional[RegisteredResource], lvl: EnforcementLevel = reported) -> None:
            out.append(_violation(pdef, lvl, r, message))

        if pdef.scope == "resource":
            if pdef.reset is not None:
                pdef.reset()
            for r in resources:
                _run_resource(pdef, r, props, level, add, inputs_seen(r), UnknownValueError)
        else:
            if not stack_view:
                stack_view.extend(PolicyResource(r.type, as_policy_sees(stack_state(r)), _urn(r), r.name,
                                                 _opts(r.protect), None, None, [], {}) for r in resources)
            args = StackValidationArgs(stack_view, props)
            try:
                pdef.policy.validate(args, lambda msg, urn=None: add(msg, by_urn.get(urn)))
            except UnknownValueError as exc:
                add(f"can't run policy '{pdef.id}' during preview: {exc.message}", None,
                    EnforcementLevel.ADVISORY)
    return out


def _run_resource(pdef: PolicyDef, r: RegisteredResource, props: dict, level: EnforcementLevel, add,
                  seen: Any, unknown_error: type) -> None:
    from pulumi_policy import ResourceValidationArgs

    def args_for(inputs_seen: Any) -> ResourceValidationArgs:
        return ResourceValidationArgs(r.type, inputs_seen, _urn(r), r.name, _opts(r.protect), None, props)

    try:
        if level == EnforcementLevel.REMEDIATE and pdef.remediable:
            fixed = pdef.policy.remediate(args_for(seen))
            if fixed:
                seen = as_policy_sees(fixed)
        pdef.policy.validate(args_for(seen), lambda msg, urn=None: add(msg, r))
    except unknown_error as exc:
        add(f"can't run policy '{pdef.id}' on {r.name} during preview: {exc.message}", r,
            EnforcementLevel.ADVISORY)
