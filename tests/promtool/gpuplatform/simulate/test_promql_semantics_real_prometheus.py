"""The simulator's PromQL semantics per release, against the real server of that release, on the same series.

``gpuplatform.simulate.promql`` evaluates with the semantics of a Prometheus release (``Semantics``: 3.14.0, the
release the stack deploys, by default). ``promtool test rules`` (test_promql.py) can only write series on a
regular grid; this test writes samples at any millisecond (irregular scrapes, a sample exactly on a window's start
or on the lookback's edge, a young counter, a counter reset, a label value holding a newline, sums that cancel) into
a TSDB with that release's own ``promtool tsdb create-blocks-from openmetrics``, starts that release's server on the
blocks, and requires every query of :data:`QUERIES` to return the same series and values from the server's HTTP
API as from the evaluator set to the server's release, at every 2.5 s of the timeline and on the irregular samples.

Each release runs it: the stack's (3.14.0, built by engines/build) and Debian's 2.42. The cases are chosen so that
the two releases' semantics differ on them (:data:`DIFFERENCES` is checked: at some instant the other release's
semantics give another answer than the server did), so a simulator stuck on one release's semantics fails on the
other's server.
"""
from __future__ import annotations

import math
from collections import Counter
import subprocess
import time

import pytest
from prometheus_server import RELEASES, PrometheusServer, prometheus_release, require_release

from gpuplatform.simulate import promql

STEP_S = 15.0
END_S = 300.0
GRID_S = 2.5
"""Evaluation every 2.5 s: on the 15 s scrapes, halfway between them, and the lookback's edge (450 s)."""
JITTER = (0.0, 0.375, -0.25, 0.125, -0.375, 0.25, 0.0, -0.125)
"""Irregular scrapes: offsets from the 15 s grid in eighths of a second (exact in binary floating point and in
milliseconds, so a window's start computed by either side falls on the sample exactly when it should)."""


def _series() -> dict[tuple[str, tuple], list[tuple[float, float]]]:
    """(name, labels) -> [(seconds from the timeline's start, value)]."""
    out: dict[tuple[str, tuple], list[tuple[float, float]]] = {}
    grid = [k * STEP_S for k in range(int(END_S / STEP_S) + 1)]
    # scrapes aligned with the evaluation: a sample on the window's start is in the window up to 2.x, out from 3.0
    out[("aligned_total", (("pod", "a"),))] = [(t, 10.0 * k + (60.0 if k >= 4 else 0.0)) for k, t in enumerate(grid)]
    # irregular scrapes and a counter reset (a restart) at 150 s
    jittered = []
    for k, t in enumerate(grid):
        value = 7.0 * k + 0.5 * k * k if t < 150 else 3.0 * (k - 10)
        jittered.append((t + JITTER[k % len(JITTER)], value))
    out[("jittered_total", (("pod", "b"),))] = jittered
    # a pod born mid-run: its counter's zero point decides the extrapolation (2.51 changed the order)
    out[("young_total", (("pod", "c"),))] = [(t, 40.0 * (k + 1)) for k, t in enumerate(grid[8:])]
    # a gauge that ends at 150 s: at 450 s its last sample is exactly the 5 m lookback away
    out[("gauge", (("pod", "a"),))] = [(t, 50.0 + 10.0 * math.sin(k)) for k, t in enumerate(grid[:11])]
    out[("gauge", (("pod", "b"),))] = [(t + JITTER[k % len(JITTER)], 20.0 + k) for k, t in enumerate(grid)]
    # a label value holding a newline: 3.0's regex "." matches it
    out[("newline", (("pod", "x\ny"),))] = [(t, 1.0) for t in grid]
    out[("newline", (("pod", "xy"),))] = [(t, 2.0) for t in grid]
    # values whose sum cancels: a compensated (Kahan-Neumaier) sum keeps the 1, a plain one loses it
    for pod, value in (("p1", 1e16), ("p2", 1.0), ("p3", -1e16)):
        out[("big", (("pod", pod),))] = [(t, value) for t in grid]
    out[("big_over_time", (("pod", "q"),))] = [(t, (1e16, 1.0, -1e16)[k % 3]) for k, t in enumerate(grid)]
    return out


QUERIES = {
    "rate_aligned": "rate(aligned_total[1m])",
    "increase_aligned": 'sum by (pod) (increase(aligned_total{pod="a"}[45s]))',
    "rate_jittered": "rate(jittered_total[30s])",
    "increase_young": "increase(young_total[1m])",
    "delta_gauge": "delta(gauge[1m])",
    "instant_gauge": "gauge",
    "last_over_time": "last_over_time(gauge[1m])",
    "avg_over_time": "avg_over_time(gauge[1m])",
    "count_over_time": "count_over_time(gauge[30s])",
    "max_min_over_time": "max_over_time(gauge[45s]) - min_over_time(gauge[45s])",
    "regex": 'newline{pod=~"x.*"}',
    "regex_over_time": 'count_over_time(newline{pod=~"x.+y"}[30s])',
    "sum": "sum(big)",
    "avg": "avg(big)",
    "sum_over_time": "sum_over_time(big_over_time[45s])",
    "avg_over_time_cancelling": "avg_over_time(big_over_time[45s])",
}
DIFFERENCES = {
    "rate_aligned": "3.0: range selectors are left-open (a sample on the window's start is out)",
    "increase_young": "2.51: the start is capped at half an interval before the counter's zero point",
    "instant_gauge": "3.0: the lookback is left-open (a sample exactly 5 m old is out)",
    "regex": "3.0: '.' in a regex matches a newline",
    "sum": "2.54: sum() adds with Kahan-Neumaier compensation",
    "avg": "2.55: avg() adds with compensation",
}
"""Queries on which the two releases must differ somewhere on the timeline, and the change that makes them."""


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _openmetrics(series: dict, base: float) -> str:
    lines = []
    for name in sorted({n for n, _ in series}):
        for (n, labels), samples in sorted(series.items()):
            if n != name:
                continue
            shown = ",".join(f'{k}="{_escape(v)}"' for k, v in labels)
            lines += [f"{name}{{{shown}}} {v!r} {base + t:.3f}" for t, v in samples]
    return "\n".join(lines + ["# EOF"]) + "\n"


