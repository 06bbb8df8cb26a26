"""Capacity model: how many GPU units and workload replicas a node and a pool can hold, per sharing mode.

Pure functions over the catalogs; used by config validation, the plan's capacity table, workloads and policies.

* exclusive: one unit is one whole GPU (``nvidia.com/gpu``).
* mig: one unit is one MIG instance of the pool's profile (``all-<profile>`` on every GPU); with a per-GPU layout
  a node advertises several resources (``nvidia.com/mig-<profile>`` per profile, ``nvidia.com/gpu`` for its
  MIG-disabled GPUs) and each replica draws on the one it asks for.
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


# ------------------------------------------------------------------------------------------------ bin packing
@dataclass(frozen=True)
class Replica:
    """One replica to place: its workload, GPU request and CPU (cores) / memory (bytes) requests."""
    workload: str
    request: GpuRequest
    cpu: float = 0
    memory: float = 0
    resource: str = ""
    """Extended resource the replica's ``count`` is of, for nodes that advertise several (``node_units``)."""


@dataclass
class _Card:
    free: float
    pods: int = 0
    core: int = 100


@dataclass
class _Node:
    cards: list
    cpu: float
    memory: float
    units: dict


def pack(mode: str, model: GpuModel, gpus: int, nodes: int, replicas: list[Replica], *,
         vcpus: float | None = None, memory_bytes: float | None = None,
         mig_profile: str | None = None, node_units: dict[str, int] | None = None) -> dict[str, int]:
    """Replicas of each workload that stay unplaced when ``replicas`` are packed onto ``nodes`` nodes of the pool.

    First fit, largest GPU request first, as the schedulers do for one pool: cGPU memory must fit on one card
    (the gpushare scheduler extender binds a pod to one device, at most ``CGPU_MAX_PODS_PER_GPU`` pods a card), so
    an 8 GiB and a 4 GiB replica share a 14 GiB T4 while two 8 GiB replicas do not; whole GPUs and MIG instances
    are counted per node and per resource (``node_units``: what one node advertises, for a per-GPU MIG layout;
    default the pool's one resource). CPU and memory requests must fit the node's vCPUs and memory (``None``:
    unknown, not checked; the kubelet's reservations are not subtracted, so this is an upper bound).
    """
    # cGPU memory is bound to one card; whole GPUs and MIG instances are any free devices of the node
    cards = gpus if mode == "cgpu" else 0
    units = dict(node_units) if node_units is not None else {"": units_per_node(mode, model, gpus, mig_profile)}
    pool = [_Node([_Card(model.reported_gib) for _ in range(cards)], vcpus if vcpus is not None else float("inf"),
                  memory_bytes if memory_bytes is not None else float("inf"), dict(units)) for _ in range(nodes)]
    unplaced: dict[str, int] = {}

    def size(r: Replica) -> tuple:
        return (r.request.memory_gib if mode == "cgpu" else r.request.count, r.cpu, r.memory)

    for r in sorted(replicas, key=size, reverse=True):
        unplaced.setdefault(r.workload, 0)
        if not any(_place(mode, node, r) for node in pool):
            unplaced[r.workload] += 1
    return unplaced


def _place(mode: str, node: _Node, r: Replica) -> bool:
    if r.cpu > node.cpu + 1e-9 or r.memory > node.memory + 1e-9:
        return False
    if mode == "cgpu":
        core = r.request.core_percent or 0
        card = next((c for c in node.cards if c.free >= r.request.memory_gib and c.pods < CGPU_MAX_PODS_PER_GPU
                     and c.core >= core), None)
        if card is None:
            return False
        card.free -= r.request.memory_gib
        card.pods += 1
        card.core -= core
    else:
        # whole GPUs / MIG instances: the device plugin hands out any free devices of the resource on the node
        if node.units.get(r.resource, 0) < r.request.count:
            return False
        node.units[r.resource] -= r.request.count
    node.cpu -= r.cpu
    node.memory -= r.memory
    return True
