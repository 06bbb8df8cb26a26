"""Checks of the time-to-capacity measures a workload opts into, which only a running cluster can prove
(docs/model-startup.md, "Time to capacity"): warm placeholder capacity (``autoscaling.warmReplicas``), the image
pre-puller (``prePull``) and the Fluid weights cache (``volumes[].fluid``). Each is reported only for the workloads
that use the measure, one result per object the stack rendered.

``startup.warm-capacity``: the PriorityClass ``gpu-platform-warm-capacity`` with the value the package renders
(catalogs/kubernetes.py ``WARM_CAPACITY_PRIORITY``), the placeholder Deployment ``<name>-warm`` with every replica
available, and no placeholder Pending longer than a node of its pool takes to provision (catalogs/gpus.py
``provisioning``, an estimate) while the scheduler or the cluster autoscaler say why (``FailedScheduling``,
``NotTriggerScaleUp``). The cluster autoscaler drops pods below ``--expendable-pods-priority-cutoff`` before it
looks for a node and records nothing for them (kubernetes/autoscaler cluster-autoscaler/FAQ.md, "How does Cluster
Autoscaler work with Pod Priority and Preemption?"); a pool at its maximum shows as "max node group size reached"
in the ``NotTriggerScaleUp`` message.

``startup.pre-pull``: the DaemonSet ``<name>-prepull`` ready on every node of the pool (``numberReady`` and
``desiredNumberScheduled`` of the DaemonSetStatus against the nodes its nodeSelector (the pool's) picks), and
no pod whose ``pull`` init container cannot pull the image or exits non-zero (an image of another architecture
than the static busybox the pre-puller runs it with).

``startup.fluid-cache``: the Dataset in ``<name>-fluid`` Bound, its JindoRuntime's workers ready, the referencing
Dataset in the workload's namespace Bound with its PersistentVolumeClaim Bound, and the cache's capacity against
``model.sizeGib``. The status fields are fluid-cloudnative/fluid's ``api/v1alpha1``: ``DatasetStatus.phase``
(``Pending``, ``Bound``, ``NotBound``, ``Failed``), ``ufsTotal`` (``"[Calculating]"`` until the metadata sync is
done, pkg/ddc/jindo/const.go) and ``cacheStates`` (``cacheCapacity``, ``cached``: pkg/common/types.go) in
``dataset_types.go``; ``RuntimeStatus.workerPhase``, ``desiredWorkerNumberScheduled`` and ``workerNumberReady`` in
``status.go``, the status of ``jindoruntime_types.go``.

``startup.compile-cache``: the claim of the volume vLLM keeps its compiled graphs on (components/model_startup.py
``compile_cache_volume``) Bound, and mountable by replicas on different nodes (``ReadWriteMany`` in the claim's
``status.accessModes``) when the workload can run more than one: a ``ReadWriteOnce`` volume attaches to one node,
and a replica on another stays ``ContainerCreating`` with a ``Multi-Attach`` error (Kubernetes "Persistent
Volumes", access modes). Whether a replica found the graphs is in its log ("Directly load the compiled graph"),
which ``model.load-time`` sees as the faster later loads.
"""
from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Optional

from kubernetes import client as k8s

from gpuplatform.catalogs.gpus import GENERIC_NODE, instance_type, provisioning
from gpuplatform.catalogs.kubernetes import CA_EXPENDABLE_PODS_PRIORITY_CUTOFF, WARM_CAPACITY_PRIORITY
from gpuplatform.components.config import PlatformConfig, Workload
from gpuplatform.components.fluid_cache import FLUID_API_VERSION, cache_namespace, claim_name, dataset_name
from gpuplatform.components.model_startup import compile_cache_volume
from gpuplatform.components.pools import all_pool_facts
from gpuplatform.components.pre_pull import pre_pull_name
from gpuplatform.components.warm_capacity import PRIORITY_CLASS_NAME, placeholder_name
from gpuplatform.verify.kube import REQUEST_TIMEOUT, _api_error, _not_found, _selector_string
from gpuplatform.verify.results import CheckResult, _fail, _pass, _warn

