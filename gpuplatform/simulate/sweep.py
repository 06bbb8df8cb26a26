"""The first scale-up after a load step, over every phase of the loops and several step sizes.

The exporter's collection, Prometheus' scrape and the HPA's sync run on their own clocks, so how long a step takes
to reach a decision depends on where the step falls between their ticks. A single run shows one alignment; this
module runs all of them (every second of each period) for steps from 0.6 x base to each of ``STEP_SIZES`` x base
(base: the load ``minReplicas`` serve at target) and reports the worst case and the median.

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
from gpuplatform.simulate.engine import Phases, Setup, Simulation, find_workload, setup
from gpuplatform.simulate.traces import Trace

STEP_SIZES = (1.2, 1.3, 1.5, 2.0, 3.0)
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

    def to_json(self) -> dict:
        return {"worstSeconds": self.worst_s, "medianSeconds": self.median_s, "bestSeconds": self.best_s,
                "runs": self.runs, "never": self.never, "worstAt": self.worst_at,
                "perStep": {f"{k:g}x": v for k, v in self.per_step.items()}}


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


def first_scale_up_sweep(cfg: PlatformConfig, workload: str, steps=STEP_SIZES) -> SweepResult:
    s = setup(cfg, workload)
    at = warm_up_s(s)
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
                        results[factor].append((value, {"step": f"{factor:g}x", "collect": c, "scrape": sc,
                                                        "sync": h}))
    samples = [x for f in traces for x in results[f]]
    per_step = {}
    for factor in traces:
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
    return SweepResult(worst, statistics.median(values) if values else None, min(values) if values else None,
                       len(samples), never, worst_at, per_step)


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
    """:func:`first_scale_up_sweep` as JSON, kept on disk by the inputs it depends on (the workload, its pool, the
    monitoring intervals, the cluster, and the code), so a second ``plan`` of an unchanged stack does not redo a
    few thousand runs. A cache that cannot be read or written is skipped."""
    w = find_workload(cfg, workload)
    pool = cfg.pool(w.node_pool)
    key = hashlib.sha256("|".join((
        w.model_dump_json(include={"node_pool", "gpu", "probes", "autoscaling", "service_model", "exposure", "model",
                                     "server", "image"}),
        pool.model_dump_json() if pool else "", cfg.monitoring.model_dump_json(), cfg.cluster.model_dump_json(),
        cfg.workload_namespace(w), _code_digest())).encode()).hexdigest()
    path = _cache_dir() / f"{key}.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        pass
    doc = first_scale_up_sweep(cfg, workload).to_json()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(doc))
        os.replace(tmp, path)
    except OSError:
        pass
    return doc
