"""GPU and inference-server metrics: logical name -> exporter series, labels, adapter rule, HPA form, validity.

A workload's autoscaling names a *logical* metric (``gpu_sm_util``). The stack's GPU exporter (or, for app
metrics, the inference server) picks the :class:`MetricSource`, which fixes the Prometheus series, the labels
that identify the pod, the adapter rule that serves it and the name the custom metrics API serves
(``api_name``). HPAs are generated with that ``api_name`` and rules are generated from the same source, so an
HPA can never ask for a name no rule serves (the NVIDIA article's HPA asked for ``avg_time_queue_ms`` while
its adapter served ``avg_time_queue_us``).

Sources: ACK guide "Enable auto scaling based on GPU metrics" (five DCGM rules, ACK exporter labels
``NamespaceName``/``PodName``/``NodeName``); the 2020 ACK guide (``duty_cycle_current``); NVIDIA dcgm-exporter
(``DCGM_FI_DEV_GPU_UTIL`` is not reported for MIG instances, use ``DCGM_FI_PROF_GR_ENGINE_ACTIVE``); Triton
metrics docs and its k8s-onprem adapter rule; vLLM metrics.
"""
from __future__ import annotations

import bisect
import math
import re
from dataclasses import dataclass, replace

from gpuplatform.catalogs.gpus import close_matches


@dataclass(frozen=True)
class ExporterLabels:
    namespace: str
    pod: str
    node: str | None


EXPORTERS: dict[str, ExporterLabels] = {
    # ACK GPU exporter (ARMS "GPU monitoring 2.0", DCGM compatible)
    "ack": ExporterLabels("NamespaceName", "PodName", "NodeName"),
    # NVIDIA dcgm-exporter scraped with honorLabels: true, so the workload's namespace/pod labels win over the
    # exporter pod's target labels (with honorLabels: false they would arrive as exported_namespace/exported_pod)
    "dcgm": ExporterLabels("namespace", "pod", "Hostname"),
    # 2020 ACK gpu_exporter shipped with ack-prometheus-operator
    "ack-legacy": ExporterLabels("namespace_name", "pod_name", "node_name"),
    # inference servers scraped by our PodMonitor: Prometheus target labels
    "triton": ExporterLabels("namespace", "pod", None),
    "vllm": ExporterLabels("namespace", "pod", None),
    "tgi": ExporterLabels("namespace", "pod", None),
    "sglang": ExporterLabels("namespace", "pod", None),
}
GPU_EXPORTERS = ("ack", "dcgm", "ack-legacy")
APP_SERVERS = ("triton", "vllm", "tgi", "sglang")

# DCGM device fields (dcgm-exporter and the DCGM-compatible ACK exporter share these names)
DCGM_GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
DCGM_FB_USED = "DCGM_FI_DEV_FB_USED"
DCGM_FB_FREE = "DCGM_FI_DEV_FB_FREE"
DCGM_XID_ERRORS = "DCGM_FI_DEV_XID_ERRORS"
DCGM_GR_ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"

WINDOW = "[[window]]"
"""Placeholder for the stack's rule window in a metricsQuery (PromQL and Go templates never use it)."""


@dataclass(frozen=True)
class Unit:
    name: str
    dimension: str
    """Units of one dimension convert into each other: ``fraction``, ``memory``, ``time``, ``count``."""
    scale: float
    """One of this unit in the dimension's base unit (ratio, byte, second, one)."""
    description: str
    maximum: float | None = None
    """Largest value a metric in this unit can take (100 percent, a ratio of 1); none when unbounded."""
    symbol: str = ""
    """How a value is written next to its number (``60 %``, ``3500 µs``); the name when empty."""

    @property
    def shown(self) -> str:
        return self.symbol or self.name


UNITS: dict[str, Unit] = {u.name: u for u in (
    Unit("percent", "fraction", 0.01, "percent, 0-100", 100.0, "%"),
    Unit("ratio", "fraction", 1.0, "a ratio, 0-1", 1.0),
    Unit("bytes", "memory", 1.0, "bytes", symbol="B"),
    Unit("MiB", "memory", float(2 ** 20), "MiB (2^20 bytes)"),
    Unit("s", "time", 1.0, "seconds"),
    Unit("us", "time", 1e-6, "microseconds", symbol="µs"),
    Unit("ms", "time", 1e-3, "milliseconds"),
    Unit("requests", "count", 1.0, "requests"),
    Unit("celsius", "temperature", 1.0, "degrees Celsius", symbol="°C"),
    Unit("mW", "power", 1e-3, "milliwatts"),
)}


def convert_query(query: str, from_unit: str, to_unit: str) -> str:
    """``query`` (values in ``from_unit``) rescaled to ``to_unit``; labels are kept, since a scalar operation on an
    instant vector keeps every series' labels (Prometheus docs, querying/operators: arithmetic binary operators)."""
    src, dst = UNITS[from_unit], UNITS[to_unit]
    if src.dimension != dst.dimension:
        raise ValueError(f"cannot convert {from_unit} to {to_unit}")
    if src.scale == dst.scale:
        return query
    down, up = dst.scale / src.scale, src.scale / dst.scale
    if down > 1 and abs(down - round(down)) < 1e-9 * down:
        return f"({query}) / {round(down)}"
    if up > 1 and abs(up - round(up)) < 1e-9 * up:
        return f"({query}) * {round(up)}"
    return f"({query}) * {up!r}"


_VERSION = r"v?(\d+)\.(\d+)(?:\.(\d+))?(?:\.post(\d+))?"
IMAGE_VERSION = re.compile(r":" + _VERSION + r"(?:[-+][^:/@]*)?$")
"""A tag that is a release, with an optional build suffix after ``-`` or ``+``: ``v0.9.2``, ``0.10``,
``v0.11.0-cu128``, and PEP 440 post releases, which SGLang tags its images with (``v0.4.4.post4-cu124``: PyPI
sglang==0.4.4.post4 in a CUDA 12.4 image)."""


