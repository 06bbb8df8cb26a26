"""What the API server would refuse, judged before any policy: the strict OpenAPI schema of the target
Kubernetes version and the semantic rules the API server applies on top of it.

* Schema: kubernetes-validate's ``-strict`` schema sets (the cluster's OpenAPI with ``additionalProperties:
  false``), so an unknown field (``resources.limit``), a wrong type or a missing required field is refused as the
  API server refuses it with field validation ``Strict`` (the default of ``kubectl apply`` since 1.27). Kinds
  the bundled schemas do not know (custom resources) are left to their CRDs.
* Semantics, from kubernetes ``pkg/apis/core/validation/validation.go``: every resource quantity parses
  (``ValidateResourceQuantityValue``; the grammar of apimachinery ``resource/quantity.go``), extended resources
  such as ``nvidia.com/gpu`` are whole numbers whose request, when given, equals the limit
  (``validateContainerResourceName``, ``ValidateResourceRequirements``: "must be an integer", "must be equal to
  … limit", "Limit must be set for non overcommitable resources"), a request is not above its limit, container
  and volume names are unique in a pod, port names are unique in a container and mount paths in a container
  (``validateContainerPorts``, ``ValidateVolumeMounts``), every volume mount names a volume of the pod, an NFS
  volume has a server and an absolute path (``validateNFSVolumeSource``), a Service's ports are named when there
  are several, with unique names and unique port/protocol pairs (``ValidateService``), and
  ``externalTrafficPolicy`` is set only on a Service reachable from outside (``validateServiceExternalTrafficPolicy``:
  "may only be set for externally-accessible services"; LoadBalancer, NodePort, or ClusterIP with externalIPs:
  ``ExternallyAccessible`` in ``pkg/api/service/util.go``).
* From kubernetes ``pkg/apis/autoscaling/validation/validation.go``: a ``Pods`` metric of an ``autoscaling/v2``
  HorizontalPodAutoscaler names a per-pod target (``validatePodsSource``: "must specify a positive target
  averageValue").
"""
from __future__ import annotations

import datetime
import functools
import importlib.util
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional

from gpuplatform.catalogs.kubernetes import QUANTITY, quantity_value

RULE_ID = "api-server-rejects"
RULE_DESCRIPTION = ("The API server must accept the object: the strict schema of the target Kubernetes version "
                    "(no unknown fields, right types, valid quantities) and its semantic rules (whole-number GPU "
                    "and other extended resources, limits for them, unique names, ports and mount paths). "
                    "A rejected object fails `pulumi up` halfway, or silently loses the field a typo misnames.")

POD_SPEC_PATHS = {
    "Pod": ("spec",),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
    **{kind: ("spec", "template", "spec") for kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet",
                                                       "ReplicationController", "Job", "PodTemplate")},
}
_NATIVE_DOMAIN = "kubernetes.io"
_OVERCOMMITTABLE = ("cpu", "memory", "ephemeral-storage")


@dataclass(frozen=True)
class Rejection:
    path: tuple
    """Where in the object (keys and list indexes)."""
    message: str

    def render(self) -> str:
        return f"{_dotted(self.path) or '(object)'}: {self.message}"


def _dotted(path: Iterable) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


# ------------------------------------------------------------------------------------------------ schema
SCHEMA_SETS = "kubernetes-json-schema"
"""The folder of kubernetes-validate's package that holds a ``v<version>-local-strict`` schema set per version."""


