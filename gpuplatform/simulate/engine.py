"""The simulation: demand -> ready replicas -> exporter -> Prometheus -> adapter query -> HPA -> pods -> nodes.

One second per step. Per step, in this order: nodes finish provisioning, pods are scheduled and start, demand is
served by the ready replicas, the GPU exporter collects, Prometheus scrapes, the HPA (or KEDA) syncs, the
cluster autoscaler scans. What each stage models, and where its behaviour comes from, is in docs/simulate.md.
"""
from __future__ import annotations

import math
import re
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

from gpuplatform.catalogs.gpus import MIG_RECONFIGURE, instance_type, provisioning
from gpuplatform.catalogs.metrics import METRICS, MetricSource, is_windowed
from gpuplatform.components.adapter_rules import render_for_pods
from gpuplatform.components.config import PlatformConfig, Workload, duration_seconds
from gpuplatform.components.errors import CommandLineIssue, ConfigError, ConfigIssue, one_of
from gpuplatform.components.metric_sources import source_for
from gpuplatform.components.pools import all_pool_facts
from gpuplatform.components.validation import hpa_api_version
from gpuplatform.components.workload_manifests import behavior, keda_query, probes, quantity
from gpuplatform.simulate import hpa as hpa_mod
from gpuplatform.simulate import promql
from gpuplatform.simulate.traces import Trace

# cluster-autoscaler flag defaults (FAQ "What are the parameters to CA?"): --scan-interval 10s,
# --scale-down-unneeded-time 10m, --scale-down-delay-after-add 10m
CA_SCAN_S = 10
CA_UNNEEDED_S = 600
CA_DELAY_AFTER_ADD_S = 600
STARTUP_PROBE_PERIOD_S = 10
"""The startup probe's period (workload_manifests.probes): a pod turns ready at the first probe after loading."""
MM1_MAX_RHO = 0.98
"""Steady-state M/M/1 formulas are used up to this load; beyond it the fluid backlog carries the excess."""

TIME_UNITS = {"us": 1e6, "ms": 1e3, "s": 1.0}
FULL_SCALE = {"percent": 100.0, "ratio": 1.0}


# ------------------------------------------------------------------------------------------------ metric kinds
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


@dataclass(frozen=True)
class ServicePlan:
    """The workload's service model resolved against its first metric."""
    kind: str
    rps_at_target: float
    """Per ready replica, the load that puts the metric at its target."""
    capacity_rps: float
    """Per ready replica, the most it serves (saturation)."""
    service_time_s: float
    model_load_s: int
    image_pull_s: int


def service_plan(cfg: PlatformConfig, w: Workload) -> ServicePlan:
    sm = w.service_model
    first = w.autoscaling.metrics[0]
    kind = metric_kind(first.metric)
    budget = w.probes.startup_timeout_seconds if w.probes else 600
    load = sm.model_load_seconds if sm.model_load_seconds is not None else budget
    s = sm.service_time_ms / 1000.0
    if kind == "queue_time":
        wq = first.target / TIME_UNITS[METRICS[first.metric].unit]
        rho = wq / (s + wq)  # M/M/1: Wq = S * rho / (1 - rho)
        return ServicePlan(kind, rho / s, 1 / s, s, load, sm.image_pull_seconds)
    if kind == "queue_length":
        lq = first.target
        rho = (-lq + math.sqrt(lq * lq + 4 * lq)) / 2  # M/M/1: Lq = rho^2 / (1 - rho)
        return ServicePlan(kind, rho / s, 1 / s, s, load, sm.image_pull_seconds)
    full = _full_scale(cfg, w, first.metric)
    r = sm.requests_per_second_at_target
    return ServicePlan(kind, r, r * full / first.target, s, load, sm.image_pull_seconds)


def _full_scale(cfg: PlatformConfig, w: Workload, name: str) -> float:
    unit = METRICS[name].unit
    return FULL_SCALE.get(unit) or replica_memory_mib(cfg, w)


# ------------------------------------------------------------------------------------------------ pods, nodes
@dataclass
class Pod:
    name: str
    created: float
    node: Optional["Node"] = None
    started: Optional[float] = None
    ready_at: Optional[float] = None

    def phase(self, t: float) -> str:
        return "Running" if self.started is not None and self.started <= t else "Pending"

    def is_ready(self, t: float) -> bool:
        return self.ready_at is not None and self.ready_at <= t