def _version(m: re.Match) -> tuple[int, ...]:
    """(major, minor, patch) for a release, (major, minor, patch, N) for its ``.postN``: tuples compare so that a
    post release sorts after its release and before the next one (PEP 440: 0.4.4 < 0.4.4.post0 < 0.4.4.post4 <
    0.4.5), since a tuple sorts after its own prefix."""
    major, minor, patch, post = m.groups()
    return (int(major), int(minor), int(patch or 0)) + (() if post is None else (int(post),))


def image_version(image: str) -> tuple[int, ...] | None:
    """The release an image tag pins (``vllm/vllm-openai:v0.9.2`` -> (0, 9, 2), ``lmsysorg/sglang:v0.4.4.post4-cu124``
    -> (0, 4, 4, 4)). A reference pinned by digest as well (``name:tag@sha256:...``) is read by its tag: the digest
    fixes the bytes the node pulls, the tag still names the release they were built from (a registry ignores the
    tag of such a reference, the reader does not). None for a digest without a tag (``name@sha256:...``) or a tag
    that is not a version (``latest``), whose server version nothing here can tell."""
    reference = image.split("@", 1)[0]
    m = IMAGE_VERSION.search(reference.rsplit("/", 1)[-1])
    return _version(m) if m else None


def pins_digest_only(image: str) -> bool:
    """``name@sha256:...`` with no tag before the digest: the image names no release at all."""
    reference, at, _digest = image.partition("@")
    return bool(at) and ":" not in reference.rsplit("/", 1)[-1]


def parse_version(text: str) -> tuple[int, ...]:
    """A catalog version (``0.9.2``, ``0.4.3.post3``) as :func:`image_version` gives an image's, to compare them."""
    m = re.fullmatch(_VERSION, text)
    if m is None:
        raise ValueError(f"{text!r} is not a version; allowed: MAJOR.MINOR[.PATCH][.postN]")
    return _version(m)


def version_text(version: tuple[int, ...]) -> str:
    """``(0, 4, 4, 4)`` -> ``0.4.4.post4``: a version as the server's releases write it."""
    text = ".".join(map(str, version[:3]))
    return text + (f".post{version[3]}" if len(version) > 3 else "")


@dataclass(frozen=True)
class MetricSource:
    exporter: str
    series: str
    api_name: str
    scope: str
    """``pod``: one value per pod (usable as an HPA ``Pods`` metric); ``node``: one value per node only."""
    query: str
    """metricsQuery template over the exporter's series, in the exporter's ``unit``."""
    unit: str
    """Unit the exporter reports the series in (a key of :data:`UNITS`)."""
    served_unit: str = ""
    """Unit the adapter serves: the metric's catalog unit (set by :class:`MetricDef`)."""
    aggregation_note: str = ""
    kind: str = "gauge"
    """Prometheus type of the exported series: ``gauge``, ``counter`` or ``histogram`` (then ``series`` is its
    ``_bucket`` series and the query a ``histogram_quantile`` over ``rate`` of the buckets). A counter's and a
    histogram's query reads the series only through ``rate``/``increase`` over the rule window (checked when the
    source is built: :func:`_query_problem`)."""
    since: str = ""
    """First server version known to export the metric (under ``series`` or, for a renamed series,
    ``previous_series``), as far as its docs or source show; empty for GPU exporters, whose names do not follow a
    server version."""
    previous_series: str = ""
    """The name the server exported the series under before a rename; empty when it was never renamed. The adapter
    rule reads both names (per pod, the current one wins), so one rule serves pods on either side of the rename."""
    renamed_in: str = ""
    """First server version that exports ``series`` (the new name); older versions export ``previous_series``.
    Empty when the release of the rename is not known: the current name is then assumed."""
    buckets: tuple[float, ...] = ()
    """A histogram's bucket upper bounds as the server exports them by default, in the source's ``unit`` (``+Inf``
    implied); the simulator observes into them. Empty for other kinds, or when not recorded."""

    def __post_init__(self) -> None:
        problem = _query_problem(self)
        if problem:
            raise ValueError(f"metric source {self.api_name} ({self.exporter}): {problem}")

    @property
    def labels(self) -> ExporterLabels:
        return EXPORTERS[self.exporter]

    @property
    def names(self) -> tuple[str, ...]:
        """Every series name the rule reads, sorted (the rule is the same whichever name a workload's version
        exports): the series, and the name before a rename."""
        return tuple(sorted({self.series, self.previous_series} - {""}))

    def series_for(self, version: tuple[int, ...] | None) -> str:
        """The name a server of ``version`` exports (None: an unpinned image, assumed current)."""
        if self.previous_series and self.renamed_in and version is not None and version < parse_version(
                self.renamed_in):
            return self.previous_series
        return self.series

    def for_version(self, version: tuple[int, ...] | None) -> "MetricSource":
        """This source as a server of ``version`` exports it: ``series`` is the name that version uses, ``names``
        still lists both (the rule does not depend on the version)."""
        picked = self.series_for(version)
        if picked == self.series:
            return self
        return replace(self, series=picked, previous_series=self.series)

    @property
    def metrics_query(self) -> str:
        """The rule's metricsQuery: the exporter's query, converted to the catalog unit when they differ (the 2020
        exporter reports GPU memory in bytes, the catalog and every other exporter in MiB)."""
        return convert_query(self.query, self.unit, self.served_unit or self.unit)


KINDS = ("gauge", "counter", "histogram")


