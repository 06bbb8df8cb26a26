"""vLLM's metrics in the catalog: each with its Prometheus type, unit, meaning for scaling and the vLLM version that
exports it under that name; a workload whose image pins an older vLLM is refused the metric, with the versions
that have it; the histogram metric is served as a quantile over the rate of its buckets, and a renamed series (the
KV-cache gauge, the inter-token latency histogram) is read under both names, per pod the new one."""
import copy
import re

import pytest

from gpuplatform.catalogs.metrics import METRICS, image_version, parse_version, version_text
from gpuplatform.components.errors import ConfigError
from gpuplatform.components.metric_sources import source_for
from gpuplatform.components.validation import load
from support import of_type, stack_raw, synth
from test_config_validation import assert_rejected

VLLM = [m for m in METRICS.values() if m.exporters == ["vllm"]]
RELEASE = "kubernetes:helm.sh/v3:Release"


def vllm_workload(image="vllm/vllm-openai:v0.9.2", metric="vllm_requests_waiting", target=5):
    """prod's workload replaced by a vLLM server: metrics on its API port, as vLLM serves them."""
    def mutate(raw):
        w = raw["workloads"][0]
        w.update({"name": "llm", "image": image, "server": "vllm", "command": [], "args": [], "volumes": [],
                  "ports": [{"name": "http", "containerPort": 8000, "protocol": "http", "metricsPath": "/metrics"}],
                  "probes": {"port": "http", "readinessPath": "/health", "livenessPath": "/health"}})
        w["autoscaling"]["metrics"] = [{"metric": metric, "target": target}]
        w["exposure"] = {}
        w.pop("slo", None)  # prod's SLO is on Triton's queue time, which vLLM does not export
    return mutate


def test_the_catalog_states_type_unit_meaning_and_versions_of_every_vllm_metric():
    assert {m.name for m in VLLM} >= {"vllm_requests_waiting", "vllm_requests_running", "vllm_kv_cache_usage",
                                      "vllm_ttft_p90_ms", "vllm_itl_p90_ms"}
    for m in VLLM:
        (src,) = m.sources
        assert src.kind in ("gauge", "counter", "histogram") and src.since and m.scaling, m.name
        assert src.series.startswith("vllm:")
        if src.kind == "histogram":
            assert src.series.endswith("_bucket")
            assert "histogram_quantile(" in src.metrics_query
            # each bucket series the rule reads is rated (a renamed series names both of its names)
            assert all(f"rate({n}{{" in src.metrics_query or (n == src.series and "rate(<<.Series>>" in
                                                               src.metrics_query) for n in src.names), m.name


@pytest.mark.parametrize("metric,target", [("vllm_requests_waiting", 5), ("vllm_requests_running", 24),
                                           ("vllm_kv_cache_usage", 0.8), ("vllm_ttft_p90_ms", 500)])
def test_each_vllm_metric_is_served_to_the_hpa(metric, target):
    raw = stack_raw("prod")
    vllm_workload(metric=metric, target=target)(raw)
    records = synth(raw)
    src = METRICS[metric].sources[0]
    hpa = next(r for r in of_type(records, "kubernetes:autoscaling/v2:HorizontalPodAutoscaler"))
    assert hpa.inputs["spec"]["metrics"][0]["pods"]["metric"]["name"] == src.api_name
    adapter = next(r for r in of_type(records, RELEASE) if r.inputs["name"] == "prometheus-adapter")
    (served,) = [r for r in adapter.inputs["values"]["rules"]["custom"] if r["name"]["as"] == src.api_name]
    assert src.series in served["seriesQuery"]


KV = "vllm_kv_cache_usage"


def test_kv_cache_usage_on_a_vllm_older_than_its_old_name_is_refused_with_both_names_and_releases():
    """vllm:gpu_cache_usage_perc first shipped in 0.2.3 (vllm==0.2.3 vllm/engine/metrics.py), its new name
    vllm:kv_cache_usage_perc in 0.9.2 (vllm==0.9.2 vllm/v1/metrics/loggers.py:217)."""
    assert_rejected("prod", vllm_workload("vllm/vllm-openai:v0.2.2", KV, 0.8),
                    "workloads[0].autoscaling.metrics[0].metric",
                    ["'vllm_kv_cache_usage'", "vllm:gpu_cache_usage_perc, which vllm exports from version 0.2.3",
                     "its new name vllm:kv_cache_usage_perc from version 0.9.2", "pins 0.2.2",
                     "vllm 0.2.3 or later"])


