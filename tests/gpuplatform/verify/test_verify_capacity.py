"""``startup.warm-capacity``, ``startup.pre-pull``, ``startup.fluid-cache`` and ``startup.compile-cache`` against
recorded API responses (tests/fixtures/k8s_api/staging/<variant>/): the staging workload given warm replicas, a
pre-puller, a Fluid weights cache or a vLLM compile cache; ``time-to-capacity`` is the working cluster, every other
variant one way each measure fails."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest
from k8s_fixture_server import api_client_for
from kubernetes import client as k8s

from gpuplatform.components.config import FluidCredentials, FluidVolume, ModelWeights, Volume
from gpuplatform.verify import (check_compile_cache, check_fluid_cache, check_pre_pull, check_warm_capacity,
                                check_warm_priority_class, run_verify)
from gpuplatform.verify.capacity import provisioning_seconds, size_gib

NOW = datetime(2025, 6, 3, 8, 30, tzinfo=timezone.utc)
"""The recorded responses' "now": a placeholder created at 08:00 has waited 1800 s, one at 08:29 60 s."""
WARM_POD = "pod/inference/bert-intent-detection-warm-6d9f8c7b5-"


def measured_workload(cfg, *, warm: int = 2, pre_pull: bool = True, fluid: bool = True):
    w = cfg.workloads[0]
    vol = Volume(name="models", mount_path="/models", fluid=FluidVolume(
        mount_point="oss://models/bert", endpoint="oss-cn-beijing-internal.aliyuncs.com",
        credentials=FluidCredentials(secret_name="oss-models"), cache_quota_gib=16))
    return w.model_copy(update={
        "autoscaling": w.autoscaling.model_copy(update={"warm_replicas": warm}), "pre_pull": pre_pull,
        "volumes": [vol] if fluid else [], "model": ModelWeights(size_gib=15, source="volume", volume="models")})


@pytest.fixture
def apis(fake_api):
    clients = []

    def start(variant: str):
        api = api_client_for(fake_api("staging", variant))
        clients.append(api)
        return api

    yield start
    for api in clients:
        api.close()


def warm(apis, cfg, variant):
    api = apis(variant)
    w = measured_workload(cfg)
    return (check_warm_priority_class(k8s.SchedulingV1Api(api)),
            check_warm_capacity(cfg, w, k8s.CoreV1Api(api), k8s.AppsV1Api(api), now=NOW))


def test_warm_capacity_held_passes_per_object(apis, staging_cfg):
    pc, results = warm(apis, staging_cfg, "time-to-capacity")
    assert pc.ok and pc.subject == "priorityclass/gpu-platform-warm-capacity" and "value -10" in pc.message
    assert [(r.subject, r.ok, r.message) for r in results] == [
        ("deployment/inference/bert-intent-detection-warm", True, "2/2 placeholder(s) available")]


def test_a_placeholder_pending_at_max_nodes_fails_naming_the_pool_limit(apis, staging_cfg):
    """One placeholder has waited 1800 s with the autoscaler's "max node group size reached"; the other 60 s, less
    than the 180 s a gn7i node is estimated to take, so it is not reported."""
    assert provisioning_seconds(staging_cfg, staging_cfg.workloads[0]) == 180
    _, results = warm(apis, staging_cfg, "warm-max-nodes")
    dep, pod = results
    assert not dep.ok and dep.message == "0/2 placeholder(s) available; 1 Pending beyond the provisioning estimate"
    assert pod.subject == WARM_POD + "p9q8r" and not pod.ok
    assert pod.message.startswith("Pending 1800s, longer than the 180s a node of pool 'a10' takes")
    assert "NotTriggerScaleUp: pod didn't trigger scale-up: 1 max node group size reached" in pod.message
    assert "the pool 'a10' is at its maxNodes (10)" in pod.cause and "nodePools[].maxNodes" in pod.cause


def test_a_placeholder_below_the_expendable_cutoff_fails_naming_the_cutoff(apis, staging_cfg):
    pc, results = warm(apis, staging_cfg, "warm-expendable")
    assert not pc.ok and pc.message == "value -1000, the stack renders -10"
    assert "--expendable-pods-priority-cutoff" in pc.cause
    dep, pod = results
    assert not dep.ok and dep.message.startswith("1/2 placeholder(s) available")
    assert pod.subject == WARM_POD + "s5t6u" and "Pending 1200s" in pod.message
    assert "FailedScheduling: 0/3 nodes are available" in pod.message
    assert "its priority -1000 is below the cluster autoscaler's --expendable-pods-priority-cutoff" in pod.cause


