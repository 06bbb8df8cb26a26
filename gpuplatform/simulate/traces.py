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


def from_prometheus_json(path: str, duration_s: int | None = None) -> Trace:
    """A Prometheus HTTP API ``query_range`` response saved to a file (``curl .../api/v1/query_range?...``):
    ``{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {...}, "values": [[ts,
    "value"], ...]}]}}``. The series are summed per timestamp (a query without ``sum`` returns one per pod or
    host); seconds count from the first timestamp; each point holds until the next, as a CSV row does."""
    import json

    p = Path(path)
    try:
        doc = json.loads(p.read_text())
    except OSError as exc:
        raise ConfigError([ArgumentIssue("--trace", f"cannot read {path}: {exc.strerror or exc}")]) from None
    except ValueError as exc:
        raise ConfigError([ArgumentIssue("--trace", f"{path} is not JSON: {exc}")]) from None
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, dict) or data.get("resultType") != "matrix" or not isinstance(data.get("result"), list):
        raise ConfigError([ArgumentIssue("--trace", f"{path} must be a Prometheus query_range response: "
                                                    "{\"data\": {\"resultType\": \"matrix\", \"result\": [...]}}")])
    totals: dict[float, float] = {}
    issues = []
    for i, series in enumerate(data["result"]):
        for j, point in enumerate(series.get("values") or []):
            try:
                ts, value = float(point[0]), float(point[1])
            except (TypeError, ValueError, IndexError):
                issues.append(ArgumentIssue(f"{path}: result[{i}].values[{j}]",
                                            f"{point!r} must be [unix seconds, \"number\"]"))
                continue
            if math.isnan(value) or value < 0:
                issues.append(ArgumentIssue(f"{path}: result[{i}].values[{j}]",
                                            f"{value:g} requests per second must be a number >= 0"))
                continue
            totals[ts] = totals.get(ts, 0.0) + value
    if not totals and not issues:
        issues.append(ArgumentIssue("--trace", f"{path} holds no samples (an empty result: check the query)"))
    if issues:
        raise ConfigError(issues)
    start = min(totals)
    times = tuple(ts - start for ts in sorted(totals))
    rates = tuple(totals[ts] for ts in sorted(totals))
    duration = int(duration_s or max(times[-1], 60))
    return Trace(p.stem, times, rates, duration)
