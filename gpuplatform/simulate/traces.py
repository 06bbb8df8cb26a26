"""Demand traces: a CSV of ``seconds,requests_per_second`` or a built-in shape.

Built-in shapes are multiples of ``base``, the load ``minReplicas`` ready replicas serve at the metric target,
so they mean the same for every service model:

* ``step``: 0.6 x base for 5 minutes, then ``high`` for the rest (default 20 minutes);
* ``spike``: 0.6 x base, ``high`` from minute 5 to minute 7, then 0.6 x base again (default 30 minutes);
* ``ramp``: 0.5 x base rising linearly to ``high`` over the run (default 40 minutes);
* ``diurnal``: one day compressed into the run, trough at both ends, peak ``high`` in the middle, with a
  deterministic ripple (default 2 hours).

``high`` is 3 x base, but no more than 90 % of what ``maxReplicas`` serve at target (and at least 1.5 x base).
"""
from __future__ import annotations

import bisect
import csv
import math
from dataclasses import dataclass
from pathlib import Path

from gpuplatform.catalogs.arrivals import ARRIVALS, MAX_REQUESTS_PER_SECOND, kind_of
from gpuplatform.components.errors import ConfigError, ConfigIssue

SHAPES = ("step", "spike", "ramp", "diurnal")
DEFAULT_DURATION_S = {"step": 1200, "spike": 1800, "ramp": 2400, "diurnal": 7200}
STEP_AT_S = 300


class ArgumentIssue(ConfigIssue):
    """A problem with a command-line argument or the file it names (not a stack key)."""

    of_command_line = True

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass(frozen=True)
class Trace:
    name: str
    times: tuple
    rates: tuple
    duration_s: int
    notes: tuple = ()
    """What reading the trace found worth saying (points skipped, steps without any series), one line each."""

    def demand(self, t: float) -> float:
        """Requests per second at ``t``: each row holds until the next one."""
        i = bisect.bisect_right(self.times, t) - 1
        return self.rates[max(i, 0)]


def built_in(shape: str, base: float, max_rate: float, duration_s: int | None = None) -> Trace:
    duration = int(duration_s or DEFAULT_DURATION_S[shape])
    low = 0.6 * base
    high = max(1.5 * base, min(3.0 * base, 0.9 * max_rate))
    times, rates = [], []
    for t in range(0, duration + 1):
        if shape == "step":
            r = low if t < STEP_AT_S else high
        elif shape == "spike":
            r = high if STEP_AT_S <= t < STEP_AT_S + 120 else low
        elif shape == "ramp":
            r = 0.5 * base + (high - 0.5 * base) * t / max(duration, 1)
        else:
            phase = t / max(duration, 1)
            r = low * 0.5 + (high - low * 0.5) * (1 - math.cos(2 * math.pi * phase)) / 2
            r *= 1 + 0.05 * math.sin(2 * math.pi * phase * 17) + 0.03 * math.sin(2 * math.pi * phase * 41)
        times.append(t)
        rates.append(round(r, 6))
    return Trace(shape, tuple(times), tuple(rates), duration)


def from_csv(path: str, duration_s: int | None = None) -> Trace:
    """Rows ``seconds,requests_per_second`` (a header row is allowed), seconds ascending from 0."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise ConfigError([ArgumentIssue("--trace", f"cannot read {path}: {exc.strerror or exc}")]) from None
    times, rates, issues = [], [], []
    for lineno, row in enumerate(csv.reader(text.splitlines()), start=1):
        if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
            continue
        if len(row) != 2:
            issues.append(ArgumentIssue(f"{path}:{lineno}", f"{','.join(row)!r} must be 'seconds,requests_per_second'"))
            continue
        try:
            t, r = float(row[0]), float(row[1])
        except ValueError:
            if lineno == 1:
                continue  # header
            issues.append(ArgumentIssue(f"{path}:{lineno}", f"{','.join(row)!r}: both columns must be numbers"))
            continue
        if r < 0 or t < 0:
            issues.append(ArgumentIssue(f"{path}:{lineno}", f"({t:g}, {r:g}) must not be negative"))
        elif times and t <= times[-1]:
            issues.append(ArgumentIssue(f"{path}:{lineno}", f"seconds ({t:g}) must be > the previous row's "
                                                         f"({times[-1]:g})"))
        else:
            times.append(t)
            rates.append(r)
    if not times and not issues:
        issues.append(ArgumentIssue("--trace", f"{path} holds no rows of 'seconds,requests_per_second'"))
    if issues:
        raise ConfigError(issues)
    if times[0] != 0:
        times.insert(0, 0.0)
        rates.insert(0, rates[0])
    duration = int(duration_s or max(times[-1], 60))
    return Trace(p.stem, tuple(times), tuple(rates), duration)


GRID_TOLERANCE_S = 0.001
"""Prometheus' API writes timestamps in seconds with millisecond resolution."""
MIN_COUNTER_POINTS = 20


