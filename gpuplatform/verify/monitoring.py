"""Checks of the metrics pipeline: the aggregated metrics APIServices and the adapter behind them, the GPU
exporter, and every HPA metric listed and valued by the custom metrics API."""
from __future__ import annotations

from typing import Optional
from urllib.parse import quote

from kubernetes import client as k8s

from gpuplatform.catalogs.metrics import APP_SERVERS, METRICS, MetricSource
from gpuplatform.catalogs.versions import MONITOR_LABELS, chart
from gpuplatform.components.config import PlatformConfig, Workload
from gpuplatform.components.metric_sources import source_for
from gpuplatform.components.pools import PoolFacts
from gpuplatform.components.workload_manifests import selector
from gpuplatform.verify.kube import REQUEST_TIMEOUT, _api_error, _not_found, _pod_ready, _selector_string, get_raw
from gpuplatform.verify.results import CheckResult, _fail, _pass

CUSTOM_METRICS_APISERVICE = "v1beta1.custom.metrics.k8s.io"
EXTERNAL_METRICS_APISERVICE = "v1beta1.external.metrics.k8s.io"
CUSTOM_METRICS_ROOT = "/apis/custom.metrics.k8s.io/v1beta1"

# Where each GPU exporter's DaemonSet lives. Several candidates because the same exporter arrives by different
# routes: the dcgm-exporter chart, the GPU Operator (MIG pools off ACK) or fake-gpu-operator (simulated GPUs);
# ARMS runs its own exporter as arms-prom/ack-prometheus-gpu-exporter.
EXPORTER_DAEMONSETS: dict[str, tuple[tuple[str, str], ...]] = {
    "dcgm": ((chart("dcgm-exporter").namespace, chart("dcgm-exporter").release),
             (chart("gpu-operator").namespace, "nvidia-dcgm-exporter"),
             (chart("fake-gpu-operator").namespace, "nvidia-dcgm-exporter")),
    "ack": (("arms-prom", "ack-prometheus-gpu-exporter"),),
}


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
    if src.exporter in APP_SERVERS:
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
