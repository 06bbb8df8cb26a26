"""The service model: how a ready replica serves requests, and the metric values that follow from it.

Every replica is a single-server queue with service rate ``capacity_rps``. Its state is the mean number of
requests in it, ``x``, moved by the pointwise stationary fluid flow approximation (PSFFA; Wang, Chen, Ou and
Sanchez, "Pointwise stationary fluid flow approximation of time-varying queues", 1996):

    dx/dt = lambda(t) - mu * rho(x),   rho(x) = x / (1 + x)

``rho(x)`` is the M/M/1 utilization at which ``x`` requests are in the system in steady state. The model has the
steady-state M/M/1 figures as its fixed point and builds up or drains the queue over time: load above capacity
grows it without bound (no cap), and the rate a replica serves is at most ``mu``. From ``x`` follow the
utilization ``rho``, the requests waiting ``Lq = x^2 / (1 + x)`` and, by Little's law on the served rate, the
queue time ``Wq = Lq / (mu rho) = x / mu``. The step is implicit Euler (stable for any ``mu``, exact fixed point).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Optional

from gpuplatform.catalogs.metrics import METRICS
from gpuplatform.components.config import PlatformConfig, Workload
from gpuplatform.components.pools import all_pool_facts

TIME_UNITS = {"us": 1e6, "ms": 1e3, "s": 1.0}
FULL_SCALE = {"percent": 100.0, "ratio": 1.0}
DEFAULT_STARTUP_BUDGET_S = 600
"""``modelLoadSeconds`` of a workload without probes (the startup probe budget the manifests generate)."""


def metric_kind(name: str) -> str:
    """How a catalog metric follows load: ``queue_time``, ``queue_length`` or ``utilization`` (memory too)."""
    m = METRICS[name]
    if m.unit in TIME_UNITS:
        return "queue_time"
    if m.unit == "requests":
        return "queue_length"
    return "utilization"


def replica_memory_mib(cfg: PlatformConfig, w: Workload) -> float:
    facts = all_pool_facts(cfg)[w.node_pool]
    if facts.mode == "cgpu":
        return float((w.gpu.memory_gib or 0) * 1024)
    if facts.mode == "mig":
        # the replica's own device: its MIG profile (a layout pool's ``migProfile``), or a whole GPU
        profile = w.gpu.mig_profile if facts.mig_layout else facts.mig_profile
        gb = re.search(r"\.(\d+)gb", profile or "")
        return float(int(gb.group(1)) * 1024 * (w.gpu.count or 1)) if gb else float(facts.model.reported_mib)
    return float(facts.model.reported_mib * (w.gpu.count or 1))


def full_scale(cfg: PlatformConfig, w: Workload, name: str) -> float:
    """The value of a utilization-like metric on a saturated replica (100 %, 1.0, or its GPU memory)."""
    return FULL_SCALE.get(METRICS[name].unit) or replica_memory_mib(cfg, w)


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

    def x_at_level(self, level: float) -> float:
        """Requests in a replica at which the metric reads ``level`` (inf when no finite load reaches above it)."""
        if self.kind == "queue_time":
            return (level / self.time_unit) * self.capacity_rps
        if self.kind == "queue_length":
            return (level + math.sqrt(level * level + 4 * level)) / 2
        rho = level / self.full_scale
        return math.inf if rho >= 1 else rho / (1 - rho)

    def level(self, x: float) -> float:
        """The metric a replica holding ``x`` requests reports."""
        if self.kind == "queue_time":
            return x / self.capacity_rps * self.time_unit
        if self.kind == "queue_length":
            return x * x / (1 + x)
        return self.full_scale * x / (1 + x)

    def served_at_level(self, level: float) -> float:
        """The most a replica serves per second while its metric stays at or below ``level``."""
        x = self.x_at_level(level)
        return self.capacity_rps if math.isinf(x) else self.capacity_rps * x / (1 + x)


def service_plan(cfg: PlatformConfig, w: Workload) -> ServicePlan:
    sm = w.service_model
    first = w.autoscaling.metrics[0]
    kind = metric_kind(first.metric)
    budget = w.probes.startup_timeout_seconds if w.probes else DEFAULT_STARTUP_BUDGET_S
    load = sm.model_load_seconds if sm.model_load_seconds is not None else budget
    s = sm.service_time_ms / 1000.0
    if kind == "queue_time":
        unit = TIME_UNITS[METRICS[first.metric].unit]
        wq = first.target / unit
        rho = wq / (s + wq)  # M/M/1: Wq = S * rho / (1 - rho)
        return ServicePlan(kind, rho / s, 1 / s, s, load, sm.image_pull_seconds, time_unit=unit)
    if kind == "queue_length":
        lq = first.target
        rho = (-lq + math.sqrt(lq * lq + 4 * lq)) / 2  # M/M/1: Lq = rho^2 / (1 - rho)
        return ServicePlan(kind, rho / s, 1 / s, s, load, sm.image_pull_seconds)
    full = full_scale(cfg, w, first.metric)
    r = sm.requests_per_second_at_target
    return ServicePlan(kind, r, r * full / first.target, s, load, sm.image_pull_seconds, full_scale=full)


@dataclass(frozen=True)
class Served:
    """One second of service by the ready replicas."""
    served: float
    """Requests completed this second (all replicas)."""
    dropped: float
    """Requests refused or lost: arrivals with no ready replica, and the queue of the last replica to go."""
    x: float
    """Requests in each ready replica at the end of the second."""
    ready: int
    x_before: float = 0.0
    """Requests in each ready replica at the start of the second: the queue a request completing in it joined
    (first in, first out), so its queue time is ``x_before / mu``."""

    @property
    def rho(self) -> float:
        return self.x / (1 + self.x)

    @property
    def load(self) -> float:
        """Requests per second each ready replica completed."""
        return self.served / self.ready if self.ready else 0.0


class Queue:
    """The requests in the system, spread evenly over the ready replicas (the ingress balances per request)."""

    def __init__(self, plan: ServicePlan, demand: float = 0.0, ready: int = 0):
        self.plan = plan
        self.in_system = 0.0
        if ready and demand:
            rho = demand / ready / plan.capacity_rps
            # steady state below saturation; a start above it starts with an empty queue that then grows
            self.in_system = ready * rho / (1 - rho) if rho < 1 else 0.0

    def now(self, demand: float, ready: int) -> Served:
        """The state as it stands (steady at the start of a run), without a second passing."""
        x = self.in_system / ready if ready else 0.0
        return Served(min(demand, ready * self.plan.capacity_rps), 0.0, x, ready, x)

    def serve(self, demand: float, ready: int, dt: float = 1.0) -> Served:
        if ready == 0:
            dropped = demand * dt + self.in_system
            self.in_system = 0.0
            return Served(0.0, dropped, 0.0, 0)
        mu_dt = self.plan.capacity_rps * dt
        before = self.in_system / ready
        a = before + demand / ready * dt
        # implicit Euler on dx/dt = lambda - mu x/(1+x): y + mu dt y/(1+y) = a
        b = 1 + mu_dt - a
        y = (-b + math.sqrt(b * b + 4 * a)) / 2
        served = (a - y) * ready
        self.in_system = y * ready
        return Served(served / dt, 0.0, y, ready, before)

    def level(self, served: Served) -> float:
        return self.plan.level(served.x)


def replica_units(cfg: PlatformConfig, w: Workload) -> tuple[float, str]:
    """GPU units one replica holds, in the pool's own unit (GPU, MIG instance, GiB of cGPU memory)."""
    facts = all_pool_facts(cfg)[w.node_pool]
    if facts.mode == "cgpu":
        return float(w.gpu.memory_gib or 0), "GiB of GPU memory"
    resource = facts.resource_for(w.gpu)
    return float(w.gpu.count or 1), facts.unit_of(resource) if resource else facts.unit


def startup_seconds(plan: ServicePlan, probe_period_s: int, image_cached: bool) -> int:
    """Container start to ready: the model load, rounded up to the next startup probe, after any image pull."""
    load = probe_period_s * math.ceil(plan.model_load_s / probe_period_s) if plan.model_load_s else 0
    return load + (0 if image_cached else plan.image_pull_s)


def optional_float(value) -> Optional[float]:
    return None if value is None else float(value)
