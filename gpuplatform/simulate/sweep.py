"""The first scale-up after a load step, over every phase of the loops and several step sizes.

The exporter's collection, Prometheus' scrape and the HPA's sync run on their own clocks, so how long a step takes
to reach a decision depends on where the step falls between their ticks. A single run shows one alignment; this
module runs all of them (every second of each period) for steps from 0.6 x base to each of ``STEP_SIZES`` x base
(base: the load ``minReplicas`` serve at target) and reports the worst case and the median.

Step sizes are searched where the slowest one is, not only on a grid. A step whose steady metric stays within the
HPA's tolerance (``--horizontal-pod-autoscaler-tolerance``, 10 %) is never acted on: kubernetes
``pkg/controller/podautoscaler/replica_calculator.go`` keeps the replica count while the usage ratio is within
``1 +/- tolerance``. Just above that edge the metric crosses the tolerance only once the rule window holds nothing
but settled post-step seconds, so the smallest step that scales at all is the slowest. :func:`tolerance_edge` finds
it: first analytically (the load at which the first metric's steady value is target x (1 + tolerance), from the
service model) and then by bisection on the simulation itself (which adds the adapter's milli-units and the
controller's exact comparison). The sweep runs every phase at ``EDGE_RESOLUTION`` above that edge plus the grid
``STEP_SIZES``; a step that needs more replicas tried anywhere in between is no slower (tests sample them).
Closer still to the edge the decision waits for the service model's queue to settle to the last fraction of a
per cent: ``edgeLadder`` reports those figures, not the headline.

The sync phases cost one run, not one each: until an HPA's first decision changes the replica count, nothing it
does touches the rest of the loop, so one run carries one controller per sync phase, each reconciling at its own
ticks on the same pods and series. A phase whose controller changes the count before the step (it would change
the world the others see) is run on its own.
"""
from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import statistics
from pathlib import Path
from dataclasses import dataclass, field
from typing import Optional

from gpuplatform.components.config import PlatformConfig, duration_seconds
from gpuplatform.simulate import hpa as hpa_mod
from gpuplatform.simulate.cluster import NodePool
from gpuplatform.simulate.engine import Phases, Setup, Simulation, find_workload, setup
from gpuplatform.simulate.traces import Trace

STEP_SIZES = (1.2, 1.3, 1.5, 2.0, 3.0)
EDGE_RESOLUTION = 1e-3
"""How far above the tolerance edge (relative to the step) the headline figure starts. Closer steps differ from
the edge by less than Poisson arrivals vary over a rule window (at 30 req/s over 30 s, 1/sqrt(900) = 3 %), so on a
cluster noise decides them, not the step; the model's deterministic queue instead settles geometrically (the
implicit Euler step of service.Queue closes ~98 % of the remaining gap per second) and each decade closer to the
edge adds about a second: ``EDGE_LADDER`` reports how much."""
EDGE_LADDER = (1e-4, 1e-9)
LOW = 0.6
WAIT_S = 900
"""How long after the step a run waits for the first decision before it counts as none."""


@dataclass
class SweepResult:
    worst_s: Optional[float]
    """The longest first scale-up over all phases and steps (None if some step never scaled up)."""
    median_s: Optional[float]
    best_s: Optional[float]
    runs: int
    never: int
    """Alignments in which the step needed more replicas and no scale-up came within ``WAIT_S`` (a step the
    replicas already running serve at target is not counted at all)."""
    worst_at: dict = field(default_factory=dict)
    per_step: dict = field(default_factory=dict)
    """step size -> {"worst": s, "median": s}."""
    edge: Optional[float] = None
    """The smallest step (x base) the HPA acts on at all; None when every step above base does."""
    edge_analytic: Optional[float] = None
    """The same from the service model alone: the load at which the first metric's steady value is
    target x (1 + tolerance)."""
    edge_ladder: dict = field(default_factory=dict)
    """relative distance above the edge -> worst first scale-up there (not in the headline)."""
    below_edge: Optional[str] = None
    """Why steps at or below the edge get no scale-up."""
    never_reason: Optional[str] = None
    """Why the first alignment counted in ``never`` got no scale-up."""

    def to_json(self) -> dict:
        return {"worstSeconds": self.worst_s, "medianSeconds": self.median_s, "bestSeconds": self.best_s,
                "runs": self.runs, "never": self.never, "neverReason": self.never_reason,
                "worstAt": self.worst_at, "perStep": {_label(k): v for k, v in self.per_step.items()},
                "toleranceEdge": None if self.edge is None else {
                    "step": round(self.edge, 9), "analytic": None if self.edge_analytic is None
                    else round(self.edge_analytic, 9), "resolution": EDGE_RESOLUTION, "below": self.below_edge,
                    "ladder": {f"{d:g}": v for d, v in self.edge_ladder.items()}}}


