"""A small PromQL evaluator for the queries the adapter rules and KEDA triggers generate.

The simulator evaluates the *rendered* adapter query (``components.adapter_rules.render_for_pods``) thousands of
times per run, so it cannot start ``promtool`` for each evaluation. This module implements the subset of PromQL the
catalog's queries use, with the semantics of the Prometheus release the stack deploys (``version``: 3.14.0 for the
kube-prometheus-stack we pin, ``catalogs/versions.py``), and ``tests/promtool/gpuplatform/simulate/test_promql.py``
evaluates every catalog query on the same series with ``promtool test rules`` and this module and requires the same
values (with promtool's own release, 3.14.0's and 2.42's; constructed cases pin down where releases differ,
:class:`Semantics`), and ``test_promql_semantics_real_prometheus.py`` does the same through both releases' servers on
samples at any millisecond. An expression outside the subset is an error naming the construct, never a silent
approximation.

Semantics follow the Prometheus source (``promql/engine.go``, ``promql/functions.go``):

* instant selectors take the newest sample no older than the 5 m lookback; a stale marker (written when a series
  disappears from its target's scrape, or its target goes away) ends the series at once;
* range selectors take the samples in ``(t - range, t]`` from Prometheus 3 on, ``[t - range, t]`` before (the
  3.0 migration guide, "Range selectors and the lookback delta are now left-open"); the lookback is left-open
  the same way;
* ``rate``/``increase``/``delta`` extrapolate as ``extrapolatedRate`` does: to the window edges when the first or
  last sample is within 1.1 average sample intervals of them, else by half an interval; counters are corrected for
  resets and not extrapolated below zero (the start is cut at the counter's extrapolated zero point; from 2.51 on
  after the half-interval cap, before it earlier); fewer than two samples give no result (3.x's start-timestamp
  rate needs ``--enable-feature=use-start-timestamps``, which the stack does not set);
* ``sum``, ``avg``, ``sum_over_time`` and ``avg_over_time`` add with Kahan-Neumaier compensation where the release
  does (``Semantics``), and a regex matcher's ``.`` matches a newline from 3.0 on;
* functions and arithmetic drop the metric name; vector/vector arithmetic matches on all remaining labels
  (``on``/``ignoring`` narrow it); comparisons without ``bool`` filter; aggregations keep only ``by`` labels;
  ``vector(s)`` is one element without labels (what ``... or vector(0)`` falls back to);
* ``histogram_quantile(q, v)`` over classic buckets as ``bucketQuantile`` does (``promql/quantile.go``): buckets
  grouped by their labels without ``le`` and the name, counts made monotonic, no ``+Inf`` bucket or no
  observation give NaN, a rank in the ``+Inf`` bucket gives the largest finite bound, otherwise linear
  interpolation inside the bucket the rank falls in (from 0 for the first bucket when its bound is positive);
  buckets with the same bound are added (``coalesceBuckets``), and from 2.49 on a count within 1e-12 (relative) of
  the previous bucket's is taken as equal to it.
"""
from __future__ import annotations

import bisect
import math
import re
from dataclasses import dataclass, field

from gpuplatform.catalogs.versions import PrometheusVersion, prometheus_version

LOOKBACK_S = 300.0
"""Prometheus ``--query.lookback-delta`` default (unchanged in 3.x)."""
DEFAULT_VERSION: PrometheusVersion = prometheus_version("self-hosted")
"""The Prometheus release whose semantics ``evaluate`` follows unless told otherwise: the one the stack deploys."""
OLDEST_VERSION: PrometheusVersion = (2, 42, 0)
"""The oldest release modelled: the ``promtool`` the exactness tests run (Debian's)."""
STALE = math.nan
"""A stale marker: Prometheus writes a special NaN; the simulator writes no other NaN, so any NaN is one."""

NAME = "__name__"


class PromQLError(ValueError):
    pass


# ------------------------------------------------------------------------------------------------ storage
@dataclass
class Series:
    labels: dict
    times: list = field(default_factory=list)
    values: list = field(default_factory=list)

    def add(self, t: float, v: float) -> None:
        self.times.append(t)
        self.values.append(v)


