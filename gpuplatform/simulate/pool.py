"""Several workloads in one node pool: shared nodes, shared headroom, and placeholders any of them preempts.

Each workload runs its own loop (:class:`gpuplatform.simulate.engine.Simulation`: its demand, queue, metric
pipeline, HPA or KEDA, pods), and all of them share the pool's nodes and its cluster autoscaler
(:class:`gpuplatform.simulate.cluster.NodePool`). The pool's warm capacity is one set of placeholders
(:class:`gpuplatform.simulate.cluster.Placeholders`: pause pods of one replica's size at priority -10, the
overprovisioning pattern of the cluster-autoscaler FAQ) that a replica of whichever workload finds no free slot
preempts; the evicted placeholder goes Pending and the autoscaler adds a node for it. Each second, every workload's
autoscaler, scrape and scheduler run first, in the order the workloads are given (kube-scheduler pops pods by
priority, then by arrival: the replicas all have priority 0, the placeholders come after them), then one autoscaler
scan sees every pending pod of the pool. The pool's cost is its node-seconds (every node from its request to its
removal, whatever runs on it), counted once for the pool.

The workloads must run one image (a simulated node holds one image: ``Node.image_at``) and request the same GPU
units. Headroom is shared two ways: placeholders, and a node a scale-in emptied, which stays for the autoscaler's
unneeded time with the image on it and takes the next burst's replica of either workload.

What it is for: headroom shared by workloads whose bursts do not coincide, where each would otherwise keep a
replica of its own at ``minReplicas``. ``tune_pool`` compares the two on the same traces at the same SLO.

A pool's warm set (``nodePools[].warmSet``, components/warm_set.py) is modelled by :class:`SleepingSet`: each warm
GPU holds a slot on a node (its image there) with a sleeping replica of every model of the set; when a model of the
set has a replica pending, a warm GPU not yet taken wakes that model's replica instead of a cold start, ready at the
readiness probe's next pass after ``wake_seconds`` (catalogs/servers.py: level 1 the weights' copy back from host
memory at ``WAKE_HOST_TO_GPU_GIB_PER_SECOND`` plus ``WAKE_OVERHEAD_SECONDS``, level 2 the weights' read again plus
the overhead; estimates). The woken replica keeps that GPU, so the set holds one warm GPU fewer, until the
ReplicaSet deletes it on a scale-in (the newest ready pod goes first: usually the woken one) and it goes back to
sleep, its GPU warm again at once (the sleep's own copy to host memory is not timed). No fresh warm GPU is started
to replace a taken one. The sleeping replicas' host memory is not simulated (placement counts it).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable, Optional, Sequence

from gpuplatform.components.config import PlatformConfig
from gpuplatform.components.errors import CommandLineIssue, ConfigError
from gpuplatform.components.model_startup import READINESS_PROBE_PERIOD_SECONDS
from gpuplatform.simulate.cluster import NodePool, Placeholders, Pod, Pods
from gpuplatform.simulate.engine import Result, Simulation
from gpuplatform.simulate.workload_setup import WarmSet, WorkloadSetup, build_setup as setup, find_workload
from gpuplatform.simulate.slo import MINUTE_S, error_budget_minutes
from gpuplatform.simulate.traces import Trace


class _PoolPods:
    """Every workload's pods, as the autoscaler's scan counts them (pending pods and free slots of the pool)."""

    def __init__(self, sims: Sequence[Simulation]):
        self._sims = sims

    @property
    def pods(self) -> list:
        return [p for sim in self._sims for p in sim.pods.pods]


class SleepingSet:
    """The pool's warm set in a run: ``gpus`` holders (one slot each, not preemptible by replicas) on which a
    replica of every model in ``wakes`` sleeps; ``wakes`` maps a model to its wake's parts."""

    def __init__(self, gpus: int, level: int, wakes: dict[str, dict]):
        self.gpus, self.level, self.wakes = gpus, level, wakes
        self.holders = [Pod(f"sleeping-{k:05d}", -1e9) for k in range(gpus)]
        self.taken: dict[int, tuple[Simulation, Pod]] = {}
        """Warm GPU (its index) -> the woken replica holding it, with its workload's loop."""
        self.woken = 0
        """Wake-ups so far."""
        self.asleep_s = 0.0
        """Warm-GPU-seconds with every model asleep (idle headroom paid for)."""

    def start(self, nodes: NodePool) -> None:
        """The holders of the steady state the run begins in, on the free slots of the first nodes (the sleeping
        servers ran there: their image is on the node)."""
        for pod in self.holders:
            node = next((x for x in nodes.nodes if len(x.pods) < x.slots), None)
            if node is None:
                raise ConfigError([CommandLineIssue("--workload", f"the warm set's {self.gpus} GPU(s) do not fit the "
                                                                  "pool's nodes beside the replicas at the start; "
                                                                  "allowed: a pool that holds both")])
            node.pods.append(pod)
            node.image_at = node.image_at if node.image_at is not None else -1e9
            pod.node, pod.bound, pod.started, pod.ready_at = node, -1e9, -1e9, -1e9

    def restore(self) -> None:
        """A woken replica the ReplicaSet deleted goes back to sleep: its GPU is warm again."""
        for k, (sim, pod) in list(self.taken.items()):
            if pod in sim.pods.pods:
                continue
            holder = self.holders[k]
            holder.node.pods.append(holder)
            del self.taken[k]

    def wake(self, t: float, sim: Simulation) -> None:
        """Each pending replica of a model of the set takes a warm GPU, oldest pending first, while one is free."""
        parts = self.wakes.get(sim.s.name)
        if parts is None:
            return
        for pod in sim.pods.pods:
            if pod.node is not None:
                continue
            free = [k for k in range(self.gpus) if k not in self.taken]
            if not free:
                return
            k = free[0]
            holder = self.holders[k]
            node = holder.node
            node.pods.remove(holder)
            node.pods.append(pod)
            node.empty_since = None
            wake = parts["seconds"]
            pod.node, pod.bound, pod.started, pod.load_s, pod.woken = node, t, t, wake, dict(parts)
            pod.ready_at = t + READINESS_PROBE_PERIOD_SECONDS * math.ceil(wake / READINESS_PROBE_PERIOD_SECONDS)
            sim.pods._changes += 1
            self.taken[k] = (sim, pod)
            self.woken += 1

    def record(self) -> None:
        self.asleep_s += self.gpus - len(self.taken)


