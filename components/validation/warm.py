"""Rules of warm capacity (``autoscaling.warmReplicas``): placeholder pods that keep room for replicas on the pool
(components/warm_capacity.py)."""
from typing import Optional

from gpuplatform.components.config import PlatformConfig, Workload
from gpuplatform.components.errors import fmt
from gpuplatform.components.pools import PoolFacts
from gpuplatform.components.validation.common import _Issues


def check_warm_capacity(cfg: PlatformConfig, p: str, w: Workload, f: Optional[PoolFacts], out: _Issues) -> None:
    """Placeholders need an autoscaler to preempt them (a fixed count never grows into their room) and a pool whose
    cluster autoscaler adds nodes (on a fixed-size pool every node is there anyway: they would only hold GPUs); the
    pool at its most nodes must hold the workload's most replicas and its placeholders together, or the replica
    that preempted the last placeholder leaves it Pending for good. A KEDA workload at ``minReplicas: 0`` may hold
    them: they keep a node ready while it sleeps, so waking skips node provisioning."""
    n = w.autoscaling.warm_replicas
    if not n:
        return
    pw = f"{p}.autoscaling.warmReplicas"
    if w.fixed:
        out.add(pw, f"{n}: placeholders make room for replicas an autoscaler adds, but the workload runs a fixed "
                "count; allowed: 0, or autoscaler hpa or keda")
        return
    pool = cfg.pool(w.node_pool)
    if pool is not None and not pool.autoscaling:
        out.add(pw, f"{n}: pool {fmt(pool.name)} has a fixed size (autoscaling: false), so its nodes are there "
                "whether or not placeholders hold them and no node is ever provisioned for a replica; allowed: 0, "
                "or autoscaling: true on the pool")
        return
    if f is None or any(issue.path.startswith((f"{p}.gpu", f"{p}.autoscaling.maxReplicas")) for issue in out):
        return
    cap = f.max_replicas(w.gpu)
    room = cap - w.autoscaling.max_replicas
    if n > room:
        out.add(pw, f"{n} placeholders do not fit pool {fmt(f.name)} beside maxReplicas "
                f"{w.autoscaling.max_replicas}: it holds {cap} replicas at most ({f.replicas_per_node(w.gpu)} per "
                f"node x {f.max_nodes} nodes); allowed: <= {max(room, 0)}, or raise the pool's maxNodes")