def _query_problem(source: MetricSource) -> str:
    """What ``kind`` and a rename demand of a source's query, or "" when it meets them:

    * a counter (and a histogram's ``_bucket`` counters) only makes sense as a rate over the rule window: its raw
      value is everything since the server started, and delta() goes negative across a restart (Prometheus docs,
      querying/functions: delta "should only be used with gauges"). So every read of the series is the argument of
      ``rate(`` or ``increase(``, and the query is windowed;
    * a renamed series is read under both names, which the query names itself: ``<<.Series>>`` is whichever name
      the adapter discovered last (components/adapter_rules.py ``_name_regex``), so it would read one name for
      every pod."""
    if source.kind not in KINDS:
        return f"kind {source.kind!r} is not a Prometheus metric type the catalog reads; allowed: {', '.join(KINDS)}"
    query = source.query
    if source.previous_series:
        if "<<.Series>>" in query:
            return (f"{query!r} reads <<.Series>>, one name of the renamed series {' / '.join(source.names)}; "
                    "allowed: a query naming both (per pod the current name, or on(pod) the previous one)")
        missing = [n for n in source.names if f"{n}{{" not in query]
        if missing:
            return f"{query!r} does not read {', '.join(missing)}; allowed: a query naming every name of the series"
    if source.kind in ("counter", "histogram"):
        selectors = [re.escape(n) for n in source.names] + [re.escape("<<.Series>>")]
        raw = re.findall(rf"(?<!rate\()(?<!increase\()(?:{'|'.join(selectors)})\{{", query)
        if raw or WINDOW not in query:
            return (f"{query!r} reads the {source.kind} {source.series} "
                    f"{'outside rate()/increase()' if raw else 'without the rule window'}; allowed: "
                    f"rate(...[{WINDOW}]) or increase(...[{WINDOW}]) of it (a counter's raw value is its total "
                    "since the server started, and delta() goes negative when it restarts)")
    return ""


@dataclass(frozen=True)
class MetricDef:
    name: str
    description: str
    unit: str
    """Unit of the values the custom metrics API serves and of the targets a stack writes (a key of UNITS)."""
    category: str
    """``gpu`` (from a GPU exporter) or ``app`` (from the inference server itself)."""
    sharing_modes: frozenset[str]
    sources: tuple[MetricSource, ...]
    scale_down_reliable: bool = True
    """False for GPU memory: servers that pre-allocate memory never give it back, so the HPA never scales down."""
    hpa_metric_type: str = "Pods"
    hpa_target_type: str = "AverageValue"
    scaling: str = ""
    """What the value says about load, for someone picking an autoscaling target."""

    def __post_init__(self) -> None:
        # every source serves the metric's unit; a source in another unit of the same dimension is converted
        for s in self.sources:
            convert_query("x", s.unit, self.unit)  # raises for unknown or incompatible units
        object.__setattr__(self, "sources", tuple(replace(s, served_unit=self.unit) for s in self.sources))

    def source(self, exporter: str) -> MetricSource | None:
        return next((s for s in self.sources if s.exporter == exporter), None)

    @property
    def exporters(self) -> list[str]:
        return [s.exporter for s in self.sources]

    @property
    def unit_info(self) -> Unit:
        return UNITS[self.unit]


# Triton average queue time per request, per pod, over the rule window.
#
# Both series are counters, not gauges (triton-inference-server/core src/metrics.cc (r26.06) L78-83 BuildCounter
# nv_inference_queue_duration_us, "Cumulative inference queuing duration in microseconds", and L52-55 BuildCounter
# nv_inference_request_success; server docs/user_guide/metrics.md L190-205; --metrics-config
# counter_latencies=false turns the queue counter off), so the source's kind is "counter" and the rule reads both
# through increase() (MetricSource checks that a counter is never read raw or through delta()).
# Triton adds a request's queue time to nv_inference_queue_duration_us and 1 to nv_inference_request_success in
# the same step, only for successful requests (triton-inference-server/core src/infer_stats.cc,
# InferenceStatsAggregator::UpdateSuccessWithDuration; docs/user_guide/metrics.md: both are per-model counters
# updated per request). So over one window, per pod: sum of queue-time increases / sum of success increases.
# * increase(), not delta(): both are counters, and increase() corrects for resets when Triton restarts or a
#   model is reloaded; delta() is for gauges and goes negative across a reset (Prometheus docs,
#   querying/functions: delta "should only be used with gauges", increase "breaks in monotonicity ... are
#   automatically adjusted for"). Both increases are extrapolated over the same samples, so the ratio is exact.
# * sum by pod before dividing weights the models by their requests: an idle model adds 0 / 0 to nothing, where
#   avg() of per-model ratios halved a busy pod's value.
# * a pod that served no request in the window has queued nothing: it reports 0 (the "or" arm), never 0 / 0 =
#   NaN and never a missing value. The HPA reads an idle pod as idle, so an idle service scales down to
#   minReplicas; were the value absent for every pod, the HPA could not compute the metric and would hold its
#   replica count (kubernetes.io, "Horizontal Pod Autoscaling", algorithm details: missing metrics).
# * no "1 +" in the denominator: it biased the value low at low request rates (1 request in the window gave
#   half its queue time).
TRITON_QUEUE_US = "nv_inference_queue_duration_us"
TRITON_SUCCESS = "nv_inference_request_success"
_TRITON_QUEUED = f"sum by (<<.GroupBy>>) (increase({TRITON_QUEUE_US}{{<<.LabelMatchers>>}}[{WINDOW}]))"
_TRITON_SERVED = f"sum by (<<.GroupBy>>) (increase({TRITON_SUCCESS}{{<<.LabelMatchers>>}}[{WINDOW}]))"
TRITON_QUEUE_PER_REQUEST = f"({_TRITON_QUEUED} / ({_TRITON_SERVED} > 0)) or ({_TRITON_SERVED} == 0)"

