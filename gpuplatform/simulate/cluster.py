"""Pods and nodes: the ReplicaSet controller, the scheduler, pod start-up and the cluster autoscaler.

Sources: the ReplicaSet controller's deletion order (kubernetes ``pkg/controller/controller_utils.go``
``ActivePodsWithRanks.Less``, the ranks from ``pkg/controller/replicaset`` ``getPodsRankedByRelatedPodsOnSameNode``:
unscheduled before scheduled, Pending before Running, not ready before ready, more of the workload's pods on the
same node before fewer, then the more recently ready and the newer by powers of two of their age); the scheduler's
placement per cluster (``catalogs/kubernetes.py`` ``DEFAULT_POD_PLACEMENT``); the cluster-autoscaler FAQ for its
flag defaults ("What are the parameters to CA?"); node provisioning estimates in ``catalogs/gpus.py``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

# the startup probe's period: a pod turns ready at the first probe after loading
from gpuplatform.components.model_startup import STARTUP_PROBE_PERIOD_SECONDS
from gpuplatform.catalogs.kubernetes import SCHEDULER_POD_INITIAL_BACKOFF_S

from gpuplatform.catalogs.node_autoscaling import MAX_EMPTY_BULK_DELETE, UPSTREAM_CA as _UPSTREAM
from gpuplatform.components.config import duration_seconds as _seconds

# cluster-autoscaler flag defaults (FAQ "What are the parameters to CA?"): --scan-interval 10s,
# --scale-down-unneeded-time 10m, --scale-down-delay-after-add 10m (catalogs/node_autoscaling.py UPSTREAM_CA)
CA_SCAN_S = _seconds(_UPSTREAM["scanInterval"])
CA_UNNEEDED_S = _seconds(_UPSTREAM["scaleDownUnneededTime"])
CA_DELAY_AFTER_ADD_S = _seconds(_UPSTREAM["scaleDownDelayAfterAdd"])


@dataclass(frozen=True)
class NodeScaler:
    """The node autoscaler's timing, as the cluster is configured: how often it scans, how long a node stays
    unneeded before it goes, and how long after a scale-out nothing goes. (Scale-up from zero ready nodes is
    always on: the provider cannot send it off, and validation refuses it.)"""

    scan_s: int = CA_SCAN_S
    unneeded_s: int = CA_UNNEEDED_S
    delay_after_add_s: int = CA_DELAY_AFTER_ADD_S
    source: str = "the upstream cluster-autoscaler's defaults"


@dataclass
class Pod:
    name: str
    created: float
    node: Optional["Node"] = None
    bound: Optional[float] = None
    started: Optional[float] = None
    ready_at: Optional[float] = None
    placeholder: bool = False
    """A warm-capacity placeholder (pause at a negative priority): holds a slot, serves nothing."""
    load_s: Optional[float] = None
    """Container start to loaded, seconds, before the startup probe's period rounds it (set when bound)."""
    fills_cache: bool = False
    """The replica found the Fluid weights cache empty and reads OSS to fill it."""
    compiles: bool = False
    """The replica found vLLM's shared compile cache empty and compiles the model (its start is the cold one)."""
    woken: Optional[dict] = None
    """The replica was woken from the pool's warm set instead of started cold: the wake's parts (simulate.pool)."""
    workload: str = ""
    """The Deployment the pod belongs to (the workload's name, or ``PLACEHOLDER``): what the scheduler spreads by."""

    def phase(self, t: float) -> str:
        return "Running" if self.started is not None and self.started <= t else "Pending"

    def is_ready(self, t: float) -> bool:
        return self.ready_at is not None and self.ready_at <= t


PLACEHOLDER = "(placeholders)"
"""What the placeholders' pods count as when the scheduler spreads (their own Deployment; no workload's name)."""


