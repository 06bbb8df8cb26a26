"""What one simulated workload needs to know about its stack, read once.

:func:`build_setup` is the one place the simulator reads the stack config: the workload's autoscaler and its
triggers (the queries the adapter or KEDA run), the monitoring intervals, the service model resolved into a
:class:`~gpuplatform.simulate.service.ServicePlan`, the server's start phases, the node pool's facts (slots,
provisioning, the node autoscaler's timing, the warm set), warm capacity, the drain chain and the SLO. The loop
(:mod:`gpuplatform.simulate.engine`), the pool runs (:mod:`gpuplatform.simulate.pool`), the sweeps and the reports
take the :class:`WorkloadSetup` it returns and nothing else: it holds no config object, so a run cannot reach back
into the stack.

A search that tries other settings (``--tune``, ``--compare-pools``) edits the config and builds a setup per
candidate.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Optional

from gpuplatform.catalogs import servers
from gpuplatform.catalogs.gpus import MIG_RECONFIGURE, instance_type, provisioning
from gpuplatform.catalogs.metrics import METRICS
from gpuplatform.catalogs.versions import PrometheusVersion, prometheus_version
from gpuplatform.components.adapter_rules import render_for_pods
from gpuplatform.components.config import PlatformConfig, Workload, duration_seconds
from gpuplatform.components.drain import DrainChain, drain_chain
from gpuplatform.components.errors import CommandLineIssue, ConfigError, ConfigIssue, one_of
from gpuplatform.components.metric_sources import source_for
from gpuplatform.components.model_startup import (LoadEstimate, keda_cooldown_seconds, load_estimate, pull_seconds,
                                                  startup_budget_seconds)
from gpuplatform.components.pools import PoolFacts, all_pool_facts
from gpuplatform.components.slo_alerts import workload_sli
from gpuplatform.components.validation import hpa_api_version, kubernetes_version
from gpuplatform.components.workload_manifests import activation_query, keda_query, workload_behavior
from gpuplatform.simulate import hpa as hpa_mod
from gpuplatform.simulate import promql
from gpuplatform.simulate.autoscaling import Trigger
from gpuplatform.simulate.bounds import lowest_replicas
from gpuplatform.simulate.cluster import NodeScaler, _seconds
from gpuplatform.simulate.scrape import SERIES_MODELS
from gpuplatform.simulate.service import (FULL_SCALE, LATENCY, TIME_UNITS, ServicePlan, metric_kind, not_modelled)


@dataclass(frozen=True)
class WarmSet:
    """A node pool's warm set (``nodePools[].warmSet``, components/warm_set.py) as a run needs it: the GPUs it
    holds, its sleep level, and per model of the set, its wake's parts (``seconds`` in all)."""
    gpus: int
    level: int
    wakes: dict