# vLLM's scheduler gauges and request histograms (vllm/v1/metrics/loggers.py PrometheusStatLogger; the V0 engine's
# vllm/engine/metrics.py before it). Each first release below is the first PyPI wheel that has the name, the
# release before it checked without it:
# * vllm:num_requests_running / vllm:num_requests_waiting: gauges of the scheduler state, one series per engine
#   (labels model_name, engine). First in v0.2.3, with the /metrics route on the API port (vllm==0.2.3
#   vllm/engine/metrics.py:14 and :18, 'gauge_scheduler_waiting = Gauge("vllm:num_requests_waiting",';
#   vllm/entrypoints/openai/api_server.py:89); absent in 0.2.2. Still exported (vllm==0.33.0
#   vllm/v1/metrics/loggers.py:528, :538).
VLLM_SCHEDULER_GAUGES_SINCE = "0.2.3"
# * KV-cache usage, a 0-1 gauge, exported as vllm:gpu_cache_usage_perc from v0.2.3 (vllm==0.2.3
#   vllm/engine/metrics.py, next to the scheduler gauges) and renamed vllm:kv_cache_usage_perc in v0.9.2, by the V1
#   engine only (vllm==0.9.2 vllm/v1/metrics/loggers.py:217, 'name="vllm:kv_cache_usage_perc"'; absent in 0.9.0
#   and 0.9.1). 0.9.2 still exports the old name, deprecated (vllm==0.9.2 vllm/v1/metrics/loggers.py:185-195,
#   "# Deprecated in 0.9.2 - Renamed as vllm:kv_cache_usage_perc"; vLLM issue #18354), up to 0.10.2; 0.11.0 hides
#   it unless --show-hidden-metrics-for-version=0.10 (vllm==0.11.0 vllm/v1/metrics/loggers.py:208-220) and 0.12.0
#   removed it (vLLM PR #29330). The V0 engine (vllm/engine/metrics.py, VLLM_USE_V1=0) never had the new name. So
#   the rule reads both names per pod, the new one winning (:func:`_renamed_gauge`): a 0.9.0/0.9.1 image or a V0
#   engine is read under the old name, 0.12 and later under the new one, and 0.9.2-0.11, which export both, once.
VLLM_KV_CACHE_USAGE = "vllm:kv_cache_usage_perc"
VLLM_GPU_CACHE_USAGE_DEPRECATED = "vllm:gpu_cache_usage_perc"
VLLM_KV_CACHE_USAGE_SINCE = "0.2.3"
"""First release of the old name, vllm:gpu_cache_usage_perc (the metric under either name)."""
VLLM_KV_CACHE_USAGE_RENAMED_IN = "0.9.2"
# * vllm:time_to_first_token_seconds and vllm:time_per_output_token_seconds: histograms (seconds), first in v0.3.1
#   (vllm==0.3.1 vllm/engine/metrics.py:48 '"vllm:time_to_first_token_seconds",' and :55); absent in 0.3.0. The
#   TTFT histogram is still exported (vllm==0.33.0 vllm/v1/metrics/loggers.py:931).
VLLM_HISTOGRAMS_SINCE = "0.3.1"
VLLM_TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
                     20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
"""vllm/v1/metrics/loggers.py: the buckets of vllm:time_to_first_token_seconds."""
# * Inter-token latency, a histogram (seconds) observed once per output the engine streams (the time since the
#   request's previous output). vLLM exported it as vllm:time_per_output_token_seconds from v0.3.1 (above). PR
#   #24110 ("[Metrics] Deprecate TPOT in favor of ITL") added vllm:inter_token_latency_seconds with the same
#   buckets, observed the same value into both; first in v0.10.2 (vllm==0.10.2 vllm/v1/metrics/loggers.py:396,
#   'name="vllm:inter_token_latency_seconds",', and the V0 vllm/engine/metrics.py:129; absent in 0.10.1.1). The old
#   name carries a DEPRECATED help text in 0.11.0 (vllm==0.11.0 vllm/v1/metrics/loggers.py:387-390, "# Deprecated in
#   0.11 - Renamed as vllm:inter_token_latency_seconds"), is hidden from 0.12.0 to 0.14.0 unless
#   --show-hidden-metrics-for-version=0.11 (vllm==0.12.0 loggers.py:689-694; vllm==0.14.0 loggers.py:723) and is
#   removed from 0.15.0 (vLLM PR #32661). 0.10.2-0.11 export both names; the rule reads both, per pod the new one.
VLLM_ITL = "vllm:inter_token_latency_seconds_bucket"
VLLM_TPOT_DEPRECATED = "vllm:time_per_output_token_seconds_bucket"
VLLM_ITL_RENAMED_IN = "0.10.2"

# SGLang (python/sglang/srt/metrics/collector.py up to 0.5.9, python/sglang/srt/observability/metrics_collector.py
# from 0.5.10, which moved it (sglang==0.5.9 and sglang==0.5.10 trees); docs "Production Metrics"; served with
# --enable-metrics):
# * SchedulerMetricsCollector gauges, one series per scheduler (dp_rank/tp_rank labels): sglang:num_running_reqs
#   ("The number of running requests"), sglang:token_usage ("The token usage": used KV-cache tokens / the pool's
#   tokens, 0-1; the docs' example shows 0.28).
# * TokenizerMetricsCollector histograms (seconds): sglang:time_to_first_token_seconds and
#   sglang:inter_token_latency_seconds. The latter replaced sglang:time_per_output_token_seconds: first in
#   0.4.3.post3 (sglang==0.4.3.post3 python/sglang/srt/metrics/collector.py:184,
#   'name="sglang:inter_token_latency_seconds",'; absent in 0.4.3.post2), exported next to the old name up to
#   0.4.4.post3 (sglang==0.4.4.post3 python/sglang/srt/metrics/collector.py:162,
#   'name="sglang:time_per_output_token_seconds",'), which 0.4.4.post4 dropped (its collector.py:163 has ITL
#   only). Still exported (sglang==0.5.23 python/sglang/srt/observability/metrics_collector.py:2051); the
#   sglang:request_time_per_output_token_seconds of 0.5.23 (:2058) is another metric. The first release of the old
#   name is not pinned down here, so the catalog refuses no SGLang tag; the tag picks the name its pods export
#   (SGLang tags its images with post releases, v0.4.4.post4-cu124: see IMAGE_VERSION).
SGLANG_TTFT_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400)
"""metrics/collector.py (observability/metrics_collector.py from 0.5.10): TokenizerMetricsCollector's default
``bucket_time_to_first_token`` (``--bucket-time-to-first-token`` overrides it)."""
SGLANG_ITL = "sglang:inter_token_latency_seconds_bucket"
SGLANG_TPOT_REMOVED = "sglang:time_per_output_token_seconds_bucket"
SGLANG_ITL_RENAMED_IN = "0.4.3.post3"

