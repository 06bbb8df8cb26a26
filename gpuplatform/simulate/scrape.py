"""The metric pipeline up to the TSDB: the GPU exporter's collection, the inference servers' counters, the
ingress controller's request counter, and Prometheus' scrape loop with its stale markers.

Sources:

* stale markers, Prometheus ``scrape/scrape.go``: a series present in a target's previous scrape and absent from
  this one gets a stale marker at this scrape's timestamp (``forEachStale``); when a target goes away
  (``endOfRunStaleness``) its series get a stale marker timestamped where the next scrape would have been, written
  a little over two scrape intervals after the last scrape (if the target has not come back). A stale series
  leaves instant queries at once instead of lingering for the 5-minute lookback;
* a GPU exporter (dcgm-exporter, the ACK exporter) labels a GPU's series with the pod the kubelet's pod-resources
  API assigns the device to: the series exist from container start and disappear with the pod. While a pod loads
  its model its GPU computes nothing: utilization reads 0 (memory metrics are approximated the same way);
* Triton creates a model's counters when the model is loaded, and vLLM's API server (which serves ``/metrics``)
  starts after its engine has loaded the model: a loading pod has no series of its server, so the HPA counts it
  as a pod without a metric (``replica_calculator.go``: missing);
* ingress-nginx counts every request to an Ingress host, including the 503s it answers while no pod is ready
  (``docs/user-guide/monitoring.md``), in one counter per Ingress and host that exists without any pod.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Callable, Optional

from gpuplatform.catalogs.metrics import (APP_SERVERS, EXPORTERS, SGLANG_TTFT_BUCKETS, TGI_DURATION_BUCKETS,
                                         VLLM_TTFT_BUCKETS)
from gpuplatform.simulate import promql
from gpuplatform.simulate.cluster import Pod, Pods
from gpuplatform.simulate.service import Served, ServicePlan

INGRESS = "ingress-nginx"


@dataclass
class SeriesContext:
    pod: Optional[Pod]
    t: float
    collected: Optional[dict]
    counters: dict
    served: Served
    plan: ServicePlan
    metric: str
    replica_memory_mib: float
    full_scale: float

    @property
    def x(self) -> float:
        """Requests in this pod's replica (its own queue: service.Queue)."""
        return self.served.of(self.pod.name).x if self.pod is not None else self.served.x

    def gpu_fraction(self) -> Optional[float]:
        """Fraction of full scale the exporter last collected for the pod (None before its first collection)."""
        if self.collected is None:
            return None
        return self.collected.get(self.metric, 0.0) / self.full_scale


@dataclass(frozen=True)
class SeriesModel:
    value: Callable[[SeriesContext], Optional[float]]
    exporter: Optional[str] = None
    """``None``: the GPU exporter of the metric source; else the server whose target exposes it."""
    buckets: tuple = ()
    """A histogram's ``_bucket`` series: its upper bounds (seconds, ``+Inf`` implied). The scrape writes one
    cumulative counter per bound, labelled ``le``, from what ``observe`` gave every completion."""
    observe: Optional[Callable[[ServicePlan, float], float]] = None
    """Histogram only: the value (seconds) one completion observes, from the plan and its queue wait."""


def _histogram(bounds: tuple, exporter: str, observe: Callable[[ServicePlan, float], float]) -> SeriesModel:
    return SeriesModel(lambda ctx: None, exporter, tuple(bounds), observe)


def _gpu(scale: Callable[[SeriesContext, float], float]) -> SeriesModel:
    def value(ctx: SeriesContext):
        f = ctx.gpu_fraction()
        return None if f is None else scale(ctx, f)
    return SeriesModel(value)


def _server(key: str) -> Callable[[SeriesContext], float]:
    return lambda ctx: ctx.counters[key]