def _storage(series: dict) -> promql.Storage:
    storage = promql.Storage()
    for (name, labels), samples in series.items():
        for t, v in samples:
            storage.add(name, dict(labels), t, v)
    return storage


def _key(labels: dict) -> tuple:
    return tuple(sorted(labels.items()))


def _same(a: float, b: float) -> bool:
    return a == b or abs(a - b) <= 1e-12 * max(abs(a), abs(b))


def _theirs(prom: PrometheusServer, query: str, base: float, times: list[float]) -> dict[float, dict]:
    """Time (from the timeline's start) -> {labels: value}, from the server: one range query for the grid, an
    instant query for each other time."""
    out: dict[float, dict] = {t: {} for t in times}
    grid = [t for t in times if (t / GRID_S).is_integer()]
    doc = prom.query_range(query, base + grid[0], base + grid[-1], GRID_S)
    for s in doc["data"]["result"]:
        for ts, v in s["values"]:
            out[round(float(ts) - base, 3)][_key(s["metric"])] = float(v)
    for t in times:
        if t in grid:
            continue
        for s in prom.query(query, base + t)["data"]["result"]:
            out[t][_key(s["metric"])] = float(s["value"][1])
    return out


def _ours(query: str, storage: promql.Storage, t: float, version) -> dict:
    return {_key(labels): v for labels, v in promql.evaluate(query, storage, t, version)}


def _differs(a: dict, b: dict) -> bool:
    return a.keys() != b.keys() or any(not _same(a[k], b[k]) for k in a)


@pytest.mark.xdist_group("real-prometheus")
@pytest.mark.parametrize("release", RELEASES)
def test_the_evaluator_computes_what_the_real_server_of_its_release_computes(release, tmp_path,
                                                                                record_property) -> None:
    binary = require_release("prometheus", release)
    promtool = require_release("promtool", release)
    version = prometheus_release(binary)
    other = (2, 42, 0) if version[0] >= 3 else promql.DEFAULT_VERSION
    series = _series()
    # three hours back, on a whole hour: every sample lands in one of the backfill's 2 h blocks, in the past
    base = float((int(time.time()) // 3600 - 3) * 3600)
    source = tmp_path / "series.om"
    source.write_text(_openmetrics(series, base))
    done = subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", "--quiet", str(source),
                           str(tmp_path / "tsdb")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    storage = _storage(series)
    grid = [k * GRID_S for k in range(int((END_S + 180.0) / GRID_S) + 1)]
    # the irregular scrapes, and the instants whose 30 s window starts exactly on one of them
    jittered = sorted({t for t, _ in series[("jittered_total", (("pod", "b"),))]}
                      | {t + 30.0 for t, _ in series[("jittered_total", (("pod", "b"),))]})
    times = sorted(set(grid) | set(jittered))
    mismatches, compared, differ = [], 0, {name: 0 for name in DIFFERENCES}
    with PrometheusServer(binary, tmp_path, []) as prom:
        for name, query in QUERIES.items():
            theirs = _theirs(prom, query, base, times)
            for t in times:
                ours = _ours(query, storage, t, version)
                compared += len(theirs[t])
                if _differs(ours, theirs[t]):
                    mismatches.append(f"{name} at {t:g} s: server {theirs[t]}, evaluator {ours}")
                if name in differ and _differs(_ours(query, storage, t, other), theirs[t]):
                    differ[name] += 1
    shown = ".".join(map(str, version))
    record_property("figures", f"Prometheus {shown} server vs the evaluator's {shown} semantics: {compared} values "
                               f"of {len(QUERIES)} queries at {len(times)} instants, {len(mismatches)} differ; "
                               f"the other release's semantics differ at " +
                               ", ".join(f"{n} {c}" for n, c in differ.items()))
    per_query = Counter(m.split(" at ")[0] for m in mismatches)
    assert not mismatches, (f"{len(mismatches)} values differ from Prometheus {shown} ({dict(per_query)}):\n"
                            + "\n".join(m for name in per_query for m in [m for m in mismatches
                                                                        if m.startswith(f"{name} at ")][:5]))
    assert compared > 3000
    unexercised = [f"{n} ({DIFFERENCES[n]})" for n, c in differ.items() if c == 0]
    assert not unexercised, ("the series do not exercise these differences between releases: "
                             + "; ".join(unexercised))