def sleeping_set(warm: Optional[WarmSet], gpus: Optional[int] = None) -> Optional[SleepingSet]:
    """The pool's warm set as the stack states it (``gpus`` when given: 0 for none); None without one."""
    count = (warm.gpus if warm is not None else 0) if gpus is None else gpus
    if warm is None or count <= 0:
        return None
    return SleepingSet(count, warm.level, warm.wakes)


@dataclass
class PoolResult:
    workloads: list[Result]
    node_s: float
    placeholder_s: float
    placeholders: int
    preempted: int
    peak_nodes: int
    budgets: dict = field(default_factory=dict)
    """Per workload, the bad minutes its SLO's error budget allows on its trace (0 without an SLO)."""
    warm_gpus: int = 0
    """GPUs the pool's warm set held in the run (0: none)."""
    woken: int = 0
    """Sleeping replicas woken in the run."""
    asleep_s: float = 0.0
    """Warm-GPU-seconds with every model asleep."""

    @property
    def node_hours(self) -> float:
        return round(self.node_s / 3600, 3)

    @property
    def bad_minutes(self) -> dict:
        return {r.workload: r.tally.bad_minutes for r in self.workloads}

    @property
    def within_budget(self) -> bool:
        """Every workload's bad minutes within its error budget: each SLO verdict met."""
        return all(r.tally.bad_minutes <= self.budgets.get(r.workload, 0) for r in self.workloads)

    def to_json(self) -> dict:
        return {"nodeHours": self.node_hours, "placeholders": self.placeholders,
                "placeholderHours": round(self.placeholder_s / 3600, 3), "preempted": self.preempted,
                "peakNodes": self.peak_nodes, "withinBudget": self.within_budget,
                "warmSet": {"gpus": self.warm_gpus, "woken": self.woken,
                            "asleepGpuHours": round(self.asleep_s / 3600, 3)},
                "workloads": [{"workload": r.workload, "minReplicas": r.setup.min_replicas,
                               "badMinutes": r.tally.bad_minutes, "budgetMinutes": self.budgets.get(r.workload, 0),
                               "readyReplicaHours": round(r.tally.ready_replica_s / 3600, 3),
                               "capacityReadySeconds": r.capacity_ready_s,
                               "capacityPath": r.tally.capacity_path} for r in self.workloads]}


def _pool_of(cfg: PlatformConfig, workloads: Sequence[str]) -> str:
    pools = {find_workload(cfg, name).node_pool for name in workloads}
    if len(pools) != 1:
        raise ConfigError([CommandLineIssue("--workload", f"{', '.join(workloads)} run on pools "
                                                          f"{', '.join(sorted(pools))}; allowed: workloads of one "
                                                          "node pool")])
    return pools.pop()