def _age_bucket(t: float, since: Optional[float]) -> int:
    """The power of two of an age in nanoseconds, larger first to stay (``logarithmicRankDiff``: the controller
    compares ready and creation times in these buckets, LogarithmicScaleDown, GA and locked on since 1.31)."""
    age_ns = (t - since) * 1e9 if since is not None else 0
    return int(math.log2(age_ns)) if age_ns > 0 else -1


@dataclass
class Node:
    name: str
    ready_at: float
    slots: int
    pods: list = field(default_factory=list)
    image_at: Optional[float] = None
    empty_since: Optional[float] = None
    created: float = -1e9
    """When the cluster autoscaler asked for the node (its provisioning starts)."""


class Pods:
    """The Deployment's pods: the ReplicaSet controller creates and deletes them to match ``spec``; the scheduler
    binds them to ready nodes; each pulls its image (once per node) and loads its model before it is ready."""

    def __init__(self, workload: str, image_pull_s: int, model_load_s: int, fill_load_s: Optional[int] = None,
                 compile_extra_s: int = 0):
        self.workload = workload
        self.image_pull_s = image_pull_s
        self.model_load_s = model_load_s
        self.fill_load_s = fill_load_s
        """With a Fluid weights cache: the load of the replica that fills it (``model_load_s`` is a hit's)."""
        self.cache_filled_at: Optional[float] = None
        """When the Fluid cache holds the weights: the filling replica's read is done (None: empty, or no cache)."""
        self.compile_extra_s = compile_extra_s
        """With vLLM's compile cache on a shared volume: what compiling adds to a load (0: no such cache)."""
        self.compiled_at: Optional[float] = None
        """When the compile cache holds the compiled graphs: the first compiling replica has loaded (None: empty)."""
        self._compiler: Optional[Pod] = None
        self.pods: list[Pod] = []
        self.deleted: list[tuple[float, Pod]] = []
        """(time, pod) of every deletion since the consumer last took them (the scrape loop does)."""
        self._count = 0
        self._changes = 0
        self._ready_memo: tuple = (None, -1, [])

    def _new(self, t: float) -> Pod:
        self._changes += 1
        self._count += 1
        pod = Pod(f"{self.workload}-{self._count:05d}", t, workload=self.workload)
        self.pods.append(pod)
        return pod

    def start_ready(self, n: int, nodes: "NodePool") -> None:
        """``n`` pods that were ready before the run began, placed as the cluster's scheduler placed them."""
        for _ in range(n):
            pod = self._new(-1e9)
            node = nodes.pick([x for x in nodes.nodes if len(x.pods) < x.slots], self.workload)
            if node is not None:
                node.image_at = -1e9  # the replica ran there: its image is on the node
                if self.fill_load_s is not None:
                    self.cache_filled_at = -1e9  # and its load filled the weights cache
                if self.compile_extra_s:
                    self.compiled_at = -1e9  # and its start filled the compile cache
                node.pods.append(pod)
                pod.node, pod.bound, pod.started, pod.ready_at = node, -1e9, -1e9, -1e9

    def scale(self, spec: int, t: float) -> None:
        while len(self.pods) < spec:
            self._new(t)
        if len(self.pods) > spec:
            self._changes += 1
            ranked = sorted(self.pods, key=self._deletion_rank(t))
            for pod in ranked[:len(self.pods) - spec]:
                if pod.fills_cache and not pod.is_ready(t):
                    self.cache_filled_at = None  # its read of OSS stops: the next replica to start fills the cache
                if pod is self._compiler and not pod.is_ready(t):
                    self.compiled_at, self._compiler = None, None  # it never wrote the compiled graphs
                self.pods.remove(pod)
                if pod.node is not None:
                    pod.node.pods.remove(pod)
                self.deleted.append((t, pod))

    def _deletion_rank(self, t: float):
        """The ReplicaSet controller's order of deletion, first to go first (``ActivePodsWithRanks.Less``; no pod
        here has a deletion cost or a restart). Its pods of equal age-bucket go in the order of their random UIDs
        there; here the newest goes first."""
        on_node: dict = {}
        for p in self.pods:
            if p.node is not None:
                on_node[id(p.node)] = on_node.get(id(p.node), 0) + 1

        def rank(p: Pod) -> tuple:
            ready = p.is_ready(t)
            return (p.node is not None, p.phase(t) == "Running", ready,
                    -on_node.get(id(p.node), 0) if p.node is not None else 0,
                    _age_bucket(t, p.ready_at) if ready else 0, _age_bucket(t, p.created), -p.created)
        return rank

    def schedule(self, t: float, nodes: "NodePool", warm: Optional["Placeholders"] = None) -> None:
        """Oldest pending pod first, onto the ready node the cluster's scheduler picks (:meth:`NodePool.pick`). With
        no free slot on a ready node, a replica preempts a warm-capacity placeholder (:meth:`Placeholders.preempt`)
        and is bound to its node a scheduling cycle later."""
        ready_nodes = [n for n in nodes.nodes if n.ready_at <= t]
        for pod in self.pods:
            if pod.node is not None:
                continue
            node = nodes.pick([n for n in ready_nodes if len(n.pods) < n.slots], self.workload)
            bind_at = t
            if node is None:
                node = warm.preempt(t, ready_nodes) if warm is not None else None
                if node is None:
                    continue
                bind_at = t + SCHEDULER_POD_INITIAL_BACKOFF_S
            self._changes += 1
            node.pods.append(pod)
            node.empty_since = None
            pod.node, pod.bound = node, bind_at
            if node.image_at is None:
                node.image_at = bind_at + self.image_pull_s
            pod.started = max(bind_at, node.image_at)
            pod.load_s = self._load_seconds(pod)
            load = STARTUP_PROBE_PERIOD_SECONDS * math.ceil(pod.load_s / STARTUP_PROBE_PERIOD_SECONDS)
            pod.ready_at = pod.started + load

    def _load_seconds(self, pod: Pod) -> float:
        """The pod's load: its weights (:meth:`_weights_load_seconds`) plus, with vLLM's compile cache on a shared
        volume, the compilation of a replica that starts before any replica has written the compiled graphs. vLLM
        looks the graphs up once, at its start, and writes them when it has compiled (docs.vllm.ai
        "torch.compile integration", "Compilation Cache"); the graphs are taken as written when the compiling
        replica has loaded, so a replica starting while the first still compiles compiles too."""
        load = self._weights_load_seconds(pod)
        if not self.compile_extra_s or (self.compiled_at is not None and pod.started >= self.compiled_at):
            return load
        pod.compiles = True
        load += self.compile_extra_s
        if self.compiled_at is None:
            self.compiled_at, self._compiler = pod.started + load, pod
        return load

    def _weights_load_seconds(self, pod: Pod) -> float:
        """The pod's load without compilation. With a Fluid weights cache (components/fluid_cache.py), the first
        replica to start while the cache is empty reads OSS and fills it (``fill_load_s``); one that starts later
        reads the cache (``model_load_s``) but cannot finish before the blocks it reads are cached, i.e. before the
        filler's read ends: JindoRuntime caches a block as a reader first fetches it from OSS (ACK doc-detail/440265:
        the first read goes to OSS, the later ones hit the cache). Without a cache every pod loads in
        ``model_load_s``."""
        if self.fill_load_s is None:
            return float(self.model_load_s)
        if self.cache_filled_at is None:
            pod.fills_cache = True
            self.cache_filled_at = pod.started + self.fill_load_s
            return float(self.fill_load_s)
        return max(float(self.model_load_s), self.cache_filled_at - pod.started)

    def ready(self, t: float) -> list[Pod]:
        memo_t, changes, pods = self._ready_memo
        if memo_t != t or changes != self._changes:
            pods = [p for p in self.pods if p.is_ready(t)]
            self._ready_memo = (t, self._changes, pods)
        return pods

    def running(self, t: float) -> list[Pod]:
        return [p for p in self.pods if p.phase(t) == "Running"]

    def bound(self) -> int:
        """Pods holding their GPU units (bound to a node)."""
        return sum(1 for p in self.pods if p.node is not None)


