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
an unknown value is reported as an advisory "can't run during preview", exactly as the CLI reports it. Plain data
(every manifest, most stacks) takes the same trip without the SDK (:mod:`gpuplatform.wire`): importing it is most
of the start-up of a check of one file, and only preview values, secrets and remediation need it.
"""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

import yaml

from gpuplatform.apiserver import as_sent
from gpuplatform.records import RegisteredResource
from gpuplatform.policies import k8s
from gpuplatform.policies.pack import POLICY_DEFS
from gpuplatform.policies.registry import EnforcementLevel, PolicyDef, resource_from
from gpuplatform.wire import NotPlain, as_received

LEVELS = {level.value: level for level in EnforcementLevel}

YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's parser when PyYAML has it (its wheels do): the same documents and line marks, several times faster on
the megabytes of a rendered kube-prometheus-stack."""


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
    file: str = ""
    """Where the object is declared: the manifest file (``--manifests``), the stack file or the project's program;
    empty when unknown."""
    line: Optional[int] = None
    """Line of the object's document (or of the ``List`` item) in ``file``."""

    @property
    def mandatory(self) -> bool:
        return self.level == EnforcementLevel.MANDATORY.value

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.file and self.line else self.file


def located(violations: Iterable[Violation], locations: Optional[Mapping[str, tuple[str, int]]] = None,
            default: Optional[tuple[str, Optional[int]]] = None,
            nodes: Optional[Mapping[str, Any]] = None) -> list[Violation]:
    """``violations`` with the file and line of the object each one names (``locations``: ``type::name`` ->
    (file, line), as :func:`read_manifests` records them), else ``default`` (the stack file). A finding that ends
    with the path of a field (`` at spec.template.spec.containers[0].securityContext.privileged``,
    :func:`gpuplatform.policies.k8s.path_in_message`) gets that field's line when the object's YAML node is known
    (``nodes``, as :func:`read_manifests` records them)."""
    from dataclasses import replace

    out = []
    for v in violations:
        key = f"{v.resource_type}::{v.resource_name}"
        where = (locations or {}).get(key) or default
        if where and not v.file:
            path = k8s.path_in_message(v.message) if (nodes or {}).get(key) is not None else None
            line = (line_of(nodes[key], path) if path else None) or where[1]
            v = replace(v, file=str(where[0]), line=line)
        out.append(v)
    return out


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


def _opts(protect: bool):
    from pulumi_policy import PolicyCustomTimeouts, PolicyResourceOptions

    return PolicyResourceOptions(protect=protect, ignore_changes=[], delete_before_replace=None, aliases=[],
                                 custom_timeouts=PolicyCustomTimeouts(0, 0, 0), additional_secret_outputs=[])


def _urn(r: RegisteredResource) -> str:
    return r.urn or f"urn:pulumi:offline::gpu-platform::{r.type}::{r.name}"


# ------------------------------------------------------------------------------------------------ wire
def _wire_value(value: Any) -> Any:
    """A property as the engine marshals it: unknowns as the unknown sentinel (``KeepUnknowns``)."""
    from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

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
    from google.protobuf import json_format, struct_pb2
    from pulumi_policy.deserialize import deserialize_properties
    from pulumi_policy.proxy import unknown_checking_proxy

    struct = struct_pb2.Struct()
    struct.update(_wire_value(props))
    return unknown_checking_proxy(deserialize_properties(json_format.MessageToDict(struct)))


WIRES = ("auto", "protobuf", "plain")
"""How :func:`run_policies` hands properties to the policies: ``protobuf``, through the SDK as the CLI does
(:func:`as_policy_sees`); ``plain``, the same result for plain data without the SDK (:mod:`gpuplatform.wire`),
refusing anything else; ``auto``, plain when every property is plain data and no policy remediates, else
protobuf."""


StackState = Callable[[RegisteredResource], Mapping[str, Any]]
"""What ``AnalyzeStack`` receives for one resource: its outputs at some point of its life."""


def first_preview_outputs(r: RegisteredResource) -> Mapping[str, Any]:
    return r.engine_outputs()


# ------------------------------------------------------------------------------------------------ running
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


def exit_code(violations: Iterable[Violation]) -> int:
    """1 when any violation is mandatory (the CLI would fail the update), else 0."""
    return 1 if any(v.mandatory for v in violations) else 0