# Hugging Face TGI (docs/source/reference/metrics.md, "Metrics"; router/src/server.rs, backends/v3/src/backend.rs):
# * tgi_batch_current_size, gauge, "Current batch size": the continuous batch's requests, set on every batch
#   iteration and to 0 when the batch empties (since v0.3.0, the first release with the /metrics endpoint).
# * tgi_request_duration, histogram (seconds), "Total time spent processing the request (e2e latency)": observed
#   once per successful request when it completes (queue + inference, validation included).
# * tgi_request_mean_time_per_token_duration, histogram (seconds), "Mean time per token per request (inter-token
#   latency)": the request's inference time over its generated tokens, observed at completion.
# Both histograms get buckets from the router's "duration" suffix matcher (35 geometric buckets from 0.15 ms, factor
# 1.5); before v0.5.0 (PR #163, "use buckets for metrics histograms") they were exported as summaries without
# buckets, so the catalog takes 0.5.0 as their first release.
TGI_BATCH_SINCE = "0.3.0"
TGI_HISTOGRAMS_SINCE = "0.5.0"
TGI_DURATION_BUCKETS = tuple(0.0001 * 1.5 ** k for k in range(1, 36))
"""router/src/server.rs: ``duration_buckets``, 35 values from 0.0001 x 1.5 (a geometric sequence, factor 1.5)."""


def _histogram_p90(bucket_series: str, previous: str = "") -> str:
    """90th percentile per pod of a histogram over the rule window: ``histogram_quantile`` over the per-second
    ``rate`` of the ``_bucket`` counters summed by ``le`` and pod (Prometheus docs, querying/functions:
    histogram_quantile; practices/histograms: aggregate the rates of the buckets, never quantiles). ``rate`` corrects
    for counter resets, so a server restart inside the window does not read as a negative rate. A pod with no
    observation in the window has all bucket rates 0, for which histogram_quantile returns NaN: it reads 0 instead
    (the "or" arm), as the Triton queue time does for an idle pod.

    ``previous``: the bucket series' name before a rename. Both names are read, and per pod the current name's
    buckets win (``or on(pod)``: the right side only for pods the left side lacks), so a pod exporting only the old
    name, only the new one, or both during the deprecation window reads each observation once; adding the two
    would count every observation twice (a server that observes both names alike doubles every rate)."""
    if not previous:
        seen = f'sum by (<<.GroupBy>>) (rate({bucket_series}{{<<.LabelMatchers>>,le="+Inf"}}[{WINDOW}]))'
        quantile = (f"histogram_quantile(0.9, sum by (le, <<.GroupBy>>) "
                    f"(rate(<<.Series>>{{<<.LabelMatchers>>}}[{WINDOW}])))")
        return f"({quantile} and ({seen} > 0)) or ({seen} == 0)"

    rates = _either(f"sum by (le, <<.GroupBy>>) (rate(<<.Series>>{{<<.LabelMatchers>>}}[{WINDOW}]))", bucket_series,
                    previous)
    seen = _either(f'sum by (<<.GroupBy>>) (rate(<<.Series>>{{<<.LabelMatchers>>,le="+Inf"}}[{WINDOW}]))',
                   bucket_series, previous)
    return f"(histogram_quantile(0.9, {rates}) and ({seen} > 0)) or ({seen} == 0)"


def _either(per_pod: str, series: str, previous: str) -> str:
    """``per_pod`` (a query with one series per pod, over ``<<.Series>>``) read under a renamed series' current
    name, or for the pods that lack it under the previous one: ``or on(pod)`` keeps the left side's pods and adds
    only the right side's other pods (Prometheus docs, querying/operators: ``or``), so a pod exporting both names
    is read once, under the current name."""
    return (f"({per_pod.replace('<<.Series>>', series)} or on(<<.GroupBy>>) "
            f"{per_pod.replace('<<.Series>>', previous)})")


def _renamed_gauge(aggregate: str, series: str, previous: str) -> str:
    """A gauge renamed from ``previous`` to ``series``, aggregated per pod by ``aggregate`` (:data:`_AVG`, :data:`_SUM`)
    under each name: per pod the current name's value, else the previous name's. Summing both names of a pod that
    exports both during the deprecation window would count it twice, and averaging them would mix two readings."""
    return _either(aggregate, series, previous)


def _p90_source(exporter: str, bucket_series: str, api_name: str, previous: str = "", **facts) -> MetricSource:
    """A per-pod 90th percentile of a server's latency histogram (seconds), served in the catalog unit: the rule
    reads ``bucket_series`` (and ``previous``, its name before a rename) through :func:`_histogram_p90`."""
    return MetricSource(exporter, bucket_series, api_name, "pod", _histogram_p90(bucket_series, previous), "s",
                        kind="histogram", previous_series=previous, **facts)


_AVG = "avg(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)"
_SUM = "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)"
ALL_MODES = frozenset({"exclusive", "cgpu", "mig"})