def _label(factor: float) -> str:
    return f"{factor:.6g}x"


def step_trace(s: Setup, factor: float, at: int) -> Optional[Trace]:
    base = s.plan.rps_at_target * max(s.min_replicas, 1)
    high = min(factor * base, 0.9 * s.plan.rps_at_target * s.max_replicas)
    if high <= LOW * base * 1.0001:
        return None
    duration = at + WAIT_S
    return Trace(f"step {factor:g}x", (0.0, float(at)), (LOW * base, high), duration)


def warm_up_s(s: Setup) -> int:
    """Seconds before the step: the windows fill and the loops settle at the low load."""
    window = duration_seconds(s.window)
    return int(window + 2 * max(s.scrape_s, s.collect_s) + 2 * s.sync_s + 10)


def settle_s(s: Setup) -> int:
    """Seconds after a step by which every series, window and loop has seen only the new load: a step the HPA has
    not acted on by then it never acts on."""
    return warm_up_s(s) + max(s.scrape_s, s.collect_s)


def _scales(s: Setup, factor: float, at: int) -> bool:
    trace = step_trace(s, factor, at)
    if trace is None:
        return False
    sim = Simulation(s, trace)
    for step in range(min(at + settle_s(s), int(trace.duration_s)) + 1):
        sim.step(float(step))
        if sim.tally.first_scale_up_s is not None:
            return True
    return False


def analytic_edge(s: Setup) -> Optional[float]:
    """The step (x base) at which the first metric settles exactly at target x (1 + tolerance): per ready replica
    the service model serves ``served_at_level`` there, against ``rps_at_target`` at the target."""
    level = s.first.target * (1 + hpa_mod.TOLERANCE)
    served = s.plan.served_at_level(level)
    return served / s.plan.rps_at_target if s.plan.rps_at_target > 0 else None


def tolerance_edge(s: Setup, at: int, top: float = max(STEP_SIZES)) -> Optional[float]:
    """The smallest step (x base, up to ``top``) the HPA scales up on, to 1e-12 relative: bisection on the
    simulation around :func:`analytic_edge`. None when even a step just above base scales (no edge) and
    ``math.inf`` when no step up to ``top`` does."""
    lo, hi = 1.0 + 1e-9, top
    if _scales(s, lo, at):
        return None
    if not _scales(s, hi, at):
        return math.inf
    guess = analytic_edge(s)
    if guess is not None and lo < guess < hi:
        # the simulation differs from the closed form only by milli-units and float rounding: narrow first
        below, above = guess * (1 - 1e-4), guess * (1 + 1e-4)
        if below > lo and not _scales(s, below, at):
            lo = below
        if above < hi and _scales(s, above, at):
            hi = above
    while hi - lo > 1e-12 * hi:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if _scales(s, mid, at) else (mid, hi)
    return hi


