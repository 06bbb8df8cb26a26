"""TGI's and SGLang's metrics: served to the HPA from the server's own API port, refused for another server; the
queue gauges simulated like vLLM's waiting requests, the running batch and TGI's request latency from the same
queue model, and the latency and KV metrics the service model cannot produce refused by simulate with the reason.
SGLang's renamed inter-token latency follows the image's post-release tag; Triton's queue time is read from
counters, through increase()."""
import dataclasses
import re

import pytest
from support import of_type, stack_raw, synth
from test_config_validation import assert_rejected

from gpuplatform.catalogs.metrics import METRICS, WINDOW, image_version
from gpuplatform.components.errors import ConfigError
from gpuplatform.components.metric_sources import source_for
from gpuplatform.components.validation import load
from gpuplatform.simulate.engine import simulate
from gpuplatform.simulate.report import resolve_trace

SERVERS = {"tgi": ("ghcr.io/huggingface/text-generation-inference:3.3.4", 80, "tgi_queue_size"),
           "sglang": ("lmsysorg/sglang:v0.5.4", 30000, "sglang_queue_requests")}
COMMAND_LINES = {
    # the image's launcher takes the arguments; it listens on the image's PORT (80)
    "tgi": ([], ["--model-id", "/models/m"]),
    # SGLang listens on 127.0.0.1 and serves no metrics unless told otherwise
    "sglang": (["python3", "-m", "sglang.launch_server"],
               ["--model-path", "/models/m", "--host", "0.0.0.0", "--port", "30000", "--enable-metrics"]),
}


NEW = {"sglang": ["sglang_requests_running", "sglang_token_usage", "sglang_ttft_p90_ms", "sglang_itl_p90_ms"],
       "tgi": ["tgi_batch_size", "tgi_request_latency_p90_ms", "tgi_time_per_token_p90_ms"]}
TARGETS = {"requests": 4, "ratio": 0.8, "ms": 1500}


def llm_workload(server: str, metric: str | None = None):
    image, port, default_metric = SERVERS[server]

    def mutate(raw):
        w = raw["workloads"][0]
        command, args = COMMAND_LINES[server]
        w.update({"name": "llm", "image": image, "server": server, "command": list(command), "args": list(args),
                  "volumes": [],
                  "ports": [{"name": "http", "containerPort": port, "protocol": "http", "metricsPath": "/metrics"}],
                  "probes": {"port": "http", "readinessPath": "/health", "livenessPath": "/health"},
                  "serviceModel": {"serviceTimeMs": 400, "modelLoadSeconds": 120, "imagePullSeconds": 300}})
        w["autoscaling"]["metrics"] = [{"metric": metric or default_metric, "target": 2}]
        w["exposure"] = {}
        w.pop("slo", None)  # the stack's SLO is on Triton's queue time, which another server does not export
    return mutate


@pytest.mark.parametrize("server", sorted(SERVERS))
def test_the_queue_gauge_is_served_to_the_hpa_and_scraped_on_the_api_port(server):
    raw = stack_raw("prod")
    llm_workload(server)(raw)
    records = synth(raw)
    src = METRICS[SERVERS[server][2]].sources[0]
    hpa = next(r for r in of_type(records, "kubernetes:autoscaling/v2:HorizontalPodAutoscaler"))
    assert hpa.inputs["spec"]["metrics"][0]["pods"]["metric"]["name"] == src.api_name
    adapter = next(r for r in of_type(records, "kubernetes:helm.sh/v3:Release")
                   if r.inputs["name"] == "prometheus-adapter")
    (served,) = [r for r in adapter.inputs["values"]["rules"]["custom"] if r["name"]["as"] == src.api_name]
    assert src.series in served["seriesQuery"]
    monitor = next(r for r in of_type(records, "kubernetes:monitoring.coreos.com/v1:PodMonitor"))
    assert monitor.inputs["spec"]["podMetricsEndpoints"][0]["port"] == "http"


def test_another_servers_metric_is_refused():
    assert_rejected("prod", llm_workload("tgi", "sglang_queue_requests"),
                    "workloads[0].autoscaling.metrics[0].metric", "is not available from 'tgi'; it comes from sglang")


