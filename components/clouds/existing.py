"""Any Kubernetes cluster reached through a kubeconfig (``cluster.kind: kubeconfig``): the nodes exist and carry
the pool labels by hand, no cloud add-on is installed, no cloud reserves anything the package knows of, and MIG
GPUs are partitioned by the GPU Operator's mig-manager (simulated GPUs by fake-gpu-operator)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Optional

from gpuplatform.components.clouds.base import CloudProfile


@dataclass(frozen=True)
class ExistingClusterProfile(CloudProfile):
    name: ClassVar[str] = "existing"
    title: ClassVar[str] = "an existing cluster"
    cluster_kinds: ClassVar[tuple[str, ...]] = ("kubeconfig",)

    uses_cloud_provider: ClassVar[bool] = False
    creates_node_pools: ClassVar[bool] = False
    partitions_mig: ClassVar[bool] = False
    runs_system_components: ClassVar[bool] = False
    has_account: ClassVar[bool] = False
    cluster_checks: ClassVar[tuple[str, ...]] = ()

    def managed_control_plane(self) -> bool:
        return False

    def legacy_sharing_component(self) -> bool:
        return False

    def offers(self, feature: str) -> bool:
        return False

    def tier_lacks(self, feature: str) -> bool:
        return False

    def pool_managed(self, pool) -> bool:
        return False

    def addons(self, cfg) -> list[str]:
        return []

    def sharing_addons(self, mode: str) -> list[str]:
        return []

    def sharing_prerequisites(self, modes) -> list[str]:
        return []

    def repair_addons(self, pool) -> list[str]:
        return []

    def default_ingress_controller(self, class_name: str) -> str:
        return "external"

    def ingress_addons(self, workload) -> list[str]:
        return []

    def ingress_peers(self) -> tuple:
        return ()

    def gpu_software_kind(self, simulated: bool, pool_modes) -> Optional[str]:
        """fake-gpu-operator for simulated GPUs, the GPU Operator for MIG (mig-manager partitions the GPUs); whole
        GPUs use the device plugin the cluster already runs."""
        if simulated:
            return "fake-gpu-operator"
        return "gpu-operator" if "mig" in set(pool_modes) else None

    def gpu_node_labels(self, facts) -> dict[str, str]:
        return {}

    def autoscaled_node_labels(self) -> dict[str, str]:
        return {}

    def allocatable_cpu(self, vcpus: int, memory_gib: Optional[float], max_pods: Optional[int]) -> float:
        return float(vcpus)

    def allocatable_memory_bytes(self, vcpus: Optional[int], memory_gib: float, max_pods: Optional[int]) -> float:
        return float(memory_gib) * 2 ** 30

    def max_pods_per_node(self) -> Optional[int]:
        return None

    def sharing_component(self) -> str:
        return "the GPU sharing device plugin"

    def device_plugin_hint(self) -> str:
        return "NVIDIA device plugin / GPU Operator not installed on the node"

    def mig_partition_cause(self, pool) -> Optional[str]:
        return None
