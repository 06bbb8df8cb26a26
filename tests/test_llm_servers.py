"""TGI's and SGLang's metrics: served to the HPA from the server's own API port, refused for another server; the
queue gauges simulated like vLLM's waiting requests, the running batch and TGI's request latency from the same
queue model, and the latency and KV metrics the service model cannot produce refused by simulate with the reason."""
import pytest
from support import of_type, stack_raw, synth
from test_config_validation import assert_rejected

from gpuplatform.catalogs.metrics import METRICS
from gpuplatform.components.errors import ConfigError
from gpuplatform.components.validation import load
from gpuplatform.simulate.engine import simulate
from gpuplatform.simulate.report import resolve_trace

SERVERS = {"tgi": ("ghcr.io/huggingface/text-generation-inference:3.3.4", 80, "tgi_queue_size"),
           "sglang": ("lmsysorg/sglang:v0.5.4", 30000, "sglang_queue_requests")}


NEW = {"sglang": ["sglang_requests_running", "sglang_token_usage", "sglang_ttft_p90_ms", "sglang_itl_p90_ms"],
       "tgi": ["tgi_batch_size", "tgi_request_latency_p90_ms", "tgi_time_per_token_p90_ms"]}
TARGETS = {"requests": 4, "ratio": 0.8, "ms": 1500}


def llm_workload(server: str, metric: str | None = None):
    image, port, default_metric = SERVERS[server]

    def mutate(raw):
        w = raw["workloads"][0]
        w.update({"name": "llm", "image": image, "server": server, "command": [], "args": [], "volumes": [],
                  "ports": [{"name": "http", "containerPort": port, "protocol": "http", "metricsPath": "/metrics"}],
                  "probes": {"port": "http", "readinessPath": "/health", "livenessPath": "/health"},
                  "serviceModel": {"serviceTimeMs": 400, "modelLoadSeconds": 120, "imagePullSeconds": 300}})
        w["autoscaling"]["metrics"] = [{"metric": metric or default_metric, "target": 2}]
        w["exposure"] = {}
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
    assert "below what an idle replica reads" in info.value.issues[0].message


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
    from gpuplatform.simulate.service import service_plan

    cfg = load(raw)
    return service_plan(cfg, cfg.workloads[0])