@dataclass
class Node:
    name: str
    ready_at: float
    slots: int
    pods: list = field(default_factory=list)
    image_at: Optional[float] = None
    empty_since: Optional[float] = None


# ------------------------------------------------------------------------------------------------ result
@dataclass
class Result:
    stack: str
    workload: str
    trace: str
    autoscaler: str
    metric: str
    api_name: str
    target: float
    unit: str
    query: str
    first_scale_up_s: Optional[float]
    capacity_ready_s: Optional[float]
    over_target_s: float
    gpu_hours: float
    oracle_gpu_hours: float
    timeline: list
    increase_at: Optional[float]
    plan: ServicePlan
    nodes_max: int
    replicas_max: int

    def summary(self) -> dict:
        return {"first_scale_up_s": self.first_scale_up_s, "capacity_ready_s": self.capacity_ready_s,
                "over_target_s": self.over_target_s, "gpu_hours": self.gpu_hours,
                "oracle_gpu_hours": self.oracle_gpu_hours}

    def to_json(self) -> dict:
        return {**self.summary(), "timeline": self.timeline,
                "stack": self.stack, "workload": self.workload, "trace": self.trace,
                "autoscaler": self.autoscaler, "metric": self.metric, "apiName": self.api_name,
                "target": self.target, "unit": self.unit, "query": self.query,
                "loadIncreaseAt": self.increase_at,
                "serviceModel": {"rpsAtTarget": round(self.plan.rps_at_target, 6),
                                 "capacityRps": round(self.plan.capacity_rps, 6),
                                 "modelLoadSeconds": self.plan.model_load_s,
                                 "imagePullSeconds": self.plan.image_pull_s}}


# ------------------------------------------------------------------------------------------------ run
def find_workload(cfg: PlatformConfig, name: str) -> Workload:
    w = next((x for x in cfg.workloads if x.name == name), None)
    if w is None:
        raise ConfigError([CommandLineIssue("--workload", f"no workload named {name!r}; workloads: "
                                                          f"{one_of(x.name for x in cfg.workloads)}")])
    if w.fixed:
        scaled = [x.name for x in cfg.workloads if not x.fixed]
        raise ConfigError([CommandLineIssue("--workload", f"{name!r} runs a fixed number of replicas (no "
                                                          "autoscaler), so there is no loop to simulate; autoscaled "
                                                          f"workloads: {one_of(scaled) if scaled else 'none'}")])
    return w


@dataclass
class Phases:
    """Offsets (seconds) of the periodic loops: the exporter's collection, Prometheus' scrape, the HPA sync."""
    collect: int
    scrape: int
    sync: int


def worst_case_phases(ref: int, collect: int, scrape: int, sync: int) -> Phases:
    """Each stage runs just before the one upstream of it has the change: the exporter collected 1 s before the
    load changed, Prometheus scrapes 1 s before the next collection, the HPA syncs 1 s before the next scrape.
    This is the alignment the plan's worst-case latency formula assumes."""
    c0 = ref - 1
    s0 = (c0 + collect - 1) if collect else ref - 1
    h0 = s0 + scrape - 1
    return Phases(c0 % max(collect, 1), s0 % scrape, h0 % sync)