# ------------------------------------------------------------------------------------------------ plain YAML
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
_HELM_DIRECTIVE = re.compile(r"\{\{-?\s*(?:[^}]*\.(?:Values|Release|Chart|Capabilities|Files)\b|include\s|"
                             r"template\s|toYaml\b|tpl\s|define\s)")
"""Go-template actions that only Helm charts use (Prometheus and Alertmanager templates in ConfigMaps use
``{{ $labels }}``, ``{{ range .Alerts }}``, never these)."""


def _template_in_content(text: str) -> Optional[re.Match]:
    """The first Helm action in the YAML content of ``text``; one in a comment renders to nothing either way, so
    a plain manifest whose comments show a chart's values (``# image: {{ .Values.image }}``) is not a template.
    Block scalars (``|``, ``>``) are content whatever their lines start with: their ranges come from the YAML
    scanner, which also stops at a template's first syntax error (the text after it is judged line by line)."""
    matches = list(_HELM_DIRECTIVE.finditer(text))
    if not matches:
        return None
    blocks = []
    try:
        for token in yaml.scan(text, Loader=yaml.SafeLoader):
            if isinstance(token, yaml.ScalarToken) and token.style in ("|", ">"):
                blocks.append((token.start_mark.index, token.end_mark.index))
    except yaml.YAMLError:
        pass
    for m in matches:
        if any(start <= m.start() < end for start, end in blocks) or not _in_comment(text, m.start()):
            return m
    return None


def _in_comment(text: str, pos: int) -> bool:
    """Whether ``pos`` is inside a YAML comment: after a ``#`` that starts the line or follows whitespace, outside
    a quoted scalar (a quote opens one only where a scalar can start)."""
    start = text.rfind("\n", 0, pos) + 1
    quote, prev = None, " "
    for ch in text[start:pos]:
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"" and prev in " \t:-[{,":
            quote = ch
        elif ch == "#" and prev in " \t":
            return True
        prev = ch
    return False


@dataclass(frozen=True)
class InputError:
    """A file that could not be read as Kubernetes manifests."""

    path: str
    line: Optional[int]
    message: str

    def render(self) -> str:
        return f"{self.path}:{self.line}: {self.message}" if self.line else f"{self.path}: {self.message}"


class ManifestError(Exception):
    def __init__(self, errors: Sequence[InputError]):
        super().__init__("\n".join(e.render() for e in errors))
        self.errors = list(errors)


@dataclass
class Manifests:
    """What ``check --manifests`` read: the objects, where each one starts, and the files it could not read."""

    resources: list[RegisteredResource] = field(default_factory=list)
    locations: dict[str, tuple[str, int]] = field(default_factory=dict)
    """Resource name -> (file, line of the document)."""
    errors: list[InputError] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    nodes: dict[str, Any] = field(default_factory=dict)
    """Resource name -> the object's YAML node, to locate a field inside it."""


def _files(path: Path, errors: list[InputError]) -> list[Path]:
    if str(path) == "-":
        return [path]
    if not path.exists():
        errors.append(InputError(str(path), None, "no such file or directory"))
        return []
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in MANIFEST_SUFFIXES)
    return [path]


def _text(path: Path, errors: list[InputError]) -> Optional[str]:
    import sys

    raw = sys.stdin.buffer.read() if str(path) == "-" else path.read_bytes()
    if b"\x00" in raw[:8192]:
        errors.append(InputError(str(path), None, "is a binary file, not YAML or JSON manifests"))
        return None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        errors.append(InputError(str(path), line, f"is not UTF-8 text ({exc.reason} at byte {exc.start})"))
        return None
    match = _template_in_content(text)
    if match:
        line = text[:match.start()].count("\n") + 1
        snippet = text[match.start():text.find("}}", match.start()) + 2][:60]
        errors.append(InputError(str(path), line, f"is a Helm template ('{snippet}'); render it first, e.g. "
                                                  f"'helm template RELEASE CHART -f values.yaml | gpuplatform "
                                                  f"check --manifests -'"))
        return None
    return text