WARM_CHECK = "startup.warm-capacity"
PRE_PULL_CHECK = "startup.pre-pull"
FLUID_CHECK = "startup.fluid-cache"
COMPILE_CACHE_CHECK = "startup.compile-cache"
MAX_NODES_REACHED = "max node group size reached"
"""What the cluster autoscaler's ``NotTriggerScaleUp`` event says of a node group at its maximum size."""
PULL_FAILURES = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull")
"""Waiting reasons of a container whose image the kubelet cannot pull (kubernetes pkg/kubelet/images/types.go)."""
FLUID_GROUP, FLUID_VERSION = FLUID_API_VERSION.split("/")


def _now() -> datetime:
    return datetime.now(timezone.utc)


# ------------------------------------------------------------------------------------- warm capacity
def provisioning_seconds(cfg: PlatformConfig, w: Workload) -> int:
    """How long a new node of the workload's pool is expected to take (the slowest family of its instance types,
    catalogs/gpus.py ``provisioning``; a pool of unknown instance types: ``GENERIC_NODE``)."""
    pool = cfg.pool(w.node_pool)
    families = [t.family for t in (instance_type(n) for n in (pool.instance_types if pool else [])) if t]
    return max((provisioning(f).seconds for f in families), default=GENERIC_NODE.seconds)


def check_warm_priority_class(sched: k8s.SchedulingV1Api) -> CheckResult:
    subject = f"priorityclass/{PRIORITY_CLASS_NAME}"
    try:
        pc = sched.read_priority_class(PRIORITY_CLASS_NAME, _request_timeout=REQUEST_TIMEOUT)
    except Exception as exc:  # noqa: BLE001
        if _not_found(exc):
            return _fail(WARM_CHECK, subject, "PriorityClass not found",
                         "the stack is not applied (run pulumi up) or it was deleted: the placeholders cannot be "
                         "created without it")
        return _fail(WARM_CHECK, subject, f"cannot read it ({_api_error(exc)})",
                     "the credentials lack 'get priorityclasses'")
    if pc.value != WARM_CAPACITY_PRIORITY:
        cause = (f"the cluster autoscaler ignores pods below --expendable-pods-priority-cutoff "
                 f"({CA_EXPENDABLE_PODS_PRIORITY_CUTOFF} by default), so a preempted placeholder never gets a node "
                 "back" if pc.value < CA_EXPENDABLE_PODS_PRIORITY_CUTOFF else
                 "a placeholder at or above a workload's priority is not preempted by its replicas")
        return _fail(WARM_CHECK, subject, f"value {pc.value}, the stack renders {WARM_CAPACITY_PRIORITY}",
                     f"changed outside the stack: {cause}; run pulumi up to restore it")
    return _pass(WARM_CHECK, subject, f"value {pc.value} (the cluster autoscaler's default expendable cutoff)")


def _events_for(events: list, name: str) -> list:
    return [e for e in events if e.involved_object is not None and e.involved_object.name == name]


def _pending_cause(pod, events: list, w: Workload, cfg: PlatformConfig) -> str:
    not_triggered = [e for e in events if e.reason == "NotTriggerScaleUp"]
    pool = cfg.pool(w.node_pool)
    if any(MAX_NODES_REACHED in (e.message or "") for e in not_triggered):
        at = f" ({pool.max_nodes})" if pool is not None else ""
        return (f"the pool '{w.node_pool}' is at its maxNodes{at}: the cluster autoscaler adds no node for the "
                "placeholder; raise nodePools[].maxNodes to hold the replicas and the warm room, or lower "
                "autoscaling.warmReplicas")
    priority = pod.spec.priority if pod.spec is not None else None
    if priority is not None and priority < CA_EXPENDABLE_PODS_PRIORITY_CUTOFF:
        return (f"its priority {priority} is below the cluster autoscaler's --expendable-pods-priority-cutoff "
                f"({CA_EXPENDABLE_PODS_PRIORITY_CUTOFF} by default): the autoscaler ignores it; restore the "
                f"PriorityClass {PRIORITY_CLASS_NAME} (value {WARM_CAPACITY_PRIORITY}) with pulumi up")
    if not_triggered:
        return ("the cluster autoscaler would not add a node for it: " + (not_triggered[-1].message or "") +
                "; a new node of the pool must fit one replica (GPU, CPU, memory, node selector, tolerations)")
    return ("the scheduler finds no room and the cluster autoscaler recorded no scale-up for it: the pool does not "
            "autoscale, the autoscaler is not running, or this cluster's --expendable-pods-priority-cutoff is above "
            f"{WARM_CAPACITY_PRIORITY} so it ignores the placeholders")