class _ShadowSimulation(Simulation):
    """Until ``fork`` the loop's own HPA (sync phase 0) acts, so the replicas settle at the low load as on a
    cluster; from then on one copy of that controller per sync phase reconciles at its own ticks, none acting."""

    def __init__(self, s: Setup, trace: Trace, phases: Phases, fork: int):
        super().__init__(s, trace, phases)
        self.fork = fork
        self.controllers: list = []
        self.decided: dict[int, float] = {}
        self.diverged: set[int] = set()

    def autoscale(self, t: float) -> None:
        step = int(t)
        if step < self.fork:
            super().autoscale(t)
            return
        if not self.controllers:
            self.controllers = [self.loop.controller.clone() for _ in range(self.s.sync_s)]
        phase = step % self.s.sync_s
        if phase not in self.decided and phase not in self.diverged:
            proposals, _ = self.loop.proposals(t, self.pods, self.spec, self.storage)
            new = self.controllers[phase].reconcile(t, self.spec, proposals)
            if new > self.spec and self.tally.increase_at is not None:
                self.decided[phase] = t - self.tally.increase_at
            elif new != self.spec:
                self.diverged.add(phase)
        if self.s.keda and (step - self.phases.scrape) % self.s.scrape_s == 0:
            self.spec = self.loop.poll(t, self.spec, self.storage)
            self.pods.scale(self.spec, t)

    def done(self) -> bool:
        return len(self.decided) + len(self.diverged) == self.s.sync_s


def _not_needed(sim: Simulation, at: int) -> bool:
    """The step came and the ready replicas serve it at target: no scale-up is needed."""
    return sim.tally.increase_at is None and sim.tally.timeline and sim.tally.timeline[-1]["t"] > at + 1


def default_steps(edge: Optional[float]) -> tuple:
    """The grid above the tolerance edge, and the steps just above it where the slowest decisions are."""
    if edge is None:
        return STEP_SIZES
    if math.isinf(edge):
        return ()
    near = (edge * (1 + EDGE_RESOLUTION), edge * 1.01)
    return tuple(sorted({f for f in STEP_SIZES if f > edge} | set(near)))


def first_scale_up_sweep(cfg: PlatformConfig, workload: str, steps=None) -> SweepResult:
    """:func:`sweep_of` the workload's setup."""
    return sweep_of(setup(cfg, workload), steps)


def sweep_of(s: Setup, steps=None) -> SweepResult:
    """Every phase of the loops at each step size: by default the grid above the tolerance edge and the steps just
    above it (:func:`default_steps`), with the edge ladder reported apart."""
    at = warm_up_s(s)
    edge = tolerance_edge(s, at)
    if steps is None:
        steps = default_steps(edge)
    results = _sweep(s, at, steps)
    samples = [x for f in results for x in results[f]]
    per_step = {}
    for factor in results:
        mine = [v for v, _ in results[factor]]
        if not mine:
            continue
        seen = [v for v in mine if v is not None]
        per_step[factor] = {"worst": None if len(seen) < len(mine) else max(seen),
                            "median": statistics.median(seen) if seen else None}
    values = [v for v, _ in samples if v is not None]
    never = len(samples) - len(values)
    worst = None if never or not values else max(values)
    worst_at = {} if not samples else max(samples, key=lambda p: math.inf if p[0] is None else p[0])[1]
    ladder, below, why = {}, None, None
    if edge is not None and not math.isinf(edge):
        near = _sweep(s, at, tuple(edge * (1 + d) for d in EDGE_LADDER))
        ladder = {d: max((v for v, _ in near[f] if v is not None), default=None)
                  for d, f in zip(EDGE_LADDER, near)}
        below = (f"steps up to {edge:.6g}x leave the metric within target x (1 + tolerance) = "
                 f"{s.first.target * (1 + hpa_mod.TOLERANCE):g}: the HPA keeps the replicas by design")
    elif edge is not None:
        below = f"no step up to {max(STEP_SIZES):g}x gets a scale-up: {_never_reason(s, max(STEP_SIZES), at)}"
    if never:
        factor, where = next((f, a) for f in results for v, a in results[f] if v is None)
        why = _never_reason(s, factor, at, Phases(where["collect"], where["scrape"], where["sync"]))
    return SweepResult(worst, statistics.median(values) if values else None, min(values) if values else None,
                       len(samples), never, worst_at, per_step, edge=None if edge is None or math.isinf(edge)
                       else edge, edge_analytic=analytic_edge(s), edge_ladder=ladder, below_edge=below,
                       never_reason=why)


