"""GpuMonitoring: from GPU exporters to the ``custom.metrics.k8s.io`` API the HPAs read.

* ``arms``: ACK managed Prometheus (the ``arms-prometheus`` add-on, installed by the cluster component); its
  intranet HTTP API URL and token are read with ``arms.get_prometheus_output``; the ACK GPU exporter gets
  tolerations for tainted GPU pools; ``ack-alibaba-cloud-metrics-adapter`` serves the generated rules; alerts
  become ARMS alert rules.
* ``self-hosted``: kube-prometheus-stack (selectors open to every monitor), dcgm-exporter (standalone chart, or
  the GPU Operator's, or fake-gpu-operator's exporter), prometheus-adapter with the generated rules and RBAC
  narrowed to what it needs; alerts as a PrometheusRule; a Grafana dashboard ConfigMap.

Monitors and rules are custom resources of CRDs the Prometheus release installs, so they depend on it.
"""
from typing import Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s
from typing_extensions import NotRequired

from gpuplatform.catalogs.kubernetes import KEDA_API, PROMETHEUS_OPERATOR_API
from gpuplatform.catalogs.kubernetes import api_group
from gpuplatform.catalogs.versions import ARMS_GPU_EXPORTER, MONITOR_LABELS, PROMETHEUS_HOST
from gpuplatform.catalogs.versions import chart
from gpuplatform.catalogs.versions import in_cluster_prometheus_url
from gpuplatform.catalogs.ack import ARMS_ADDON
from gpuplatform.components.alerts import alerts, dashboard_json, prometheus_rule_groups
from gpuplatform.components.slo_alerts import slo_rule_group, slo_rules
from gpuplatform.components.cluster import GpuCluster
from gpuplatform.components.config import PlatformConfig
from gpuplatform.components.gpu_software import release
from gpuplatform.components.k8s_objects import namespace, register
from gpuplatform.components.metric_sources import source_for, used_sources
from gpuplatform.components.releases import uses_cert_manager
from gpuplatform.components.validation import kubernetes_version
from gpuplatform.components.assembly import BUILT, ComposedComponent
# the pure values builders live in monitoring_values.py (placement reads them); named here as before
from gpuplatform.components.monitoring_values import (ADAPTER_SA, MONITORING_NS, _unique,  # noqa: F401
                                                      ack_adapter_values, adapter_replicas, dcgm_exporter_values,
                                                      generated_rules, gpu_pool_tolerations,
                                                      kube_prometheus_stack_values, managed_control_plane,
                                                      prometheus_adapter_values)



def arms_instance(cluster_id: str, instances: Optional[list], url_given: bool = False):
    """The ARMS Prometheus instance of the cluster, or a clear error when the lookup found none (unless the stack
    names the Prometheus URL itself: then there is no token to send)."""
    if not instances and url_given:
        return None
    if not instances:
        raise pulumi.RunError(
            f"monitoring.backend 'arms': no ARMS Prometheus instance found for cluster '{cluster_id}'. The "
            "arms-prometheus add-on creates it; check the add-on in the ACK console (Operations > Add-ons), or "
            "set monitoring.prometheusUrl to the instance's HTTP API URL")
    return instances[0]


