"""Rules of capacity: one replica on a node, a workload's replicas on its pool, and every workload of a pool
together."""
from dataclasses import replace
from typing import Optional

from gpuplatform.components.config import PlatformConfig, Workload
from gpuplatform.components.errors import counted, fmt, listing
from gpuplatform.components.pools import PoolFacts
from gpuplatform.components.validation.common import _Issues


def check_node_fit(cfg: PlatformConfig, p: str, w: Workload, f: Optional[PoolFacts], out: _Issues) -> None:
    """One replica's CPU and memory must fit what a node of the pool offers pods (the smallest of its instance
    types, less what ACK reserves for the kubelet and the system: an estimate, catalogs/ack.py)."""
    from gpuplatform.components.pools import _amount

    if f is None:
        return
    cpu, memory = f.allocatable_cpu, f.allocatable_memory_bytes
    if cpu is not None and _amount(w.resources.cpu) > cpu:
        out.add(f"{p}.resources.cpu", f"{fmt(w.resources.cpu)}: one replica asks more CPU than a node of pool "
                f"{fmt(f.name)} offers pods ({_cores(cpu)} of its {f.vcpus} vCPUs), so the pod would stay "
                f"Pending; allowed: <= {_cores(cpu)}, or a larger instance type")
    if memory is not None and _amount(w.resources.memory) > memory:
        out.add(f"{p}.resources.memory", f"{fmt(w.resources.memory)}: one replica asks more memory than a node "
                f"of pool {fmt(f.name)} offers pods ({_gib(memory)} GiB of its {f.memory_gib} GiB), so the pod "
                f"would stay Pending; allowed: <= {_gib(memory)}Gi, or a larger instance type")


def _cores(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _gib(value: float) -> str:
    return f"{value / 2 ** 30:.1f}".rstrip("0").rstrip(".")


def check_replicas(cfg: PlatformConfig, p: str, w: Workload, f: Optional[PoolFacts], out: _Issues) -> None:
    """A workload has either a fixed replica count or an autoscaler with metrics."""
    a = w.autoscaling
    if w.fixed:
        if w.replicas is None:
            out.add(f"{p}.replicas", "required: the workload has no autoscaler; allowed: replicas: N (a fixed "
                    "count), or an 'autoscaling' block with autoscaler hpa or keda and its metrics")
        if a.metrics:
            out.add(f"{p}.autoscaling.metrics", "set, but autoscaler 'none' reads no metric; allowed: remove them, "
                    "or autoscaler hpa or keda")
        if f is not None and w.replicas and not any(i.path.startswith(f"{p}.gpu") for i in out):
            cap = f.max_replicas(w.gpu)
            if w.replicas > cap:
                out.add(f"{p}.replicas", f"{w.replicas} replicas never fit pool {fmt(f.name)}: at most {cap} "
                        f"({f.replicas_per_node(w.gpu)} per node x {f.max_nodes} nodes); allowed: <= {cap}, or "
                        "raise the pool's maxNodes")
        return
    if w.replicas is not None:
        out.add(f"{p}.replicas", f"{w.replicas}: a fixed count, but autoscaler {fmt(a.autoscaler)} owns the "
                "replica count; allowed: 'replicas' without 'autoscaling', or 'autoscaling' without 'replicas'")
    if not a.metrics:
        out.add(f"{p}.autoscaling.metrics", f"required with autoscaler {fmt(a.autoscaler)}: at least one metric "
                "(a workload without an autoscaler sets 'replicas' instead)")


def check_replica_ceiling(p: str, w: Workload, f: Optional[PoolFacts], out: _Issues) -> None:
    """An autoscaler's most replicas must fit the pool at its most nodes."""
    a = w.autoscaling
    pa = f"{p}.autoscaling"
    if f is not None and not any(issue.path.startswith(f"{p}.gpu") for issue in out):
        cap = f.max_replicas(w.gpu)
        if a.max_replicas > cap:
            out.add(f"{pa}.maxReplicas", f"{a.max_replicas} replicas never fit pool {fmt(f.name)}: at most {cap} "
                    f"({f.replicas_per_node(w.gpu)} per node x {f.max_nodes} nodes); allowed: <= {cap}, or raise "
                    "the pool's maxNodes")


def check_pool_totals(cfg: PlatformConfig, facts: dict[str, PoolFacts], out: _Issues) -> None:
    """Workloads of a pool must fit together at their most replicas, or the last ones stay Pending: cGPU memory
    bin-packed per card (an 8 GiB and a 4 GiB replica share one 14 GiB T4), whole GPUs and MIG instances per
    node, and CPU and memory per node from the instance type."""
    for i, pool in enumerate(cfg.node_pools):
        f = facts.get(pool.name)
        users = [(k, w) for k, w in enumerate(cfg.workloads) if w.node_pool == pool.name]
        if f is None or not users or any(f.replicas_per_node(w.gpu) < 1 for _, w in users):
            continue
        reported = (".gpu", ".resources", ".autoscaling.maxReplicas", ".autoscaling.warmReplicas", ".replicas")
        if any(issue.path.startswith(f"workloads[{k}]{suffix}") for k, _ in users for suffix in reported
               for issue in out):
            continue  # one replica or one workload alone already does not fit: reported there
        ws = [w for _, w in users]
        missing = {name: n for name, n in f.unplaced(ws).items() if n}
        if not missing:
            continue
        enough = _fewest_nodes(f, ws)
        names = listing(f"{w.name} ({w.pod_ceiling})" for w in ws)
        held = names if len(ws) <= 3 else f"{len(ws)} workloads ({names})"
        pending = listing(f"{n} of {name}" for name, n in missing.items())
        if len(missing) > 3:
            pending = f"{sum(missing.values())} replicas of {len(missing)} workloads ({pending})"
        out.add(f"nodePools[{i}].maxNodes", f"{f.max_nodes} nodes cannot hold {held} at their most replicas "
                f"together: {pending} would stay Pending ({_packing(f)}); allowed: "
                f"{f'>= {enough}' if enough else 'more nodes'}, or lower the workloads' replicas")


def _fewest_nodes(f: PoolFacts, ws: list[Workload]) -> Optional[int]:
    """The fewest nodes that hold every replica, or None when no count up to one node per replica does. More
    nodes never place fewer replicas, so the count is found by bisection: hundreds of workloads need hundreds of
    nodes, and each try packs every replica."""
    def fits(n: int) -> bool:
        return not any(replace(f, max_nodes=n).unplaced(ws).values())

    low, high = f.max_nodes + 1, f.max_nodes + sum(w.pod_ceiling for w in ws)
    if low > high or not fits(high):
        return None
    while low < high:
        middle = (low + high) // 2
        if fits(middle):
            high = middle
        else:
            low = middle + 1
    return low


def _packing(f: PoolFacts) -> str:
    # what a node offers pods: its instance type less ACK's reservation (check_node_fit says so in full)
    per_node = (f"{f.allocatable_cpu:.1f} CPU and {_gib(f.allocatable_memory_bytes)} GiB per node"
                if f.vcpus and f.allocatable_memory_bytes else "CPU and memory not known")
    if f.mode == "cgpu" and f.model.reported_mib is not None:
        return f"{f.model.reported_gib} GiB per {f.model.name} card, a replica's memory on one card; {per_node}"
    if f.mig_layout:
        return f"{', '.join(f'{n} {r}' for r, n in sorted(f.node_resources.items()))} per node; {per_node}"
    return f"{counted(f.units_per_node, f.unit)} per node; {per_node}"
