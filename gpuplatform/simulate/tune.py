"""``gpuplatform simulate --tune``: the autoscaling settings that cost least on a trace within a time-over-SLO
budget.

What it searches, each a dimension of a coordinate descent from the stack's own settings:

- the first metric's target (fewer, busier replicas or more, idler ones);
- ``minReplicas`` and ``maxReplicas``, up to what the pool holds (replicas per node x its nodes,
  components/pools.py) — a warm floor absorbs a burst that a replica started on demand would meet minutes late;
- the scale-up rules (stabilization window and rate) and the scale-down rules (window and rate), the HPA's
  ``behavior`` (kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/#configurable-scaling-behavior);
- warm capacity (``autoscaling.warmReplicas``, from 0 up to what the pool holds beyond ``maxReplicas``):
  placeholders that keep nodes provisioned, so a replica skips node provisioning; they cost what they hold;
- for a KEDA workload waking from zero, the activation threshold (keda.sh/docs/latest/concepts/scaling-deployments,
  ``activationThreshold``) and ``cooldownPeriod`` (``autoscaling.cooldownPeriodSeconds``: how long after the last
  active trigger it goes back to zero).

Scale-down windows and cooldowns are only tried at or above the workload's startup budget, the scale-in floor that
validation enforces (model_startup.scale_in_floor_seconds): a shorter one would be refused, and would delete
replicas while they load.

Every candidate is first run through the stack's own validation (``components.validation.validate`` on the config
with the candidate applied, the same rules ``load`` runs); one it refuses is never simulated nor suggested.

Judge: a candidate is feasible when its time out of the SLO stays within the budget: its bad minutes (the SLI of
simulate.slo, the one the burn-rate alerts page on: an objective's worst pod above ``below`` over the minute, or a
request failed) x 60 s. The default budget is the workload's own error budget on the trace (the bad minutes its
``compliance`` allows), so "feasible" and the SLO verdict of the same run are one judgement; without an SLO it is
0 bad minutes of the first metric at the level judged. The cheapest feasible one wins, cheapest by node-hours
(what the pool bills: nodes provisioning, replicas loading, warm-capacity placeholders and nodes waiting for
scale-down all hold a node), then by the GPU units bound replicas and placeholders held. Runs stop early once they cannot win: over the
budget when a feasible candidate is known, or costing more than the best so far (both tallies only grow).

When nothing within the pool keeps the budget, the search grows the pool a node at a time (``maxNodes``, or
``desiredNodes`` for a fixed pool) with ``maxReplicas`` at what it then holds, and reports the fewest nodes more
that would, with their list price from catalogs/prices.py where it has one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Optional

import yaml

from gpuplatform.catalogs.kubernetes import HPA_DEFAULT_DOWNSCALE_STABILIZATION_SECONDS
from gpuplatform.catalogs.metrics import METRICS
from gpuplatform.catalogs.prices import ListPrice, list_price
from gpuplatform.components.config import Behavior, PlatformConfig, ScalingPolicy, ScalingRules
from gpuplatform.components.model_startup import default_scale_down_window_seconds, scale_in_floor_seconds
from gpuplatform.components.pools import all_pool_facts
from gpuplatform.components.validation import validate
from gpuplatform.simulate.engine import Result, Simulation, find_workload, setup
from gpuplatform.simulate.workload_setup import service_plan
from gpuplatform.simulate.slo import MINUTE_S, error_budget_minutes
from gpuplatform.simulate.traces import Trace

TARGET_FACTORS = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.25)
SCALE_DOWN_WINDOWS_S = (0, 60, 120, 300, 600, 900, 1800)
"""Scale-down windows tried, those at or above the scale-in floor, and the floor itself (:func:`at_floor`)."""
COOLDOWNS_S = (300, 600, 900, 1800)
"""KEDA ``cooldownPeriod`` values tried (seconds), those at or above the scale-in floor, and the floor itself."""
SCALE_DOWN_RATES = {
    "one pod a minute": (ScalingPolicy(type="Pods", value=1, period_seconds=60),),
    "half a minute": (ScalingPolicy(type="Percent", value=50, period_seconds=60),),
    "all at once": (ScalingPolicy(type="Percent", value=100, period_seconds=15),),
}
SCALE_UP_RULES = {
    # the API server's default scale-up (no window, +100 % or +4 pods per 15 s, the larger): pkg/apis/autoscaling
    # /v2/defaults.go in kubernetes/kubernetes
    "at once": ScalingRules(stabilization_window_seconds=0, policies=[
        ScalingPolicy(type="Percent", value=100, period_seconds=15),
        ScalingPolicy(type="Pods", value=4, period_seconds=15)]),
    "after 30s steady": ScalingRules(stabilization_window_seconds=30, policies=[
        ScalingPolicy(type="Percent", value=100, period_seconds=15),
        ScalingPolicy(type="Pods", value=4, period_seconds=15)]),
    "one pod a minute": ScalingRules(stabilization_window_seconds=0, policies=[
        ScalingPolicy(type="Pods", value=1, period_seconds=60)]),
}
ACTIVATION_FACTORS = (0.0, 0.1, 0.5)
"""KEDA activation thresholds tried, as fractions of the activation trigger's target."""
UNIT_CEILINGS = {"percent": 90.0, "ratio": 0.9}
"""Bounded units leave room above the target for the tolerance (the config rule allows up to 1/1.1 of full)."""
MAX_EXTRA_NODES = 16
REPLICA_VALUES = 5
"""Values tried per replica-count dimension: a pool of dozens of slots would otherwise cost a run per count."""
ROUNDS = 3
"""Passes of the coordinate descent over all dimensions (it stops earlier once a pass changes nothing)."""


