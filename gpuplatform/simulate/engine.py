"""The simulation: demand -> ready replicas -> exporter -> Prometheus -> adapter query -> HPA -> pods -> nodes.

One second per step; each step runs the stages of :class:`Simulation` in this order, each a method with its own
state object:

1. ``schedule``: the scheduler binds pending pods to ready nodes; bound pods pull and load (``cluster.Pods``);
2. ``serve``: demand meets the ready replicas (``service.Queue``, a transient queue per replica);
3. ``observe``: the GPU exporter collects, servers count, Prometheus scrapes and writes stale markers
   (``scrape.Scraper``);
4. ``autoscale``: the HPA syncs (or KEDA polls and its HPA syncs) and the ReplicaSet follows
   (``autoscaling.HpaLoop``/``KedaLoop``);
5. ``provision``: the cluster autoscaler scans (``cluster.NodePool``);
6. ``record``: the figures (:class:`Tally`).

The loop reads nothing of the stack but its :class:`~gpuplatform.simulate.workload_setup.WorkloadSetup`, built once
per workload (``setup``). What each stage models and where its behaviour comes from is in docs/simulate.md.
"""
from __future__ import annotations

import math
import sys
import time
from array import array
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Optional

from gpuplatform.catalogs.metrics import METRICS
from gpuplatform.components.adapter_rules import render_for_pods
from gpuplatform.components.drain import drain_window_s
from gpuplatform.components.slo_alerts import bad_minute_expr, workload_sli
from gpuplatform.simulate import hpa as hpa_mod
from gpuplatform.simulate import promql
from gpuplatform.simulate.autoscaling import HpaLoop, KedaLoop, Trigger
from gpuplatform.simulate.bounds import LowerBound, lower_bound
from gpuplatform.simulate.slo import MINUTE_S, SloVerdict, bad_minute, judge
from gpuplatform.simulate.cluster import NodePool, Placeholders, Pods
from gpuplatform.simulate.scrape import Scraper
from gpuplatform.simulate.startup import capacity_path
from gpuplatform.simulate.service import LATENCY, Queue, ServicePlan, bucket_p90
from gpuplatform.simulate.traces import Trace
from gpuplatform.simulate.wake import WakeTracker
# the setup and its builder under the names they had here
from gpuplatform.simulate.workload_setup import WorkloadSetup as Setup
from gpuplatform.simulate.workload_setup import build_setup as setup
from gpuplatform.simulate.workload_setup import duration_seconds, find_workload, service_plan  # noqa: F401

if TYPE_CHECKING:
    from gpuplatform.components.config import PlatformConfig



# ------------------------------------------------------------------------------------------------ inputs
@dataclass(frozen=True)
class Phases:
    """Offsets (seconds) of the periodic loops: the exporter's collection, Prometheus' scrape, the HPA sync and
    KEDA's polling (default: the scrape's)."""
    collect: int
    scrape: int
    sync: int
    poll: Optional[int] = None
    pod_scrapes: tuple = ()
    """Per pod in the order the run creates them, its own target's scrape offset (``scrape.Scraper.pod_phases``);
    empty: every pod's target at ``scrape``."""


def default_phases(ref: int, collect: int, scrape: int, sync: int) -> Phases:
    """The alignment the plan's latency formula assumes: each stage runs just before the one upstream of it has
    the change (the exporter collected 1 s before the load changed, Prometheus scrapes 1 s before the next
    collection, the HPA syncs 1 s before the next scrape). Not the worst case of a real step: see
    :mod:`gpuplatform.simulate.sweep`."""
    c0 = ref - 1
    s0 = (c0 + collect - 1) if collect else ref - 1
    h0 = s0 + scrape - 1
    return Phases(c0 % max(collect, 1), s0 % scrape, h0 % sync)