METRICS: dict[str, MetricDef] = {
    m.name: m
    for m in (
        MetricDef(
            "gpu_util", "GPU utilization (duty cycle) of whole GPUs", "percent", "gpu", frozenset({"exclusive"}),
            (MetricSource("ack", DCGM_GPU_UTIL, DCGM_GPU_UTIL, "node", _AVG, "percent"),
             MetricSource("dcgm", DCGM_GPU_UTIL, "gpu_utilization", "pod", _AVG, "percent"),
             MetricSource("ack-legacy", "nvidia_gpu_duty_cycle", "duty_cycle_current", "pod", _AVG, "percent"))),
        MetricDef(
            "gpu_sm_util", "GPU (SM) utilization of each pod's processes", "percent", "gpu",
            frozenset({"exclusive", "cgpu"}),
            (MetricSource("ack", "DCGM_CUSTOM_PROCESS_SM_UTIL", "DCGM_CUSTOM_PROCESS_SM_UTIL", "pod", _AVG,
                          "percent"),)),
        MetricDef(
            "gpu_fb_used", "GPU frame buffer memory used", "MiB", "gpu", frozenset({"exclusive"}),
            (MetricSource("ack", DCGM_FB_USED, DCGM_FB_USED, "node", _SUM, "MiB"),
             MetricSource("dcgm", DCGM_FB_USED, "gpu_memory_used", "pod", _SUM, "MiB"),
             MetricSource("ack-legacy", "nvidia_gpu_memory_used_bytes", "memory_used_mib_current", "pod", _SUM,
                          "bytes")),
            scale_down_reliable=False),
        MetricDef(
            "gpu_mem_used", "GPU memory used by each pod's processes", "MiB", "gpu",
            frozenset({"exclusive", "cgpu"}),
            (MetricSource("ack", "DCGM_CUSTOM_PROCESS_MEM_USED", "DCGM_CUSTOM_PROCESS_MEM_USED", "pod", _SUM,
                          "MiB"),),
            scale_down_reliable=False),
        MetricDef(
            "gpu_mem_used_ratio", "GPU memory used by a pod / GPU memory allocated to it", "ratio", "gpu",
            frozenset({"exclusive", "cgpu"}),
            (MetricSource(
                "ack", "DCGM_CUSTOM_PROCESS_MEM_USED", "DCGM_CUSTOM_PROCESS_GPU_MEM_USED_RATIO", "pod",
                "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)"
                " / sum(DCGM_CUSTOM_CONTAINER_MEM_ALLOCATED{<<.LabelMatchers>>}) by (<<.GroupBy>>)", "ratio"),
             MetricSource(
                "dcgm", DCGM_FB_USED, "gpu_memory_used_ratio", "pod",
                "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)"
                " / (sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)"
                f" + sum({DCGM_FB_FREE}{{<<.LabelMatchers>>}}) by (<<.GroupBy>>))", "ratio")),
            scale_down_reliable=False),
        MetricDef(
            "gpu_engine_active", "Graphics engine active ratio (0-1); reported for MIG instances", "ratio", "gpu",
            frozenset({"exclusive", "mig"}),
            (MetricSource("ack", DCGM_GR_ENGINE_ACTIVE, DCGM_GR_ENGINE_ACTIVE, "pod", _AVG, "ratio"),
             MetricSource("dcgm", DCGM_GR_ENGINE_ACTIVE, "gpu_engine_active", "pod", _AVG, "ratio"))),
        # the 2020 ACK guide's table also lists temperature and power (temperature_celsius_current,
        # power_usage_milliwatts_current), served from gpu_exporter's per-GPU nvidia_gpu_temperature_celsius and
        # nvidia_gpu_power_usage_milliwatts (the exporter's own metric names and units)
        MetricDef(
            "gpu_temperature", "GPU temperature of each pod's GPUs (average over its GPUs)",
            "celsius", "gpu", frozenset({"exclusive"}),
            (MetricSource("ack-legacy", "nvidia_gpu_temperature_celsius", "temperature_celsius_current", "pod",
                          _AVG, "celsius"),)),
        MetricDef(
            "gpu_power", "Power drawn by each pod's GPUs", "mW", "gpu", frozenset({"exclusive"}),
            (MetricSource("ack-legacy", "nvidia_gpu_power_usage_milliwatts", "power_usage_milliwatts_current",
                          "pod", _SUM, "mW"),)),
        MetricDef(
            "triton_queue_time_us", "Triton average queue time per request over the rule window", "us", "app",
            ALL_MODES,
            (MetricSource("triton", TRITON_QUEUE_US, "avg_time_queue_us", "pod", TRITON_QUEUE_PER_REQUEST, "us",
                          kind="counter"),)),
        MetricDef(
            "vllm_requests_waiting", "vLLM requests waiting in the scheduler queue", "requests", "app", ALL_MODES,
            (MetricSource("vllm", "vllm:num_requests_waiting", "vllm_num_requests_waiting", "pod", _SUM,
                          "requests", since=VLLM_SCHEDULER_GAUGES_SINCE),),
            scaling="Requests admitted but not yet scheduled: above zero the replica's batch is full (KV cache or "
                    "max-num-seqs), so new requests wait before their first token. A queue target scales before "
                    "latency grows; the value does not fall below 0 when idle, so scale-down needs it near 0."),
        # Hugging Face TGI's router serves /metrics on its API port; docs "Metrics" (reference/metrics): tgi_queue_size,
        # gauge, "Current queue size" (requests the router holds until the batcher admits them)
        MetricDef(
            "tgi_queue_size", "TGI requests waiting in the router's queue", "requests", "app", ALL_MODES,
            (MetricSource("tgi", "tgi_queue_size", "tgi_queue_size", "pod", _SUM, "requests"),),
            scaling="Requests the router holds because the continuous batch is full: the same signal as vLLM's "
                    "waiting requests; it reads 0 when idle, so scale-down needs it near 0."),
        # SGLang serves /metrics on its API port with --enable-metrics; docs "Production Metrics":
        # sglang:num_queue_reqs, gauge, requests in the waiting queue
        MetricDef(
            "sglang_queue_requests", "SGLang requests in the waiting queue", "requests", "app", ALL_MODES,
            (MetricSource("sglang", "sglang:num_queue_reqs", "sglang_num_queue_reqs", "pod", _SUM, "requests"),),
            scaling="Requests the scheduler has not admitted to the running batch; needs --enable-metrics on the "
                    "server. It reads 0 when idle, so scale-down needs it near 0."),
        MetricDef(
            "vllm_requests_running", "vLLM requests in the running batch", "requests", "app", ALL_MODES,
            (MetricSource("vllm", "vllm:num_requests_running", "vllm_num_requests_running", "pod", _SUM,
                          "requests", since=VLLM_SCHEDULER_GAUGES_SINCE),),
            scaling="Concurrency per replica: grows with load up to the batch limit, then stays there while the "
                    "queue grows. A target below that limit scales on concurrency; at the limit it stops telling "
                    "more load from saturation, so pair it with vllm_requests_waiting."),
        MetricDef(
            "vllm_kv_cache_usage", "vLLM KV-cache blocks in use, 0-1", "ratio", "app", ALL_MODES,
            (MetricSource("vllm", VLLM_KV_CACHE_USAGE, "vllm_kv_cache_usage_perc", "pod",
                          _renamed_gauge(_AVG, VLLM_KV_CACHE_USAGE, VLLM_GPU_CACHE_USAGE_DEPRECATED), "ratio",
                          since=VLLM_KV_CACHE_USAGE_SINCE, previous_series=VLLM_GPU_CACHE_USAGE_DEPRECATED,
                          renamed_in=VLLM_KV_CACHE_USAGE_RENAMED_IN),),
            scaling="Memory pressure of the running batch: near 1 the scheduler preempts or stops admitting "
                    "requests. It follows tokens in flight, not requests, so long prompts raise it at low request "
                    "rates; a target around 0.8 scales before preemption."),
        MetricDef(
            "vllm_ttft_p90_ms", "vLLM time to first token, 90th percentile over the rule window", "ms", "app",
            ALL_MODES,
            (_p90_source("vllm", "vllm:time_to_first_token_seconds_bucket", "vllm_ttft_p90_ms",
                         since=VLLM_HISTOGRAMS_SINCE, buckets=VLLM_TTFT_BUCKETS),),
            scaling="What an interactive user waits for (queueing plus prefill). A latency SLO more than a load "
                    "signal: it rises only once replicas saturate, and a pod that served nothing in the window "
                    "reads 0; pair it with vllm_requests_waiting, which moves first."),
        MetricDef(
            "vllm_itl_p90_ms", "vLLM inter-token latency, 90th percentile over the rule window", "ms", "app",
            ALL_MODES,
            (_p90_source("vllm", VLLM_ITL, "vllm_itl_p90_ms", VLLM_TPOT_DEPRECATED, since=VLLM_HISTOGRAMS_SINCE,
                         renamed_in=VLLM_ITL_RENAMED_IN),),
            scaling="How fast a streamed answer flows once it started: it grows with the running batch (every "
                    "decode step serves more requests), not with the queue, so it moves before saturation only "
                    "if the batch limit is high; a pod that streamed nothing in the window reads 0. An SLO guard "
                    "next to a queue metric, not a load signal."),
        MetricDef(
            "sglang_requests_running", "SGLang requests in the running batch", "requests", "app", ALL_MODES,
            (MetricSource("sglang", "sglang:num_running_reqs", "sglang_num_running_reqs", "pod", _SUM,
                          "requests"),),
            scaling="Concurrency per replica, summed over the pod's schedulers: grows with load up to the batch "
                    "limit (--max-running-requests or the KV pool), then stays while the queue grows; pair it "
                    "with sglang_queue_requests. Reads 0 when idle."),
        MetricDef(
            "sglang_token_usage", "SGLang KV-cache tokens in use, 0-1", "ratio", "app", ALL_MODES,
            (MetricSource("sglang", "sglang:token_usage", "sglang_token_usage", "pod", _AVG, "ratio"),),
            scaling="Memory pressure of the running batch (averaged over the pod's schedulers): near 1 the "
                    "scheduler retracts requests or stops admitting them. It follows tokens in flight, not "
                    "requests, so long prompts raise it at low request rates; a target around 0.8 scales before "
                    "retraction."),
        MetricDef(
            "sglang_ttft_p90_ms", "SGLang time to first token, 90th percentile over the rule window", "ms", "app",
            ALL_MODES,
            (_p90_source("sglang", "sglang:time_to_first_token_seconds_bucket", "sglang_ttft_p90_ms",
                         buckets=SGLANG_TTFT_BUCKETS),),
            scaling="Queueing plus prefill, as a user waits for it: it rises only once replicas saturate, and a "
                    "pod that served nothing in the window reads 0; an SLO guard next to sglang_queue_requests."),
        MetricDef(
            "sglang_itl_p90_ms", "SGLang inter-token latency, 90th percentile over the rule window", "ms", "app",
            ALL_MODES,
            (_p90_source("sglang", SGLANG_ITL, "sglang_itl_p90_ms", SGLANG_TPOT_REMOVED,
                         renamed_in=SGLANG_ITL_RENAMED_IN),),
            scaling="Decode speed of streamed answers: it grows with the running batch rather than the queue, "
                    "and a pod that streamed nothing in the window reads 0; an SLO guard, not a load signal."),
        MetricDef(
            "tgi_batch_size", "TGI requests in the current continuous batch", "requests", "app", ALL_MODES,
            (MetricSource("tgi", "tgi_batch_current_size", "tgi_batch_current_size", "pod", _SUM, "requests",
                          since=TGI_BATCH_SINCE),),
            scaling="Concurrency per replica: grows with load up to the batch limit (--max-batch-size or "
                    "--max-batch-total-tokens), then stays while tgi_queue_size grows. Reads 0 when idle, so a "
                    "target below the limit scales down as load falls."),
        MetricDef(
            "tgi_request_latency_p90_ms", "TGI end-to-end request latency, 90th percentile over the rule window",
            "ms", "app", ALL_MODES,
            (_p90_source("tgi", "tgi_request_duration_bucket", "tgi_request_latency_p90_ms",
                         since=TGI_HISTOGRAMS_SINCE, buckets=TGI_DURATION_BUCKETS),),
            scaling="Queue wait plus the whole generation, observed when a request completes: it lags load by a "
                    "request's duration, mixes short and long answers, and rises only once replicas saturate; a "
                    "pod that completed nothing in the window reads 0. An SLO guard next to tgi_queue_size."),
        MetricDef(
            "tgi_time_per_token_p90_ms", "TGI mean time per output token of a request, 90th percentile over the "
            "rule window", "ms", "app", ALL_MODES,
            (_p90_source("tgi", "tgi_request_mean_time_per_token_duration_bucket", "tgi_time_per_token_p90_ms",
                         since=TGI_HISTOGRAMS_SINCE, buckets=TGI_DURATION_BUCKETS),),
            scaling="Decode speed per request (its inference time over its tokens), observed at completion: it "
                    "grows with the batch rather than the queue and lags by a request's duration; a pod that "
                    "completed nothing reads 0. An SLO guard, not a load signal."),
    )
}


