"""GPU sharing modes: node labels, extended resources, units, and the components each mode needs.

Sources: ACK "labels used by ACK to control GPUs" (doc-detail/191140), the cGPU article (legacy ``cgpu=true``),
NVIDIA k8s-device-plugin (MIG strategies), GPU Operator mig-manager (``nvidia.com/mig.config``),
run-ai/fake-gpu-operator (simulated pools).
"""
from __future__ import annotations

from dataclasses import dataclass

# --- label keys and values (only spelled here) ---------------------------------------------------------------
ACK_SCHEDULE_LABEL = "ack.node.gpu.schedule"
ACK_PLACEMENT_LABEL = "ack.node.gpu.placement"
ACK_EXCLUSIVE = "default"
ACK_MIG = "mig"
CGPU_POLICIES = ("cgpu", "core_mem", "share")
"""cgpu: shared compute, isolated memory; core_mem: compute and memory isolated; share: no isolation."""
CGPU_PLACEMENTS = ("binpack", "spread")
LEGACY_CGPU_LABEL = ("cgpu", "true")
"""Dedicated (pre-Pro) clusters with the ``ack-cgpu`` component select cGPU nodes by ``cgpu=true``."""
AUTOSCALED_POOL_LABEL = ("k8s.aliyun.com", "true")
NVIDIA_MIG_CONFIG_LABEL = "nvidia.com/mig.config"
NVIDIA_MIG_STATE_LABEL = "nvidia.com/mig.config.state"
SIMULATED_POOL_LABEL = "run.ai/simulated-gpu-node-pool"
POOL_LABEL = "gpuplatform.io/pool"
"""Our own label on every pool's nodes; workloads select their pool by it."""

# --- extended resources ------------------------------------------------------------------------------------------
RESOURCE_GPU = "nvidia.com/gpu"
RESOURCE_GPU_MEM = "aliyun.com/gpu-mem"
RESOURCE_GPU_CORE = "aliyun.com/gpu-core.percentage"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"

DEFAULT_GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
GPU_NODE_TAINT_KEYS = ("nvidia.com/gpu",)
"""Taint keys that keep ordinary pods off GPU nodes: the device plugin's resource name, which GKE and AKS GPU node
pools set and the ExtendedResourceToleration admission plugin tolerates for pods requesting the resource."""
GPU_NODE_LABELS = ("nvidia.com/gpu.present", "nvidia.com/gpu.product", "nvidia.com/gpu.count",
                   "cloud.google.com/gke-accelerator", "k8s.amazonaws.com/accelerator",
                   "aliyun.accelerator/nvidia_name", "aliyun.accelerator/nvidia_count")
"""Node labels only GPU nodes carry: GPU Feature Discovery's (NVIDIA gpu-feature-discovery README), GKE's and
EKS's accelerator labels, and ACK's GPU labels (ack.md section 2)."""

GPU_PRODUCT_LABELS = ("nvidia.com/gpu.product", "aliyun.accelerator/nvidia_name")
"""Node labels naming the card: GPU Feature Discovery's (the NVML name, sanitised: NVIDIA/k8s-device-plugin
``internal/lm/resource.go``) and ACK's (gpushare-device-plugin ``cmd/inspect``; ack.md section 2)."""
GPU_MEMORY_LABELS = ("nvidia.com/gpu.memory", "aliyun.accelerator/nvidia_mem")
"""Node labels giving one card's memory as the driver reports it: GPU Feature Discovery's, in MiB (a bare number),
and ACK's (``16276MiB``)."""

# --- components -------------------------------------------------------------------------------------------------
ACK_SHARING_ADDON = "ack-ai-installer"
ACK_LEGACY_SHARING_ADDON = "ack-cgpu"


@dataclass(frozen=True)
class SharingMode:
    name: str
    description: str
    unit: str
    per_pod_attribution: bool
    """Whether device-level GPU metrics describe one pod (false when pods share a card)."""


SHARING_MODES: dict[str, SharingMode] = {
    m.name: m
    for m in (
        SharingMode("exclusive", "one pod per whole GPU", "GPU", True),
        SharingMode("cgpu", "Alibaba cGPU: several pods share a card, memory in GiB", "GiB", False),
        SharingMode("mig", "NVIDIA Multi-Instance GPU: hardware partitions", "MIG instance", False),
    )
}


def mig_resource(profile: str, strategy: str) -> str:
    """Extended resource a pod requests for one MIG instance: mixed names the profile, single reuses nvidia.com/gpu."""
    return f"{MIG_RESOURCE_PREFIX}{profile}" if strategy == "mixed" else RESOURCE_GPU


# --- every GPU resource name a device plugin serves ------------------------------------------------------------
OTHER_GPU_RESOURCES = (
    f"{RESOURCE_GPU}.shared",  # k8s-device-plugin time-slicing/MPS with renameByDefault (README "Shared Access")
    "amd.com/gpu",             # ROCm/k8s-device-plugin
    "gpu.intel.com/i915",      # intel/intel-device-plugins-for-kubernetes GPU plugin
    "gpu.intel.com/xe",
    "habana.ai/gaudi",         # HabanaAI device plugin
    # HAMi (Project-HAMi/HAMi, device config resourceMemoryName, resourceMemoryPercentageName, resourceCoreName):
    # GPU sharing by memory (MiB) and core percentage next to nvidia.com/gpu
    f"{RESOURCE_GPU}mem", f"{RESOURCE_GPU}mem-percentage", f"{RESOURCE_GPU}cores",
    # Volcano vGPU (Project-HAMi/volcano-vgpu-device-plugin, the same device config under volcano.sh/)
    "volcano.sh/vgpu-number", "volcano.sh/vgpu-memory", "volcano.sh/vgpu-memory-percentage", "volcano.sh/vgpu-cores",
)
GPU_RESOURCE_DOMAINS = ("nvidia.com", "aliyun.com", "amd.com", "gpu.intel.com", "habana.ai")


def served_gpu_resources() -> frozenset[str]:
    """Extended resources GPU device plugins advertise: whole GPUs, cGPU memory and cores, every MIG profile of
    the catalog (mixed strategy, with the ``+me`` profiles also in the dotted form), and other vendors' GPUs."""
    from gpuplatform.catalogs.mig import MIG_PROFILES

    mig = {p for profiles in MIG_PROFILES.values() for p in profiles}
    names = {RESOURCE_GPU, RESOURCE_GPU_MEM, RESOURCE_GPU_CORE, *OTHER_GPU_RESOURCES}
    for p in mig:
        names |= {f"{MIG_RESOURCE_PREFIX}{p}", f"{MIG_RESOURCE_PREFIX}{p.replace('+', '.')}",
                  f"{MIG_RESOURCE_PREFIX}{p}.shared"}
    return frozenset(names)


def looks_like_gpu_resource(name: str) -> bool:
    """A resource name meant as a GPU: 'gpu' or 'mig-' in it, or a GPU vendor's domain."""
    domain, _, rest = name.partition("/")
    if not rest:
        return "gpu" in name.lower()
    return "gpu" in name.lower() or rest.startswith("mig-") or domain in GPU_RESOURCE_DOMAINS
