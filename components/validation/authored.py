"""Rule of the authored objects: what the API server would refuse in the objects a workload's config makes, found
before anything is registered and named by the config path that produced it.

The workload rules name the collisions a config can write precisely (two serving ports on one Service port, a
volume mounted where another one is); this rule is the net under them. It builds each workload's objects with the
builders the InferenceService registers (components/workload_manifests.py) and applies the API server's semantic
rules (gpuplatform/apiserver.py: quantities, whole-number extended resources with limits, unique container,
volume and port names, mount paths and Service ports), so a refusal no precise rule foresaw still fails ``load``,
``plan`` and the program of ``pulumi up`` instead of the API server halfway through an update.

The strict OpenAPI schema is not applied here: a config cannot put an unknown field or a wrong type into these
objects (its own schema refuses both), the schema of every object of every shipped stack is tested, and checking
it costs milliseconds per object, which a program of hundreds of workloads would pay on every ``pulumi up``.
``gpuplatform plan`` and ``check --stack``/``--project`` apply it, with these rules, to every object a program
registers (gpuplatform/authored.py).
"""
from typing import Mapping, Optional, Sequence

from gpuplatform.apiserver import semantic_rejections
from gpuplatform.catalogs.kubernetes import api_group
from gpuplatform.components.config import PlatformConfig
from gpuplatform.components.pools import PoolFacts
from gpuplatform.components.validation.common import _Issues
from gpuplatform.components.workload_manifests import workload_context, workload_objects

_NEEDED = ("settings", "cluster", "nodePools", "monitoring")
"""What a workload's objects are built from besides the workload: a problem reported there first makes this rule
wait, as does any problem of the workload itself (its objects would be built from a config known to be wrong)."""
_RESOURCES = ("cpu", "memory", "ephemeral-storage")
"""Resource names the workload's ``resources`` sets; every other resource of its container is its ``gpu``."""
_POD_FIELDS = {"volumeMounts": "volumes", "volumes": "volumes", "ports": "ports", "env": "env", "envFrom": "env",
               "startupProbe": "probes", "readinessProbe": "probes", "livenessProbe": "probes",
               "command": "command", "args": "args", "image": "image", "nodeSelector": "nodePool",
               "tolerations": "nodePool", "securityContext": "runAsUser"}
"""A field of a workload's pod spec -> the key of the workload config it comes from."""
_KIND_FIELDS = {"Service": "ports", "Ingress": "exposure.ingress", "HorizontalPodAutoscaler": "autoscaling",
                "ScaledObject": "autoscaling", "PodDisruptionBudget": "autoscaling", "PodMonitor": "ports",
                "PersistentVolume": "volumes", "PersistentVolumeClaim": "volumes", "NetworkPolicy": "networkPolicy"}
"""A kind of object a workload authors -> the key of the workload config it comes from (a pod spec: per field)."""


def workload_key(kind: str, field_path: Sequence) -> Optional[str]:
    """The key of a workload's config (``ports``, ``volumes``, ``resources.cpu``, ``gpu`` ...) that the field at
    ``field_path`` (keys and list indexes) of one of its ``kind`` objects comes from; None when the field is the
    object's own (names, labels) rather than one the config sets."""
    keys = [str(k) for k in field_path if not isinstance(k, int)]
    if "resources" in keys and "template" in keys:
        at = keys.index("resources") + 2  # resources.<requests|limits>.<name>
        name = keys[at] if at < len(keys) else None
        if name is None or name in _RESOURCES:
            return f"resources.{name}" if name in ("cpu", "memory") else "resources"
        return "gpu"
    for key in reversed(keys):
        if key in _POD_FIELDS and "template" in keys:
            return _POD_FIELDS[key]
    if kind == "Service" and "ports" not in keys:
        return "exposure.serviceType" if "type" in keys else None
    return _KIND_FIELDS.get(kind)


def object_label(obj: Mapping) -> str:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    ns = meta.get("namespace")
    return f"{obj.get('kind')} {ns + '/' if ns else ''}{meta.get('name')}"


def refusal(obj: Mapping, rejection, version: Optional[str] = None) -> str:
    """One refusal of ``obj`` in words: the object, the field and what the API server says."""
    at = f" of Kubernetes {version}" if version else ""
    return f"the API server{at} refuses {object_label(obj)}: {rejection.render()}"


def identity(obj: Mapping) -> tuple:
    """What makes an object one object to the API server: its group, kind, namespace and name."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    return api_group(str(obj.get("apiVersion"))), obj.get("kind"), meta.get("namespace") or "", meta.get("name")


def made_twice(obj: Mapping, first: str) -> str:
    """An object made a second time, ``first`` being the config path that made it first."""
    return (f"{object_label(obj)} is also made by {first}; the API server refuses to create it twice (409 "
            "AlreadyExists), so pulumi up would stop halfway; allowed: names whose objects do not collide (a "
            "workload is named like another's ingress route '<workload>-<port>' or claim '<workload>-<volume>')")


def check_authored_objects(cfg: PlatformConfig, facts: dict[str, PoolFacts], out: _Issues) -> None:
    """Each workload's objects as the API server judges them, and no object made by two workloads. A composed
    service (``out.checked_workloads``) is judged alone: the objects of the services before it were judged when
    they were built, and building them again for each new one would cost a program of N services N x N builds
    (``gpuplatform plan --project`` and ``check --project`` compare every object of the program)."""
    if any(i.path.split(".")[0].split("[")[0] in _NEEDED for i in out):
        return
    made: dict[tuple, tuple[Mapping, str]] = {}
    for i, w in enumerate(cfg.workloads):
        p = f"workloads[{i}]"
        f = facts.get(w.node_pool)
        if i < out.checked_workloads or f is None or f.units_per_node == 0 or any(
                issue.path == p or issue.path.startswith(f"{p}.") for issue in out):
            continue
        ctx = workload_context(cfg, w, f)
        if any(source is None for source in ctx.metric_sources.values()):
            continue  # a metric no source serves is reported where the monitoring is named; nothing to build on
        for obj in workload_objects(w, ctx):
            kind = str(obj.get("kind"))
            for rejection in semantic_rejections(obj):
                key = workload_key(kind, rejection.path)
                out.add(f"{p}.{key}" if key else p, refusal(obj, rejection))
            key = workload_key(kind, ())
            here = f"{p}.{key}" if key else p
            first, first_path = made.setdefault(identity(obj), (obj, here))
            if first is not obj:
                out.add(here, made_twice(obj, first_path))