def check_warm_capacity(cfg: PlatformConfig, w: Workload, core: k8s.CoreV1Api, apps: k8s.AppsV1Api,
                        now: Optional[datetime] = None) -> list[CheckResult]:
    """The placeholder Deployment's availability and each placeholder Pending beyond the provisioning estimate."""
    ns, name = cfg.workload_namespace(w), placeholder_name(w)
    subject = f"deployment/{ns}/{name}"
    try:
        dep = apps.read_namespaced_deployment(name, ns, _request_timeout=REQUEST_TIMEOUT)
    except Exception as exc:  # noqa: BLE001
        if _not_found(exc):
            return [_fail(WARM_CHECK, subject, "placeholder Deployment not found",
                          "the stack is not applied to this cluster (run pulumi up) or it was deleted: no warm "
                          "capacity is held")]
        return [_fail(WARM_CHECK, subject, f"cannot read it ({_api_error(exc)})",
                      f"the credentials lack 'get deployments' in {ns}")]
    want = dep.spec.replicas if dep.spec and dep.spec.replicas is not None else w.warm_replicas
    available = (dep.status.available_replicas if dep.status else None) or 0
    listing = ""
    try:
        pods = core.list_namespaced_pod(ns, label_selector=_selector_string({"app.kubernetes.io/name": name}),
                                        _request_timeout=REQUEST_TIMEOUT).items
    except Exception as exc:  # noqa: BLE001
        pods, listing = [], f"; cannot list its pods ({_api_error(exc)})"
    try:
        events = core.list_namespaced_event(ns, _request_timeout=REQUEST_TIMEOUT).items or []
    except Exception:  # noqa: BLE001 - without events no Pending placeholder can be told why it waits
        events = []
    budget = provisioning_seconds(cfg, w)
    now = now or _now()
    out = []
    for pod in sorted(pods, key=lambda p: p.metadata.name):
        if (pod.status.phase if pod.status else None) != "Pending" or pod.spec.node_name:
            continue
        created = pod.metadata.creation_timestamp
        waited = (now - created).total_seconds() if created is not None else 0
        mine = _events_for(events, pod.metadata.name)
        said = [e for e in mine if e.reason in ("FailedScheduling", "NotTriggerScaleUp")]
        if waited <= budget or not said:
            continue
        last = said[-1]
        out.append(_fail(WARM_CHECK, f"pod/{ns}/{pod.metadata.name}",
                         f"Pending {waited:.0f}s, longer than the {budget}s a node of pool '{w.node_pool}' takes "
                         f"(estimate, catalogs/gpus.py); {last.reason}: {last.message}",
                         "no warm capacity is held for this placeholder: " + _pending_cause(pod, mine, w, cfg)))
    message = f"{available}/{want} placeholder(s) available{listing}"
    if available >= want:
        return [_pass(WARM_CHECK, subject, message)] + out
    pending = f"; {len(out)} Pending beyond the provisioning estimate" if out else ""
    return [_fail(WARM_CHECK, subject, message + pending,
                  f"a node of pool '{w.node_pool}' is being provisioned (up to {budget}s, use --wait), or the "
                  "placeholders cannot get one (see the pod results)")] + out


# ------------------------------------------------------------------------------------------ pre-pull
def _pull_failure(pod) -> Optional[str]:
    statuses = (pod.status.init_container_statuses if pod.status else None) or []
    pull = next((s for s in statuses if s.name == "pull"), None)
    if pull is None:
        return None
    waiting = pull.state.waiting if pull.state else None
    if waiting is not None and waiting.reason in PULL_FAILURES:
        return f"{waiting.reason}: {waiting.message or 'no message'}"
    for term in (pull.state.terminated if pull.state else None,
                 pull.last_state.terminated if pull.last_state else None):
        if term is not None and term.exit_code:
            return f"exit {term.exit_code} ({term.reason or 'terminated'}{': ' + term.message if term.message else ''})"
    return None