def simulate(cfg: PlatformConfig, stack: str, workload: str, trace: Trace, *,
             progress: Optional[Callable[[float], None]] = None, phases: Optional[Phases] = None) -> Result:
    w = find_workload(cfg, workload)
    pool = next(p for p in cfg.node_pools if p.name == w.node_pool)
    facts = all_pool_facts(cfg)[w.node_pool]
    a = w.autoscaling
    iv = cfg.monitoring.intervals
    collect_s = duration_seconds(iv.exporter_collect)
    scrape_s = duration_seconds(iv.scrape)
    sync_s = duration_seconds(iv.hpa_sync)
    window = iv.rule_window
    namespace = cfg.settings.namespace
    plan = service_plan(cfg, w)
    slots = facts.replicas_per_node(w.gpu)
    gpus_per_node = facts.gpus_per_node
    if slots <= 0:
        raise ConfigError([ConfigIssue(f"workloads[{cfg.workloads.index(w)}].gpu",
                                       f"one replica does not fit on a node of pool {pool.name!r}")])

    sources: list[tuple] = []
    for t in a.metrics:
        src = source_for(cfg, w, t.metric)
        if src is None:
            raise ConfigError([ConfigIssue(f"workloads[{cfg.workloads.index(w)}].autoscaling",
                                           f"metric {t.metric!r} has no source on this stack")])
        sources.append((t, src))
    keda = a.autoscaler == "keda"
    hpa_spec = _hpa_spec(cfg, w)
    controller = hpa_mod.Controller.from_spec(hpa_spec)
    activation = hpa_mod.KedaActivation(scrape_s, 300, a.min_replicas) if keda else None
    queries = {t.metric: (_keda_query(cfg, w, t.metric) if keda else None) for t, _ in sources}
    needed: dict[str, tuple] = {}  # series name -> the (target, source) whose query reads it
    for t, src in sources:
        for name in promql.metric_names(render_for_pods(src, namespace, ["p"], window)):
            needed.setdefault(name, (t, src))
    unknown = sorted(n for n in needed if n not in SERIES_MODELS)
    if unknown:
        raise ConfigError([ConfigIssue("monitoring", f"the simulator has no model of series {', '.join(unknown)}")])

    # provisioning
    itype = instance_type(pool.instance_types[0]) if pool.instance_types else None
    prov = provisioning(itype.family if itype else None)
    provision_s = prov.seconds + (MIG_RECONFIGURE.seconds if facts.mode == "mig" else 0)
    autoscaled_pool = pool.autoscaling
    min_nodes = pool.min_nodes if autoscaled_pool else (pool.desired_nodes or 0)
    max_nodes = facts.max_nodes

    # initial steady state: what the load at t=0 needs, all ready
    r0 = _clamp(math.ceil(trace.demand(0) / plan.rps_at_target - 1e-9), max(a.min_replicas, 1 if not keda else 0),
                a.max_replicas)
    if keda and trace.demand(0) > 0:
        r0 = max(r0, 1)
    nodes: list[Node] = []
    n0 = max(min_nodes, math.ceil(r0 / slots)) if autoscaled_pool else min_nodes
    n0 = min(n0, max_nodes)
    for i in range(n0):
        nodes.append(Node(f"node-{i}", -1e9, slots, image_at=-1e9))
    pods: list[Pod] = []
    counter = [0]

    def new_pod(t: float) -> Pod:
        counter[0] += 1
        p = Pod(f"{w.name}-{counter[0]:05d}", t)
        pods.append(p)
        return p

    for _ in range(r0):
        p = new_pod(-1e9)
        node = next((n for n in nodes if len(n.pods) < n.slots), None)
        if node is not None:
            node.pods.append(p)
            p.node, p.started, p.ready_at = node, -1e9, -1e9
    spec_replicas = r0
    if activation is not None and r0 > 0:
        activation.last_active = 0.0  # the run starts in steady state: the trigger was active until now

    ref = _first_change(trace)
    ph = phases or worst_case_phases(ref, collect_s if any(METRICS[t.metric].category == "gpu" for t, _ in sources)
                                     else 0, scrape_s, sync_s)
    storage = promql.Storage()
    collected: dict[str, dict[str, float]] = {}  # pod -> metric -> level at the last collection
    counters: dict[str, dict[str, float]] = {}   # pod -> counter name -> value
    backlog = 0.0
    last_scale_up_node = -1e9
    first_target = a.metrics[0]
    timeline = []
    first_scale_up = None
    increase_at = None
    capacity_ready = None
    over_target = 0
    gpu_seconds = 0.0
    oracle_seconds = 0.0
    last_metric = None
    last_desired = spec_replicas
    node_counter = [n0]
    duration = int(trace.duration_s)
    wall = time.monotonic()

    for step in range(duration + 1):
        t = float(step)
        demand = trace.demand(t)
        # nodes
        ready_nodes = [n for n in nodes if n.ready_at <= t]
        # scheduling: oldest pending pod first, onto the fullest ready node (binpack)
        for p in pods:
            if p.node is not None:
                continue
            fits = sorted((n for n in ready_nodes if len(n.pods) < n.slots), key=lambda n: -len(n.pods))
            if not fits:
                continue
            node = fits[0]
            node.pods.append(p)
            node.empty_since = None
            p.node = node
            if node.image_at is None:
                node.image_at = t + plan.image_pull_s
            p.started = max(t, node.image_at)
            p.ready_at = p.started + STARTUP_PROBE_PERIOD_S * math.ceil(plan.model_load_s / STARTUP_PROBE_PERIOD_S)
        ready = [p for p in pods if p.is_ready(t)]
        running = [p for p in pods if p.phase(t) == "Running"]
        c = len(ready)

        # demand served by the ready replicas
        state = _serve(plan, demand, c, backlog)
        backlog = state["backlog"]
        per_pod_levels = {}
        for t_, src in sources:
            per_pod_levels[t_.metric] = _level(cfg, w, t_.metric, t_.target, plan, state)
        for p in running:
            cnt = counters.setdefault(p.name, {"success": 0.0, "queue_us": 0.0, "request_us": 0.0,
                                               "compute_us": 0.0})
            if p.is_ready(t) and c:
                served = state["served"] / c
                cnt["success"] += served
                cnt["queue_us"] += served * state["wq"] * 1e6
                cnt["compute_us"] += served * plan.service_time_s * 1e6
                cnt["request_us"] += served * (state["wq"] + plan.service_time_s) * 1e6

        # the GPU exporter's collection
        if collect_s and (step - ph.collect) % collect_s == 0:
            for p in running:
                collected[p.name] = {m: (lv if p.is_ready(t) else 0.0) for m, lv in per_pod_levels.items()}

        # Prometheus scrape
        if (step - ph.scrape) % scrape_s == 0:
            for p in running:
                _scrape(storage, needed, cfg, w, p, t, namespace, collected.get(p.name), counters[p.name],
                        state, plan, sources, per_pod_levels)

        # HPA / KEDA
        if (step - ph.sync) % sync_s == 0:
            before = spec_replicas
            pod_views = [hpa_mod.PodView(p.name, p.phase(t), p.is_ready(t)) for p in pods]
            proposals = []
            shown = None
            if keda:
                for t_, src in sources:
                    vec = promql.evaluate(queries[t_.metric], storage, t)
                    value = sum(v for _, v in vec) if isinstance(vec, list) else vec
                    if math.isnan(value):
                        value = 0.0
                    if spec_replicas > 0:
                        rep, usage = hpa_mod.external_per_pod_replicas(
                            len(pods), hpa_mod.to_milli(t_.target), [hpa_mod.to_milli(value)])
                        proposals.append(rep)
                        shown = usage / 1000 if shown is None else shown
                if spec_replicas > 0:
                    spec_replicas = controller.reconcile(t, spec_replicas, proposals)
            else:
                names = [p.name for p in pods]
                for t_, src in sources:
                    if not names:
                        proposals.append(None)
                        continue
                    query = render_for_pods(src, namespace, names, window)
                    vec = promql.evaluate(query, storage, t)
                    values = {}
                    for labels, v in vec if isinstance(vec, list) else []:
                        pod = labels.get(src.labels.pod)
                        if pod is not None and not math.isnan(v):
                            values[pod] = hpa_mod.to_milli(v)
                    try:
                        rep, usage = hpa_mod.pods_metric_replicas(spec_replicas, hpa_mod.to_milli(t_.target),
                                                                  values, pod_views)
                        proposals.append(rep)
                        if shown is None:
                            shown = usage / 1000
                    except hpa_mod.MetricUnavailable:
                        proposals.append(None)
                spec_replicas = controller.reconcile(t, spec_replicas, proposals)
            last_metric = shown
            last_desired = max((p for p in proposals if p is not None), default=spec_replicas)
            if spec_replicas > before and first_scale_up is None and increase_at is not None:
                first_scale_up = t - increase_at
            spec_replicas = _apply_scale(spec_replicas, pods, nodes, new_pod, t)

        if keda and (step - ph.scrape) % scrape_s == 0:
            values = []
            for t_, _ in sources:
                vec = promql.evaluate(queries[t_.metric], storage, t)
                values.append(sum(v for _, v in vec) if isinstance(vec, list) else vec)
            before = spec_replicas
            spec_replicas = activation.poll(t, spec_replicas, values)
            if spec_replicas > before and first_scale_up is None and increase_at is not None:
                first_scale_up = t - increase_at
            spec_replicas = _apply_scale(spec_replicas, pods, nodes, new_pod, t)

        # cluster autoscaler
        if autoscaled_pool and step % CA_SCAN_S == 0:
            pending = [p for p in pods if p.node is None]
            upcoming_free = sum(n.slots - len(n.pods) for n in nodes if n.ready_at > t)
            free_ready = sum(n.slots - len(n.pods) for n in nodes if n.ready_at <= t)
            short = len(pending) - upcoming_free - free_ready
            if short > 0:
                add = min(math.ceil(short / slots), max_nodes - len(nodes))
                for _ in range(max(add, 0)):
                    nodes.append(Node(f"node-{node_counter[0]}", t + provision_s, slots))
                    node_counter[0] += 1
                    last_scale_up_node = t
            for n in list(nodes):
                if n.pods or n.ready_at > t:
                    n.empty_since = None
                    continue
                if n.empty_since is None:
                    n.empty_since = t
                if (len(nodes) > min_nodes and t - n.empty_since >= CA_UNNEEDED_S
                        and t - last_scale_up_node >= CA_DELAY_AFTER_ADD_S):
                    nodes.remove(n)

        # bookkeeping
        ready_now = [p for p in pods if p.is_ready(t)]
        capacity = len(ready_now) * plan.rps_at_target
        if increase_at is None and step > 0 and demand > capacity * (1 + 1e-9) and demand > trace.demand(0):
            increase_at = t
        if increase_at is not None and capacity_ready is None and capacity >= demand - 1e-9 and t >= increase_at:
            capacity_ready = t - increase_at
        true_level = per_pod_levels[first_target.metric]
        if (c == 0 and demand > 0) or true_level > first_target.target:
            over_target += 1
        gpu_seconds += len(nodes) * gpus_per_node
        need = _clamp(math.ceil(demand / plan.rps_at_target - 1e-9), a.min_replicas, a.max_replicas)
        oracle_nodes = max(min_nodes, math.ceil(need / slots)) if autoscaled_pool else len(nodes)
        oracle_seconds += min(oracle_nodes, max_nodes) * gpus_per_node
        if (step - ph.sync) % sync_s == 0 or step == duration:
            timeline.append({"t": int(t), "demand": round(demand, 4),
                             "metric": None if last_metric is None else round(last_metric, 4),
                             "desired": int(last_desired), "replicas": int(spec_replicas),
                             "ready": len(ready_now), "nodes": sum(1 for n in nodes if n.ready_at <= t)})
        if progress is not None and step % 60 == 0:
            progress(step / max(duration, 1))

    if progress is not None:
        progress(1.0)
    del wall
    src0 = sources[0][1]
    return Result(
        stack=stack, workload=w.name, trace=trace.name, autoscaler=a.autoscaler, metric=first_target.metric,
        api_name=src0.api_name, target=first_target.target, unit=METRICS[first_target.metric].unit,
        query=queries[first_target.metric] or render_for_pods(src0, namespace, [f"{w.name}-<pod>"], window),
        first_scale_up_s=first_scale_up, capacity_ready_s=capacity_ready, over_target_s=float(over_target),
        gpu_hours=round(gpu_seconds / 3600, 3), oracle_gpu_hours=round(oracle_seconds / 3600, 3),
        timeline=timeline, increase_at=increase_at, plan=plan,
        nodes_max=max((e["nodes"] for e in timeline), default=0),
        replicas_max=max((e["replicas"] for e in timeline), default=0))