class Storage:
    """Samples by metric name; samples are appended in time order, as a scrape loop writes them."""

    def __init__(self):
        self._by_name: dict[str, dict[tuple, Series]] = {}

    def add(self, name: str, labels: dict, t: float, v: float) -> None:
        key = tuple(sorted(labels.items()))
        bucket = self._by_name.setdefault(name, {})
        series = bucket.get(key)
        if series is None:
            series = bucket[key] = Series({NAME: name, **labels})
        series.add(t, v)

    def mark_stale(self, name: str, labels: dict, t: float) -> None:
        """The scrape loop's stale marker for a series that is gone (no-op for a series never written or
        already stale)."""
        series = self._by_name.get(name, {}).get(tuple(sorted(labels.items())))
        if series is not None and series.times and not math.isnan(series.values[-1]) and t > series.times[-1]:
            series.add(t, STALE)

    def select(self, name: str) -> list[Series]:
        return list(self._by_name.get(name, {}).values())

    def names(self) -> set[str]:
        return set(self._by_name)


# ------------------------------------------------------------------------------------------------ AST
@dataclass(frozen=True)
class Matcher:
    label: str
    op: str
    value: str

    def matches(self, labels: dict, dot_matches_newline: bool = True) -> bool:
        actual = labels.get(self.label, "")
        if self.op == "=":
            return actual == self.value
        if self.op == "!=":
            return actual != self.value
        hit = re.fullmatch(self.value, actual, re.DOTALL if dot_matches_newline else 0) is not None
        return hit if self.op == "=~" else not hit


@dataclass(frozen=True)
class Selector:
    name: str
    matchers: tuple
    range_s: float | None = None


@dataclass(frozen=True)
class Number:
    value: float


@dataclass(frozen=True)
class Call:
    func: str
    args: tuple


@dataclass(frozen=True)
class Aggregate:
    op: str
    by: tuple
    expr: object


@dataclass(frozen=True)
class Binary:
    op: str
    lhs: object
    rhs: object
    on: tuple | None = None
    ignoring: tuple | None = None
    bool_mod: bool = False


@dataclass(frozen=True)
class Neg:
    expr: object


AGGREGATIONS = ("sum", "avg", "min", "max", "count")
RANGE_FUNCTIONS = ("rate", "increase", "delta", "last_over_time", "avg_over_time", "max_over_time",
                   "min_over_time", "sum_over_time", "count_over_time")
OTHER_FUNCTIONS = ("clamp_min", "clamp_max", "abs", "round", "ceil", "floor", "vector", "histogram_quantile")
COMPARISONS = ("==", "!=", ">", "<", ">=", "<=")

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<number>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)
  | (?P<duration>\[(?:\d+[smhdwy])+\])
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<op>==|!=|>=|<=|=~|!~|[-+*/()<>{},=])
  | (?P<ident>[a-zA-Z_:][a-zA-Z0-9_:]*)
