"""Reading Kubernetes objects as policies see them: registered inputs, plain YAML, or preview proxies.

Inputs arrive as plain dicts (offline runner) or as ``pulumi_policy`` proxies (``Mapping``/``Sequence``, not
``dict``/``list``), so every helper tests against the abstract types. Reading a value that is unknown at preview
raises ``UnknownValueError``; helpers never catch it, so the SDK turns the policy into an advisory for that run,
except the walks over a whole object (the general pod rule, a finding's path), which pass an unknown value by.
"""
from __future__ import annotations

import json
import re
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Optional

from gpuplatform.catalogs import sharing
from gpuplatform.catalogs.kubernetes import (ASSEMBLED_CONTAINERS, KSERVE_MODEL_CONTAINERS, POD_FIELD_KEYS,
                                             POD_PATTERN_GROUPS, POD_TEMPLATE_PATHS, api_group)

if TYPE_CHECKING:
    from gpuplatform.catalogs.kubernetes import AssembledContainer

WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ReplicationController", "Job",
                  "CronJob", "Pod")
LONG_RUNNING_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ReplicationController", "Pod")
CUSTOM_POD_KINDS = tuple(dict.fromkeys(kind for _group, kind in (*POD_TEMPLATE_PATHS, *ASSEMBLED_CONTAINERS)))
"""Kinds of custom resources whose pods the catalog locates (KServe, NIM, Dynamo, AIBrix, KubeRay, LeaderWorkerSet,
Kubeflow, JobSet, Kueue, Argo Rollouts, Knative...); :func:`pods_of` tells them from built-in kinds of the same
name by their API group."""


class _PodKinds(tuple):
    """The built-in workload kinds and the catalogued custom ones, in order; yet every kind is *in* it, as any
    custom resource may carry a pod (:func:`pods_of`, the general rule): a policy declared for these kinds is given
    every object and asks :func:`pod_spec` whether it holds a pod."""

    def __contains__(self, kind: object) -> bool:
        return isinstance(kind, str) and bool(kind)