@dataclass(frozen=True)
class WorkloadSetup:
    """Everything about the stack one workload's loop needs, resolved once (:func:`build_setup`)."""
    # -- the workload
    name: str
    namespace: str
    image: str
    node_pool: str
    pre_pull: bool
    """The image is pre-pulled on the pool's nodes from their start (``prePull``)."""
    # -- its autoscaler
    autoscaler: str
    """``hpa`` or ``keda``."""
    keda: bool
    min_replicas: int
    max_replicas: int
    warm_replicas: int
    """Warm-capacity placeholders (``autoscaling.warmReplicas``)."""
    lowest_replicas: int
    """The fewest replicas the autoscaler may ever run, whatever ``minReplicas`` states (bounds.lowest_replicas)."""
    triggers: tuple
    """The autoscaling metrics as :class:`~gpuplatform.simulate.autoscaling.Trigger` (the first one first), then
    KEDA's activation trigger when there is one."""
    reads_gpu_metrics: bool
    """Some autoscaling metric comes from the GPU exporter (whose collection then has a phase of its own)."""
    hpa_spec: dict
    """The HPA's ``minReplicas``, ``maxReplicas`` and ``behavior`` as rendered."""
    cooldown_s: int
    """The ScaledObject's ``cooldownPeriod`` as rendered (model_startup.keda_cooldown_seconds)."""
    minor: int
    """The Kubernetes minor release whose HPA controller decides."""
    # -- the metric pipeline
    collect_s: int
    scrape_s: int
    sync_s: int
    window: str
    """The adapter rules' rate window."""
    prometheus: PrometheusVersion
    """The Prometheus release whose PromQL semantics evaluate the metric queries."""
    needed: dict
    """Series name -> (the trigger whose model produces it, its metric source): every series a query reads."""
    ingress_labels: tuple
    """Per ingress rule of an activation on ingress requests, the labels of its request counter."""
    # -- how a replica serves and starts
    plan: ServicePlan
    readings: dict
    """Per metric (autoscaling and SLO), how it reads a replica's state: its kind and its unit's factor."""
    replica_memory_mib: float
    """GPU memory of one replica (what the memory series report)."""
    full_scales: dict
    """Per utilization-like metric, its value on a saturated replica."""
    load_estimate: Optional[LoadEstimate]
    """The model's start-up estimate whose parts the capacity path shows (None when ``serviceModel`` states the
    load, or without a model)."""
    # -- the SLO
    slo_triggers: tuple
    """The SLO's objectives as the simulator reads them: (metric, below, source), judged by simulate.slo."""
    slo_compliance: Optional[float]
    """The SLO's ``compliance`` (None without an SLO)."""
    # -- the pool
    slots: int
    gpus_per_node: int
    units_per_replica: float
    unit: str
    min_nodes: int
    max_nodes: int
    provision_s: int
    autoscaled_pool: bool
    node_scaler: NodeScaler
    """The cluster's node autoscaler timing (the stack's ``cluster.nodeAutoscaling``)."""
    pod_placement: str
    """How the cluster's scheduler picks among the nodes a pod fits (``cluster.podPlacement``): binpack or spread."""
    warm_set: Optional[WarmSet]
    """The pool's warm set (None without one)."""
    # -- scale-in
    drain: Optional[DrainChain]
    """What the workload's pods do when a scale-in terminates them (components/drain.py): whether the requests in
    flight on the replica removed are finished or lost."""

    @property
    def major(self) -> int:
        return self.prometheus[0]

    @property
    def first(self) -> Trigger:
        """The first autoscaling metric: the one the HPA's figures and the service plan follow."""
        return self.triggers[0]


# ------------------------------------------------------------------------------------------------ the builder
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