def simulate_pool(cfg: PlatformConfig, stack: str, traces: dict[str, Trace], placeholders: Optional[int] = None,
                  slo_target: Optional[dict] = None, warm_set_gpus: Optional[int] = None,
                  phases: Optional[dict] = None, provision_s: Optional[int] = None,
                  on_second: Optional[Callable[[float, NodePool], None]] = None) -> PoolResult:
    """One run of the workloads named in ``traces`` (each on its own demand) sharing their pool: each workload's
    setup built once (workload_setup.build_setup), then :func:`run_pool`."""
    names = list(traces)
    _pool_of(cfg, names)
    return run_pool([setup(cfg, name) for name in names], stack, traces, placeholders, slo_target, warm_set_gpus,
                    phases, provision_s, on_second)


def run_pool(setups: Sequence[WorkloadSetup], stack: str, traces: dict[str, Trace],
             placeholders: Optional[int] = None, slo_target: Optional[dict] = None,
             warm_set_gpus: Optional[int] = None, phases: Optional[dict] = None, provision_s: Optional[int] = None,
             on_second: Optional[Callable[[float, NodePool], None]] = None) -> PoolResult:
    """One run of the workloads of ``setups`` (each on its trace in ``traces``, by name) sharing their pool.
    Placeholders: the workloads' ``warmReplicas`` together (``placeholders`` when given): pause pods of one replica's
    size at one priority class, so a replica of any workload preempts any of them. The pool's warm set as stated
    (its ``gpus`` set to ``warm_set_gpus`` when given, 0 for none): :class:`SleepingSet`. ``slo_target``: per
    workload, the level judged (as ``simulate --slo``). ``phases``: per workload, its loop's phases (engine.Phases;
    default: each loop's own). ``provision_s``: a node's provisioning instead of the catalog's (the real-loop harness
    plays a shorter one on both sides). ``on_second(t, nodes)`` is called at the end of every second."""
    names = [s.name for s in setups]
    sleeping = sleeping_set(setups[0].warm_set, warm_set_gpus)
    if placeholders is None:
        placeholders = sum(s.warm_replicas for s in setups)
    if provision_s is not None:
        setups = [replace(s, provision_s=provision_s) for s in setups]
    slots = {s.slots for s in setups}
    if len(slots) != 1:
        raise ConfigError([CommandLineIssue("--workload", f"{', '.join(names)} need different slots per node "
                                                          f"({', '.join(map(str, sorted(slots)))}); allowed: "
                                                          "workloads whose replicas request the same GPU units")])
    images = {s.image for s in setups}
    if len(images) != 1:
        # a simulated node holds one image (Node.image_at): a node one workload's replica ran on would pass for
        # holding the other's image too
        raise ConfigError([CommandLineIssue("--workload", f"{', '.join(names)} run different images "
                                                          f"({', '.join(sorted(images))}); the pool model holds one "
                                                          "image per node; allowed: workloads of one image")])
    sims = [Simulation(s, traces[s.name], (phases or {}).get(s.name), (slo_target or {}).get(s.name))
            for s in setups]
    first = setups[0]
    warm = Placeholders(placeholders)
    replicas = sum(sim.spec for sim in sims) + (sleeping.gpus if sleeping is not None else 0)
    initial = (max(first.min_nodes, math.ceil((replicas + placeholders) / first.slots)) if first.autoscaled_pool
               else first.min_nodes)
    pre_pull = all(s.pre_pull for s in setups)
    nodes = NodePool(first.slots, first.min_nodes, first.max_nodes, first.provision_s, first.autoscaled_pool,
                     min(initial, first.max_nodes), pre_pull_s=first.plan.image_pull_s if pre_pull else None,
                     scaler=first.node_scaler, placement=first.pod_placement)
    for sim in sims:  # each loop's steady state again, on the shared pool
        p = sim.pods
        sim.pods = Pods(p.workload, p.image_pull_s, p.model_load_s, p.fill_load_s, p.compile_extra_s)
        sim.pods.start_ready(sim.spec, nodes)
        sim.nodes, sim.warm = nodes, warm
    if sleeping is not None:
        sleeping.start(nodes)
    warm.start(nodes)
    everyone = _PoolPods(sims)
    node_s = placeholder_s = 0.0
    peak = len(nodes.nodes)
    duration = max(int(tr.duration_s) for tr in traces.values())
    for step in range(duration + 1):
        t = float(step)
        for sim in sims:
            sim.autoscale(t)
            sim.observe(t)
        if sleeping is not None:
            # the waker answers a model's pending replica before the scheduler starts it cold elsewhere
            sleeping.restore()
            for sim in sims:
                sleeping.wake(t, sim)
        for sim in sims:
            sim.pods.schedule(t, nodes, warm)
        warm.schedule(t, nodes)
        served = []
        for sim in sims:
            demand = sim.trace.demand(t)
            out, levels = sim.serve(t, demand)
            sim.scraper.count(sim.pods, t, out, demand)
            sim._served, sim._levels = out, levels
            served.append((demand, out, levels))
        nodes.scan(t, everyone, warm)
        for sim, (demand, out, levels) in zip(sims, served):
            sim.record(t, demand, out, levels)
        node_s += len(nodes.nodes)
        placeholder_s += warm.bound()
        if sleeping is not None:
            sleeping.record()
        peak = max(peak, len(nodes.nodes))
        if on_second is not None:
            on_second(t, nodes)
    results = [sim.result(stack) for sim in sims]
    budgets = {}
    for sim in sims:
        compliance = sim.s.slo_compliance
        minutes = int(sim.trace.duration_s) // MINUTE_S
        budgets[sim.s.name] = error_budget_minutes(compliance, minutes) if compliance is not None else 0
    result = PoolResult(results, node_s, placeholder_s, placeholders, warm.preempted, peak, budgets)
    if sleeping is not None:
        result.warm_gpus, result.woken, result.asleep_s = sleeping.gpus, sleeping.woken, sleeping.asleep_s
    return result