# ------------------------------------------------------------------------------------------------ figures
@dataclass
class PerSecond:
    """The run second by second, for the plot (the JSON's ``timeline`` samples only the HPA's syncs): demand, the
    first metric's true value (what ``over_target_s`` judges), whether that second counted as over target, and the
    replicas (the Deployment's scale), ready pods and ready nodes. Compact arrays: a tuning run keeps many runs."""
    demand: array = field(default_factory=lambda: array("d"))
    level: array = field(default_factory=lambda: array("d"))
    over: array = field(default_factory=lambda: array("b"))
    replicas: array = field(default_factory=lambda: array("i"))
    ready: array = field(default_factory=lambda: array("i"))
    nodes: array = field(default_factory=lambda: array("i"))
    failing: array = field(default_factory=lambda: array("b"))
    warm: array = field(default_factory=lambda: array("i"))
    """Warm-capacity placeholders bound to a node (holding a slot a replica can preempt)."""
    slo: list = field(default_factory=list)
    """Per SLO objective, its metric's true value each second."""


@dataclass
class Tally:
    """The figures, second by second. Costs count what holds capacity: a pod from binding to its node (it holds
    its GPU units while it pulls and loads) and a node from its creation (a provisioning node is billed)."""
    over_target_s: int = 0
    """Seconds the replicas' true metric is above target by more than the HPA's tolerance, or requests fail."""
    above_target_s: int = 0
    """Seconds above target at all (inside the tolerance band too)."""
    failed_requests: float = 0.0
    scale_in_removed: int = 0
    """Ready replicas a scale-in removed."""
    scale_in_in_flight: float = 0.0
    """Requests in flight on them when they were removed (what a pod without a drain loses)."""
    scale_in_dropped: float = 0.0
    """Of those, and of the requests routed to them before their endpoints were gone, the ones lost: the drain
    chain (components/drain.py) decides. Counted in ``failed_requests`` too."""
    drain_s: float = 0.0
    """Replica-seconds the removed replicas held their GPUs while they drained (counted in ``replica_s``)."""
    replica_s: float = 0.0
    ready_replica_s: float = 0.0
    node_s: float = 0.0
    warm_s: float = 0.0
    """Placeholder-seconds bound to a node (warm capacity: each holds one replica's GPU units while idle)."""
    peak_replicas: int = 0
    at_max_s: int = 0
    first_scale_up_s: Optional[float] = None
    capacity_ready_s: Optional[float] = None
    capacity_path: Optional[dict] = None
    """Where the time to ready capacity went: :func:`gpuplatform.simulate.startup.capacity_path`."""
    increase_at: Optional[float] = None
    ready_at_increase: int = 0
    """Ready replicas at the load increase: capacity counts as reached only once more are ready."""
    receded_at: Optional[float] = None
    """When the load fell back to what the replicas ready at the increase serve before any added replica was
    ready: that increase never reached capacity (``capacity_ready_s`` stays None)."""
    timeline: list = field(default_factory=list)
    sli: list = field(default_factory=list)
    """Per objective judged, each whole minute's SLI: True bad, False good, None no pod reported (simulate.slo)."""
    failed_minutes: list = field(default_factory=list)
    """Each whole minute: whether requests failed in it."""
    bad_minutes: int = 0
    """Whole minutes so far out of the SLO judged (the workload's SLO, else the first metric at the level judged):
    an objective's SLI bad, or requests failed. What ``--tune`` keeps within its budget."""
    seconds: PerSecond = field(default_factory=PerSecond)


