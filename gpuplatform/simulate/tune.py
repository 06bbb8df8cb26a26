"""``gpuplatform simulate --tune``: the autoscaling settings that cost least on a trace within a time-over-target
budget.

The search covers what decides cost and lag on a GPU workload: the first metric's target (fewer, busier replicas
or more, idler ones), the scale-down stabilization window (how long a replica outlives the load that needed it)
and the scale-down rate. Every candidate runs the whole trace through the same simulation; a candidate is
feasible when its time over target beyond the HPA's tolerance (plus failed requests) stays within the budget. The
cheapest feasible one wins: least GPU units held (the pool's own unit), then node-hours. The stack's own settings
are a candidate, so the result is never worse than them on this trace.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import yaml

from gpuplatform.catalogs.metrics import METRICS
from gpuplatform.components.config import Behavior, PlatformConfig, ScalingPolicy, ScalingRules
from gpuplatform.simulate.engine import Result, find_workload, simulate
from gpuplatform.simulate.service import service_plan
from gpuplatform.simulate.traces import Trace

TARGET_FACTORS = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.25)
SCALE_DOWN_WINDOWS_S = (60, 120, 300, 600)
SCALE_DOWN_RATES = {
    "one pod a minute": (ScalingPolicy(type="Pods", value=1, period_seconds=60),),
    "half a minute": (ScalingPolicy(type="Percent", value=50, period_seconds=60),),
}
UNIT_CEILINGS = {"percent": 90.0, "ratio": 0.9}
"""Bounded units leave room above the target for the tolerance (the config rule allows up to 1/1.1 of full)."""


@dataclass(frozen=True)
class Candidate:
    target: float
    scale_down_window_s: Optional[int]
    scale_down_rate: Optional[str]

    def label(self) -> str:
        if self.scale_down_window_s is None:
            return f"the stack's own (target {self.target:g})"
        return (f"target {self.target:g}, scale-down window {self.scale_down_window_s}s, "
                f"scale-down {self.scale_down_rate}")


@dataclass
class Outcome:
    candidate: Candidate
    result: Result
    slo: float

    @property
    def violation_s(self) -> float:
        return self.result.over_target_s

    @property
    def cost(self) -> tuple:
        return (self.result.unit_hours, self.result.tally.node_s)


def with_candidate(cfg: PlatformConfig, workload: str, c: Candidate) -> PlatformConfig:
    w = find_workload(cfg, workload)
    a = w.autoscaling
    update: dict = {"metrics": [a.metrics[0].model_copy(update={"target": c.target}), *a.metrics[1:]]}
    if c.scale_down_window_s is not None:
        scale_up = a.behavior.scale_up if a.behavior else None
        update["behavior"] = Behavior(scale_up=scale_up, scale_down=ScalingRules(
            stabilization_window_seconds=c.scale_down_window_s, policies=list(SCALE_DOWN_RATES[c.scale_down_rate])))
    tuned = w.model_copy(update={"autoscaling": a.model_copy(update=update)})
    return cfg.model_copy(update={"workloads": [tuned if x.name == workload else x for x in cfg.workloads]})


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


def tune(cfg: PlatformConfig, stack: str, workload: str, trace: Trace, budget_s: float,
         slo: Optional[float] = None) -> tuple[Outcome, Outcome, int]:
    """(the stack's own outcome, the best outcome, candidates tried). Two passes: every target (factors of the
    stack's own) with every scale-down window at the first rate, then the best of those at every rate. Every
    candidate is judged against the same SLO level (default: the stack's own target), not against its own
    target."""
    own_target = find_workload(cfg, workload).autoscaling.metrics[0].target
    slo = own_target if slo is None else slo

    def run(c: Candidate) -> Outcome:
        return Outcome(c, simulate(with_candidate(cfg, workload, c), stack, workload, trace, slo_target=slo), slo)

    def pick(outcomes: list) -> Outcome:
        feasible = [o for o in outcomes if o.violation_s <= budget_s]
        return (min(feasible, key=lambda o: o.cost) if feasible
                else min(outcomes, key=lambda o: (o.violation_s, o.cost)))

    own = run(Candidate(own_target, None, None))
    first_rate = next(iter(SCALE_DOWN_RATES))
    outcomes = [own] + [run(Candidate(t, w, first_rate)) for t in targets(cfg, workload) for w in SCALE_DOWN_WINDOWS_S]
    best = pick(outcomes)
    if best.candidate.scale_down_window_s is not None:
        outcomes += [run(Candidate(best.candidate.target, best.candidate.scale_down_window_s, rate))
                     for rate in SCALE_DOWN_RATES if rate != first_rate]
        best = pick(outcomes)
    return own, best, len(outcomes)


def snippet(cfg: PlatformConfig, workload: str, c: Candidate) -> str:
    """The stack-file lines that set the candidate (a fragment of ``gpu-platform:workloads``)."""
    w = find_workload(cfg, workload)
    first = w.autoscaling.metrics[0]
    autoscaling: dict = {"metrics": [{"metric": first.metric, "target": c.target}]}
    if c.scale_down_window_s is not None:
        autoscaling["behavior"] = {"scaleDown": {
            "stabilizationWindowSeconds": c.scale_down_window_s,
            "policies": [{"type": p.type, "value": p.value, "periodSeconds": p.period_seconds}
                         for p in SCALE_DOWN_RATES[c.scale_down_rate]]}}
    doc = {"gpu-platform:workloads": [{"name": workload, "autoscaling": autoscaling}]}
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=None)
