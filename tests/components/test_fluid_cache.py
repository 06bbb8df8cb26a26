"""The Fluid weights cache (``volumes[].fluid``): validation, the Datasets and JindoRuntime it renders, a restricted
workload pod that mounts the cache read-only, a clean policy pack, the load rates, and the simulator's first load
that fills the cache against the later ones that read it."""
from __future__ import annotations

import copy

import pytest
from support import assert_rejected
from test_pre_pull_time_to_capacity import example, objects, step

from gpuplatform.catalogs import timeouts
from gpuplatform.check import run_policies
from gpuplatform.components.model_startup import load_estimate
from gpuplatform.components.validation import load
from gpuplatform.simulate.cluster import NodePool, Pods
from gpuplatform.simulate.workload_setup import service_plan
from gpuplatform.simulate.startup import path_text

FLUID = {"mountPoint": "oss://models/qwen2.5-7b-instruct", "endpoint": "oss-cn-hangzhou-internal.aliyuncs.com",
         "credentials": {"secretName": "oss-models"}, "cacheQuotaGib": 16}


def fluid(volume: dict | None = None, **workload) -> dict:
    spec = {**FLUID, **(volume or {})}
    return example(volumes=[{"name": "models", "mountPath": "/models", "fluid": spec}], **workload)


# ------------------------------------------------------------------------------------------------ validation
def test_the_cache_must_hold_the_weights():
    assert_rejected(fluid({"cacheQuotaGib": 8}), "workloads[0].volumes[0].fluid.cacheQuotaGib",
              "8 GiB x 1 cache worker(s) = 8 GiB", "15 GiB of weights", "allowed: >= 15")


def test_cache_workers_beyond_the_nodes_the_pool_keeps_are_refused():
    assert_rejected(fluid({"cacheWorkers": 2, "cacheQuotaGib": 8}), "workloads[0].volumes[0].fluid.cacheWorkers",
              "keeps 1 node(s)", "allowed: <= 1", "minNodes")


def test_the_mount_point_must_be_an_oss_directory_and_the_mount_read_only():
    raw = fluid({"mountPoint": "s3://models/qwen"})
    raw["workloads"][0]["volumes"][0]["readOnly"] = False
    assert_rejected(raw, "workloads[0].volumes[0].fluid.mountPoint", "'s3://models/qwen'", "oss://<bucket>/<path>")
    assert_rejected(raw, "workloads[0].volumes[0].readOnly", "read-only", "allowed: true")


def test_a_volume_with_two_sources_is_refused():
    raw = fluid()
    raw["workloads"][0]["volumes"][0]["pvc"] = "qwen-weights"
    assert_rejected(raw, "workloads[0].volumes[0]", "exactly one source", "nfs, pvc or fluid")


def test_a_memory_tier_must_fit_the_node_beside_a_replica():
    """On a pool whose nodes have 60 GiB, a 40 GiB memory tier and a 24 GiB replica do not fit; on SSD they do."""
    import dataclasses

    from gpuplatform.components.pools import all_pool_facts
    from gpuplatform.components.validation.common import _Issues
    from gpuplatform.components.validation.fluid import check_fluid_volumes
    for medium, issues in (("MEM", ["workloads[0].volumes[0].fluid.cacheQuotaGib"]), ("SSD", [])):
        cfg = load(fluid({"cacheQuotaGib": 40, "cacheMedium": medium}))
        facts = dataclasses.replace(all_pool_facts(cfg)["a10"], memory_gib=60, vcpus=16)
        out = _Issues()
        check_fluid_volumes(cfg, "workloads[0]", cfg.workloads[0], facts, out)
        assert [i.path for i in out] == issues
        if issues:
            assert "40 GiB of MEM cache does not fit a node of pool 'a10' beside a replica (24Gi" in out[0].message
            assert "allowed: <= 36, or cacheMedium: SSD" in out[0].message


