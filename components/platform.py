"""GpuPlatform: the whole environment a stack config describes, composed from the public components.

It builds each child through the same constructors and args a consumer uses (docs/reuse.md), so every stack
exercises the public API: GpuCluster, a GpuNodePool per pool, GpuSoftware where the pools need it, GpuMonitoring,
WorkloadNamespaces, an InferenceService per workload and GpuAlerts over them. Order matters only where
Kubernetes needs it, and each component waits for what its own children need (the namespace, the GPU nodes,
the CRDs); nothing else waits.
"""
from typing import Optional, TypedDict, Union

import pulumi

from gpuplatform.components.alerting import GpuAlerts
from gpuplatform.components.assembly import ComposedComponent
from gpuplatform.components.cluster import GpuCluster
from gpuplatform.components.config import PlatformConfig
from gpuplatform.components.errors import ConfigError
from gpuplatform.components.gpu_software import GpuSoftware, gpu_software_kind
from gpuplatform.components.inference_service import InferenceService
from gpuplatform.components.k8s_objects import register
from gpuplatform.components.warm_set import models_of
from gpuplatform.components.warm_set_objects import warm_set_namespace, warm_set_objects
from gpuplatform.components.migrations import moved_from
from gpuplatform.components.monitoring import GpuMonitoring
from gpuplatform.components.namespace import WorkloadNamespace
from gpuplatform.components.node_pool import GpuNodePool


class GpuPlatformArgs(TypedDict):
    config: Union[dict, PlatformConfig]
    """The ``gpu-platform`` namespace in the stack-file format (``settings``, ``cluster``, ``nodePools``,
    ``monitoring``, ``workloads``, ``kubeconfig``, ``grafanaAdminPassword``), validated as a stack file is; or a
    config :func:`components.validation.load` returned. Required."""


def served_metrics(cfg: PlatformConfig) -> list[str]:
    """What the stack's adapter serves: ``monitoring.metrics`` where the stack names them, else the metrics of its
    HPAs in first-use order (KEDA queries Prometheus itself)."""
    if cfg.monitoring.metrics is not None:
        return list(cfg.monitoring.metrics)
    names = [t.metric for w in cfg.workloads if w.autoscaling.autoscaler == "hpa" for t in w.autoscaling.metrics]
    return list(dict.fromkeys(names))


def monitoring_args(cfg: PlatformConfig) -> dict:
    """The stack's monitoring as a GpuMonitoring's ``monitoring`` arg, with what a stack derives from its workloads
    (the metrics served, whether KEDA is installed) made explicit."""
    mon = cfg.monitoring.model_dump(by_alias=True, exclude_none=True)
    mon["metrics"] = served_metrics(cfg)
    mon["keda"] = cfg.monitoring.installs_keda(cfg.workloads)
    return mon


