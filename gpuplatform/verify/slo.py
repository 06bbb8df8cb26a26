"""Live SLO compliance: the share of good minutes Prometheus recorded over each objective's SLO window.

Reads the 0/1 bad-minute series the SLO recording rule writes (components/slo_alerts.py, docs/alerts.md) from the
stack's kube-prometheus-stack Prometheus through the API server's service proxy (Kubernetes docs, "Manually
constructing apiserver proxy URLs": ``/api/v1/namespaces/<ns>/services/<name>:<port>/proxy/<path>``), with
Prometheus' instant query API (``/api/v1/query``, docs prometheus.io "HTTP API"). A missed SLO is reported as a
warning, not a failure: it is an outcome of the traffic, not a defect of what was deployed, and ``verify --wait``
could never wait it away.
"""
from __future__ import annotations

from kubernetes import client as k8s

from gpuplatform.catalogs.metrics import METRICS
from gpuplatform.catalogs.versions import PROMETHEUS_HOST, PROMETHEUS_PORT
from gpuplatform.components.config import PlatformConfig, Workload
from gpuplatform.components.slo_alerts import number, recorded_selector
from gpuplatform.verify.kube import _api_error, get_raw
from gpuplatform.verify.results import CheckResult, _pass, _warn

CHECK = "slo.compliance"


def prometheus_query_path() -> str:
    service, namespace = PROMETHEUS_HOST.split(".")[:2]
    return f"/api/v1/namespaces/{namespace}/services/{service}:{PROMETHEUS_PORT}/proxy/api/v1/query"


def compliance_query(namespace: str, workload: str, objective: str, window: str) -> str:
    return f"1 - avg_over_time({recorded_selector(namespace, workload, objective)}[{window}])"


def check_slo(cfg: PlatformConfig, w: Workload, api_client: k8s.ApiClient) -> list[CheckResult]:
    if w.slo is None:
        return []
    ns = cfg.workload_namespace(w)
    out = []
    for o in w.slo.objectives:
        subject = f"slo/{ns}/{w.name}/{o.metric}"
        unit = METRICS[o.metric].unit_info.shown if o.metric in METRICS else ""
        objective = f"{o.metric} <= {number(o.below)} {unit}".rstrip()
        if cfg.monitoring.backend != "self-hosted" or cfg.monitoring.prometheus_url:
            out.append(_warn(CHECK, subject, f"{objective}: compliance not read",
                             "the stack's Prometheus is not the one it installs (ARMS or monitoring.prometheusUrl); "
                             f"query it for {compliance_query(ns, w.name, o.metric, w.slo.window)}"))
            continue
        query = compliance_query(ns, w.name, o.metric, w.slo.window)
        try:
            doc = get_raw(api_client, prometheus_query_path(), [("query", query)])
        except Exception as exc:  # noqa: BLE001 - an unreachable Prometheus is reported, never raised
            out.append(_warn(CHECK, subject, f"{objective}: Prometheus not reachable ({_api_error(exc)})",
                             "the Prometheus pod is not ready or its Service is missing"))
            continue
        result = (doc.get("data") or {}).get("result") or []
        if not result:
            out.append(_warn(CHECK, subject, f"{objective}: no minute recorded yet",
                             "the recording rule gpu-platform.slo has not run (PrometheusRule not loaded) or no pod "
                             "of the workload reported the metric"))
            continue
        compliance = float(result[0]["value"][1]) * 100
        found = (f"{objective} in {compliance:.2f}% of the minutes recorded over the last {w.slo.window} "
                 f"(target {number(w.slo.compliance)}%)")
        if compliance >= w.slo.compliance:
            out.append(_pass(CHECK, subject, found))
        else:
            out.append(_warn(CHECK, subject, found + ": the error budget is spent",
                             "see the GpuSloErrorBudgetBurn alerts and docs/alerts.md; `gpuplatform simulate` on "
                             "the recent traffic tells which autoscaling setting would have met it"))
    return out