def test_warm_capacity_not_applied_fails(apis, staging_cfg):
    pc, results = warm(apis, staging_cfg, "healthy")
    assert not pc.ok and pc.message == "PriorityClass not found"
    assert [(r.ok, r.message) for r in results] == [(False, "placeholder Deployment not found")]


def pre_pull(apis, cfg, variant):
    api = apis(variant)
    return check_pre_pull(cfg, measured_workload(cfg), k8s.CoreV1Api(api), k8s.AppsV1Api(api))


def test_pre_puller_ready_on_every_node_of_the_pool_passes(apis, staging_cfg):
    (ds,) = pre_pull(apis, staging_cfg, "time-to-capacity")
    assert ds.ok and ds.subject == "daemonset/inference/bert-intent-detection-prepull"
    assert ds.message == ("1/1 pod(s) ready; the pool 'a10' has 1 node(s) (gpuplatform.io/pool=a10): the image is on "
                          "every node")


def test_a_pull_that_cannot_pull_fails_with_pod_container_and_reason(apis, staging_cfg):
    ds, pod = pre_pull(apis, staging_cfg, "prepull-pull-error")
    assert not ds.ok and ds.message.startswith("0/1 pod(s) ready")
    assert pod.subject == "pod/inference/bert-intent-detection-prepull-x7k2p" and not pod.ok
    assert pod.message.endswith("init container 'pull' of " + staging_cfg.workloads[0].image +
                                ': ImagePullBackOff: Back-off pulling image "img"')
    assert "cannot pull the image" in pod.cause


def test_a_pull_that_exits_non_zero_fails_naming_the_architecture(apis, staging_cfg):
    _, pod = pre_pull(apis, staging_cfg, "prepull-exit")
    assert pod.message.endswith("exit 1 (Error: exec /prepull/busybox: exec format error)")
    assert "another architecture" in pod.cause


def test_a_pre_puller_that_misses_the_pools_nodes_fails(apis, staging_cfg):
    (ds,) = pre_pull(apis, staging_cfg, "prepull-no-nodes")
    assert not ds.ok and ds.message.startswith("0/0 pod(s) ready; the pool 'a10' has 1 node(s)")
    assert "nodeSelector or tolerations" in ds.cause


def fluid(apis, cfg, variant):
    api = apis(variant)
    results = check_fluid_cache(cfg, measured_workload(cfg), k8s.CoreV1Api(api), k8s.CustomObjectsApi(api))
    return {r.subject.split("/")[0] + ("-ref" if r.subject.startswith("dataset/inference") else ""): r
            for r in results}


def test_a_bound_filled_cache_passes_per_object(apis, staging_cfg):
    got = fluid(apis, staging_cfg, "time-to-capacity")
    assert all(r.ok and not r.warning for r in got.values())
    assert got["dataset"].subject == "dataset/bert-intent-detection-fluid/bert-intent-detection-models"
    assert got["dataset"].message == "phase Bound; ufsTotal 15.00GiB, cacheCapacity 16.00GiB, cached 15.00GiB"
    assert got["jindoruntime"].message == "1/1 cache worker(s) ready (workerPhase Ready), 1 declared"
    assert got["dataset-ref"].subject == "dataset/inference/bert-intent-detection-models"
    assert got["pvc"].message == "Bound to inference-bert-intent-detection-models"


def test_an_unbound_cache_fails_each_object_with_its_cause(apis, staging_cfg):
    got = fluid(apis, staging_cfg, "fluid-unbound")
    assert not any(r.ok for r in got.values())
    assert got["dataset"].message.startswith("phase NotBound; no ufsTotal or cacheCapacity reported yet")
    assert "oss-models" in got["dataset"].cause
    assert got["jindoruntime"].message == "0/1 cache worker(s) ready (workerPhase NotReady), 1 declared"
    assert "1 Insufficient memory" in got["jindoruntime"].cause
    assert got["dataset-ref"].message.startswith("phase NotBound")
    assert got["pvc"].message == "PersistentVolumeClaim not found"