def _clamp(v: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, v))


def _first_change(trace: Trace) -> int:
    base = trace.rates[0]
    for t, r in zip(trace.times, trace.rates):
        if abs(r - base) > 1e-9 * max(1.0, base):
            return int(t)
    return 0


def _hpa_spec(cfg: PlatformConfig, w: Workload) -> dict:
    a = w.autoscaling
    spec = {"minReplicas": max(a.min_replicas, 1), "maxReplicas": a.max_replicas}
    if a.autoscaler == "keda" or hpa_api_version(cfg, w) != "autoscaling/v2beta1":
        spec["behavior"] = behavior(a.behavior)
    return spec


def _keda_query(cfg: PlatformConfig, w: Workload, metric: str) -> str:
    from gpuplatform.components.workload_manifests import WorkloadContext

    facts = all_pool_facts(cfg)[w.node_pool]
    ctx = WorkloadContext(namespace=cfg.settings.namespace, pool=facts, kubernetes_version=(1, 30),
                          hpa_api_version="autoscaling/v2", on_ack=cfg.is_ack,
                          scrape_interval=cfg.monitoring.intervals.scrape, rule_window=cfg.monitoring.intervals.rule_window,
                          metric_sources={t.metric: source_for(cfg, w, t.metric) for t in w.autoscaling.metrics})
    return keda_query(w, ctx, metric)