""", re.VERBOSE)

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


def _duration(text: str) -> float:
    return float(sum(int(n) * _UNITS[u] for n, u in re.findall(r"(\d+)([smhdwy])", text)))


def _tokens(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise PromQLError(f"cannot parse {text[pos:pos + 20]!r} in {text!r}")
        pos = m.end()
        if m.lastgroup != "ws":
            out.append((m.lastgroup, m.group()))
    return out


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = _tokens(text)
        self.i = 0

    def peek(self, k: int = 0):
        return self.toks[self.i + k] if self.i + k < len(self.toks) else (None, None)

    def take(self, value: str | None = None):
        tok = self.peek()
        if tok[0] is None or (value is not None and tok[1] != value):
            raise PromQLError(f"expected {value or 'a token'} at token {self.i} of {self.text!r}")
        self.i += 1
        return tok

    def parse(self):
        expr = self.union()
        if self.peek()[0] is not None:
            raise PromQLError(f"unexpected {self.peek()[1]!r} in {self.text!r}")
        return expr

    def _modifiers(self):
        on = ignoring = None
        bool_mod = False
        if self.peek()[1] == "bool":
            self.take()
            bool_mod = True
        if self.peek()[1] in ("on", "ignoring"):
            kind = self.take()[1]
            labels = self.label_list()
            on, ignoring = (labels, None) if kind == "on" else (None, labels)
        if self.peek()[1] in ("group_left", "group_right"):
            raise PromQLError(f"{self.peek()[1]} is not supported by the simulator's evaluator: {self.text!r}")
        return on, ignoring, bool_mod

    def union(self):
        lhs = self.intersection()
        while self.peek()[1] == "or":
            self.take()
            on, ignoring, _ = self._modifiers()
            lhs = Binary("or", lhs, self.intersection(), on, ignoring)
        return lhs

    def intersection(self):
        lhs = self.comparison()
        while self.peek()[1] in ("and", "unless"):
            op = self.take()[1]
            on, ignoring, _ = self._modifiers()
            lhs = Binary(op, lhs, self.comparison(), on, ignoring)
        return lhs

    def comparison(self):
        lhs = self.additive()
        while self.peek()[1] in COMPARISONS:
            op = self.take()[1]
            on, ignoring, bool_mod = self._modifiers()
            lhs = Binary(op, lhs, self.additive(), on, ignoring, bool_mod)
        return lhs

    def additive(self):
        lhs = self.multiplicative()
        while self.peek()[1] in ("+", "-"):
            op = self.take()[1]
            on, ignoring, _ = self._modifiers()
            lhs = Binary(op, lhs, self.multiplicative(), on, ignoring)
        return lhs

    def multiplicative(self):
        lhs = self.unary()
        while self.peek()[1] in ("*", "/"):
            op = self.take()[1]
            on, ignoring, _ = self._modifiers()
            lhs = Binary(op, lhs, self.unary(), on, ignoring)
        return lhs

    def unary(self):
        if self.peek()[1] == "-":
            self.take()
            return Neg(self.unary())
        if self.peek()[1] == "+":
            self.take()
        return self.primary()

    def label_list(self) -> tuple:
        self.take("(")
        labels = []
        while self.peek()[1] != ")":
            labels.append(self.take()[1])
            if self.peek()[1] == ",":
                self.take()
        self.take(")")
        return tuple(labels)

    def primary(self):
        kind, value = self.peek()
        if kind == "number":
            self.take()
            return Number(float(value))
        if value == "(":
            self.take()
            expr = self.union()
            self.take(")")
            return expr
        if kind != "ident":
            raise PromQLError(f"unexpected {value!r} in {self.text!r}")
        if value in AGGREGATIONS:
            self.take()
            by = ()
            if self.peek()[1] == "by":
                self.take()
                by = self.label_list()
            elif self.peek()[1] == "without":
                raise PromQLError(f"'without' is not supported by the simulator's evaluator: {self.text!r}")
            self.take("(")
            expr = self.union()
            self.take(")")
            if self.peek()[1] == "by":
                self.take()
                by = self.label_list()
            return Aggregate(value, by, expr)
        if self.peek(1)[1] == "(":
            if value not in RANGE_FUNCTIONS + OTHER_FUNCTIONS:
                raise PromQLError(f"function {value}() is not supported by the simulator's evaluator: {self.text!r}")
            self.take()
            self.take("(")
            args = [self.union()]
            while self.peek()[1] == ",":
                self.take()
                args.append(self.union())
            self.take(")")
            return Call(value, tuple(args))
        return self.selector()

    def selector(self):
        name = self.take()[1]
        matchers = []
        if self.peek()[1] == "{":
            self.take()
            while self.peek()[1] != "}":
                label = self.take()[1]
                op = self.take()[1]
                if op not in ("=", "!=", "=~", "!~"):
                    raise PromQLError(f"bad matcher operator {op!r} in {self.text!r}")
                raw = self.take()[1]
                matchers.append(Matcher(label, op, _unquote(raw)))
                if self.peek()[1] == ",":
                    self.take()
            self.take("}")
        rng = None
        if self.peek()[0] == "duration":
            rng = _duration(self.take()[1])
        if self.peek()[1] == "offset":
            raise PromQLError(f"'offset' is not supported by the simulator's evaluator: {self.text!r}")
        return Selector(name, tuple(matchers), rng)


def _unquote(raw: str) -> str:
    body = raw[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


_PARSED: dict[str, object] = {}


def parse(text: str):
    tree = _PARSED.get(text)
    if tree is None:
        tree = _PARSED[text] = _Parser(text).parse()
    return tree


def metric_names(text: str) -> set[str]:
    """Names of the series an expression reads."""
    out: set[str] = set()

    def walk(node):
        if isinstance(node, Selector):
            out.add(node.name)
        elif isinstance(node, Call):
            for a in node.args:
                walk(a)
        elif isinstance(node, Aggregate):
            walk(node.expr)
        elif isinstance(node, Binary):
            walk(node.lhs)
            walk(node.rhs)
        elif isinstance(node, Neg):
            walk(node.expr)

    walk(parse(text))
    return out


# ------------------------------------------------------------------------------------------------ evaluation
Vector = list  # of (labels: dict, value: float)


@dataclass(frozen=True)
class Semantics:
    """Where the Prometheus releases the evaluator models (2.42 to 3.x) compute the catalog's queries differently.
    Each flag names the change in ``prometheus/prometheus`` that introduced it."""

    left_open: bool
    """3.0.0 (PR #13904; the 3.0 migration guide, "Lookback and range selectors are left open and right closed"):
    a sample exactly at a range window's (or the lookback's) start is outside it. At scrapes aligned with the
    evaluation time a ``[1m]`` window of 15 s scrapes holds 4 samples, not 5."""
    start_capped_before_zero_point: bool
    """2.51.0 (PR #13725, commit 7f912db "promql: Fix limiting of extrapolation to negative values"): in
    ``extrapolatedRate`` a first sample more than 1.1 average intervals after the window start extrapolates by half
    an interval, and only then is the start cut at the counter's zero point. Before, the zero-point cut came first
    and the 1.1-interval test was applied to its result, so a zero point 0.5-1.1 intervals before the first sample
    extrapolated further than half an interval."""
    ignores_small_bucket_deltas: bool
    """2.49.0 (PR #13153, ``ensureMonotonicAndIgnoreSmallDeltas`` in ``promql/quantile.go``): histogram_quantile
    takes a bucket count within 1e-12 (relative) of the previous bucket's as equal to it, so floating-point noise
    in the bucket rates does not move the quantile into a bucket with no observations."""
    regex_dot_matches_newline: bool
    """3.0.0 (PR #14505; the 3.0 migration guide, "Regular expressions match newlines"): ``.`` in a regex matcher
    matches ``\\n``, so ``pod=~"x.*"`` selects a label value holding a newline; 2.x's did not."""
    compensated_sum: bool
    """2.54.0 (PRs #14074, #14362, ``kahanSumInc`` in the ``sum`` aggregation of ``promql/engine.go``): ``sum``
    adds with Kahan-Neumaier compensation, so a small value between two that cancel survives (``1e16 + 1 - 1e16``
    is 1, not 0). ``sum_over_time`` already did in every modelled release (2.32, PR #9588)."""
    compensated_mean: bool
    """2.55.0 (PR #14413): ``avg`` and ``avg_over_time`` add with compensation and divide once, falling back to an
    incremental mean only when the sum would overflow (as 3.14's ``promql/engine.go`` ``case parser.AVG`` and
    ``functions.go`` ``funcAvgOverTime`` do; 2.55-3.4 divided the compensated sum, 3.5 its parts, PRs #16569 and
    #16773, a difference in the last bit). Before, ``avg`` was a plain incremental mean and ``avg_over_time`` an
    incremental mean with compensation (2.42 ``engine.go``, ``functions.go``)."""

    @classmethod
    def of(cls, version: PrometheusVersion) -> "Semantics":
        if len(version) != 3 or tuple(version) < OLDEST_VERSION or version[0] > 3:
            shown = ".".join(str(part) for part in version)
            raise PromQLError(f"Prometheus {shown} is not modelled: releases 2.42.0 to 3.x are")
        return cls(left_open=version >= (3, 0, 0), start_capped_before_zero_point=version >= (2, 51, 0),
                   ignores_small_bucket_deltas=version >= (2, 49, 0), regex_dot_matches_newline=version >= (3, 0, 0),
                   compensated_sum=version >= (2, 54, 0), compensated_mean=version >= (2, 55, 0))


def evaluate(text: str, storage: Storage, t: float, version: PrometheusVersion = DEFAULT_VERSION) -> Vector | float:
    """Instant query at time ``t`` (seconds) with the semantics of Prometheus ``version`` (major, minor, patch):
    a list of (labels, value), or a float for a scalar expression."""
    return _eval(parse(text), _Context(storage, Semantics.of(tuple(version))), t)


@dataclass(frozen=True)
class _Context:
    storage: Storage
    semantics: Semantics

    @property
    def left_open(self) -> bool:
        return self.semantics.left_open


def _eval(node, storage: _Context, t: float):
    if isinstance(node, Number):
        return node.value
    if isinstance(node, Neg):
        inner = _eval(node.expr, storage, t)
        return -inner if isinstance(inner, float) else [(_drop_name(l), -v) for l, v in inner]
    if isinstance(node, Selector):
        if node.range_s is not None:
            raise PromQLError("a range vector cannot be the result of an expression")
        return _instant(node, storage, t)
    if isinstance(node, Call):
        return _call(node, storage, t)
    if isinstance(node, Aggregate):
        return _aggregate(node, _eval(node.expr, storage, t), storage.semantics)
    if isinstance(node, Binary):
        return _binary(node, _eval(node.lhs, storage, t), _eval(node.rhs, storage, t))
    raise PromQLError(f"cannot evaluate {node!r}")


def _selected(node: Selector, ctx: _Context) -> list[Series]:
    dotall = ctx.semantics.regex_dot_matches_newline
    return [s for s in ctx.storage.select(node.name) if all(m.matches(s.labels, dotall) for m in node.matchers)]


def _instant(node: Selector, ctx: _Context, t: float) -> Vector:
    out = []
    oldest = t - LOOKBACK_S
    for s in _selected(node, ctx):
        i = bisect.bisect_right(s.times, t) - 1
        if i < 0 or math.isnan(s.values[i]):
            continue
        if s.times[i] > oldest or (s.times[i] == oldest and not ctx.left_open):
            out.append((dict(s.labels), s.values[i]))
    return out


def _window(s: Series, start: float, end: float, left_open: bool) -> tuple[list, list]:
    lo = (bisect.bisect_right if left_open else bisect.bisect_left)(s.times, start)
    hi = bisect.bisect_right(s.times, end)
    return s.times[lo:hi], s.values[lo:hi]


def _extrapolated(times, values, start, end, range_s, is_counter, is_rate, semantics: Semantics):
    """``extrapolatedRate`` of ``promql/functions.go`` for float samples."""
    if len(times) < 2:
        return None
    result = values[-1] - values[0]
    if is_counter:
        prev = values[0]
        for v in values[1:]:
            if v < prev:
                result += prev
            prev = v
    to_start = times[0] - start
    to_end = end - times[-1]
    sampled = times[-1] - times[0]
    average = sampled / (len(times) - 1)
    threshold = average * 1.1
    zero_point = is_counter and result > 0 and values[0] >= 0
    if semantics.start_capped_before_zero_point:
        if to_start >= threshold:
            to_start = average / 2
        if zero_point:
            to_start = min(to_start, sampled * (values[0] / result))
    else:
        if zero_point:
            to_start = min(to_start, sampled * (values[0] / result))
        if to_start >= threshold:
            to_start = average / 2
    if to_end >= threshold:
        to_end = average / 2
    result = result * ((sampled + to_start + to_end) / sampled)
    return result / range_s if is_rate else result


def _call(node: Call, storage: _Context, t: float):
    f = node.func
    if f in RANGE_FUNCTIONS:
        (arg,) = node.args
        if not isinstance(arg, Selector) or arg.range_s is None:
            raise PromQLError(f"{f}() needs a range vector selector")
        start = t - arg.range_s
        out = []
        for s in _selected(arg, storage):
            times, values = _window(s, start, t, storage.left_open)
            pairs = [(ts, v) for ts, v in zip(times, values) if not math.isnan(v)]
            times, values = [p[0] for p in pairs], [p[1] for p in pairs]
            if not times:
                continue
            if f in ("rate", "increase", "delta"):
                v = _extrapolated(times, values, start, t, arg.range_s, f != "delta", f == "rate",
                                  storage.semantics)
            elif f == "last_over_time":
                v = values[-1]
            elif f == "avg_over_time":
                v = _mean(values) if storage.semantics.compensated_mean else _incremental_mean(values, True)
            elif f == "max_over_time":
                v = max(values)
            elif f == "min_over_time":
                v = min(values)
            elif f == "sum_over_time":
                v = _compensated_sum(values)
            else:
                v = float(len(values))
            if v is not None:
                labels = dict(s.labels) if f == "last_over_time" else _drop_name(s.labels)
                out.append((labels, v))
        return out
    if f == "vector":
        (arg,) = node.args
        value = _eval(arg, storage, t)
        if not isinstance(value, float):
            raise PromQLError("vector() needs a scalar")
        return [({}, value)]
    if f == "histogram_quantile":
        q, vec = _eval(node.args[0], storage, t), _eval(node.args[1], storage, t)
        if not isinstance(q, float) or isinstance(vec, float):
            raise PromQLError("histogram_quantile() needs a scalar and an instant vector")
        return _histogram_quantile(q, vec, storage.semantics.ignores_small_bucket_deltas)
    vec = _eval(node.args[0], storage, t)
    if isinstance(vec, float):
        raise PromQLError(f"{f}() needs an instant vector")
    if f in ("clamp_min", "clamp_max"):
        bound = _eval(node.args[1], storage, t)
        pick = max if f == "clamp_min" else min
        return [(_drop_name(l), pick(v, bound)) for l, v in vec]
    fn = {"abs": abs, "ceil": math.ceil, "floor": math.floor,
          "round": lambda v: math.floor(v + 0.5)}[f]
    return [(_drop_name(l), float(fn(v))) for l, v in vec]


def _histogram_quantile(q: float, vec, ignore_small_deltas: bool) -> list:
    groups: dict[tuple, list[tuple[float, float]]] = {}
    for labels, v in vec:
        if "le" not in labels:
            continue  # Prometheus ignores a series without le for classic histograms
        key = tuple(sorted((k, val) for k, val in labels.items() if k not in (NAME, "le")))
        groups.setdefault(key, []).append((float(labels["le"]), v))
    return [(dict(key), _bucket_quantile(q, buckets, ignore_small_deltas)) for key, buckets in groups.items()]


SMALL_DELTA_TOLERANCE = 1e-12
"""``smallDeltaTolerance`` of ``promql/quantile.go`` (2.49+)."""
_MIN_NORMAL = 2.2250738585072014e-308


def _almost_equal(a: float, b: float) -> bool:
    """``util/almost.Equal`` with the tolerance histogram_quantile uses."""
    if a == b:
        return True
    both, diff = abs(a) + abs(b), abs(a - b)
    if a == 0 or b == 0 or both < _MIN_NORMAL:
        return diff < SMALL_DELTA_TOLERANCE * _MIN_NORMAL
    return diff / min(both, 1.7976931348623157e308) < SMALL_DELTA_TOLERANCE


def _monotonic(counts: list[float], ignore_small_deltas: bool) -> list[float]:
    """``ensureMonotonic`` (a count below an earlier bucket's is raised to it), and from 2.49
    ``ensureMonotonicAndIgnoreSmallDeltas`` (a count almost equal to the previous one is set to it)."""
    out, prev = [counts[0]], counts[0]
    for c in counts[1:]:
        if c == prev or (ignore_small_deltas and _almost_equal(prev, c)) or c < prev:
            out.append(prev)
        else:
            out.append(c)
            prev = c
    return out


def _bucket_quantile(q: float, buckets: list[tuple[float, float]], ignore_small_deltas: bool) -> float:
    if math.isnan(q):
        return math.nan
    if q < 0:
        return -math.inf
    if q > 1:
        return math.inf
    buckets = sorted(buckets, key=lambda b: b[0])
    if not math.isinf(buckets[-1][0]):
        return math.nan
    coalesced: list[list[float]] = []
    for bound, c in buckets:  # "1" and "1.0" are one bucket (coalesceBuckets)
        if coalesced and coalesced[-1][0] == bound:
            coalesced[-1][1] += c
        else:
            coalesced.append([bound, c])
    buckets = [(bound, c) for bound, c in coalesced]
    if len(buckets) < 2:
        return math.nan
    counts = _monotonic([c for _, c in buckets], ignore_small_deltas)
    observations = counts[-1]
    if observations == 0 or math.isnan(observations):
        return math.nan
    rank = q * observations
    b = next(i for i, c in enumerate(counts) if c >= rank)
    if b == len(buckets) - 1:
        return buckets[-2][0]
    if b == 0 and buckets[0][0] <= 0:
        return buckets[0][0]
    start, end, count = 0.0, buckets[b][0], counts[b]
    if b > 0:
        start = buckets[b - 1][0]
        count -= counts[b - 1]
        rank -= counts[b - 1]
    return start + (end - start) * (rank / count)


def _drop_name(labels: dict) -> dict:
    return {k: v for k, v in labels.items() if k != NAME}


def _compensated_sum(values) -> float:
    """Kahan-Neumaier summation as Prometheus does it (3.14 ``util/kahansum`` ``Inc``, 2.42 ``kahanSumInc``): the
    running sum plus the compensation term, the compensation dropped once the sum is infinite."""
    total, c = 0.0, 0.0
    for v in values:
        t = total + v
        if math.isinf(t):
            c = 0.0
        elif abs(total) >= abs(v):
            c += (total - t) + v
        else:
            c += (v - t) + total
        total = t
    return total if math.isinf(total) else total + c


def _mean(values) -> float:
    """3.14's mean of ``avg`` and ``avg_over_time``: the compensated sum divided by the count (its two parts
    divided apart), or, once that sum would overflow, an incremental mean with compensation from there on."""
    total, c, mean, incremental = values[0], 0.0, 0.0, False
    for i, v in enumerate(values[1:], start=2):
        if not incremental:
            t = total + v
            if not math.isinf(t):
                if abs(total) >= abs(v):
                    c += (total - t) + v
                else:
                    c += (v - t) + total
                total = t
                continue
            incremental, mean, c = True, total / (i - 1), c / (i - 1)
        q = (i - 1) / i
        mean, c = _neumaier_step(v / i, q * mean, q * c)
    if incremental:
        return mean + c
    return total / len(values) + c / len(values)


def _neumaier_step(inc: float, total: float, c: float) -> tuple[float, float]:
    t = total + inc
    if math.isinf(t):
        return t, 0.0
    if abs(total) >= abs(inc):
        return t, c + ((total - t) + inc)
    return t, c + ((inc - t) + total)


def _incremental_mean(values, compensated: bool) -> float:
    """2.42's means: ``avg`` a plain incremental mean (``mean += v/n - mean/n``), ``avg_over_time`` the same step
    added with compensation; an infinite mean is kept (the releases' guards against ``Inf - Inf``)."""
    mean, c = 0.0, 0.0
    for n, v in enumerate(values, start=1):
        if math.isinf(mean) and ((math.isinf(v) and (mean > 0) == (v > 0)) or not (math.isinf(v) or math.isnan(v))):
            continue
        if compensated:
            mean, c = _neumaier_step(v / n - mean / n, mean, c)
        else:
            mean += v / n - mean / n
    return mean if math.isinf(mean) else mean + c


def _aggregate(node: Aggregate, vec, semantics: Semantics):
    if isinstance(vec, float):
        raise PromQLError(f"{node.op}() needs an instant vector")
    groups: dict[tuple, list[float]] = {}
    if not semantics.compensated_sum:
        # the engine adds a group's series in the order they were selected, which is the order of their label
        # sets; only an uncompensated sum (2.x before 2.54) can tell
        vec = sorted(vec, key=lambda item: sorted(item[0].items()))
    for labels, v in vec:
        key = tuple((k, labels.get(k, "")) for k in node.by)
        groups.setdefault(key, []).append(v)
    out = []
    for key, values in groups.items():
        if node.op == "sum":
            v = _compensated_sum(values) if semantics.compensated_sum else sum(values)
        elif node.op == "avg":
            v = _mean(values) if semantics.compensated_mean else _incremental_mean(values, False)
        elif node.op == "min":
            v = min(values)
        elif node.op == "max":
            v = max(values)
        else:
            v = float(len(values))
        out.append(({k: val for k, val in key if val != ""}, v))
    return out


def _arith(op: str, a: float, b: float) -> float:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if b == 0:
        return math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a)
    return a / b


def _compare(op: str, a: float, b: float) -> bool:
    return {"==": a == b, "!=": a != b, ">": a > b, "<": a < b, ">=": a >= b, "<=": a <= b}[op]


def _signature(labels: dict, on, ignoring) -> tuple:
    if on is not None:
        return tuple((k, labels.get(k, "")) for k in sorted(on))
    skip = set(ignoring or ()) | {NAME}
    return tuple(sorted((k, v) for k, v in labels.items() if k not in skip))


SET_OPERATORS = ("or", "and", "unless")


def _set_operation(node: Binary, lhs, rhs):
    """``or``/``and``/``unless`` (VectorOr, VectorAnd, VectorUnless): match on all labels but the name, or on
    the ``on()`` labels, and keep the left side's elements (plus, for ``or``, unmatched right-hand ones)."""
    if isinstance(lhs, float) or isinstance(rhs, float):
        raise PromQLError(f"'{node.op}' needs instant vectors on both sides")
    right = {_signature(l, node.on, node.ignoring) for l, _ in rhs}
    if node.op == "and":
        return [(l, v) for l, v in lhs if _signature(l, node.on, node.ignoring) in right]
    if node.op == "unless":
        return [(l, v) for l, v in lhs if _signature(l, node.on, node.ignoring) not in right]
    left = {_signature(l, node.on, node.ignoring) for l, _ in lhs}
    return list(lhs) + [(l, v) for l, v in rhs if _signature(l, node.on, node.ignoring) not in left]


def _binary(node: Binary, lhs, rhs):
    op = node.op
    if op in SET_OPERATORS:
        return _set_operation(node, lhs, rhs)
    comparison = op in COMPARISONS
    if isinstance(lhs, float) and isinstance(rhs, float):
        if comparison:
            if not node.bool_mod:
                raise PromQLError("comparisons between scalars must use bool")
            return float(_compare(op, lhs, rhs))
        return _arith(op, lhs, rhs)
    if isinstance(lhs, float) or isinstance(rhs, float):
        out = []
        for labels, v in (rhs if isinstance(lhs, float) else lhs):
            a, b = (lhs, v) if isinstance(lhs, float) else (v, rhs)
            if comparison:
                hit = _compare(op, a, b)
                if node.bool_mod:
                    out.append((_drop_name(labels), float(hit)))
                elif hit:
                    out.append((labels, v))
            else:
                out.append((_drop_name(labels), _arith(op, a, b)))
        return out
    right: dict[tuple, tuple] = {}
    for labels, v in rhs:
        sig = _signature(labels, node.on, node.ignoring)
        if sig in right:
            raise PromQLError("many-to-many matching: the right-hand side has duplicate label sets")
        right[sig] = (labels, v)
    out, seen = [], set()
    for labels, v in lhs:
        sig = _signature(labels, node.on, node.ignoring)
        if sig not in right:
            continue
        if sig in seen:
            raise PromQLError("many-to-one matching needs group_left, which the evaluator does not support")
        seen.add(sig)
        rv = right[sig][1]
        # resultMetric(): arithmetic and bool comparisons drop the name; one-to-one matching keeps only the
        # on() labels, or deletes the ignoring() ones
        result_labels = dict(labels) if comparison and not node.bool_mod else _drop_name(labels)
        if node.on is not None:
            result_labels = {k: val for k, val in result_labels.items() if k in node.on}
        elif node.ignoring:
            result_labels = {k: val for k, val in result_labels.items() if k not in node.ignoring}
        if comparison:
            hit = _compare(op, v, rv)
            if node.bool_mod:
                out.append((result_labels, float(hit)))
            elif hit:
                out.append((result_labels, v))
        else:
            out.append((result_labels, _arith(op, v, rv)))
    return out