@dataclass
class Result:
    stack: str
    workload: str
    trace: str
    autoscaler: str
    metric: str
    api_name: str
    target: float
    unit: str
    query: str
    tally: Tally
    bound: LowerBound
    plan: ServicePlan
    setup: Setup
    phases: Phases
    slo_target: Optional[float] = None
    """The level time over target is judged against (``--slo``; the target when none was given)."""
    slo: Optional[SloVerdict] = None
    """The workload's SLO judged on the run (None without ``slo``)."""
    sim: Optional["Simulation"] = None
    """The run itself, for the reasons of figures that read "never" (simulate.reasons)."""

    # the figures under their reported names
    @property
    def first_scale_up_s(self) -> Optional[float]:
        return self.tally.first_scale_up_s

    @property
    def capacity_ready_s(self) -> Optional[float]:
        return self.tally.capacity_ready_s

    @property
    def over_target_s(self) -> float:
        return float(self.tally.over_target_s)

    @property
    def timeline(self) -> list:
        return self.tally.timeline

    @property
    def increase_at(self) -> Optional[float]:
        return self.tally.increase_at

    @property
    def gpu_hours(self) -> float:
        return round(self.tally.node_s * self.setup.gpus_per_node / 3600, 3)

    @property
    def unit_hours(self) -> float:
        return round(self.tally.replica_s * self.setup.units_per_replica / 3600, 3)

    @property
    def warm_unit_hours(self) -> float:
        """What the warm-capacity placeholders held, in the replicas' GPU unit: their idle cost."""
        return round(self.tally.warm_s * self.setup.units_per_replica / 3600, 3)

    @property
    def replicas_max(self) -> int:
        return self.tally.peak_replicas

    @property
    def nodes_max(self) -> int:
        return max((e["nodes"] for e in self.tally.timeline), default=0)

    @property
    def every_second_within(self) -> bool:
        """No second over the level beyond the tolerance and no failed request: the strict ceiling the lower bound
        is taken for (bounds.py), stricter than the SLO verdict (``slo``, judged per minute)."""
        return self.tally.over_target_s == 0

    def summary(self) -> dict:
        t, s = self.tally, self.setup
        return {"first_scale_up_s": t.first_scale_up_s, "capacity_ready_s": t.capacity_ready_s,
                "capacity_path": t.capacity_path,
                "bad_minutes": t.bad_minutes,
                "over_target_s": float(t.over_target_s), "above_target_s": float(t.above_target_s),
                "failed_requests": round(t.failed_requests, 3),
                "scale_in": {"removed": t.scale_in_removed, "in_flight": round(t.scale_in_in_flight, 3),
                             "dropped": round(t.scale_in_dropped, 3), "drain_replica_s": round(t.drain_s, 1),
                             "drain": None if s.drain is None else s.drain.summary(),
                             "lossless": None if s.drain is None else s.drain.lossless},
                "replica_hours": round(t.replica_s / 3600, 3), "ready_replica_hours": round(t.ready_replica_s / 3600, 3),
                "unit_hours": self.unit_hours, "unit": s.unit, "node_hours": round(t.node_s / 3600, 3),
                "warm_replicas": s.warm_replicas, "warm_unit_hours": self.warm_unit_hours,
                "warm_preemptions": self.sim.warm.preempted if self.sim is not None else 0,
                "gpu_hours": self.gpu_hours, "peak_replicas": t.peak_replicas, "max_replicas": s.max_replicas,
                "time_at_max_s": float(t.at_max_s), "lower_bound": self.bound.to_json(s)}

    def to_json(self) -> dict:
        wake = self.sim.wake if self.sim is not None else None
        return {**self.summary(), "timeline": self.tally.timeline,
                "wakeUps": None if wake is None else wake.to_json(),
                "stack": self.stack, "workload": self.workload, "trace": self.trace,
                "autoscaler": self.autoscaler, "metric": self.metric, "apiName": self.api_name,
                "target": self.target, "sloTarget": self.slo_target,
                "slo": None if self.slo is None else self.slo.to_json(), "unit_of_metric": self.unit,
                "query": self.query,
                "loadIncreaseAt": self.tally.increase_at,
                "phases": {"collect": self.phases.collect, "scrape": self.phases.scrape, "sync": self.phases.sync},
                "prometheus": ".".join(str(part) for part in self.setup.prometheus),
                "serviceModel": {"rpsAtTarget": round(self.plan.rps_at_target, 6),
                                 "capacityRps": round(self.plan.capacity_rps, 6),
                                 "modelLoadSeconds": self.plan.model_load_s,
                                 "imagePullSeconds": self.plan.image_pull_s,
                                 "startupBasis": self.plan.startup_basis}}


