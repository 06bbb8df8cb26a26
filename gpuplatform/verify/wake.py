"""``model.wake-time``: how long a sleeping replica really takes to wake, measured live, against the estimate the
warm set is planned with (catalogs/servers.py ``wake_seconds``); what ``model.load-time`` is to a cold start.

For a model of a pool's warm set, per holder pod of the set (components/warm_set.py: label
``app.kubernetes.io/name: warm-set-<pool>``, the model's port there; a holder the waker has woken a replica in is
left alone); for any other vLLM workload whose command line enables sleep mode (``--enable-sleep-mode``) and whose
environment serves its endpoints (``VLLM_SERVER_DEV_MODE=1``: catalogs/servers.py ``VLLM_SLEEP``), per pod of the
workload (label ``app.kubernetes.io/name``):

1. ``GET /is_sleeping`` on the server's API port finds the replicas asleep (``{"is_sleeping": true}``);
2. the first one asleep is woken, ``POST /wake_up``, and ``GET /is_sleeping`` polled until it answers false: the
   seconds from the request to that answer are the wake-up;
3. it is put back to sleep at the level it is planned at (its pool's ``warmSet.sleepLevel``, else 1),
   ``POST /sleep?level=N``, and ``/is_sleeping`` must say so again: the check leaves the set as it found it.

No serving replica is touched: a workload with none asleep is reported, not put to sleep. The requests go through
the API server's pod proxy (``/api/v1/namespaces/<ns>/pods/<pod>:<port>/proxy/<path>``, Kubernetes docs
"Manually constructing apiserver proxy URLs"), so the credentials need ``create`` and ``get`` on ``pods/proxy``.
The proxied connection comes from the control plane, not from a pod: a network plugin that applies the
workload's NetworkPolicy to it drops it, and the pods are then reported as not answering.
"""
from __future__ import annotations

import json
import time
from typing import Callable, Optional

from kubernetes import client as k8s

from gpuplatform.catalogs import servers
from gpuplatform.components.config import PlatformConfig, Workload
from gpuplatform.components.model_startup import load_estimate
from gpuplatform.components.warm_set import AWAKE_LABEL, holder_name, holder_ports, models_of, sleep_endpoints
from gpuplatform.components.workload_manifests import selector
from gpuplatform.verify.kube import REQUEST_TIMEOUT, _api_error, _selector_string
from gpuplatform.verify.results import CheckResult, _fail, _pass, _warn

CHECK = "model.wake-time"
WAKE_TIMEOUT_SECONDS = 120.0
"""Longest wait for a replica to say it is awake: beyond any level-1 copy, and a level-2 read of 15 GiB at the
PVC's estimated rate (102 s)."""
POLL_SECONDS = 0.1
SLOW_FACTOR = 2.0
"""A wake-up slower than this times the estimate warns: the warm set's promise rests on it."""

Request = Callable[[str, str, str, int, str], tuple[int, str]]
"""(method, namespace, pod, port, path with query) -> (HTTP status, body text)."""


