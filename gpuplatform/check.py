"""Offline policy runner: the pack's own ``pulumi_policy`` objects over synthesized resources or plain YAML.

``pulumi preview --policy-pack`` needs the CLI, a backend and credentials for every provider; this runs the
same validate functions without any of them, with the same per-policy config and enforcement levels
(``--policy-pack-config`` format: ``{"all": "mandatory", "<policy>": {"enforcementLevel": …, <props>}}``).
What each kind of policy is given is what the engine gives it (docs/policies.md, "What the policies see"):

* resource policies (``Analyze``) get each resource's **inputs**, as authored;
* stack policies (``AnalyzeStack``) get each resource's **outputs**: a component's are only what it passed to
  ``register_outputs``, a custom resource's what its provider returned (in a first preview, a Kubernetes object's
  inputs; after a deployment, the live object with the API server's defaults and controllers' changes).

Both go through the same wire encoding as under the CLI (a protobuf ``Struct``, so every number arrives as a
float, then ``pulumi_policy``'s own ``deserialize_properties`` and unknown-checking proxy), so a policy that reads
an unknown value is reported as an advisory "can't run during preview", exactly as the CLI reports it.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

import yaml
from google.protobuf import json_format, struct_pb2
from pulumi_policy import (EnforcementLevel, PolicyCustomTimeouts, PolicyResource, PolicyResourceOptions,
                           ResourceValidationArgs, StackValidationArgs)
from pulumi_policy.deserialize import deserialize_properties
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, UnknownValueError, unknown_checking_proxy

from gpuplatform.records import RegisteredResource
from gpuplatform.policies import k8s
from gpuplatform.policies.pack import POLICY_DEFS
from gpuplatform.policies.registry import PolicyDef

LEVELS = {level.value: level for level in EnforcementLevel}


@dataclass(frozen=True)
class Violation:
    policy_id: str
    level: str
    """``mandatory`` or ``advisory`` (what the CLI would do with it)."""
    resource_type: str
    """Type token of the resource, empty for a stack-wide violation."""
    resource_name: str
    message: str
    severity: str = ""

    @property
    def mandatory(self) -> bool:
        return self.level == EnforcementLevel.MANDATORY.value


# ------------------------------------------------------------------------------------------------ config
def _policy_config(pdef: PolicyDef, config: Optional[Mapping[str, Any]]) -> tuple[EnforcementLevel, dict]:
    """Effective level and properties of one policy under a policy-pack config."""
    level, props = pdef.level, {}
    for key in ("all", pdef.id):
        entry = (config or {}).get(key)
        if isinstance(entry, str):
            level = LEVELS[entry]
        elif isinstance(entry, Mapping):
            if "enforcementLevel" in entry:
                level = LEVELS[entry["enforcementLevel"]]
            if key == pdef.id:
                props = {k: v for k, v in entry.items() if k != "enforcementLevel"}
    return level, props


def with_kubernetes_version(config: Optional[Mapping[str, Any]], version: str) -> dict[str, Any]:
    """``config`` with ``kubernetesVersion`` set for every policy that reads the target cluster's version (the
    API-version policies); it wins over the version a checked GpuPlatform registers."""
    out = dict(config or {})
    for pdef in POLICY_DEFS:
        if "kubernetesVersion" in pdef.config:
            entry = out.get(pdef.id)
            if isinstance(entry, str):
                entry = {"enforcementLevel": entry}
            out[pdef.id] = {**(entry or {}), "kubernetesVersion": version}
    return out


def _opts(protect: bool) -> PolicyResourceOptions:
    return PolicyResourceOptions(protect=protect, ignore_changes=[], delete_before_replace=None, aliases=[],
                                 custom_timeouts=PolicyCustomTimeouts(0, 0, 0), additional_secret_outputs=[])


def _urn(r: RegisteredResource) -> str:
    return r.urn or f"urn:pulumi:offline::gpu-platform::{r.type}::{r.name}"


# ------------------------------------------------------------------------------------------------ wire
def _wire_value(value: Any) -> Any:
    """A property as the engine marshals it: unknowns as the unknown sentinel (``KeepUnknowns``)."""
    if type(value).__name__ == "Unknown":  # pulumi.output.Unknown: a value the preview does not know yet
        return UNKNOWN_STRING_VALUE
    if isinstance(value, Mapping):
        return {str(k): _wire_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_wire_value(v) for v in value]
    return value


def as_policy_sees(props: Mapping[str, Any]) -> Any:
    """``props`` as ``pulumi_policy`` hands them to a policy: through a protobuf ``Struct`` (numbers become
    floats, as in ``Analyze``/``AnalyzeStack`` of pulumi-policy ``policy.py``, which call
    ``json_format.MessageToDict``), deserialized and wrapped in the unknown-checking proxy."""
    struct = struct_pb2.Struct()
    struct.update(_wire_value(props))
    return unknown_checking_proxy(deserialize_properties(json_format.MessageToDict(struct)))


StackState = Callable[[RegisteredResource], Mapping[str, Any]]
"""What ``AnalyzeStack`` receives for one resource: its outputs at some point of its life."""


def first_preview_outputs(r: RegisteredResource) -> Mapping[str, Any]:
    return r.engine_outputs()


# ------------------------------------------------------------------------------------------------ running
def run_policies(resources: Sequence[RegisteredResource], config: Optional[Mapping[str, Any]] = None,
                 policies: Optional[Iterable[PolicyDef]] = None,
                 stack_state: StackState = first_preview_outputs) -> list[Violation]:
    """Run every policy of the pack (or ``policies``) over ``resources``; disabled policies are skipped.
    Resource policies judge inputs; stack policies judge ``stack_state`` (default: a first preview's outputs)."""
    defs = list(policies) if policies is not None else POLICY_DEFS
    by_urn = {_urn(r): r for r in resources}
    out: list[Violation] = []
    for pdef in defs:
        level, props = _policy_config(pdef, config)
        if level == EnforcementLevel.DISABLED:
            continue
        reported = EnforcementLevel.MANDATORY if level == EnforcementLevel.REMEDIATE else level

        def add(message: str, r: Optional[RegisteredResource], lvl: EnforcementLevel = reported) -> None:
            out.append(Violation(pdef.id, lvl.value, r.type if r else "", r.name if r else "", message,
                                 pdef.severity.value if pdef.severity else ""))

        if pdef.scope == "resource":
            if pdef.reset is not None:
                pdef.reset()  # a run is one update: nothing carries over from an earlier one
            for r in resources:
                _run_resource(pdef, r, props, level, add)
        else:
            stack = [PolicyResource(r.type, as_policy_sees(stack_state(r)), _urn(r), r.name, _opts(r.protect),
                                    None, None, [], {}) for r in resources]
            args = StackValidationArgs(stack, props)
            try:
                pdef.policy.validate(args, lambda msg, urn=None: add(msg, by_urn.get(urn)))
            except UnknownValueError as exc:
                add(f"can't run policy '{pdef.id}' during preview: {exc.message}", None,
                    EnforcementLevel.ADVISORY)
    return out


def _run_resource(pdef: PolicyDef, r: RegisteredResource, props: dict, level: EnforcementLevel, add) -> None:
    def args_for(inputs: Mapping[str, Any]) -> ResourceValidationArgs:
        return ResourceValidationArgs(r.type, as_policy_sees(inputs), _urn(r), r.name, _opts(r.protect), None,
                                      props)

    inputs: Mapping[str, Any] = r.inputs
    try:
        if level == EnforcementLevel.REMEDIATE and pdef.remediable:
            fixed = pdef.policy.remediate(args_for(inputs))
            if fixed:
                inputs = fixed
        pdef.policy.validate(args_for(inputs), lambda msg, urn=None: add(msg, r))
    except UnknownValueError as exc:
        add(f"can't run policy '{pdef.id}' on {r.name} during preview: {exc.message}", r,
            EnforcementLevel.ADVISORY)


def exit_code(violations: Iterable[Violation]) -> int:
    """1 when any violation is mandatory (the CLI would fail the update), else 0."""
    return 1 if any(v.mandatory for v in violations) else 0


# ------------------------------------------------------------------------------------------------ plain YAML
def _documents(path: Path) -> Iterable[tuple[Path, Any]]:
    files = sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml", ".json")) if path.is_dir() \
        else [path]
    for f in files:
        for doc in yaml.safe_load_all(f.read_text()):
            yield f, doc


def _flatten(doc: Any) -> Iterable[dict]:
    if not isinstance(doc, dict):
        return
    kind = str(doc.get("kind") or "")
    if kind.endswith("List") and isinstance(doc.get("items"), list):
        for item in doc["items"]:
            yield from _flatten(item)
    elif doc.get("apiVersion") and kind:
        yield doc


def load_manifests(paths: Iterable[str | Path]) -> list[RegisteredResource]:
    """Kubernetes objects of YAML/JSON files or directories (multi-document, ``List`` kinds, ``helm template``
    output) as resources the policies can check."""
    out: list[RegisteredResource] = []
    seen: dict[str, int] = {}
    for p in paths:
        for _, doc in _documents(Path(p)):
            for obj in _flatten(doc):
                ns = k8s.get(obj, "metadata", "namespace")
                name = f"{ns}/{k8s.name_of(obj)}" if ns else (k8s.name_of(obj) or obj["kind"].lower())
                token = k8s.type_token(str(obj["apiVersion"]), str(obj["kind"]))
                key = f"{token}::{name}"
                seen[key] = seen.get(key, 0) + 1
                if seen[key] > 1:
                    name = f"{name}#{seen[key]}"
                out.append(RegisteredResource(type=token, name=name, inputs=obj))
    return out


# ------------------------------------------------------------------------------------------------ output
def _short_type(t: str) -> str:
    return t.rsplit(":", 1)[-1] if t else "(stack)"


def format_table(violations: Sequence[Violation]) -> str:
    if not violations:
        return "No policy violations."
    rows = [("LEVEL", "POLICY", "RESOURCE", "MESSAGE")]
    order = sorted(violations, key=lambda v: (not v.mandatory, v.policy_id, v.resource_name))
    rows += [(v.level, v.policy_id, f"{_short_type(v.resource_type)} {v.resource_name}".strip(), v.message)
             for v in order]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = ["  ".join(r[i].ljust(widths[i]) for i in range(3)) + "  " + r[3] for r in rows]
    mandatory = sum(v.mandatory for v in violations)
    lines.append(f"\n{len(violations)} violation(s): {mandatory} mandatory, {len(violations) - mandatory} advisory")
    return "\n".join(lines)


def format_json(violations: Sequence[Violation]) -> str:
    return json.dumps([asdict(v) for v in violations], indent=2)