# ------------------------------------------------------------------------------------------------ the loop
class Simulation:
    def __init__(self, s: Setup, trace: Trace, phases: Optional[Phases] = None, slo_target: Optional[float] = None):
        self.s, self.trace = s, trace
        self.slo_target = s.first.target if slo_target is None else slo_target
        """The level the figures judge against (the HPA's own target unless a tuning run fixes another)."""
        self.objectives = tuple((t.metric, slo_target if slo_target is not None and t.metric == s.first.metric
                                 else t.target) for t in s.slo_triggers)
        """The SLO's (metric, below): ``--slo`` replaces the threshold of the objective on the HPA's metric."""
        judged = (tuple(zip(self.objectives, (t.source for t in s.slo_triggers))) if s.slo_triggers else
                  (((s.first.metric, self.slo_target), s.triggers[0].source),))
        self.sli = tuple(bad_minute_expr(workload_sli(src, s.namespace, s.name), below)
                         for (_, below), src in judged)
        """Per objective judged (the SLO's, else the first metric at the level judged), the SLI's 0/1 expression:
        the one the burn-rate alerts' recording rule evaluates (simulate.slo)."""
        self._judged_triggers = (*s.triggers, *(t for t in s.slo_triggers
                                                if t.metric not in {x.metric for x in s.triggers}))
        demand0 = trace.demand(0)
        r0 = max(min(math.ceil(demand0 / s.plan.rps_at_target - 1e-9), s.max_replicas),
                 s.min_replicas if s.keda else max(s.min_replicas, 1))
        if s.keda and demand0 > 0:
            r0 = max(r0, 1)
        warm = s.warm_replicas
        n0 = max(s.min_nodes, math.ceil((r0 + warm) / s.slots)) if s.autoscaled_pool else s.min_nodes
        self.nodes = NodePool(s.slots, s.min_nodes, s.max_nodes, s.provision_s, s.autoscaled_pool,
                              min(n0, s.max_nodes), pre_pull_s=s.plan.image_pull_s if s.pre_pull else None,
                              scaler=s.node_scaler, placement=s.pod_placement)
        self.pods = Pods(s.name, s.plan.image_pull_s, s.plan.model_load_s, s.plan.cache_fill_load_s,
                         s.plan.compile_cold_extra_s)
        self.pods.start_ready(r0, self.nodes)
        self.warm = Placeholders(warm)
        """Warm-capacity placeholders (``autoscaling.warmReplicas``), which replicas preempt."""
        self.warm.start(self.nodes)
        self.spec = r0
        ref = first_change(trace)
        self.phases = phases or default_phases(ref, s.collect_s if s.reads_gpu_metrics else 0, s.scrape_s,
                                               s.sync_s)
        self.storage = promql.Storage()
        self.queue = Queue(s.plan, demand0, [p.name for p in self.pods.ready(0.0)])
        self.scraper = Scraper(self.storage, s.needed, s.plan, s.namespace, s.collect_s, s.scrape_s,
                               self.phases.collect, self.phases.scrape, s.replica_memory_mib, s.full_scales,
                               s.ingress_labels, tuple(p % s.scrape_s for p in self.phases.pod_scrapes))
        controller = hpa_mod.Controller.from_spec(s.hpa_spec)
        if s.keda:
            activation = hpa_mod.KedaActivation(s.scrape_s, s.cooldown_s, s.min_replicas)
            if r0 > 0:
                activation.last_active = 0.0  # the run starts in steady state: the triggers were active until now
            self.loop = KedaLoop(controller, list(s.triggers), activation, s.prometheus, s.minor)
        else:
            self.loop = HpaLoop(controller, list(s.triggers), s.namespace, s.window, s.prometheus, s.minor)
        self.tally = Tally()
        self.wake = WakeTracker(s.plan.rps_at_target) if s.keda and s.min_replicas == 0 else None
        """The wake-ups from zero of a scale-to-zero workload (simulate.wake); None for any other."""
        self._served = self.queue.now(demand0, [p.name for p in self.pods.ready(0.0)])
        self._levels = {trig.metric: _level_of(s, trig, self._served) for trig in self._judged_triggers}
        self._shown: Optional[float] = None
        self._recommendation = r0
        self._desired = r0
        self._scale_in_lost = 0.0
        """Requests a scale-in lost this second (charged as failed in :meth:`record`)."""
        """The HPA's ``status.desiredReplicas`` (what ``kubectl get hpa`` shows): the replicas its last sync set."""

    # -- stages
    def schedule(self, t: float) -> None:
        self.pods.schedule(t, self.nodes, self.warm)
        self.warm.schedule(t, self.nodes)

    def serve(self, t: float, demand: float):
        served = self.queue.serve(demand, [p.name for p in self.pods.ready(t)])
        return served, {trig.metric: _level_of(self.s, trig, served) for trig in self._judged_triggers}

    def observe(self, t: float) -> None:
        """Prometheus scrapes what the targets held at the start of the second; the exporter collects the GPU
        activity of the second before."""
        self.scraper.scrape(self.pods, t, self._served)
        self.scraper.collect(self.pods, t, self._levels, self._served)

    def autoscale(self, t: float) -> None:
        step = int(t)
        before = self.spec
        if (step - self.phases.sync) % self.s.sync_s == 0:
            decision = self.loop.sync(t, self.pods, self.spec, self.storage)
            self._shown = decision.shown
            self._recommendation = max((p for p in decision.proposals if p is not None), default=decision.replicas)
            self.spec = self._desired = decision.replicas
        poll = self.phases.scrape if self.phases.poll is None else self.phases.poll
        if self.s.keda and (step - poll) % self.s.scrape_s == 0:
            self.spec = self.loop.poll(t, self.spec, self.storage)
        if self.spec > before and self.tally.first_scale_up_s is None and self.tally.increase_at is not None:
            self.tally.first_scale_up_s = t - self.tally.increase_at
        ready_before = self.pods.ready(t)
        self.pods.scale(self.spec, t)
        if len(self.pods.ready(t)) < len(ready_before):
            still = {p.name for p in self.pods.ready(t)}
            self._scale_in(t, [p.name for p in ready_before if p.name not in still], len(ready_before))

    def _scale_in(self, t: float, removed: list, ready_before: int) -> None:
        """Ready replicas removed (their pods' names): each holds the requests in flight on it (its own queue,
        service.Queue). The last of them needs the replica's queue wait plus a service time to finish; the server
        keeps finishing them for its drain window (its own drain, cut by what the grace period leaves after the
        preStop wait), and loses the share it has no time for. Without a preStop wait as long as the routing's
        propagation, the replica's share of the arrivals in the gap reaches a server that no longer takes requests.
        A drained replica holds its GPU meanwhile (its cost). Its requests leave with it either way: finished by
        it, or lost."""
        chain, plan, tally = self.s.drain, self.s.plan, self.tally
        window = drain_window_s(chain) if chain is not None else 0.0
        gap = max(0.0, chain.routing.seconds - chain.pre_stop_s) if chain is not None else 0.0
        routed = len(removed) * self.trace.demand(t) / ready_before * gap if ready_before else 0.0
        lost, in_flight, held = 0.0, 0.0, 0.0
        for x in self.queue.remove(removed):
            need = plan.wait_s(x) + plan.service_time_s
            finished = 1.0 if need <= 0 or window >= need else window / need
            lost += x * (1.0 - finished)
            in_flight += x
            held += (chain.pre_stop_s if chain is not None else 0.0) + min(window, need)
        tally.scale_in_removed += len(removed)
        tally.scale_in_in_flight += in_flight
        tally.scale_in_dropped += lost + routed
        self._scale_in_lost += lost + routed
        tally.drain_s += held
        tally.replica_s += held

    def provision(self, t: float) -> None:
        self.nodes.scan(t, self.pods, self.warm)

    def record(self, t: float, demand: float, served, levels: dict) -> None:
        s, tally = self.s, self.tally
        ready = len(self.pods.ready(t))
        capacity = ready * s.plan.rps_at_target
        if tally.increase_at is None and t > 0 and demand > capacity * (1 + 1e-9) and demand > self.trace.demand(0):
            tally.increase_at = t
            tally.ready_at_increase = ready
        if (tally.increase_at is not None and tally.capacity_ready_s is None and tally.receded_at is None
                and capacity >= demand - 1e-9):
            # capacity is reached by replicas added for the increase; a load that falls back to what the replicas
            # ready before it serve leaves the increase without capacity ever reached
            if ready > tally.ready_at_increase:
                tally.capacity_ready_s = t - tally.increase_at
                tally.capacity_path = capacity_path(self.pods.ready(t), tally.increase_at, s)
            else:
                tally.receded_at = t
        level = levels.get(s.first.metric, 0.0)
        lost, self._scale_in_lost = self._scale_in_lost, 0.0
        failing = served.dropped > 1e-9 or lost > 1e-9 or (ready == 0 and demand > 0)
        tally.failed_requests += served.dropped + lost
        over = failing or level > self.slo_target * (1 + hpa_mod.TOLERANCE)
        tally.over_target_s += over
        if failing or level > self.slo_target:
            tally.above_target_s += 1
        tally.replica_s += self.pods.bound()
        warm_bound = self.warm.bound()
        tally.warm_s += warm_bound
        tally.ready_replica_s += ready
        tally.node_s += len(self.nodes.nodes)
        if self.wake is not None:
            self.wake.record(t, demand, served, ready, self.spec)
        tally.peak_replicas = max(tally.peak_replicas, self.spec)
        tally.at_max_s += self.spec >= s.max_replicas
        nodes = self.nodes.ready_count(t)
        sec = tally.seconds
        sec.demand.append(demand)
        sec.level.append(level)
        sec.over.append(over)
        sec.replicas.append(self.spec)
        sec.ready.append(ready)
        sec.nodes.append(nodes)
        sec.failing.append(failing)
        sec.warm.append(warm_bound)
        for k, trig in enumerate(s.slo_triggers):
            if len(sec.slo) <= k:
                sec.slo.append(array("d"))
            sec.slo[k].append(levels[trig.metric] if trig.metric in levels else _level_of(s, trig, served))
        step = int(t)
        if step and step % MINUTE_S == 0:
            self._judge_minute(t)
        if (step - self.phases.sync) % s.sync_s == 0 or step == int(self.trace.duration_s):
            # desired as the HPA's status holds it: reconcileAutoscaler (kubernetes pkg/controller/podautoscaler/
            # horizontal.go) passes the normalized count (stabilized, rate-limited, clamped) to setStatus, the
            # current count when it does not rescale; the raw largest proposal stays in "recommendation"
            tally.timeline.append({"t": step, "demand": round(demand, 4),
                                   "metric": None if self._shown is None else round(self._shown, 4),
                                   "recommendation": int(self._recommendation), "desired": int(self._desired),
                                   "replicas": int(self.spec), "ready": ready,
                                   "nodes": nodes})

    def _judge_minute(self, t: float) -> None:
        """The minute that ends at ``t``: each objective's SLI on what Prometheus scraped (the samples up to ``t``,
        as a rule evaluated at ``t`` reads them), and whether requests failed in its seconds."""
        tally = self.tally
        readings = [bad_minute(expr, self.storage, t, self.s.prometheus) for expr in self.sli]
        failed = any(tally.seconds.failing[int(t) - MINUTE_S:int(t)])
        for k, reading in enumerate(readings):
            if len(tally.sli) <= k:
                tally.sli.append([])
            tally.sli[k].append(reading)
        tally.failed_minutes.append(failed)
        tally.bad_minutes += failed or any(readings)

    def step(self, t: float) -> None:
        """One second. The stages run downstream first, so each reads what its upstream stage produced in the
        seconds before: a change travels at least one second per hop (load -> counters or GPU activity ->
        collection -> scrape -> sync), never through the whole pipeline within the second it happened."""
        demand = self.trace.demand(t)
        self.autoscale(t)
        self.observe(t)
        self.schedule(t)
        served, levels = self.serve(t, demand)
        self.scraper.count(self.pods, t, served, demand)
        self._served, self._levels = served, levels
        self.provision(t)
        self.record(t, demand, served, levels)

    def run(self, progress: Optional[Callable[[float], None]] = None,
            until: Optional[Callable[["Simulation"], bool]] = None) -> "Simulation":
        duration = int(self.trace.duration_s)
        for step in range(duration + 1):
            self.step(float(step))
            if until is not None and until(self):
                break
            if progress is not None and step % 60 == 0:
                progress(step / max(duration, 1))
        if progress is not None:
            progress(1.0)
        return self

    def result(self, stack: str) -> Result:
        s = self.s
        src0 = s.triggers[0].source
        query = s.triggers[0].query or render_for_pods(src0, s.namespace, [f"{s.name}-<pod>"], s.window)
        verdict = None
        if s.slo_compliance is not None:
            verdict = judge(self.objectives, s.slo_compliance, self.tally.sli, self.tally.failed_minutes)
        # the bound is taken at the SLO's threshold on the HPA's metric when there is one (a strict ceiling: no
        # second above it), else at the level time over target is judged against
        at_slo = next((below for metric, below in self.objectives if metric == s.first.metric), None)
        return Result(stack=stack, workload=s.name, trace=self.trace.name,
                      autoscaler=s.autoscaler, metric=s.first.metric, api_name=src0.api_name,
                      target=s.first.target, unit=METRICS[s.first.metric].unit, query=query, tally=self.tally,
                      bound=lower_bound(s, self.trace, self.slo_target, band=at_slo), plan=s.plan, setup=s,
                      phases=self.phases, slo_target=self.slo_target, slo=verdict, sim=self)


