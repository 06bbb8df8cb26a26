"""Where the Prometheus releases the evaluator models compute the adapter's queries differently.

Each case is constructed so that exactly one change between releases moves the result, and its expected values are
worked out by hand in the docstring from ``extrapolatedRate`` (``promql/functions.go``) and ``bucketQuantile``
(``promql/quantile.go``) of the release named. ``tests/promtool/gpuplatform/simulate/test_promql.py`` runs the same series
through promtool 3.14.0 (the release the stack deploys) and Debian's 2.42 and requires each one's values;
``test_promql_semantics_real_prometheus.py`` does the same through the two releases' servers.
"""
from __future__ import annotations

import pytest

from gpuplatform.catalogs.versions import PROMETHEUS_VERSION, prometheus_version
from gpuplatform.simulate import promql

V2_42 = (2, 42, 0)
V2_50 = (2, 50, 1)
V2_51 = (2, 51, 0)
V3_14 = (3, 14, 0)


def _counter(points: dict[float, float], name: str = "c") -> promql.Storage:
    st = promql.Storage()
    for t, v in points.items():
        st.add(name, {"pod": "a"}, t, v)
    return st


def _value(query: str, st: promql.Storage, t: float, version) -> float:
    ((_, value),) = promql.evaluate(query, st, t, version)
    return value


# A pod born mid-window: scraped every 15 s from t=30, its counter at 40, 80, 120; increase(c[1m]) at t=60.
# Window [0, 60] (2.x) or (0, 60] (3.x): the same three samples either way.
#   sampled = 60 - 30 = 30 s, average interval = 15 s, 1.1 x average = 16.5 s
#   durationToStart = 30 - 0 = 30 s, durationToEnd = 0
#   result = 120 - 40 = 80; zero point: durationToZero = 30 * 40 / 80 = 15 s
YOUNG_POD = {30.0: 40.0, 45.0: 80.0, 60.0: 120.0}


def test_a_young_counter_extrapolates_further_before_2_51() -> None:
    """2.42-2.50: durationToStart = min(30, 15) = 15 first, then 15 < 16.5 extrapolates all of it:
    80 * (30 + 15 + 0) / 30 = 120 (the zero-point cut *lengthened* the extrapolation, from 7.5 s to 15 s).

    2.51+ and 3.x: 30 >= 16.5 caps durationToStart at 15 / 2 = 7.5 first, then min(7.5, 15) = 7.5:
    80 * (30 + 7.5 + 0) / 30 = 100. As a rate over 60 s: 2.0 and 1.667 req/s, 20 % apart."""
    st = _counter(YOUNG_POD)
    assert _value("increase(c[1m])", st, 60.0, V2_42) == pytest.approx(120.0)
    assert _value("increase(c[1m])", st, 60.0, V2_50) == pytest.approx(120.0)
    assert _value("increase(c[1m])", st, 60.0, V2_51) == pytest.approx(100.0)
    assert _value("increase(c[1m])", st, 60.0, V3_14) == pytest.approx(100.0)
    assert _value("rate(c[1m])", st, 60.0, V2_42) == pytest.approx(2.0)
    assert _value("rate(c[1m])", st, 60.0, V3_14) == pytest.approx(100.0 / 60.0)


def test_the_zero_point_cut_is_the_same_in_both_orders_when_it_is_below_half_an_interval() -> None:
    """Counter at 10, 90, 170 at t=30, 45, 60: result 160, durationToZero = 30 * 10 / 160 = 1.875 s.
    2.42: min(30, 1.875) = 1.875 < 16.5, kept. 3.14: 30 >= 16.5 -> 7.5, then min(7.5, 1.875) = 1.875.
    Both: 160 * (30 + 1.875) / 30 = 170, the counter's own value: it started from zero inside the window."""
    st = _counter({30.0: 10.0, 45.0: 90.0, 60.0: 170.0})
    for version in (V2_42, V3_14):
        assert _value("increase(c[1m])", st, 60.0, version) == pytest.approx(170.0)


def test_delta_has_no_zero_point_so_the_order_does_not_matter() -> None:
    """delta() is not a counter function: 30 >= 16.5 -> 7.5 s in every release: 80 * 37.5 / 30 = 100."""
    st = _counter(YOUNG_POD)
    for version in (V2_42, V3_14):
        assert _value("delta(c[1m])", st, 60.0, version) == pytest.approx(100.0)


