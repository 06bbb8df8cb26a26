"""A pool's warm set (``nodePools[].warmSet``): replicas of several models asleep on the pool's GPUs, one of them
woken when its model needs capacity (docs/model-startup.md, "Sleeping replicas").

What a sleeping replica costs is counted here, one source for validation, placement and the docs: its GPU (the
set's ``gpus``, each holding one sleeping replica of every model) and, at sleep level 1, its weights in the host
memory of the node (catalogs/servers.py ``sleeping_host_gib``). The pods that hold them are charged to the pool's
nodes in placement as one holder per warm GPU (:func:`warm_set_pods`), requesting that memory, so the packing
refuses a set whose sleeping weights do not fit a node beside the replicas."""
from __future__ import annotations

from dataclasses import dataclass

from gpuplatform.catalogs import servers
from gpuplatform.catalogs.pods import ClusterPod
from gpuplatform.components.config import NodePool, PlatformConfig, Workload


@dataclass(frozen=True)
class SleepingModel:
    workload: str
    size_gib: float
    host_gib: float
    """Host memory one sleeping replica holds."""
    wake_seconds: float
    """Expected wake-up (catalogs/servers.py ``wake_seconds``): an estimate from cited figures."""


def sleeping_models(cfg: PlatformConfig, pool: NodePool) -> list[SleepingModel]:
    """The set's models that are workloads with a ``model`` on the pool (validation reports the others)."""
    from gpuplatform.components.model_startup import load_estimate
    ws = pool.warm_set
    if ws is None:
        return []
    out = []
    by_name = {w.name: w for w in cfg.workloads}
    for name in ws.models:
        w: Workload | None = by_name.get(name)
        if w is None or w.model is None or w.node_pool != pool.name:
            continue
        est = load_estimate(w)
        reload = est.read_seconds if est is not None else 0.0
        out.append(SleepingModel(name, w.model.size_gib, servers.sleeping_host_gib(w.model.size_gib, ws.sleep_level),
                                 servers.wake_seconds(w.model.size_gib, ws.sleep_level, reload)))
    return out


def sleep_endpoints(w: Workload) -> "servers.SleepMode | None":
    """The sleep mode whose endpoints the workload's server serves on its API port, as its command line reads: vLLM
    with ``--enable-sleep-mode`` and ``VLLM_SERVER_DEV_MODE=1``, SGLang with ``--enable-memory-saver``. None for
    any other. They share the port with the API its clients use, and vLLM cannot serve them elsewhere (its dev
    routes are registered on the one app: llm-d-incubation/llm-d-fast-model-actuation issue #27)."""
    from gpuplatform.catalogs import server_cli as cli
    from gpuplatform.components import server_args
    mode = servers.SLEEP_MODES.get(w.server or "")
    if mode is None:
        return None
    facts = server_args.parse(w)
    if facts is None or not facts.get(cli.SLEEP_MODE):
        return None
    if mode.gate_env is not None and not facts.get(cli.DEV_MODE):
        return None
    return mode


def host_gib_per_gpu(cfg: PlatformConfig, pool: NodePool) -> float:
    """Host memory the sleeping replicas on one warm GPU hold: one of every model."""
    return sum(m.host_gib for m in sleeping_models(cfg, pool))


def warm_set_pods(cfg: PlatformConfig) -> list[ClusterPod]:
    """One holder per warm GPU of each pool with a warm set, requesting the host memory its sleeping replicas keep
    and the pool's GPU, on the pool's nodes (its selector and tolerations)."""
    from gpuplatform.components.pools import all_pool_facts

    facts = all_pool_facts(cfg)
    out = []
    for pool in cfg.node_pools:
        if pool.warm_set is None or pool.name not in facts:
            continue
        host = host_gib_per_gpu(cfg, pool)
        f = facts[pool.name]
        spec = {"nodeSelector": dict(f.node_selector), "tolerations": f.tolerations,
                "containers": [{"resources": {"requests": {"cpu": "0", "memory": f"{host:g}Gi"}}}]}
        out.append(ClusterPod(f"warm set of pool {pool.name}",
                              f"sleeping replicas of {', '.join(pool.warm_set.models)}", spec,
                              replicas=pool.warm_set.gpus, source="the stack's warm set"))
    return out