@dataclass(frozen=True)
class Replay:
    """A ``query_range`` export read as requests per second on its own grid (``start + k x step``)."""
    start: float
    step: float
    times: tuple
    """Seconds from ``start`` at which each rate begins."""
    rates: tuple
    per_pod: dict
    """Raw exports: the rates of each pod (``pod`` label, or ``ingress``), on the same times."""
    reading: str
    notes: tuple


def from_prometheus_json(path: str, duration_s: int | None = None) -> Trace:
    """A Prometheus HTTP API ``query_range`` response saved to a file (``curl .../api/v1/query_range?...``).
    How it is read: :func:`replay_export`."""
    import json

    p = Path(path)
    try:
        doc = json.loads(p.read_text())
    except OSError as exc:
        raise ConfigError([ArgumentIssue("--trace", f"cannot read {path}: {exc.strerror or exc}")]) from None
    except ValueError as exc:
        raise ConfigError([ArgumentIssue("--trace", f"{path} is not JSON: {exc}")]) from None
    replay = replay_export(doc, path)
    duration = int(duration_s or max(replay.times[-1] + (replay.step if replay.reading != "rate" else 0), 60))
    return Trace(p.stem, replay.times, replay.rates, duration, replay.notes)


def replay_export(doc, where: str = "--trace") -> Replay:
    """Requests per second from a ``query_range`` answer ``{"data": {"resultType": "matrix", "result": [{"metric":
    {...}, "values": [[ts, "value"], ...]}]}}``. Two shapes are read (docs/simulate.md, "Demand"):

    * **raw series** (every result keeps its ``__name__``): the counters and queue gauges
      ``catalogs.arrivals`` lists for one source. Arrivals over each step are the increase of every arrival
      counter, or the increase of the completion counters plus the change of the queue gauges, per series: a
      counter that drops was reset (a restarted server: its new value is all it counted since), a series that
      appears after the first step is new (a counter starts at 0, a new pod's queue arrived), a series that
      leaves subtracts nothing. Step ``k`` covers ``(start + (k-1) step, start + k step]``; a pod whose
      completions and queue fell together (requests that failed or left with the pod) counts 0, not less;
    * **a computed rate** (no ``__name__``: ``sum(rate(...))``, the form of earlier releases): each point is
      requests per second from its timestamp on. It is refused when it cannot be a request rate: a histogram's
      ``le`` or a summary's ``quantile`` label, a value over ``MAX_REQUESTS_PER_SECOND`` (the adapter's queue-time
      query reads microseconds), or a series that only grows over 20 points and more (a counter without rate()).

    Alignment: a ``query_range`` answer holds, for each series, one point per grid time ``start + k x step`` at
    which the series had a sample within the lookback (5 minutes) and was not marked stale (Prometheus
    ``promql/engine.go``: ``vectorSelectorSingle``; a stale marker ends a series at once, ``docs/querying/basics.md``
    "Staleness"). So a series missing at a grid time had no traffic to report there: its target went away or
    stopped exporting it; nothing is held over from an earlier point. A grid time with no series at all reads 0
    requests, and is counted in the notes (it is also what an outage of Prometheus itself looks like). ``NaN``
    and ``±Inf`` points (a division by zero in a computed query) are skipped and counted, not fatal."""
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, dict) or data.get("resultType") != "matrix" or not isinstance(data.get("result"), list):
        raise ConfigError([ArgumentIssue("--trace", f"{where} must be a Prometheus query_range response: "
                                                    "{\"data\": {\"resultType\": \"matrix\", \"result\": [...]}}")])
    issues, series, skipped, skipped_at = [], [], 0, set()
    for i, s in enumerate(data["result"]):
        metric = s.get("metric") if isinstance(s, dict) else None
        if not isinstance(metric, dict):
            issues.append(ArgumentIssue(f"{where}: result[{i}]", "must be {\"metric\": {...}, \"values\": [...]}"))
            continue
        points = []
        for j, point in enumerate(s.get("values") or []):
            try:
                ts, value = float(point[0]), float(point[1])
            except (TypeError, ValueError, IndexError):
                issues.append(ArgumentIssue(f"{where}: result[{i}].values[{j}]",
                                            f"{point!r} must be [unix seconds, \"number\"]"))
                continue
            if not math.isfinite(value):
                skipped += 1
                skipped_at.add(ts)  # still a grid time: it sets the step
                continue
            if value < 0:
                issues.append(ArgumentIssue(f"{where}: result[{i}].values[{j}]",
                                            f"{_show(metric)} reads {value:g}: requests, counters and queues are "
                                            "never negative (a delta() or deriv() export?)"))
                continue
            points.append((ts, value))
        series.append((i, metric, points))
    if issues:
        raise ConfigError(issues)
    stamps = sorted({ts for _, _, pts in series for ts, _ in pts})
    if not stamps:
        raise ConfigError([ArgumentIssue("--trace", f"{where} holds no samples (an empty result, or only NaN/Inf "
                                                    "points: check the query)")])
    start, step = stamps[0], _grid_step(sorted(set(stamps) | {ts for ts in skipped_at if ts > stamps[0]}))
    if step is None:
        raise ConfigError([ArgumentIssue("--trace", f"{where} holds one timestamp: a replay needs a range "
                                                    "(query_range with start < end)")])
    grid: list[tuple[int, dict, list]] = []
    for i, metric, pts in series:
        on_grid = {}
        for ts, value in pts:
            k = round((ts - start) / step)
            if abs(ts - (start + k * step)) > GRID_TOLERANCE_S:
                issues.append(ArgumentIssue(f"{where}: result[{i}]", f"timestamp {ts:.3f} is not on the grid "
                                            f"{start:.3f} + k x {step:g} s the other points sit on: a query_range "
                                            "answer has one (step); join exports of the same step only"))
                break
            on_grid[k] = value
        grid.append((i, metric, on_grid))
    if issues:
        raise ConfigError(issues)
    n = round((stamps[-1] - start) / step) + 1
    present = set().union(*(g.keys() for _, _, g in grid))
    notes = []
    if skipped:
        notes.append(f"{skipped} NaN/Inf point(s) skipped (read as absent)")
    named = [bool(m.get("__name__")) for _, m, _ in grid]
    if all(named):
        reading, times, rates, per_pod, more = _raw_arrivals(grid, n, step, where)
    elif not any(named):
        reading, times, rates, per_pod, more = _computed_rate(grid, n, step, start, where)
    else:
        raise ConfigError([ArgumentIssue("--trace", f"{where} mixes raw series (with __name__) and computed ones "
                                                    "(without): export one query of one shape")])
    notes += more
    absent = n - len(present)
    if absent:
        notes.append(f"{absent} of {n} steps ({step:g} s) had no series: replayed as no traffic (no sample within "
                     "the lookback, or marked stale: the targets were gone)")
    return Replay(start, step, times, rates, per_pod, reading, tuple(notes))