def metric(name: str) -> MetricDef | None:
    return METRICS.get(name)


def suggest(name: str) -> list[str]:
    return close_matches(name, METRICS)


def series_selector(source: MetricSource, matchers: str) -> str:
    """A selector of the source's series with ``matchers``: by name, or for a renamed series every name it had
    (``__name__`` regex; Prometheus anchors it, querying/basics: regular expressions are fully anchored)."""
    if len(source.names) == 1:
        return f"{source.series}{{{matchers}}}"
    return f'{{__name__=~"{"|".join(source.names)}",{matchers}}}'


def series_query(source: MetricSource) -> str:
    """Discovery query: only series that carry the pod's namespace and name can be served per pod."""
    lab = source.labels
    if source.scope == "node":
        return series_selector(source, f'{lab.node}!=""')
    return series_selector(source, f'{lab.namespace}!="",{lab.pod}!=""')


def is_windowed(source: MetricSource) -> bool:
    return WINDOW in source.query


def served_names(rule_list: list[dict]) -> set[str]:
    """API metric names a list of adapter rules serves (``name.as``; else the series name itself). The rule
    format is the adapter's (see ``components/adapter_rules.py``); the policies read it from Helm values and
    ConfigMaps, the components write it, so both take the naming from here."""
    out = set()
    for r in rule_list:
        name = r.get("name") or {}
        if name.get("as"):
            out.add(name["as"])
        else:
            m = re.match(r"^\s*([a-zA-Z_:][a-zA-Z0-9_:]*)", r.get("seriesQuery", ""))
            if m:
                out.add(m.group(1))
    return out


