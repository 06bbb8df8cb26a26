"""Alerts and the Grafana dashboard for the autoscaling chain, built from the stack's workloads and catalogs.

The same alert definitions become a ``PrometheusRule`` (self-hosted) or ARMS ``PrometheusAlertRule`` s (ACK
managed Prometheus). HPA state comes from kube-state-metrics (part of kube-prometheus-stack and of ARMS), the
aggregated API state from the API server's ``aggregator_unavailable_apiservice``.
"""
import json
from dataclasses import dataclass

from gpuplatform.catalogs.metrics import (DCGM_FB_FREE, DCGM_FB_USED, DCGM_XID_ERRORS, EXPORTERS, MetricSource,
                                         series_selector)
from gpuplatform.components.adapter_rules import render_metrics_query
from gpuplatform.components.config import Workload

CUSTOM_METRICS_APISERVICE = "v1beta1.custom.metrics.k8s.io"
GPU_MEMORY_FULL_RATIO = 0.95


@dataclass(frozen=True)
class Alert:
    name: str
    expr: str
    duration: str
    severity: str
    summary: str
    labels: tuple[tuple[str, str], ...] = ()
    """Labels besides ``severity`` that tell apart rules sharing one alert name."""
    description: str = ""
    """What to look at first, when the summary alone does not say."""

    def rule(self) -> dict:
        """The alerting rule of a Prometheus rule group."""
        annotations = {"summary": self.summary, **({"description": self.description} if self.description else {})}
        return {"alert": self.name, "expr": self.expr, "for": self.duration,
                "labels": {"severity": self.severity, **dict(self.labels)}, "annotations": annotations}

    @property
    def key(self) -> str:
        """A name unique among the rules (ARMS names each rule, and Pulumi each resource, once)."""
        return "-".join([self.name, *(v for _, v in self.labels)])


def _regex_alternation(values) -> str:
    return "|".join(sorted(values))


def alerts(namespace: str, hpa_names: list[str], sources: list[MetricSource], gpu_exporter: str) -> list[Alert]:
    hpas = _regex_alternation(hpa_names)
    out = []
    if hpa_names:
        out += [
            Alert("GpuHpaMetricUnavailable",
                  f'kube_horizontalpodautoscaler_status_condition{{namespace="{namespace}",'
                  f'horizontalpodautoscaler=~"{hpas}",condition="ScalingActive",status="false"}} == 1',
                  "5m", "critical",
                  "HPA {{ $labels.horizontalpodautoscaler }} cannot read its metrics (TARGETS shows <unknown>)"),
            Alert("GpuHpaAtMaxReplicas",
                  f'kube_horizontalpodautoscaler_status_current_replicas{{namespace="{namespace}",'
                  f'horizontalpodautoscaler=~"{hpas}"}} >= on(namespace, horizontalpodautoscaler) '
                  f'kube_horizontalpodautoscaler_spec_max_replicas{{namespace="{namespace}"}}',
                  "15m", "warning",
                  "HPA {{ $labels.horizontalpodautoscaler }} has run at maxReplicas for 15 minutes"),
        ]
    for src in sources:
        lab = src.labels
        shown = " or ".join(src.names)
        selector = series_selector(src, f'{lab.namespace}="{namespace}"')
        out.append(Alert(f"GpuHpaSeriesAbsent_{src.api_name.replace(':', '_')}", f"absent({selector})", "10m",
                         "warning",
                         f"No {shown} series in namespace {namespace}: the HPA metric {src.api_name} "
                         "has nothing to serve (exporter down, scrape or label mapping broken)"))
    out.append(Alert("CustomMetricsApiUnavailable",
                     f'max(aggregator_unavailable_apiservice{{name="{CUSTOM_METRICS_APISERVICE}"}}) == 1',
                     "5m", "critical",
                     "The custom metrics API is unavailable: every GPU HPA is blind and namespace deletion hangs"))
    if gpu_exporter in ("ack", "dcgm"):
        node = EXPORTERS[gpu_exporter].node
        out += [
            Alert("GpuXidError", f"max by ({node}, gpu) ({DCGM_XID_ERRORS}) > 0", "1m", "critical",
                  "GPU {{ $labels.gpu }} on {{ $labels." + node + " }} reported XID {{ $value }}"),
            Alert("GpuMemoryNearlyFull",
                  f"max by ({node}, gpu) ({DCGM_FB_USED} / ({DCGM_FB_USED} + {DCGM_FB_FREE})) "
                  f"> {GPU_MEMORY_FULL_RATIO}", "10m", "warning",
                  "GPU {{ $labels.gpu }} on {{ $labels." + node + " }} has used over 95% of its memory"),
        ]
    return out


def prometheus_rule_groups(alert_list: list[Alert]) -> list[dict]:
    return [{"name": "gpu-platform.autoscaling", "rules": [a.rule() for a in alert_list]}]


def dashboard(namespace: str, workloads: list[Workload], sources_by_workload: dict, rule_window: str) -> dict:
    """Per workload: each HPA metric per pod against its target, and current vs desired replicas."""
    panels, y = [], 0
    for w in workloads:
        for t in w.autoscaling.metrics:
            src: MetricSource = sources_by_workload[w.name][t.metric]
            per_pod = render_metrics_query(
                src, f'{src.labels.namespace}="{namespace}",{src.labels.pod}=~"{w.name}-.*"', src.labels.pod,
                rule_window)
            panels.append({"type": "timeseries", "title": f"{w.name}: {src.api_name} per pod vs target",
                           "gridPos": {"x": 0, "y": y, "w": 12, "h": 8},
                           "targets": [{"expr": per_pod, "legendFormat": "{{" + src.labels.pod + "}}"},
                                       {"expr": f"vector({t.target})", "legendFormat": "target"}]})
            y += 8
        panels.append({"type": "timeseries", "title": f"{w.name}: replicas",
                       "gridPos": {"x": 12, "y": y - 8 if y else 0, "w": 12, "h": 8},
                       "targets": [
                           {"expr": f'kube_horizontalpodautoscaler_status_current_replicas{{namespace="{namespace}",'
                                    f'horizontalpodautoscaler="{w.name}"}}', "legendFormat": "current"},
                           {"expr": f'kube_horizontalpodautoscaler_status_desired_replicas{{namespace="{namespace}",'
                                    f'horizontalpodautoscaler="{w.name}"}}', "legendFormat": "desired"}]})
    return {"title": "GPU inference autoscaling", "uid": "gpu-platform-hpa", "schemaVersion": 39,
            "time": {"from": "now-1h", "to": "now"}, "panels": panels}


def dashboard_json(*args) -> str:
    return json.dumps(dashboard(*args), indent=2, sort_keys=True)