def with_setting(cfg: PlatformConfig, min_replicas: dict[str, int], placeholders: int) -> PlatformConfig:
    """``cfg`` with each named workload's ``minReplicas`` set and the pool's placeholders stated as the first named
    workload's ``warmReplicas`` (the others' 0): placeholders of one size serve every workload of the pool."""
    workloads, first = [], next(iter(min_replicas))
    for w in cfg.workloads:
        a = w.autoscaling
        if a is not None and w.name in min_replicas:
            a = a.model_copy(update={"min_replicas": min_replicas[w.name],
                                     "warm_replicas": placeholders if w.name == first else 0})
            w = w.model_copy(update={"autoscaling": a})
        workloads.append(w)
    return cfg.model_copy(update={"workloads": workloads})


@dataclass
class PoolTuning:
    tried: list[tuple[dict, PoolResult]]
    best_floor: Optional[tuple[dict, PoolResult]]
    """The cheapest setting within every SLO with no placeholder: headroom as replicas at ``minReplicas``."""
    best_placeholders: Optional[tuple[dict, PoolResult]]
    """The cheapest setting within every SLO with one placeholder or more."""
    refused: int = 0
    """Settings the stack's validation refused (never simulated)."""
    best_warm_set: Optional[tuple[dict, PoolResult]] = None
    """The cheapest setting within every SLO with the pool's warm set (and no placeholder); None without a warm
    set, or when none is within every SLO."""

    @property
    def best(self) -> Optional[tuple[dict, PoolResult]]:
        found = [x for x in (self.best_floor, self.best_placeholders, self.best_warm_set) if x is not None]
        return min(found, key=lambda x: (x[1].node_s, x[1].placeholder_s)) if found else None

    @property
    def placeholders_win(self) -> Optional[bool]:
        """Whether the cheapest setting within every SLO keeps placeholders (a tie goes to none); None when no
        setting tried is within every SLO."""
        best = self.best
        return None if best is None else bool(best[0]["placeholders"])

    @property
    def warm_set_wins(self) -> Optional[bool]:
        """Whether the cheapest setting with the warm set costs fewer node-hours than the cheapest headroom as
        ``minReplicas`` alone (a tie goes to ``minReplicas``); None when either keeps no SLO or the pool has no
        warm set."""
        if self.best_warm_set is None or self.best_floor is None:
            return None
        return self.best_warm_set[1].node_s < self.best_floor[1].node_s