def _never_reason(s: Setup, factor: float, at: int, phases: Optional[Phases] = None) -> str:
    from gpuplatform.simulate.reasons import first_scale_up_never

    trace = step_trace(s, factor, at)
    if trace is None:
        return "the step does not rise above the low load"
    sim = Simulation(s, trace, phases)
    sim.run(until=lambda x: x.tally.first_scale_up_s is not None)
    return first_scale_up_never(sim) or "it scaled up when run on its own"


def _sweep(s: Setup, at: int, steps) -> dict:
    """step size -> [(first scale-up or None, alignment)] over every phase."""
    fork = at - s.sync_s
    collect_phases = range(s.collect_s) if (s.reads_gpu_metrics and s.collect_s) else (0,)
    traces = {f: tr for f in steps if (tr := step_trace(s, f, at)) is not None}
    results: dict = {f: [] for f in traces}
    for c in collect_phases:
        for sc in range(s.scrape_s):
            if not traces:
                break
            # the seconds before the fork are the same for every step size: run them once, then copy
            first = next(iter(traces.values()))
            shared = _ShadowSimulation(s, first, Phases(c, sc, 0), fork)
            for step in range(fork):
                shared.step(float(step))
            for factor, trace in traces.items():
                shadow = copy.deepcopy(shared, {id(s): s})
                shadow.trace = trace
                for step in range(fork, int(trace.duration_s) + 1):
                    shadow.step(float(step))
                    if shadow.done() or _not_needed(shadow, at):
                        break
                for h in range(s.sync_s):
                    value = _value(s, trace, shadow, Phases(c, sc, h), at)
                    if value is not _SKIP:
                        results[factor].append((value, {"step": _label(factor), "collect": c, "scrape": sc,
                                                        "sync": h}))
    return results


_SKIP = object()


def _value(s: Setup, trace: Trace, shadow: "_ShadowSimulation", phases: Phases, at: int):
    """The first scale-up of one alignment: from the shadow run, or from a run of its own where that phase's
    controller changed the replicas before the step; ``_SKIP`` when the step needs no more replicas."""
    h = phases.sync
    if h in shadow.decided:
        return shadow.decided[h]
    if h in shadow.diverged:
        single = Simulation(s, trace, phases)
        single.run(until=lambda sim: sim.tally.first_scale_up_s is not None or _not_needed(sim, at))
        if single.tally.increase_at is None:
            return _SKIP
        return single.tally.first_scale_up_s
    if shadow.tally.increase_at is None:
        return _SKIP
    return None


# ------------------------------------------------------------------------------------------------ wake-up
@dataclass
class WakeCase:
    """The wake-up figures of one starting point of the pool (a node still up, or none)."""
    nodes: str
    ready_worst_s: Optional[float] = None
    ready_median_s: Optional[float] = None
    failed_worst: Optional[float] = None
    failed_median: Optional[float] = None
    waited_worst: Optional[float] = None
    """Requests completed after the first ready replica while the replicas were still short of the load
    (simulate.wake), worst over the alignments: 0 when one replica serves the sweep's load."""
    never: int = 0
    never_reason: Optional[str] = None
    worst_at: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"nodes": self.nodes, "readySeconds": {"worst": self.ready_worst_s, "median": self.ready_median_s},
                "failedRequests": {"worst": self.failed_worst, "median": self.failed_median},
                "waitedRequests": {"worst": self.waited_worst},
                "never": self.never, "neverReason": self.never_reason, "worstAt": self.worst_at}