@dataclass(frozen=True)
class Candidate:
    """One setting of every searched dimension. ``None`` keeps the stack's own value of that dimension."""
    target: float
    min_replicas: int
    max_replicas: int
    scale_up: Optional[str] = None
    scale_down_window_s: Optional[int] = None
    scale_down_rate: Optional[str] = None
    activation_threshold: Optional[float] = None
    extra_nodes: int = 0
    warm_replicas: int = 0
    """Warm-capacity placeholders (``autoscaling.warmReplicas``)."""
    cooldown_s: Optional[int] = None

    def label(self) -> str:
        parts = [f"target {self.target:g}", f"replicas {self.min_replicas}-{self.max_replicas}"]
        if self.scale_up is not None:
            parts.append(f"scale-up {self.scale_up}")
        if self.scale_down_window_s is not None:
            parts.append(f"scale-down window {self.scale_down_window_s}s, scale-down {self.scale_down_rate}")
        if self.activation_threshold is not None:
            parts.append(f"activation threshold {self.activation_threshold:g}")
        if self.warm_replicas:
            parts.append(f"{self.warm_replicas} warm replica{'s' if self.warm_replicas > 1 else ''}")
        if self.cooldown_s is not None:
            parts.append(f"cooldown {self.cooldown_s}s")
        if self.extra_nodes:
            parts.append(f"{self.extra_nodes} more node{'s' if self.extra_nodes > 1 else ''} in the pool")
        return ", ".join(parts)


@dataclass
class Outcome:
    candidate: Candidate
    result: Result
    slo: float
    complete: bool = True
    """False when the run was stopped early because it could no longer win (its figures are partial)."""
    validated: bool = True
    """False for a probe run without the stack's validation (:func:`_grow`): a bound, never an answer."""

    @property
    def violation_s(self) -> float:
        """Time out of the SLO judged: its bad minutes x 60 s."""
        return violation_s(self.result.tally)

    @property
    def cost(self) -> tuple:
        return cost_of(self.result.tally)


def violation_s(tally) -> float:
    return float(tally.bad_minutes * MINUTE_S)


def cost_of(tally) -> tuple:
    """What a run costs, compared in order: node-seconds, what the pool bills while it runs the workload (every node
    from the autoscaler's request until it is removed: nodes provisioning, replicas loading, placeholders and
    empty nodes waiting for scale-down included; the simulator's pool holds this workload only), then the
    replica-seconds holding GPU units to serve (replicas bound to a node: pulling, loading or ready) or to keep room
    warm (bound placeholders)."""
    return (tally.node_s, tally.replica_s + tally.warm_s)