@pytest.mark.parametrize("image,series", [
    ("vllm/vllm-openai:v0.2.3", "vllm:gpu_cache_usage_perc"),  # the old name's first release
    ("vllm/vllm-openai:v0.9.0", "vllm:gpu_cache_usage_perc"),  # 0.9.0 and 0.9.1 lack the new name
    ("vllm/vllm-openai:v0.9.1", "vllm:gpu_cache_usage_perc"),
    ("vllm/vllm-openai:v0.9.2", "vllm:kv_cache_usage_perc"),  # the rename (both names exported up to 0.11)
    ("vllm/vllm-openai:v0.12.0", "vllm:kv_cache_usage_perc"),  # the old name removed
])
def test_kv_cache_usage_is_accepted_under_either_name_and_one_rule_reads_both_per_pod(image, series):
    raw = stack_raw("prod")
    vllm_workload(image, KV, 0.8)(raw)
    cfg = load(raw)
    assert source_for(cfg, cfg.workloads[0], KV).series == series
    records = synth(raw)
    adapter = next(r for r in of_type(records, RELEASE) if r.inputs["name"] == "prometheus-adapter")
    rules = adapter.inputs["values"]["rules"]["custom"]
    (served,) = [r for r in rules if r["name"]["as"] == "vllm_kv_cache_usage_perc"]
    query = served["metricsQuery"]
    for name in ("vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc"):
        assert name in served["seriesQuery"] and re.search(served["name"]["matches"], name)
        assert f"avg({name}{{" in query
    # per pod the new name, else the old one: never both averaged (tests/fixtures/series/vllm_kv_cache_usage.yaml
    # evaluates it with promtool on pods exporting the old name, the new one and both)
    assert "<<.Series>>" not in query
    assert query.index("vllm:kv_cache_usage_perc{") < query.index(" or on(<<.GroupBy>>) ") < query.index(
        "vllm:gpu_cache_usage_perc{")


def test_a_metric_the_older_vllm_exports_is_accepted_and_a_digest_is_not_judged():
    raw = stack_raw("prod")
    vllm_workload("vllm/vllm-openai:v0.2.3")(raw)
    assert load(raw).workloads[0].autoscaling.metrics[0].metric == "vllm_requests_waiting"
    raw = stack_raw("prod")
    vllm_workload("vllm/vllm-openai@sha256:" + "a" * 64, "vllm_kv_cache_usage", 0.8)(raw)
    assert load(raw).workloads[0].server == "vllm"


@pytest.mark.parametrize("image,version", [("vllm/vllm-openai:v0.9.2", (0, 9, 2)), ("r.example/vllm:0.10", (0, 10, 0)),
                                           ("vllm/vllm-openai:v0.11.0-cu128", (0, 11, 0)),
                                           ("lmsysorg/sglang:v0.4.4.post4-cu124", (0, 4, 4, 4)),
                                           ("lmsysorg/sglang:v0.4.3.post3", (0, 4, 3, 3)),
                                           ("registry:5000/vllm:latest-gpu", None), ("vllm@sha256:ab", None),
                                           ("vllm/vllm-openai:v0.9.2@sha256:" + "c" * 64, (0, 9, 2)),
                                           ("registry:5000/sglang:v0.4.4.post4-cu124@sha256:" + "d" * 64,
                                            (0, 4, 4, 4)),
                                           ("registry:5000/vllm@sha256:" + "e" * 64, None)])
def test_image_version(image, version):
    assert image_version(image) == version


DIGEST = "@sha256:" + "a" * 64


def test_a_tag_pinned_by_digest_too_keeps_the_tags_version_checks():
    """``name:tag@sha256:...`` still names its release: the metric an older vLLM does not export is refused as for
    the tag alone, and a digest without a tag is not judged (nothing names its release)."""
    assert_rejected("prod", vllm_workload("vllm/vllm-openai:v0.2.2" + DIGEST),
                    "workloads[0].autoscaling.metrics[0].metric",
                    ["'vllm_requests_waiting'", "pins 0.2.2", "vllm 0.2.3 or later"])
    raw = stack_raw("prod")
    vllm_workload("vllm/vllm-openai" + DIGEST)(raw)
    assert load(raw).workloads[0].image.endswith(DIGEST)