def check_pre_pull(cfg: PlatformConfig, w: Workload, core: k8s.CoreV1Api,
                   apps: k8s.AppsV1Api) -> list[CheckResult]:
    ns, name = cfg.workload_namespace(w), pre_pull_name(w)
    subject = f"daemonset/{ns}/{name}"
    try:
        ds = apps.read_namespaced_daemon_set(name, ns, _request_timeout=REQUEST_TIMEOUT)
    except Exception as exc:  # noqa: BLE001
        if _not_found(exc):
            return [_fail(PRE_PULL_CHECK, subject, "pre-puller DaemonSet not found",
                          "the stack is not applied to this cluster (run pulumi up) or it was deleted")]
        return [_fail(PRE_PULL_CHECK, subject, f"cannot read it ({_api_error(exc)})",
                      f"the credentials lack 'get daemonsets' in {ns}")]
    # the nodes the DaemonSet's own nodeSelector picks (the pool's, as nodes.present reads them)
    selector = all_pool_facts(cfg)[w.node_pool].node_selector
    try:
        nodes = len(core.list_node(label_selector=_selector_string(selector),
                                   _request_timeout=REQUEST_TIMEOUT).items)
        pods = core.list_namespaced_pod(ns, label_selector=_selector_string({"app.kubernetes.io/name": name}),
                                        _request_timeout=REQUEST_TIMEOUT).items
    except Exception as exc:  # noqa: BLE001
        return [_fail(PRE_PULL_CHECK, subject,
                      f"cannot list the pool's nodes or the pre-puller's pods ({_api_error(exc)})",
                      f"the credentials lack 'list nodes' or 'list pods' in {ns}")]
    status = ds.status
    desired = status.desired_number_scheduled if status else 0
    ready = status.number_ready if status else 0
    failed = [(p.metadata.name, why) for p in sorted(pods, key=lambda p: p.metadata.name)
              if (why := _pull_failure(p)) is not None]
    out = [_fail(PRE_PULL_CHECK, f"pod/{ns}/{pod}", f"init container 'pull' of {w.image}: {why}",
                 "the node cannot pull the image (the image reference, the registry's credentials on the node, or "
                 "the registry not reachable from the pool's VPC)" if not why.startswith("exit") else
                 "the image ran the pre-puller's static busybox and failed: an image of another architecture than "
                 "the node's (a busybox that cannot execute), or a filesystem that does not allow it; the replicas "
                 "pull the image on demand meanwhile")
           for pod, why in failed]
    message = (f"{ready}/{desired} pod(s) ready; the pool '{w.node_pool}' has {nodes} node(s) "
               f"({_selector_string(selector)})")
    if desired != nodes:
        return [_fail(PRE_PULL_CHECK, subject, message,
                      "the DaemonSet does not reach every node of the pool: its nodeSelector or tolerations differ "
                      "from the pool's (nodes relabelled or retainted outside the stack), or a node was just added "
                      "(use --wait)")] + out
    if ready < desired:
        return [_fail(PRE_PULL_CHECK, subject, message,
                      "a node is still pulling the image (use --wait for a large image) or cannot pull it (see the "
                      "pod results)")] + out
    return [_pass(PRE_PULL_CHECK, subject, message + ": the image is on every node")] + out


# -------------------------------------------------------------------------------------------- Fluid
_SIZE = re.compile(r"^\s*([0-9.]+)\s*([KMGTP]i?B?|B)?\s*$")
_SIZE_EXP = {"K": 1, "M": 2, "G": 3, "T": 4, "P": 5}


def size_gib(text: Optional[str]) -> Optional[float]:
    """A Fluid size (``15.00GiB``, ``500Gi``, ``2.3GB``) in GiB; None for ``[Calculating]`` or anything else."""
    m = _SIZE.match(text or "")
    if not m:
        return None
    value, unit = float(m.group(1)), m.group(2) or "B"
    if unit == "B":
        return value / 1024 ** 3
    base = 1024 if "i" in unit or unit[-1] != "B" else 1000
    return value * base ** _SIZE_EXP[unit[0]] / 1024 ** 3


def _fluid_status(custom: k8s.CustomObjectsApi, ns: str, plural: str, name: str, kind: str, subject: str,
                  out: list[CheckResult]) -> Optional[dict]:
    """The ``status`` of a Fluid object, or None with the failure of reading it appended to ``out``."""
    try:
        obj = custom.get_namespaced_custom_object(FLUID_GROUP, FLUID_VERSION, ns, plural, name,
                                                  _request_timeout=REQUEST_TIMEOUT)
    except Exception as exc:  # noqa: BLE001
        out.append(_missing(kind, subject, exc))
        return None
    return obj.get("status") or {}


