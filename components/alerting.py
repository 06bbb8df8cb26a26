"""GpuAlerts: the autoscaling alerts and the Grafana dashboard of a set of services.

They name each service's HPA and the series its metrics come from, so they are built after the services: a
``PrometheusRule`` (self-hosted) or ARMS ``PrometheusAlertRule`` s (ACK managed Prometheus), and a dashboard
ConfigMap the Grafana sidecar loads (self-hosted), as ``monitoring.alerts`` and ``monitoring.dashboard`` of the
GpuMonitoring ask.
"""
from typing import Optional, TypedDict

import pulumi
from typing_extensions import NotRequired

from gpuplatform.components.k8s_objects import register
from gpuplatform.components.monitoring import GpuMonitoring
from gpuplatform.components.assembly import BUILT, ComposedComponent


class GpuAlertsArgs(TypedDict):
    monitoring: GpuMonitoring
    """The monitoring the services are attached to (its backend, exporter and switches). Required."""
    services: list
    """The InferenceServices to alert on and chart. Required (may be empty: the cluster-wide alerts remain)."""
    namespace: NotRequired[str]
    """Namespace whose HPAs and series the alerts watch. Default: the first service's."""


class GpuAlerts(ComposedComponent, pulumi.ComponentResource):
    """Alerts (HPA cannot read its metric, HPA at max, metric series absent, custom metrics API down, GPU XID and
    memory, SLO error-budget burn) and the autoscaling dashboard for the services of one GpuMonitoring."""

    def __init__(self, name: str, args: GpuAlertsArgs, opts: Optional[pulumi.ResourceOptions] = None):
        from gpuplatform.components.args import ArgsIssue, check_args, component_label, raise_for
        from gpuplatform.components.assembly import checking
        from gpuplatform.components.inference_service import InferenceService

        label = component_label("GpuAlerts", name)
        with checking(self, label) as outcome:
            raise_for(check_args("GpuAlerts", name, args, GpuAlertsArgs))
            monitoring: GpuMonitoring = args["monitoring"]
            services = list(args["services"])
            raise_for([ArgsIssue(f"{label} args.services[{i}]", f"a {type(s).__name__}: expected an InferenceService "
                                 f"attached to {monitoring.label}") for i, s in enumerate(services)
                       if not isinstance(s, InferenceService) or s.monitoring is not monitoring])
        if not outcome.build:
            return
        super().__init__("gpuplatform:index:GpuAlerts", name, {"services": [s.workload.name for s in services]},
                         opts)
        outcome.restore()
        namespace = args.get("namespace") or (services[0].context.namespace if services else "default")
        cfg = monitoring.cluster.view(
            [p.spec for p in monitoring.cluster.node_pools], monitoring.spec, [s.workload for s in services],
            namespace=namespace)
        mon = monitoring.spec
        child = pulumi.ResourceOptions(parent=self)
        if mon.backend == "self-hosted":
            if mon.alerts:
                register(f"{name}-alerts", GpuMonitoring.prometheus_rule(cfg), pulumi.ResourceOptions.merge(
                    child, pulumi.ResourceOptions(depends_on=[monitoring.alert_rule_owner])))
            if mon.dashboard:
                register(f"{name}-dashboard", GpuMonitoring.dashboard_config_map(cfg), pulumi.ResourceOptions.merge(
                    child, pulumi.ResourceOptions(depends_on=[monitoring.dashboard_owner])))
        elif mon.alerts:
            import pulumi_alicloud as alicloud

            ali = pulumi.ResourceOptions.merge(monitoring._arms_alert_opts, pulumi.ResourceOptions(parent=self))
            _, slo_alerts = GpuMonitoring.slo_rules(cfg, recorded=False)
            for a in GpuMonitoring.alert_list(cfg) + slo_alerts:
                alicloud.arms.PrometheusAlertRule(
                    f"{name}-alert-{a.key.lower().replace('_', '-')}", cluster_id=monitoring.cluster.cluster_id,
                    prometheus_alert_rule_name=a.key, expression=a.expr, duration=a.duration.rstrip("m"),
                    message=a.summary,
                    labels=[{"name": k, "value": v} for k, v in (("severity", a.severity), *a.labels)],
                    **({"annotations": [{"name": "description", "value": a.description}]} if a.description else {}),
                    opts=ali)
        BUILT.append(self)  # for the tools that read a composed program (components/assembly.py)
        self.register_outputs({})
