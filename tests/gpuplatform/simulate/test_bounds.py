"""The throughput lower bound when the SLO's band equals a value a latency histogram reports.

histogram_quantile reads every latency inside a bucket ``(lo, hi]`` as ``lo + 0.9 (hi - lo)``, so a p90 latency
metric is a staircase in the load. A band equal to one of its steps is met along the whole step; the bound must let
a replica serve up to the step's end.
"""
from __future__ import annotations

import math

import pytest
from support import stack_raw

from gpuplatform.components.validation import load
from gpuplatform.simulate.bounds import lower_bound, most_held_at_or_below
from gpuplatform.simulate.engine import setup
from gpuplatform.simulate.hpa import TOLERANCE
from gpuplatform.simulate.traces import built_in


@pytest.fixture(scope="module")
def tgi_latency():
    """prod's workload as TGI scaled on its p90 request latency (0.4 s of service, 8 slots; buckets 0.15 ms x 1.5^k)."""
    from test_metric_sources_llm_servers import llm_workload

    raw = stack_raw("prod")
    llm_workload("tgi", "tgi_request_latency_p90_ms")(raw)
    raw["workloads"][0]["autoscaling"]["metrics"][0]["target"] = 1500
    raw["workloads"][0]["serviceModel"].update({"concurrency": 8, "firstTokenMs": 150})
    s = setup(load(raw), "llm")
    trace = built_in("step", s.plan.rps_at_target, s.plan.rps_at_target * s.max_replicas, 900)
    return s, trace


def _readings(plan) -> list[float]:
    """The steps of the staircase an idle-to-saturated replica walks through, in the metric's unit (ms)."""
    b = plan.buckets
    steps = [(b[k - 1] + 0.9 * (b[k] - b[k - 1])) * plan.time_unit for k in range(1, len(b))]
    return [r for r in steps if r >= plan.level(0.0)][:4]


def test_a_band_on_a_step_is_met_along_the_whole_step(tgi_latency) -> None:
    plan = tgi_latency[0].plan
    readings = _readings(plan)
    assert readings[0] == pytest.approx(plan.level(0.0))  # an idle replica already reads the first step
    for reading in readings:
        x = most_held_at_or_below(plan, reading)
        assert plan.level(x) <= reading < plan.level(x * (1 + 1e-6))  # the step's end: one more request is over
        assert x > plan.x_at_level(reading)  # where the step starts


def test_the_bound_does_not_jump_when_the_band_equals_a_step(tgi_latency) -> None:
    """For any band from one step up to (not including) the next, the replicas may hold the same load, so the bound
    is the same: at the step itself, one part in a million above it, and at the bucket's upper bound. Taking the
    step's start (where the metric first reaches the band) gave the previous step's bound, 13 % higher here, and
    an unbounded one (4.8e18 replica-hours) when the band is what an idle replica reads."""
    s, trace = tgi_latency
    for reading in _readings(s.plan):
        bounds = [lower_bound(s, trace, band / (1 + TOLERANCE)).ready_replica_s
                  for band in (reading, reading * (1 + 1e-6))]
        assert math.isfinite(bounds[0]) and bounds[0] == pytest.approx(bounds[1], rel=1e-9)
    first, second = _readings(s.plan)[:2]
    below_second = lower_bound(s, trace, second * (1 - 1e-6) / (1 + TOLERANCE)).ready_replica_s
    at_second = lower_bound(s, trace, second / (1 + TOLERANCE)).ready_replica_s
    assert at_second < below_second  # reaching the next step does lower the bound, and only then