def test_a_post_release_sorts_after_its_release_and_before_the_next_and_is_shown_as_released():
    """PEP 440: 0.4.4 < 0.4.4.post0 < 0.4.4.post3 < 0.4.4.post4 < 0.4.5; the catalog's versions parse alike."""
    order = ["v0.4.4", "v0.4.4.post0", "v0.4.4.post3-cu124", "v0.4.4.post4-cu124", "v0.4.5"]
    versions = [image_version(f"lmsysorg/sglang:{tag}") for tag in order]
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    assert parse_version("0.4.4.post4") == image_version("lmsysorg/sglang:v0.4.4.post4-cu124")
    assert version_text(parse_version("0.4.3.post3")) == "0.4.3.post3" and version_text((0, 9, 2)) == "0.9.2"
    with pytest.raises(ValueError, match="'0.4.x' is not a version; allowed: MAJOR.MINOR"):
        parse_version("0.4.x")


@pytest.mark.parametrize("metric,target", [("vllm_requests_waiting", 5), ("vllm_requests_running", 24)])
def test_the_scheduler_gauges_are_refused_below_0_2_3_and_accepted_from_it(metric, target):
    """vllm==0.2.3 vllm/engine/metrics.py:14/:18 first exports vllm:num_requests_running/waiting (0.2.2 has no
    /metrics)."""
    series = METRICS[metric].sources[0].series
    assert_rejected("prod", vllm_workload("vllm/vllm-openai:v0.2.2", metric, target),
                    "workloads[0].autoscaling.metrics[0].metric",
                    [f"'{metric}'", f"{series}, which vllm exports from version 0.2.3", "pins 0.2.2",
                     "vllm 0.2.3 or later"])
    raw = stack_raw("prod")
    vllm_workload("vllm/vllm-openai:v0.2.3", metric, target)(raw)
    assert load(raw).workloads[0].autoscaling.metrics[0].metric == metric


def test_ttft_is_refused_below_0_3_1_and_accepted_from_it_and_on_older_images_than_before():
    """vllm==0.3.1 vllm/engine/metrics.py:48 first exports vllm:time_to_first_token_seconds (absent in 0.3.0)."""
    assert_rejected("prod", vllm_workload("vllm/vllm-openai:v0.3.0", "vllm_ttft_p90_ms", 500),
                    "workloads[0].autoscaling.metrics[0].metric",
                    ["'vllm_ttft_p90_ms'", "vllm:time_to_first_token_seconds_bucket, which vllm exports from "
                     "version 0.3.1", "pins 0.3.0", "vllm 0.3.1 or later"])
    for image in ("vllm/vllm-openai:v0.3.1", "vllm/vllm-openai:v0.5.0", "vllm/vllm-openai:v0.8.5"):
        raw = stack_raw("prod")
        vllm_workload(image, "vllm_ttft_p90_ms", 500)(raw)
        assert load(raw).workloads[0].autoscaling.metrics[0].metric == "vllm_ttft_p90_ms", image


ITL = "vllm_itl_p90_ms"


@pytest.mark.parametrize("image,series", [
    ("vllm/vllm-openai:v0.3.1", "vllm:time_per_output_token_seconds_bucket"),  # the old name's first release
    ("vllm/vllm-openai:v0.10.1", "vllm:time_per_output_token_seconds_bucket"),  # before the rename
    ("vllm/vllm-openai:v0.10.2", "vllm:inter_token_latency_seconds_bucket"),  # the release of the rename
    ("vllm/vllm-openai:v0.11.0", "vllm:inter_token_latency_seconds_bucket"),  # TPOT deprecated, still exported
    ("vllm/vllm-openai:v0.12.1", "vllm:inter_token_latency_seconds_bucket"),
    ("vllm/vllm-openai:nightly", "vllm:inter_token_latency_seconds_bucket"),  # no version: assumed current
    ("vllm/vllm-openai@sha256:" + "b" * 64, "vllm:inter_token_latency_seconds_bucket"),
])
def test_the_renamed_itl_series_follows_the_pinned_tag_and_one_rule_reads_both_names(image, series):
    raw = stack_raw("prod")
    vllm_workload(image, ITL, 60)(raw)
    cfg = load(raw)
    src = source_for(cfg, cfg.workloads[0], ITL)
    assert src.series == series
    # whatever the tag, the HPA asks for the same name and the one rule discovers and reads both series names
    records = synth(raw)
    hpa = next(r for r in of_type(records, "kubernetes:autoscaling/v2:HorizontalPodAutoscaler"))
    assert hpa.inputs["spec"]["metrics"][0]["pods"]["metric"]["name"] == "vllm_itl_p90_ms"
    adapter = next(r for r in of_type(records, RELEASE) if r.inputs["name"] == "prometheus-adapter")
    (served,) = [r for r in adapter.inputs["values"]["rules"]["custom"] if r["name"]["as"] == "vllm_itl_p90_ms"]
    for name in ("vllm:time_per_output_token_seconds_bucket", "vllm:inter_token_latency_seconds_bucket"):
        assert name in served["seriesQuery"] and re.search(served["name"]["matches"], name)
        assert f"rate({name}{{" in served["metricsQuery"]
    assert " or on(<<.GroupBy>>) " in served["metricsQuery"]  # per pod one name, never their sum