@pytest.mark.parametrize("server", sorted(SERVERS))
def test_a_step_scales_the_llm_server_on_its_queue(server):
    raw = stack_raw("prod")
    llm_workload(server)(raw)
    cfg = load(raw)
    result = simulate(cfg, "prod", "llm", resolve_trace(cfg, "llm", "step", "15m"))
    assert result.first_scale_up_s is not None and result.replicas_max > 1


@pytest.mark.parametrize(("server", "metric"), [(srv, m) for srv, ms in NEW.items() for m in ms])
def test_each_new_metric_has_type_unit_meaning_and_is_served_to_the_hpa(server, metric):
    mdef = METRICS[metric]
    (src,) = mdef.sources
    assert src.exporter == server and mdef.scaling and src.kind in ("gauge", "histogram")
    assert (mdef.unit == "ms") == (src.kind == "histogram")
    raw = stack_raw("prod")
    llm_workload(server, metric)(raw)
    raw["workloads"][0]["autoscaling"]["metrics"][0]["target"] = TARGETS[mdef.unit]
    records = synth(raw)
    hpa = next(r for r in of_type(records, "kubernetes:autoscaling/v2:HorizontalPodAutoscaler"))
    assert hpa.inputs["spec"]["metrics"][0]["pods"]["metric"]["name"] == src.api_name
    adapter = next(r for r in of_type(records, "kubernetes:helm.sh/v3:Release")
                   if r.inputs["name"] == "prometheus-adapter")
    (served,) = [r for r in adapter.inputs["values"]["rules"]["custom"] if r["name"]["as"] == src.api_name]
    assert all(name in served["seriesQuery"] for name in src.names)


def _simulate(server, metric, target, concurrency=8, service_ms=400, **model):
    raw = stack_raw("prod")
    llm_workload(server, metric)(raw)
    raw["workloads"][0]["autoscaling"]["metrics"][0]["target"] = target
    raw["workloads"][0]["serviceModel"].update({"concurrency": concurrency, "serviceTimeMs": service_ms, **model})
    cfg = load(raw)
    return simulate(cfg, "prod", "llm", resolve_trace(cfg, "llm", "step", "15m"))


@pytest.mark.parametrize(("server", "metric", "target"), [("sglang", "sglang_requests_running", 6),
                                                          ("tgi", "tgi_batch_size", 6),
                                                          ("tgi", "tgi_request_latency_p90_ms", 1500)])
def test_a_step_scales_the_llm_server_on_its_running_batch_or_request_latency(server, metric, target):
    result = _simulate(server, metric, target)
    assert result.first_scale_up_s is not None and result.replicas_max > 1
    # in steady state the metric reads its target at the plan's load per replica
    plan = result.plan
    x = plan.x_at_level(target)
    assert plan.level(x) == pytest.approx(target, rel=1e-3) or plan.level(x) > target  # latency reads in steps
    assert plan.rps_at_target == pytest.approx(plan.capacity_rps * plan.rho(x))


def test_the_running_batch_is_read_as_running_requests_not_as_a_queue():
    """8 slots at 75 % utilization run 6 requests: a running target of 6 sits there (the queue is short)."""
    plan = _simulate("tgi", "tgi_batch_size", 6).plan
    assert plan.kind == "running"
    assert plan.rps_at_target == pytest.approx(0.75 * plan.capacity_rps, rel=1e-3)


def test_the_latency_p90_is_the_bucket_interpolation_of_queue_wait_plus_service():
    """Every completion observes its queue wait plus its service time; histogram_quantile places the p90 at 9/10 of
    the bucket holding that value (TGI's buckets: 0.0001 x 1.5^k s)."""
    from gpuplatform.simulate.service import bucket_p90

    plan = _simulate("tgi", "tgi_request_latency_p90_ms", 1500).plan
    bounds = plan.buckets
    assert bounds[0] == pytest.approx(0.00015) and bounds[1] / bounds[0] == pytest.approx(1.5)
    idle = plan.level(0.0)  # an idle replica: no wait, 0.4 s of service
    lo = max(b for b in bounds if b < 0.4)
    hi = min(b for b in bounds if b >= 0.4)
    assert idle == pytest.approx((lo + 0.9 * (hi - lo)) * 1000)
    assert bucket_p90(1e9, bounds) == bounds[-1]  # beyond the last bound, the +Inf bucket reads that bound


