"""GpuPlatform: the whole environment a stack config describes, composed from the other components.

Order matters only where Kubernetes needs it: the workload namespace and the monitoring CRDs exist before the
objects that use them; node pools and GPU software exist before the Deployments whose pods ask for GPUs. Nothing
else waits: a Service does not sit behind a node pool or a Helm release (see ``InferenceServiceArgs.wait_for``).
"""
from typing import Optional, TypedDict

import pulumi

from gpuplatform.catalogs.ack import ARMS_ADDON, AUTO_REPAIR_ADDONS, INGRESS_ADDON
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
    the GPU sharing installer for cGPU and MIG pools, the node problem detector and lifecycle controller for managed
    (auto-repair) pools, ACK's NGINX controller for nginx Ingresses. The network plugin and CSI driver come with
    a new cluster (``catalogs/ack.py``)."""
    if not cfg.is_ack:
        return []
    addons = []
    if cfg.monitoring.backend == "arms":
        addons.append(ARMS_ADDON)
    if any(cfg.pool_managed(p) for p in cfg.node_pools):
        addons += list(AUTO_REPAIR_ADDONS)
    addons += sorted({a for p in cfg.node_pools for a in sharing_addons(cfg, p.sharing.mode)})
    if any(ingress_addon(cfg, w) for w in cfg.workloads):
        addons.append(INGRESS_ADDON)
    return addons


def ingress_addon(cfg: PlatformConfig, w) -> list[str]:
    """The ACK add-on that serves the workload's Ingress, when the stack installs it."""
    ing = w.exposure.ingress
    return [INGRESS_ADDON] if ing is not None and ing.controller_for(cfg.is_ack) == "addon" else []


def sharing_addons(cfg: PlatformConfig, mode: str) -> list[str]:
    """ACK add-ons a pool's sharing mode needs before its pods get GPUs: cGPU and MIG pools both."""
    if not cfg.is_ack or mode == "exclusive":
        return []
    # every ack.node.gpu.schedule value but "default" (cGPU policies, mig) is served by ack-ai-installer
    # (ACK "labels used by ACK to control GPUs", doc-detail/191140)
    return [ACK_LEGACY_SHARING_ADDON if mode == "cgpu" and not cfg.is_ack_pro else ACK_SHARING_ADDON]


def uses_gpu_operator(cfg: PlatformConfig) -> bool:
    """MIG pools on a non-ACK cluster with real GPUs get the NVIDIA GPU Operator (mig-manager, dcgm-exporter)."""
    return (not cfg.is_ack and not getattr(cfg.cluster, "simulate_gpus", False)
            and any(p.sharing.mode == "mig" for p in cfg.node_pools))