# ------------------------------------------------------------------------------------------------ rendering
def test_renders_the_cache_in_its_own_namespace_and_a_read_only_claim_for_the_restricted_pod():
    _, records = objects(fluid(), "Dataset")
    objs = [r.inputs for r in records if r.is_kubernetes_object]
    by = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in objs}
    ns = by[("Namespace", None, "chat-fluid")]
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    physical = by[("Dataset", "chat-fluid", "chat-models")]["spec"]
    mount = physical["mounts"][0]
    assert mount["mountPoint"] == FLUID["mountPoint"]
    assert mount["options"] == {"fs.oss.endpoint": FLUID["endpoint"]}
    assert mount["encryptOptions"] == [
        {"name": "fs.oss.accessKeyId",
         "valueFrom": {"secretKeyRef": {"name": "oss-models", "key": "fs.oss.accessKeyId"}}},
        {"name": "fs.oss.accessKeySecret",
         "valueFrom": {"secretKeyRef": {"name": "oss-models", "key": "fs.oss.accessKeySecret"}}}]
    runtime = by[("JindoRuntime", "chat-fluid", "chat-models")]
    assert runtime["apiVersion"] == "data.fluid.io/v1alpha1"
    assert runtime["spec"]["replicas"] == 1
    assert runtime["spec"]["tieredstore"]["levels"] == [
        {"mediumtype": "MEM", "volumeType": "emptyDir", "volumeSource": {"emptyDir": {"medium": "Memory"}},
         "path": "/dev/shm", "quota": "16Gi", "high": "0.99", "low": "0.95"}]
    deployment = by[("Deployment", "inference", "chat")]["spec"]["template"]["spec"]
    assert runtime["spec"]["worker"] == {"nodeSelector": deployment["nodeSelector"],
                                         "tolerations": deployment["tolerations"]}
    assert runtime["spec"]["fuse"] == {"tolerations": deployment["tolerations"]}
    ref = by[("Dataset", "inference", "chat-models")]["spec"]
    assert ref == {"mounts": [{"mountPoint": "dataset://chat-fluid/chat-models", "name": "models", "path": "/"}]}
    assert {"name": "models", "persistentVolumeClaim": {"claimName": "chat-models", "readOnly": True}} in \
        deployment["volumes"]
    assert {"name": "models", "mountPath": "/models", "readOnly": True} in \
        deployment["containers"][0]["volumeMounts"]
    assert not any("hostPath" in v for v in deployment["volumes"])
    assert not any("AccessKey" in str(o) or "LTAI" in str(o) for o in objs)


def test_the_policy_pack_passes_the_cache_and_the_pod_stays_restricted():
    _, records = objects(fluid(), "Dataset")
    assert run_policies(records) == []


# ------------------------------------------------------------------------------------------------ rates
def test_the_cache_reads_at_its_cited_rate_and_the_budget_covers_the_fill():
    cfg = load(fluid())
    est = load_estimate(cfg.workloads[0])
    assert (est.source, est.streamed) == ("fluid", True)
    assert est.mib_per_second == timeouts.STREAMED_LOAD_RATES["fluid"].mib_per_second
    assert est.fill_mib_per_second == timeouts.FLUID_FILL_RATE.mib_per_second
    assert est.expected_seconds == pytest.approx(90 + 15 * 1024 / 600)
    assert est.fill_expected_seconds == pytest.approx(90 + 15 * 1024 / 70)
    # the probe must let the replica that fills the cache finish: sized from the fill, not the hit
    assert est.sized_budget_seconds == 620
    assert "doc-detail/440265" in timeouts.MODEL_LOAD_RATES["fluid"].basis


# ------------------------------------------------------------------------------------------------ simulator
def _pods(raw: dict) -> tuple[Pods, NodePool]:
    cfg = load(raw)
    plan = service_plan(cfg, cfg.workloads[0])
    nodes = NodePool(1, 2, 2, 180, False, 2)
    return Pods("chat", plan.image_pull_s, plan.model_load_s, plan.cache_fill_load_s), nodes


def test_the_first_replica_fills_the_cache_and_a_later_one_reads_it():
    pods, nodes = _pods(fluid())
    pods.scale(1, 0)
    pods.schedule(0, nodes)
    first = pods.pods[0]
    pods.scale(2, 1000)
    pods.schedule(1000, nodes)
    later = pods.pods[1]
    assert first.fills_cache and not later.fills_cache
    assert first.load_s == 90 + 220 and later.load_s == 116
    assert later.ready_at - later.created < first.ready_at - first.created


def test_a_replica_that_starts_while_the_cache_fills_waits_for_the_fill():
    pods, nodes = _pods(fluid())
    pods.scale(2, 0)
    pods.schedule(0, nodes)
    first, second = pods.pods
    assert first.fills_cache and second.load_s == first.load_s


def test_a_run_that_starts_with_replicas_starts_with_a_filled_cache_and_says_so():
    r = step(fluid())
    path = r.tally.capacity_path
    assert path["model_load_parts"]["cache"] == "hit"
    assert path["model_load"] == 116
    assert "weights streamed from the Fluid cache at 600 MiB/s" in path_text(path)
    without = step(example()).tally.capacity_path
    assert path["total"] < without["total"]


def test_time_to_capacity_with_warm_capacity_pre_pull_streamer_and_cache():
    """Example 005 with 3 warm replicas on 7 nodes, the pre-puller, the streamer and the cache: the later replica
    reads the cache, and capacity is there 20 s sooner than without it (164 s)."""
    def warm(raw):
        raw["nodePools"][0]["maxNodes"] = 7
        raw["workloads"][0]["autoscaling"]["warmReplicas"] = 3
        raw["workloads"][0]["prePull"] = True
        return raw
    base = step(warm(example())).tally.capacity_path
    cached = step(warm(copy.deepcopy(fluid()))).tally.capacity_path
    assert (base["total"], cached["total"]) == (164, 144)
    assert cached["new_node"] is False and cached["model_load_parts"]["cache"] == "hit"