def pod_proxy(api_client: k8s.ApiClient) -> Request:
    """Requests to a pod's port through the API server's pod proxy."""
    def request(method: str, namespace: str, pod: str, port: int, path: str) -> tuple[int, str]:
        route, _, query = path.partition("?")
        params = [tuple(kv.split("=", 1)) for kv in query.split("&") if "=" in kv]
        url = f"/api/v1/namespaces/{namespace}/pods/{pod}:{port}/proxy{route}"
        m, full, headers, _body, _post = api_client.param_serialize(
            method, url, query_params=params, header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"])
        resp = api_client.call_api(m, full, header_params=headers, _request_timeout=WAKE_TIMEOUT_SECONDS)
        resp.read()
        return resp.status, resp.data.decode("utf-8") if resp.data else ""
    return request


def sleep_mode_served(w: Workload) -> bool:
    """vLLM with ``--enable-sleep-mode`` and ``VLLM_SERVER_DEV_MODE=1``, as its command line reads."""
    mode = sleep_endpoints(w)
    return mode is not None and mode.server == "vllm"


def where_asleep(cfg: PlatformConfig, w: Workload) -> Optional[tuple[dict, int]]:
    """(pod labels, API port) of the replicas of ``w`` that sleep: the holders of its pool's warm set, on the
    model's port there (components/warm_set.py), else its own pods when they serve sleep mode; None: neither."""
    pool = cfg.pool(w.node_pool)
    if pool is not None and any(m.name == w.name for m in models_of(cfg, pool)):
        return {"app.kubernetes.io/name": holder_name(pool)}, holder_ports(cfg, pool)[w.name]
    if sleep_mode_served(w):
        return selector(w), _api_port(w)
    return None


def _api_port(w: Workload) -> int:
    http = [p for p in w.ports if p.protocol == "http"]
    return (http or w.ports)[0].container_port


def _sleeping(request: Request, ns: str, pod: str, port: int) -> Optional[bool]:
    status, body = request("GET", ns, pod, port, "/is_sleeping")
    if status != 200:
        return None
    try:
        return bool(json.loads(body)["is_sleeping"])
    except (ValueError, KeyError, TypeError):
        return None


def check_wake_time(cfg: PlatformConfig, w: Workload, core: k8s.CoreV1Api, request: Request,
                    clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                    timeout_s: float = WAKE_TIMEOUT_SECONDS) -> Optional[CheckResult]:
    """None for a workload with no replica that can sleep (neither in a warm set nor serving sleep mode itself)."""
    where = where_asleep(cfg, w)
    if where is None:
        return None
    labels, port = where
    ns = cfg.workload_namespace(w)
    subject = f"deployment/{ns}/{w.name}"
    pool = cfg.pool(w.node_pool)
    level = pool.warm_set.sleep_level if pool is not None and pool.warm_set is not None else 1
    try:
        pods = core.list_namespaced_pod(ns, label_selector=_selector_string(labels),
                                        _request_timeout=REQUEST_TIMEOUT).items or []
    except Exception as exc:  # noqa: BLE001
        return _fail(CHECK, subject, f"cannot list the workload's pods ({_api_error(exc)})",
                     f"the credentials lack 'list pods' in {ns}")
    # a holder whose waker has woken one of its replicas is serving on its GPU: waking another would take that GPU's
    # memory from it
    running = [p.metadata.name for p in pods if p.status is not None and p.status.phase == "Running"
               and AWAKE_LABEL not in ((p.metadata.labels or {}) if p.metadata is not None else {})]
    asleep, unknown = [], []
    for name in running:
        try:
            state = _sleeping(request, ns, name, port)
        except Exception as exc:  # noqa: BLE001 - an unreachable pod is reported with the others
            state = None
            unknown.append(f"{name} ({_api_error(exc)})")
        else:
            if state is None:
                unknown.append(f"{name} (GET /is_sleeping did not say)")
        if state:
            asleep.append(name)
    if not asleep:
        why = f"; no answer from {', '.join(unknown)}" if unknown else ""
        return _warn(CHECK, subject, f"no replica asleep among {len(running)} running{why}: nothing to wake "
                     "without taking a serving replica out of service",
                     "measure when the warm set holds a sleeping replica of the model, or put an idle one to "
                     f"sleep yourself (POST /sleep?level={level}) and verify again")
    pod = asleep[0]
    start = clock()
    try:
        status, body = request("POST", ns, pod, port, "/wake_up")
    except Exception as exc:  # noqa: BLE001
        return _fail(CHECK, subject, f"POST /wake_up to {pod} failed ({_api_error(exc)})",
                     "the credentials lack 'create pods/proxy', or the server stopped answering")
    if status != 200:
        return _fail(CHECK, subject, f"POST /wake_up to {pod} answered {status}: {body[:200]}",
                     "the server refused to wake (a vLLM without --enable-sleep-mode answers an error)")
    woke_s = None
    while clock() - start <= timeout_s:
        if _sleeping(request, ns, pod, port) is False:
            woke_s = clock() - start
            break
        sleep(POLL_SECONDS)
    if woke_s is None:
        return _fail(CHECK, subject, f"{pod} still asleep {timeout_s:.0f}s after POST /wake_up",
                     "the wake-up hangs: the server's log names the allocator's error")
    status, body = request("POST", ns, pod, port, f"/sleep?level={level}")
    back = _sleeping(request, ns, pod, port) if status == 200 else None
    if not back:
        return _fail(CHECK, subject, f"{pod} woke in {woke_s:.1f}s but did not go back to sleep (POST "
                     f"/sleep?level={level} answered {status}): it is awake now",
                     f"put it back to sleep (POST /sleep?level={level}) so the warm set holds it again")
    found = f"{pod} woke in {woke_s:.1f}s and went back to sleep (level {level})"
    est = load_estimate(w)
    if est is None or w.model is None:
        return _pass(CHECK, subject, found + "; no model stated, so no estimate to set it against")
    expected = servers.wake_seconds(w.model.size_gib, level, est.read_seconds)
    how = (f"{w.model.size_gib:g} GiB copied from host memory at {servers.WAKE_HOST_TO_GPU_GIB_PER_SECOND:g} GiB/s"
           if level == 1 else f"{w.model.size_gib:g} GiB read again at {est.mib_per_second:g} MiB/s")
    found += f"; expected {expected:.1f}s ({how} + {servers.WAKE_OVERHEAD_SECONDS:g}s, an estimate)"
    if woke_s > SLOW_FACTOR * expected:
        return _warn(CHECK, subject, found + f": more than {SLOW_FACTOR:g}x the estimate",
                     "the warm set's time to capacity is planned from the estimate: a host with less memory "
                     "bandwidth, weights paged out of host memory, or level 2 reading a slow volume")
    return _pass(CHECK, subject, found)