SERIES_MODELS: dict[str, SeriesModel] = {
    # GPU exporters: utilization in percent or as a 0-1 ratio, memory in MiB (bytes for the 2020 exporter)
    # DCGM keeps GPU utilization as an integer percent (NVIDIA/DCGM dcgmlib/src/dcgm_fields.cpp: DCGM_FI_DEV_GPU_UTIL
    # is DCGM_FT_INT64, from NVML's integer nvmlUtilization_t.gpu): an idle GPU reads 0, never a residue of the
    # busy share, which a KEDA trigger at activationThreshold 0 would read as active
    "DCGM_FI_DEV_GPU_UTIL": _gpu(lambda c, f: round(f * 100)),
    "DCGM_CUSTOM_PROCESS_SM_UTIL": _gpu(lambda c, f: f * 100),
    "nvidia_gpu_duty_cycle": _gpu(lambda c, f: f * 100),
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": _gpu(lambda c, f: f),
    "DCGM_FI_DEV_FB_USED": _gpu(lambda c, f: f * c.replica_memory_mib),
    "DCGM_FI_DEV_FB_FREE": _gpu(lambda c, f: (1 - f) * c.replica_memory_mib),
    "DCGM_CUSTOM_PROCESS_MEM_USED": _gpu(lambda c, f: f * c.replica_memory_mib),
    "DCGM_CUSTOM_CONTAINER_MEM_ALLOCATED": _gpu(lambda c, f: c.replica_memory_mib),
    "nvidia_gpu_memory_used_bytes": _gpu(lambda c, f: f * c.replica_memory_mib * 1024 * 1024),
    # Triton: cumulative counters since the model loaded, and the pending-request gauge
    "nv_inference_queue_duration_us": SeriesModel(_server("queue_us"), "triton"),
    "nv_inference_request_success": SeriesModel(_server("success"), "triton"),
    "nv_inference_count": SeriesModel(_server("success"), "triton"),
    "nv_inference_exec_count": SeriesModel(_server("success"), "triton"),
    "nv_inference_request_failure": SeriesModel(lambda ctx: 0.0, "triton"),
    "nv_inference_request_duration_us": SeriesModel(_server("request_us"), "triton"),
    "nv_inference_compute_infer_duration_us": SeriesModel(_server("compute_us"), "triton"),
    "nv_inference_pending_request_count": SeriesModel(lambda ctx: _lq(ctx), "triton"),
    # vLLM gauges
    "vllm:num_requests_waiting": SeriesModel(lambda ctx: _lq(ctx), "vllm"),
    "vllm:num_requests_running": SeriesModel(lambda ctx: ctx.plan.running(ctx.x), "vllm"),
    # TGI's router queue and SGLang's waiting queue: requests not yet in the running batch
    "tgi_queue_size": SeriesModel(lambda ctx: _lq(ctx), "tgi"),
    "sglang:num_queue_reqs": SeriesModel(lambda ctx: _lq(ctx), "sglang"),
    # their running batches (sglang:num_running_reqs; tgi_batch_current_size, which TGI sets per batch iteration)
    "sglang:num_running_reqs": SeriesModel(lambda ctx: ctx.plan.running(ctx.x), "sglang"),
    "tgi_batch_current_size": SeriesModel(lambda ctx: ctx.plan.running(ctx.x), "tgi"),
    # TGI's end-to-end request duration, observed when a request completes (router/src/server.rs): its queue wait
    # plus its service, in TGI's own buckets
    "tgi_request_duration_bucket": _histogram(TGI_DURATION_BUCKETS, "tgi", lambda plan, wq: wq + plan.service_time_s),
    # time to first token (vllm/v1/metrics/loggers.py, sglang collector.py: observed at a request's first token):
    # its queue wait plus its prefill, in the server's own buckets
    "vllm:time_to_first_token_seconds_bucket": _histogram(VLLM_TTFT_BUCKETS, "vllm",
                                                          lambda plan, wq: wq + plan.first_token_s),
    "sglang:time_to_first_token_seconds_bucket": _histogram(SGLANG_TTFT_BUCKETS, "sglang",
                                                            lambda plan, wq: wq + plan.first_token_s),
    # ingress-nginx: requests per Ingress and host, whether a pod answered or not
    "nginx_ingress_controller_requests": SeriesModel(_server("ingress_requests"), INGRESS),
}


def _lq(ctx: SeriesContext) -> float:
    return ctx.plan.waiting(ctx.x)


def pod_labels(exporter: str, pod: Pod, namespace: str) -> dict:
    lab = EXPORTERS[exporter]
    out = {lab.namespace: namespace, lab.pod: pod.name}
    if lab.node:
        out[lab.node] = pod.node.name if pod.node else ""
    if exporter in APP_SERVERS:
        out.update({"container": "server", "job": f"{namespace}/{pod.name.rsplit('-', 1)[0]}",
                    "instance": f"{pod.name}:metrics"})
        if exporter == "triton":
            out.update({"model": "model", "version": "1"})
    else:
        out.update({"gpu": "0", "UUID": f"GPU-{pod.name}"})
    return out