def _level_of(s: Setup, trig: Trigger, served) -> float:
    """A metric's true value: each ready replica's state read through that metric's own kind, averaged over the
    replicas (as the HPA averages the pods' readings)."""
    if trig.source is None:
        return 0.0
    kind, factor = s.readings[trig.metric]
    if kind == "queue_time":
        return served.mean(s.plan.wait_s) * factor
    if kind == "queue_length":
        return served.mean(s.plan.waiting)
    if kind == "running":
        return served.mean(s.plan.running)
    if kind == "latency":
        which = LATENCY[trig.metric]
        return served.mean(lambda x: bucket_p90(s.plan.latency_s(x, which), trig.source.buckets)) * factor
    return factor * served.rho


def first_change(trace: Trace) -> int:
    base = trace.rates[0]
    for t, r in zip(trace.times, trace.rates):
        if abs(r - base) > 1e-9 * max(1.0, base):
            return int(t)
    return 0


def simulate(cfg: PlatformConfig, stack: str, workload: str, trace: Trace, *,
             progress: Optional[Callable[[float], None]] = None, phases: Optional[Phases] = None,
             slo_target: Optional[float] = None) -> Result:
    """One run. ``slo_target``: judge time over target against this level instead of the workload's target."""
    return Simulation(setup(cfg, workload), trace, phases, slo_target).run(progress).result(stack)


def progress_bar(stream=None) -> Optional[Callable[[float], None]]:
    """A progress bar on stderr, only on a terminal and only once a run has taken more than two seconds."""
    stream = stream or sys.stderr
    if not stream.isatty():
        return None
    start = time.monotonic()
    shown = [False]

    def update(fraction: float) -> None:
        if time.monotonic() - start < 2 and fraction < 1:
            return
        if fraction >= 1 and not shown[0]:
            return
        shown[0] = True
        filled = int(30 * fraction)
        stream.write(f"\rsimulating [{'#' * filled}{'.' * (30 - filled)}] {fraction * 100:5.1f}%")
        if fraction >= 1:
            stream.write("\n")
        stream.flush()

    return update
