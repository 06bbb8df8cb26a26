"""Checks of each workload's autoscaling as it runs: its HPA (or KEDA's) active and reading its metrics, and the
PodMonitor that brings its server metrics to Prometheus."""
from __future__ import annotations

from typing import Optional

from kubernetes import client as k8s

from gpuplatform.catalogs.versions import MONITOR_LABELS
from gpuplatform.components.config import PlatformConfig, Workload
from gpuplatform.verify.kube import REQUEST_TIMEOUT, _api_error, _not_found, _selector_string
from gpuplatform.verify.monitoring import EXTERNAL_METRICS_APISERVICE
from gpuplatform.verify.results import CheckResult, _fail, _pass

PODMONITOR = ("monitoring.coreos.com", "v1", "podmonitors")
KEDA_HPA_PREFIX = "keda-hpa-"
"""KEDA names the HPA it creates for a ScaledObject ``keda-hpa-<scaledobject>``."""


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
                         "serve them: the stack is not applied, the workload declares no port that serves metrics, or the "
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
