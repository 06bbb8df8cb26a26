"""GpuPlatform: the whole environment a stack config describes, composed from the other components.

Order matters only where Kubernetes needs it: the workload namespace and the monitoring CRDs exist before the
objects that use them; node pools and GPU software exist before the Deployments whose pods ask for GPUs. Nothing
else waits: a Service does not sit behind a node pool or a Helm release (see ``InferenceServiceArgs.wait_for``).
"""
from typing import Optional, TypedDict

import pulumi

from gpuplatform.catalogs.ack import AUTO_REPAIR_ADDONS
from gpuplatform.catalogs.sharing import ACK_LEGACY_SHARING_ADDON, ACK_SHARING_ADDON
from gpuplatform.catalogs.versions import MONITOR_LABELS, chart
from gpuplatform.components.cluster import GpuCluster
from gpuplatform.components.config import PlatformConfig, duration_seconds
from gpuplatform.components.gpu_software import fake_gpu_operator_values, gpu_operator_values, release
from gpuplatform.components.inference_service import InferenceService
from gpuplatform.components.k8s_objects import namespace, register
from gpuplatform.components.monitoring import GpuMonitoring
from gpuplatform.components.node_pool import GpuNodePool
from gpuplatform.components.pools import all_pool_facts


class GpuPlatformArgs(TypedDict):
    config: PlatformConfig
    """The validated stack config (:func:`components.validation.load`). Required."""


def required_addons(cfg: PlatformConfig) -> list[str]:
    """ACK add-ons the stack installs on the running cluster (``KubernetesAddon``): managed Prometheus for arms,
    the GPU sharing installer for cGPU pools, the node problem detector and lifecycle controller for managed
    (auto-repair) pools. The network plugin and CSI driver come with a new cluster (``catalogs/ack.py``)."""
    if not cfg.is_ack:
        return []
    addons = []
    if cfg.monitoring.backend == "arms":
        addons.append("arms-prometheus")
    if any(cfg.pool_managed(p) for p in cfg.node_pools):
        addons += list(AUTO_REPAIR_ADDONS)
    if any(p.sharing.mode == "cgpu" for p in cfg.node_pools):
        addons.append(ACK_SHARING_ADDON if cfg.is_ack_pro else ACK_LEGACY_SHARING_ADDON)
    return addons


def uses_gpu_operator(cfg: PlatformConfig) -> bool:
    """MIG pools on a non-ACK cluster with real GPUs get the NVIDIA GPU Operator (mig-manager, dcgm-exporter)."""
    return (not cfg.is_ack and not getattr(cfg.cluster, "simulate_gpus", False)
            and any(p.sharing.mode == "mig" for p in cfg.node_pools))


