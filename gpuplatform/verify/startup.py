"""``model.load-time``: how long each workload's replicas really take from container start to ready, against the
startup probe budget the stack generated; the measurement that proves (or corrects) the load estimates of
catalogs/timeouts.py and catalogs/servers.py.

What is read, per pod of the workload (label ``app.kubernetes.io/name``):

* the container's ``state.running.startedAt`` (when the kubelet started this container instance) and the pod's
  ``Ready`` condition, ``lastTransitionTime`` while its status is True (Kubernetes API reference, PodStatus /
  ContainerStateRunning / PodCondition); their difference is the server's start and model load, plus at most one
  readiness period;
* ``restartCount`` and ``lastState.terminated`` (reason and exit code) of a container that was restarted;
* the pod's events: the kubelet records ``Killing`` with "Container <name> failed startup probe, will be
  restarted" when the startup probe runs out (the message vLLM's Kubernetes guide names for a failureThreshold
  too low for the load, vllm-project/vllm ``docs/deployment/k8s.md``, "Troubleshooting").

* the kubelet's ``Unhealthy`` events whose probe ran out of time: an HTTP probe's failure carries the Go client's
  error, "context deadline exceeded (Client.Timeout exceeded while awaiting headers)" (kubernetes
  ``pkg/probe/http/http.go``): the server answers its health path slower than the probe's ``timeoutSeconds``
  (catalogs/servers.py ``probe_timeout_seconds``, an ESTIMATE for all but SGLang);
* pods the kubelet evicted for their ``/tmp`` emptyDir: status reason ``Evicted`` with "Usage of EmptyDir volume
  "tmp" exceeds the limit ..." (kubernetes ``pkg/kubelet/eviction/helpers.go``, ``emptyDirMessageFmt``): the
  server's caches or downloads outgrew the 1 GiB ``/tmp`` they default to.

Against the estimates: with a ``model``, the slowest load minus the server's start overhead (catalogs/servers.py)
gives the rate the weights were really read at, next to the estimate it corrects (a plain or a streamed read,
``--load-format runai_streamer``, of the source: catalogs/timeouts.py ``MODEL_LOAD_RATES``,
``STREAMED_LOAD_RATES``); ``model.loadMibPerSecond`` takes it. And the kubelet's ``Pulled`` events say how long
each replica's image took to pull, "Successfully pulled image ... in 4m58.2s (4m58.2s including waiting)", or
that it was "already present on machine" (kubernetes ``pkg/kubelet/images/image_manager.go``): the figure the
simulator takes from ``serviceModel.imagePullSeconds``, and whether a pre-puller (``prePull``) did its work.

A load above half the budget warns: the safety factor (catalogs/timeouts.py ``STARTUP_SAFETY_FACTOR``) is meant to
leave twice the load, and a slower disk or a busy NAS on the next scale-up would eat the rest. A container the
startup probe killed fails the check: the budget is too small for this source and size.
"""
from __future__ import annotations

import re
from datetime import datetime
from typing import Optional

from kubernetes import client as k8s

from gpuplatform.components.config import PlatformConfig, Workload
from gpuplatform.components.model_startup import load_estimate, startup_seconds
from gpuplatform.components.workload_manifests import TMP_SIZE_LIMIT_GIB, probe_timeout_seconds, selector
from gpuplatform.verify.kube import REQUEST_TIMEOUT, _api_error, _selector_string
from gpuplatform.verify.results import CheckResult, _fail, _pass, _warn

CHECK = "model.load-time"
WARN_FRACTION = 0.5
"""A measured load above this share of the startup budget warns."""
PROBE_TIMEOUT = "Client.Timeout exceeded"
"""What an HTTP probe's failure says when the server did not answer within ``timeoutSeconds``."""
TMP_EVICTION = 'EmptyDir volume "tmp" exceeds'
"""What the eviction of a pod whose ``/tmp`` emptyDir outgrew its sizeLimit says."""
STARTUP_PROBE_KILL = "failed startup probe"
"""What the kubelet's ``Killing`` event says of a container its startup probe restarted."""


def _ready_since(pod) -> Optional[datetime]:
    conds = (pod.status.conditions if pod.status else None) or []
    ready = next((c for c in conds if c.type == "Ready"), None)
    return ready.last_transition_time if ready is not None and ready.status == "True" else None


def _container(pod, name: str):
    statuses = (pod.status.container_statuses if pod.status else None) or []
    return next((s for s in statuses if s.name == name), statuses[0] if statuses else None)