def _missing(kind: str, subject: str, exc: Exception) -> CheckResult:
    if _not_found(exc):
        return _fail(FLUID_CHECK, subject, f"{kind} not found", "the stack is not applied (run pulumi up), or Fluid "
                     "(ack-fluid) is not installed, so its CRDs and controllers are missing")
    return _fail(FLUID_CHECK, subject, f"cannot read it ({_api_error(exc)})",
                 f"the credentials lack 'get' on {kind.lower()}s in its namespace")


def _read_claim(core: k8s.CoreV1Api, check: str, ns: str, claim: str,
                missing_cause: str) -> tuple[Optional[k8s.V1PersistentVolumeClaim], Optional[CheckResult]]:
    """(the claim, None), or (None, the failure of ``check`` saying why it could not be read)."""
    subject = f"pvc/{ns}/{claim}"
    try:
        return core.read_namespaced_persistent_volume_claim(claim, ns, _request_timeout=REQUEST_TIMEOUT), None
    except Exception as exc:  # noqa: BLE001
        if _not_found(exc):
            return None, _fail(check, subject, "PersistentVolumeClaim not found", missing_cause)
        return None, _fail(check, subject, f"cannot read it ({_api_error(exc)})",
                           f"the credentials lack 'get persistentvolumeclaims' in {ns}")


def _capacity(w: Workload, status: dict) -> tuple[str, Optional[str], Optional[str]]:
    """Text on the cache's capacity, and a failure cause or a warning when it is short of the weights."""
    states = status.get("cacheStates") or {}
    capacity, ufs = size_gib(states.get("cacheCapacity")), size_gib(status.get("ufsTotal"))
    parts = []
    if ufs is not None:
        parts.append(f"ufsTotal {status['ufsTotal']}")
    if capacity is not None:
        parts.append(f"cacheCapacity {states['cacheCapacity']}")
    if states.get("cached"):
        parts.append(f"cached {states['cached']}")
    text = ", ".join(parts) or "no ufsTotal or cacheCapacity reported yet: the capacity is not checked"
    need = w.model.size_gib if w.model is not None else None
    if capacity is not None and need is not None and capacity < need:
        return text, (f"the cache holds {capacity:.1f} GiB, less than model.sizeGib {need:g}: the replicas read the "
                      "rest from OSS at the fill rate on every load; raise cacheQuotaGib or cacheWorkers "
                      "(a worker that is not ready adds no capacity)"), None
    if capacity is not None and ufs is not None and ufs > capacity:
        return text, None, (f"the OSS directory ({ufs:.1f} GiB) is larger than the cache: mount only the weights' "
                            "directory, or the cache evicts what the replicas read")
    return text, None, None