@dataclass
class PoolGrowth:
    """The fewest nodes more the pool needs for a setting within the budget, and what they cost."""
    pool: str
    field: str
    nodes_from: int
    nodes_to: int
    price: Optional[ListPrice]
    outcome: Outcome
    fixed_at: Optional[int] = None
    """Fewer nodes more with which only every replica the pool then holds, warm all the time, keeps the budget:
    a fixed count (``autoscaler: none``), since an HPA's ``minReplicas`` must stay below its ``maxReplicas``."""

    @property
    def extra(self) -> int:
        return self.nodes_to - self.nodes_from

    def cost_text(self) -> str:
        node_hours = self.outcome.result.tally.node_s / 3600
        if self.price is None:
            return (f"no list price for this pool's instance type in catalogs/prices.py; {node_hours:.3g} node-hours "
                    "on this trace")
        return (f"at {self.price.per_hour:g} USD per node-hour ({self.price.basis}, {self.price.instance_type}): up to "
                f"{self.extra * self.price.per_hour:.4g} USD per hour more while they all run; this trace's run "
                f"costs {node_hours * self.price.per_hour:.4g} USD ({node_hours:.3g} node-hours)")

    def to_json(self) -> dict:
        return {"pool": self.pool, "field": self.field, "from": self.nodes_from, "to": self.nodes_to,
                "extraNodes": self.extra, "pricePerNodeHour": self.price.per_hour if self.price else None,
                "priceBasis": self.price.basis if self.price else None,
                "extraPerHour": round(self.extra * self.price.per_hour, 4) if self.price else None,
                "nodeHours": round(self.outcome.result.tally.node_s / 3600, 3), "fixedCountWith": self.fixed_at}


@dataclass
class TuneResult:
    own: Outcome
    best: Outcome
    tried: int
    refused: int
    """Candidates the stack's validation refused (never simulated)."""
    budget_s: float
    growth: Optional[PoolGrowth] = None

    @property
    def feasible(self) -> bool:
        return self.best.violation_s <= self.budget_s


def slo_level(cfg: PlatformConfig, workload: str, slo: Optional[float]) -> float:
    """The level judged: ``--slo``, else the workload's own SLO when its first objective is on the first autoscaling
    metric (``workloads[].slo``, read defensively: older configs have no such field), else the target."""
    w = find_workload(cfg, workload)
    first = w.autoscaling.metrics[0]
    if slo is not None:
        return slo
    stated = getattr(w, "slo", None)
    objectives = getattr(stated, "objectives", None) or []
    if objectives and getattr(objectives[0], "metric", None) == first.metric:
        return float(objectives[0].below)
    return first.target


