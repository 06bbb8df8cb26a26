"""Which series tell how many requests ARRIVED at a workload (its offered load), per metric source.

``gpuplatform simulate --trace FILE.json`` replays a Prometheus ``query_range`` export. A load trace is what
arrived, not what was served: completions are capped by capacity (an overloaded replica completes at most what
it serves, while its queue grows) and a backlog drains at capacity after the load fell. So the export names the
series a server counts requests with, raw, and the replay derives arrivals from them
(``gpuplatform.simulate.traces``):

* an **arrival counter** (incremented when a request comes in) gives arrivals directly;
* otherwise arrivals over an interval = **completions** (counters incremented when a request finishes) + the
  change of the **queue gauges** (requests taken in but not finished) over the same interval.

Each entry was read in the server's source or docs:

* Triton: ``nv_inference_request_success`` and ``nv_inference_request_failure`` count requests when they finish
  (triton-inference-server/core ``src/infer_stats.cc``, ``InferenceStatsAggregator::UpdateSuccess`` /
  ``UpdateFailure``; server ``docs/user_guide/metrics.md``, "Counts": per model, per request);
  ``nv_inference_pending_request_count`` is the gauge of requests received and not yet executing (same doc,
  "Pending Request Count"). No counter increments on arrival. A request the backend is executing is in neither,
  so arrivals read late by one execution (milliseconds to a batch).
* vLLM: ``vllm:request_success_total`` counts finished requests per ``finished_reason`` (stop, length, abort)
  (vllm-project/vllm ``vllm/v1/metrics/loggers.py``, ``counter_request_success``); the scheduler gauges
  ``vllm:num_requests_waiting`` and ``vllm:num_requests_running`` hold the rest. No arrival counter.
* SGLang: ``sglang:num_requests_total`` ("Number of requests processed") is incremented when a request finishes
  (sgl-project/sglang ``python/sglang/srt/metrics/collector.py``, ``TokenizerMetricsCollector``; moved to
  ``observability/metrics_collector.py`` in 0.5.10); ``sglang:num_queue_reqs`` and ``sglang:num_running_reqs``
  hold the rest.
* TGI: ``tgi_request_count`` is incremented first thing in every request handler (huggingface/
  text-generation-inference ``router/src/server.rs``: ``generate_internal``, ``vertex_compatibility``, the chat
  and completion routes): an arrival counter, read alone.
* ingress-nginx: ``nginx_ingress_controller_requests`` is counted from nginx's log phase (kubernetes/ingress-nginx
  ``rootfs/etc/nginx/lua/monitor.lua``, called from ``log_by_lua``; ``docs/user-guide/monitoring.md``): once per
  request when its response is done, 503s answered without a ready pod included. Read as arrivals: late by a
  request's duration, which for one inference request is far below a scrape interval; during an overload,
  requests still queued upstream are not in it yet.
* GPU exporters (dcgm-exporter, the ACK exporter): no request count at all. Use the ingress counter or the
  server's.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ArrivalSeries:
    source: str
    """A metric exporter of ``catalogs.metrics.EXPORTERS``, or ``ingress-nginx``."""
    arrival_counters: tuple[str, ...] = ()
    completion_counters: tuple[str, ...] = ()
    queue_gauges: tuple[str, ...] = ()
    workload_matchers: str = 'namespace="NS",pod=~"WORKLOAD-.*"'
    """PromQL label matchers that select one workload's series (NS and WORKLOAD are placeholders)."""

    @property
    def names(self) -> tuple[str, ...]:
        """The series the export reads: the arrival counters when the source has them (completions and queues
        would count the same requests twice), else completions and queue gauges."""
        return self.arrival_counters or (self.completion_counters + self.queue_gauges)

    def export_query(self, namespace: str = "NS", workload: str = "WORKLOAD") -> str:
        """The raw selector to export with ``query_range``: no ``sum``/``rate``, so every series keeps its
        ``__name__`` and its own counter resets, which the replay handles per series."""
        matchers = self.workload_matchers.replace("NS", namespace).replace("WORKLOAD", workload)
        names = "|".join(self.names)
        return f'{{__name__=~"{names}",{matchers}}}'


INGRESS_NGINX = "ingress-nginx"

ARRIVALS: dict[str, ArrivalSeries] = {a.source: a for a in (
    ArrivalSeries("triton", completion_counters=("nv_inference_request_success", "nv_inference_request_failure"),
                  queue_gauges=("nv_inference_pending_request_count",)),
    ArrivalSeries("vllm", completion_counters=("vllm:request_success_total",),
                  queue_gauges=("vllm:num_requests_waiting", "vllm:num_requests_running")),
    ArrivalSeries("sglang", completion_counters=("sglang:num_requests_total",),
                  queue_gauges=("sglang:num_queue_reqs", "sglang:num_running_reqs")),
    ArrivalSeries("tgi", arrival_counters=("tgi_request_count",)),
    ArrivalSeries(INGRESS_NGINX, arrival_counters=("nginx_ingress_controller_requests",),
                  workload_matchers='ingress="WORKLOAD"'),
)}

NO_REQUEST_COUNT = ("ack", "dcgm", "ack-legacy")
"""GPU exporters: they count no requests; a workload scaled on a GPU metric is exported from its ingress."""

MAX_REQUESTS_PER_SECOND = 100_000.0
"""Plausibility bound of a computed request-rate export (a series without ``__name__``): no GPU workload of this
platform serves that many requests a second, while the values of the usual mistakes exceed it (the adapter's
Triton queue-time query reads microseconds, millions under load; a counter exported without rate() holds every
request since the server started)."""


def kind_of(name: str) -> tuple[str, str] | None:
    """(source, ``arrival`` | ``completion`` | ``queue``) for a series name the export may hold, else None."""
    for a in ARRIVALS.values():
        for kind, names in (("arrival", a.arrival_counters), ("completion", a.completion_counters),
                            ("queue", a.queue_gauges)):
            if name in names:
                return a.source, kind
    return None