def build_setup(cfg: PlatformConfig, workload: str) -> WorkloadSetup:
    """The setup of ``workload`` (an autoscaled workload of ``cfg``); a :class:`ConfigError` naming the config path
    for what the simulator cannot run."""
    from gpuplatform.components.inference_service import workload_context

    w = find_workload(cfg, workload)
    pool = next(p for p in cfg.node_pools if p.name == w.node_pool)
    facts = all_pool_facts(cfg)[w.node_pool]
    a = w.autoscaling
    iv = cfg.monitoring.intervals
    index = cfg.workloads.index(w)
    slots = facts.replicas_per_node(w.gpu)
    if slots <= 0:
        raise ConfigError([ConfigIssue(f"workloads[{index}].gpu",
                                       f"one replica does not fit on a node of pool {pool.name!r}")])
    namespace = cfg.workload_namespace(w)
    keda = a.autoscaler == "keda"
    ctx = workload_context(cfg, w, facts)
    triggers, needed = [], {}
    for k, t in enumerate(a.metrics):
        src = source_for(cfg, w, t.metric)
        if src is None:
            raise ConfigError([ConfigIssue(f"workloads[{index}].autoscaling",
                                           f"metric {t.metric!r} has no source on this stack")])
        why = not_modelled(t.metric, w.service_model.first_token_ms)
        if why:
            modelled = [m for m in METRICS if METRICS[m].source(src.exporter)
                        and not_modelled(m, w.service_model.first_token_ms) is None]
            raise ConfigError([ConfigIssue(
                f"workloads[{index}].autoscaling.metrics[{k}].metric",
                f"{t.metric!r} cannot be simulated: {why}; allowed for simulate: {', '.join(modelled)}")])
        query = keda_query(w, ctx, t.metric) if keda else None
        trigger = Trigger(t.metric, t.target, src, query)
        triggers.append(trigger)
        for name in promql.metric_names(query or render_for_pods(src, namespace, ["p"], iv.rule_window)):
            needed.setdefault(name, (trigger, src))
    ingress_labels: tuple = ()
    if keda and a.activation is not None:
        query = activation_query(w, ctx)
        triggers.append(Trigger("activation", a.activation.target, None, query, a.activation.activation_threshold))
        for name in promql.metric_names(query):
            needed.setdefault(name, (triggers[0], triggers[0].source))  # its model names its own exporter
        if a.activation.source == "ingress":
            from gpuplatform.components.workload_manifests import ingresses
            ingress_labels = tuple(tuple(sorted({"ingress": i["metadata"]["name"], "host": rule["host"],
                                                 "status": "200"}.items()))
                                   for i in ingresses(w, ctx) for rule in i["spec"]["rules"])
    slo_triggers = _slo_triggers(cfg, index, w)
    for trig in (*triggers[:1], *slo_triggers):  # the SLI's series (the first metric's judges a run without SLO)
        for name in promql.metric_names(workload_sli(trig.source, namespace, w.name)):
            needed.setdefault(name, (trig, trig.source))
    unknown = sorted(n for n in needed if n not in SERIES_MODELS)
    if unknown:
        raise ConfigError([ConfigIssue(f"workloads[{index}].autoscaling",
                                       f"the simulator has no model of series {', '.join(unknown)}")])
    itype = instance_type(pool.instance_types[0]) if pool.instance_types else None
    prov = provisioning(itype.family if itype else None)
    autoscaled_pool = bool(pool.autoscaling)
    units, unit = _replica_units(facts, w)
    spec = {"minReplicas": max(a.min_replicas, 1), "maxReplicas": a.max_replicas}
    if keda or hpa_api_version(cfg, w) != "autoscaling/v2beta1":
        spec["behavior"] = workload_behavior(w)
    version = kubernetes_version(cfg)
    memory = _replica_memory_mib(facts, w)
    plan = _plan(w, memory)
    _check_reachable(index, w, plan)
    est = load_estimate(w)
    return WorkloadSetup(
        name=w.name, namespace=namespace, image=w.image, node_pool=w.node_pool, pre_pull=bool(w.pre_pull),
        autoscaler=a.autoscaler, keda=keda, min_replicas=a.min_replicas, max_replicas=a.max_replicas,
        warm_replicas=w.warm_replicas, lowest_replicas=lowest_replicas(w), triggers=tuple(triggers),
        reads_gpu_metrics=any(METRICS[t.metric].category == "gpu" for t in a.metrics), hpa_spec=spec,
        cooldown_s=keda_cooldown_seconds(w), minor=version[1] if version else hpa_mod.LATEST_MINOR,
        collect_s=duration_seconds(iv.exporter_collect), scrape_s=duration_seconds(iv.scrape),
        sync_s=duration_seconds(iv.hpa_sync), window=iv.rule_window,
        prometheus=prometheus_version(cfg.monitoring.backend), needed=needed, ingress_labels=ingress_labels,
        plan=plan, readings=_readings(w, memory), replica_memory_mib=memory,
        full_scales={t.metric: _full_scale(t.metric, memory) for t in (*a.metrics, *slo_triggers)
                     if metric_kind(t.metric) == "utilization"},
        load_estimate=est if w.service_model.model_load_seconds is None else None,
        slo_triggers=slo_triggers, slo_compliance=w.slo.compliance if w.slo is not None else None,
        slots=slots, gpus_per_node=facts.gpus_per_node, units_per_replica=units, unit=unit,
        min_nodes=pool.min_nodes if autoscaled_pool else (pool.desired_nodes or 0), max_nodes=facts.max_nodes,
        provision_s=prov.seconds + (MIG_RECONFIGURE.seconds if facts.mode == "mig" else 0),
        autoscaled_pool=autoscaled_pool, node_scaler=node_scaler(cfg), pod_placement=cfg.cluster.pod_placement,
        warm_set=warm_set(cfg, pool),
        drain=drain_chain(w, version))