class Placeholders:
    """Warm capacity (``autoscaling.warmReplicas``, components/warm_capacity.py): pause pods of a replica's size at
    priority -10, which every replica outranks.

    - The scheduler binds a pending placeholder to a free slot of a ready node, after the replicas (its queue pops
      higher priorities first); pause starts at once and holds the slot.
    - A replica that finds no free slot preempts a placeholder on a ready node (kube-scheduler's PostFilter:
      the victim of the lowest priority goes; kubernetes.io "Pod Priority and Preemption"). The victim's graceful
      termination is 0 s; the replica is nominated to that node and bound on a later cycle,
      ``SCHEDULER_POD_INITIAL_BACKOFF_S`` after (catalogs/kubernetes.py).
    - The evicted placeholder is recreated by its ReplicaSet and Pending: the cluster autoscaler provisions a node
      for it like for any pending pod at or above its expendable cutoff (-10: cluster-autoscaler FAQ, "How can I
      configure overprovisioning with Cluster Autoscaler?"), up to the pool's most nodes.
    - A node held by a placeholder is not empty, so the cluster autoscaler keeps it (pods below the cutoff would
      not keep it; -10 is not below).

    A node a placeholder holds has not pulled the workload's image (``Node.image_at`` stays None): the replica that
    takes it pulls first."""

    def __init__(self, count: int):
        self.count = count
        self.pods: list[Pod] = [Pod(f"warm-{k:05d}", -1e9, placeholder=True, workload=PLACEHOLDER)
                                for k in range(count)]
        self.preempted = 0
        """Placeholders preempted by replicas so far."""

    def start(self, nodes: "NodePool") -> None:
        """Placeholders of the steady state the run begins in, on the free slots the scheduler picks."""
        for pod in self.pods:
            node = nodes.pick([x for x in nodes.nodes if len(x.pods) < x.slots], PLACEHOLDER)
            if node is None:
                return
            node.pods.append(pod)
            pod.node, pod.bound, pod.started = node, -1e9, -1e9

    def preempt(self, t: float, ready_nodes: list) -> Optional[Node]:
        """The ready node a replica takes by evicting a placeholder (the emptiest of replicas first, so the
        replica spreads), or None when no placeholder runs on a ready node."""
        held = [n for n in ready_nodes if any(p.placeholder for p in n.pods)]
        if not held:
            return None
        node = min(held, key=lambda n: sum(not p.placeholder for p in n.pods))
        victim = next(p for p in node.pods if p.placeholder)
        node.pods.remove(victim)
        victim.node, victim.bound, victim.started, victim.created = None, None, None, t
        self.preempted += 1
        return node

    def schedule(self, t: float, nodes: "NodePool") -> None:
        if not self.pending():
            return
        ready_nodes = [n for n in nodes.nodes if n.ready_at <= t]
        for pod in self.pods:
            if pod.node is not None:
                continue
            node = nodes.pick([n for n in ready_nodes if len(n.pods) < n.slots], PLACEHOLDER)
            if node is None:
                return
            node.pods.append(pod)
            node.empty_since = None
            pod.node, pod.bound, pod.started = node, t, t

    def pending(self) -> int:
        return sum(1 for p in self.pods if p.node is None)

    def bound(self) -> int:
        """Placeholders holding their GPU units (bound to a node): warm capacity paid for while idle."""
        return self.count - self.pending()


