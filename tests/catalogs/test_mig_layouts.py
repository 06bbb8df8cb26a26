"""Per-GPU MIG layouts (seed 003: one A100 as seven 1g.5gb instances next to a whole A100): the placement
catalog, the resources a node advertises, validation, the GPU Operator's mig-parted config and the policies."""
import copy

import pytest
import yaml

from gpuplatform.catalogs import capacity
from gpuplatform.catalogs.gpus import GPU_MODELS
from gpuplatform.catalogs.mig import MIG_PROFILES, PLACEMENTS, fits_one_gpu
from gpuplatform.check import run_policies
from gpuplatform.components.gpu_software import MIG_PARTED_CONFIG_MAP
from gpuplatform.components.pools import all_pool_facts
from gpuplatform.components.stack_config import namespace_from_stack_file
from gpuplatform.components.validation import load
from gpuplatform.synth import stack_config_from_namespace, synthesize
from support import stack_raw
from test_scenarios import EXAMPLES, example_raw, rejected

LAYOUT = [{"devices": [0], "profiles": {"1g.5gb": 7}}, {"devices": [1]}]


# ---------------------------------------------------------------------------------------------- placements
@pytest.mark.parametrize("model", sorted(MIG_PROFILES))
def test_placements_agree_with_the_single_profile_counts(model):
    # two sources, one fact: the all-<profile> configs' counts are the most instances the placements allow
    assert set(PLACEMENTS[model]) == set(MIG_PROFILES[model])
    for profile, count in MIG_PROFILES[model].items():
        assert fits_one_gpu(model, {profile: count}), profile
        assert not fits_one_gpu(model, {profile: count + 1}), profile


@pytest.mark.parametrize("devices", [
    {"4g.20gb": 1, "3g.20gb": 1}, {"3g.20gb": 1, "2g.10gb": 1, "1g.5gb": 2}, {"2g.10gb": 3, "1g.5gb": 1},
    {"4g.20gb": 1, "2g.10gb": 1, "1g.5gb": 1}, {"3g.20gb": 1, "1g.5gb": 4}, {"1g.5gb+me": 1, "1g.5gb": 6}])
def test_combinations_nvidia_lists_for_the_a100_fit(devices):
    assert fits_one_gpu("A100-40GB", devices)


@pytest.mark.parametrize("devices", [
    {"3g.20gb": 2, "1g.5gb": 1},        # two 3g take all eight memory slices
    {"2g.10gb": 3, "1g.5gb": 2},        # the second 1g.5gb would need slot 7, where no 1g may start
    {"4g.20gb": 2},                     # a 4g only starts at slot 0
    {"7g.40gb": 1, "1g.5gb": 1},
    {"1g.5gb+me": 2},                   # one set of media engines
    {"1g.5gb": 8}])
def test_combinations_that_overlap_do_not_fit(devices):
    assert not fits_one_gpu("A100-40GB", devices)


def test_a30_has_four_memory_slices():
    assert fits_one_gpu("A30", {"2g.12gb": 1, "1g.6gb": 2})
    assert not fits_one_gpu("A30", {"2g.12gb": 1, "1g.6gb": 3})


# ---------------------------------------------------------------------------------------------- the seed's node
def _facts(raw):
    cfg = load(raw)
    return cfg, all_pool_facts(cfg)["a100-mig"]


def _whole_gpu_workload(raw, max_replicas=2, count=1, nodes=2):
    raw["nodePools"][0]["desiredNodes"] = nodes
    w = copy.deepcopy(raw["workloads"][0])
    w.update(name="batch", gpu={"count": count, "migProfile": "whole"}, exposure={"serviceType": "ClusterIP"})
    w["autoscaling"] = {"minReplicas": 1, "maxReplicas": max_replicas,
                        "metrics": [{"metric": "gpu_util", "target": 80}]}
    raw["workloads"].append(w)
    return raw


def test_003_node_advertises_seven_instances_and_one_whole_gpu():
    _, f = _facts(example_raw("003"))
    assert f.node_resources == {"nvidia.com/mig-1g.5gb": 7, "nvidia.com/gpu": 1}
    assert f.node_labels["nvidia.com/mig.config"] == "triton-7x1g-1whole"
    assert f.mig_choices == ("1g.5gb", "whole")