@dataclass
class Scraper:
    """Collection and scrape, once per second: GPU exporter collection every ``collect_s`` (phase
    ``collect_phase``), Prometheus' scrape every ``scrape_s`` (phase ``scrape_phase``)."""

    storage: promql.Storage
    needed: dict
    """series name -> (metric target, metric source) whose query reads it."""
    plan: ServicePlan
    namespace: str
    collect_s: int
    scrape_s: int
    collect_phase: int
    scrape_phase: int
    replica_memory_mib: float
    full_scales: dict
    """metric -> its full scale (utilization-like metrics)."""
    ingress_labels: tuple = ()
    """Label sets of the ingress-nginx request series that route to the workload (one per Ingress host)."""
    pod_phases: tuple = ()
    """Per pod, in the order the run creates them, the phase of its own target's scrape. Prometheus scrapes each
    target at an offset of its own within the interval, a hash of the target's labels
    (prometheus/prometheus ``scrape/target.go`` ``Target.offset``: ``(t.hash() ^ offsetSeed) % interval`` from a
    base pinned to absolute time), so the pods' samples land at different seconds. Pods past the tuple, and every
    pod when it is empty, are scraped at ``scrape_phase``."""
    collected: dict = field(default_factory=dict)
    counters: dict = field(default_factory=dict)
    _gpu_written: dict = field(default_factory=dict)
    """Series key -> the pod it belongs to, as last scraped."""
    _pod_scraped: dict = field(default_factory=dict)
    """Pod -> the last scrape of its target."""
    _app_written: dict = field(default_factory=dict)
    _pending_stale: list = field(default_factory=list)
    _last_scrape: float = -1e9
    _ingress_total: float = 0.0

    def collect(self, pods: Pods, t: float, levels: dict, served: Optional[Served] = None) -> None:
        """The GPU exporter's collection, if due: the GPU activity of the second before, each pod's own (the
        utilization of its replica's slots in ``served``; without it, ``levels`` for every pod)."""
        if self.collect_s and (int(t) - self.collect_phase) % self.collect_s == 0:
            self.collected = {p.name: ({m: self._own(m, lv, served, p) for m, lv in levels.items()}
                                       if p.is_ready(t - 1) else dict.fromkeys(levels, 0.0))
                              for p in pods.running(t - 1)}

    def _own(self, metric: str, level: float, served: Optional[Served], pod: Pod) -> float:
        """A utilization-like metric of one pod: its full scale times its own replica's utilization."""
        if served is None or metric not in self.full_scales or not served.replicas:
            return level
        return self.full_scales[metric] * served.of(pod.name).rho

    def count(self, pods: Pods, t: float, served: Served, demand: float) -> None:
        """One second of service into the servers' counters and the ingress controller's request counter. Each
        completion adds the queue time it had (first in, first out: ``Served.queued``), as Triton adds a request's
        queue duration when the request ends (triton-inference-server/core src/infer_request.cc,
        ReportStatisticsWithDuration at request_end_ns -> InferenceStatsAggregator::UpdateSuccessWithDuration) and
        the latency histograms observe it at completion or first token."""
        ready = pods.ready(t)
        histograms = [(name, SERIES_MODELS[name]) for name in self.needed if SERIES_MODELS[name].buckets]
        for p in ready:
            own = served.of(p.name)  # each server counts its own completions and the waits they had
            per_pod, wq = own.served, own.queued_s
            cnt = self.counters.setdefault(p.name, {"success": 0.0, "queue_us": 0.0, "request_us": 0.0,
                                                    "compute_us": 0.0})
            cnt["success"] += per_pod
            cnt["queue_us"] += per_pod * wq * 1e6
            cnt["compute_us"] += per_pod * self.plan.service_time_s * 1e6
            cnt["request_us"] += per_pod * (wq + self.plan.service_time_s) * 1e6
            for name, model in histograms:
                # observations per bucket (the last one +Inf); the scrape makes them cumulative
                per_bucket = cnt.setdefault(name, [0.0] * (len(model.buckets) + 1))
                for share, wait in own.queued:
                    per_bucket[bisect.bisect_left(model.buckets, model.observe(self.plan, wait))] += per_pod * share
        self._ingress_total += demand

    def scrape(self, pods: Pods, t: float, served: Served) -> None:
        """Stale markers that are due, then the scrape if it is due: what the targets hold at the start of second
        ``t`` (counters and collections of the seconds before, gauges of the last second)."""
        self._deletions(pods)
        due = [m for m in self._pending_stale if m[0] <= t]
        for visible_at, name, labels, stamp in due:
            self.storage.mark_stale(name, labels, stamp)
        self._pending_stale = [m for m in self._pending_stale if m[0] > t]
        on_phase = (int(t) - self.scrape_phase) % self.scrape_s == 0
        due_pods = [p for p in pods.pods if self._due(p.name, t)] if self.pod_phases else \
            (pods.pods if on_phase else [])
        scraped = {p.name for p in due_pods} | {pod for pod in set(self._gpu_written.values())
                                                if self._due(pod, t)}
        if not on_phase and not scraped:
            return
        if on_phase:
            self._last_scrape = t
        for pod in due_pods:
            self._pod_scraped[pod.name] = t
        gpu_now = {}
        for name, (target, src) in self.needed.items():
            model = SERIES_MODELS[name]
            exporter = src.exporter if model.exporter is None else model.exporter
            if exporter == INGRESS:
                if on_phase:
                    for labels in self.ingress_labels:
                        self.storage.add(name, dict(labels), t,
                                         self._ingress_total / max(len(self.ingress_labels), 1))
                continue
            app = exporter in APP_SERVERS
            for pod in due_pods:
                if app and pod.name not in self.counters:
                    continue  # the server exposes no series of the model before it is loaded
                if not app and pod.name not in self.collected:
                    continue
                if model.buckets:
                    self._scrape_histogram(name, model, pod, exporter, t)
                    continue
                ctx = SeriesContext(pod, t, self.collected.get(pod.name), self.counters.get(pod.name, {}), served,
                                    self.plan, target.metric, self.replica_memory_mib,
                                    self.full_scales.get(target.metric, 1.0))
                value = model.value(ctx)
                if value is None:
                    continue
                labels = pod_labels(exporter, pod, self.namespace)
                self.storage.add(name, labels, t, value)
                key = (name, tuple(sorted(labels.items())))
                if app:
                    self._app_written.setdefault(pod.name, set()).add(key)
                else:
                    gpu_now[key] = pod.name
        # the exporter's target stays; a series it no longer exposes is stale at this scrape of it
        for key, pod in list(self._gpu_written.items()):
            if pod in scraped and key not in gpu_now:
                self.storage.mark_stale(key[0], dict(key[1]), t)
                del self._gpu_written[key]
        self._gpu_written.update(gpu_now)

    def _due(self, pod: str, t: float) -> bool:
        """Is the target of ``pod`` scraped at second ``t``?"""
        return (int(t) - self._phase_of(pod)) % self.scrape_s == 0

    def _phase_of(self, pod: str) -> int:
        index = int(pod.rsplit("-", 1)[1]) - 1 if pod.rsplit("-", 1)[-1].isdigit() else -1
        return self.pod_phases[index] if 0 <= index < len(self.pod_phases) else self.scrape_phase

    def _scrape_histogram(self, name: str, model: SeriesModel, pod: Pod, exporter: str, t: float) -> None:
        """A server's histogram: one cumulative counter per bucket bound (``le``) and ``+Inf``, from zero when the
        server started; every bucket exists from the start, as client libraries expose them."""
        per_bucket = self.counters[pod.name].get(name) or [0.0] * (len(model.buckets) + 1)
        total = 0.0
        for bound, n in zip([str(b) for b in model.buckets] + ["+Inf"], per_bucket):
            total += n
            labels = {**pod_labels(exporter, pod, self.namespace), "le": bound}
            self.storage.add(name, labels, t, total)
            self._app_written.setdefault(pod.name, set()).add((name, tuple(sorted(labels.items()))))

    def _deletions(self, pods: Pods) -> None:
        """A deleted pod's server target goes away: endOfRunStaleness."""
        for deleted_at, pod in pods.deleted:
            written = self._app_written.pop(pod.name, set())
            self.counters.pop(pod.name, None)
            last = self._pod_scraped.pop(pod.name, self._last_scrape)
            if not written:
                continue
            stamp = last + self.scrape_s
            visible = last + 2 * self.scrape_s + self.scrape_s / 10
            for name, labels in written:
                self._pending_stale.append((max(visible, deleted_at), name, dict(labels), stamp))
        pods.deleted.clear()
