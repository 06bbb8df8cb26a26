"""The service model: how a ready replica serves requests, and the metric values that follow from it.

Every replica is a queue with ``concurrency`` slots of service rate ``1 / serviceTime`` each (M/M/c; M/M/1 with one
slot). Its state is the mean number of requests in it, ``x``, moved by the pointwise stationary fluid flow
approximation (PSFFA; Wang, Chen, Ou and Sanchez, "Pointwise stationary fluid flow approximation of time-varying
queues", 1996):

    dx/dt = lambda(t) - mu * rho(x)

``rho(x)`` is the utilization at which ``x`` requests are in the system in steady state (M/M/1: ``x / (1 + x)``;
M/M/c: ``x = Lq + c rho`` with Erlang C's ``Lq = C(c, c rho) rho / (1 - rho)``, Kleinrock, "Queueing Systems" vol. 1,
sec. 3.5). The model has the steady-state figures as its fixed point and builds up or drains the queue over time:
load above capacity grows it without bound (no cap), and the rate a replica serves is at most ``mu``. From ``x``
follow the utilization ``rho``, the requests waiting ``Lq(x)`` and, by Little's law on the served rate, the wait of a
request joining now ``Wq = Lq / (mu rho)`` (M/M/1: ``x / mu``). The step is implicit Euler (stable for any ``mu``,
exact fixed point).

What a completion reports (:class:`Queue`): first in, first out. The requests waiting are always the latest
arrivals, so the waiting line advances by ``arrivals - (Lq_after - Lq_before)`` per second; the arrivals of each
second form a cohort on a cumulative position axis, and a position's queue time is the second it leaves the line
minus the second it joined (both interpolated uniformly within their second). Below saturation that reproduces
the stationary wait exactly (the line holds ``Lq`` requests that arrive at ``lambda``: each waits ``Lq / lambda``,
Little's law); in overload and while draining it is the wait the request really had, the backlog ahead of it over
the rate it was served at, not the queue of the second it completes in.
"""
from __future__ import annotations

import bisect
import dataclasses
import functools
import math
from collections import deque
from dataclasses import dataclass
from typing import Optional

from gpuplatform.catalogs.metrics import LATENCY_OBSERVES, METRICS, histogram_p90
from gpuplatform.catalogs.server_cli import BATCH_METRICS

TIME_UNITS = {"us": 1e6, "ms": 1e3, "s": 1.0}
FULL_SCALE = {"percent": 100.0, "ratio": 1.0}


RUNNING = frozenset(BATCH_METRICS)
"""Gauges of the running batch: the requests a replica serves at once (vllm:num_requests_running,
sglang:num_running_reqs, tgi_batch_current_size; see catalogs/metrics.py), ``concurrency x rho`` here."""
LATENCY = LATENCY_OBSERVES
"""Latency histograms, read as their p90, and what one request observes into them (catalogs/metrics.py): here a
``request`` observes its queue wait plus ``serviceTimeMs``, a ``first_token`` its queue wait plus
``serviceModel.firstTokenMs``."""
NOT_MODELLED = {
    "vllm_itl_p90_ms": "inter-token latency is the decode step time of the running batch, which the service model "
                       "(one service time per request, no tokens) does not have",
    "sglang_itl_p90_ms": "inter-token latency is the decode step time of the running batch, which the service model "
                         "(one service time per request, no tokens) does not have",
    "tgi_time_per_token_p90_ms": "time per token is a request's inference time over its generated tokens, and the "
                                 "service model has no tokens",
    "vllm_kv_cache_usage": "KV-cache usage follows the tokens in flight (prompt and output lengths), which the "
                           "service model does not have",
    "sglang_token_usage": "KV-cache usage follows the tokens in flight (prompt and output lengths), which the "
                          "service model does not have",
}
"""Catalog metrics the simulator refuses, and why (``simulate`` says so instead of guessing a model)."""


def not_modelled(metric: str, first_token_ms) -> str | None:
    """Why the simulator cannot produce ``metric`` for a workload (None when it can)."""
    if metric in NOT_MODELLED:
        return NOT_MODELLED[metric]
    if LATENCY.get(metric) == "first_token" and first_token_ms is None:
        return ("time to first token is queueing plus prefill, and serviceModel.firstTokenMs (the prefill time) is "
                "not set")
    return None