def _slo_triggers(cfg: PlatformConfig, index: int, w: Workload) -> tuple:
    """The SLO's objectives, each read like an autoscaling metric: its source, kind and unit."""
    if w.slo is None:
        return ()
    out = []
    for k, o in enumerate(w.slo.objectives):
        src = source_for(cfg, w, o.metric)
        why = "it has no source on this stack" if src is None else not_modelled(o.metric,
                                                                                w.service_model.first_token_ms)
        if why:
            raise ConfigError([ConfigIssue(f"workloads[{index}].slo.objectives[{k}].metric",
                                           f"{o.metric!r} cannot be simulated: {why}")])
        out.append(Trigger(o.metric, o.below, src, None))
    return tuple(out)


def _check_reachable(index: int, w: Workload, plan: ServicePlan) -> None:
    """A target the service model can never reach, or never exceed, would leave the simulation without a steady
    load to start from: say which."""
    first = w.autoscaling.metrics[0]
    sm = w.service_model
    if sm.first_token_ms is not None and sm.first_token_ms > sm.service_time_ms:
        raise ConfigError([ConfigIssue(f"workloads[{index}].serviceModel.firstTokenMs",
                                       f"'firstTokenMs' ({sm.first_token_ms:g}) must be <= 'serviceTimeMs' "
                                       f"({sm.service_time_ms:g}): the first token comes within the request's "
                                       "service")])
    where = f"workloads[{index}].autoscaling.metrics[0].target"
    if plan.kind == "running" and first.target >= plan.concurrency:
        raise ConfigError([ConfigIssue(where, f"{first.target:g} requests running is never exceeded by a replica "
                                       f"that runs at most serviceModel.concurrency ({plan.concurrency}) at once; "
                                       f"allowed: < {plan.concurrency}, or raise serviceModel.concurrency")])
    idle = plan.level(0.0) if plan.kind == "latency" else 0.0
    if plan.kind == "latency" and idle >= first.target:
        raise ConfigError([ConfigIssue(where, f"{first.target:g} is below what an idle replica reads ({idle:g}: "
                                       f"serviceModel.serviceTimeMs placed in the histogram's bucket); allowed: "
                                       f"> {idle:g}, or a shorter serviceModel.serviceTimeMs")])


def _readings(w: Workload, memory_mib: float) -> dict:
    """Per metric, how it reads a replica's state: its kind and its unit's factor (units per second for a queue
    time, the full scale of a utilization-like metric)."""
    out = {}
    for t in (*w.autoscaling.metrics, *(w.slo.objectives if w.slo is not None else ())):
        kind = metric_kind(t.metric)
        out[t.metric] = (kind, TIME_UNITS[METRICS[t.metric].unit] if kind in ("queue_time", "latency") else
                         _full_scale(t.metric, memory_mib) if kind == "utilization" else 1.0)
    return out


def node_scaler(cfg: PlatformConfig) -> NodeScaler:
    """The node autoscaler of the stack's cluster: ``cluster.nodeAutoscaling`` on a cluster the stack creates (what
    its ``cs.AutoscalingConfig`` sends), ACK's defaults on an adopted ACK cluster (its own settings are not read),
    and on a ``kubeconfig`` cluster its ``cluster.nodeAutoscaling`` (the timing of the cluster's own autoscaler,
    the upstream cluster-autoscaler's defaults unless stated)."""
    from gpuplatform.catalogs.node_autoscaling import SETTINGS

    c = cfg.cluster
    if c.kind == "ack-managed":
        a = c.node_autoscaling
        return NodeScaler(_seconds(a.scan_interval), _seconds(a.scale_down_unneeded_time),
                          _seconds(a.scale_down_delay_after_add), f"cluster.nodeAutoscaling ({a.scaler_type})")
    if c.kind == "ack-existing":
        return NodeScaler(_seconds(SETTINGS["scanInterval"].default),
                          _seconds(SETTINGS["scaleDownUnneededTime"].default),
                          _seconds(SETTINGS["scaleDownDelayAfterAdd"].default), "ACK's defaults (the adopted cluster's own settings are not read)")
    a = c.node_autoscaling
    stated = "node_autoscaling" in c.model_fields_set
    return NodeScaler(_seconds(a.scan_interval), _seconds(a.scale_down_unneeded_time),
                      _seconds(a.scale_down_delay_after_add),
                      "cluster.nodeAutoscaling (the cluster's own autoscaler)" if stated else
                      "the upstream cluster-autoscaler's defaults")