def test_a_sample_on_the_window_start_counts_until_3_0() -> None:
    """Scrapes aligned with the evaluation: counter 10, 20, 30, 40, 100 at t=0, 15, 30, 45, 60; increase(c[1m]) at 60.

    2.x, window [0, 60], 5 samples: sampled 60, durationToStart 0, result 90, zero point 60 * 10 / 90 = 6.67 > 0:
    90 * (60 + 0 + 0) / 60 = 90.
    3.x, window (0, 60], the sample at t=0 is out, 4 samples: sampled 45, average 15, durationToStart 15 < 16.5,
    result 100 - 20 = 80, zero point 45 * 20 / 80 = 11.25 < 15: 80 * (45 + 11.25 + 0) / 45 = 100."""
    st = _counter({0.0: 10.0, 15.0: 20.0, 30.0: 30.0, 45.0: 40.0, 60.0: 100.0})
    assert _value("increase(c[1m])", st, 60.0, V2_42) == pytest.approx(90.0)
    assert _value("increase(c[1m])", st, 60.0, V2_51) == pytest.approx(90.0)
    assert _value("increase(c[1m])", st, 60.0, V3_14) == pytest.approx(100.0)
    # between scrapes no sample sits on the start and the releases agree: at 61 the window (1, 61] holds t=15..60,
    # durationToStart 14 < 16.5, durationToEnd 1, zero point 11.25 < 14: 80 * (45 + 11.25 + 1) / 45
    for version in (V2_42, V3_14):
        assert _value("increase(c[1m])", st, 61.0, version) == pytest.approx(80 * 57.25 / 45)


def _buckets(counts: dict[str, float]) -> promql.Storage:
    st = promql.Storage()
    for le, v in counts.items():
        st.add("h_bucket", {"pod": "a", "le": le}, 0.0, v)
    return st


def test_floating_point_noise_in_a_bucket_moves_the_quantile_before_2_49() -> None:
    """All 3 observations in the first bucket (le=0.1), the next buckets off by one ulp, as a sum of bucket rates can
    be: counts 3, 3.0000000000000004, 3.0000000000000004; histogram_quantile(1, ...): rank = 3.0000000000000004.

    2.42: the first bucket with count >= rank is le=1; interpolate in (0.1, 1]: 0.1 + 0.9 * (4.4e-16 / 4.4e-16) = 1.
    2.49+: the later counts are within 1e-12 of 3 and are set to 3; rank 3 falls in le=0.1: 0.1 * 3 / 3 = 0.1."""
    noisy = 3.0000000000000004
    st = _buckets({"0.1": 3.0, "1": noisy, "+Inf": noisy})
    assert _value("histogram_quantile(1, h_bucket)", st, 0.0, V2_42) == pytest.approx(1.0)
    assert _value("histogram_quantile(1, h_bucket)", st, 0.0, (2, 49, 0)) == pytest.approx(0.1)
    assert _value("histogram_quantile(1, h_bucket)", st, 0.0, V3_14) == pytest.approx(0.1)
    # a real difference is kept: 3 in le=0.1, one more in le=1 -> rank 4 in (0.1, 1]: 0.1 + 0.9 * 1 / 1 = 1
    st = _buckets({"0.1": 3.0, "1": 4.0, "+Inf": 4.0})
    assert _value("histogram_quantile(1, h_bucket)", st, 0.0, V3_14) == pytest.approx(1.0)


def test_buckets_with_the_same_bound_are_one_bucket() -> None:
    """``le="1"`` and ``le="1.0"`` (a series renamed by 3.0's label normalization) are added (coalesceBuckets):
    counts 2 (le=0.5), 3 + 3 = 6 (le=1), 6 (+Inf); histogram_quantile(0.5, ...): rank 0.5 * 6 = 3 falls in
    (0.5, 1], which holds 6 - 2 = 4: 0.5 + 0.5 * (3 - 2) / 4 = 0.625. Kept apart, the first le=1 series (3) would
    hold the rank: 0.5 + 0.5 * (3 - 2) / (3 - 2) = 1."""
    st = _buckets({"0.5": 2.0, "1": 3.0, "1.0": 3.0, "+Inf": 6.0})
    for version in (V2_42, V3_14):
        assert _value("histogram_quantile(0.5, h_bucket)", st, 0.0, version) == pytest.approx(0.625)