def default_budget_s(cfg: PlatformConfig, workload: str, trace: Trace) -> float:
    """The budget ``--tune`` keeps when none is given: the workload's error budget on the trace's whole minutes
    (what its SLO's ``compliance`` allows, so a candidate is feasible exactly when its SLO verdict is met); 0 bad
    minutes without an SLO."""
    stated = getattr(find_workload(cfg, workload), "slo", None)
    if stated is None:
        return 0.0
    return float(error_budget_minutes(stated.compliance, int(trace.duration_s) // MINUTE_S) * MINUTE_S)


def own_candidate(cfg: PlatformConfig, workload: str) -> Candidate:
    a = find_workload(cfg, workload).autoscaling
    return Candidate(a.metrics[0].target, a.min_replicas, a.max_replicas, warm_replicas=a.warm_replicas)


def _pool(cfg: PlatformConfig, name: str):
    return next(p for p in cfg.node_pools if p.name == name)


def with_candidate(cfg: PlatformConfig, workload: str, c: Candidate) -> PlatformConfig:
    w = find_workload(cfg, workload)
    a = w.autoscaling
    first = a.metrics[0].model_copy(update={"target": c.target})
    first._derived = first.derived and c.target == a.metrics[0].target  # a searched target is stated
    update: dict = {"metrics": [first, *a.metrics[1:]],
                    "min_replicas": c.min_replicas, "max_replicas": c.max_replicas,
                    "warm_replicas": c.warm_replicas}
    if c.scale_up is not None or c.scale_down_window_s is not None:
        own = a.behavior or Behavior()
        update["behavior"] = Behavior(
            scale_up=SCALE_UP_RULES[c.scale_up] if c.scale_up is not None else own.scale_up,
            scale_down=ScalingRules(stabilization_window_seconds=c.scale_down_window_s,
                                    policies=list(SCALE_DOWN_RATES[c.scale_down_rate]))
            if c.scale_down_window_s is not None else own.scale_down)
    if c.activation_threshold is not None and a.activation is not None:
        update["activation"] = a.activation.model_copy(update={"activation_threshold": c.activation_threshold})
    if c.cooldown_s is not None:
        update["cooldown_period_seconds"] = c.cooldown_s
    tuned = w.model_copy(update={"autoscaling": a.model_copy(update=update)})
    changes: dict = {"workloads": [tuned if x.name == workload else x for x in cfg.workloads]}
    if c.extra_nodes:
        pool = _pool(cfg, w.node_pool)
        field = "max_nodes" if pool.autoscaling else "desired_nodes"
        grown = pool.model_copy(update={field: (getattr(pool, field) or 0) + c.extra_nodes})
        changes["node_pools"] = [grown if p.name == pool.name else p for p in cfg.node_pools]
    return cfg.model_copy(update=changes)


def pool_ceiling(cfg: PlatformConfig, workload: str, extra_nodes: int = 0) -> int:
    """The most replicas of the workload its pool holds (replicas per node x nodes), with ``extra_nodes`` more."""
    w = find_workload(cfg, workload)
    facts = all_pool_facts(cfg)[w.node_pool]
    return (facts.max_nodes + extra_nodes) * facts.replicas_per_node(w.gpu)


def targets(cfg: PlatformConfig, workload: str) -> list[float]:
    """The first metric's target times each factor, within what the metric can read: a bounded unit's ceiling, a
    running batch below ``concurrency``, a latency above what an idle replica reads."""
    w = find_workload(cfg, workload)
    first = w.autoscaling.metrics[0]
    ceiling = UNIT_CEILINGS.get(METRICS[first.metric].unit)
    plan = service_plan(cfg, w)
    out = [round(first.target * f, 3) for f in TARGET_FACTORS]
    return [t for t in out if (ceiling is None or t <= ceiling)
            and (plan.kind != "running" or t < plan.concurrency)
            and (plan.kind != "latency" or t > plan.level(0.0))]


def spread(low: int, high: int, count: int = REPLICA_VALUES) -> list[int]:
    """At most ``count`` whole numbers from ``low`` to ``high``, both included, evenly spaced."""
    if high <= low:
        return [low]
    if high - low + 1 <= count:
        return list(range(low, high + 1))
    return sorted({round(low + (high - low) * k / (count - 1)) for k in range(count)})


def dimensions(cfg: PlatformConfig, workload: str, trace: Trace, slo: float,
               extra_nodes: int = 0) -> dict[str, list]:
    """Per dimension, the values the descent tries (each as the fields of :class:`Candidate` it sets). Replica
    counts: ``minReplicas`` from the least allowed up to what the trace's mean load needs at the SLO (at most
    :data:`REPLICA_VALUES` values) and a few more up to what the pool holds, ``maxReplicas`` from what its mean needs
    up to what the pool holds (at most :data:`REPLICA_VALUES` values)."""
    w = find_workload(cfg, workload)
    a = w.autoscaling
    floor_s = scale_in_floor_seconds(w)
    ceiling = max(pool_ceiling(cfg, workload, extra_nodes), 1)
    floor = 0 if a.autoscaler == "keda" and a.activation is not None else 1
    per_replica = service_plan(cfg, w).served_at_level(slo)
    mean = sum(trace.rates) / max(len(trace.rates), 1)
    warm = min(ceiling, max(floor, math.ceil(mean / per_replica) + 1)) if per_replica > 0 else ceiling
    dims: dict[str, list] = {
        "minReplicas": [{"min_replicas": n} for n in sorted(set(spread(floor, warm)) | {a.min_replicas}
                                                              | set(spread(warm, max(ceiling - 1, warm), 3)))],
        "maxReplicas": [{"max_replicas": n} for n in sorted(set(spread(max(warm - 1, 1), ceiling))
                                                              | {min(a.max_replicas, ceiling)})],
        "target": [{"target": t} for t in targets(cfg, workload)],
        "scaleDownWindow": [{"scale_down_window_s": win} for win in at_floor(SCALE_DOWN_WINDOWS_S, floor_s)],
        "scaleDownRate": [{"scale_down_rate": rate} for rate in SCALE_DOWN_RATES],
    }
    if a.autoscaler == "keda" or a.hpa_api_version != "autoscaling/v2beta1":
        dims["scaleUp"] = [{"scale_up": k} for k in SCALE_UP_RULES]
    else:  # v2beta1 has no behavior
        del dims["scaleDownWindow"], dims["scaleDownRate"]
    pool = _pool(cfg, w.node_pool)
    if pool.autoscaling and ceiling > 1:
        # placeholders beside maxReplicas: candidates whose sum exceeds the pool are refused by validation
        dims["warmReplicas"] = [{"warm_replicas": n} for n in sorted({0, 1} | set(spread(0, ceiling - 1, 4))
                                                                     | {a.warm_replicas})]
    if a.autoscaler == "keda" and a.activation is not None:
        dims["activation"] = [{"activation_threshold": round(a.activation.target * f, 3)}
                              for f in ACTIVATION_FACTORS]
        dims["cooldown"] = [{"cooldown_s": s} for s in at_floor(COOLDOWNS_S, floor_s)]
    return dims


def at_floor(values, floor_s: int) -> list[int]:
    """The values at or above the scale-in floor, and the floor itself: the shortest allowed is always tried."""
    return sorted({v for v in values if v >= floor_s} | {floor_s})


DEFAULT_SCALE_DOWN_RATE = "one pod a minute"
DEFAULT_SCALE_DOWN_WINDOW_S = HPA_DEFAULT_DOWNSCALE_STABILIZATION_SECONDS
"""The API server's scale-down default (300 s window, one pod a minute): what a candidate that sets only one of
the two keeps of the other (kubernetes/kubernetes pkg/apis/autoscaling/v2/defaults.go)."""


def apply(c: Candidate, change: dict, default_window_s: int = DEFAULT_SCALE_DOWN_WINDOW_S) -> Candidate:
    """``c`` with one dimension changed; a scale-down window without a rate (or a rate without a window) takes the
    other from the default (``default_window_s``: the workload's own default window, raised to its scale-in
    floor)."""
    out = replace(c, **change)
    if out.scale_down_window_s is not None and out.scale_down_rate is None:
        out = replace(out, scale_down_rate=DEFAULT_SCALE_DOWN_RATE)
    if out.scale_down_rate is not None and out.scale_down_window_s is None:
        out = replace(out, scale_down_window_s=default_window_s)
    return out


class Search:
    """The candidates run so far (each once), the best, and early stopping against it."""

    def __init__(self, cfg: PlatformConfig, stack: str, workload: str, trace: Trace, budget_s: float, slo: float):
        self.cfg, self.stack, self.workload, self.trace, self.budget_s, self.slo = (cfg, stack, workload, trace,
                                                                                    budget_s, slo)
        self.seen: dict[Candidate, Optional[Outcome]] = {}
        self.best: Optional[Outcome] = None
        """The best validated outcome: the answer."""
        self.bar: Optional[Outcome] = None
        """The best outcome including probes: what a run must beat to go on."""
        self.refused = 0
        self.refusals: list = []
        self.default_window_s = default_scale_down_window_seconds(find_workload(cfg, workload))
        """The scale-down window a candidate that sets only a rate keeps: the default raised to the floor."""

    def better(self, o: Outcome, than: Optional[Outcome]) -> bool:
        if not o.complete:
            return False
        if than is None:
            return True
        mine, theirs = o.violation_s <= self.budget_s, than.violation_s <= self.budget_s
        if mine != theirs:
            return mine
        if mine:
            return o.cost < than.cost
        return (o.violation_s, o.cost) < (than.violation_s, than.cost)

    def _hopeless(self, sim: Simulation) -> bool:
        best = self.bar
        if best is None:
            return False
        t = sim.tally
        if best.violation_s <= self.budget_s:
            return violation_s(t) > self.budget_s or cost_of(t) > best.cost
        return violation_s(t) > best.violation_s

    def run(self, c: Candidate, full: bool = False, stop_over_budget: bool = False,
            check: bool = True) -> Optional[Outcome]:
        """The candidate's outcome (None when validation refuses it). ``full``: never stop early;
        ``stop_over_budget``: stop once over the budget even with no feasible candidate known yet; ``check=False``
        only for a probe that is never suggested (:func:`_grow`)."""
        if c in self.seen and (self.seen[c] is None or self.seen[c].complete or not full):
            return self.seen[c]
        cfg = with_candidate(self.cfg, self.workload, c)
        issues = validate(cfg) if check else []
        if issues:
            self.refusals.append((c, issues))
            self.refused += 1
            self.seen[c] = None
            return None
        sim = Simulation(setup(cfg, self.workload), self.trace, None, self.slo)
        def hopeless(run: Simulation) -> bool:
            return (stop_over_budget and violation_s(run.tally) > self.budget_s) or self._hopeless(run)

        sim.run(until=None if full else hopeless)
        complete = full or not hopeless(sim)
        o = Outcome(c, sim.result(self.stack), self.slo, complete, check)
        self.seen[c] = o
        if self.better(o, self.bar):
            self.bar = o
        if check and self.better(o, self.best):
            self.best = o
        return o

    def descend(self, start: Candidate, dims: dict[str, list]) -> Outcome:
        """Coordinate descent from ``start``: each dimension in turn moves to its best value with the others held;
        passes repeat until one changes nothing."""
        if start not in self.seen:
            self.run(start, full=self.bar is None)
        current = start
        for _ in range(ROUNDS):
            before = current
            for values in dims.values():
                for change in values:
                    self.run(apply(current, change, self.default_window_s))
                if self.best is not None:
                    current = self.best.candidate
            if current == before:
                break
        return self.best


def tune(cfg: PlatformConfig, stack: str, workload: str, trace: Trace, budget_s: float,
         slo: Optional[float] = None) -> TuneResult:
    """The stack's own outcome, the best, how many were tried and refused, and the pool growth when the pool as it
    is cannot keep the budget. Every candidate is judged against the same SLO level (:func:`slo_level`)."""
    level = slo_level(cfg, workload, slo)
    search = Search(cfg, stack, workload, trace, budget_s, level)
    own_c = own_candidate(cfg, workload)
    own = search.run(own_c, full=True)
    if own is None:
        raise ValueError("the stack's own settings do not validate")  # load() refused them before tune was called
    best = search.descend(own_c, dimensions(cfg, workload, trace, level))
    growth = None
    if best.violation_s > budget_s:
        # the descent can stall on a range its steps cannot cross (minReplicas up to maxReplicas is refused, and
        # maxReplicas up alone changes little): before any node is added, the pool as it is gets the same search
        # from its most generous setting down
        growth = _grow(search, cfg, workload, best)
        if growth is not None and growth.extra == 0:
            best, growth = growth.outcome, None
        elif growth is None:
            best = search.best
    tried = sum(1 for o in search.seen.values() if o is not None)
    return TuneResult(own, best, tried, search.refused, budget_s, growth)


def _grow(search: Search, cfg: PlatformConfig, workload: str, best: Outcome) -> Optional[PoolGrowth]:
    """The fewest nodes more (0: the pool as it is) with which a setting keeps the budget. A node count is enough
    only if the most
    generous setting it allows keeps the budget (every replica the grown pool holds warm from the start: nothing a
    setting of that pool does reacts faster), so each count is probed with that one run, stopped as soon as it
    goes over the budget; at the first count that passes, a descent over the replica range, the target and the
    scale-down rules finds the cheapest setting, the probe being the best to beat."""
    w = find_workload(cfg, workload)
    pool = _pool(cfg, w.node_pool)
    field = "maxNodes" if pool.autoscaling else "desiredNodes"
    now = (pool.max_nodes if pool.autoscaling else pool.desired_nodes) or 0
    price = list_price(pool.instance_types[0]) if pool.instance_types else None
    fixed_at = None
    for extra in range(0, MAX_EXTRA_NODES + 1):
        ceiling = pool_ceiling(cfg, workload, extra)
        probe = replace(best.candidate, extra_nodes=extra, min_replicas=ceiling, max_replicas=ceiling,
                        warm_replicas=0)
        grown = Search(cfg, search.stack, workload, search.trace, search.budget_s, search.slo)
        # minReplicas == maxReplicas is refused for an HPA (it never scales), but this run only bounds what the
        # grown pool can do and is never suggested
        o = grown.run(probe, stop_over_budget=True, check=False)
        if o is None or not o.complete or o.violation_s > search.budget_s:
            continue
        fixed_at = extra if fixed_at is None else fixed_at
        dims = dimensions(cfg, workload, search.trace, search.slo, extra)
        # the valid setting nearest the probe first: most likely within the budget, it bounds the runs after it
        start = replace(best.candidate, extra_nodes=extra, min_replicas=max(ceiling - 1, 1), max_replicas=ceiling,
                        warm_replicas=0)
        o = grown.descend(start, {k: dims[k] for k in ("minReplicas", "maxReplicas", "target", "scaleDownWindow")
                                  if k in dims})
        search.refused += grown.refused
        search.seen.update({c: x for c, x in grown.seen.items() if x is None or x.validated})
        if o is not None and o.violation_s <= search.budget_s:
            return PoolGrowth(pool.name, field, now, now + extra, price, o, fixed_at if fixed_at < extra else None)
    return None


def snippet(cfg: PlatformConfig, workload: str, c: Candidate) -> str:
    """The stack-file lines that set the candidate: a fragment of ``gpu-platform:workloads`` (and of
    ``gpu-platform:nodePools`` when the pool must grow), to merge into the stack file by name."""
    w = find_workload(cfg, workload)
    a = w.autoscaling
    first = a.metrics[0]
    metric = {"metric": first.metric, "target": c.target}
    if first.unit is not None:
        metric["unit"] = first.unit
    autoscaling: dict = {"minReplicas": c.min_replicas, "maxReplicas": c.max_replicas, "metrics": [metric]}
    if c.warm_replicas or a.warm_replicas:
        autoscaling["warmReplicas"] = c.warm_replicas
    tuned = with_candidate(cfg, workload, c)
    behavior = find_workload(tuned, workload).autoscaling.behavior
    if c.scale_up is not None or c.scale_down_window_s is not None:
        autoscaling["behavior"] = {key: _rules(getattr(behavior, side))
                                   for key, side in (("scaleUp", "scale_up"), ("scaleDown", "scale_down"))
                                   if getattr(behavior, side) is not None}
    if c.activation_threshold is not None and a.activation is not None:
        autoscaling["activation"] = {"activationThreshold": c.activation_threshold}
    if c.cooldown_s is not None:
        autoscaling["cooldownPeriodSeconds"] = c.cooldown_s
    doc: dict = {}
    if c.extra_nodes:
        pool = _pool(tuned, w.node_pool)
        key = "maxNodes" if pool.autoscaling else "desiredNodes"
        doc["gpu-platform:nodePools"] = [{"name": pool.name,
                                          key: pool.max_nodes if pool.autoscaling else pool.desired_nodes}]
    doc["gpu-platform:workloads"] = [{"name": workload, "autoscaling": autoscaling}]
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=None)


def _rules(r: ScalingRules) -> dict:
    out: dict = {}
    if r.stabilization_window_seconds is not None:
        out["stabilizationWindowSeconds"] = r.stabilization_window_seconds
    if r.select_policy != "Max":
        out["selectPolicy"] = r.select_policy
    if r.policies:
        out["policies"] = [{"type": p.type, "value": p.value, "periodSeconds": p.period_seconds} for p in r.policies]
    return out


def merge_snippet(raw: dict, text: str) -> dict:
    """``raw`` (a stack's ``gpu-platform`` namespace, keys without the prefix) with the snippet merged in: each
    named pool and workload updated key by key, ``autoscaling`` and ``activation`` merged one level deeper."""
    doc = yaml.safe_load(text)
    out = dict(raw)
    for key, items in doc.items():
        section = key.removeprefix("gpu-platform:")
        merged = [dict(x) for x in out[section]]
        for item in items:
            target = next(x for x in merged if x["name"] == item["name"])
            for k, v in item.items():
                if k == "autoscaling":
                    auto = dict(target.get("autoscaling") or {})
                    for ak, av in v.items():
                        auto[ak] = {**(auto.get(ak) or {}), **av} if ak == "activation" else av
                    target["autoscaling"] = auto
                else:
                    target[k] = v
        out[section] = merged
    return out