def warm_set(cfg: PlatformConfig, pool) -> Optional[WarmSet]:
    """The pool's warm set as the stack states it, each model's wake from the catalog's figures
    (components/warm_set.py ``sleeping_models``); None without one."""
    ws = pool.warm_set
    if ws is None:
        return None
    from gpuplatform.components.warm_set import sleeping_models

    wakes = {}
    for m in sleeping_models(cfg, pool):
        transfer = m.wake_seconds - servers.WAKE_OVERHEAD_SECONDS
        wakes[m.workload] = {"seconds": m.wake_seconds, "level": ws.sleep_level,
                             "copy" if ws.sleep_level == 1 else "reload": round(transfer, 3),
                             "overhead": servers.WAKE_OVERHEAD_SECONDS, "size_gib": m.size_gib,
                             **({"gib_per_second": servers.WAKE_HOST_TO_GPU_GIB_PER_SECOND}
                                if ws.sleep_level == 1 else {})}
    return WarmSet(ws.gpus, ws.sleep_level, wakes)


# ------------------------------------------------------------------------------------------------ the service plan
def _replica_memory_mib(facts: PoolFacts, w: Workload) -> float:
    per_gib, _ = facts.device_gpu_memory(w.gpu)
    devices = 1 if facts.mode == "cgpu" else (w.gpu.count or 1)
    return per_gib * 1024 * devices


def _full_scale(name: str, memory_mib: float) -> float:
    return FULL_SCALE.get(METRICS[name].unit) or memory_mib


def _replica_units(facts: PoolFacts, w: Workload) -> tuple[float, str]:
    if facts.mode == "cgpu":
        return float(w.gpu.memory_gib or 0), "GiB of GPU memory"
    resource = facts.resource_for(w.gpu)
    return float(w.gpu.count or 1), facts.unit_of(resource) if resource else facts.unit


def replica_memory_mib(cfg: PlatformConfig, w: Workload) -> float:
    """GPU memory of one replica: its devices (the cGPU share, MIG instances, whole GPUs; a card without a sourced
    nvidia-smi total at its datasheet size) as PoolFacts.device_gpu_memory counts one."""
    return _replica_memory_mib(all_pool_facts(cfg)[w.node_pool], w)


def full_scale(cfg: PlatformConfig, w: Workload, name: str) -> float:
    """The value of a utilization-like metric on a saturated replica (100 %, 1.0, or its GPU memory)."""
    return FULL_SCALE.get(METRICS[name].unit) or replica_memory_mib(cfg, w)


def replica_units(cfg: PlatformConfig, w: Workload) -> tuple[float, str]:
    """GPU units one replica holds, in the pool's own unit (GPU, MIG instance, GiB of cGPU memory)."""
    return _replica_units(all_pool_facts(cfg)[w.node_pool], w)


def service_plan(cfg: PlatformConfig, w: Workload) -> ServicePlan:
    """How one replica serves and starts (:func:`_service_plan`), with the load of a cache-filling replica when the
    weights are on a Fluid dataset cache."""
    return _plan(w, replica_memory_mib(cfg, w))


def _plan(w: Workload, memory_mib: float) -> ServicePlan:
    return dataclasses.replace(_service_plan(w, memory_mib), cache_fill_load_s=cache_fill_seconds(w),
                               compile_cold_extra_s=compile_cold_extra_seconds(w))