@functools.lru_cache(maxsize=None)
def _schema_sets() -> Path:
    """kubernetes-validate's schema sets, found without importing it: its ``__init__`` loads its own validation
    (jsonschema, referencing, packaging, importlib_resources), and only the schema files are read here. Raises
    ImportError when it is not installed."""
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("kubernetes-validate is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / SCHEMA_SETS


@functools.lru_cache(maxsize=None)
def _bundled() -> dict[tuple[int, int], str]:
    """``(major, minor)`` -> the newest patch version bundled for it, as ``utils.all_versions`` of
    kubernetes-validate names them (``v1.35.0-local-strict`` -> ``1.35.0``)."""
    versions = {m.group(1) for m in (re.match(r"^v(\d+(?:\.\d+)+)-", p.name) for p in _schema_sets().iterdir()) if m}
    out: dict[tuple[int, int], str] = {}
    for v in sorted(versions, key=lambda v: tuple(int(x) for x in v.split("."))):
        out[tuple(int(x) for x in v.split(".")[:2])] = v
    return out


def schema_version(target: Optional[str]) -> Optional[str]:
    """The bundled schema set for ``target`` (``major.minor``, or None: the newest): the newest one not newer than
    the target, else the oldest. None when kubernetes-validate is not installed."""
    try:
        bundled = _bundled()
    except ImportError:
        return None
    if not bundled:
        return None
    if not target:
        return bundled[max(bundled)]
    m = re.match(r"^v?(\d+)\.(\d+)", str(target))
    if not m:
        return bundled[max(bundled)]
    want = (int(m.group(1)), int(m.group(2)))
    older = [v for v in bundled if v <= want]
    return bundled[max(older)] if older else bundled[min(bundled)]


@functools.lru_cache(maxsize=None)
def _definitions(version: str):
    root = _schema_sets() / f"v{version}-local-strict"
    return root, json.loads(root.joinpath("_definitions.json").read_text())


@functools.lru_cache(maxsize=None)
def _validator(version: str, kind: str, api_version: str):
    """One validator per kind and version, the 1.3 MB definitions read once (kubernetes-validate's own
    ``validate`` reads them on every call)."""
    import jsonschema
    import referencing

    root, definitions = _definitions(version)
    api = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    path = root.joinpath(f"{kind.lower()}-{api}.json")
    if not path.is_file():
        return None
    schema = json.loads(path.read_text())
    registry = referencing.Resource.from_contents(definitions) @ (
        referencing.Resource.from_contents(schema) @ referencing.Registry())
    return jsonschema.validators.Draft202012Validator(schema, registry=registry)


def schema_rejections(obj: Mapping, version: Optional[str]) -> list[Rejection]:
    if version is None or not isinstance(obj.get("kind"), str) or not isinstance(obj.get("apiVersion"), str):
        return []
    validator = _validator(version, obj["kind"], obj["apiVersion"])
    if validator is None:
        return []
    out = []
    for err in sorted(validator.iter_errors(obj), key=lambda e: [str(p) for p in e.absolute_path]):
        path = tuple(err.absolute_path)
        if err.validator == "additionalProperties":
            extra = re.findall(r"'([^']+)' was unexpected", err.message)
            for name in extra or [None]:
                out.append(Rejection(path + ((name,) if name else ()),
                                     f"unknown field {name!r}" if name else err.message))
        else:
            out.append(Rejection(path, _schema_message(err)))
    return out


def _schema_message(err) -> str:
    if err.validator == "type":
        return f"{json.dumps(err.instance, default=str)[:60]} is not of type {err.validator_value}"
    if err.validator == "required":
        return err.message.replace(" is a required property", " is required")
    return err.message[:200]


# ------------------------------------------------------------------------------------------------ semantics
def _is_extended(name: str) -> bool:
    return "/" in name and not name.split("/")[0].endswith(_NATIVE_DOMAIN)


def _resources(c: Mapping, base: tuple) -> list[Rejection]:
    out = []
    res = c.get("resources") if isinstance(c.get("resources"), Mapping) else {}
    parsed: dict[str, dict[str, float]] = {"requests": {}, "limits": {}}
    for side in ("requests", "limits"):
        values = res.get(side)
        if not isinstance(values, Mapping):
            continue
        for name, value in values.items():
            if value is None:
                continue  # null is an unset field to the API server's decoder
            where = base + ("resources", side, name)
            text = str(value) if not isinstance(value, bool) else ""
            if not QUANTITY.match(text.strip()) or text != text.strip():
                out.append(Rejection(where, f"{json.dumps(value, default=str)} is not a Kubernetes quantity (e.g. 16Gi, 500m, "
                                            f"2)"))
                continue
            amount = quantity_value(text)
            parsed[side][name] = amount
            if _is_extended(str(name)) and not float(amount).is_integer():
                out.append(Rejection(where, f"{text} must be a whole number: {name} is an extended resource, "
                                            f"allocated in whole devices"))
    for name, req in parsed["requests"].items():
        lim = parsed["limits"].get(name)
        where = base + ("resources", "requests", name)
        if _is_extended(str(name)) and name not in _OVERCOMMITTABLE:
            if lim is None and name not in res.get("limits", {}):
                out.append(Rejection(where, f"{name} has a request but no limit; extended resources cannot be "
                                            f"overcommitted, so the limit must be set (equal to the request)"))
            elif lim is not None and lim != req:
                out.append(Rejection(where, f"{name} request must equal its limit ({_fmt(req)} vs {_fmt(lim)})"))
        elif lim is not None and req > lim:
            out.append(Rejection(where, f"{name} request {_fmt(req)} is above its limit {_fmt(lim)}"))
    return out


def _fmt(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


def _duplicates(items: Iterable[tuple[Any, tuple]], what: str) -> list[Rejection]:
    seen, out = set(), []
    for key, where in items:
        if key is None:
            continue
        if key in seen:
            out.append(Rejection(where, f"duplicate {what} {key if not isinstance(key, tuple) else '/'.join(map(str, key))!r}"))
        seen.add(key)
    return out


def _volumes(volumes: list, base: tuple) -> list[Rejection]:
    """An NFS volume's server and absolute path (``validateNFSVolumeSource``: "must be an absolute path")."""
    out = []
    for i, v in enumerate(volumes):
        nfs = v.get("nfs")
        if not isinstance(nfs, Mapping):
            continue
        where = base + ("volumes", i, "nfs")
        if not str(nfs.get("server") or "").strip():
            out.append(Rejection(where + ("server",), "an NFS volume needs a server"))
        path = str(nfs.get("path") or "")
        if not path:
            out.append(Rejection(where + ("path",), "an NFS volume needs a path"))
        elif not path.startswith("/"):
            out.append(Rejection(where + ("path",), f"{path!r} must be an absolute path"))
    return out


def _mounts_named(mounts: list, names: set, where: tuple) -> list[Rejection]:
    """Each volume mount names a volume of the pod (``validateVolumeMounts``: "Not found")."""
    return [Rejection(where + ("volumeMounts", i, "name"), f"no volume named {m.get('name')!r} in the pod")
            for i, m in enumerate(mounts) if m.get("name") not in names]


def _pod(spec: Mapping, base: tuple, claim_templates: Iterable = ()) -> list[Rejection]:
    """``claim_templates``: a StatefulSet's volumeClaimTemplates names, volumes of each of its pods
    (``ValidateStatefulSetSpec`` validates the pod template with them)."""
    out = []
    containers = []
    for group in ("initContainers", "containers", "ephemeralContainers"):
        for i, c in enumerate(spec.get(group) or []):
            if isinstance(c, Mapping):
                containers.append((c, base + (group, i)))
    out += _duplicates(((c.get("name"), where + ("name",)) for c, where in containers), "container name")
    volumes = [v for v in (spec.get("volumes") or []) if isinstance(v, Mapping)]
    out += _duplicates(((v.get("name"), base + ("volumes", i, "name")) for i, v in enumerate(volumes)), "volume name")
    out += _volumes(volumes, base)
    names = {v.get("name") for v in volumes} | set(claim_templates)
    for c, where in containers:
        out += _resources(c, where)
        ports = [p for p in (c.get("ports") or []) if isinstance(p, Mapping)]
        out += _duplicates(((p.get("name"), where + ("ports", i, "name")) for i, p in enumerate(ports)),
                           "port name")
        mounts = [m for m in (c.get("volumeMounts") or []) if isinstance(m, Mapping)]
        out += _duplicates(((m.get("mountPath"), where + ("volumeMounts", i, "mountPath"))
                            for i, m in enumerate(mounts)), "mount path")
        if where[-2] != "ephemeralContainers":  # an ephemeral container's mounts are checked against the pod's too,
            out += _mounts_named(mounts, names, where)  # but only on the ephemeralcontainers subresource
    return out


def _service(obj: Mapping) -> list[Rejection]:
    spec = obj.get("spec") if isinstance(obj.get("spec"), Mapping) else {}
    ports = [p for p in (spec.get("ports") or []) if isinstance(p, Mapping)]
    out = []
    if len(ports) > 1:
        out += [Rejection(("spec", "ports", i, "name"), "a Service with several ports must name each one")
                for i, p in enumerate(ports) if not p.get("name")]
    out += _duplicates(((p.get("name"), ("spec", "ports", i, "name")) for i, p in enumerate(ports)), "port name")
    out += _duplicates((((p.get("port"), p.get("protocol") or "TCP"), ("spec", "ports", i, "port"))
                        for i, p in enumerate(ports)), "port/protocol")
    policy = spec.get("externalTrafficPolicy")
    if policy not in (None, "") and not externally_accessible(spec):
        out.append(Rejection(("spec", "externalTrafficPolicy"),
                             f"Invalid value: {policy!r}: may only be set for externally-accessible services "
                             f"(type LoadBalancer or NodePort, or ClusterIP with externalIPs; this one: "
                             f"{spec.get('type') or 'ClusterIP'})"))
    return out


def externally_accessible(spec: Mapping) -> bool:
    """kubernetes ``pkg/api/service/util.go`` ``ExternallyAccessible``: LoadBalancer, NodePort, or ClusterIP (the
    default type) with externalIPs."""
    kind = spec.get("type") or "ClusterIP"
    return kind in ("LoadBalancer", "NodePort") or (kind == "ClusterIP" and bool(spec.get("externalIPs")))


def _hpa(obj: Mapping) -> list[Rejection]:
    """``autoscaling/v2`` (and v2beta2, same field) Pods metrics without a per-pod target."""
    if str(obj.get("apiVersion")) not in ("autoscaling/v2", "autoscaling/v2beta2"):
        return []
    spec = obj.get("spec") if isinstance(obj.get("spec"), Mapping) else {}
    out = []
    for i, m in enumerate(spec.get("metrics") or []):
        pods = m.get("pods") if isinstance(m, Mapping) and m.get("type") == "Pods" else None
        if not isinstance(pods, Mapping):
            continue
        target = pods.get("target") if isinstance(pods.get("target"), Mapping) else {}
        if target.get("averageValue") is None:
            out.append(Rejection(("spec", "metrics", i, "pods", "target", "averageValue"),
                                 "Required value: must specify a positive target averageValue"))
    return out


def semantic_rejections(obj: Mapping) -> list[Rejection]:
    kind = obj.get("kind")
    if kind == "Service":
        return _service(obj)
    if kind == "HorizontalPodAutoscaler":
        return _hpa(obj)
    path = POD_SPEC_PATHS.get(kind) if isinstance(kind, str) else None
    if path is None:
        return []
    node: Any = obj
    for key in (path if kind != "PodTemplate" else ("template", "spec")):
        node = node.get(key) if isinstance(node, Mapping) else None
    claims = ()
    if kind == "StatefulSet" and isinstance(obj.get("spec"), Mapping):
        claims = [(t.get("metadata") or {}).get("name") for t in obj["spec"].get("volumeClaimTemplates") or []
                  if isinstance(t, Mapping)]
    return _pod(node, path if kind != "PodTemplate" else ("template", "spec"), claims) \
        if isinstance(node, Mapping) else []


def as_sent(value: Any) -> Any:
    """``value`` as kubectl sends it: sigs.k8s.io/yaml turns YAML into JSON, where an unquoted date or time
    (``created: 2024-05-01``) is the string it spells, not a timestamp, and every key is a string."""
    if isinstance(value, Mapping):
        return {str(k): as_sent(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_sent(v) for v in value]
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    return value


def rejections(obj: Mapping, version: Optional[str], patch: bool = False) -> list[Rejection]:
    """Everything the API server of ``version`` (a bundled schema set, :func:`schema_version`) refuses in
    ``obj``, schema first; a semantic rule that repeats a schema finding at the same place is dropped. A
    server-side-apply ``patch`` names only the fields it owns, so a missing required field is no rejection
    (each field it does name must still exist and have the right type)."""
    obj = as_sent(obj)
    found = [r for r in schema_rejections(obj, version) if not (patch and r.message.endswith(" is required"))]
    at = {r.path for r in found}
    return found + [r for r in semantic_rejections(obj) if r.path not in at]