def test_a_regex_dot_matches_a_newline_from_3_0() -> None:
    """3.0 migration guide, "Regular expressions match newlines": ``pod=~"x.*"`` selects ``x\\ny`` in 3.x only."""
    st = promql.Storage()
    st.add("g", {"pod": "x\ny"}, 0.0, 1.0)
    st.add("g", {"pod": "xy"}, 0.0, 2.0)
    pods = lambda version: sorted(l["pod"] for l, _ in promql.evaluate('g{pod=~"x.*"}', st, 0.0, version))
    assert pods(V2_42) == ["xy"]
    assert pods(V3_14) == ["x\ny", "xy"]
    # a negative matcher flips with it
    assert [l["pod"] for l, _ in promql.evaluate('g{pod!~"x.*y"}', st, 0.0, V3_14)] == []
    assert [l["pod"] for l, _ in promql.evaluate('g{pod!~"x.*y"}', st, 0.0, V2_42)] == ["x\ny"]


def _cancelling() -> promql.Storage:
    st = promql.Storage()
    for t in (0.0, 15.0, 30.0):
        for pod, value in (("p3", -1e16), ("p1", 1e16), ("p2", 1.0)):
            st.add("big", {"pod": pod}, t, value)
    for t, value in ((0.0, 1e16), (15.0, 1.0), (30.0, -1e16)):
        st.add("seq", {"pod": "q"}, t, value)
    return st


def test_sums_that_cancel_keep_the_small_value_where_the_release_compensates() -> None:
    """1e16 + 1 - 1e16: a plain float sum in the series' label order (p1, p2, p3) loses the 1 to rounding (1e16 + 1
    is 1e16), a Kahan-Neumaier sum keeps it in its compensation term. ``sum`` compensates from 2.54 (PRs #14074,
    #14362), ``avg`` from 2.55 (PR #14413: the compensated sum over the count, 1/3), ``sum_over_time`` in every
    modelled release (2.32, PR #9588). The evaluator adds a plain sum in label order whatever order the series were
    written in (p3 first here), as the engine does."""
    st = _cancelling()
    assert _value("sum(big)", st, 30.0, V2_42) == 0.0
    assert _value("sum(big)", st, 30.0, (2, 54, 0)) == 1.0
    assert _value("sum(big)", st, 30.0, V3_14) == 1.0
    assert _value("avg(big)", st, 30.0, V3_14) == pytest.approx(1 / 3)
    assert _value("sum_over_time(seq[1m])", st, 30.0, V2_42) == 1.0
    assert _value("sum_over_time(seq[1m])", st, 30.0, V3_14) == 1.0
    assert _value("avg_over_time(seq[1m])", st, 30.0, V3_14) == pytest.approx(1 / 3)
    # without cancellation every release's mean is the mean
    plain = promql.Storage()
    for pod, value in (("a", 2.0), ("b", 4.0), ("c", 9.0)):
        plain.add("g", {"pod": pod}, 0.0, value)
    for version in (V2_42, V3_14):
        assert _value("avg(g)", plain, 0.0, version) == pytest.approx(5.0)
        assert _value("sum(g)", plain, 0.0, version) == 15.0


def test_the_evaluator_follows_the_release_the_stack_deploys_by_default() -> None:
    assert promql.DEFAULT_VERSION == prometheus_version("self-hosted") == (3, 14, 0)
    assert PROMETHEUS_VERSION["self-hosted"] == "3.14.0"
    # ACK managed Prometheus publishes no release: evaluated as the pinned self-hosted one, an assumption
    assert PROMETHEUS_VERSION["arms"] is None and prometheus_version("arms") == prometheus_version("self-hosted")
    st = _counter(YOUNG_POD)
    assert promql.evaluate("increase(c[1m])", st, 60.0) == promql.evaluate("increase(c[1m])", st, 60.0, V3_14)


def test_the_engines_build_the_prometheus_release_the_stack_deploys() -> None:
    """The real-loop chain and the real-server tests run engines/versions.env's Prometheus: it must be the release
    the catalog pins, required as the Go module Prometheus publishes it under (v3.14.0 as v0.314.0)."""
    from gpuplatform.rehearse.engines import pinned_versions

    pinned = pinned_versions()
    major, minor, patch = prometheus_version("self-hosted")
    assert pinned["PROMETHEUS_VERSION"] == f"v{major}.{minor}.{patch}"
    assert pinned["PROMETHEUS_MODULE_VERSION"] == f"v0.{major * 100 + minor}.{patch}"


@pytest.mark.parametrize("version", [(2, 41, 0), (4, 0, 0), (3, 14)])
def test_a_release_outside_the_modelled_ones_is_refused(version) -> None:
    with pytest.raises(promql.PromQLError, match="is not modelled: releases 2.42.0 to 3.x are"):
        promql.evaluate("c", promql.Storage(), 0.0, version)