def _apply_scale(spec: int, pods: list, nodes: list, new_pod, t: float) -> int:
    """The ReplicaSet controller: create pods, or delete unscheduled, then not-ready, then the newest first."""
    while len(pods) < spec:
        new_pod(t)
    if len(pods) > spec:
        ranked = sorted(pods, key=lambda p: (p.node is not None, p.phase(t) == "Running", p.is_ready(t),
                                             -p.created))
        for p in ranked[:len(pods) - spec]:
            pods.remove(p)
            if p.node is not None:
                p.node.pods.remove(p)
    return spec


def _serve(plan: ServicePlan, demand: float, ready: int, backlog: float) -> dict:
    """One second of service by ``ready`` replicas: throughput, fluid backlog, and the per-replica state."""
    if ready == 0:
        return {"served": 0.0, "backlog": 0.0, "rho": 0.0, "wq": 0.0, "lq": 0.0, "load": 0.0}
    cap = ready * plan.capacity_rps
    offered = demand + backlog
    served = min(offered, cap)
    backlog = offered - served
    rho = min(demand / cap, MM1_MAX_RHO)
    wq = plan.service_time_s * rho / (1 - rho) + (backlog / cap if cap else 0.0)
    lq = rho * rho / (1 - rho) + backlog / ready
    return {"served": served, "backlog": backlog, "rho": rho, "wq": wq, "lq": lq, "load": served / ready}