def compile_cold_extra_seconds(w: Workload) -> int:
    """What a replica that finds vLLM's shared compile cache empty adds to the load (components/model_startup.py
    ``server_start_seconds``); 0 without such a cache, or when ``serviceModel.modelLoadSeconds`` states the load."""
    est = load_estimate(w)
    if est is None or est.cold_overhead_seconds is None or w.service_model.model_load_seconds is not None:
        return 0
    return est.cold_overhead_seconds - est.overhead_seconds


def cache_fill_seconds(w: Workload) -> Optional[int]:
    """The expected load of the replica that fills a Fluid weights cache from OSS (catalogs/timeouts.py
    ``FLUID_FILL_RATE``); None without such a cache, or when ``serviceModel.modelLoadSeconds`` states the load."""
    est = load_estimate(w)
    if est is None or est.fill_expected_seconds is None or w.service_model.model_load_seconds is not None:
        return None
    return math.ceil(est.fill_expected_seconds)


def _service_plan(w: Workload, memory_mib: float) -> ServicePlan:
    sm = w.service_model
    first = w.autoscaling.metrics[0]
    kind = metric_kind(first.metric)
    load, pull, basis = startup_times(w)
    s = sm.service_time_ms / 1000.0
    c = sm.concurrency
    if kind in ("queue_time", "queue_length", "running", "latency"):
        unit = TIME_UNITS[METRICS[first.metric].unit] if kind in ("queue_time", "latency") else 1.0
        buckets = METRICS[first.metric].sources[0].buckets if kind == "latency" else ()
        extra = dict(time_unit=unit, concurrency=c, buckets=buckets, latency=LATENCY.get(first.metric, ""),
                     first_token_s=(sm.first_token_ms or 0.0) / 1000.0, startup_basis=basis)
        plan = ServicePlan(kind, 0.0, c / s, s, load, pull, **extra)
        # the steady load at which the metric reads its target (M/M/1: Wq = S rho / (1 - rho), Lq = rho^2 / (1 - rho))
        return ServicePlan(kind, plan.served_at_level(first.target), c / s, s, load, pull, **extra)
    full = _full_scale(first.metric, memory_mib)
    r = sm.requests_per_second_at_target
    return ServicePlan(kind, r, r * full / first.target, s, load, pull, full_scale=full,
                       concurrency=c, first_token_s=(sm.first_token_ms or 0.0) / 1000.0, startup_basis=basis)


def startup_times(w: Workload) -> tuple[int, int, str]:
    """(model load seconds, image pull seconds, where they come from) of one simulated replica: the stack's
    ``serviceModel`` figures when set; else the expected load of ``model`` (not the probe budget, which is the most
    a replica is allowed, not what it takes) and, for weights in the image, their pull; else the startup probe
    budget."""
    sm = w.service_model
    est = load_estimate(w)
    pull = sm.image_pull_seconds + (est.image_pull_extra_seconds if est is not None else 0)
    pull_basis = (f"image pull serviceModel.imagePullSeconds {sm.image_pull_seconds}s + "
                  f"{est.image_pull_extra_seconds}s for {est.size_gib:g} GiB of weights in the image"
                  if est is not None and est.image_pull_extra_seconds else "image pull serviceModel.imagePullSeconds")
    pull, on_demand = pull_seconds(w, pull)
    if on_demand:
        pull_basis += f" {on_demand}"
    if w.pre_pull:
        pull_basis += "; pre-pulled (prePull) on nodes from their start"
    if sm.model_load_seconds is not None:
        return sm.model_load_seconds, pull, f"model load serviceModel.modelLoadSeconds; {pull_basis}"
    if est is not None:
        return (math.ceil(est.expected_seconds), pull,
                f"model load expected from model: {est.describe()}; {pull_basis}")
    return (startup_budget_seconds(w), pull,
            f"model load = the startup probe budget (no model, no serviceModel.modelLoadSeconds); {pull_basis}")