def metric_kind(name: str) -> str:
    """How a catalog metric follows load: ``queue_time``, ``queue_length``, ``running`` (the running batch),
    ``latency`` (a request's time in the server, read as a histogram's p90) or ``utilization`` (memory too)."""
    m = METRICS[name]
    if name in RUNNING:
        return "running"
    if name in LATENCY:
        return "latency"
    if m.unit in TIME_UNITS:
        return "queue_time"
    if m.unit == "requests":
        return "queue_length"
    return "utilization"


bucket_p90 = histogram_p90


def erlang_c(c: int, a: float) -> float:
    """Probability that an arrival waits in an M/M/c queue with offered load ``a`` (< c) Erlangs, through the
    Erlang B recurrence ``B(k) = a B(k-1) / (k + a B(k-1))`` (numerically stable for large c)."""
    b = 1.0
    for k in range(1, c + 1):
        b = a * b / (k + a * b)
    return c * b / (c - a * (1 - b))


class Slots:
    """One replica's occupancy as an M/M/c server: requests in it, ``x``, against its utilization ``rho``."""

    TABLE_POINTS = 4000

    def __init__(self, c: int):
        self.c = c
        self._g: dict = {}
        if c > 1:
            # denser toward rho = 1, where x grows without bound
            self.rhos = [1 - 10 ** (-6 * i / self.TABLE_POINTS) for i in range(self.TABLE_POINTS + 1)]
            self.xs = [self.lq_at_rho(r) + c * r for r in self.rhos]

    def lq_at_rho(self, rho: float) -> float:
        if rho <= 0:
            return 0.0
        if self.c == 1:
            return rho * rho / (1 - rho)
        return erlang_c(self.c, self.c * rho) * rho / (1 - rho)

    def x_at_rho(self, rho: float) -> float:
        return math.inf if rho >= 1 else self.lq_at_rho(rho) + self.c * rho

    def rho(self, x: float) -> float:
        if x <= 0:
            return 0.0
        if self.c == 1:
            return x / (1 + x)
        if x >= self.xs[-1]:
            return 1 - 1 / (x - self.c + 1)  # far in saturation Lq ~ rho / (1 - rho) and rho -> 1
        i = bisect.bisect_right(self.xs, x)
        x0, x1, r0, r1 = self.xs[i - 1], self.xs[i], self.rhos[i - 1], self.rhos[i]
        return r0 + (r1 - r0) * (x - x0) / (x1 - x0)

    def step(self, a: float, mu_dt: float) -> float:
        """One implicit Euler step of ``dx/dt = lambda - mu rho(x)``: the ``y`` with ``y + mu dt rho(y) = a``, where
        ``a`` is the requests held before plus those that arrived over the step."""
        if a <= 0:
            return 0.0
        if self.c == 1:
            b = 1 + mu_dt - a
            return (-b + math.sqrt(b * b + 4 * a)) / 2
        g = self._g.get(mu_dt)
        if g is None:
            # y + mu dt rho(y) at the table's points: increasing, and linear between them as rho is
            g = self._g[mu_dt] = [x + mu_dt * r for x, r in zip(self.xs, self.rhos)]
        if a >= g[-1]:
            # far in saturation rho = 1 - 1 / (y - c + 1): a quadratic in z = y - c + 1
            b = self.c - 1 + mu_dt - a
            return (-b + math.sqrt(b * b + 4 * mu_dt)) / 2 + self.c - 1
        i = bisect.bisect_right(g, a)
        x0, x1, r0, r1 = self.xs[i - 1], self.xs[i], self.rhos[i - 1], self.rhos[i]
        k = (r1 - r0) / (x1 - x0)
        return (a - mu_dt * (r0 - k * x0)) / (1 + mu_dt * k)

    def lq(self, x: float) -> float:
        """Requests waiting for a slot."""
        if self.c == 1:
            return x * x / (1 + x)
        return max(x - self.c * self.rho(x), 0.0)


@functools.lru_cache(maxsize=64)
def slots(c: int) -> Slots:
    return Slots(c)