def _level(cfg: PlatformConfig, w: Workload, name: str, target: float, plan: ServicePlan, state: dict) -> float:
    """The metric's true value on a ready replica now, in the metric's unit."""
    kind = metric_kind(name)
    if kind == "queue_time":
        return state["wq"] * TIME_UNITS[METRICS[name].unit]
    if kind == "queue_length":
        return state["lq"]
    full = _full_scale(cfg, w, name)
    return min(full, target * state["load"] / plan.rps_at_target)


# ------------------------------------------------------------------------------------------------ series
def _pod_labels(cfg: PlatformConfig, src_exporter: str, pod: Pod, namespace: str) -> dict:
    from gpuplatform.catalogs.metrics import EXPORTERS

    lab = EXPORTERS[src_exporter]
    out = {lab.namespace: namespace, lab.pod: pod.name}
    if lab.node:
        out[lab.node] = pod.node.name if pod.node else ""
    if src_exporter in ("triton", "vllm"):
        out.update({"container": "server", "job": f"{namespace}/{pod.name.rsplit('-', 1)[0]}",
                    "instance": f"{pod.name}:metrics"})
        if src_exporter == "triton":
            out.update({"model": "model", "version": "1"})
    else:
        out.update({"gpu": "0", "UUID": f"GPU-{pod.name}"})
    return out


def _scrape(storage, needed, cfg, w, pod, t, namespace, collected, cnt, state, plan, sources, levels) -> None:
    for name, (target, src) in needed.items():
        model = SERIES_MODELS[name]
        exporter = src.exporter if model.exporter is None else model.exporter
        labels = _pod_labels(cfg, exporter, pod, namespace)
        value = model.value(ctx=SeriesContext(cfg, w, pod, t, collected, cnt, state, plan, target.metric, levels))
        if value is not None:
            storage.add(name, labels, t, value)