@dataclass
class WakeUpResult:
    """A KEDA workload at zero replicas when load arrives: over every phase of Prometheus' scrape and KEDA's
    polling, the seconds until KEDA scales it to one (``activation``) and until that replica is ready, and the
    requests that failed meanwhile, for each starting point of its pool (``cases``). Nothing queues them: the
    Service has no ready endpoint, so ingress-nginx answers 503 (kubernetes/ingress-nginx,
    ``docs/user-guide/monitoring.md``: the request counter counts those too) and a client inside the cluster gets
    its connection refused; there is no activator in front of the pods."""
    load_rps: float
    runs: int
    activation_worst_s: Optional[float] = None
    activation_median_s: Optional[float] = None
    activation_best_s: Optional[float] = None
    cases: list = field(default_factory=list)
    zero_after_s: Optional[float] = None
    """Seconds from the last request to zero replicas (the rule window, then ``cooldownPeriod``, then a poll)."""

    @property
    def worst(self) -> WakeCase:
        return self.cases[-1]

    def to_json(self) -> dict:
        return {"loadRps": round(self.load_rps, 6), "runs": self.runs,
                "activationSeconds": {"worst": self.activation_worst_s, "median": self.activation_median_s,
                                      "best": self.activation_best_s},
                "cases": [c.to_json() for c in self.cases], "zeroAfterSeconds": self.zero_after_s}


def scales_to_zero(s: Setup) -> bool:
    return s.keda and s.min_replicas == 0


def _wake_up_run(s: Setup, trace: Trace, phases: Phases, at: int, nodes: int):
    """(seconds to KEDA's 0 -> 1, seconds to the first ready replica, failed requests until then, requests that
    waited behind the wake, the run), None for a figure that never came; ``nodes`` of the pool are up (image
    pulled) at the start. The run stops once the ready replicas cover the load (simulate.wake)."""
    sim = Simulation(s, trace, phases)
    if nodes > len(sim.nodes.nodes):
        sim.nodes = NodePool(s.slots, s.min_nodes, s.max_nodes, s.provision_s, s.autoscaled_pool, nodes,
                             scaler=s.node_scaler, placement=s.pod_placement)
    for node in sim.nodes.nodes:
        node.image_at = -1e9  # the nodes the scale to zero emptied: its replicas pulled the image there
    woke = ready = None
    for step in range(int(trace.duration_s) + 1):
        sim.step(float(step))
        if step < at:
            continue
        if woke is None and sim.spec > 0:
            woke = step - at
        if ready is None and sim.pods.ready(float(step)):
            ready = step - at
        episode = sim.wake.episodes[-1] if sim.wake.episodes else None
        if episode is not None and episode.done:
            return woke, ready, sim.tally.failed_requests, episode.waited, sim
    return woke, ready, sim.tally.failed_requests, None, sim


def wake_up_sweep(cfg: PlatformConfig, workload: str) -> Optional[WakeUpResult]:
    """:func:`wake_up_of` the workload's setup."""
    return wake_up_of(setup(cfg, workload))