@dataclass(frozen=True)
class ServicePlan:
    """The workload's service model resolved against its first metric."""
    kind: str
    rps_at_target: float
    """Per ready replica, the steady load that puts the metric at its target."""
    capacity_rps: float
    """Per ready replica, the service rate ``mu``: the most it serves."""
    service_time_s: float
    model_load_s: int
    image_pull_s: int
    full_scale: float = 1.0
    """A utilization-like metric's value at saturation (unused for queue metrics)."""
    time_unit: float = 1.0
    """Units of the queue-time metric per second (1e6 for microseconds)."""
    concurrency: int = 1
    """Requests a replica serves at once (``serviceModel.concurrency``)."""
    startup_basis: str = ""
    """Where ``model_load_s`` and ``image_pull_s`` come from (printed by the report)."""
    cache_fill_load_s: Optional[int] = None
    """With the weights on a Fluid dataset cache: the load of the replica that finds the cache empty and fills it
    from OSS; ``model_load_s`` is then the load from the filled cache. None for every other source."""
    compile_cold_extra_s: int = 0
    """With vLLM's compile cache on a shared volume: the seconds a replica that finds it empty adds to
    ``model_load_s`` (it compiles the model instead of loading the compiled graphs). 0 without such a cache."""
    buckets: tuple = ()
    """A latency histogram's bucket bounds, seconds (``latency`` kind)."""
    latency: str = ""
    """What the first metric's latency histogram observes (a value of :data:`LATENCY`; ``latency`` kind)."""
    first_token_s: float = 0.0
    """Admission to first token (``serviceModel.firstTokenMs``), seconds; 0 when not set."""

    @property
    def slots(self) -> Slots:
        return slots(self.concurrency)

    def rho(self, x: float) -> float:
        return self.slots.rho(x)

    def waiting(self, x: float) -> float:
        """Requests waiting for a slot in a replica holding ``x``."""
        return self.slots.lq(x)

    def running(self, x: float) -> float:
        """Requests being served (the running batch) in a replica holding ``x``."""
        return self.concurrency * self.rho(x)

    def wait_s(self, x: float) -> float:
        """Queue time of a request joining a replica that holds ``x`` (Little's law on the served rate)."""
        if self.concurrency == 1:
            return x / self.capacity_rps
        served = self.capacity_rps * self.rho(x)
        return self.waiting(x) / served if served > 0 else 0.0

    def latency_s(self, x: float, which: str = "") -> float:
        """What a request joining a replica that holds ``x`` observes into a latency histogram: its queue wait plus
        its service (``request``) or its prefill (``first_token``); ``which`` defaults to the first metric's."""
        base = self.first_token_s if (which or self.latency) == "first_token" else self.service_time_s
        return self.wait_s(x) + base

    def x_at_level(self, level: float) -> float:
        """Requests in a replica at which the metric reads ``level`` (inf when no finite load reaches above it)."""
        if self.kind == "utilization":
            return self.slots.x_at_rho(level / self.full_scale)
        if self.kind == "running":
            return self.slots.x_at_rho(level / self.concurrency)
        if self.kind == "latency" and level >= self.buckets[-1] * self.time_unit:
            return math.inf  # the histogram reads no more than its last finite bound
        if self.concurrency == 1 and self.kind != "latency":
            if self.kind == "queue_time":
                return (level / self.time_unit) * self.capacity_rps
            return (level + math.sqrt(level * level + 4 * level)) / 2
        lo, hi = 0.0, 1.0
        while self.level(hi) < level:
            hi *= 2
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if self.level(mid) < level else (lo, mid)
        return hi

    def level(self, x: float) -> float:
        """The metric a replica holding ``x`` requests reports."""
        if self.kind == "queue_time":
            return self.wait_s(x) * self.time_unit
        if self.kind == "queue_length":
            return self.waiting(x)
        if self.kind == "running":
            return self.running(x)
        if self.kind == "latency":
            return bucket_p90(self.latency_s(x), self.buckets) * self.time_unit
        return self.full_scale * self.rho(x)

    def served_at_level(self, level: float) -> float:
        """The most a replica serves per second while its metric stays at or below ``level``."""
        x = self.x_at_level(level)
        return self.capacity_rps if math.isinf(x) else self.capacity_rps * self.rho(x)


@dataclass(frozen=True)
class ReplicaServed:
    """One second of service by the ready replicas that hold the same requests (:class:`Queue` keeps replicas of
    one state together)."""
    count: int
    """Ready replicas in this state."""
    x: float
    """Requests in each of them at the end of the second."""
    rho: float
    """Utilization of each one's slots at the end of the second."""
    served: float
    """Requests per second each of them completed."""
    queued: tuple = ()
    """The queue time of their completions, first in, first out (as :attr:`Served.queued`)."""

    @property
    def queued_s(self) -> float:
        return sum(share * wait for share, wait in self.queued)