class NodePool:
    """The pool's nodes and its cluster autoscaler: nodes for pods no ready or upcoming node can hold, up to
    ``max_nodes``, at each scan (``scaler.scan_s``); an empty node goes after the scale-down unneeded time (not
    below ``min_nodes``, nor within the scale-down delay after the last scale-up). A pool without autoscaling keeps
    its nodes. The timing is the cluster's (``workload_setup.node_scaler``).

    Scale-down as cluster-autoscaler does it (kubernetes/autoscaler FAQ, "How does scale-down work?"): a node's
    unneeded time counts from the first scan that found it unneeded, and it goes at the first scan at which it has
    been unneeded that long; empty nodes go in bulk, up to ``MAX_EMPTY_BULK_DELETE`` at a scan (the rest wait for
    the next). The unneeded times keep counting through the delay after a scale-up: the autoscaler updates its
    unneeded nodes before it checks that cooldown (kubernetes/autoscaler ``cluster-autoscaler/core/
    static_autoscaler.go`` ``RunOnce``: ``scaleDownPlanner.UpdateClusterState`` before ``isScaleDownInCooldown``).
    A scan that added nodes removes none ("if no scale-up is needed", the FAQ's words): the delay after a
    scale-up, which the stack holds positive, already keeps it from removing any."""

    def __init__(self, slots: int, min_nodes: int, max_nodes: int, provision_s: int, autoscaled: bool,
                 initial: int, pre_pull_s: Optional[int] = None, scaler: NodeScaler = NodeScaler(),
                 placement: str = "binpack"):
        self.slots, self.min_nodes, self.max_nodes = slots, min_nodes, max_nodes
        self.placement = placement
        """The scheduler's pick among the nodes a pod fits (``cluster.podPlacement``): binpack or spread."""
        self.scaler = scaler
        """The cluster's node autoscaler settings (scan interval, scale-down timing)."""
        self.provision_s, self.autoscaled = provision_s, autoscaled
        self.pre_pull_s = pre_pull_s
        """With a pre-puller (``prePull``): the image pull its DaemonSet pod starts when a node turns Ready (a
        DaemonSet pod is created for a node once it is Ready, like a replica); None without one."""
        # a node present at the start holds the image if a pre-puller ran there or a replica did (start_ready)
        self.nodes = [Node(f"node-{i}", -1e9, slots, image_at=-1e9 if pre_pull_s is not None else None)
                      for i in range(initial)]
        self._count = initial
        self._last_scale_up = -1e9

    def scan(self, t: float, pods: Pods, warm: Optional[Placeholders] = None) -> None:
        if not self.autoscaled or int(t) % self.scaler.scan_s:
            return
        pending = sum(1 for p in pods.pods if p.node is None) + (warm.pending() if warm is not None else 0)
        free = sum(n.slots - len(n.pods) for n in self.nodes)
        short = pending - free
        if short > 0:
            for _ in range(max(min(math.ceil(short / self.slots), self.max_nodes - len(self.nodes)), 0)):
                ready = t + self.provision_s
                self.nodes.append(Node(f"node-{self._count}", ready, self.slots, created=t,
                                       image_at=None if self.pre_pull_s is None else ready + self.pre_pull_s))
                self._count += 1
                self._last_scale_up = t
        removed = 0
        for n in list(self.nodes):
            if n.pods or n.ready_at > t:
                n.empty_since = None
                continue
            if n.empty_since is None:
                n.empty_since = t
            if (removed < MAX_EMPTY_BULK_DELETE and len(self.nodes) > self.min_nodes
                    and t - n.empty_since >= self.scaler.unneeded_s
                    and t - self._last_scale_up >= self.scaler.delay_after_add_s):
                self.nodes.remove(n)
                removed += 1

    def pick(self, fits: list, workload: str) -> Optional[Node]:
        """The node the scheduler binds a pod of ``workload`` to among ``fits`` (None: none fits). ``binpack``: the
        fullest. ``spread``: the fewest of the workload's pods (PodTopologySpread's default per-hostname
        constraint), then the fewest pods (NodeResourcesFit's LeastAllocated). Ties go to the oldest node; the real
        scheduler picks among equal scores at random."""
        if not fits:
            return None
        if self.placement == "spread":
            return min(fits, key=lambda n: (sum(1 for p in n.pods if p.workload == workload), len(n.pods)))
        return max(fits, key=lambda n: len(n.pods))

    def ready_count(self, t: float) -> int:
        return sum(1 for n in self.nodes if n.ready_at <= t)