def test_a_cache_smaller_than_the_weights_fails(apis, staging_cfg):
    got = fluid(apis, staging_cfg, "fluid-small")
    assert not got["dataset"].ok and "cacheCapacity 8.00GiB" in got["dataset"].message
    assert "less than model.sizeGib 15" in got["dataset"].cause
    assert got["jindoruntime"].ok and got["pvc"].ok


def test_an_oss_directory_larger_than_the_cache_warns(apis, staging_cfg):
    got = fluid(apis, staging_cfg, "fluid-wide")
    assert got["dataset"].ok and got["dataset"].warning
    assert "OSS directory (120.5 GiB) is larger than the cache" in got["dataset"].cause


def test_fluid_not_installed_fails_naming_it(apis, staging_cfg):
    got = fluid(apis, staging_cfg, "healthy")
    assert got["dataset"].message == "Dataset not found" and "ack-fluid" in got["dataset"].cause
    assert got["jindoruntime"].message == "JindoRuntime not found"


def test_fluid_sizes():
    assert size_gib("15.00GiB") == 15 and size_gib("500Gi") == 500 and size_gib("1024MiB") == 1
    assert size_gib("2GB") == pytest.approx(2e9 / 2 ** 30) and size_gib("[Calculating]") is None


def test_the_runner_lists_the_measures_only_for_workloads_that_use_them(fake_api, staging_cfg):
    server = fake_api("staging", "time-to-capacity")
    api = api_client_for(server)
    try:
        plain = run_verify(staging_cfg, api)
        cfg = staging_cfg.model_copy(update={"workloads": [measured_workload(staging_cfg)]})
        measured = run_verify(cfg, api)
    finally:
        api.close()
    assert not [r for r in plain if r.check.startswith("startup.")]
    checks = [r.check for r in measured]
    got = [c for c in checks if c.startswith("startup.")]
    assert got == ["startup.warm-capacity"] * 2 + ["startup.pre-pull"] + ["startup.fluid-cache"] * 4
    # after the workload's load time, in the order the measures shorten the path
    assert checks.index("model.load-time") < checks.index("startup.warm-capacity")
    assert all(r.ok for r in measured if r.check.startswith("startup."))


# ------------------------------------------------------------------------------------- compile cache
def compile_cached_workload(cfg):
    """The staging workload as vLLM with its compile cache on the claim ``vllm-compile-cache``."""
    w = cfg.workloads[0]
    cache = Volume(name="vllm-cache", mount_path="/cache", pvc="vllm-compile-cache", read_only=False)
    return w.model_copy(update={"server": "vllm", "image": "vllm/vllm-openai:v0.9.2", "volumes": [cache],
                                "env": {**w.env, "HOME": "/tmp", "VLLM_CACHE_ROOT": "/cache/vllm"}})


def test_a_shared_compile_cache_claim_passes(apis, staging_cfg):
    (result,) = check_compile_cache(staging_cfg, compile_cached_workload(staging_cfg),
                                    k8s.CoreV1Api(apis("time-to-capacity")))
    assert result.ok and result.subject == "pvc/inference/vllm-compile-cache"
    assert result.message == "phase Bound, access modes ReadWriteMany"


def test_a_compile_cache_on_a_disk_fails_for_replicas_on_other_nodes(apis, staging_cfg):
    (result,) = check_compile_cache(staging_cfg, compile_cached_workload(staging_cfg),
                                    k8s.CoreV1Api(apis("compile-cache-rwo")))
    assert not result.ok and result.message == "phase Bound, access modes ReadWriteOnce"
    assert "Multi-Attach" in result.cause and "ReadWriteMany" in result.cause


def test_a_missing_compile_cache_claim_fails_and_a_workload_without_one_gets_no_result(apis, staging_cfg):
    api = k8s.CoreV1Api(apis("healthy"))
    (result,) = check_compile_cache(staging_cfg, compile_cached_workload(staging_cfg), api)
    assert not result.ok and result.message == "PersistentVolumeClaim not found"
    assert check_compile_cache(staging_cfg, staging_cfg.workloads[0], api) == []
