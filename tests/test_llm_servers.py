"""TGI's and SGLang's queue gauges: served to the HPA from the server's own API port, refused for another server,
and simulated like vLLM's waiting requests (requests not yet in the running batch)."""
import pytest
from support import of_type, stack_raw, synth
from test_config_validation import assert_rejected

from gpuplatform.catalogs.metrics import METRICS
from gpuplatform.components.validation import load
from gpuplatform.simulate.engine import simulate
from gpuplatform.simulate.report import resolve_trace

SERVERS = {"tgi": ("ghcr.io/huggingface/text-generation-inference:3.3.4", 80, "tgi_queue_size"),
           "sglang": ("lmsysorg/sglang:v0.5.4", 30000, "sglang_queue_requests")}


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