def test_the_itl_rule_and_alert_do_not_depend_on_which_workload_comes_first():
    """Two workloads on either side of the rename share one adapter rule."""
    def rules(images):
        raw = stack_raw("prod")
        vllm_workload(images[0], ITL, 60)(raw)
        second = copy.deepcopy(raw["workloads"][0])
        second.update({"name": "llm2", "image": images[1]})
        raw["workloads"].append(second)
        records = synth(raw)
        adapter = next(r for r in of_type(records, RELEASE) if r.inputs["name"] == "prometheus-adapter")
        return [r for r in adapter.inputs["values"]["rules"]["custom"] if r["name"]["as"] == "vllm_itl_p90_ms"]
    old_first = rules(["vllm/vllm-openai:v0.10.1", "vllm/vllm-openai:v0.12.1"])
    assert len(old_first) == 1
    assert old_first == rules(["vllm/vllm-openai:v0.12.1", "vllm/vllm-openai:v0.10.1"])


def test_itl_on_a_vllm_older_than_the_metric_is_refused_with_the_versions_that_have_it():
    """vllm==0.3.1 vllm/engine/metrics.py:55 first exports vllm:time_per_output_token_seconds; vllm==0.10.2
    vllm/v1/metrics/loggers.py:396 first exports vllm:inter_token_latency_seconds (absent in 0.10.1.1)."""
    assert_rejected("prod", vllm_workload("vllm/vllm-openai:v0.3.0", ITL, 60),
                    "workloads[0].autoscaling.metrics[0].metric",
                    ["'vllm_itl_p90_ms'", "vllm:time_per_output_token_seconds_bucket", "from version 0.3.1",
                     "vllm:inter_token_latency_seconds_bucket from version 0.10.2", "pins 0.3.0",
                     "vllm 0.3.1 or later"])


@pytest.mark.parametrize("image", ["vllm/vllm-openai:v0.3.1", "vllm/vllm-openai:v0.10.1", "vllm/vllm-openai:v0.10.2",
                                   "vllm/vllm-openai:nightly"])
def test_itl_is_accepted_from_its_first_release_under_either_name_and_on_a_tag_that_is_no_version(image):
    raw = stack_raw("prod")
    vllm_workload(image, ITL, 60)(raw)
    assert load(raw).workloads[0].autoscaling.metrics[0].metric == ITL


def test_itl_on_latest_is_refused_only_for_the_unpinned_image_as_every_workload_is():
    """``latest`` says no version: the metric's version check does not judge it (as for the other vLLM metrics);
    the image rule refuses it for every workload, with the allowed forms."""
    raw = stack_raw("prod")
    vllm_workload("vllm/vllm-openai:latest", ITL, 60)(raw)
    with pytest.raises(ConfigError) as info:
        load(raw)
    assert [i.path for i in info.value.issues] == ["workloads[0].image"]
    assert "an explicit version tag or a digest" in info.value.issues[0].message


def test_vllm_ttft_is_simulated_with_a_prefill_time_and_refused_without_one():
    from gpuplatform.simulate.engine import simulate
    from gpuplatform.simulate.report import resolve_trace

    raw = stack_raw("prod")
    vllm_workload(metric="vllm_ttft_p90_ms", target=800)(raw)
    raw["workloads"][0]["serviceModel"] = {"serviceTimeMs": 400, "concurrency": 8, "modelLoadSeconds": 120}
    cfg = load(raw)
    with pytest.raises(ConfigError) as info:
        simulate(cfg, "prod", "llm", resolve_trace(cfg, "llm", "step", "15m"))
    assert "serviceModel.firstTokenMs" in info.value.issues[0].message
    raw["workloads"][0]["serviceModel"]["firstTokenMs"] = 120
    cfg = load(raw)
    result = simulate(cfg, "prod", "llm", resolve_trace(cfg, "llm", "step", "15m"))
    assert result.first_scale_up_s is not None and result.replicas_max > 1
