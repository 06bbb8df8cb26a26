"""A pool's warm set (``nodePools[].warmSet``): replicas of several models asleep on the pool's GPUs, one of them
woken when its model needs capacity (docs/model-startup.md, "Sleeping replicas", "Who wakes a sleeping replica").

What a sleeping replica costs is counted here, one source for validation, placement and the docs: its GPU (the
set's ``gpus``, each holding one sleeping replica of every model) and, at sleep level 1, its weights in the host
memory of the node (catalogs/servers.py ``sleeping_host_gib``). The pods that hold them (one holder per warm GPU,
rendered by components/warm_set_objects.py) request that memory plus one awake replica's (:func:`holder_memory_gib`)
and are charged to the pool's nodes in placement, so the packing refuses a set that does not fit a node beside the
replicas."""
from __future__ import annotations

from dataclasses import dataclass

from gpuplatform.catalogs import servers
from gpuplatform.catalogs.pods import ClusterPod
from gpuplatform.components.config import NodePool, PlatformConfig, Workload
from gpuplatform.components.model_startup import load_estimate
from gpuplatform.catalogs import server_cli as cli
from gpuplatform.components import server_args
from gpuplatform.catalogs.network import PLATFORM_PART_OF
from gpuplatform.components.pools import _amount


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
    mode = servers.SLEEP_MODES.get(w.server or "")
    if mode is None:
        return None
    facts = server_args.parse(w)
    if facts is None or not facts.get(cli.SLEEP_MODE):
        return None
    if mode.gate_env is not None and not facts.get(cli.DEV_MODE):
        return None
    return mode


def served_sleep_endpoints(cfg: PlatformConfig, w: Workload) -> "servers.SleepMode | None":
    """The sleep mode whose endpoints the workload's Service may reach: its own servers' (:func:`sleep_endpoints`),
    or, for a model of its pool's warm set, its sleeping replica's in a holder, which the waker routes the
    model's Service to once woken."""
    own = sleep_endpoints(w)
    if own is not None:
        return own
    pool = cfg.pool(w.node_pool)
    if pool is not None and pool.warm_set is not None and w.name in pool.warm_set.models:
        return servers.SLEEP_MODES.get(w.server or "")
    return None


def host_gib_per_gpu(cfg: PlatformConfig, pool: NodePool) -> float:
    """Host memory the sleeping replicas on one warm GPU hold: one of every model."""
    return sum(m.host_gib for m in sleeping_models(cfg, pool))



# --- the objects of a warm set (registered by components/platform.py; placement reads the holders' pods) ---

HOLDER_PORT_BASE = 8100
"""The sleeping replicas' API ports in a holder: ``HOLDER_PORT_BASE + i`` for the i-th model of ``warmSet.models``
(they share the holder's network namespace, so each needs its own; the workloads' own pods keep theirs)."""
AWAKE_LABEL = "gpuplatform.io/awake-model"
"""Set by the waker on a holder pod while one of its replicas is awake: the model's name. The NetworkPolicy that
admits the model's clients to that replica's port selects it; without it only the waker reaches the holder."""
ENDPOINT_SLICE_MANAGER = "warm-set-waker.gpuplatform.io"
"""``endpointslice.kubernetes.io/managed-by`` of the EndpointSlices the waker writes (the EndpointSlice controller
manages only its own, ``endpointslice-controller.k8s.io``; kube-proxy reads every slice of the Service)."""
CONFIG_DIR = "/etc/gpuplatform-warm-set"
READY_FILE = "/tmp/warm-set-ready"
"""Written by the holder program once every replica sleeps (components/warm_set_holder.py); its readiness probe."""
WAKER_CPU, WAKER_MEMORY = "100m", "128Mi"
WAKER_USER = 65532
WAKER_HEALTH_PORT, WAKER_HEALTH_PATH = 8080, "/healthz"
"""What the waker serves for its probes (part of what the docs ask of it): 200 while it watches and can act."""


def holder_name(pool: NodePool) -> str:
    return f"warm-set-{pool.name}"


def waker_name(pool: NodePool) -> str:
    return f"warm-set-{pool.name}-waker"


def _labels(name: str, component: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": name, "app.kubernetes.io/component": component,
            "app.kubernetes.io/part-of": PLATFORM_PART_OF, "app.kubernetes.io/managed-by": "pulumi"}


def holder_labels(pool: NodePool) -> dict[str, str]:
    """Not any model's selector labels: the models' Deployments, HPAs, PDBs and Services never count a holder."""
    return _labels(holder_name(pool), "sleeping-replicas")


def waker_labels(pool: NodePool) -> dict[str, str]:
    return _labels(waker_name(pool), "warm-set-waker")


def models_of(cfg: PlatformConfig, pool: NodePool) -> list[Workload]:
    """The set's models that are workloads of the pool on a server that can sleep in a warm set, in the set's order
    (validation reports the others)."""
    by_name = {w.name: w for w in cfg.workloads}
    ws = pool.warm_set
    return [by_name[n] for n in dict.fromkeys(ws.models if ws else [])
            if n in by_name and by_name[n].node_pool == pool.name and by_name[n].server in servers.WARM_SET_SERVERS]


def holder_ports(cfg: PlatformConfig, pool: NodePool) -> dict[str, int]:
    """Model -> its sleeping replica's API port in a holder."""
    return {w.name: HOLDER_PORT_BASE + i for i, w in enumerate(models_of(cfg, pool))}


def _gib(text: str) -> float:
    return _amount(text) / 2 ** 30


def holder_memory_gib(cfg: PlatformConfig, pool: NodePool) -> float:
    """What one holder requests of its node's memory: the weights its sleeping replicas keep (level 1) plus the
    largest model's own ``resources.memory`` for the replica that is awake (a sleeping process's own footprint
    beyond its weights is not counted: no source measured it)."""
    awake = max((_gib(w.resources.memory) for w in models_of(cfg, pool)), default=0.0)
    return round(host_gib_per_gpu(cfg, pool) + awake, 3)