def check_fluid_cache(cfg: PlatformConfig, w: Workload, core: k8s.CoreV1Api,
                      custom: k8s.CustomObjectsApi) -> list[CheckResult]:
    out = []
    ns, cache_ns = cfg.workload_namespace(w), cache_namespace(w)
    for v in w.volumes:
        if v.fluid is None:
            continue
        name = dataset_name(w, v)
        subject = f"dataset/{cache_ns}/{name}"
        status = _fluid_status(custom, cache_ns, "datasets", name, "Dataset", subject, out)
        if status is not None:
            phase = status.get("phase") or "(none)"
            capacity, short, wide = _capacity(w, status)
            if phase != "Bound":
                out.append(_fail(FLUID_CHECK, subject, f"phase {phase}; {capacity}",
                                 f"the Dataset has no runtime serving it yet: the JindoRuntime {name} is not ready "
                                 f"(see its result), or it cannot mount {v.fluid.mount_point} (the endpoint, or the "
                                 f"Secret {v.fluid.credentials.secret_name} in {cache_ns}; see the Dataset's "
                                 "conditions)"))
            elif short:
                out.append(_fail(FLUID_CHECK, subject, f"phase Bound; {capacity}", short))
            elif wide:
                out.append(_warn(FLUID_CHECK, subject, f"phase Bound; {capacity}", wide))
            else:
                out.append(_pass(FLUID_CHECK, subject, f"phase Bound; {capacity}"))
        subject = f"jindoruntime/{cache_ns}/{name}"
        rs = _fluid_status(custom, cache_ns, "jindoruntimes", name, "JindoRuntime", subject, out)
        if rs is not None:
            desired = rs.get("desiredWorkerNumberScheduled") or 0
            ready = rs.get("workerNumberReady") or 0
            phase = rs.get("workerPhase") or "(none)"
            message = f"{ready}/{desired} cache worker(s) ready (workerPhase {phase}), {v.fluid.cache_workers} declared"
            if desired < v.fluid.cache_workers or ready < desired or phase != "Ready":
                out.append(_fail(FLUID_CHECK, subject, message,
                                 f"cache workers wait for room on pool '{w.node_pool}' (a {v.fluid.cache_medium} tier "
                                 f"of {v.fluid.cache_quota_gib:g} GiB beside a replica, or fewer nodes than "
                                 "cacheWorkers), or are still starting (use --wait): see the worker pods in "
                                 f"{cache_ns}" + (f" ({rs['workerReason']})" if rs.get("workerReason") else "")))
            else:
                out.append(_pass(FLUID_CHECK, subject, message))
        claim = claim_name(w, v)
        subject = f"dataset/{ns}/{claim}"
        ref = _fluid_status(custom, ns, "datasets", claim, "Dataset", subject, out)
        if ref is not None:
            phase = ref.get("phase") or "(none)"
            if phase == "Bound":
                out.append(_pass(FLUID_CHECK, subject, f"phase Bound (references dataset://{cache_ns}/{name})"))
            else:
                out.append(_fail(FLUID_CHECK, subject, f"phase {phase} (references dataset://{cache_ns}/{name})",
                                 f"Fluid binds a referencing Dataset once the one it references is Bound; see "
                                 f"dataset/{cache_ns}/{name}"))
        subject = f"pvc/{ns}/{claim}"
        pvc, failure = _read_claim(core, FLUID_CHECK, ns, claim, "Fluid creates it when the referencing Dataset is "
                                   "bound: the replicas stay ContainerCreating until then")
        if failure is not None:
            out.append(failure)
        else:
            phase = (pvc.status.phase if pvc.status else None) or "(none)"
            if phase == "Bound":
                out.append(_pass(FLUID_CHECK, subject, f"Bound to {pvc.spec.volume_name}"))
            else:
                out.append(_fail(FLUID_CHECK, subject, f"phase {phase}",
                                 "Fluid's CSI plugin has not bound it: see the PVC's events and Fluid's csi-nodeplugin "
                                 "pods"))
    return out


# ------------------------------------------------------------------------------------- compile cache
def check_compile_cache(cfg: PlatformConfig, w: Workload, core: k8s.CoreV1Api) -> list[CheckResult]:
    name = compile_cache_volume(w)
    vol = next((v for v in w.volumes if v.name == name), None)
    if vol is None:
        return []
    if vol.pvc is None:
        return [_pass(COMPILE_CACHE_CHECK, f"volume/{w.name}/{vol.name}",
                      "an NFS export: every replica mounts it read-write, whatever its node")]
    ns = cfg.workload_namespace(w)
    subject = f"pvc/{ns}/{vol.pvc}"
    pvc, failure = _read_claim(core, COMPILE_CACHE_CHECK, ns, vol.pvc, f"the claim of volume '{vol.name}' must exist "
                               "before the replicas start: they stay Pending")
    if failure is not None:
        return [failure]
    phase = (pvc.status.phase if pvc.status else None) or "(none)"
    modes = list((pvc.status.access_modes if pvc.status else None) or pvc.spec.access_modes or [])
    message = f"phase {phase}, access modes {', '.join(modes) or '(none)'}"
    if phase != "Bound":
        return [_fail(COMPILE_CACHE_CHECK, subject, message,
                      "no volume is bound to the claim yet: see its events (storage class, capacity)")]
    if w.replica_ceiling > 1 and "ReadWriteMany" not in modes:
        return [_fail(COMPILE_CACHE_CHECK, subject, message,
                      f"up to {w.replica_ceiling} replicas mount it, but without ReadWriteMany only the "
                      "node it is attached to can: a replica on another node stays ContainerCreating "
                      "(Multi-Attach error). Use a file system claim (NAS) for the compile cache")]
    return [_pass(COMPILE_CACHE_CHECK, subject, message)]