def _grid_step(stamps: list) -> float | None:
    gaps = [b - a for a, b in zip(stamps, stamps[1:]) if b - a > GRID_TOLERANCE_S]
    return round(min(gaps), 3) if gaps else None


def _show(metric: dict) -> str:
    name = metric.get("__name__", "")
    labels = ",".join(f'{k}="{v}"' for k, v in sorted(metric.items()) if k != "__name__")
    return f"{name}{{{labels}}}"


def _raw_arrivals(grid, n: int, step: float, where: str):
    issues, kinds = [], {}
    allowed = ", ".join(sorted(x for a in ARRIVALS.values() for x in a.names))
    for i, metric, _ in grid:
        kind = kind_of(metric["__name__"])
        if kind is None:
            issues.append(ArgumentIssue(f"{where}: result[{i}]", f"{_show(metric)} is not a series that counts "
                                        f"requests or holds them; allowed: {allowed} (catalogs/arrivals.py)"))
        kinds[i] = kind
    if issues:
        raise ConfigError(issues)
    sources = sorted({k[0] for k in kinds.values()})
    if len(sources) > 1:
        raise ConfigError([ArgumentIssue("--trace", f"{where} holds series of {' and '.join(sources)}: each counts "
                                                    "the same requests; export one source")])
    recipe = ARRIVALS[sources[0]]
    used = {k[1] for k in kinds.values()}
    if "completion" not in used and "arrival" not in used:
        raise ConfigError([ArgumentIssue("--trace", f"{where} holds only queue gauges of {recipe.source} "
                                                    f"({', '.join(recipe.queue_gauges)}): a queue does not count "
                                                    f"requests; export {recipe.export_query()}")])
    notes = []
    if recipe.queue_gauges and "queue" not in used:
        notes.append(f"no queue gauge ({', '.join(recipe.queue_gauges)}) in the export: arrivals read as "
                     "completions, capped by capacity while a queue builds")
    per_pod: dict[str, list] = {}
    for i, metric, points in grid:
        kind = kinds[i][1]
        pod = metric.get("pod") or metric.get("ingress") or ""
        counts = per_pod.setdefault(pod, [0.0] * n)
        previous = None
        for k in sorted(points):
            value = points[k]
            if previous is None:
                change = value if k > 0 else 0.0  # a series that appears later is new: it started from 0
            elif kind != "queue" and value < previous:
                change = value  # a counter reset: the server restarted and counted this much since
            else:
                change = value - previous
            previous = value
            counts[k] += change
    clamped = 0
    for counts in per_pod.values():
        for k in range(n):
            if counts[k] < 0:
                counts[k], clamped = 0.0, clamped + 1
    if clamped:
        notes.append(f"{clamped} pod-step(s) whose queue fell by more than they completed read 0 arrivals "
                     "(requests that failed, or left with their pod)")
    times = tuple(round((k - 1) * step, 3) for k in range(1, n))
    pods = {pod: tuple(c / step for c in counts[1:]) for pod, counts in sorted(per_pod.items())}
    rates = tuple(sum(p[k] for p in pods.values()) for k in range(n - 1))
    reading = "arrivals" if "arrival" in used else "completions + queue change"
    notes.insert(0, f"{recipe.source}: {reading} per {step:g} s step")
    return reading, times, rates, pods, notes


