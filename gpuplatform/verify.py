"""Post-deploy verification: does the running cluster do what the stack declared?

``pulumi up`` succeeding only proves the objects were accepted. The autoscaling loop (GPU nodes -> device
plugin -> exporter -> Prometheus -> adapter -> custom metrics API -> HPA) can still be broken at any link, and
an HPA with a missing metric fails quietly: it shows ``<unknown>`` and never scales. These checks read the
cluster through the Kubernetes API only and compare it with the stack config; every failure names what is
wrong and the most likely cause.

Check ids (stable; ``docs/verify.md`` describes each):

* ``cluster.reachable``
* ``nodes.present``, ``nodes.labels``, ``nodes.taints``, ``nodes.gpu-capacity`` (one result per GPU pool)
* ``apiservice.available`` (custom metrics; external metrics too when a workload uses KEDA)
* ``adapter.ready``, ``exporter.ready``
* ``metrics.listed``, ``metrics.value`` (one per workload and HPA metric)
* ``hpa.scaling-active``, ``hpa.current-metrics`` (one per workload)
* ``podmonitor.present`` (workloads scaled on inference-server metrics)
* ``nodes.mig-partitioned`` (one per mixed-strategy MIG pool with nodes), ``nodes.mig-config`` (one per MIG pool with
  nodes that the GPU Operator's mig-manager partitions)
* ``ingress.address`` (one per workload with an ingress)
* ``credential.lifetime``, ``cluster.csi-driver`` (ACK), ``cluster.pod-network`` (new ACK clusters with flannel):
  the ACK behaviours docs/ack.md lists as unverified
"""
from __future__ import annotations

import datetime as dt
import ipaddress
import json
import os
import ssl
import sys
import time
from dataclasses import asdict, dataclass
from typing import Callable, Optional, TextIO
from urllib.parse import quote

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from kubernetes.utils import parse_quantity

from gpuplatform.catalogs import sharing
from gpuplatform.catalogs.metrics import METRICS, MetricSource
from gpuplatform.catalogs.versions import chart
from gpuplatform.components.config import PlatformConfig, Workload
from gpuplatform.components.metric_sources import source_for
from gpuplatform.components.pools import PoolFacts, all_pool_facts
from gpuplatform.catalogs.versions import MONITOR_LABELS
from gpuplatform.components.workload_manifests import selector, uses_app_metrics

CUSTOM_METRICS_APISERVICE = "v1beta1.custom.metrics.k8s.io"
EXTERNAL_METRICS_APISERVICE = "v1beta1.external.metrics.k8s.io"
CUSTOM_METRICS_ROOT = "/apis/custom.metrics.k8s.io/v1beta1"
PODMONITOR = ("monitoring.coreos.com", "v1", "podmonitors")
KEDA_HPA_PREFIX = "keda-hpa-"
"""KEDA names the HPA it creates for a ScaledObject ``keda-hpa-<scaledobject>``."""

# Where each GPU exporter's DaemonSet lives. Several candidates because the same exporter arrives by different
# routes: the dcgm-exporter chart, the GPU Operator (MIG pools off ACK) or fake-gpu-operator (simulated GPUs);
# ARMS runs its own exporter as arms-prom/ack-prometheus-gpu-exporter.
EXPORTER_DAEMONSETS: dict[str, tuple[tuple[str, str], ...]] = {
    "dcgm": ((chart("dcgm-exporter").namespace, chart("dcgm-exporter").release),
             (chart("gpu-operator").namespace, "nvidia-dcgm-exporter"),
             (chart("fake-gpu-operator").namespace, "nvidia-dcgm-exporter")),
    "ack": (("arms-prom", "ack-prometheus-gpu-exporter"),),
}

ACK_DISK_CSI_DRIVER = "diskplugin.csi.alibabacloud.com"
"""CSIDriver the ACK disk CSI add-ons (csi-plugin + managed-csiprovisioner) register
(kubernetes-sigs/alibaba-cloud-csi-driver)."""
CREDENTIAL_MIN_DAYS = 30
"""A kubeconfig credential closer to its end than this is treated as temporary: ``destroy``/``refresh`` read the
credential stored in the state, and would fail once it expires."""

REQUEST_TIMEOUT = 10
"""Seconds per API request: a verify run must end even when the API server or an aggregated API hangs."""
POLL_SECONDS = 5.0


@dataclass(frozen=True)
class CheckResult:
    check: str
    """Stable check id, e.g. ``hpa.current-metrics``."""
    subject: str
    """What was checked, e.g. ``pool/a10`` or ``hpa/inference/flower``."""
    ok: bool
    message: str
    """What was found (and, on failure, what is wrong)."""
    cause: str = ""
    """Likely cause of a failure; empty when the check passed."""

    def to_dict(self) -> dict:
        return asdict(self)


def _pass(check: str, subject: str, message: str) -> CheckResult:
    return CheckResult(check, subject, True, message)


def _fail(check: str, subject: str, message: str, cause: str) -> CheckResult:
    return CheckResult(check, subject, False, message, cause)


def _api_error(exc: Exception) -> str:
    if isinstance(exc, ApiException):
        reason = exc.reason or ""
        try:
            reason = json.loads(exc.body or "{}").get("message") or reason
        except (ValueError, AttributeError):
            pass
        return f"HTTP {exc.status}: {reason}".strip()
    return f"{type(exc).__name__}: {exc}"


def _not_found(exc: Exception) -> bool:
    return isinstance(exc, ApiException) and exc.status == 404


