"""What the API server of the target version refuses in the objects read (:mod:`gpuplatform.apiserver`), as findings
at the line of the field: no policy of the pack, but reported beside its findings."""
from typing import Any, Mapping, Optional

from gpuplatform import apiserver
from gpuplatform.check.findings import Violation
from gpuplatform.check.yaml_reading import HELM_RELEASE_TYPE, Manifests, line_of
from gpuplatform.policies import k8s
from gpuplatform.policies.registry import EnforcementLevel


def api_server_level(config: Optional[Mapping[str, Any]]) -> str:
    """Level of the API-server check under a policy-pack config: mandatory unless the config names
    ``api-server-rejects`` (``"advisory"``, ``"disabled"``); ``all`` does not lower it (it is no policy of the
    pack: the API server refuses these objects whatever the pack's levels)."""
    entry = (config or {}).get(apiserver.RULE_ID)
    if isinstance(entry, Mapping):
        entry = entry.get("enforcementLevel")
    return entry if entry in ("advisory", "disabled", "mandatory") else EnforcementLevel.MANDATORY.value


def api_server_violations(read: "Manifests", kubernetes_version: Optional[str],
                          level: str = EnforcementLevel.MANDATORY.value) -> list[Violation]:
    """What the API server of the target version refuses in the objects read (:mod:`gpuplatform.apiserver`),
    one finding per problem at the line of the field."""
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