def _computed_rate(grid, n: int, step: float, start: float, where: str):
    issues = []
    for i, metric, points in grid:
        shape = {"le": "a histogram bucket", "quantile": "a summary quantile"}
        for label, what in shape.items():
            if label in metric:
                issues.append(ArgumentIssue(f"{where}: result[{i}]", f"{_show(metric)} is {what}, not a request "
                                            "rate; export the raw request series (docs/simulate.md, Demand)"))
        if issues:
            continue
        worst = max(points.items(), key=lambda kv: kv[1], default=None)
        if worst and worst[1] > MAX_REQUESTS_PER_SECOND:
            issues.append(ArgumentIssue(
                f"{where}: result[{i}]", f"{_show(metric)} reads {worst[1]:g} at {start + worst[0] * step:.3f}: "
                f"more than {MAX_REQUESTS_PER_SECOND:g} requests per second is not a request rate (a queue time, "
                "which the adapter's Triton query reads in microseconds? a counter exported without rate()?); "
                "export the raw request series (docs/simulate.md, Demand)"))
            continue
        values = [points[k] for k in sorted(points)]
        steps = list(zip(values, values[1:]))
        if (len(values) >= MIN_COUNTER_POINTS and all(b >= a for a, b in steps)
                and sum(b > a for a, b in steps) >= 0.9 * len(steps) and values[0] > 0
                and values[0] >= 50 * (values[-1] - values[0]) / len(steps)):
            issues.append(ArgumentIssue(
                f"{where}: result[{i}]", f"{_show(metric)} grows at every step from {values[0]:g} to "
                f"{values[-1]:g}, by far less than its level: a counter's total (exported without rate() or "
                "increase()), not requests per second; export the raw request series (docs/simulate.md, Demand)"))
    if issues:
        raise ConfigError(issues)
    totals = [0.0] * n
    for _, _, points in grid:
        for k, value in points.items():
            totals[k] += value
    times = tuple(round(k * step, 3) for k in range(n))
    notes = ["a computed request rate, replayed as it reads: a rate of completions is capped by capacity and a "
             "rate over a window is late by up to the window (docs/simulate.md, Demand)"]
    return "rate", times, tuple(totals), {}, notes