class GpuPlatform(pulumi.ComponentResource):
    """Cluster, GPU node pools, GPU software, monitoring and inference services of one environment."""

    def __init__(self, name: str, args: GpuPlatformArgs, opts: Optional[pulumi.ResourceOptions] = None):
        cfg: PlatformConfig = args["config"]
        s = cfg.settings
        props = {"environment": s.environment, "kubernetesVersion": cfg.cluster.kubernetes_version,
                 "clusterKind": cfg.cluster.kind, "allowPublicEndpoints": s.allow_public_endpoints,
                 "protect": s.protect_resources}
        super().__init__("gpuplatform:index:GpuPlatform", name, props, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.cluster = GpuCluster(f"{name}-cluster", {
            "cluster": cfg.cluster.model_dump(by_alias=True), "addons": required_addons(cfg),
            "protect": s.protect_resources,
            **({"kubeconfig": pulumi.Output.secret(cfg.kubeconfig.get_secret_value())} if cfg.kubeconfig else {})},
            opts=child)
        facts = all_pool_facts(cfg)
        self.pools = {}
        for p in cfg.node_pools:
            # auto repair is carried out by these add-ons: a pool created before them has nodes nobody repairs
            repair = self.cluster.addon_dependencies(*AUTO_REPAIR_ADDONS) if cfg.pool_managed(p) else []
            self.pools[p.name] = GpuNodePool(f"{name}-{p.name}", {
                "pool": {**p.model_dump(by_alias=True), "autoRepair": cfg.pool_managed(p)},
                "facts": facts[p.name], "protect": s.protect_resources, "wait_for": repair,
                **({"cluster_id": self.cluster.cluster_id, "vswitch_ids": self.cluster.vswitch_ids,
                    "alicloud_provider": self.cluster.alicloud_provider} if cfg.is_ack else {})}, opts=child)
        # Nothing below waits for a node pool unless its pods need GPU nodes: a dependency given to a component
        # holds back every child of it, so each child gets only its own (pulumi/pulumi sdk/python
        # runtime/resource.py prepare_resource: parent and dependency URNs are awaited before registering).
        in_cluster = pulumi.ResourceOptions(parent=self, provider=self.cluster.provider)
        gpu_software = self._gpu_software(name, cfg, facts, in_cluster)
        self.monitoring = GpuMonitoring(f"{name}-monitoring", {
            "config": cfg, "cluster_id": self.cluster.cluster_id,
            **({"alicloud_provider": self.cluster.alicloud_provider} if cfg.is_ack else {}),
            "gpu_operator_installed": uses_gpu_operator(cfg),
            "arms_installed": self.cluster.addon_dependencies(ARMS_ADDON)}, opts=in_cluster)
        # the namespace needs the cluster (through the provider), not its GPU nodes
        self.namespace = register(f"{name}-workloads-namespace", namespace(s.namespace, "restricted", warn=True),
                                  pulumi.ResourceOptions(parent=self, provider=self.cluster.provider)
                                  ) if s.create_namespace else None
        # Pod Security labels apply per namespace: root opt-outs get their own baseline namespace, warned and
        # audited at restricted (kubernetes.io/docs/concepts/security/pod-security-admission/)
        self.root_namespace = register(
            f"{name}-root-workloads-namespace", namespace(s.root_namespace_name, "baseline", warn_audit="restricted"),
            pulumi.ResourceOptions(parent=self, provider=self.cluster.provider)
        ) if s.create_namespace and any(w.run_as_root for w in cfg.workloads) else None
        # the same public args a reusing project passes: one way to build a service, validated the same way
        shared_args = {"namespace": s.namespace, "kubernetes_version": cfg.cluster.kubernetes_version,
                       "on_ack": cfg.is_ack, "monitoring": cfg.monitoring.model_dump(by_alias=True, exclude_none=True),
                       "allow_public_endpoints": s.allow_public_endpoints}
        crd_owners = {group: [owner] for group, owner in self.monitoring.crd_owners.items()}
        pools = {p.name: p for p in cfg.node_pools}
        service_opts = pulumi.ResourceOptions(parent=self, provider=self.cluster.provider)
        self.services = {}
        prometheus_url = self.monitoring.prometheus_url
        for w in cfg.workloads:
            pool = pools[w.node_pool]
            # the Deployment's pods need their own pool's nodes and the software that turns its GPUs into
            # schedulable resources; nothing else of the service does
            gpu_nodes = [r for r in (self.pools[pool.name].pool,) if r is not None] + gpu_software + \
                self.cluster.addon_dependencies(*sharing_addons(cfg, pool.sharing.mode))
            ns = self.root_namespace if w.run_as_root else self.namespace
            wait_for = {"namespace": [ns] if ns else [], "gpu_nodes": gpu_nodes, "crd_owners": crd_owners,
                        "ingress_controller": self.cluster.addon_dependencies(*ingress_addon(cfg, w))}
            args = dict(shared_args)
            if w.run_as_root:
                args["namespace"] = s.root_namespace_name
            self.services[w.name] = InferenceService(f"{name}-{w.name}", {
                "workload": w.model_dump(by_alias=True, exclude_none=True),
                "node_pool": pool.model_dump(by_alias=True, exclude_none=True), **args,
                "wait_for": wait_for}, opts=service_opts)
        self.prometheus_url = prometheus_url
        # the stack policies read the environment, cluster version and exposure setting from these outputs: they
        # are all AnalyzeStack sees of a component (docs/policies.md, "What the policies see")
        self.register_outputs({**props, "cluster_id": self.cluster.cluster_id, "prometheus_url": prometheus_url})

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