def wake_up_of(s: Setup) -> Optional[WakeUpResult]:
    """The wake-up of a scale-to-zero KEDA workload (None for any other) when the load one replica serves at
    target arrives at zero replicas, over every scrape and poll phase. The exporter's collection and the HPA's sync
    do not take part: at zero the pod-sourced series do not exist and the HPA KEDA owns does nothing ("scaling is
    disabled since the replica count of the target is zero", kubernetes ``pkg/controller/podautoscaler/
    horizontal.go``); the first replica's start-up is its pod's image pull and model load, on a node still up
    when the gap was shorter than the cluster autoscaler's scale-down, else on a new one."""
    if not scales_to_zero(s):
        return None
    load = s.plan.rps_at_target
    at = warm_up_s(s)
    trace = Trace("wake-up", (0.0, float(at)), (0.0, load), at + WAIT_S)
    starts = [(max(s.min_nodes, 1), "a node of the pool up")]
    if s.autoscaled_pool and s.min_nodes == 0:
        starts.append((0, "no node (the pool scaled down)"))
    result = WakeUpResult(load, 0)
    wokes: list = []
    for nodes, label in starts:
        samples, waits = [], []
        for sc in range(s.scrape_s):
            for poll in range(s.scrape_s):
                woke, ready, failed, waited, _ = _wake_up_run(s, trace, Phases(0, sc, 0, poll), at, nodes)
                samples.append((ready, round(failed, 3), {"scrape": sc, "poll": poll}))
                waits.append(waited)
                if nodes == starts[0][0]:
                    wokes.append(woke)
        result.runs += len(samples)
        done = [(r, f) for r, f, _ in samples if r is not None]
        case = WakeCase(label, never=len(samples) - len(done))
        if done:
            case.ready_worst_s = None if case.never else max(r for r, _ in done)
            case.ready_median_s = statistics.median(r for r, _ in done)
            case.failed_worst = None if case.never else max(f for _, f in done)
            case.failed_median = statistics.median(f for _, f in done)
            case.waited_worst = None if None in waits else round(max(waits), 3)
            case.worst_at = max(samples, key=lambda x: math.inf if x[0] is None else x[0])[2]
        if case.never:
            from gpuplatform.simulate.reasons import wake_up_never

            where = next(x[2] for x in samples if x[0] is None)
            *_, sim = _wake_up_run(s, trace, Phases(0, where["scrape"], 0, where["poll"]), at, nodes)
            case.never_reason = wake_up_never(sim)
        result.cases.append(case)
    seen = [w for w in wokes if w is not None]
    if seen:
        result.activation_worst_s = None if len(seen) < len(wokes) else max(seen)
        result.activation_median_s = statistics.median(seen)
        result.activation_best_s = min(seen)
    result.zero_after_s = _zero_after(s, load)
    return result


def _zero_after(s: Setup, load: float) -> Optional[float]:
    """Seconds from the last request of a steady load to zero replicas, in the default alignment."""
    stop = warm_up_s(s)
    trace = Trace("gap", (0.0, float(stop)), (load, 0.0), stop + s.cooldown_s + 3 * warm_up_s(s))
    sim = Simulation(s, trace)
    for step in range(int(trace.duration_s) + 1):
        sim.step(float(step))
        if step > stop and sim.spec == 0:
            return float(step - stop)
    return None


def _cache_dir() -> Path:
    root = os.environ.get("GPUPLATFORM_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "gpuplatform")
    return Path(root) / "sweeps"


def _code_digest() -> str:
    """The sources a sweep's figures depend on: the simulator, the catalogs and the components that render the
    queries and defaults it reads."""
    import gpuplatform.catalogs as catalogs
    import gpuplatform.components as components
    import gpuplatform.simulate as simulate

    h = hashlib.sha256()
    for package in (simulate, catalogs, components):
        for path in sorted(Path(package.__file__).parent.rglob("*.py")):
            h.update(path.name.encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def cached_sweep(cfg: PlatformConfig, workload: str) -> dict:
    """:func:`first_scale_up_sweep` (and :func:`wake_up_sweep` as ``wakeUp`` for a scale-to-zero workload) as
    JSON, kept on disk by the inputs it depends on (the workload, its pool, the
    monitoring intervals, the cluster, and the code), so a second ``plan`` of an unchanged stack does not redo a
    few thousand runs. A cache that cannot be read or written is skipped."""
    w = find_workload(cfg, workload)
    pool = cfg.pool(w.node_pool)
    key = hashlib.sha256("|".join((
        w.model_dump_json(include={"node_pool", "gpu", "probes", "autoscaling", "service_model", "exposure", "model",
                                     "server", "image", "pre_pull", "args", "command", "env", "volumes"}),
        pool.model_dump_json() if pool else "", cfg.monitoring.model_dump_json(), cfg.cluster.model_dump_json(),
        cfg.workload_namespace(w), _code_digest())).encode()).hexdigest()
    path = _cache_dir() / f"{key}.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        pass
    s = setup(cfg, workload)
    doc = sweep_of(s).to_json()
    wake = wake_up_of(s)
    if wake is not None:
        doc["wakeUp"] = wake.to_json()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(doc))
        os.replace(tmp, path)
    except OSError:
        pass
    return doc
