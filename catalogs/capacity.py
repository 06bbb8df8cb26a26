"""Capacity model: how many GPU units and workload replicas a node and a pool can hold, per sharing mode.

Pure functions over the catalogs; used by config validation, the plan's capacity table, workloads and policies.

* exclusive: one unit is one whole GPU (``nvidia.com/gpu``).
* mig: one unit is one MIG instance of the pool's profile (``all-<profile>`` on every GPU).
* cgpu: one unit is one GiB of ``aliyun.com/gpu-mem`` as the device plugin reports it; a pod's memory must fit
  on one card, and ACK allows at most 20 cGPU pods per card.
"""
from __future__ import annotations

from dataclasses import dataclass

from gpuplatform.catalogs.gpus import GpuModel
from gpuplatform.catalogs.mig import max_instances

CGPU_MAX_PODS_PER_GPU = 20


@dataclass(frozen=True)
class GpuRequest:
    """What one replica asks for: ``count`` GPUs/MIG instances, or ``memory_gib`` (+ ``core_percent``) of cGPU."""
    count: int = 0
    memory_gib: float = 0
    core_percent: int = 0


def units_per_gpu(mode: str, model: GpuModel, mig_profile: str | None = None) -> int:
    if mode == "exclusive":
        return 1
    if mode == "mig":
        return max_instances(model.name, mig_profile or "")
    if mode == "cgpu":
        return model.reported_gib
    raise ValueError(f"unknown sharing mode {mode!r}")


def units_per_node(mode: str, model: GpuModel, gpus: int, mig_profile: str | None = None) -> int:
    return gpus * units_per_gpu(mode, model, mig_profile)


def replicas_per_gpu(mode: str, model: GpuModel, request: GpuRequest, mig_profile: str | None = None) -> float:
    """Replicas one GPU holds; a fraction (1/n) when one replica needs n whole GPUs or instances."""
    if mode == "cgpu":
        if request.memory_gib <= 0:
            return 0
        fit = int(model.reported_gib // request.memory_gib)
        if request.core_percent:
            fit = min(fit, 100 // request.core_percent)
        return min(fit, CGPU_MAX_PODS_PER_GPU)
    units = units_per_gpu(mode, model, mig_profile)
    if request.count <= 0:
        return 0
    return units / request.count


def replicas_per_node(mode: str, model: GpuModel, gpus: int, request: GpuRequest,
                      mig_profile: str | None = None) -> int:
    """Whole replicas one node holds (0 when one replica can never fit on the node)."""
    if mode == "cgpu":
        return gpus * int(replicas_per_gpu(mode, model, request, mig_profile))
    if request.count <= 0:
        return 0
    return units_per_node(mode, model, gpus, mig_profile) // request.count if mode == "mig" else gpus // request.count


def pool_replicas(mode: str, model: GpuModel, gpus: int, max_nodes: int, request: GpuRequest,
                  mig_profile: str | None = None) -> int:
    """Replicas the pool holds at its maximum size."""
    return max_nodes * replicas_per_node(mode, model, gpus, request, mig_profile)
