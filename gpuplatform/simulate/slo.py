"""Judging a workload's SLO (``workloads[].slo``) on a simulated run.

A minute is bad when, for any objective, the objective's metric averaged over the minute's seconds is above
``below``, or a request failed in it: the mean of the per-second true value is what a once-a-minute evaluation of
``avg_over_time(<the adapter's query>[1m])`` reads of a metric that already averages over its rule window. The
true value is the one the simulator tallies for the HPA's metrics (:mod:`gpuplatform.simulate.engine`,
``PerSecond.level``), computed for the objective's own metric through that metric's kind. Only whole minutes of
the trace are judged (a 24-hour trace has 1440). The SLO is met when the share of good minutes is at least
``compliance`` percent; the error budget is the rest (the SRE book's definition of an SLO's error budget:
https://sre.google/sre-book/service-level-objectives/ ).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

MINUTE_S = 60


@dataclass(frozen=True)
class SloVerdict:
    objectives: tuple[tuple[str, float], ...]
    """(metric, below) as judged: ``--slo`` may have replaced the threshold of the objective on the HPA's metric."""
    compliance: float
    minutes: int
    bad_minutes: int
    bad_by_objective: tuple[int, ...]

    @property
    def fraction(self) -> float:
        """The share of judged minutes out of SLO."""
        return self.bad_minutes / self.minutes if self.minutes else 0.0

    @property
    def met(self) -> bool:
        return (1 - self.fraction) * 100 >= self.compliance - 1e-9

    @property
    def bad_s(self) -> int:
        return self.bad_minutes * MINUTE_S

    def to_json(self) -> dict:
        return {"objectives": [{"metric": m, "below": b, "badMinutes": n}
                               for (m, b), n in zip(self.objectives, self.bad_by_objective)],
                "compliance": self.compliance, "minutes": self.minutes, "badMinutes": self.bad_minutes,
                "badSeconds": self.bad_s, "fraction": round(self.fraction, 6), "met": self.met}

    def text(self) -> str:
        objs = " and ".join(f"{m} < {b:g}" for m, b in self.objectives)
        return (f"{objs} in {self.compliance:g}% of minutes: {self.bad_minutes} of {self.minutes} minutes out "
                f"({self.fraction:.2%}, {self.bad_s}s), {'met' if self.met else 'NOT met'}")


def judge(objectives: Sequence[tuple[str, float]], compliance: float, levels: Sequence[Sequence[float]],
          failing: Sequence[int]) -> SloVerdict:
    """``levels[k][t]``: objective k's metric at second t; ``failing[t]``: requests failed in second t."""
    minutes = len(failing) // MINUTE_S
    bad_any = [False] * minutes
    per_objective = []
    for (_, below), series in zip(objectives, levels):
        bad = 0
        for m in range(minutes):
            lo, hi = m * MINUTE_S, (m + 1) * MINUTE_S
            if sum(series[lo:hi]) / MINUTE_S > below or any(failing[lo:hi]):
                bad += 1
                bad_any[m] = True
        per_objective.append(bad)
    return SloVerdict(tuple(objectives), compliance, minutes, sum(bad_any), tuple(per_objective))