@dataclass(frozen=True)
class Served:
    """One second of service by the ready replicas."""
    served: float
    """Requests completed this second (all replicas)."""
    dropped: float
    """Requests refused or lost: arrivals with no ready replica, and the queue of a replica that went away."""
    x: float
    """Requests per ready replica at the end of the second (their mean)."""
    ready: int
    rho: float = 0.0
    """Utilization of the ready replicas' slots at the end of the second (their mean)."""
    queued: tuple = ()
    """The queue time of this second's completions, first in, first out: ``(share, seconds)`` pairs, one per
    arrival cohort they came from, shares summing to 1 (empty when nothing completed)."""
    replicas: tuple = ()
    """Per state of the ready replicas, its :class:`ReplicaServed` (one entry while every replica is alike)."""
    by_replica: Optional[dict] = dataclasses.field(default=None, compare=False, hash=False, repr=False)
    """Replica (the key :meth:`Queue.serve` was given, a pod's name) -> its :class:`ReplicaServed`."""

    @property
    def load(self) -> float:
        """Requests per second each ready replica completed."""
        return self.served / self.ready if self.ready else 0.0

    @property
    def queued_s(self) -> float:
        """Mean queue time of this second's completions (what a queue-duration counter adds per completion)."""
        return sum(share * wait for share, wait in self.queued)

    def of(self, replica) -> ReplicaServed:
        """The state of one ready replica; a replica the queue does not know reads the replicas' mean (a caller
        that named its replicas by count only)."""
        found = self.by_replica.get(replica) if self.by_replica else None
        if found is not None:
            return found
        if len(self.replicas) == 1:
            return self.replicas[0]
        return ReplicaServed(1, self.x, self.rho, self.load, self.queued)

    def mean(self, level) -> float:
        """The mean over the ready replicas of ``level(x)``: what an average of the pods' own readings gives (the
        HPA's average of per-pod metrics), which differs from ``level`` of the mean ``x`` once replicas hold
        different queues."""
        if not self.replicas:
            return level(self.x)
        return sum(r.count * level(r.x) for r in self.replicas) / sum(r.count for r in self.replicas)


class Line:
    """One replica's line of waiting requests, first in, first out.

    The line lives on a cumulative position axis: ``arrived`` is how many requests ever arrived, ``left`` how many
    ever left the line (began service, or were lost). The ``Lq`` waiting now are positions ``(arrived - Lq,
    arrived]``: whoever arrived last waits (FIFO), so ``left = arrived - Lq`` and the line never runs backwards.
    ``cohorts`` maps positions back to arrival times: ``[first position, its arrival time, arrival rate]`` per run of
    seconds of equal rate (a constant load is one cohort however long it waits), at most ``MAX_COHORTS`` of them
    (beyond, neighbours merge pairwise: arrival times inside a merged cohort are interpolated over its span)."""

    MAX_COHORTS = 512

    def __init__(self) -> None:
        self.arrived = 0.0
        self.left = 0.0
        self.cohorts: deque = deque()
        self.last_wait = 0.0

    @classmethod
    def steady(cls, waiting: float, rate: float) -> "Line":
        """The steady line: the ``waiting`` requests arrived at ``rate`` over the last ``waiting / rate`` seconds."""
        line = cls()
        if rate > 0:
            line.arrived = waiting
            line.cohorts.append([0.0, -waiting / rate, rate])
            line.last_wait = waiting / rate
        return line

    def join(self, start: float, demand: float, dt: float) -> None:
        """This second's arrivals join the end of the line (one more cohort unless they continue the last one)."""
        if demand <= 0:
            return
        last = self.cohorts[-1] if self.cohorts else None
        if (last is None or last[2] != demand
                or abs(last[1] + (self.arrived - last[0]) / last[2] - start) > 1e-9):
            self.cohorts.append([self.arrived, start, demand])
            if len(self.cohorts) > self.MAX_COHORTS:
                self._merge()
        self.arrived += demand * dt

    def _merge(self) -> None:
        """Halve the cohorts: each pair becomes one spanning both (the line's length in positions is kept)."""
        old = list(self.cohorts)
        ends = [(c[0], c[1]) for c in old[1:]] + [(self.arrived, None)]
        merged = deque()
        for i in range(0, len(old), 2):
            j = min(i + 1, len(old) - 1)
            end_pos, end_t = ends[j]
            first = old[i]
            if end_t is None:
                end_t = old[j][1] + (end_pos - old[j][0]) / old[j][2]
            span = end_t - first[1]
            merged.append([first[0], first[1], (end_pos - first[0]) / span if span > 0 else first[2]])
        self.cohorts = merged

    def leave(self, start: float, dt: float, left: float) -> tuple:
        """The positions ``(self.left, left]`` leave the line uniformly over this second: their queue time per
        cohort (positions and times are both linear inside a cohort's stretch, so its mean is at the midpoint)."""
        left = min(left, self.arrived)
        n = left - self.left
        if n <= 1e-12:
            return ((1.0, self.last_wait),)
        out = []
        lo = self.left
        cohorts = self.cohorts
        while cohorts and lo < left - 1e-12:
            first, joined, rate = cohorts[0]
            end = cohorts[1][0] if len(cohorts) > 1 else self.arrived
            hi = min(end, left)
            if hi > lo:
                mid = (lo + hi) / 2
                wait = start + dt * (mid - self.left) / n - (joined + (mid - first) / rate)
                out.append(((hi - lo) / n, wait if wait > 0 else 0.0))
            if end <= left + 1e-12:
                cohorts.popleft()
            lo = max(lo, hi)
        self.left = left
        if not out:
            return ((1.0, self.last_wait),)
        self.last_wait = out[-1][1]
        return tuple(out)


