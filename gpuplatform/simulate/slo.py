"""Judging a workload's SLO (``workloads[].slo``) on a simulated run, with the SLI the burn-rate alerts page on.

One definition (components/slo_alerts.py): at the end of each minute, for each objective, the objective's metric
read with the adapter's per-pod query of the workload's pods over that minute, on the worst pod, is above
``below``: ``max(<per-pod query>[1m]) > bool <below>``. The simulator evaluates that very expression
(:func:`gpuplatform.components.slo_alerts.bad_minute_expr`) with its PromQL engine on the series its Prometheus
scraped (:mod:`gpuplatform.simulate.scrape`), so a run and the recording rule on the same samples find the same bad
minutes (tests/promtool/gpuplatform/simulate/test_slo_sli_agreement.py). A minute in which no pod reports the metric has no reading
and is not bad. ``simulate`` also counts a minute in which requests failed (no ready replica: ingress-nginx answers
503; or lost at a scale-in) as bad: no pod reports those, so the burn-rate alerts do not see them.

Only whole minutes of the trace are judged (a 24-hour trace has 1440). The SLO is met when the share of good
minutes is at least ``compliance`` percent; the error budget is the rest (the SRE book's definition of an SLO's
error budget: https://sre.google/sre-book/service-level-objectives/ ).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

from gpuplatform.simulate import promql

MINUTE_S = 60


def bad_minute(expr: str, storage: promql.Storage, t: float, version) -> Optional[bool]:
    """The SLI's 0/1 expression evaluated at ``t`` (the end of the minute): True for a bad minute, None when no
    pod reported the metric."""
    vec = promql.evaluate(expr, storage, t, version)
    if isinstance(vec, float):
        return vec > 0
    values = [v for _, v in vec if not math.isnan(v)]
    return None if not values else max(values) > 0


def error_budget_minutes(compliance: float, minutes: int) -> int:
    """The bad minutes an SLO of ``compliance`` percent allows in ``minutes``."""
    return math.floor((1 - compliance / 100) * minutes + 1e-9)


@dataclass(frozen=True)
class SloVerdict:
    objectives: tuple[tuple[str, float], ...]
    """(metric, below) as judged: ``--slo`` may have replaced the threshold of the objective on the HPA's metric."""
    compliance: float
    minutes: int
    bad_minutes: int
    bad_by_objective: tuple[int, ...]
    failed_minutes: int = 0
    """Minutes bad because requests failed in them (whatever the objectives read)."""
    unread_minutes: int = 0
    """Minutes in which no pod reported an objective's metric and no request failed (neither good nor bad)."""

    @property
    def fraction(self) -> float:
        """The share of judged minutes out of SLO."""
        return self.bad_minutes / self.minutes if self.minutes else 0.0

    @property
    def met(self) -> bool:
        return self.bad_minutes <= error_budget_minutes(self.compliance, self.minutes)

    @property
    def bad_s(self) -> int:
        return self.bad_minutes * MINUTE_S

    def to_json(self) -> dict:
        return {"objectives": [{"metric": m, "below": b, "badMinutes": n}
                               for (m, b), n in zip(self.objectives, self.bad_by_objective)],
                "compliance": self.compliance, "minutes": self.minutes, "badMinutes": self.bad_minutes,
                "failedMinutes": self.failed_minutes, "unreadMinutes": self.unread_minutes,
                "badSeconds": self.bad_s, "fraction": round(self.fraction, 6), "met": self.met}

    def text(self) -> str:
        objs = " and ".join(f"{m} < {b:g}" for m, b in self.objectives)
        failed = f", {self.failed_minutes} with failed requests" if self.failed_minutes else ""
        return (f"{objs} in {self.compliance:g}% of minutes: {self.bad_minutes} of {self.minutes} minutes out "
                f"({self.fraction:.2%}, {self.bad_s}s{failed}), {'met' if self.met else 'NOT met'}")


def judge(objectives: Sequence[tuple[str, float]], compliance: float,
          readings: Sequence[Sequence[Optional[bool]]], failed: Sequence[bool]) -> SloVerdict:
    """``readings[k][m]``: objective k's SLI in minute m (True bad, False good, None no reading); ``failed[m]``:
    requests failed in minute m."""
    minutes = len(failed)
    per_objective = tuple(sum(1 for r in series[:minutes] if r) for series in readings)
    bad = unread = 0
    for m in range(minutes):
        read = [series[m] for series in readings if m < len(series)]
        if failed[m] or any(read):
            bad += 1
        elif all(r is None for r in read):
            unread += 1
    return SloVerdict(tuple(objectives), compliance, minutes, bad, per_objective, sum(map(bool, failed)), unread)