LATENCY_OBSERVES = {"tgi_request_latency_p90_ms": "request", "vllm_ttft_p90_ms": "first_token",
                    "sglang_ttft_p90_ms": "first_token"}
"""Latency histograms read as their p90, and what one request observes into them: ``request``, its whole time in
the server when it completes (TGI's tgi_request_duration: queue, validation and inference, router/src/server.rs);
``first_token``, its time to first token (vLLM's and SGLang's time_to_first_token_seconds: queueing plus
prefill)."""


def histogram_p90(seconds: float, bounds: tuple[float, ...]) -> float:
    """What ``histogram_quantile(0.9, ...)`` reads (seconds) when every observation in the window took ``seconds``:
    all of them in the bucket ``(lo, hi]`` that holds the value, so the 90th percentile interpolates to
    ``lo + 0.9 (hi - lo)``; above the last finite bound, that bound (Prometheus promql/quantile.go,
    bucketQuantile: linear interpolation inside the bucket, the highest finite bound for the +Inf bucket). However
    fast the requests, it reads at least ``0.9`` times the first bound."""
    i = bisect.bisect_left(bounds, seconds)
    if i >= len(bounds):
        return bounds[-1]
    lo = bounds[i - 1] if i > 0 else 0.0
    return lo + 0.9 * (bounds[i] - lo)


SLO_TARGET_HEADROOM = 0.25
"""Estimate: the load growth a workload's running replicas absorb while the ones a scale-up starts become ready (its
time to capacity), as a fraction of their load. Not sourced: it is what a target derived from an SLO
(:func:`slo_derived_target`) leaves for the time to capacity. ``gpuplatform simulate --tune`` on the workload's own
trace replaces it with the target that keeps the SLO on that trace at least cost; state that target instead."""


def slo_derived_target(below: float) -> float:
    """The autoscaling target of a metric derived from an SLO objective ``metric < below``: below it by the HPA's
    tolerance (the HPA only acts once the metric is more than 10 % above its target) and by the headroom for the
    time to capacity (:data:`SLO_TARGET_HEADROOM`), so ``target x 1.1 x 1.25 = below``: 0.727 x the threshold.
    Rounded down to three significant figures (and to Kubernetes' milli precision), so it never reads above the
    rule."""
    from gpuplatform.catalogs.kubernetes import HPA_TOLERANCE

    raw = below / ((1 + HPA_TOLERANCE) * (1 + SLO_TARGET_HEADROOM))
    if raw <= 0:
        return raw
    step = max(10 ** (math.floor(math.log10(raw)) - 2), 0.001)
    return round(max(math.floor(raw / step + 1e-9) * step, 0.001), 3)


SERIES_PREFIXES = ("vllm:", "sglang:")
"""Prefixes the servers put before their metric names; AIBrix's PodAutoscaler names a pod metric without it
(``targetMetric: gpu_cache_usage_perc`` for vLLM's ``vllm:gpu_cache_usage_perc``)."""


def metric_range(name: str) -> tuple[str, Unit] | None:
    """(catalog metric, unit) of a metric an autoscaler names, when the catalog knows its unit has a largest value
    (a ratio 0-1, a percent 0-100): the name the custom metrics API serves (in the catalog's unit), or an
    exporter's own series (in the unit the exporter reports it in), with or without a server's prefix. None for
    names the catalog does not know and for unbounded units (latency, queue length)."""
    candidates = [name] + [p + name for p in SERIES_PREFIXES if not name.startswith(p)]
    for metric in METRICS.values():
        if name == metric.name or any(name == src.api_name for src in metric.sources):
            unit = UNITS[metric.unit]
            return (metric.name, unit) if unit.maximum is not None else None
    for metric in METRICS.values():
        for src in metric.sources:
            if src.kind == "gauge" and any(c in src.names for c in candidates):
                unit = UNITS[src.unit]
                return (metric.name, unit) if unit.maximum is not None else None
    return None