class _State:
    """Ready replicas that hold the same requests: ``x`` in each, and the line of each (one line stands for all:
    their arrivals and services are the same)."""
    __slots__ = ("x", "members", "line")

    def __init__(self, x: float, members: set, line: Line):
        self.x, self.members, self.line = x, members, line


def _replica_keys(ready) -> list:
    return list(range(ready)) if isinstance(ready, int) else list(ready)


class Queue:
    """The requests in each ready replica and the line of those waiting in it, first in, first out.

    Each replica keeps the requests queued on it: the balancer in front of the replicas spreads the arrivals, not the
    backlog. What it spreads is each new request over the ready endpoints with no regard to their queues: kube-proxy
    sends a new connection to one endpoint at random with equal probability (kubernetes ``pkg/proxy/iptables/
    proxier.go`` ``writeServiceToEndpointRules``: ``-m statistic --mode random --probability 1/(n-i)`` per endpoint;
    IPVS mode's default scheduler is round robin), ingress-nginx sends each request to the next endpoint in turn
    (``rootfs/etc/nginx/lua/balancer.lua``: ``DEFAULT_LB_ALG = "round_robin"`` unless an Ingress sets
    ``load-balance``; the package sets none). Either way each ready replica receives ``lambda / n`` and its own
    ``x`` moves by ``dx/dt = lambda / n - mu rho(x)``: a replica that turns ready starts empty and takes its share
    of the new arrivals, while the one that built a backlog drains it at its own rate.

    Replicas whose states coincide (all of them in steady state, those that turned ready together) are kept as one
    state (:class:`_State`), so a run costs one step per distinct state, not per replica. Replicas are named by the
    keys :meth:`serve` is given (the pods' names); an ``int`` names ``0 .. n - 1``."""

    MERGE = 1e-6
    """States closer than this (relative to ``1 + x``) are one: the fluid converges to it geometrically."""

    def __init__(self, plan: ServicePlan, demand: float = 0.0, ready=0):
        self.plan = plan
        self.clock = 0.0
        self.states: list[_State] = []
        self._state_of: dict = {}
        keys = _replica_keys(ready)
        self._keys = keys
        """The replicas as last seen (a second whose ready set did not change has nothing to reconcile)."""
        if keys:
            x, line = 0.0, Line()
            per = demand / len(keys)
            # steady state below saturation; a start above it starts with an empty queue that then grows
            if 0 < per < plan.capacity_rps:
                x = plan.slots.x_at_rho(per / plan.capacity_rps)
                line = Line.steady(plan.waiting(x), per)
            self._add(_State(x, set(keys), line))

    @property
    def in_system(self) -> float:
        """Requests in all ready replicas."""
        return sum(st.x * len(st.members) for st in self.states)

    def x_of(self, replica) -> float:
        st = self._state_of.get(replica)
        return st.x if st is not None else 0.0

    def _add(self, st: _State) -> None:
        self.states.append(st)
        for k in st.members:
            self._state_of[k] = st

    def remove(self, replicas) -> list:
        """Replicas taken out of service (a scale-in): the requests each held, which leave with it."""
        out = []
        self._keys = None
        for k in replicas:
            st = self._state_of.pop(k, None)
            if st is None:
                out.append(0.0)
                continue
            out.append(st.x)
            st.members.discard(k)
        self.states = [st for st in self.states if st.members]
        return out

    def _reconcile(self, keys: list) -> float:
        """Follow the ready set: a replica gone without :meth:`remove` loses its requests (returned), a new one
        starts empty."""
        if keys == self._keys:
            return 0.0
        self._keys = keys
        present = set(keys)
        lost = 0.0
        if len(present) != len(self._state_of) or any(k not in present for k in self._state_of):
            gone = [k for k in self._state_of if k not in present]
            lost = sum(self.remove(gone))
        new = [k for k in keys if k not in self._state_of]
        if new:
            empty = next((st for st in self.states if st.x == 0.0 and st.line.arrived <= st.line.left), None)
            if empty is not None:
                empty.members.update(new)
                for k in new:
                    self._state_of[k] = empty
            else:
                self._add(_State(0.0, set(new), Line()))
        return lost

    def now(self, demand: float, ready) -> Served:
        """The state as it stands (steady at the start of a run), without a second passing."""
        keys = _replica_keys(ready)
        if not keys:
            return Served(0.0, 0.0, 0.0, 0)
        per = demand / len(keys)
        parts = []
        for st in self.states:
            served = min(per, self.plan.capacity_rps)
            parts.append((st, ReplicaServed(len(st.members), st.x, self.plan.rho(st.x), served,
                                            ((1.0, st.line.last_wait),) if served else ())))
        return self._served(parts, 0.0)

    def _served(self, parts: list, dropped: float) -> Served:
        if len(parts) == 1:  # every replica alike: the common case, kept cheap
            r = parts[0][1]
            return Served(r.count * r.served, dropped, r.x, r.count, r.rho, r.queued, (r,))
        replicas = tuple(r for _, r in parts)
        n = sum(r.count for r in replicas)
        if not n:
            return Served(0.0, dropped, 0.0, 0)
        total = sum(r.count * r.served for r in replicas)
        queued = []
        if total > 0:
            for r in replicas:
                weight = r.count * r.served / total
                if weight > 0:
                    queued.extend((weight * share, wait) for share, wait in r.queued)
        by_replica = {k: r for st, r in parts for k in st.members}
        return Served(total, dropped, sum(r.count * r.x for r in replicas) / n, n,
                      sum(r.count * r.rho for r in replicas) / n, tuple(queued), replicas, by_replica)

    def serve(self, demand: float, ready, dt: float = 1.0) -> Served:
        start = self.clock
        self.clock += dt
        keys = _replica_keys(ready)
        lost = self._reconcile(keys)
        if not keys:
            return Served(0.0, demand * dt + lost, 0.0, 0)
        per = demand / len(keys)
        mu_dt = self.plan.capacity_rps * dt
        parts = []
        for st in self.states:
            st.line.join(start, per, dt)
            a = st.x + per * dt
            y = self.plan.slots.step(a, mu_dt)
            waiting = self.plan.waiting(y)
            done = a - y
            queued = st.line.leave(start, dt, max(st.line.arrived - waiting, st.line.left)) if done > 0 else ()
            st.x = y
            parts.append((st, ReplicaServed(len(st.members), y, self.plan.rho(y), done / dt, queued)))
        served = self._served(parts, lost)
        self._coalesce()
        return served

    def _coalesce(self) -> None:
        """States that have converged become one (the larger keeps its line; requests are kept)."""
        if len(self.states) < 2:
            return
        self.states.sort(key=lambda st: st.x)
        kept = [self.states[0]]
        for st in self.states[1:]:
            last = kept[-1]
            if abs(st.x - last.x) <= self.MERGE * (1 + st.x):
                big, small = (last, st) if len(last.members) >= len(st.members) else (st, last)
                n_big, n_small = len(big.members), len(small.members)
                big.x = (big.x * n_big + small.x * n_small) / (n_big + n_small)
                big.members |= small.members
                for k in small.members:
                    self._state_of[k] = big
                kept[-1] = big
            else:
                kept.append(st)
        self.states = kept