@pytest.mark.parametrize(("server", "metric", "why"), [
    ("sglang", "sglang_itl_p90_ms", "decode step time of the running batch"),
    ("sglang", "sglang_ttft_p90_ms", "serviceModel.firstTokenMs (the prefill time) is not set"),
    ("sglang", "sglang_token_usage", "tokens in flight"),
    ("tgi", "tgi_time_per_token_p90_ms", "the service model has no tokens"),
])
def test_simulate_refuses_a_metric_the_service_model_cannot_produce_and_says_why(server, metric, why):
    with pytest.raises(ConfigError) as info:
        _simulate(server, metric, TARGETS[METRICS[metric].unit])
    (issue,) = info.value.issues
    assert issue.path == "workloads[0].autoscaling.metrics[0].metric"
    assert f"'{metric}' cannot be simulated" in issue.message and why in issue.message
    assert "allowed for simulate:" in issue.message and metric not in issue.message.split("allowed")[1]


def test_simulate_refuses_targets_the_model_never_reaches_or_exceeds():
    with pytest.raises(ConfigError) as info:
        _simulate("tgi", "tgi_batch_size", 8, concurrency=8)
    assert "never exceeded" in info.value.issues[0].message and "allowed: < 8" in info.value.issues[0].message
    with pytest.raises(ConfigError) as info:
        _simulate("tgi", "tgi_request_latency_p90_ms", 300, service_ms=400)
    # refused by validation already: 400 ms sits in TGI's bucket (0.3325, 0.4988], read as 0.3325 + 0.9 x 0.1663 s
    (issue,) = info.value.issues
    assert issue.path == "workloads[0].autoscaling.metrics[0].target"
    assert "300 ms can never be met: an idle replica reads 482.162 ms" in issue.message
    assert "allowed: >= 438.33 (milliseconds)" in issue.message


def test_the_plan_marks_a_workload_on_a_metric_simulate_refuses_and_goes_on():
    from gpuplatform.plan import latency_rows, latency_text

    raw = stack_raw("prod")
    llm_workload("tgi", "tgi_time_per_token_p90_ms")(raw)
    raw["workloads"][0]["autoscaling"]["metrics"][0]["target"] = 80
    rows = latency_rows(load(raw))
    (row,) = [r for r in rows if r["workload"] == "llm"]
    assert "cannot be simulated" in row["stepResponse"]["notSimulated"]
    assert row["worstCaseSeconds"] > 0
    assert "not simulated (gpuplatform simulate says why)" in latency_text(rows)


def test_time_to_first_token_is_simulated_from_the_queue_wait_plus_the_prefill_time():
    """With serviceModel.firstTokenMs, SGLang's TTFT histogram observes each request's queue wait plus its
    prefill, in SGLang's default buckets: an idle replica reads the prefill's bucket, and a step scales up."""
    result = _simulate("sglang", "sglang_ttft_p90_ms", 1000, firstTokenMs=150)
    plan = result.plan
    assert plan.latency == "first_token" and plan.first_token_s == pytest.approx(0.15)
    assert plan.level(0.0) == pytest.approx((0.1 + 0.9 * (0.2 - 0.1)) * 1000)  # 0.15 s lies in (0.1, 0.2]
    assert result.first_scale_up_s is not None and result.replicas_max > 1


def test_a_prefill_longer_than_the_whole_service_is_refused():
    with pytest.raises(ConfigError) as info:
        _simulate("sglang", "sglang_ttft_p90_ms", 1000, firstTokenMs=500)
    (issue,) = info.value.issues
    assert issue.path == "workloads[0].serviceModel.firstTokenMs"
    assert "'firstTokenMs' (500) must be <= 'serviceTimeMs' (400)" in issue.message


def test_tune_tries_only_targets_the_running_batch_or_latency_can_exceed():
    from gpuplatform.simulate.tune import targets

    raw = stack_raw("prod")
    llm_workload("tgi", "tgi_batch_size")(raw)
    raw["workloads"][0]["autoscaling"]["metrics"][0]["target"] = 7
    raw["workloads"][0]["serviceModel"]["concurrency"] = 8
    assert max(targets(load(raw), "llm")) < 8 and 7 in targets(load(raw), "llm")  # 7 x 1.25 = 8.75 is left out
    raw = stack_raw("prod")
    llm_workload("tgi", "tgi_request_latency_p90_ms")(raw)
    raw["workloads"][0]["autoscaling"]["metrics"][0]["target"] = 600
    raw["workloads"][0]["serviceModel"]["concurrency"] = 8
    idle = service_plan_of(raw).level(0.0)  # 400 ms of service reads about 482 ms
    assert min(targets(load(raw), "llm")) > idle and 600 in targets(load(raw), "llm")