def tune_pool(cfg: PlatformConfig, stack: str, traces: dict[str, Trace], max_min_replicas: int = 2,
              max_placeholders: int = 2, slo_target: Optional[dict] = None,
              provision_s: Optional[int] = None) -> PoolTuning:
    """Every combination of each workload's ``minReplicas`` (its least allowed up to ``max_min_replicas``) and the
    pool's placeholders (0 up to ``max_placeholders``, within what the pool holds beside every ``maxReplicas``),
    each judged by every workload's SLO verdict (its bad minutes within its error budget: simulate.slo) and costed
    in the pool's node-hours. The answer names the cheapest with placeholders and the cheapest without, so whether
    placeholders beat ``minReplicas`` on these traces is read off the same judge and the same cost. A pool with a
    warm set (``warmSet``) is tried both ways: every setting above without it, and each ``minReplicas`` with it and
    no placeholder; the cheapest with it is set against the cheapest without placeholders (headroom held as
    replicas at ``minReplicas``). ``provision_s``: as :func:`simulate_pool`'s."""
    from itertools import product

    from gpuplatform.components.validation import validate

    names = list(traces)
    pool = next(p for p in cfg.node_pools if p.name == _pool_of(cfg, names))
    warm_set = pool.warm_set
    plain = without_warm_set(cfg, pool.name)
    setups = {name: setup(cfg, name) for name in names}
    room = setups[names[0]].max_nodes * setups[names[0]].slots - sum(s.max_replicas for s in setups.values())
    ranges = [range(1 if not setups[n].keda else 0, min(max_min_replicas, setups[n].max_replicas - 1) + 1)
              for n in names]
    tried, refused = [], 0
    for mins in product(*ranges):
        for count in range(0, min(max_placeholders, max(room, 0)) + 1):
            if count and not pool.autoscaling:
                continue
            setting = {"minReplicas": dict(zip(names, mins)), "placeholders": count, "warmSetGpus": 0}
            candidate = with_setting(plain, setting["minReplicas"], count)
            if validate(candidate):
                refused += 1  # e.g. placeholders beside every maxReplicas beyond what the pool holds
                continue
            tried.append((setting, simulate_pool(candidate, stack, traces, count, slo_target, warm_set_gpus=0,
                                                 provision_s=provision_s)))
        if warm_set is not None:
            setting = {"minReplicas": dict(zip(names, mins)), "placeholders": 0, "warmSetGpus": warm_set.gpus}
            candidate = with_setting(cfg, setting["minReplicas"], 0)
            if validate(candidate):
                refused += 1  # the warm set's GPUs beside every maxReplicas beyond what the pool holds
                continue
            tried.append((setting, simulate_pool(candidate, stack, traces, 0, slo_target, provision_s=provision_s)))
    feasible = [x for x in tried if x[1].within_budget]

    def cheapest(xs):
        return min(xs, key=lambda x: (x[1].node_s, x[1].placeholder_s), default=None)

    bare = [x for x in feasible if not x[0]["warmSetGpus"]]
    return PoolTuning(tried, cheapest([x for x in bare if not x[0]["placeholders"]]),
                      cheapest([x for x in bare if x[0]["placeholders"]]), refused,
                      cheapest([x for x in feasible if x[0]["warmSetGpus"]]))


def without_warm_set(cfg: PlatformConfig, pool_name: str) -> PlatformConfig:
    """``cfg`` with the named pool's warm set taken off."""
    pools = [p.model_copy(update={"warm_set": None}) if p.name == pool_name else p for p in cfg.node_pools]
    return cfg.model_copy(update={"node_pools": pools})


def staggered(trace: Trace, offset_s: int, name: str) -> Trace:
    """``trace`` shifted later by ``offset_s`` (its first rate held before), the same length: a second workload
    whose bursts come at other times."""
    times = (0,) + tuple(t + offset_s for t in trace.times if t + offset_s <= trace.duration_s)
    rates = (trace.rates[0],) + tuple(r for t, r in zip(trace.times, trace.rates) if t + offset_s <= trace.duration_s)
    return replace(trace, name=name, times=times, rates=rates)


def setting_text(setting: dict) -> str:
    mins = ", ".join(f"{name} {n}" for name, n in setting["minReplicas"].items())
    count, gpus = setting["placeholders"], setting.get("warmSetGpus", 0)
    return (f"minReplicas {mins}" + (f" + {count} placeholder{'s' if count > 1 else ''}" if count else "")
            + (f" + the warm set on {gpus} GPU{'s' if gpus > 1 else ''}" if gpus else ""))


def outcome_text(result: PoolResult) -> str:
    bad = ", ".join(f"{r.workload} {r.tally.bad_minutes}/{result.budgets.get(r.workload, 0)}"
                    for r in result.workloads)
    held = (f", {result.placeholder_s / 3600:.4g} placeholder-hours, {result.preempted} preempted"
            if result.placeholders else "")
    if result.warm_gpus:
        held += (f", warm set of {result.warm_gpus} GPU{'s' if result.warm_gpus > 1 else ''}: {result.woken} "
                 f"woken, {result.asleep_s / 3600:.4g} GPU-hours asleep")
    return f"{result.node_hours:g} node-hours (peak {result.peak_nodes} nodes{held}); bad minutes / budget: {bad}"