@dataclass
class SeriesContext:
    cfg: PlatformConfig
    w: Workload
    pod: Pod
    t: float
    collected: Optional[dict]
    counters: dict
    state: dict
    plan: ServicePlan
    metric: str
    levels: dict

    def gpu_fraction(self) -> Optional[float]:
        """Fraction of full scale the exporter last collected for the pod (None before its first collection)."""
        if self.collected is None:
            return None
        level = self.collected.get(self.metric, 0.0)
        return level / _full_scale(self.cfg, self.w, self.metric)

    @property
    def ready(self) -> bool:
        return self.pod.is_ready(self.t)


@dataclass(frozen=True)
class SeriesModel:
    value: Callable[..., Optional[float]]
    exporter: Optional[str] = None


def _gpu(scale: Callable[[SeriesContext, float], float]) -> SeriesModel:
    def value(ctx: SeriesContext):
        f = ctx.gpu_fraction()
        return None if f is None else scale(ctx, f)
    return SeriesModel(value)


def _mib(ctx: SeriesContext) -> float:
    return replica_memory_mib(ctx.cfg, ctx.w)


SERIES_MODELS: dict[str, SeriesModel] = {
    # GPU exporters: utilization in percent or as a 0-1 ratio, memory in MiB (bytes for the 2020 exporter)
    "DCGM_FI_DEV_GPU_UTIL": _gpu(lambda c, f: f * 100),
    "DCGM_CUSTOM_PROCESS_SM_UTIL": _gpu(lambda c, f: f * 100),
    "nvidia_gpu_duty_cycle": _gpu(lambda c, f: f * 100),
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": _gpu(lambda c, f: f),
    "DCGM_FI_DEV_FB_USED": _gpu(lambda c, f: f * _mib(c)),
    "DCGM_FI_DEV_FB_FREE": _gpu(lambda c, f: (1 - f) * _mib(c)),
    "DCGM_CUSTOM_PROCESS_MEM_USED": _gpu(lambda c, f: f * _mib(c)),
    "DCGM_CUSTOM_CONTAINER_MEM_ALLOCATED": _gpu(lambda c, f: _mib(c)),
    "nvidia_gpu_memory_used_bytes": _gpu(lambda c, f: f * _mib(c) * 1024 * 1024),
    # Triton: cumulative counters since the server started (per model), and the pending-request gauge
    "nv_inference_queue_duration_us": SeriesModel(lambda ctx: ctx.counters["queue_us"], "triton"),
    "nv_inference_request_success": SeriesModel(lambda ctx: ctx.counters["success"], "triton"),
    "nv_inference_count": SeriesModel(lambda ctx: ctx.counters["success"], "triton"),
    "nv_inference_exec_count": SeriesModel(lambda ctx: ctx.counters["success"], "triton"),
    "nv_inference_request_failure": SeriesModel(lambda ctx: 0.0, "triton"),
    "nv_inference_request_duration_us": SeriesModel(lambda ctx: ctx.counters["request_us"], "triton"),
    "nv_inference_compute_infer_duration_us": SeriesModel(lambda ctx: ctx.counters["compute_us"], "triton"),
    "nv_inference_pending_request_count": SeriesModel(
        lambda ctx: ctx.state["lq"] if ctx.ready else 0.0, "triton"),
    # vLLM gauges
    "vllm:num_requests_waiting": SeriesModel(lambda ctx: ctx.state["lq"] if ctx.ready else 0.0, "vllm"),
    "vllm:num_requests_running": SeriesModel(lambda ctx: ctx.state["rho"] if ctx.ready else 0.0, "vllm"),
}


def windowed(src: MetricSource) -> bool:
    return is_windowed(src)


def progress_bar(stream=None) -> Optional[Callable[[float], None]]:
    """A progress bar on stderr, only on a terminal and only once a run has taken more than two seconds."""
    stream = stream or sys.stderr
    if not stream.isatty():
        return None
    start = time.monotonic()
    shown = [False]

    def update(fraction: float) -> None:
        if time.monotonic() - start < 2 and fraction < 1:
            return
        if fraction >= 1 and not shown[0]:
            return
        shown[0] = True
        filled = int(30 * fraction)
        stream.write(f"\rsimulating [{'#' * filled}{'.' * (30 - filled)}] {fraction * 100:5.1f}%")
        if fraction >= 1:
            stream.write("\n")
        stream.flush()

    return update