POD_KINDS = _PodKinds(WORKLOAD_KINDS + CUSTOM_POD_KINDS)
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
class Assembled(dict):
    """A mapping built here to stand for part of an object: a pod spec several templates share, a pod or container
    an operator assembles from fields that are not one (NIMService's spec-level env). It remembers where its
    fields come from, so that a finding names the object's own field, and whether its operator completes it."""

    def __init__(self, *args: Any, at: Optional[tuple] = None, sources: Optional[dict] = None,
                 completed: bool = False, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.at = at
        """The object's path this mapping stands for (None: several)."""
        self.sources = dict(sources or {})
        """Key -> the object's path it was read from, where that is not ``at`` + key."""
        self.completed = completed
        """Its operator writes what the object does not show (a container's image defaults, securityContext)."""


@dataclass(frozen=True)
class PodAt:
    """A pod spec of an object and where it is (``("spec", "template", "spec")``)."""

    path: tuple
    spec: Mapping


_BUILTIN_POD_PATHS = {"Pod": ("spec",), "CronJob": ("spec", "jobTemplate", "spec", "template", "spec")}
_WORKLOAD_POD_PATH = ("spec", "template", "spec")


_PODS_SEEN: dict[int, tuple[Any, Optional[str], list]] = {}
"""id(props) -> (weak reference to props, kind, its pods): every pod policy asks for the pods of the same object
(the engine hands one decoded object to every policy of the pack), so they are found once per object."""


def pods_of(kind: Optional[str], props: Any) -> list[PodAt]:
    """Every pod spec an object carries, with its path: a built-in workload's template; the templates of
    :data:`POD_TEMPLATE_PATHS`; the containers operators assemble (:data:`ASSEMBLED_CONTAINERS`); and, in any
    custom resource, any mapping with a ``containers`` list of named containers with an image (the general rule:
    an unknown kind is not a blind spot), except the pod patterns of admission policy engines
    (:data:`POD_PATTERN_GROUPS`)."""
    if kind in WORKLOAD_KINDS:
        return _pods_of(kind, props)
    seen = _PODS_SEEN.get(id(props))
    if seen is not None and seen[0]() is props and seen[1] == kind:
        return seen[2]
    pods = _pods_of(kind, props)
    try:  # proxies can be referenced weakly, plain dicts (a policy's own copy) cannot and are not remembered
        key = id(props)
        _PODS_SEEN[key] = (weakref.ref(props, lambda _ref: _PODS_SEEN.pop(key, None)), kind, pods)
    except TypeError:
        pass
    return pods


def _pods_of(kind: Optional[str], props: Any) -> list[PodAt]:
    if kind in WORKLOAD_KINDS:
        path = _BUILTIN_POD_PATHS.get(kind, _WORKLOAD_POD_PATH)
        spec = get(props, *path)
        return [PodAt(path, spec)] if is_map(spec) else []
    api = str(get(props, "apiVersion", default="") or "")
    group = api_group(api)
    key = (group, str(kind))
    out: list[PodAt] = []
    taken: set[int] = set()
    aliases = POD_FIELD_KEYS.get(key, {})
    for template in POD_TEMPLATE_PATHS.get(key, ()):
        for path, node in _walk(props, template, ()):
            if is_map(node) and id(node) not in taken:
                taken.add(id(node))
                out.append(PodAt(path, _pod_view(key, node, path, aliases)))
    for assembled in ASSEMBLED_CONTAINERS.get(key, ()):
        _assemble(assembled, props, out)
    if "/" in api and is_custom_group(group) and not POD_PATTERN_GROUPS.search(group):
        for path, node in _container_holders(props, ()):
            if id(node) not in taken:
                taken.add(id(node))
                out.append(PodAt(path, node))
    # a custom resource's pods are completed by its operator: an imageless container takes its image and defaults
    # from elsewhere (:func:`containers` ``own_only``)
    return [PodAt(p.path, p.spec if isinstance(p.spec, Assembled) else Assembled(p.spec, at=p.path, completed=True))
            for p in out if any(as_list(get(p.spec, k)) for k in ("containers", "initContainers"))]


def _pod_view(key: tuple[str, str], node: Mapping, path: tuple, aliases: Mapping[str, str]) -> Mapping:
    """A template as a pod spec: a KServe component's model and framework specs join its containers (each is a
    container, ``predictor.model``), and fields a resource spells its own way get their pod spec names."""
    models = [node[k] for k in KSERVE_MODEL_CONTAINERS if is_map(node.get(k))] \
        if key == ("serving.kserve.io", "InferenceService") else []
    if not models and not aliases:
        return node
    view = Assembled(node, at=path, completed=True)
    if models:
        view["containers"] = list(as_list(node.get("containers"))) + models
    for field, own in aliases.items():
        if own in node:
            view[field] = node[own]
            view.sources[field] = path + (own,)
    return view


def _assemble(spec: "AssembledContainer", props: Any, out: list[PodAt]) -> None:
    """The containers an operator builds as :class:`AssembledContainer` describes, in the pod they join."""
    name = name_of(props)
    shared = [e for p in spec.shared_env for e in as_list(get(props, *p))]
    for at, node in _walk(props, spec.at, ()):
        if not is_map(node):
            continue
        base = get(node, *spec.base) if spec.base else None
        container = Assembled(base if is_map(base) else {}, at=at + spec.base if is_map(base) else at,
                              completed=not spec.base)
        container["name"] = container.get("name") or (spec.name.replace("{name}", name) if spec.name
                                                      else str(node.get("name") or "?"))
        image = _image(node, spec.image) if not spec.base else None
        if image is not None:
            container["image"], container.sources["image"] = image
        for field in spec.fields:
            if field in node:
                container[field] = node[field]
                container.sources[field] = at + (field,)
        quantities = get(node, *spec.cpu_memory) if spec.cpu_memory else None
        if is_map(quantities):
            container["resources"] = {"requests": quantities, "limits": quantities}
            container.sources["resources"] = at + spec.cpu_memory
        extra = [e for p in spec.env for e in as_list(get(node, *p))] + shared
        if extra:
            container["env"] = list(as_list(container.get("env"))) + extra
        pod_path = at + spec.pod if spec.pod else at
        pod = next((p for p in out if p.path == pod_path), None)
        view = Assembled(pod.spec if pod is not None else {}, at=pod_path, completed=True)
        if any(k != "name" for k in container) or base is not None:
            view["containers"] = [container] + list(as_list(view.get("containers")))
        for lists, pod_key in spec.containers:
            for i, item in enumerate(as_list(get(node, *lists))):
                if is_map(item):
                    c = Assembled(item, at=at + lists + (i,), completed=True)
                    image = _image(item, (("image",),))
                    if image is not None:
                        c["image"], c.sources["image"] = image
                    view[pod_key] = list(as_list(view.get(pod_key))) + [c]
        if spec.run_as_user is not None:
            where, default = spec.run_as_user
            uid = get(node, *where)
            view["securityContext"] = Assembled(as_map(view.get("securityContext")),
                                                at=pod_path + ("securityContext",), sources={"runAsUser": at + where},
                                                runAsUser=uid if uid is not None else default)
        host = get(node, *spec.host_path) if spec.host_path else None
        if isinstance(host, str) and host:
            volume = Assembled({"name": spec.host_path_volume, "hostPath": {"path": host}}, at=at + spec.host_path,
                               sources={"hostPath": at + spec.host_path})
            view["volumes"] = list(as_list(view.get("volumes"))) + [volume]
        if pod is not None:
            out[out.index(pod)] = PodAt(pod_path, view)
        else:
            out.append(PodAt(pod_path, view))


def _image(node: Mapping, paths: tuple) -> Optional[tuple[str, tuple]]:
    """(image, where) of the first of ``paths`` set: a string, or an Image mapping read as ``repository:tag``."""
    for p in paths:
        value = get(node, *p)
        if isinstance(value, str) and value:
            return value, p
        if is_map(value) and isinstance(value.get("repository"), str):
            tag = value.get("tag")
            return (f"{value['repository']}:{tag}" if tag else value["repository"]), p
    return None


def is_custom_group(group: str) -> bool:
    """Whether an API group is a custom resource's: a DNS name that is not one of Kubernetes' own (``apps`` and
    the other one-word groups, ``*.k8s.io``; sigs' CRDs use ``*.x-k8s.io``)."""
    return "." in group and not group.endswith(".k8s.io")


def _looks_like_containers(value: Any) -> bool:
    items = as_list(value) if is_list(value) else []
    return bool(items) and all(is_map(c) and isinstance(c.get("name"), str) for c in items) and any(
        isinstance(c.get("image"), str) for c in items)


def _known_children(node: Any) -> Iterator[tuple[Any, Any]]:
    """(key or index, value) of a mapping's or list's values that are known: the walks over a whole object skip a
    value unknown at preview (it is no pod, nor the field a finding names) rather than give the policy up."""
    for key in (list(node) if is_map(node) else range(len(node))):
        value = _known_value(node, key)
        if value is not None:
            yield key, value


def _known_value(node: Any, key: Any) -> Any:
    try:
        return node[key]
    except Exception as exc:
        # pulumi_policy's UnknownValueError, told by name: only its proxies raise it, and importing the SDK to name
        # the class would cost plain-YAML checks their start-up (gpuplatform/wire.py)
        if type(exc).__name__ == "UnknownValueError" and type(exc).__module__.startswith("pulumi_policy"):
            return None
        raise


def _container_holders(node: Any, path: tuple) -> Iterator[tuple[tuple, Mapping]]:
    """(path, mapping) of every mapping below ``node`` whose ``containers`` is a list of named containers with an
    image; an object's metadata and status are not read."""
    if is_map(node) and "containers" in node and _looks_like_containers(_known_value(node, "containers")):
        yield path, node
    for key, child in _known_children(node):
        if (not path and key in ("metadata", "status")) or key == "containers":
            continue
        if is_map(child) or is_list(child):
            yield from _container_holders(child, path + (key,))


def pod_spec(kind: Optional[str], props: Any) -> Optional[Mapping]:
    """The pod spec of a workload; for a custom resource one spec standing for all it carries
    (:func:`pods_of`, :func:`_merged_pod_spec`)."""
    pods = pods_of(kind, props)
    if kind in WORKLOAD_KINDS:
        return pods[0].spec if pods else None
    return _merged_pod_spec([p.spec for p in pods])


def workload_pod_spec(kind: Optional[str], props: Any) -> Optional[Mapping]:
    """The pod spec of a built-in workload only: what the cross-object policies (an autoscaler's target, its
    replicas' GPUs and labels) read, where a custom resource's replica is not one pod (a LeaderWorkerSet's is a
    group of them)."""
    return pod_spec(kind, props) if kind in WORKLOAD_KINDS else None


def _walk(node: Any, path: Sequence[str], at: tuple) -> Iterator[tuple[tuple, Any]]:
    """(path, node) of what ``path`` reaches from ``node``; ``*`` is every item of a list or value of a map."""
    if not path:
        yield at, node
        return
    head, rest = path[0], path[1:]
    if head == "*":
        if is_map(node):
            for key, child in node.items():
                yield from _walk(child, rest, at + (key,))
        elif is_list(node):
            for i, child in enumerate(node):
                yield from _walk(child, rest, at + (i,))
    elif is_map(node) and head in node:
        yield from _walk(node[head], rest, at + (head,))


def custom_pod_specs(kind: Optional[str], props: Any) -> list[Mapping]:
    """Every pod spec a custom resource carries (empty for other objects)."""
    return [] if kind in WORKLOAD_KINDS else [p.spec for p in pods_of(kind, props)]


def _merged_pod_spec(specs: list[Mapping]) -> Optional[Mapping]:
    """One spec for the pod policies: every container, init container and volume of every template (the same
    objects, so remediation edits the resource), host namespaces if any template asks for them, placement from
    the first template, and the pod-level securityContext only when all templates share it (otherwise each
    container must carry its own, which is what the policies then ask). Containers without an image are
    completed by the resource's operator (:func:`containers` ``own_only``)."""
    if not specs:
        return None
    merged = Assembled(specs[0], at=getattr(specs[0], "at", None) if len(specs) == 1 else None, completed=True)
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
    image, securityContext and defaults the InferenceService does not show; in a custom resource, a container
    without an image is completed by its operator (an LLMInferenceService's from its LLMInferenceServiceConfig),
    and one an operator assembles from other fields gets the security context the operator writes."""
    keys = ("initContainers", "containers", "ephemeralContainers") if init else ("containers",)
    operator_pod = own_only and getattr(spec, "completed", False)
    for key in keys:
        for c in as_list(get(spec, key)):
            if not is_map(c):
                continue
            if own_only and (completed_by_runtime(c) or getattr(c, "completed", False) or (
                    operator_pod and not isinstance(get(c, "image"), str))):
                continue
            yield c


def completed_by_runtime(c: Mapping) -> bool:
    return not isinstance(get(c, "image"), str) and any(
        k in c for k in ("modelFormat", "storageUri", "runtime", "runtimeVersion", "protocolVersion"))


def container_name(c: Mapping) -> str:
    if not c.get("name") and completed_by_runtime(c):
        return "kserve-container"  # the name the KServe controller gives a predictor's model container
    return str(c.get("name") or "?")


# ------------------------------------------------------------------------------------------------ field paths
_KEY = r"[A-Za-z_$][\w$-]*"
_SIMPLE_KEY = re.compile(rf"^{_KEY}$")
_INDEX_OR_QUOTED = r'\[\d+\]|\["(?:[^"\\]|\\.)*"\]'
_PATH_AT_END = re.compile(rf" at ((?:{_KEY}|{_INDEX_OR_QUOTED})(?:\.{_KEY}|{_INDEX_OR_QUOTED})*)$")
"""`` at <path>`` closing a message; each part is told from the next by ``.`` or ``[``, so matching is linear."""


def render_path(parts: Sequence) -> str:
    """``spec.template.spec.containers[0].env[2].value``: list indexes in brackets, keys that are not simple
    names quoted (``metadata.annotations["example.com/x"]``)."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _SIMPLE_KEY.match(str(part)):
            out += f".{part}" if out else str(part)
        else:
            out += "[" + json.dumps(str(part)) + "]"
    return out


def parse_path(text: str) -> list:
    """The parts of a path :func:`render_path` wrote."""
    parts: list = []
    for m in re.finditer(r'\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]|([A-Za-z_$][\w$-]*)', text):
        parts.append(int(m.group(1)) if m.group(1) else json.loads(m.group(2)) if m.group(2) else m.group(3))
    return parts


def path_in_message(message: str) -> Optional[list]:
    """The field path a finding ends with (`` at spec.template.spec.containers[0]``), None when it names none."""
    m = _PATH_AT_END.search(message)
    return parse_path(m.group(1)) if m else None


def field_path(props: Any, node: Any, *fields: Any) -> Optional[tuple]:
    """Where ``node`` (a container, an env entry, a pod spec: an object :func:`pods_of` handed out) and then
    ``fields`` below it are in ``props``; for a mapping built here (:class:`Assembled`), the field it was read
    from. None when it cannot be told."""
    chain = [node]
    for f in fields:
        nxt = get(chain[-1], f)
        if not (is_map(nxt) or is_list(nxt)):
            break
        chain.append(nxt)
    for depth in range(len(chain) - 1, -1, -1):
        n, rest = chain[depth], tuple(fields[depth:])
        if isinstance(n, Assembled):
            if rest and rest[0] in n.sources:
                return tuple(n.sources[rest[0]]) + rest[1:]
            if n.at is not None:
                return tuple(n.at) + rest
            continue
        found = _paths(props).get(id(n))
        if found is not None:
            return found + rest
    return None


def at(props: Any, node: Any, *fields: Any) -> str:
    """`` at <path>`` for a finding's message (empty when the path cannot be told): check --manifests reads it
    back to report the line of that field."""
    path = field_path(props, node, *fields)
    return f" at {render_path(path)}" if path else ""


_PATHS_SEEN: dict[int, tuple[Any, dict]] = {}


def _paths(props: Any) -> dict[int, tuple]:
    """id -> path of every mapping and list in ``props`` (the nodes themselves stay alive as long as ``props``),
    built once per object for all the findings on it."""
    seen = _PATHS_SEEN.get(id(props))
    if seen is not None and seen[0]() is props:
        return seen[1]
    index: dict[int, tuple] = {}
    stack: list[tuple[Any, tuple]] = [(props, ())]
    while stack:
        node, path = stack.pop()
        index.setdefault(id(node), path)
        stack.extend((child, path + (key,)) for key, child in _known_children(node) if is_map(child) or is_list(child))
    try:
        key = id(props)
        _PATHS_SEEN[key] = (weakref.ref(props, lambda _ref: _PATHS_SEEN.pop(key, None)), index)
    except TypeError:
        pass
    return index


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