def _parse(path: Path, text: str, errors: list[InputError]) -> Iterable[tuple[int, Any, Any]]:
    """(line, document, node) for every YAML document; a syntax error ends the file (later documents cannot be
    located reliably) and is reported with its line and column."""
    loader = YAML_LOADER(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            yield node.start_mark.line + 1, loader.construct_document(node), node
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = " ".join(str(x) for x in (getattr(exc, "context", None), getattr(exc, "problem", None)) if x)
        hint = " (a Helm template? render it with 'helm template' first)" if "{{" in text else ""
        errors.append(InputError(str(path), mark.line + 1 if mark else None,
                                 f"invalid YAML{f' at column {mark.column + 1}' if mark else ''}: "
                                 f"{problem or exc}{hint}"))
    finally:
        loader.dispose()


def _flatten(doc: Any, node: Any, line: int) -> Iterable[tuple[dict, int, Any]]:
    """(object, line, node) of a document: itself, or each item of a ``List`` kind at the item's own line."""
    if not isinstance(doc, dict):
        return
    kind = str(doc.get("kind") or "")
    if kind.endswith("List") and isinstance(doc.get("items"), list):
        item_nodes = []
        if isinstance(node, yaml.MappingNode):
            item_nodes = next((v.value for k, v in node.value if getattr(k, "value", None) == "items"
                               and isinstance(v, yaml.SequenceNode)), [])
        for i, item in enumerate(doc["items"]):
            child = item_nodes[i] if i < len(item_nodes) else None
            yield from _flatten(item, child, child.start_mark.line + 1 if child is not None else line)
    elif doc.get("apiVersion") and kind:
        yield doc, line, node


HELM_RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
PATCH_ANNOTATION = "pulumi.com/patchForce"
"""Marks a pulumi-kubernetes server-side-apply patch (``…Patch`` resources): it names only the fields it owns."""
PLAN_RELEASE_KEYS = {"chart", "version", "values", "name", "namespace"}
"""A Helm release as ``gpuplatform plan --out`` writes it (``helmrelease-<ns>-<name>.yaml``): checked as the
release resource the program registers, so the adapter rules it carries vouch for the HPAs beside it."""


def _plan_release(doc: Any) -> Optional[RegisteredResource]:
    if not isinstance(doc, dict) or "apiVersion" in doc or not PLAN_RELEASE_KEYS <= set(doc):
        return None
    inputs = {k: doc[k] for k in PLAN_RELEASE_KEYS}
    if doc.get("repository"):
        inputs["repositoryOpts"] = {"repo": doc["repository"]}
    return RegisteredResource(type=HELM_RELEASE_TYPE, name=f"{doc['namespace']}/{doc['name']}", inputs=inputs)


def read_manifests(paths: Iterable[str | Path]) -> Manifests:
    """Kubernetes objects of YAML/JSON files, directories or ``-`` (stdin): multi-document files, ``List`` kinds,
    ``helm template`` output. Files that cannot be read are recorded in ``errors`` (file and line) and the
    others are still read, so one bad file hides nothing."""
    out = Manifests()
    seen: dict[str, int] = {}
    for p in paths:
        for f in _files(Path(p), out.errors):
            text = _text(f, out.errors)
            if text is None:
                continue
            out.files.append(str(f))
            for line, doc, node in _parse(f, text, out.errors):
                release = _plan_release(doc)
                if release is not None:
                    out.resources.append(release)
                    out.locations[f"{release.type}::{release.name}"] = (str(f), line)
                    continue
                for obj, obj_line, obj_node in _flatten(doc, node, line):
                    obj = as_sent(obj)  # JSON as kubectl sends it: no YAML dates, string keys
                    ns = k8s.get(obj, "metadata", "namespace")
                    name = f"{ns}/{k8s.name_of(obj)}" if ns else (k8s.name_of(obj) or str(obj["kind"]).lower())
                    token = k8s.type_token(str(obj["apiVersion"]), str(obj["kind"]))
                    if PATCH_ANNOTATION in k8s.as_map(k8s.get(obj, "metadata", "annotations")):
                        token += "Patch"  # a server-side-apply patch, as `plan --out` writes one: its fields only
                    key = f"{token}::{name}"
                    seen[key] = seen.get(key, 0) + 1
                    if seen[key] > 1:
                        name = f"{name}#{seen[key]}"
                    out.resources.append(RegisteredResource(type=token, name=name, inputs=obj))
                    out.locations[f"{token}::{name}"] = (str(f), obj_line)
                    if obj_node is not None:
                        out.nodes[f"{token}::{name}"] = obj_node
    return out


def line_of(node: Any, path: Sequence) -> Optional[int]:
    """Line of ``path`` (keys and indexes) inside a YAML node: the deepest part of it the node has."""
    line = node.start_mark.line + 1 if node is not None else None
    for part in path:
        child = None
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if getattr(key, "value", None) == str(part):
                    child, line = value, key.start_mark.line + 1
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            child = node.value[part]
            line = child.start_mark.line + 1
        if child is None:
            break
        node = child
    return line


def stack_file_locations(path: str | Path, raw: Mapping[str, Any],
                         resources: Sequence[RegisteredResource]) -> dict[str, tuple[str, int]]:
    """``type::name`` -> (stack file, line) for the resources a stack file's workloads and node pools produce:
    the line of the entry (``- name: <workload>``) whose name the resource carries, the longest name winning
    (``ranker`` and ``ranker-v2``). Resources of no entry (the cluster, the monitoring stack) are left out."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return {}
    names = [str(e.get("name")) for key in ("workloads", "nodePools") for e in (raw.get(key) or [])
             if isinstance(e, Mapping) and e.get("name")]
    line_of_name = {}
    for name in names:
        entry = re.compile(rf"^\s*(?:-\s+)?name:\s*['\"]?{re.escape(name)}['\"]?\s*(?:#.*)?$")
        line_of_name[name] = next((i + 1 for i, text in enumerate(lines) if entry.match(text)), None)
    out = {}
    for r in resources:
        meta_name = str(k8s.get(r.inputs, "metadata", "name", default="") or "") if isinstance(r.inputs, Mapping) \
            else ""
        hits = [n for n in names if line_of_name[n] and (n in r.name or (meta_name and n in meta_name))]
        if hits:
            out[f"{r.type}::{r.name}"] = (str(path), line_of_name[max(hits, key=len)])
    return out


def api_server_level(config: Optional[Mapping[str, Any]]) -> str:
    """Level of the API-server check under a policy-pack config: mandatory unless the config names
    ``api-server-rejects`` (``"advisory"``, ``"disabled"``); ``all`` does not lower it (it is no policy of the
    pack: the API server refuses these objects whatever the pack's levels)."""
    from gpuplatform import apiserver

    entry = (config or {}).get(apiserver.RULE_ID)
    if isinstance(entry, Mapping):
        entry = entry.get("enforcementLevel")
    return entry if entry in ("advisory", "disabled", "mandatory") else EnforcementLevel.MANDATORY.value


def api_server_violations(read: "Manifests", kubernetes_version: Optional[str],
                          level: str = EnforcementLevel.MANDATORY.value) -> list[Violation]:
    """What the API server of the target version refuses in the objects read (:mod:`gpuplatform.apiserver`),
    one finding per problem at the line of the field."""
    from gpuplatform import apiserver

    if level == EnforcementLevel.DISABLED.value:
        return []
    version = apiserver.schema_version(kubernetes_version)
    out = []
    for r in read.resources:
        if r.type == HELM_RELEASE_TYPE:
            continue
        key = f"{r.type}::{r.name}"
        file, obj_line = read.locations.get(key, ("", None))
        label = f"{r.inputs.get('kind')} {r.name}"
        for rej in apiserver.rejections(r.inputs, version, patch=k8s.is_patch(r.type)):
            line = line_of(read.nodes.get(key), rej.path) or obj_line
            out.append(Violation(apiserver.RULE_ID, level, r.type, r.name,
                                 f"{label}: rejected by the API server"
                                 f"{f' (Kubernetes {version.rsplit(chr(46), 1)[0]})' if version else ''}: "
                                 f"{rej.render()}", "critical", file, line))
    return out


def load_manifests(paths: Iterable[str | Path]) -> list[RegisteredResource]:
    """The objects of :func:`read_manifests`; raises :class:`ManifestError` when a file cannot be read."""
    read = read_manifests(paths)
    if read.errors:
        raise ManifestError(read.errors)
    return read.resources


# ------------------------------------------------------------------------------------------------ output
def _short_type(t: str) -> str:
    return t.rsplit(":", 1)[-1] if t else "(stack)"


@dataclass(frozen=True)
class Checked:
    """What a run covered, for the report's last line."""

    policies: int
    """Policies of the pack that ran: the pack's own count, as README.md and docs/policies.md state it."""
    objects: int
    files: int
    api_server: bool = False
    """Whether the API server's checks ran too (no policy of the pack: they are said beside the count)."""

    def render(self) -> str:
        def n(count: int, what: str) -> str:
            return f"{count} {what}{'' if count == 1 else 's'}"
        also = " and the API server's checks" if self.api_server else ""
        return f"checked {n(self.policies, 'policy').replace('policys', 'policies')}{also} on " \
               f"{n(self.objects, 'object')} from {n(self.files, 'file')}"


def active_policies(config: Optional[Mapping[str, Any]] = None) -> int:
    """How many policies of the pack run under ``config`` (the disabled ones do not)."""
    return sum(_policy_config(p, config)[0] != EnforcementLevel.DISABLED for p in POLICY_DEFS)


def format_table(violations: Sequence[Violation], checked: Optional[Checked] = None) -> str:
    if not violations:
        return "No policy violations." + (f" ({checked.render()})" if checked else "")
    located_any = any(v.file for v in violations)
    header = ("LEVEL", "POLICY", "RESOURCE") + (("FILE",) if located_any else ())
    rows = [header + ("MESSAGE",)]
    order = sorted(violations, key=lambda v: (not v.mandatory, v.policy_id, v.file, v.line or 0, v.resource_name))
    rows += [(v.level, v.policy_id, f"{_short_type(v.resource_type)} {v.resource_name}".strip())
             + ((v.where or "-",) if located_any else ()) + (v.message,) for v in order]
    cols = len(header)
    widths = [max(len(r[i]) for r in rows) for i in range(cols)]
    lines = ["  ".join(r[i].ljust(widths[i]) for i in range(cols)) + "  " + r[cols] for r in rows]
    mandatory = sum(v.mandatory for v in violations)
    lines.append(f"\n{len(violations)} violation(s): {mandatory} mandatory, {len(violations) - mandatory} advisory"
                 + (f"; {checked.render()}" if checked else ""))
    return "\n".join(lines)


def format_json(violations: Sequence[Violation]) -> str:
    return json.dumps([asdict(v) for v in violations], indent=2)


# ------------------------------------------------------------------------------------------------ SARIF
SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
_SARIF_LEVEL = {EnforcementLevel.MANDATORY.value: "error", EnforcementLevel.ADVISORY.value: "warning"}
# GitHub code scanning ranks security results by this property (docs "SARIF support for code scanning")
_SECURITY_SEVERITY = {"critical": "9.0", "high": "7.0", "medium": "5.0", "low": "3.0"}


def _uri(path: str) -> str:
    p = Path(path)
    try:
        p = p.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        pass
    return p.as_posix()


def _location(path: str, line: Optional[int]) -> dict:
    physical: dict[str, Any] = {"artifactLocation": {"uri": _uri(path)}}
    if line:
        physical["region"] = {"startLine": line}
    return {"physicalLocation": physical}


CONFIG_RULE_ID = "stack-config-invalid"
CONFIG_RULE_DESCRIPTION = ("The stack configuration must pass gpu-platform's validation (the message names the config "
                           "path, the bad value and what is allowed); until it does nothing is synthesized, so no "
                           "policy has run.")
_CONFIG_PATH_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def config_violations(issues: Iterable[Any], stack_file: str | Path, namespace: str) -> list[Violation]:
    """Config errors (``ConfigIssue``: ``path`` inside the config ``namespace``, ``message``) as mandatory results at
    the stack file, each at the line of its config path (``config: <namespace>:<key>: ...``) as far as the file has
    it, so a report uploaded after a failed check points at the setting to fix."""
    try:
        root = yaml.compose(Path(stack_file).read_text(), Loader=YAML_LOADER)
    except (OSError, yaml.YAMLError):
        root = None
    out = []
    for issue in issues:
        parts: list[Any] = [int(i) if i else name for name, i in _CONFIG_PATH_PART.findall(str(issue.path))]
        line = None
        if root is not None and parts and isinstance(parts[0], str) and not parts[0].startswith("("):
            line = line_of(root, ["config", f"{namespace}:{parts[0]}", *parts[1:]])
        # "(file)", "(program)": the whole file or program, no config path to name
        message = issue.message if str(issue.path).startswith("(") else str(issue)
        out.append(Violation(CONFIG_RULE_ID, EnforcementLevel.MANDATORY.value, "", "", message, file=str(stack_file),
                             line=line))
    return out


def format_sarif(violations: Sequence[Violation], locations: Optional[Mapping[str, tuple[str, int]]] = None,
                 default_location: Optional[tuple[str, Optional[int]]] = None,
                 errors: Sequence[InputError] = (), policies: Optional[Sequence[PolicyDef]] = None) -> str:
    """One SARIF 2.1.0 run: a rule per policy, a result per violation located at the document that declares the
    resource (or ``default_location``, e.g. the stack file), and unreadable inputs as tool notifications."""
    from gpuplatform.policies.registry import LOW

    defs = list(policies if policies is not None else POLICY_DEFS)
    index = {p.id: i for i, p in enumerate(defs)}
    rules = []
    for p in defs:
        severity = (p.severity or LOW).value
        props: dict[str, Any] = {"tags": [p.category] + (["hardening"] if p.hardening else [])}
        if p.category in ("security", "pod-security"):
            props["security-severity"] = _SECURITY_SEVERITY.get(severity, "5.0")
        rules.append({"id": p.id, "name": p.id, "shortDescription": {"text": p.description.split(": ")[0][:120]},
                      "fullDescription": {"text": p.description},
                      "help": {"text": p.remediation or p.description},
                      "defaultConfiguration": {"level": _SARIF_LEVEL.get(p.level.value, "note")},
                      "properties": props})
    if any(v.policy_id not in index and v.policy_id != CONFIG_RULE_ID for v in violations):
        from gpuplatform import apiserver

        index[apiserver.RULE_ID] = len(rules)
        rules.append({"id": apiserver.RULE_ID, "name": apiserver.RULE_ID,
                      "shortDescription": {"text": "The API server must accept the object"},
                      "fullDescription": {"text": apiserver.RULE_DESCRIPTION},
                      "help": {"text": apiserver.RULE_DESCRIPTION},
                      "defaultConfiguration": {"level": "error"}, "properties": {"tags": ["kubernetes"]}})
    if any(v.policy_id == CONFIG_RULE_ID for v in violations):
        index[CONFIG_RULE_ID] = len(rules)
        rules.append({"id": CONFIG_RULE_ID, "name": CONFIG_RULE_ID,
                      "shortDescription": {"text": "The stack configuration must be valid"},
                      "fullDescription": {"text": CONFIG_RULE_DESCRIPTION}, "help": {"text": CONFIG_RULE_DESCRIPTION},
                      "defaultConfiguration": {"level": "error"}, "properties": {"tags": ["configuration"]}})
    results = []
    for v in violations:
        result: dict[str, Any] = {"ruleId": v.policy_id, "level": _SARIF_LEVEL.get(v.level, "note"),
                                  "message": {"text": v.message}}
        if v.policy_id in index:
            result["ruleIndex"] = index[v.policy_id]
        where = ((v.file, v.line) if v.file else None) or (locations or {}).get(
            f"{v.resource_type}::{v.resource_name}") or default_location
        if where:
            result["locations"] = [_location(where[0], where[1])]
        results.append(result)
    # a problem with the command line has no file to point at
    notifications = [{"level": "error", "message": {"text": e.message},
                      **({"locations": [_location(e.path, e.line)]} if e.path else {})} for e in errors]
    run = {"tool": {"driver": {"name": "gpuplatform", "informationUri": "https://www.pulumi.com/docs/iac/"
                                                                       "using-pulumi/crossguard/",
                               "rules": rules}},
           "invocations": [{"executionSuccessful": not errors, "toolExecutionNotifications": notifications}],
           "results": results}
    return json.dumps({"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}, indent=2)


def with_strict(config: Optional[Mapping[str, Any]]) -> dict[str, Any]:
    """``config`` with every hardening policy raised to mandatory (what ``--strict`` and ``policies/strict.json``
    do); an explicit setting for a policy in ``config`` still wins."""
    from gpuplatform.policies.registry import strict_config

    out: dict[str, Any] = dict(strict_config())
    for key, value in (config or {}).items():
        if key in out and isinstance(value, Mapping) and "enforcementLevel" not in value:
            out[key] = {"enforcementLevel": out[key], **value}
        else:
            out[key] = value
    return out