def _restarts(status) -> Optional[str]:
    if status is None or not status.restart_count:
        return None
    last = status.last_state.terminated if status.last_state is not None else None
    why = f" (last: {last.reason or 'terminated'}, exit {last.exit_code})" if last is not None else ""
    return f"{status.restart_count} restart(s){why}"


def _startup_kills(events: list, pod_name: str) -> int:
    return sum((e.count or 1) for e in events
               if e.involved_object is not None and e.involved_object.name == pod_name and e.reason == "Killing"
               and STARTUP_PROBE_KILL in (e.message or ""))


def _probe_timeouts(events: list, pod_name: str) -> int:
    return sum((e.count or 1) for e in events
               if e.involved_object is not None and e.involved_object.name == pod_name and e.reason == "Unhealthy"
               and PROBE_TIMEOUT in (e.message or ""))


def _tmp_evicted(pod) -> bool:
    status = pod.status
    return status is not None and status.reason == "Evicted" and TMP_EVICTION in (status.message or "")


PULLED = re.compile(r'Successfully pulled image "[^"]*" in ([0-9hms.µu]+)')
PRESENT = "already present on machine"
_GO_DURATION = re.compile(r"([0-9.]+)(h|ms|m|s|µs|us)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "µs": 1e-6, "us": 1e-6}


def go_duration_seconds(text: str) -> Optional[float]:
    """A Go ``time.Duration`` as printed (``4m58.2s``, ``850ms``) in seconds; None for anything else."""
    parts = _GO_DURATION.findall(text)
    if not parts or "".join(v + u for v, u in parts) != text:
        return None
    return sum(float(v) * _UNIT_SECONDS[u] for v, u in parts)


def _estimate_text(w: Workload, worst: Optional[float] = None, fastest: Optional[float] = None) -> str:
    """The estimate of ``model`` next to the measurement, and the read rate the slowest load implies. With a Fluid
    weights cache the slowest load is the one that filled the cache from OSS (against ``FLUID_FILL_RATE``) and the
    fastest one read the cache (against the cache's rate, which ``model.loadMibPerSecond`` replaces)."""
    est = load_estimate(w)
    if est is None:
        return ""
    text = f"; estimated {est.expected_seconds:.0f}s"
    if est.fill_mib_per_second is not None or est.cold_overhead_seconds is not None:
        caches = " and ".join(what for what, on in (("the Fluid cache", est.fill_mib_per_second is not None),
                                                     ("the compile cache", est.cold_overhead_seconds is not None))
                              if on)
        text += f" ({est.first_expected_seconds:.0f}s for the replica that fills {caches})"
    if worst is None:
        return text
    kind = f"streamed {est.source}" if est.streamed else est.source
    if est.fill_mib_per_second is not None:
        text += _rate_text(est, worst, est.fill_mib_per_second, "the slowest, as if it filled the cache from OSS; "
                           "catalogs/timeouts.py FLUID_FILL_RATE", est.first_overhead_seconds)
        if fastest is None or fastest == worst:
            return text
        return text + _rate_text(est, fastest, est.mib_per_second, f"the fastest, from the cache ({kind}); "
                                 "model.loadMibPerSecond takes a measured rate", est.overhead_seconds)
    return text + _rate_text(est, worst, est.mib_per_second, f"{kind}; model.loadMibPerSecond takes a measured rate",
                             est.first_overhead_seconds)


def _rate_text(est, seconds: float, against: float, what: str, start: int) -> str:
    """The read rate a load of ``seconds`` implies after the server's estimated ``start``, against a catalog rate
    (the slowest load is taken as a replica that found the compile cache, if any, empty)."""
    reading = seconds - start
    if reading <= 0:
        return (f"; the load took less than the {start}s server start estimated: the weights' rate cannot be told "
                "from it")
    rate = est.size_gib * 1024 / reading
    return f"; read at {rate:.0f} MiB/s after the {start}s server start estimated, against {against:g} MiB/s ({what})"


def _pull_text(events: list, pod_names: set) -> str:
    """The slowest image pull of the workload's pods from the kubelet's ``Pulled`` events, and how many found it on
    their node."""
    pulls, present = [], 0
    for e in events:
        if e.involved_object is None or e.involved_object.name not in pod_names or e.reason != "Pulled":
            continue
        message = e.message or ""
        if PRESENT in message:
            present += 1
            continue
        m = PULLED.search(message)
        seconds = go_duration_seconds(m.group(1)) if m else None
        if seconds is not None:
            pulls.append((seconds, e.involved_object.name))
    parts = []
    if pulls:
        worst, at = max(pulls)
        parts.append(f"slowest image pull {worst:.0f}s ({at}, the kubelet's Pulled event; the simulator's "
                     "serviceModel.imagePullSeconds)")
    if present:
        parts.append(f"{present} container start(s) found the image on the node")
    return "; ".join(parts)


def check_load_time(cfg: PlatformConfig, w: Workload, core: k8s.CoreV1Api) -> CheckResult:
    ns = cfg.workload_namespace(w)
    subject = f"deployment/{ns}/{w.name}"
    budget = startup_seconds(w)
    try:
        pods = core.list_namespaced_pod(ns, label_selector=_selector_string(selector(w)),
                                        _request_timeout=REQUEST_TIMEOUT).items
    except Exception as exc:  # noqa: BLE001
        return _fail(CHECK, subject, f"cannot list the workload's pods ({_api_error(exc)})",
                     f"the credentials lack 'list pods' in {ns}")
    if not pods:
        if w.autoscaling.autoscaler == "keda" and w.autoscaling.min_replicas == 0:
            return _pass(CHECK, subject, "no pods (scaled to zero): nothing to measure")
        return _fail(CHECK, subject, "no pods of the workload", "the stack is not applied to this cluster, or the "
                     "Deployment cannot create pods (quota, admission)")
    try:
        events = core.list_namespaced_event(ns, _request_timeout=REQUEST_TIMEOUT).items or []
    except Exception:  # noqa: BLE001 - without events, kills are told from restarts alone
        events = []
    measured: list[tuple[float, str]] = []
    waiting, restarted, killed, timed_out, evicted = [], [], [], [], []
    for pod in pods:
        name = pod.metadata.name
        if _tmp_evicted(pod):
            evicted.append(name)
            continue
        timeouts = _probe_timeouts(events, name)
        if timeouts:
            timed_out.append(f"{name} ({timeouts}x)")
        status = _container(pod, w.name)
        kills = _startup_kills(events, name)
        if kills:
            killed.append(f"{name} ({kills}x)")
        if _restarts(status):
            restarted.append(f"{name}: {_restarts(status)}")
        started = status.state.running.started_at if status is not None and status.state and \
            status.state.running else None
        ready = _ready_since(pod)
        if started is None or ready is None or ready < started:
            waiting.append(name)
            continue
        measured.append(((ready - started).total_seconds(), name))
    parts = []
    if measured:
        worst, at = max(measured)
        parts.append(f"slowest load {worst:.0f}s ({at}) of a {budget}s startup budget "
                     f"({100 * worst / budget:.0f}%){_estimate_text(w, worst, min(measured)[0])}; "
                     f"{len(measured)} pod(s) measured")
    pulled = _pull_text(events, {pod.metadata.name for pod in pods})
    if pulled:
        parts.append(pulled)
    if waiting:
        parts.append(f"not ready yet: {', '.join(sorted(waiting))}")
    if restarted:
        parts.append("restarts: " + "; ".join(sorted(restarted)))
    if timed_out:
        parts.append(f"probes timed out: {', '.join(sorted(timed_out))}")
    if evicted:
        parts.append(f"evicted for /tmp: {', '.join(sorted(evicted))}")
    message = "; ".join(parts)
    if evicted:
        return _fail(CHECK, subject, message, f"the server's caches or downloads outgrew the {TMP_SIZE_LIMIT_GIB} GiB "
                     "/tmp emptyDir: point them (HOME, the cache variables, the download directory) at a volume "
                     "mounted with readOnly: false")
    if timed_out:
        timeout = probe_timeout_seconds(w) or 1
        return _fail(CHECK, subject, message, f"the server answers its health path slower than the probes' "
                     f"{timeout}s timeout, so its pods are taken out of the Service (readiness) or restarted "
                     "(liveness) while they work: report the measured latency, and give the probes a timeout above "
                     "it (probes.port with the server's paths keeps the generated timeout)")
    if killed:
        return _fail(CHECK, subject, f"{message}; killed by the startup probe: {', '.join(sorted(killed))}",
                     f"the load takes longer than the {budget}s startup budget: state the weights' real size and "
                     "source in 'model', set model.loadMibPerSecond to the rate measured here, or move the weights "
                     "to a faster source")
    if not measured:
        return _fail(CHECK, subject, message, "no replica has become ready since its container started: still "
                     "pulling its image or loading its model, or failing its readiness probe (see the pod's events)")
    if worst > WARN_FRACTION * budget:
        return _warn(CHECK, subject, message,
                     f"above {WARN_FRACTION:.0%} of the budget: a slower start (a cold disk, a busy NAS, a node "
                     "pulling other images) may hit the startup probe; set model.loadMibPerSecond from this "
                     "measurement, or raise probes.startupTimeoutSeconds")
    return _pass(CHECK, subject, message)