def test_a_workload_takes_the_whole_gpu_next_to_triton():
    raw = _whole_gpu_workload(example_raw("003"))
    records = synthesize(stack_config_from_namespace(raw), stack="003-triton-mig")
    deployments = {r.inputs["metadata"]["name"]: r.inputs for r in records
                   if r.is_kubernetes_object and r.inputs["kind"] == "Deployment"}
    limits = {n: d["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] for n, d in deployments.items()}
    assert limits["batch"]["nvidia.com/gpu"] == "1" and "nvidia.com/mig-1g.5gb" not in limits["batch"]
    assert limits["flower"]["nvidia.com/mig-1g.5gb"] == "1" and "nvidia.com/gpu" not in limits["flower"]
    assert [v for v in run_policies(records) if v.mandatory] == []


def test_the_whole_gpu_holds_one_replica():
    found = rejected(_whole_gpu_workload(example_raw("003"), nodes=1))
    assert "at most 1" in found["workloads[1].autoscaling.maxReplicas"]
    found = rejected(_whole_gpu_workload(example_raw("003"), count=2))
    assert "1 nvidia.com/gpu per node" in found["workloads[1].gpu.count"]


def test_capacity_packs_each_resource_on_its_own():
    a100 = GPU_MODELS["A100-40GB"]
    units = {"nvidia.com/mig-1g.5gb": 7, "nvidia.com/gpu": 1}
    replicas = [capacity.Replica("triton", capacity.GpuRequest(count=1), resource="nvidia.com/mig-1g.5gb")] * 7 + \
        [capacity.Replica("batch", capacity.GpuRequest(count=1), resource="nvidia.com/gpu")] * 2
    # seven instances for seven Triton replicas; one whole GPU, so the second batch replica stays Pending
    assert capacity.pack("mig", a100, 2, 1, replicas, node_units=units) == {"triton": 0, "batch": 1}
    assert capacity.pack("mig", a100, 2, 2, replicas, node_units=units) == {"triton": 0, "batch": 0}


# ---------------------------------------------------------------------------------------------- the operator
def _gpu_operator_values(raw):
    records = synthesize(stack_config_from_namespace(raw), stack="mig")
    release, = [r for r in records if r.type == "kubernetes:helm.sh/v3:Release" and r.inputs["chart"] == "gpu-operator"]
    return release.inputs["values"]


def test_the_layout_becomes_a_mig_parted_config_with_every_pools_config():
    raw = example_raw("003")
    uniform = copy.deepcopy(raw["nodePools"][0])
    uniform.update(name="a100-uniform", sharing={"mode": "mig", "profile": "3g.20gb"})
    raw["nodePools"].append(uniform)
    values = _gpu_operator_values(raw)
    assert values["mig"]["strategy"] == "mixed"
    config = values["migManager"]["config"]
    assert (config["name"], config["create"], config["default"]) == (MIG_PARTED_CONFIG_MAP, True, "all-disabled")
    spec = yaml.safe_load(config["data"]["config.yaml"])
    assert spec["version"] == "v1"
    assert spec["mig-configs"] == {
        # a named config replaces the operator's own, so the default and the uniform pool's config come along
        "all-disabled": [{"devices": "all", "mig-enabled": False}],
        "triton-7x1g-1whole": [{"devices": [0], "mig-enabled": True, "mig-devices": {"1g.5gb": 7}},
                               {"devices": [1], "mig-enabled": False}],
        "all-3g.20gb": [{"devices": "all", "mig-enabled": True, "mig-devices": {"3g.20gb": 2}}],
    }


def test_uniform_pools_keep_the_operators_own_configs():
    values = _gpu_operator_values(stack_raw_003_uniform())
    assert values["migManager"]["config"] == {"default": "all-disabled"}


def stack_raw_003_uniform():
    raw = example_raw("003")
    raw["nodePools"][0]["sharing"] = {"mode": "mig", "profile": "1g.5gb"}
    raw["nodePools"][0]["gpusPerNode"] = 1
    raw["workloads"][0]["gpu"] = {"count": 1}
    return raw


# ---------------------------------------------------------------------------------------------- bad layouts
def _with_sharing(**sharing):
    raw = example_raw("003")
    raw["nodePools"][0]["sharing"] = {"mode": "mig", "strategy": "mixed", "layout": copy.deepcopy(LAYOUT),
                                      **sharing}
    return raw


def _layout(*entries):
    return _with_sharing(layout=list(entries))


BAD = [
    ("profile-and-layout", _with_sharing(profile="1g.5gb"), "nodePools[0].sharing.layout",
     ["'1g.5gb'", "one of them"]),
    ("neither", _with_sharing(layout=[]), "nodePools[0].sharing.profile", ["required", "layout"]),
    ("single-strategy", _with_sharing(strategy="single"), "nodePools[0].sharing.strategy",
     ["'single'", "every GPU of the node", "allowed with a layout: mixed"]),
    ("gpu-index-outside-the-node", _layout({"devices": [0], "profiles": {"1g.5gb": 7}}, {"devices": [1, 2]}),
     "nodePools[0].sharing.layout[1].devices", ["2 is not a GPU", "2 GPUs per node", "0..1"]),
    ("gpu-laid-out-twice", _layout({"devices": [0, 1], "profiles": {"1g.5gb": 7}}, {"devices": [1]}),
     "nodePools[0].sharing.layout[1].devices", ["GPU 1", "layout[0]"]),
    ("gpu-left-out", _layout({"devices": [0], "profiles": {"1g.5gb": 7}}), "nodePools[0].sharing.layout",
     ["GPU 1", "0..1"]),
    ("profile-of-another-model", _layout({"devices": [0], "profiles": {"1g.20gb": 4}}, {"devices": [1]}),
     "nodePools[0].sharing.layout[0].profiles.1g.20gb", ["'1g.20gb'", "A100-40GB", "1g.5gb"]),
    ("zero-instances", _layout({"devices": [0], "profiles": {"1g.5gb": 0}}, {"devices": [1]}),
     "nodePools[0].sharing.layout[0].profiles.1g.5gb", ["0", "1..7"]),
    ("instances-overlap", _layout({"devices": [0], "profiles": {"3g.20gb": 2, "1g.5gb": 1}}, {"devices": [1]}),
     "nodePools[0].sharing.layout[0].profiles", ["2 x 3g.20gb + 1 x 1g.5gb", "do not fit on one A100-40GB",
                                                 "3g.20gb up to 2"]),
    ("config-name-not-a-label-value", _with_sharing(configName="triton layout"),
     "nodePools[0].sharing.configName", ["'triton layout'", "label value"]),
    ("config-name-of-the-operator", _with_sharing(configName="all-1g.5gb"), "nodePools[0].sharing.configName",
     ["'all-1g.5gb'", "all-"]),
]


@pytest.mark.parametrize("case,raw,path,fragments", BAD, ids=[b[0] for b in BAD])
def test_bad_layout_is_rejected_with_path_value_and_allowed(case, raw, path, fragments):
    found = rejected(copy.deepcopy(raw))
    assert path in found, found
    for fragment in fragments:
        assert fragment in found[path], (fragment, found[path])


def test_config_name_only_with_a_layout():
    raw = stack_raw_003_uniform()
    raw["nodePools"][0]["sharing"]["configName"] = "mine"
    assert "'mine'" in rejected(raw)["nodePools[0].sharing.configName"]


def test_layout_needs_the_gpu_operators_mig_manager():
    raw = stack_raw("prod")  # ACK: ack-ai-installer partitions with one profile per pool
    raw["nodePools"][0]["sharing"] = {"mode": "mig", "layout": [{"devices": list(range(8)),
                                                                 "profiles": {"1g.5gb": 7}}]}
    assert "allowed on ACK: profile" in rejected(raw)["nodePools[0].sharing.layout"]
    raw = example_raw("003")
    raw["cluster"]["simulateGpus"] = True
    raw["monitoring"]["gpuExporter"] = "dcgm"
    assert "allowed with simulateGpus: profile" in rejected(raw)["nodePools[0].sharing.layout"]


@pytest.mark.parametrize("asked,fragments", [
    (None, ["required", "1g.5gb, whole"]), ("2g.10gb", ["'2g.10gb'", "not in the layout"])])
def test_workload_names_a_device_the_layout_offers(asked, fragments):
    raw = example_raw("003")
    raw["workloads"][0]["gpu"] = {"count": 1, **({"migProfile": asked} if asked else {})}
    message = rejected(raw)["workloads[0].gpu.migProfile"]
    assert all(f in message for f in fragments), message


def test_mig_profile_on_other_pools():
    raw = stack_raw("staging")  # exclusive
    raw["workloads"][0]["gpu"]["migProfile"] = "1g.5gb"
    assert "not MIG" in rejected(raw)["workloads[0].gpu.migProfile"]
    raw = stack_raw("prod")     # every GPU 1g.5gb
    raw["workloads"][0]["gpu"]["migProfile"] = "2g.10gb"
    assert "allowed: 1g.5gb" in rejected(raw)["workloads[0].gpu.migProfile"]


def test_one_mig_parted_file_cannot_hold_two_meanings():
    raw = example_raw("003")
    for name, model, profile in (("a", "A100-40GB", "1g.10gb"), ("b", "A100-80GB", "1g.10gb")):
        pool = copy.deepcopy(raw["nodePools"][0])
        pool.update(name=name, gpuModel=model, gpusPerNode=1, sharing={"mode": "mig", "profile": profile})
        raw["nodePools"].append(pool)
    message = rejected(raw)["nodePools[2].sharing.profile"]
    assert "'1g.10gb'" in message and "a (4 per GPU)" in message and "b (7 per GPU)" in message
    raw = example_raw("003")
    other = copy.deepcopy(raw["nodePools"][0])
    other["name"] = "other"
    other["sharing"]["layout"] = [{"devices": [0, 1], "profiles": {"3g.20gb": 2}}]
    raw["nodePools"].append(other)
    assert "already the layout of pool 'a100-mig'" in rejected(raw)["nodePools[1].sharing.configName"]


# ---------------------------------------------------------------------------------------------- policies
def _violations(records, policy_id):
    return [v for v in run_policies(records) if v.policy_id == policy_id]


def test_policies_read_every_resource_of_a_layout_pool():
    records = synthesize(stack_config_from_namespace(example_raw("003")), stack="003-triton-mig")
    assert _violations(records, "gpu-resource-matches-pool") == []
    deployment = next(r for r in records if r.is_kubernetes_object and r.inputs["kind"] == "Deployment")
    limits = deployment.inputs["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    limits["nvidia.com/mig-2g.10gb"] = limits.pop("nvidia.com/mig-1g.5gb")
    found = _violations(records, "gpu-resource-matches-pool")
    assert found and "nvidia.com/gpu, nvidia.com/mig-1g.5gb" in found[0].message


def test_hpa_capacity_counts_the_layouts_instances():
    records = synthesize(stack_config_from_namespace(example_raw("003")), stack="003-triton-mig")
    assert _violations(records, "gpu-hpa-within-pool-capacity") == []
    hpa = next(r for r in records if r.is_kubernetes_object and r.inputs["kind"] == "HorizontalPodAutoscaler")
    hpa.inputs["spec"]["maxReplicas"] = 8
    found = _violations(records, "gpu-hpa-within-pool-capacity")
    assert found and "at most 7" in found[0].message and "7 nvidia.com/mig-1g.5gb" in found[0].message


def test_mig_policy_checks_each_gpu_of_a_layout():
    records = synthesize(stack_config_from_namespace(example_raw("003")), stack="003-triton-mig")
    assert _violations(records, "gpu-mig-profile-valid") == []
    pool = next(r for r in records if r.type == "gpuplatform:index:GpuNodePool")
    pool.inputs["migLayout"][0]["profiles"] = {"3g.20gb": 2, "1g.5gb": 1}
    found = _violations(records, "gpu-mig-profile-valid")
    assert found and "2 x 3g.20gb + 1 x 1g.5gb" in found[0].message


def test_example_003_is_the_seeds_node():
    raw = namespace_from_stack_file(EXAMPLES["003"])
    assert raw["nodePools"][0]["sharing"]["layout"] == LAYOUT


def test_one_mig_strategy_per_cluster():
    raw = example_raw("003")
    single = copy.deepcopy(raw["nodePools"][0])
    single.update(name="a100-single", gpusPerNode=1, sharing={"mode": "mig", "profile": "3g.20gb",
                                                              "strategy": "single"})
    raw["nodePools"].append(single)
    message = rejected(raw)["nodePools[1].sharing.strategy"]
    assert "'single'" in message and "'a100-mig' (mixed)" in message and "allowed: mixed" in message