def adapter_rbac_objects() -> list[dict]:
    """What prometheus-adapter needs as an aggregated API server: delegated authn/authz, the requestheader CA,
    and read access to the objects it maps series onto. The HPA controller's own bootstrap role already reads
    custom.metrics.k8s.io, so no wildcard role is bound."""
    sa = [{"kind": "ServiceAccount", "name": ADAPTER_SA, "namespace": MONITORING_NS}]
    rbac = "rbac.authorization.k8s.io/v1"
    return [
        {"apiVersion": rbac, "kind": "ClusterRoleBinding", "metadata": {"name": f"{ADAPTER_SA}:system:auth-delegator"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:auth-delegator"},
         "subjects": sa},
        {"apiVersion": rbac, "kind": "RoleBinding",
         "metadata": {"name": f"{ADAPTER_SA}-auth-reader", "namespace": "kube-system"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                     "name": "extension-apiserver-authentication-reader"},
         "subjects": sa},
        {"apiVersion": rbac, "kind": "ClusterRole", "metadata": {"name": f"{ADAPTER_SA}-resource-reader"},
         "rules": [{"apiGroups": [""], "resources": ["namespaces", "pods", "services", "nodes"],
                    "verbs": ["get", "list", "watch"]}]},
        {"apiVersion": rbac, "kind": "ClusterRoleBinding", "metadata": {"name": f"{ADAPTER_SA}-resource-reader"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": f"{ADAPTER_SA}-resource-reader"},
         "subjects": sa},
    ]


def simulated_exporter_service_monitor(cfg: PlatformConfig) -> dict:
    """fake-gpu-operator ships the exporter Service but no ServiceMonitor."""
    fake = chart("fake-gpu-operator")
    return {"apiVersion": PROMETHEUS_OPERATOR_API, "kind": "ServiceMonitor",
            "metadata": {"name": "nvidia-dcgm-exporter", "namespace": fake.namespace, "labels": dict(MONITOR_LABELS)},
            "spec": {"selector": {"matchLabels": {"app": "nvidia-dcgm-exporter"}},
                     "endpoints": [{"port": "gpu-metrics", "interval": cfg.monitoring.intervals.scrape,
                                    "honorLabels": True}]}}


ADOPTED_RELEASE_IGNORED = ("chart", "version", "repositoryOpts", "values", "timeout")
"""Inputs of ours an installed release differs in: the import must find no difference (pulumi/pulumi
``pkg/resource/deploy/step.go`` ``ImportStep``: "inputs to import do not match the existing resource")."""


def adopt_release_options(c) -> pulumi.ResourceOptions:
    """Import the release a guide installed (pulumi-kubernetes reads a Helm release by ``<namespace>/<name>``:
    provider/pkg/provider/helm_release.go ``Read``/``importRelease``) rather than install a second one."""
    return pulumi.ResourceOptions(import_=f"{c.namespace}/{c.release}", ignore_changes=list(ADOPTED_RELEASE_IGNORED))


def merge_tolerations(current: list[dict], ours: list[dict]) -> list[dict]:
    """The DaemonSet's tolerations in their order, then ours it does not already have."""
    return _unique([*current, *ours])


def _pod_tolerations(spec) -> list[dict]:
    """Tolerations of a DaemonSet spec as read back (the SDK's typed output objects), in API field names."""
    def field(obj, snake: str, camel: str):
        if obj is None:
            return None
        if hasattr(type(obj), snake):  # typed output: a property per field
            return getattr(obj, snake)
        return obj.get(camel) if isinstance(obj, dict) else None

    pod = field(field(spec, "template", "template"), "spec", "spec")
    out = []
    for t in field(pod, "tolerations", "tolerations") or []:
        item = {"key": field(t, "key", "key"), "operator": field(t, "operator", "operator"),
                "value": field(t, "value", "value"), "effect": field(t, "effect", "effect"),
                "tolerationSeconds": field(t, "toleration_seconds", "tolerationSeconds")}
        out.append({k: v for k, v in item.items() if v is not None})
    return out


class GpuMonitoringArgs(TypedDict):
    cluster: GpuCluster
    """The cluster to monitor (its provider, kind, version; on ACK its id and region for ARMS). Required."""
    node_pools: NotRequired[list]
    """The GpuNodePools whose GPU nodes the exporter must reach (their taints are tolerated) and whose GPU
    software decides the exporter (the GPU Operator brings its own). Default: every pool built on the cluster so
    far."""
    monitoring: NotRequired[dict]
    """Backend, exporter, adapter, intervals, the metrics the adapter serves (``metrics``), KEDA (``keda``),
    alerts, dashboard and per-release values, in the stack-file format (``gpu-platform:monitoring``). Default:
    self-hosted kube-prometheus-stack, dcgm-exporter, prometheus-adapter serving every GPU metric of the
    exporter, no KEDA."""
    grafana_admin_password: NotRequired[pulumi.Input[str]]
    """Grafana admin password (self-hosted), registered as a secret. Default: generated by the chart."""


class GpuMonitoring(ComposedComponent, pulumi.ComponentResource):
    """Prometheus, GPU exporters, the custom metrics adapter and KEDA for one cluster. What it serves is its
    contract with the services attached to it: :attr:`exporter`, :attr:`adapter`, :attr:`served` (metric name ->
    the series, custom metrics API name and unit its adapter rules produce), :attr:`keda_installed`."""

    prometheus_url: pulumi.Output[str]
    served: dict
    """Catalog metric name -> :class:`~catalogs.metrics.MetricSource` the adapter serves it from (``api_name``,
    ``served_unit``)."""

    def __init__(self, name: str, args: GpuMonitoringArgs, opts: Optional[pulumi.ResourceOptions] = None):
        from gpuplatform.components.args import ArgsIssue, check_args, component_label, raise_for, reprefix
        from gpuplatform.components.assembly import checking, parse_section
        from gpuplatform.components.config import Monitoring
        from gpuplatform.components.errors import ConfigError
        from gpuplatform.components.metric_sources import default_served_metrics, served_source
        from gpuplatform.components.node_pool import GpuNodePool
        from gpuplatform.components.validation import validate as _validate

        label = component_label("GpuMonitoring", name)
        with checking(self, label) as outcome:
            raise_for(check_args("GpuMonitoring", name, args, GpuMonitoringArgs))
            try:
                # its own keys first: they are checked whatever state its cluster and pools are in
                mon = parse_section(Monitoring, args.get("monitoring") or {}, "monitoring")
            except ConfigError as exc:
                raise_for(reprefix(exc.issues, {"monitoring": f"{label} args.monitoring"}))
            cluster: GpuCluster = args["cluster"]
            pools = list(args["node_pools"]) if "node_pools" in args else list(cluster.node_pools)
            raise_for([ArgsIssue(f"{label} args.node_pools[{i}]", f"a {type(p).__name__}: expected a GpuNodePool of "
                                 f"{cluster.label}") for i, p in enumerate(pools)
                       if not isinstance(p, GpuNodePool) or p.cluster is not cluster])
            paths = {"monitoring": f"{label} args.monitoring", "cluster": f"{cluster.label} args.cluster",
                     **{f"nodePools[{i}]": f"{p.label} args.pool" for i, p in enumerate(pools)}}
            if mon.metrics is None:
                mon = mon.model_copy(update={"metrics": default_served_metrics(mon.exporter)})
            password = args.get("grafana_admin_password")
            cfg = cluster.view([p.spec for p in pools], mon)
            raise_for(reprefix(_validate(cfg, areas=("cluster", "monitoring", "placement")), paths))
            self.cluster = cluster
            self.label = label
            self.spec = mon
            self.exporter: str = mon.exporter
            self.adapter: str = mon.adapter_kind
            self.backend: str = mon.backend
            self.intervals = mon.intervals
            self.served = {m: src for m in mon.metrics if (src := served_source(mon.exporter, m)) is not None}
            self.keda_installed: bool = mon.backend == "self-hosted" and bool(mon.keda)
        if not outcome.build:
            return
        if opts is None or opts.provider is None:
            opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(provider=cluster.provider))
        super().__init__("gpuplatform:index:GpuMonitoring", name, {"backend": mon.backend}, opts)
        outcome.restore()
        self.child = pulumi.ResourceOptions(parent=self)
        self.name = name
        self.kube = kubernetes_version(cfg)
        self.chart_packages = cfg.settings.chart_packages
        self.allow_end_of_life = tuple(cfg.settings.allow_end_of_life_charts)
        self.crd_owners: dict[str, pulumi.Resource] = {}
        """API group -> the release that installs its CRDs (monitors and rules, ScaledObjects wait for it)."""
        self.alert_rule_owner: Optional[pulumi.Resource] = None
        """What a PrometheusRule waits for: the release that serves its CRD (self-hosted)."""
        self.dashboard_owner: Optional[pulumi.Resource] = None
        if mon.backend == "self-hosted":
            gpu_operator = any(p.gpu_software_kind == "gpu-operator" for p in pools)
            self._self_hosted(cfg, gpu_operator, password)
        else:
            self._arms(cfg, cluster.cluster_id, cluster.alicloud_provider, cluster.require_addons(ARMS_ADDON))
        BUILT.append(self)  # for the tools that read a composed program (components/assembly.py)
        self.register_outputs({"prometheus_url": self.prometheus_url})

    def _opts(self, *depends: pulumi.Resource) -> pulumi.ResourceOptions:
        """A release or object that waits for ``depends`` and for the cluster's system pool (a Helm release waits
        for its pods, which run there)."""
        return pulumi.ResourceOptions.merge(self.child, pulumi.ResourceOptions(
            depends_on=[*depends, *self.cluster.system_nodes]))

    def _namespace(self, key: str, name: str, pod_security: str) -> pulumi.Resource:
        return register(f"{self.name}-{key}", namespace(name, pod_security), self.child)

    def _cert_manager(self, cfg: PlatformConfig) -> list[pulumi.Resource]:
        """cert-manager, which issues the adapter's serving certificate (its Certificate and Issuers come with the
        adapter chart, so the adapter release waits for this one)."""
        if not uses_cert_manager(cfg):
            return []
        cm_chart = chart("cert-manager")
        cm_ns = self._namespace("cert-manager-namespace", cm_chart.namespace, "restricted")
        return [release(f"{self.name}-cert-manager", "cert-manager", {"crds": {"enabled": True}}, {},
                        self._opts(cm_ns), namespace=cm_chart.namespace, kubernetes=self.kube, packages=self.chart_packages,
                    allow_end_of_life=self.allow_end_of_life)]

    def _adapter_rbac(self, opts: pulumi.ResourceOptions) -> None:
        for obj in adapter_rbac_objects():
            register(f"{self.name}-{obj['kind'].lower()}-{obj['metadata']['name'].replace(':', '-')}", obj, opts)

    # ------------------------------------------------------------------ self-hosted
    def _self_hosted(self, cfg: PlatformConfig, gpu_operator_installed: bool, grafana_password=None) -> None:
        mon, n = cfg.monitoring, self.name
        # node-exporter (host network/PID/paths) and dcgm-exporter (SYS_ADMIN, pod-resources hostPath) need a
        # privileged namespace; inference workloads stay in their restricted namespace
        ns = self._namespace("namespace", MONITORING_NS, "privileged")
        if mon.prometheus_url:
            # an existing Prometheus (e.g. ack-prometheus-operator's): install none; its operator already serves
            # the monitoring.coreos.com CRDs our monitors and rules use, so they wait for nothing of ours
            kps = ns
            self.crd_owners = {}
            self.prometheus_url = pulumi.Output.from_input(mon.prometheus_url)
        else:
            kps = release(f"{n}-kube-prometheus-stack", "kube-prometheus-stack",
                          kube_prometheus_stack_values(cfg, grafana_password),
                          mon.helm_values.kube_prometheus_stack, self._opts(ns), namespace=MONITORING_NS,
                          kubernetes=self.kube, packages=self.chart_packages,
                    allow_end_of_life=self.allow_end_of_life)
            self.crd_owners = {api_group(PROMETHEUS_OPERATOR_API): kps}
            self.prometheus_url = pulumi.Output.from_input(in_cluster_prometheus_url())
        simulated = getattr(cfg.cluster, "simulate_gpus", False)
        if mon.exporter == "dcgm" and simulated:
            register(f"{n}-simulated-exporter-monitor", simulated_exporter_service_monitor(cfg), self._opts(kps))
        elif mon.exporter == "dcgm" and not gpu_operator_installed:
            release(f"{n}-dcgm-exporter", "dcgm-exporter", dcgm_exporter_values(cfg), mon.helm_values.dcgm_exporter,
                    self._opts(kps), namespace=MONITORING_NS, kubernetes=self.kube, packages=self.chart_packages,
                    allow_end_of_life=self.allow_end_of_life)
        adapter_deps: list[pulumi.Resource] = [ns, *self._cert_manager(cfg)]
        self._adapter_rbac(self._opts(ns))
        self.adapter = release(f"{n}-prometheus-adapter", "prometheus-adapter",
                               prometheus_adapter_values(cfg, mon.prometheus_url or f"http://{PROMETHEUS_HOST}"),
                               mon.helm_values.prometheus_adapter, self._opts(*adapter_deps),
                               namespace=MONITORING_NS, kubernetes=self.kube, packages=self.chart_packages,
                    allow_end_of_life=self.allow_end_of_life)
        if mon.installs_keda(cfg.workloads):
            keda_chart = chart("keda")
            keda_ns = self._namespace("keda-namespace", keda_chart.namespace, "restricted")
            self.keda = release(f"{n}-keda", "keda", {}, mon.helm_values.keda, self._opts(keda_ns),
                                namespace=keda_chart.namespace, kubernetes=self.kube, packages=self.chart_packages,
                    allow_end_of_life=self.allow_end_of_life)
            self.crd_owners[api_group(KEDA_API)] = self.keda
        # the alerts and the dashboard are per service: GpuAlerts registers them once the services exist
        self.alert_rule_owner, self.dashboard_owner = kps, ns

    # ------------------------------------------------------------------ ARMS
    def _arms(self, cfg: PlatformConfig, cluster_id: pulumi.Input[str],
              alicloud_provider: pulumi.ProviderResource, arms_installed: list) -> None:
        import pulumi_alicloud as alicloud

        mon, n = cfg.monitoring, self.name
        ali = pulumi.ResourceOptions(parent=self, provider=alicloud_provider, depends_on=arms_installed)
        # The ARMS instance (keyed by the ACK cluster id) exists once the arms-prometheus add-on is installed:
        # before that the lookup finds nothing. An invoke's depends_on holds it back until those resources are
        # created (pulumi/pulumi sdk/python/lib/pulumi/runtime/invoke.py), and while they are pending in a
        # preview the result is unknown rather than empty.
        prom = alicloud.arms.get_prometheus_output(
            ids=[cluster_id], enable_details=True,
            opts=pulumi.InvokeOutputOptions(parent=self, provider=alicloud_provider, depends_on=arms_installed))
        details = prom.apply(lambda found: arms_instance((found.ids or ["?"])[0], found.prometheis,
                                                         url_given=bool(mon.prometheus_url)))
        # the URL carries the account id and the cluster path: a secret wherever it is registered or exported
        url = pulumi.Output.secret(mon.prometheus_url or details.apply(lambda d: d.http_api_intra_url))
        token = pulumi.Output.secret(details.apply(lambda d: (d.auth_token or "") if d else ""))
        self.prometheus_url = url
        tolerations = gpu_pool_tolerations(cfg)
        if tolerations and mon.exporter == "ack":
            self._tolerate_gpu_taints(tolerations, arms_installed)
        if mon.adapter_kind == "ack-alibaba-cloud-metrics-adapter":
            c = chart("ack-alibaba-cloud-metrics-adapter")
            self.adapter = release(f"{n}-ack-metrics-adapter", c.release,
                                   ack_adapter_values(cfg, url, token), mon.helm_values.ack_metrics_adapter,
                                   pulumi.ResourceOptions.merge(self._opts(), adopt_release_options(c))
                                   if mon.adopt_adapter_release else self._opts(),
                                   namespace=c.namespace, kubernetes=self.kube, packages=self.chart_packages,
                    allow_end_of_life=self.allow_end_of_life)
        else:
            ns = self._namespace("namespace", MONITORING_NS, "restricted")
            self._adapter_rbac(self._opts(ns))
            self.adapter = release(f"{n}-prometheus-adapter", "prometheus-adapter", prometheus_adapter_values(cfg, url),
                                   mon.helm_values.prometheus_adapter, self._opts(ns, *self._cert_manager(cfg)),
                                   namespace=MONITORING_NS, kubernetes=self.kube, packages=self.chart_packages,
                    allow_end_of_life=self.allow_end_of_life)
        self._arms_alert_opts = ali

    def _tolerate_gpu_taints(self, tolerations: list[dict], arms_installed: list) -> None:
        """Let ARMS's GPU exporter onto tainted GPU nodes without taking its own tolerations away.

        ``tolerations`` is an atomic list (kubernetes/api core/v1 types.go ``+listType=atomic``): a server-side
        apply replaces the whole list and makes us its only owner, and deleting the patch relinquishes what we
        own, which removes the list (pulumi-kubernetes provider/pkg/ssa/actions.go ``Relinquish``). So the patch
        applies the DaemonSet's current tolerations plus ours, read after the add-on that creates it, and is
        retained on delete so a destroy leaves the exporter as it runs."""
        ns_name, ds_name = ARMS_GPU_EXPORTER
        after_addon = self._opts(*arms_installed)
        current = k8s.apps.v1.DaemonSet.get(f"{self.name}-gpu-exporter", f"{ns_name}/{ds_name}", opts=after_addon)
        merged = current.spec.apply(lambda spec: merge_tolerations(_pod_tolerations(spec), tolerations))
        k8s.apps.v1.DaemonSetPatch(
            f"{self.name}-gpu-exporter-tolerations",
            metadata={"name": ds_name, "namespace": ns_name, "annotations": {"pulumi.com/patchForce": "true"}},
            spec={"template": {"spec": {"tolerations": merged}}},
            opts=pulumi.ResourceOptions.merge(after_addon, pulumi.ResourceOptions(retain_on_delete=True)))

    # ------------------------------------------------------------------ shared builders
    @staticmethod
    def alert_list(cfg: PlatformConfig):
        hpas = [w.name for w in cfg.workloads if w.autoscaling.autoscaler == "hpa"]
        return alerts(cfg.settings.namespace, hpas, used_sources(cfg), cfg.monitoring.exporter)

    @staticmethod
    def prometheus_rule(cfg: PlatformConfig) -> dict:
        return {"apiVersion": PROMETHEUS_OPERATOR_API, "kind": "PrometheusRule",
                "metadata": {"name": "gpu-platform-autoscaling", "namespace": MONITORING_NS,
                             "labels": dict(MONITOR_LABELS)},
                "spec": {"groups": prometheus_rule_groups(GpuMonitoring.alert_list(cfg))
                         + slo_rule_group(*GpuMonitoring.slo_rules(cfg, recorded=True))}}

    @staticmethod
    def slo_rules(cfg: PlatformConfig, recorded: bool):
        """Recording rules and burn-rate alerts of the workloads with an SLO (components/slo_alerts.py); ARMS
        takes no recording rules, so there ``recorded`` is false and the alerts carry the SLI themselves."""
        return slo_rules(cfg.workload_namespace, cfg.workloads, lambda w, m: source_for(cfg, w, m), recorded)

    @staticmethod
    def dashboard_config_map(cfg: PlatformConfig) -> dict:
        sources = {w.name: {t.metric: source_for(cfg, w, t.metric) for t in w.autoscaling.metrics}
                   for w in cfg.workloads}
        body = dashboard_json(cfg.settings.namespace, cfg.workloads, sources, cfg.monitoring.intervals.rule_window)
        return {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "gpu-platform-dashboard", "namespace": MONITORING_NS,
                             "labels": {"grafana_dashboard": "1"}},
                "data": {"gpu-platform-autoscaling.json": body}}
