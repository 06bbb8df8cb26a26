"""``model.load-time`` against recorded pod and event lists (tests/fixtures/k8s_api/staging/<variant>/api/v1/
namespaces/inference/): the measured start-to-ready time of each pod against the startup budget, a warning above
half of it, and a failure when the kubelet's startup probe killed a container, a probe timed out, or a pod was
evicted for its /tmp."""
from __future__ import annotations

import pytest
from k8s_fixture_server import api_client_for
from kubernetes import client as k8s

from gpuplatform.components.config import ModelWeights
from gpuplatform.verify import check_load_time, format_table, run_verify

SUBJECT = "deployment/inference/bert-intent-detection"


def load_time(fake_api, cfg, variant: str, workload=None):
    server = fake_api("staging", variant)
    api = api_client_for(server)
    try:
        return check_load_time(cfg, workload or cfg.workloads[0], k8s.CoreV1Api(api)), server
    finally:
        api.close()


def test_healthy_pods_load_well_within_the_budget(fake_api, staging_cfg):
    result, server = load_time(fake_api, staging_cfg, "healthy")
    assert result.ok and not result.warning
    # started 07:58:12, Ready since 07:58:30
    assert result.message == ("slowest load 18s (bert-intent-detection-7b486f6bf-f5kzt) of a 600s startup budget "
                              "(3%); 1 pod(s) measured")
    pods = [q for p, q in server.requests if p == "/api/v1/namespaces/inference/pods"]
    assert pods == [{"labelSelector": ["app.kubernetes.io/name=bert-intent-detection"]}]


def test_a_load_above_half_the_budget_warns_without_failing(fake_api, staging_cfg):
    result, _ = load_time(fake_api, staging_cfg, "load-slow")
    assert result.ok and result.warning
    assert result.message.startswith("slowest load 410s (bert-intent-detection-7b486f6bf-a1b2c) of a 600s startup "
                                     "budget (68%)")
    assert "2 pod(s) measured" in result.message
    assert "model.loadMibPerSecond" in result.cause
    table = format_table([result])
    assert table.splitlines()[1].startswith("WARN    model.load-time")
    assert table.rstrip().endswith("1 checks, 1 passed, 0 failed, 1 with a warning")


def test_a_container_killed_by_its_startup_probe_fails_with_its_restarts(fake_api, staging_cfg):
    result, _ = load_time(fake_api, staging_cfg, "startup-killed")
    assert not result.ok
    assert "slowest load 120s (bert-intent-detection-7b486f6bf-j7k8l)" in result.message
    assert "not ready yet: bert-intent-detection-7b486f6bf-g5h6i" in result.message
    assert "restarts: bert-intent-detection-7b486f6bf-g5h6i: 2 restart(s) (last: Error, exit 137)" in result.message
    assert result.message.endswith("killed by the startup probe: bert-intent-detection-7b486f6bf-g5h6i (2x)")
    assert "600s startup budget" in result.cause


def test_a_workload_with_model_shows_its_estimate_next_to_the_measurement(fake_api, staging_cfg):
    w = staging_cfg.workloads[0].model_copy(update={"model": ModelWeights(size_gib=2, source="image")})
    result, _ = load_time(fake_api, staging_cfg, "healthy", w)
    # the staging workload's probes state no startupTimeoutSeconds, so the budget is sized: 2 x (60 + 2048 / 150)
    assert "estimated 74s" in result.message and "of a 150s startup budget" in result.message


def test_the_runner_reports_one_load_time_per_workload(fake_api, staging_cfg):
    server = fake_api("staging", "startup-killed")
    api = api_client_for(server)
    try:
        results = run_verify(staging_cfg, api)
    finally:
        api.close()
    (got,) = [r for r in results if r.check == "model.load-time"]
    assert got.subject == SUBJECT and not got.ok


def test_probes_that_time_out_fail_with_the_timeout(fake_api, staging_cfg):
    """The kubelet's readiness probe gave up on a server answering slower than its timeout (the kubelet default
    of 1 s against SGLang's generating /health is the case the generated timeouts prevent)."""
    result, _ = load_time(fake_api, staging_cfg, "probe-timeout")
    assert not result.ok
    assert "probes timed out: bert-intent-detection-7b486f6bf-p9q8r (128x)" in result.message
    assert "slower than the probes' 1s timeout" in result.cause  # the staging workload names no server