def service_plan_of(raw):
    from gpuplatform.simulate.workload_setup import service_plan

    cfg = load(raw)
    return service_plan(cfg, cfg.workloads[0])


SGLANG_ITL = "sglang_itl_p90_ms"


@pytest.mark.parametrize("tag,series", [
    ("v0.4.3.post2-cu124", "sglang:time_per_output_token_seconds_bucket"),  # before ITL
    ("v0.4.3", "sglang:time_per_output_token_seconds_bucket"),  # a release sorts before its post releases
    ("v0.4.3.post3-cu124", "sglang:inter_token_latency_seconds_bucket"),  # ITL's first release, TPOT still there
    ("v0.4.4.post3", "sglang:inter_token_latency_seconds_bucket"),  # TPOT's last release
    ("v0.4.4.post4-cu124", "sglang:inter_token_latency_seconds_bucket"),  # TPOT gone
    ("v0.5.4", "sglang:inter_token_latency_seconds_bucket"),
])
def test_sglang_itl_follows_the_post_release_tag_and_one_rule_reads_both_names(tag, series):
    """sglang==0.4.3.post3 python/sglang/srt/metrics/collector.py:184 first exports
    sglang:inter_token_latency_seconds (absent in 0.4.3.post2); sglang==0.4.4.post3 collector.py:162 is the last
    with sglang:time_per_output_token_seconds. The tag's .postN must parse, and sort after its release."""
    image = f"lmsysorg/sglang:{tag}"
    assert image_version(image) is not None
    raw = stack_raw("prod")
    llm_workload("sglang", SGLANG_ITL)(raw)
    raw["workloads"][0]["image"] = image
    raw["workloads"][0]["autoscaling"]["metrics"][0]["target"] = 100
    cfg = load(raw)
    assert source_for(cfg, cfg.workloads[0], SGLANG_ITL).series == series
    adapter = next(r for r in of_type(synth(raw), "kubernetes:helm.sh/v3:Release")
                   if r.inputs["name"] == "prometheus-adapter")
    (served,) = [r for r in adapter.inputs["values"]["rules"]["custom"] if r["name"]["as"] == "sglang_itl_p90_ms"]
    for name in ("sglang:inter_token_latency_seconds_bucket", "sglang:time_per_output_token_seconds_bucket"):
        assert name in served["seriesQuery"] and f"rate({name}{{" in served["metricsQuery"]
    assert " or on(<<.GroupBy>>) " in served["metricsQuery"]


def test_triton_queue_time_is_read_from_counters_through_increase_and_a_raw_counter_read_is_refused():
    """nv_inference_queue_duration_us and nv_inference_request_success are counters
    (triton-inference-server/core src/metrics.cc (r26.06) BuildCounter): the source says so, its rule reads both
    through increase() over the window (tests/promtool/components/test_adapter_rules_triton_queue_time.py: across a restart too), and a
    counter source whose query reads the raw value or delta() is refused when the catalog is built."""
    src = METRICS["triton_queue_time_us"].source("triton")
    assert src.kind == "counter"
    query = src.metrics_query
    for name in ("nv_inference_queue_duration_us", "nv_inference_request_success"):
        windowed = re.findall(rf"\bincrease\({name}\{{[^}}]*\}}{re.escape(f'[{WINDOW}]')}\)", query)
        assert 0 < len(windowed) == query.count(f"{name}{{"), (name, query)  # every read of it
    assert "delta(" not in query
    for bad, why in [("sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)", "outside rate()/increase()"),
                     (query.replace("increase(", "delta("), "outside rate()/increase()"),
                     (query.replace("[[[window]]]", "[1m]"), "without the rule window")]:
        with pytest.raises(ValueError) as info:
            dataclasses.replace(src, query=bad)
        message = str(info.value)
        assert "avg_time_queue_us (triton)" in message and f"counter nv_inference_queue_duration_us {why}" in message
        assert "allowed: rate(...[[[window]]]) or increase(...[[[window]]])" in message
    with pytest.raises(ValueError, match="kind 'summary' is not a Prometheus metric type the catalog reads; "
                                         "allowed: gauge, counter, histogram"):
        dataclasses.replace(src, kind="summary")