class GpuPlatform(pulumi.ComponentResource):
    """Cluster, GPU node pools, GPU software, monitoring and inference services of one environment."""

    def __init__(self, name: str, args: GpuPlatformArgs, opts: Optional[pulumi.ResourceOptions] = None):
        cfg: PlatformConfig = args["config"]
        s = cfg.settings
        super().__init__("gpuplatform:index:GpuPlatform", name, {
            "environment": s.environment, "kubernetesVersion": cfg.cluster.kubernetes_version,
            "clusterKind": cfg.cluster.kind, "allowPublicEndpoints": s.allow_public_endpoints,
            "protect": s.protect_resources}, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.cluster = GpuCluster(f"{name}-cluster", {
            "cluster": cfg.cluster.model_dump(by_alias=True), "addons": required_addons(cfg),
            "protect": s.protect_resources,
            **({"kubeconfig": pulumi.Output.secret(cfg.kubeconfig.get_secret_value())} if cfg.kubeconfig else {})},
            opts=child)
        facts = all_pool_facts(cfg)
        self.pools = {
            p.name: GpuNodePool(f"{name}-{p.name}", {
                "pool": {**p.model_dump(by_alias=True), "autoRepair": cfg.pool_managed(p)},
                "facts": facts[p.name], "protect": s.protect_resources,
                **({"cluster_id": self.cluster.cluster_id, "vswitch_ids": self.cluster.vswitch_ids,
                    "alicloud_provider": self.cluster.alicloud_provider} if cfg.is_ack else {})}, opts=child)
            for p in cfg.node_pools}
        in_cluster = pulumi.ResourceOptions(parent=self, provider=self.cluster.provider,
                                            depends_on=[pl.pool for pl in self.pools.values() if pl.pool])
        gpu_software = self._gpu_software(name, cfg, facts, in_cluster)
        self.monitoring = GpuMonitoring(f"{name}-monitoring", {
            "config": cfg, "cluster_id": self.cluster.cluster_id,
            **({"alicloud_provider": self.cluster.alicloud_provider} if cfg.is_ack else {}),
            "gpu_operator_installed": uses_gpu_operator(cfg)}, opts=in_cluster)
        # the namespace needs the cluster (through the provider), not its GPU nodes
        self.namespace = register(f"{name}-workloads-namespace", namespace(s.namespace, "restricted", warn=True),
                                  pulumi.ResourceOptions(parent=self, provider=self.cluster.provider)
                                  ) if s.create_namespace else None
        wait_for = {
            "namespace": [self.namespace] if self.namespace else [],
            "gpu_nodes": [*in_cluster.depends_on, *gpu_software],
            "crd_owners": {group: [owner] for group, owner in self.monitoring.crd_owners.items()}}
        # the same public args a reusing project passes: one way to build a service, validated the same way
        shared_args = {"namespace": s.namespace, "kubernetes_version": cfg.cluster.kubernetes_version,
                       "on_ack": cfg.is_ack, "monitoring": cfg.monitoring.model_dump(by_alias=True, exclude_none=True),
                       "allow_public_endpoints": s.allow_public_endpoints, "wait_for": wait_for}
        pools = {p.name: p.model_dump(by_alias=True, exclude_none=True) for p in cfg.node_pools}
        service_opts = pulumi.ResourceOptions(parent=self, provider=self.cluster.provider)
        self.services = {}
        prometheus_url = self.monitoring.prometheus_url
        for w in cfg.workloads:
            self.services[w.name] = InferenceService(f"{name}-{w.name}", {
                "workload": w.model_dump(by_alias=True, exclude_none=True), "node_pool": pools[w.node_pool],
                **shared_args}, opts=service_opts)
        self.prometheus_url = prometheus_url
        self.register_outputs({"cluster_id": self.cluster.cluster_id, "prometheus_url": prometheus_url})

    def _gpu_software(self, name: str, cfg: PlatformConfig, facts: dict, opts: pulumi.ResourceOptions) -> list:
        """GPU Operator for MIG on non-ACK clusters; fake-gpu-operator for simulated pools. On ACK the GPU
        stack is managed by ACK (the sharing installer is a cluster add-on)."""
        if cfg.is_ack:
            return []
        out = []
        iv = cfg.monitoring.intervals
        if getattr(cfg.cluster, "simulate_gpus", False):
            c = chart("fake-gpu-operator")
            ns = register(f"{name}-fake-gpu-operator-namespace", namespace(c.namespace, "privileged"), opts)
            out.append(release(f"{name}-fake-gpu-operator", "fake-gpu-operator",
                               fake_gpu_operator_values(list(facts.values())), {},
                               pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[ns]))))
        elif uses_gpu_operator(cfg):
            c = chart("gpu-operator")
            ns = register(f"{name}-gpu-operator-namespace", namespace(c.namespace, "privileged"), opts)
            out.append(release(f"{name}-gpu-operator", "gpu-operator",
                               gpu_operator_values([f for f in facts.values()], MONITOR_LABELS, iv.scrape,
                                                   duration_seconds(iv.exporter_collect) * 1000),
                               cfg.monitoring.helm_values.gpu_operator,
                               pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[ns]))))
        return out
