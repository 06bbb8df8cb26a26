"""Where each finding points: the file and line of the object it names (a manifest, the stack file's entry), of the
field at the end of its message, or of the config path of a config error."""
import re
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

import yaml

from gpuplatform.check.findings import CONFIG_RULE_ID, Violation
from gpuplatform.check.yaml_reading import YAML_LOADER, line_of
from gpuplatform.policies import k8s
from gpuplatform.policies.registry import EnforcementLevel
from gpuplatform.records import RegisteredResource


def located(violations: Iterable[Violation], locations: Optional[Mapping[str, tuple[str, int]]] = None,
            default: Optional[tuple[str, Optional[int]]] = None,
            nodes: Optional[Mapping[str, Any]] = None) -> list[Violation]:
    """``violations`` with the file and line of the object each one names (``locations``: ``type::name`` ->
    (file, line), as :func:`read_manifests` records them), else ``default`` (the stack file). A finding that ends
    with the path of a field (`` at spec.template.spec.containers[0].securityContext.privileged``,
    :func:`gpuplatform.policies.k8s.path_in_message`) gets that field's line when the object's YAML node is known
    (``nodes``, as :func:`read_manifests` records them)."""
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
