"""The Alibaba Cloud ACK profile: clusters the stack creates (``ack-managed``) or adopts (``ack-existing``), reached
through pulumi-alicloud. Every answer reads ``catalogs/ack.py`` (add-ons, Pro-only features, reserved resources,
pod limits), ``catalogs/sharing.py`` (the GPU scheduling labels) and ``catalogs/network.py`` (the add-on's
ingress controller)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Optional

from gpuplatform.catalogs import ack, network, sharing
from gpuplatform.components.clouds.base import CloudProfile


@dataclass(frozen=True)
class AckProfile(CloudProfile):
    name: ClassVar[str] = "ack"
    title: ClassVar[str] = "ACK"
    cluster_kinds: ClassVar[tuple[str, ...]] = ("ack-managed", "ack-existing")

    uses_cloud_provider: ClassVar[bool] = True
    creates_node_pools: ClassVar[bool] = True
    partitions_mig: ClassVar[bool] = True
    runs_system_components: ClassVar[bool] = True
    has_account: ClassVar[bool] = True
    cluster_checks: ClassVar[tuple[str, ...]] = ack.CLUSTER_CHECKS

    def managed_control_plane(self) -> bool:
        """ACK managed clusters, and adopted ACK Pro ones: Alibaba runs the control plane outside the cluster."""
        return self.kind == "ack-managed" or (self.kind == "ack-existing" and self.professional)

    def legacy_sharing_component(self) -> bool:
        """A dedicated ACK cluster (adopted, not Pro): its cGPU is the legacy ack-cgpu component."""
        return self.kind == "ack-existing" and not self.professional

    def offers(self, feature: str) -> bool:
        return feature in ack.FEATURES

    def tier_lacks(self, feature: str) -> bool:
        return feature in ack.PRO_ONLY_FEATURES and not self.professional

    def pool_managed(self, pool) -> bool:
        """``autoRepair``, default on Pro clusters."""
        return self.professional if pool.auto_repair is None else pool.auto_repair

    def addons(self, cfg) -> list[str]:
        """Managed Prometheus for arms, the GPU sharing installer for cGPU and MIG pools, the node problem detector
        and lifecycle controller for managed (auto-repair) pools, ACK's NGINX controller for nginx Ingresses. The
        network plugin and CSI driver come with a new cluster (``catalogs/ack.py``)."""
        out = []
        if cfg.monitoring.backend == "arms":
            out.append(ack.ARMS_ADDON)
        if any(self.pool_managed(p) for p in cfg.node_pools):
            out += list(ack.AUTO_REPAIR_ADDONS)
        out += sorted({a for p in cfg.node_pools for a in self.sharing_addons(p.sharing.mode)})
        if any(self.ingress_addons(w) for w in cfg.workloads):
            out.append(ack.INGRESS_ADDON)
        return out

    def sharing_addons(self, mode: str) -> list[str]:
        """cGPU and MIG pools both need ack-ai-installer, on Pro clusters: every ``ack.node.gpu.schedule`` value but
        "default" (cGPU policies, mig) is served by it (ACK "labels used by ACK to control GPUs", doc-detail/191140).
        A dedicated cluster's legacy cGPU component is a prerequisite instead."""
        if mode == "exclusive" or not self.professional:
            return []
        return [sharing.ACK_SHARING_ADDON]

    def sharing_prerequisites(self, modes) -> list[str]:
        """The legacy cGPU component (ack-cgpu) of a dedicated cluster with cGPU pools: not an add-on."""
        return [sharing.ACK_LEGACY_SHARING_ADDON] if not self.professional and "cgpu" in set(modes) else []

    def repair_addons(self, pool) -> list[str]:
        return list(ack.AUTO_REPAIR_ADDONS) if self.pool_managed(pool) else []

    def default_ingress_controller(self, class_name: str) -> str:
        return "addon" if class_name == "nginx" else "external"

    def ingress_addons(self, workload) -> list[str]:
        ing = workload.exposure.ingress
        return [ack.INGRESS_ADDON] if ing is not None and self.ingress_controller(ing) == "addon" else []

    def ingress_peers(self) -> tuple:
        # with an external controller too: on ACK most likely the add-on installed from the console
        return (network.ACK_NGINX_ADDON,)

    def gpu_software_kind(self, simulated: bool, pool_modes) -> Optional[str]:
        """None: the GPU stack is ACK's (device plugin, cGPU and MIG through ack-ai-installer)."""
        return None

    def gpu_node_labels(self, facts) -> dict[str, str]:
        """The ``ack.node.gpu.schedule`` family that tells ACK's GPU stack how to serve the pool's GPUs."""
        if facts.mode == "exclusive":
            return {sharing.ACK_SCHEDULE_LABEL: sharing.ACK_EXCLUSIVE}
        if facts.mode == "cgpu":
            labels = {sharing.ACK_SCHEDULE_LABEL: facts.cgpu_policy, sharing.ACK_PLACEMENT_LABEL: facts.cgpu_placement}
            if facts.legacy_cgpu_label:
                labels[sharing.LEGACY_CGPU_LABEL[0]] = sharing.LEGACY_CGPU_LABEL[1]
            return labels
        if facts.mode == "mig":
            return {sharing.ACK_SCHEDULE_LABEL: sharing.ACK_MIG}
        return {}

    def autoscaled_node_labels(self) -> dict[str, str]:
        """ACK labels every node of an autoscaled pool k8s.aliyun.com=true (terraform-provider-alicloud
        cs_kubernetes_node_pool docs), which ACK's system pods avoid."""
        return {sharing.AUTOSCALED_POOL_LABEL[0]: sharing.AUTOSCALED_POOL_LABEL[1]}

    def allocatable_cpu(self, vcpus: int, memory_gib: Optional[float], max_pods: Optional[int]) -> float:
        """An estimate: ``catalogs/ack.py`` ``reserved_resources``."""
        return vcpus - ack.reserved_resources(vcpus, memory_gib or 0, max_pods)[0] / 1000

    def allocatable_memory_bytes(self, vcpus: Optional[int], memory_gib: float, max_pods: Optional[int]) -> float:
        reserved_mib = ack.reserved_resources(vcpus or 0, memory_gib, max_pods)[1]
        return (memory_gib * 1024 - reserved_mib) * 2 ** 20

    def max_pods_per_node(self) -> Optional[int]:
        """A flannel node's pod range; Terway's depends on the instance's ENIs (not known here)."""
        return ack.flannel_max_pods() if self.network_plugin == "flannel" else None

    def sharing_component(self) -> str:
        return sharing.ACK_SHARING_ADDON

    def device_plugin_hint(self) -> str:
        return f"ack-nvidia-device-plugin only selects {sharing.ACK_SCHEDULE_LABEL}={sharing.ACK_EXCLUSIVE}"

    def mig_partition_cause(self, pool) -> Optional[str]:
        return (f"ACK partitions GPUs of nodes labelled {sharing.ACK_SCHEDULE_LABEL}={sharing.ACK_MIG} through "
                f"{sharing.ACK_SHARING_ADDON}: check the add-on is installed and its pods run on the node, and that "
                f"the node's MIG layout label {sharing.NVIDIA_MIG_CONFIG_LABEL}="
                f"{pool.node_labels.get(sharing.NVIDIA_MIG_CONFIG_LABEL)} is the key ACK reads (unverified: see "
                "docs/ack.md)")