def test_a_pod_evicted_for_its_tmp_fails_naming_the_writable_volume_route(fake_api, staging_cfg):
    result, _ = load_time(fake_api, staging_cfg, "tmp-evicted")
    assert not result.ok
    assert "evicted for /tmp: bert-intent-detection-7b486f6bf-e1v2c" in result.message
    assert "slowest load 120s (bert-intent-detection-7b486f6bf-j7k8l)" in result.message
    assert "outgrew the 1 GiB /tmp emptyDir" in result.cause and "readOnly: false" in result.cause


def test_the_measured_load_corrects_the_read_rate_of_the_estimate(fake_api, staging_cfg):
    """The slowest load (410 s) minus the 60 s start overhead of a workload without a server is the time the
    weights took: 30 GiB in 350 s is 88 MiB/s, against the 150 MiB/s estimate for weights in the image."""
    w = staging_cfg.workloads[0].model_copy(update={"model": ModelWeights(size_gib=30, source="image")})
    result, _ = load_time(fake_api, staging_cfg, "load-slow", w)
    assert ("read at 88 MiB/s after the 60s server start estimated, against 150 MiB/s (image; "
            "model.loadMibPerSecond takes a measured rate)") in result.message


def test_a_load_shorter_than_the_start_estimate_tells_no_rate(fake_api, staging_cfg):
    w = staging_cfg.workloads[0].model_copy(update={"model": ModelWeights(size_gib=2, source="image")})
    result, _ = load_time(fake_api, staging_cfg, "healthy", w)
    assert "the load took less than the 60s server start estimated" in result.message
    assert "read at" not in result.message


def test_image_pulls_are_read_from_the_kubelets_pulled_events(fake_api, staging_cfg):
    """One replica pulled for 4m58.2s, the other found the image on its node (a pre-puller's work, or an earlier
    replica's); another workload's pull is not counted."""
    result, _ = load_time(fake_api, staging_cfg, "image-pull")
    assert ("slowest image pull 298s (bert-intent-detection-7b486f6bf-a1b2c, the kubelet's Pulled event; the "
            "simulator's serviceModel.imagePullSeconds)") in result.message
    assert "1 container start(s) found the image on the node" in result.message


def test_go_durations_as_the_kubelet_prints_them():
    from gpuplatform.verify.startup import go_duration_seconds

    assert go_duration_seconds("4m58.2s") == pytest.approx(298.2)
    assert go_duration_seconds("1h2m3s") == 3723
    assert go_duration_seconds("850ms") == pytest.approx(0.85)
    assert go_duration_seconds("soon") is None and go_duration_seconds("3s later") is None


def test_weights_on_a_fluid_cache_are_measured_against_the_fill_rate(fake_api, staging_cfg):
    """With a Fluid weights cache the slowest load is the one that filled the cache from OSS: its rate is set
    against the fill rate, not the cache's."""
    from gpuplatform.components.config import FluidCredentials, FluidVolume, Volume
    vol = Volume(name="models", mount_path="/models", fluid=FluidVolume(
        mount_point="oss://models/bert", endpoint="oss-cn-hangzhou-internal.aliyuncs.com",
        credentials=FluidCredentials(secret_name="oss-models"), cache_quota_gib=40))
    w = staging_cfg.workloads[0].model_copy(update={"volumes": [vol],
                                                    "model": ModelWeights(size_gib=30, source="volume")})
    result, _ = load_time(fake_api, staging_cfg, "load-slow", w)
    assert "for the replica that fills the Fluid cache" in result.message
    assert ("read at 88 MiB/s after the 60s server start estimated, against 70 MiB/s (the slowest, as if it "
            "filled the cache from OSS; catalogs/timeouts.py FLUID_FILL_RATE)") in result.message
    assert "against 600 MiB/s (the fastest, from the cache (fluid)" in result.message