class GpuPlatform(ComposedComponent, pulumi.ComponentResource):
    """Cluster, GPU node pools, GPU software, monitoring and inference services of one environment."""

    def __init__(self, name: str, args: GpuPlatformArgs, opts: Optional[pulumi.ResourceOptions] = None):
        from gpuplatform.components.args import ArgsIssue, check_args, component_label, raise_for
        from gpuplatform.components.assembly import checking
        from gpuplatform.components.validation import load

        label = component_label("GpuPlatform", name)
        with checking(self, label) as outcome:
            raise_for(check_args("GpuPlatform", name, args, GpuPlatformArgs))
            cfg = args["config"]
            if not isinstance(cfg, PlatformConfig):
                try:
                    cfg = load(dict(cfg))
                except ConfigError as exc:
                    raise_for([ArgsIssue(f"{label} args.config.{i.path}", i.message) for i in exc.issues])
        if not outcome.build:
            return
        s = cfg.settings
        props = {"environment": s.environment, "kubernetesVersion": cfg.cluster.kubernetes_version,
                 "clusterKind": cfg.cluster.kind, "allowPublicEndpoints": s.allow_public_endpoints,
                 "protect": s.protect_resources}
        super().__init__("gpuplatform:index:GpuPlatform", name, props, opts)
        outcome.restore()
        child = pulumi.ResourceOptions(parent=self)
        self.cluster = GpuCluster(f"{name}-cluster", {
            "cluster": cfg.cluster.model_dump(by_alias=True, exclude_none=True), "environment": s.environment,
            **({"protect": s.protect} if s.protect is not None else {}),
            "allow_public_endpoints": s.allow_public_endpoints,
            **({"allow_end_of_life_charts": list(s.allow_end_of_life_charts)} if s.allow_end_of_life_charts else {}),
            **({"chart_packages": s.chart_packages} if s.chart_packages else {}),
            **({"kubeconfig": pulumi.Output.secret(cfg.kubeconfig.get_secret_value())} if cfg.kubeconfig else {})},
            opts=child)
        self.pools = {p.name: GpuNodePool(f"{name}-{p.name}", {
            "cluster": self.cluster, "pool": p.model_dump(by_alias=True, exclude_none=True)}, opts=child)
            for p in cfg.node_pools}
        pools = list(self.pools.values())
        in_cluster = pulumi.ResourceOptions(parent=self, provider=self.cluster.provider)
        self.gpu_software = None
        if gpu_software_kind(self.cluster.cloud, self.cluster.simulate_gpus, [p.sharing.mode for p in cfg.node_pools]):
            # its releases were the platform's own children before 0.2.0 (components/migrations.py)
            self.gpu_software = GpuSoftware(f"{name}-gpu-software", {
                "cluster": self.cluster, "node_pools": pools,
                "intervals": cfg.monitoring.intervals.model_dump(by_alias=True),
                "helm_values": cfg.monitoring.helm_values.gpu_operator},
                opts=pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(
                    transformations=[moved_from(self, "gpuplatform:index:GpuSoftware", f"{name}-",
                                                f"{name}-gpu-software-")])))
        self.monitoring = GpuMonitoring(f"{name}-monitoring", {
            "cluster": self.cluster, "node_pools": pools, "monitoring": monitoring_args(cfg),
            **({"grafana_admin_password": cfg.grafana_admin_password.get_secret_value()}
               if cfg.grafana_admin_password else {})}, opts=in_cluster)
        namespaces = {}
        if s.create_namespace:
            moved = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(
                transformations=[moved_from(self, "gpuplatform:index:WorkloadNamespace")]))
            namespaces[s.namespace] = WorkloadNamespace(f"{name}-workloads", {
                "cluster": self.cluster, "name": s.namespace}, opts=moved)
            if any(w.run_as_root for w in cfg.workloads):
                namespaces[s.root_namespace_name] = WorkloadNamespace(f"{name}-root-workloads", {
                    "cluster": self.cluster, "name": s.root_namespace_name, "pod_security": "baseline"}, opts=moved)
        self.namespace = namespaces.get(s.namespace)
        self.root_namespace = namespaces.get(s.root_namespace_name)
        self.services = {}
        for w in cfg.workloads:
            ns_name = cfg.workload_namespace(w)
            self.services[w.name] = InferenceService(f"{name}-{w.name}", {
                "workload": w.model_dump(by_alias=True, exclude_none=True), "node_pool": self.pools[w.node_pool],
                "monitoring": self.monitoring, "namespace": namespaces.get(ns_name, ns_name)}, opts=in_cluster)
        self.warm_sets = {}
        for pool in cfg.node_pools:
            objects = warm_set_objects(cfg, pool)
            if not objects:
                continue
            # after the models' services: the holders mount their claims and the waker reads their Deployments
            ns = namespaces.get(warm_set_namespace(cfg, pool))
            models = [self.services[w.name] for w in models_of(cfg, pool)]
            deps = ([ns.resource] if ns is not None else []) + models + self.pools[pool.name].gpu_nodes
            self.warm_sets[pool.name] = [
                register(f"{name}-{pool.name}-warm-set-{obj['kind'].lower()}-{obj['metadata']['name']}", obj,
                         pulumi.ResourceOptions(parent=self, provider=self.cluster.provider, depends_on=deps))
                for obj in objects]
        mon = cfg.monitoring
        if mon.alerts or (mon.dashboard and mon.backend == "self-hosted"):
            # the alerts and dashboard were the monitoring's own children before 0.2.0
            self.alerts = GpuAlerts(f"{name}-autoscaling", {
                "monitoring": self.monitoring, "services": list(self.services.values()), "namespace": s.namespace},
                opts=pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(
                    transformations=[moved_from(self.monitoring, "gpuplatform:index:GpuAlerts", f"{name}-monitoring-",
                                                f"{name}-autoscaling-")])))
        self.prometheus_url = self.monitoring.prometheus_url
        # the stack policies read the environment, cluster version and exposure setting from these outputs: they
        # are all AnalyzeStack sees of a component (docs/policies.md, "What the policies see")
        self.register_outputs({**props, "cluster_id": self.cluster.cluster_id, "prometheus_url": self.prometheus_url})