def get_raw(api_client: k8s.ApiClient, path: str, query: Optional[list[tuple[str, str]]] = None) -> dict:
    """GET an API path the typed client has no method for (the aggregated custom metrics API) as JSON."""
    method, url, headers, body, post = api_client.param_serialize(
        "GET", path, query_params=query or [], header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"])
    resp = api_client.call_api(method, url, header_params=headers, _request_timeout=REQUEST_TIMEOUT)
    resp.read()
    text = resp.data.decode("utf-8") if resp.data else ""
    if not 200 <= resp.status <= 299:
        raise ApiException(http_resp=resp)
    return json.loads(text) if text else {}


def _selector_string(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


# ================================================================================================ nodes
def _capacity_cause(pool: PoolFacts, node: k8s.V1Node) -> str:
    labels = node.metadata.labels or {}
    if pool.simulated:
        return (f"fake-gpu-operator is not running or its topology has no pool '{pool.name}' (node label "
                f"{sharing.SIMULATED_POOL_LABEL}={pool.name} missing or the status-updater has not run)")
    if pool.mode == "cgpu":
        addon = sharing.ACK_SHARING_ADDON if pool.on_ack else "the GPU sharing device plugin"
        return (f"GPU sharing component not installed or not running on the node ({addon}; dedicated clusters "
                f"use {sharing.ACK_LEGACY_SHARING_ADDON}); it only serves nodes labelled "
                f"{sharing.ACK_SCHEDULE_LABEL}={pool.cgpu_policy}")
    if pool.mode == "mig":
        state = labels.get(sharing.NVIDIA_MIG_STATE_LABEL, "(unset)")
        return (f"MIG partitions not applied: {sharing.NVIDIA_MIG_STATE_LABEL}={state} (MIG manager not running, "
                f"still reconfiguring, or failed), or the device plugin does not run the '{pool.mig_strategy}' "
                f"MIG strategy that exposes {pool.resource_name}")
    where = (f"ack-nvidia-device-plugin only selects {sharing.ACK_SCHEDULE_LABEL}={sharing.ACK_EXCLUSIVE}"
             if pool.on_ack else "NVIDIA device plugin / GPU Operator not installed on the node")
    return f"NVIDIA device plugin not running or the driver is not ready on the node ({where})"


def check_pool(pool: PoolFacts, cfg: PlatformConfig, core: k8s.CoreV1Api) -> tuple[list[CheckResult], int]:
    """Results for one pool, and how many of its nodes exist."""
    subject = f"pool/{pool.name}"
    sel = _selector_string(pool.node_selector)
    try:
        nodes = core.list_node(label_selector=sel, _request_timeout=REQUEST_TIMEOUT).items
    except Exception as exc:  # noqa: BLE001 - every API failure becomes a failed check, never a traceback
        return [_fail("nodes.present", subject, f"cannot list nodes ({_api_error(exc)})",
                      "the credentials lack 'list nodes' or the API server is unhealthy")], 0
    declared = cfg.pool(pool.name)
    if not nodes:
        if declared is not None and declared.autoscaling and declared.min_nodes == 0:
            return [_pass("nodes.present", subject,
                          f"no node with {sel} yet: the pool autoscales from 0 and adds nodes for pending pods")], 0
        return [_fail("nodes.present", subject, f"no node carries {sel}",
                      "the node pool has not created nodes (ECS quota, instance type out of stock in the zones, "
                      "or the pool failed); on a kubeconfig cluster the nodes were not labelled")], 0
    names = sorted(n.metadata.name for n in nodes)
    out = [_pass("nodes.present", subject, f"{len(nodes)} node(s): {', '.join(names)}")]

    wrong_labels = []
    for n in nodes:
        have = n.metadata.labels or {}
        bad = [f"{k}={v} (has {have[k]!r})" if k in have else f"{k}={v} (missing)"
               for k, v in sorted(pool.node_labels.items()) if have.get(k) != v]
        if bad:
            wrong_labels.append(f"{n.metadata.name}: {', '.join(bad)}")
    if wrong_labels:
        out.append(_fail("nodes.labels", subject, "labels differ from the declared ones: " + "; ".join(wrong_labels),
                         "nodes were created outside this node pool or relabelled by hand; GPU components "
                         f"select nodes by {sharing.ACK_SCHEDULE_LABEL} and workloads by {sharing.POOL_LABEL}"))
    else:
        out.append(_pass("nodes.labels", subject, f"all nodes carry the {len(pool.node_labels)} declared labels"))

    wrong_taints = []
    for n in nodes:
        have = {(t.key, t.value or None, t.effect) for t in (n.spec.taints or [])}
        missing = [f"{k}={v or ''}:{e}" for k, v, e in pool.taints if (k, v or None, e) not in have]
        if missing:
            wrong_taints.append(f"{n.metadata.name}: missing {', '.join(missing)}")
    if wrong_taints:
        out.append(_fail("nodes.taints", subject, "; ".join(wrong_taints),
                         "taints removed by hand or the node pool's taints were changed outside the stack; "
                         "without them non-GPU pods can occupy the GPU nodes"))
    else:
        out.append(_pass("nodes.taints", subject, f"all nodes carry the {len(pool.taints)} declared taint(s)"))

    if pool.mode == "mig":
        out.append(check_mig_resources(pool, nodes))
        if _mig_manager_runs(pool):
            out.append(check_mig_config(pool, nodes))
        if pool.mig_strategy == "mixed":
            out.append(check_mig_partitioned(pool, nodes))
        return out, len(nodes)

    resource, expected = pool.resource_name, pool.units_per_node
    short, causes = [], []
    for n in nodes:
        have = _allocatable(n).get(resource)
        if have is None:
            short.append(f"{n.metadata.name}: no {resource} (expected {expected})")
            causes.append(_capacity_cause(pool, n))
            continue
        if have < expected:
            short.append(f"{n.metadata.name}: {resource}={have} (expected {expected})")
            causes.append(_capacity_cause(pool, n) if have == 0 else
                          f"fewer {pool.unit}s than {pool.gpus_per_node} x {pool.model.name} provide: a GPU failed its "
                          "health check or fell off the bus, or the partitioning differs from the declared one")
    if short:
        out.append(_fail("nodes.gpu-capacity", subject, "; ".join(short), causes[0]))
    else:
        out.append(_pass("nodes.gpu-capacity", subject,
                         f"every node exposes {resource} >= {expected} ({pool.unit} per node)"))
    return out, len(nodes)


def _allocatable(node: k8s.V1Node, field: str = "allocatable") -> dict[str, int]:
    """GPU extended resources the scheduler can hand out on the node (``status.allocatable``, quantity strings).
    The kubelet's device manager counts every device a plugin advertises in ``capacity`` and only the healthy ones
    in ``allocatable`` (kubernetes ``pkg/kubelet/cm/devicemanager/manager.go``, ``GetCapacity``)."""
    amounts = (getattr(node.status, field) or {}) if node.status else {}
    served = sharing.served_gpu_resources()
    return {k: int(parse_quantity(v)) for k, v in amounts.items()
            if k in served or k.startswith(sharing.MIG_RESOURCE_PREFIX)}


def _mig_manager_runs(pool: PoolFacts) -> bool:
    """The GPU Operator's mig-manager partitions the pool's GPUs (kubeconfig clusters with real GPUs); ACK
    partitions them itself and fake-gpu-operator only simulates them."""
    return pool.mode == "mig" and not pool.on_ack and not pool.simulated


def _mig_cause(pool: PoolFacts, node: k8s.V1Node) -> str:
    """Why a node of a MIG pool does not advertise the declared devices, read from mig-manager's node labels: it
    sets ``nvidia.com/mig.config.state`` to ``pending`` (or ``rebooting``) while it applies the config the node's
    ``nvidia.com/mig.config`` label names, then ``success``, or ``failed`` when it cannot, first of all when that
    config is not in its config file (NVIDIA/mig-parted ``pkg/mig/reconfigure/reconfigure.go``: ``Run``;
    ``validateMigConfig`` runs ``mig-parted assert --valid-config``)."""
    if not _mig_manager_runs(pool):
        return _capacity_cause(pool, node)
    labels = node.metadata.labels or {}
    label, state = labels.get(sharing.NVIDIA_MIG_CONFIG_LABEL), labels.get(sharing.NVIDIA_MIG_STATE_LABEL)
    if label != pool.mig_config:
        return (f"the node is labelled {sharing.NVIDIA_MIG_CONFIG_LABEL}={label or '(unset)'}, not {pool.mig_config}: "
                "mig-manager applies the config the label names (label the node as `gpuplatform plan` lists)")
    if state in ("pending", "rebooting"):
        return (f"mig-manager is still applying {pool.mig_config} ({sharing.NVIDIA_MIG_STATE_LABEL}={state}): it "
                "stops the GPU clients, repartitions the GPUs and restarts the device plugin; run verify with --wait")
    if state == "failed":
        if pool.mig_layout:
            # imported here: it loads the Pulumi SDK, which the other checks never need
            from gpuplatform.components.gpu_software import MIG_PARTED_CONFIG_MAP

            return (f"mig-manager could not apply {pool.mig_config} ({sharing.NVIDIA_MIG_STATE_LABEL}=failed): the "
                    f"custom config was not picked up, so '{pool.mig_config}' is not in the file mig-manager reads "
                    f"(ClusterPolicy spec.migManager.config.name must be {MIG_PARTED_CONFIG_MAP}, the ConfigMap the "
                    "gpu-operator release creates; a ClusterPolicy edited by hand or an operator installed outside "
                    "this stack keeps the built-in configs), or a process outside Kubernetes holds the GPUs")
        return (f"mig-manager could not apply {pool.mig_config} ({sharing.NVIDIA_MIG_STATE_LABEL}=failed): the "
                "ClusterPolicy names a config file without it, or a process outside Kubernetes holds the GPUs")
    if state != "success":
        return (f"mig-manager has not run on the node ({sharing.NVIDIA_MIG_STATE_LABEL} unset): the GPU Operator or "
                "its mig-manager is not running there")
    return (f"mig-manager applied {pool.mig_config}, but the device plugin advertises other devices: it does not "
            f"run the 'mixed' MIG strategy (ClusterPolicy spec.mig.strategy) or has not restarted since, or a GPU "
            "failed its health check")


def check_mig_resources(pool: PoolFacts, nodes: list) -> CheckResult:
    """Every GPU resource the pool's MIG partitioning advertises, exactly, on every node: one
    ``nvidia.com/mig-<profile>`` per profile (mixed strategy) and ``nvidia.com/gpu`` for a layout's MIG-disabled
    GPUs (NVIDIA/k8s-device-plugin ``internal/rm/device_map.go``); MIG resources the pool does not declare count as
    0 (the kubelet keeps a resource at 0 once its device plugin stops advertising it)."""
    subject = f"pool/{pool.name}"
    expected = pool.node_resources
    wrong, causes = [], []
    for n in nodes:
        have = _allocatable(n)
        undeclared = {r: v for r, v in have.items()
                      if r.startswith(sharing.MIG_RESOURCE_PREFIX) and r not in expected and v}
        diffs = [f"{r} expected {want}, found {have[r] if r in have else 'none'}"
                 for r, want in sorted(expected.items()) if have.get(r) != want]
        diffs += [f"{r} expected 0, found {v}" for r, v in sorted(undeclared.items())]
        if diffs:
            wrong.append(f"node {n.metadata.name}: " + ", ".join(diffs))
            capacity = _allocatable(n, "capacity")
            unhealthy = [f"{r} (capacity {capacity[r]}, allocatable {have.get(r, 0)})"
                         for r in sorted(expected) if capacity.get(r, 0) > have.get(r, 0)]
            causes.append(f"the device plugin reports unhealthy devices on node {n.metadata.name}: "
                          f"{', '.join(unhealthy)}; a GPU failed its health check (XID errors; see the device "
                          "plugin's log), and the scheduler places nothing on it" if unhealthy else _mig_cause(pool, n))
    shown = ", ".join(f"{r}={v}" for r, v in sorted(expected.items()))
    if wrong:
        return _fail("nodes.gpu-capacity", subject, f"pool {pool.name}: " + "; ".join(wrong), causes[0])
    what = f"the {pool.mig_config} layout" if pool.mig_layout else f"{pool.unit} per node"
    return _pass("nodes.gpu-capacity", subject, f"every node exposes exactly {shown} ({what})")


def check_mig_config(pool: PoolFacts, nodes: list) -> CheckResult:
    """mig-manager (GPU Operator) applies the config a node's ``nvidia.com/mig.config`` label names and reports
    ``nvidia.com/mig.config.state=success`` once it is in place."""
    subject = f"pool/{pool.name}"
    wrong, causes = [], []
    for n in nodes:
        labels = n.metadata.labels or {}
        label, state = labels.get(sharing.NVIDIA_MIG_CONFIG_LABEL), labels.get(sharing.NVIDIA_MIG_STATE_LABEL)
        bad = []
        if label != pool.mig_config:
            bad.append(f"{sharing.NVIDIA_MIG_CONFIG_LABEL}={label or '(unset)'} (expected {pool.mig_config})")
        if state != "success":
            bad.append(f"{sharing.NVIDIA_MIG_STATE_LABEL}={state or '(unset)'} (expected success)")
        if bad:
            wrong.append(f"node {n.metadata.name}: " + ", ".join(bad))
            causes.append(_mig_cause(pool, n))
    if wrong:
        return _fail("nodes.mig-config", subject, f"pool {pool.name}: " + "; ".join(wrong), causes[0])
    return _pass("nodes.mig-config", subject,
                 f"every node has {sharing.NVIDIA_MIG_CONFIG_LABEL}={pool.mig_config}, applied (state success)")


def check_mig_partitioned(pool: PoolFacts, nodes: list) -> CheckResult:
    """With MIG on, a whole GPU is no longer an ``nvidia.com/gpu``: any beyond the MIG-disabled GPUs of a per-GPU
    layout means GPUs outside MIG mode, which a pod asking for a whole GPU would take from the pool meant to be
    partitioned."""
    subject = f"pool/{pool.name}"
    allowed = pool.node_resources.get(sharing.RESOURCE_GPU, 0) if pool.mig_layout else 0
    whole, first = [], None
    for n in nodes:
        count = _allocatable(n).get(sharing.RESOURCE_GPU, 0)
        if count > allowed:
            first = first or n
            whole.append(f"{n.metadata.name}: {sharing.RESOURCE_GPU}={count}"
                         + (f" (the layout leaves {allowed} whole)" if pool.mig_layout else ""))
    if not whole:
        if allowed:
            return _pass("nodes.mig-partitioned", subject,
                         f"no whole GPUs beyond the layout's {allowed} MIG-disabled GPU(s) per node")
        return _pass("nodes.mig-partitioned", subject, f"no whole GPUs left: every GPU is in MIG mode")
    if pool.on_ack:
        cause = (f"ACK partitions GPUs of nodes labelled {sharing.ACK_SCHEDULE_LABEL}={sharing.ACK_MIG} through "
                 f"{sharing.ACK_SHARING_ADDON}: check the add-on is installed and its pods run on the node, and that "
                 f"the node's MIG layout label {sharing.NVIDIA_MIG_CONFIG_LABEL}={pool.node_labels.get(sharing.NVIDIA_MIG_CONFIG_LABEL)} "
                 "is the key ACK reads (unverified: see docs/ack.md)")
    else:
        cause = _mig_cause(pool, first)
    return _fail("nodes.mig-partitioned", subject, "whole GPUs outside MIG mode: " + "; ".join(whole), cause)


# ================================================================================================ aggregated APIs
def check_apiservice(name: str, expected_ns: str, installer: str,
                     reg: k8s.ApiregistrationV1Api, expected_service: Optional[str] = None
                     ) -> tuple[CheckResult, Optional[k8s.V1APIService]]:
    subject = f"apiservice/{name}"
    try:
        svc = reg.read_api_service(name, _request_timeout=REQUEST_TIMEOUT)
    except Exception as exc:  # noqa: BLE001
        if _not_found(exc):
            return _fail("apiservice.available", subject, "not registered",
                         f"{installer} is not installed (its release failed or was removed), so nothing "
                         "serves the API and every HPA on it shows <unknown>"), None
        return _fail("apiservice.available", subject, f"cannot read it ({_api_error(exc)})",
                     "the credentials lack 'get apiservices' or the API server is unhealthy"), None
    cond = next((c for c in (svc.status.conditions if svc.status else None) or [] if c.type == "Available"), None)
    ref = svc.spec.service
    backend = f"{ref.namespace}/{ref.name}" if ref else "(local)"
    if cond is None or cond.status != "True":
        detail = f"{cond.reason}: {cond.message}" if cond else "no Available condition yet"
        return _fail("apiservice.available", subject, f"Available={cond.status if cond else 'Unknown'} "
                     f"(backend service {backend}; {detail})",
                     f"the adapter behind {backend} is down: no ready pods (MissingEndpoints), service missing "
                     "(ServiceNotFound) or not answering discovery (FailedDiscoveryCheck: crash loop, TLS "
                     "mismatch, unreachable Prometheus URL). While unavailable, HPAs show <unknown> and namespace "
                     "deletion hangs on discovery"), svc
    if ref is not None and (ref.namespace != expected_ns or (expected_service and ref.name != expected_service)):
        return _fail("apiservice.available", subject,
                     f"Available=True but served by {backend}, not by {installer} in namespace {expected_ns}"
                     + (f" (service {expected_service})" if expected_service else ""),
                     "another adapter registered this APIService first (only one may own it); the HPAs read "
                     "that adapter's rules, not the ones this stack generated"), svc
    return _pass("apiservice.available", subject, f"Available=True (backend service {backend})"), svc


def _pod_ready(pod: k8s.V1Pod) -> bool:
    conds = (pod.status.conditions if pod.status else None) or []
    return any(c.type == "Ready" and c.status == "True" for c in conds)


def check_adapter_pods(apiservice: k8s.V1APIService, core: k8s.CoreV1Api) -> Optional[CheckResult]:
    ref = apiservice.spec.service
    if ref is None:
        return None
    subject = f"service/{ref.namespace}/{ref.name}"
    try:
        svc = core.read_namespaced_service(ref.name, ref.namespace, _request_timeout=REQUEST_TIMEOUT)
    except Exception as exc:  # noqa: BLE001
        return _fail("adapter.ready", subject, f"adapter service not readable ({_api_error(exc)})",
                     "the adapter release was removed but its APIService was left behind")
    sel = svc.spec.selector or {}
    try:
        pods = core.list_namespaced_pod(ref.namespace, label_selector=_selector_string(sel),
                                        _request_timeout=REQUEST_TIMEOUT).items
    except Exception as exc:  # noqa: BLE001
        return _fail("adapter.ready", subject, f"cannot list adapter pods ({_api_error(exc)})",
                     "the credentials lack 'list pods' in the adapter namespace")
    ready = [p.metadata.name for p in pods if _pod_ready(p)]
    if not ready:
        return _fail("adapter.ready", subject, f"0/{len(pods)} adapter pods ready",
                     "adapter crash-looping (bad rule config, unreachable Prometheus URL, certificate not issued) "
                     "or unschedulable")
    return _pass("adapter.ready", subject, f"{len(ready)}/{len(pods)} adapter pods ready")


def check_exporter(cfg: PlatformConfig, apps: k8s.AppsV1Api, gpu_nodes: int) -> Optional[CheckResult]:
    exporter = cfg.monitoring.exporter
    candidates = EXPORTER_DAEMONSETS.get(exporter)
    if not candidates:
        return None
    for ns, name in candidates:
        try:
            ds = apps.read_namespaced_daemon_set(name, ns, _request_timeout=REQUEST_TIMEOUT)
        except Exception as exc:  # noqa: BLE001
            if _not_found(exc):
                continue
            return _fail("exporter.ready", f"daemonset/{ns}/{name}", f"cannot read it ({_api_error(exc)})",
                         "the credentials lack 'get daemonsets'")
        subject = f"daemonset/{ns}/{name}"
        st = ds.status
        desired, ready = (st.desired_number_scheduled or 0), (st.number_ready or 0)
        if desired == 0 and gpu_nodes:
            return _fail("exporter.ready", subject, f"scheduled on 0 nodes while the GPU pools have {gpu_nodes}",
                         "the exporter does not tolerate the GPU pools' taints or its nodeSelector matches no GPU "
                         "node (ARMS's exporter needs tolerations added for custom taints)")
        if ready < desired:
            return _fail("exporter.ready", subject, f"{ready}/{desired} exporter pods ready",
                         "exporter pods crash-looping or pending (DCGM cannot reach the driver, host engine "
                         "failed, image pull)")
        return _pass("exporter.ready", subject, f"{ready}/{desired} exporter pods ready")
    where = ", ".join(f"{ns}/{name}" for ns, name in candidates)
    return _fail("exporter.ready", f"exporter/{exporter}", f"no GPU exporter DaemonSet found (looked for {where})",
                 "the GPU exporter was not installed (monitoring release failed, or the ARMS GPU monitoring "
                 "component is not enabled), so no GPU series reach Prometheus")


# ================================================================================================ metrics
def _missing_metric_cause(cfg: PlatformConfig, w: Workload, metric: str, src: MetricSource,
                          pool: Optional[PoolFacts]) -> str:
    mdef = METRICS[metric]
    relist = cfg.monitoring.intervals.adapter_relist
    base = (f"the adapter lists a metric only when a rule serves '{src.api_name}' and the series {src.series} "
            f"exists in Prometheus (rediscovered every {relist})")
    if pool is not None and pool.mode == "mig" and src.series == "DCGM_FI_DEV_GPU_UTIL":
        return f"DCGM_FI_DEV_GPU_UTIL is never reported for MIG instances; {base}"
    if mdef.category == "app":
        return (f"{base}: the PodMonitor '{w.name}' is missing or not selected by Prometheus "
                f"(kube-prometheus-stack selects only monitors labelled {_selector_string(MONITOR_LABELS)}), "
                "or no rule for it is in the adapter config")
    if src.exporter == "dcgm":
        return (f"{base}: dcgm-exporter is not scraped (its ServiceMonitor lacks the "
                f"{_selector_string(MONITOR_LABELS)} label) or the adapter rule is missing from its config")
    if src.exporter == "ack":
        return (f"{base}: the ARMS GPU exporter is not running on the GPU nodes (it does not tolerate custom "
                f"taints) or the rule is missing from the {cfg.monitoring.adapter_kind} values")
    return base


def _empty_value_cause(src: MetricSource, w: Workload, ready_pods: int) -> str:
    if ready_pods == 0:
        return (f"no ready pod of {w.name}: pods Pending (Insufficient GPU resource, node pool at its maximum) "
                "or not passing readiness (model still loading)")
    lab = src.labels
    if src.exporter == "dcgm":
        return (f"series exist but none carries {lab.namespace}/{lab.pod} of these pods: scraped with "
                "honorLabels: false they arrive as exported_namespace/exported_pod, which the rule does not map; "
                "or the pods do not request the GPU in limits, so DCGM cannot attribute them")
    if src.exporter in ("triton", "vllm"):
        return ("Prometheus has no samples for these pods yet: the PodMonitor is not selected, the metrics port "
                "is not served, or the first scrapes are younger than the rule window")
    return (f"series exist but none carries {lab.namespace}/{lab.pod} of these pods: the exporter does not "
            "attribute GPU use to pods (shared cards, pods without a GPU limit)")


def check_metrics(cfg: PlatformConfig, api_client: k8s.ApiClient, core: k8s.CoreV1Api,
                  pools: dict[str, PoolFacts]) -> list[CheckResult]:
    hpa_workloads = [w for w in cfg.workloads if w.autoscaling.autoscaler == "hpa"]
    if not hpa_workloads:
        return []
    out = []
    try:
        listed = {r.get("name") for r in get_raw(api_client, CUSTOM_METRICS_ROOT).get("resources") or []}
        list_error = None
    except Exception as exc:  # noqa: BLE001
        listed, list_error = set(), _api_error(exc)
    for w in hpa_workloads:
        ns = cfg.workload_namespace(w)  # root workloads and composed services live in namespaces of their own
        sel = _selector_string(selector(w))
        ready_pods = None
        for target in w.autoscaling.metrics:
            src = source_for(cfg, w, target.metric)
            subject = f"{w.name}/{target.metric}"
            if src is None:
                out.append(_fail("metrics.listed", subject, f"no source for metric '{target.metric}' on this stack",
                                 "the stack's GPU exporter or the workload's server kind does not provide it"))
                continue
            resource = f"pods/{src.api_name}"
            if list_error:
                out.append(_fail("metrics.listed", subject, f"cannot read {CUSTOM_METRICS_ROOT} ({list_error})",
                                 f"APIService {CUSTOM_METRICS_APISERVICE} unavailable: the adapter is down"))
                continue
            if resource not in listed:
                out.append(_fail("metrics.listed", subject, f"{resource} is not in the custom metrics API "
                                 f"({len(listed)} resources listed)",
                                 _missing_metric_cause(cfg, w, target.metric, src, pools.get(w.node_pool))))
                continue
            out.append(_pass("metrics.listed", subject, f"{resource} is listed"))
            path = f"{CUSTOM_METRICS_ROOT}/namespaces/{quote(ns, safe='')}/pods/*/{quote(src.api_name, safe='')}"
            try:
                items = get_raw(api_client, path, [("labelSelector", sel)]).get("items") or []
                error = None
            except Exception as exc:  # noqa: BLE001
                items, error = [], _api_error(exc)
            if items:
                values = ", ".join(f"{i.get('describedObject', {}).get('name')}={i.get('value')}" for i in items[:5])
                more = f" (+{len(items) - 5} more)" if len(items) > 5 else ""
                out.append(_pass("metrics.value", subject, f"{len(items)} pod value(s): {values}{more}"))
                continue
            if ready_pods is None:
                try:
                    pods = core.list_namespaced_pod(ns, label_selector=sel, _request_timeout=REQUEST_TIMEOUT).items
                    ready_pods = sum(1 for p in pods if _pod_ready(p))
                except Exception:  # noqa: BLE001 - only used to pick the likely cause
                    ready_pods = -1
            what = f"reading {resource} for pods {sel} in {ns} failed ({error})" if error else \
                f"{resource} returned no value for pods {sel} in {ns}"
            out.append(_fail("metrics.value", subject, what, _empty_value_cause(src, w, ready_pods)))
    return out


# ================================================================================================ HPAs
def _target_text(target) -> str:
    if target is None:
        return "?"
    for attr in ("average_value", "value"):
        if getattr(target, attr, None) is not None:
            return str(getattr(target, attr))
    if getattr(target, "average_utilization", None) is not None:
        return f"{target.average_utilization}%"
    return "?"


def _metric_name(m) -> Optional[str]:
    for kind in ("pods", "external", "object"):
        body = getattr(m, kind, None)
        if body is not None and body.metric is not None:
            return body.metric.name
    return None


def check_hpa(cfg: PlatformConfig, w: Workload, auto: k8s.AutoscalingV2Api) -> list[CheckResult]:
    ns = cfg.workload_namespace(w)
    keda = w.autoscaling.autoscaler == "keda"
    name = f"{KEDA_HPA_PREFIX}{w.name}" if keda else w.name
    subject = f"hpa/{ns}/{name}"
    try:
        hpa = auto.read_namespaced_horizontal_pod_autoscaler(name, ns, _request_timeout=REQUEST_TIMEOUT)
    except Exception as exc:  # noqa: BLE001
        if _not_found(exc):
            cause = ("KEDA has not created it: the ScaledObject is missing or invalid, or the KEDA operator is not "
                     "running" if keda else "the stack is not applied to this cluster (run pulumi up) or the "
                     "HPA was deleted")
            return [_fail("hpa.scaling-active", subject, "HPA not found", cause)]
        return [_fail("hpa.scaling-active", subject, f"cannot read it ({_api_error(exc)})",
                      "the credentials lack 'get horizontalpodautoscalers'")]
    out = []
    conds = (hpa.status.conditions if hpa.status else None) or []
    active = next((c for c in conds if c.type == "ScalingActive"), None)
    scaled_to_zero = (keda and active is not None and active.reason == "ScalingDisabled"
                      and w.autoscaling.min_replicas == 0)
    if active is None:
        out.append(_fail("hpa.scaling-active", subject, "no ScalingActive condition yet",
                         "the HPA controller has not processed it yet (sync period ~15 s) or the target "
                         "Deployment is missing"))
    elif active.status == "True":
        out.append(_pass("hpa.scaling-active", subject, f"ScalingActive=True ({active.reason})"))
    elif scaled_to_zero:
        out.append(_pass("hpa.scaling-active", subject, "scaled to zero by KEDA (ScalingDisabled)"))
    else:
        if keda:
            cause = (f"the external metrics API ({EXTERNAL_METRICS_APISERVICE}) cannot serve the ScaledObject's "
                     "Prometheus query: KEDA metrics server down, or the query returns no series")
        else:
            cause = ("the custom metrics API does not serve the metric for these pods (see metrics.listed / "
                     "metrics.value); while any metric is invalid the HPA also refuses to scale down")
        out.append(_fail("hpa.scaling-active", subject,
                         f"ScalingActive={active.status} ({active.reason}: {active.message})", cause))

    current = {(_metric_name(m), m.type): m for m in (hpa.status.current_metrics if hpa.status else None) or []}
    shown, unknown = [], []
    for m in hpa.spec.metrics or []:
        mname = _metric_name(m)
        body = getattr(m, (m.type or "").lower(), None)
        target = _target_text(body.target if body is not None else None)
        cur = current.get((mname, m.type))
        cur_body = getattr(cur, (m.type or "").lower(), None) if cur is not None else None
        value = _target_text(cur_body.current) if cur_body is not None and cur_body.current is not None else None
        if value is None or value == "?":
            unknown.append(mname)
            shown.append(f"{mname} <unknown>/{target}")
        else:
            shown.append(f"{mname} {value}/{target}")
    if unknown and scaled_to_zero:
        # at zero replicas the HPA computes nothing; KEDA itself polls the trigger to activate the workload
        out.append(_pass("hpa.current-metrics", subject, "TARGETS " + "; ".join(shown) + " (scaled to zero)"))
    elif unknown:
        out.append(_fail("hpa.current-metrics", subject, "TARGETS " + "; ".join(shown),
                         "the HPA could not read " + ", ".join(str(u) for u in unknown) +
                         " (FailedGetPodsMetric / FailedGetExternalMetric): the metric is not listed or has no "
                         "value for the workload's pods; the HPA will not scale on it"))
    else:
        out.append(_pass("hpa.current-metrics", subject, "TARGETS " + "; ".join(shown)))
    return out


def check_pod_monitor(cfg: PlatformConfig, w: Workload, custom: k8s.CustomObjectsApi) -> CheckResult:
    ns = cfg.workload_namespace(w)
    group, version, plural = PODMONITOR
    subject = f"podmonitor/{ns}/{w.name}"
    try:
        pm = custom.get_namespaced_custom_object(group, version, ns, plural, w.name,
                                                 _request_timeout=REQUEST_TIMEOUT)
    except Exception as exc:  # noqa: BLE001
        if _not_found(exc):
            return _fail("podmonitor.present", subject, "PodMonitor not found",
                         f"without it Prometheus never scrapes {w.name}'s server metrics, so the adapter cannot "
                         "serve them: the stack is not applied, the workload declares no 'metrics' port, or the "
                         "PodMonitor CRD (prometheus-operator) is not installed")
        return _fail("podmonitor.present", subject, f"cannot read it ({_api_error(exc)})",
                     "the credentials lack 'get podmonitors'")
    labels = (pm.get("metadata") or {}).get("labels") or {}
    if cfg.monitoring.backend == "self-hosted":
        missing = {k: v for k, v in MONITOR_LABELS.items() if labels.get(k) != v}
        if missing:
            return _fail("podmonitor.present", subject, f"present but lacks label {_selector_string(missing)}",
                         "kube-prometheus-stack only selects PodMonitors labelled with its release, so this one "
                         "is ignored and the server metrics never reach Prometheus")
    return _pass("podmonitor.present", subject, "present")


# ================================================================================================ driver
def certificate_not_after(cert_file: str) -> Optional[dt.datetime]:
    """Expiry of a PEM client certificate, read with the standard library's certificate decoder."""
    try:
        decoded = ssl._ssl._test_decode_cert(cert_file)  # type: ignore[attr-defined]
    except (AttributeError, OSError, ssl.SSLError, ValueError):
        return None
    return dt.datetime.strptime(decoded["notAfter"], "%b %d %H:%M:%S %Y %Z").replace(tzinfo=dt.timezone.utc)


def check_credential(api_client: k8s.ApiClient, now: Optional[dt.datetime] = None) -> CheckResult:
    """The kubeconfig credential is not a temporary one (docs/ack.md, Kubeconfig)."""
    now = now or dt.datetime.now(dt.timezone.utc)
    cert_file = getattr(api_client.configuration, "cert_file", None)
    if not cert_file:
        return _pass("credential.lifetime", "kubeconfig", "no client certificate (token or exec credential plugin)")
    not_after = certificate_not_after(cert_file)
    if not_after is None:
        return _fail("credential.lifetime", "kubeconfig", "the client certificate cannot be read",
                     "the kubeconfig's client-certificate-data is not a PEM certificate")
    left = not_after - now
    if left < dt.timedelta(days=CREDENTIAL_MIN_DAYS):
        return _fail("credential.lifetime", "kubeconfig",
                     f"the client certificate expires {not_after:%Y-%m-%d %H:%M} UTC ({left.days} days left)",
                     "a temporary ACK credential (temporary_duration_minutes): pulumi destroy/refresh fail once "
                     "it expires; use the long-lived ACK kubeconfig (renew it in the ACK console if it is old)")
    return _pass("credential.lifetime", "kubeconfig", f"the client certificate is valid until {not_after:%Y-%m-%d}")


def check_csi_driver(storage: k8s.StorageV1Api) -> CheckResult:
    subject = f"csidriver/{ACK_DISK_CSI_DRIVER}"
    try:
        storage.read_csi_driver(ACK_DISK_CSI_DRIVER, _request_timeout=REQUEST_TIMEOUT)
    except Exception as exc:  # noqa: BLE001
        return _fail("cluster.csi-driver", subject, f"not registered ({_api_error(exc)})",
                     "the cluster was created without the csi-plugin/managed-csiprovisioner add-ons, or ACK "
                     "registers its disk driver under another name (see docs/ack.md)")
    return _pass("cluster.csi-driver", subject, "the ACK disk CSI driver is registered")


def check_pod_network(cfg: PlatformConfig, core: k8s.CoreV1Api) -> Optional[CheckResult]:
    """Nodes of a new flannel cluster get their pod ranges from ``cluster.podCidr``."""
    cluster = cfg.cluster
    pod_cidr = getattr(cluster, "effective_pod_cidr", None)
    if cluster.kind != "ack-managed" or not pod_cidr:
        return None
    subject = f"podcidr/{pod_cidr}"
    try:
        nodes = [n for pool in all_pool_facts(cfg).values()
                 for n in core.list_node(label_selector=_selector_string(pool.node_selector),
                                         _request_timeout=REQUEST_TIMEOUT).items]
    except Exception as exc:  # noqa: BLE001
        return _fail("cluster.pod-network", subject, f"cannot list nodes ({_api_error(exc)})",
                     "the credentials lack 'list nodes' or the API server is unhealthy")
    if not nodes:
        return _pass("cluster.pod-network", subject, "no GPU node yet to check")
    network = ipaddress.ip_network(pod_cidr)
    wrong = sorted(f"{n.metadata.name} ({n.spec.pod_cidr or 'none'})" for n in nodes
                   if not n.spec.pod_cidr or not ipaddress.ip_network(n.spec.pod_cidr).subnet_of(network))
    if wrong:
        return _fail("cluster.pod-network", subject, f"pod ranges outside {pod_cidr}: {', '.join(wrong)}",
                     "the cluster was not created with the flannel add-on and this pod CIDR (both are fixed at "
                     "creation), or ACK allocates node pod ranges differently (see docs/ack.md)")
    return _pass("cluster.pod-network", subject, f"{len(nodes)} GPU node(s) have pod ranges inside {pod_cidr}")


def run_verify(cfg: PlatformConfig, api_client: k8s.ApiClient) -> list[CheckResult]:
    """All checks against what ``cfg`` declares; never raises for API errors (they become failed checks)."""
    core = k8s.CoreV1Api(api_client)
    try:
        version = k8s.VersionApi(api_client).get_code(_request_timeout=REQUEST_TIMEOUT)
    except Exception as exc:  # noqa: BLE001
        host = api_client.configuration.host
        return [_fail("cluster.reachable", host, f"API server not reachable ({_api_error(exc)})",
                      "wrong kubeconfig/context, expired credentials, or the API endpoint is not reachable from "
                      "here (private endpoint without VPC access)")]
    results = [_pass("cluster.reachable", api_client.configuration.host, f"Kubernetes {version.git_version}")]
    if cfg.is_ack:
        results.append(check_credential(api_client))
        results.append(check_csi_driver(k8s.StorageV1Api(api_client)))
        network = check_pod_network(cfg, core)
        if network is not None:
            results.append(network)

    pools = all_pool_facts(cfg)
    gpu_nodes = 0
    for pool in pools.values():
        pool_results, count = check_pool(pool, cfg, core)
        results += pool_results
        gpu_nodes += count

    reg = k8s.ApiregistrationV1Api(api_client)
    adapter = chart(cfg.monitoring.adapter_kind)
    # a second adapter in the same namespace (ack-prometheus-operator's prometheusAdapter installs into
    # 'monitoring' too) is told apart by its service: the prometheus-adapter chart names it after the release
    # (templates/service.yaml, k8s-prometheus-adapter.fullname: the release name when it contains the chart name)
    own_service = adapter.release if cfg.monitoring.adapter_kind == "prometheus-adapter" else None
    apis = [(CUSTOM_METRICS_APISERVICE, adapter.namespace, f"{adapter.release} (namespace {adapter.namespace})",
             own_service)]
    if any(w.autoscaling.autoscaler == "keda" for w in cfg.workloads):
        keda = chart("keda")
        apis.append((EXTERNAL_METRICS_APISERVICE, keda.namespace, f"KEDA (namespace {keda.namespace})", None))
    for name, ns, installer, service in apis:
        result, svc = check_apiservice(name, ns, installer, reg, service)
        results.append(result)
        if svc is not None:
            pods = check_adapter_pods(svc, core)
            if pods is not None:
                results.append(pods)

    exporter = check_exporter(cfg, k8s.AppsV1Api(api_client), gpu_nodes)
    if exporter is not None:
        results.append(exporter)

    results += check_metrics(cfg, api_client, core, pools)
    auto = k8s.AutoscalingV2Api(api_client)
    for w in cfg.workloads:
        results += check_hpa(cfg, w, auto)
    custom = k8s.CustomObjectsApi(api_client)
    for w in cfg.workloads:
        if uses_app_metrics(w):
            results.append(check_pod_monitor(cfg, w, custom))
    networking = k8s.NetworkingV1Api(api_client)
    for w in cfg.workloads:
        if w.exposure.ingress is not None:
            results += [check_ingress(cfg, w, name, networking) for name in ingress_names(w)]
    return results


def ingress_names(w: Workload) -> list[str]:
    """Names of the workload's Ingress objects, as ``workload_manifests.ingresses`` gives them."""
    ing = w.exposure.ingress
    routes = ing.all_routes()
    return [w.name] if len(routes) == 1 and not ing.routes else [f"{w.name}-{r.port}" for r in routes]


def check_ingress(cfg: PlatformConfig, w: Workload, name: str, networking: k8s.NetworkingV1Api) -> CheckResult:
    """An Ingress gets an address only from a controller serving its class. ``pulumi up`` waits for it when the
    stack installs the controller; with an external controller it does not, so this is where a missing one shows."""
    ns, ing = cfg.workload_namespace(w), w.exposure.ingress
    subject = f"ingress/{ns}/{name}"
    try:
        obj = networking.read_namespaced_ingress(name, ns, _request_timeout=REQUEST_TIMEOUT)
    except Exception as exc:  # noqa: BLE001
        if _not_found(exc):
            return _fail("ingress.address", subject, "Ingress not found", "the stack is not applied")
        return _fail("ingress.address", subject, f"cannot read it ({_api_error(exc)})",
                     "the credentials lack 'get ingresses'")
    lb = (obj.status.load_balancer.ingress or []) if obj.status and obj.status.load_balancer else []
    addresses = [a.ip or a.hostname for a in lb if a.ip or a.hostname]
    if addresses:
        return _pass("ingress.address", subject, f"address {', '.join(addresses)} (class {ing.class_name})")
    if ing.controller_for(cfg.is_ack) == "addon":
        cause = ("ACK's nginx-ingress-controller add-on is not running or its SLB was not created (kube-system "
                 "pods nginx-ingress-controller; the add-on status in the ACK console)")
    else:
        cause = (f"the external controller for ingressClassName '{ing.class_name}' is not installed, not running or "
                 "serves another class (exposure.ingress.controller is 'external', so `pulumi up` did not wait)")
    return _fail("ingress.address", subject, "no address in .status.loadBalancer", cause)


# ================================================================================================ output
def format_table(results: list[CheckResult]) -> str:
    rows = [("STATUS", "CHECK", "SUBJECT", "RESULT")] + [
        ("ok" if r.ok else "FAIL", r.check, r.subject, r.message) for r in results]
    w0, w1, w2 = (max(len(row[i]) for row in rows) for i in range(3))
    lines = []
    for i, row in enumerate(rows):
        lines.append(f"{row[0]:<{w0}}  {row[1]:<{w1}}  {row[2]:<{w2}}  {row[3]}".rstrip())
        if i and not results[i - 1].ok and results[i - 1].cause:
            lines.append(f"{'':<{w0}}  {'':<{w1}}  {'':<{w2}}  likely cause: {results[i - 1].cause}")
    failed = sum(1 for r in results if not r.ok)
    lines.append("")
    lines.append(f"{len(results)} checks, {len(results) - failed} passed, {failed} failed")
    return "\n".join(lines)


def format_json(results: list[CheckResult]) -> str:
    failed = sum(1 for r in results if not r.ok)
    doc = {"ok": failed == 0, "summary": {"checks": len(results), "passed": len(results) - failed,
                                          "failed": failed},
           "checks": [r.to_dict() for r in results]}
    return json.dumps(doc, indent=2)


def progress_line(round_no: int, elapsed: float, budget: int, results: list[CheckResult]) -> str:
    failing = [f"{r.check} {r.subject}" for r in results if not r.ok]
    passed = len(results) - len(failing)
    line = f"verify round {round_no} ({int(elapsed)}s/{budget}s): {passed}/{len(results)} checks pass"
    if failing:
        line += "; waiting on " + ", ".join(failing[:3]) + (f" (+{len(failing) - 3} more)" if len(failing) > 3 else "")
    return line


# ================================================================================================ entry point
def build_api_client(cfg: PlatformConfig, kubeconfig: Optional[str], context: Optional[str]) -> k8s.ApiClient:
    """kubeconfig/context from the command line, else the stack's (kubeconfig clusters), else the default
    kubeconfig; inside a pod without any kubeconfig, the pod's service account (CI jobs in the cluster)."""
    from kubernetes import config as kconfig

    kubeconfig = kubeconfig or getattr(cfg.cluster, "kubeconfig_path", None)
    context = context or getattr(cfg.cluster, "context", None)
    default_exists = os.path.exists(os.path.expanduser(kconfig.KUBE_CONFIG_DEFAULT_LOCATION))
    if kubeconfig is None and not default_exists and os.environ.get("KUBERNETES_SERVICE_HOST"):
        configuration = k8s.Configuration()
        kconfig.load_incluster_config(client_configuration=configuration)
        return k8s.ApiClient(configuration)
    return kconfig.new_client_from_config(config_file=kubeconfig, context=context, persist_config=False)


def verify_main(cfg: PlatformConfig, kubeconfig: Optional[str] = None, context: Optional[str] = None,
                fmt: str = "table", wait_seconds: int = 0, out: TextIO = sys.stdout, *,
                poll_seconds: float = POLL_SECONDS, sleep: Callable[[float], None] = time.sleep,
                progress: Optional[TextIO] = None) -> int:
    """Run the checks (polling up to ``wait_seconds`` until all pass) and print the report.

    Exit code: 0 all checks pass, 1 a check failed, 2 the cluster client could not be set up. Progress lines go
    to ``progress`` (default: ``out`` for tables, stderr for JSON so stdout stays one JSON document).
    """
    if fmt not in ("table", "json"):
        print(f"unknown format {fmt!r}; use table or json", file=out)
        return 2
    try:
        api_client = build_api_client(cfg, kubeconfig, context)
    except Exception as exc:  # noqa: BLE001 - kubeconfig problems are user errors, not tracebacks
        print(f"cannot build a Kubernetes client: {exc}", file=out)
        return 2
    progress = progress or (sys.stderr if fmt == "json" else out)
    start = time.monotonic()
    round_no = 0
    # a round count bound as well as the clock: the loop ends even if a round returns instantly or sleep is stubbed
    max_rounds = int(wait_seconds / max(poll_seconds, 0.01)) + 2 if wait_seconds > 0 else 1
    try:
        while True:
            round_no += 1
            results = run_verify(cfg, api_client)
            ok = all(r.ok for r in results)
            if wait_seconds <= 0:
                break
            elapsed = time.monotonic() - start
            print(progress_line(round_no, elapsed, wait_seconds, results), file=progress, flush=True)
            remaining = wait_seconds - elapsed
            if ok or remaining <= 0 or round_no >= max_rounds:
                break
            sleep(min(poll_seconds, remaining))
    finally:
        api_client.close()
    print(format_json(results) if fmt == "json" else format_table(results), file=out)
    return 0 if ok else 1
