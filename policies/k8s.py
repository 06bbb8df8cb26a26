"""Reading Kubernetes objects as policies see them: registered inputs, plain YAML, or preview proxies.

Inputs arrive as plain dicts (offline runner) or as ``pulumi_policy`` proxies (``Mapping``/``Sequence``, not
``dict``/``list``), so every helper tests against the abstract types. Reading a value that is unknown at preview
raises ``UnknownValueError``; helpers never catch it, so the SDK turns the policy into an advisory for that run.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Iterator, Optional

from gpuplatform.catalogs import sharing
from gpuplatform.catalogs.kubernetes import KSERVE_MODEL_CONTAINERS, POD_TEMPLATE_PATHS

WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ReplicationController", "Job",
                  "CronJob", "Pod")
LONG_RUNNING_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ReplicationController", "Pod")
CUSTOM_POD_KINDS = tuple(dict.fromkeys(kind for _group, kind in POD_TEMPLATE_PATHS))
"""Kinds of custom resources that carry pod templates (KServe, KubeRay, LeaderWorkerSet, Kubeflow, JobSet, Argo
Rollouts, Knative); :func:`pod_spec` tells them from built-in kinds of the same name by their API group."""
POD_KINDS = WORKLOAD_KINDS + CUSTOM_POD_KINDS
"""Everything the pod policies judge."""


def is_map(value: Any) -> bool:
    return isinstance(value, Mapping)


def is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def get(obj: Any, *path: Any, default: Any = None) -> Any:
    """``obj[path[0]][path[1]]…`` tolerating missing keys and wrong shapes at any step."""
    cur = obj
    for key in path:
        if isinstance(key, int):
            if not is_list(cur) or key >= len(cur):
                return default
            cur = cur[key]
        else:
            if not is_map(cur):
                return default
            cur = cur.get(key)
        if cur is None:
            return default
    return cur


def plain(value: Any) -> Any:
    """Proxies -> plain dicts and lists (for copies and for helpers written against dicts)."""
    if is_map(value):
        return {str(k): plain(v) for k, v in value.items()}
    if is_list(value):
        return [plain(v) for v in value]
    return value


def as_map(value: Any) -> Mapping:
    return value if is_map(value) else {}


def as_list(value: Any) -> Sequence:
    return value if is_list(value) else []


# ------------------------------------------------------------------------------------------------ type tokens
def type_token(api_version: str, kind: str) -> str:
    """The pulumi-kubernetes type token of an object (``apps/v1`` Deployment -> ``kubernetes:apps/v1:Deployment``)."""
    group, _, version = api_version.rpartition("/")
    return f"kubernetes:{group or 'core'}/{version}:{kind}"


def parse_type(resource_type: str) -> tuple[Optional[str], Optional[str]]:
    """(apiVersion, kind) of a Kubernetes type token; (None, None) for anything else."""
    if not resource_type.startswith("kubernetes:") or resource_type.count(":") != 2:
        return None, None
    _, gv, kind = resource_type.split(":")
    group, _, version = gv.rpartition("/")
    if not version:
        return None, None
    return (version if group in ("core", "") else f"{group}/{version}"), kind


def kind_of(resource_type: str, props: Any) -> Optional[str]:
    kind = get(props, "kind")
    if isinstance(kind, str) and kind:
        return kind
    return parse_type(resource_type)[1]


def api_version_of(resource_type: str, props: Any) -> Optional[str]:
    av = get(props, "apiVersion")
    if isinstance(av, str) and av:
        return av
    return parse_type(resource_type)[0]


def is_patch(resource_type: str) -> bool:
    """Server-side-apply patches carry only the fields they change; absent fields say nothing."""
    return resource_type.startswith("kubernetes:") and resource_type.endswith("Patch")


def name_of(props: Any) -> str:
    return str(get(props, "metadata", "name", default="") or "")


def namespace_of(props: Any) -> str:
    return str(get(props, "metadata", "namespace", default="") or "default")


# ------------------------------------------------------------------------------------------------ pods
def pod_spec(kind: Optional[str], props: Any) -> Optional[Mapping]:
    """The pod spec of a workload; for a custom resource with pod templates (:data:`POD_TEMPLATE_PATHS`) one
    spec standing for all of them (:func:`_merged_pod_spec`)."""
    if kind == "Pod":
        spec = get(props, "spec")
    elif kind == "CronJob":
        spec = get(props, "spec", "jobTemplate", "spec", "template", "spec")
    elif kind in WORKLOAD_KINDS:
        spec = get(props, "spec", "template", "spec")
    elif kind in CUSTOM_POD_KINDS:
        return _merged_pod_spec(custom_pod_specs(kind, props))
    else:
        return None
    return spec if is_map(spec) else None


def workload_pod_spec(kind: Optional[str], props: Any) -> Optional[Mapping]:
    """The pod spec of a built-in workload only: what the cross-object policies (an autoscaler's target, its
    replicas' GPUs and labels) read, where a custom resource's replica is not one pod (a LeaderWorkerSet's is a
    group of them)."""
    return pod_spec(kind, props) if kind in WORKLOAD_KINDS else None


def _walk(node: Any, path: Sequence[str]) -> Iterator[Any]:
    if not path:
        yield node
        return
    head, rest = path[0], path[1:]
    if head == "*":
        children = node.values() if is_map(node) else (as_list(node) if is_list(node) else [])
        for child in children:
            yield from _walk(child, rest)
    elif is_map(node) and head in node:
        yield from _walk(node[head], rest)


def custom_pod_specs(kind: Optional[str], props: Any) -> list[Mapping]:
    """Every pod spec a custom resource carries (empty for other objects)."""
    api = str(get(props, "apiVersion", default="") or "")
    paths = POD_TEMPLATE_PATHS.get((api.split("/")[0] if "/" in api else "", str(kind)))
    if not paths:
        return []
    out = []
    for path in paths:
        for spec in _walk(props, path):
            if not is_map(spec):
                continue
            if path[-1] != "spec" and any(k in spec for k in KSERVE_MODEL_CONTAINERS):
                # a KServe component: its model or framework spec is a container beside any in containers
                models = [spec[k] for k in KSERVE_MODEL_CONTAINERS if is_map(spec.get(k))]
                spec = {**spec, "containers": list(as_list(spec.get("containers"))) + models}
            if as_list(spec.get("containers")):
                out.append(spec)
    return out


def _merged_pod_spec(specs: list[Mapping]) -> Optional[Mapping]:
    """One spec for the pod policies: every container, init container and volume of every template (the same
    objects, so remediation edits the resource), host namespaces if any template asks for them, placement from
    the first template, and the pod-level securityContext only when all templates share it (otherwise each
    container must carry its own, which is what the policies then ask)."""
    if not specs:
        return None
    merged = dict(specs[0])
    for key in ("initContainers", "containers", "ephemeralContainers", "volumes"):
        merged[key] = [item for s in specs for item in as_list(get(s, key))]
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if any(get(s, key) is True for s in specs):
            merged[key] = True
    contexts = [get(s, "securityContext") for s in specs]
    merged["securityContext"] = contexts[0] if all(c == contexts[0] for c in contexts) else {}
    return merged


def pod_labels(kind: Optional[str], props: Any) -> Mapping:
    if kind == "Pod":
        return as_map(get(props, "metadata", "labels"))
    if kind == "CronJob":
        return as_map(get(props, "spec", "jobTemplate", "spec", "template", "metadata", "labels"))
    return as_map(get(props, "spec", "template", "metadata", "labels"))


def containers(spec: Optional[Mapping], *, init: bool = True, own_only: bool = False) -> Iterator[Mapping]:
    """The containers of a pod spec. ``own_only`` leaves out those another object completes: a KServe model or
    framework spec without an image is merged by the controller into its ServingRuntime's container, whose
    image, securityContext and defaults the InferenceService does not show."""
    keys = ("initContainers", "containers", "ephemeralContainers") if init else ("containers",)
    for key in keys:
        for c in as_list(get(spec, key)):
            if is_map(c) and not (own_only and completed_by_runtime(c)):
                yield c


def completed_by_runtime(c: Mapping) -> bool:
    return not isinstance(get(c, "image"), str) and any(
        k in c for k in ("modelFormat", "storageUri", "runtime", "runtimeVersion", "protocolVersion"))


def container_name(c: Mapping) -> str:
    if not c.get("name") and completed_by_runtime(c):
        return "kserve-container"  # the name the KServe controller gives a predictor's model container
    return str(c.get("name") or "?")


# ------------------------------------------------------------------------------------------------ quantities
_SUFFIX = {"m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30,
           "Ti": 2 ** 40}


def quantity(value: Any) -> Optional[float]:
    """A Kubernetes quantity as a number (``"500m"`` -> 0.5, ``4`` -> 4.0); None when unreadable."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if not isinstance(value, str):
        return None
    m = re.fullmatch(r"\s*([0-9.]+)\s*([a-zA-Z]*)\s*", value)
    if not m or m.group(2) not in ("", *_SUFFIX):
        return None
    try:
        return float(m.group(1)) * _SUFFIX.get(m.group(2), 1)
    except ValueError:
        return None


def fmt_number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


# ------------------------------------------------------------------------------------------------ GPU resources
def is_gpu_resource(name: str) -> bool:
    return name in (sharing.RESOURCE_GPU, sharing.RESOURCE_GPU_MEM, sharing.RESOURCE_GPU_CORE) or name.startswith(
        sharing.MIG_RESOURCE_PREFIX)


def gpu_resources(c: Mapping) -> dict[str, tuple[Any, Any]]:
    """GPU resource -> (request, limit) of one container."""
    req = as_map(get(c, "resources", "requests"))
    lim = as_map(get(c, "resources", "limits"))
    out = {}
    for key in list(req) + list(lim):
        if is_gpu_resource(str(key)):
            out[str(key)] = (req.get(key), lim.get(key))
    return out


def pod_gpu_resources(spec: Optional[Mapping]) -> dict[str, float]:
    """GPU resource -> amount one pod asks for (limits, as extended resources are not overcommitted)."""
    out: dict[str, float] = {}
    for c in containers(spec, init=False):
        for key, (req, lim) in gpu_resources(c).items():
            amount = quantity(lim if lim is not None else req) or 0
            out[key] = out.get(key, 0) + amount
    return out


def uses_gpu(spec: Optional[Mapping]) -> bool:
    return any(gpu_resources(c) for c in containers(spec))


def mode_of_resources(resources: Mapping[str, float]) -> Optional[str]:
    """Sharing mode implied by the resources a pod asks for (None: whole GPUs or MIG single, undecidable)."""
    if sharing.RESOURCE_GPU_MEM in resources:
        return "cgpu"
    if any(k.startswith(sharing.MIG_RESOURCE_PREFIX) for k in resources):
        return "mig"
    return None


# ------------------------------------------------------------------------------------------------ selectors
def selects(selector: Any, labels: Mapping) -> bool:
    """Whether a label selector (``matchLabels``/``matchExpressions`` or a plain map) selects ``labels``."""
    if not is_map(selector):
        return False
    has_structured = "matchLabels" in selector or "matchExpressions" in selector
    match = as_map(selector.get("matchLabels")) if has_structured else selector
    if not match and not as_list(selector.get("matchExpressions")):
        return False
    if any(labels.get(k) != v for k, v in match.items()):
        return False
    for expr in as_list(selector.get("matchExpressions")):
        key, op, values = get(expr, "key"), get(expr, "operator"), list(as_list(get(expr, "values")))
        present = key in labels
        if op == "In" and (not present or labels.get(key) not in values):
            return False
        if op == "NotIn" and present and labels.get(key) in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


def tolerates(tolerations: Sequence, taint: Mapping) -> bool:
    """Kubernetes' toleration matching for one taint."""
    for t in tolerations:
        if not is_map(t):
            continue
        effect = t.get("effect")
        if effect and effect != taint.get("effect"):
            continue
        key, op = t.get("key"), t.get("operator") or "Equal"
        if not key and op == "Exists":
            return True
        if key != taint.get("key"):
            continue
        if op == "Exists" or (t.get("value") or "") == (taint.get("value") or ""):
            return True
    return False
