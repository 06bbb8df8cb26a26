"""The GPU models added to the catalog (L4, H20, H800-80GB, A800-80GB, A800-40GB) as a stack uses them: MIG pools
on an existing cluster plan, illegal layouts are rejected with the path, and what needs a card's reported memory
refuses a model whose figure is not sourced."""
import yaml
import pytest

from gpuplatform.catalogs.gpus import GPU_MODELS
from gpuplatform.catalogs.mig import MIG_PROFILES
from gpuplatform.components.gpu_software import MIG_PARTED_CONFIG_MAP
from gpuplatform.components.errors import ConfigError
from gpuplatform.components.pools import all_pool_facts
from gpuplatform.components.validation import load
from gpuplatform.plan import run_plan
from support import stack_raw
from test_scenarios import example_raw


def rejected(raw: dict) -> dict[str, str]:
    """path -> every message ``raw`` is rejected with at that path, joined."""
    with pytest.raises(ConfigError) as info:
        load(raw)
    out: dict[str, str] = {}
    for i in info.value.issues:
        out[i.path] = f"{out[i.path]} | {i.message}" if i.path in out else i.message
    return out


def _on(raw: dict, model: str, layout=None, profile=None) -> dict:
    """Seed 003's pool (an existing cluster, two GPUs a node) moved to ``model``: a per-GPU layout, or one
    profile for every GPU; its Triton workload asks for the layout's first profile."""
    pool = raw["nodePools"][0]
    pool["gpuModel"] = model
    if layout is not None:
        pool["sharing"]["layout"] = layout
        raw["workloads"][0]["gpu"]["migProfile"] = next(iter(layout[0].get("profiles", {})), "whole")
    else:
        pool["sharing"] = {"mode": "mig", "strategy": "mixed", "profile": profile}
        raw["workloads"][0]["gpu"].pop("migProfile", None)
    return raw


def _mig_parted(tmp_path) -> dict:
    """The mig-parted config the plan hands the GPU Operator chart (migManager.config.data)."""
    release = yaml.safe_load((tmp_path / "manifests" / "helmrelease-gpu-operator-gpu-operator.yaml").read_text())
    config = release["values"]["migManager"]["config"]
    assert config["name"] == MIG_PARTED_CONFIG_MAP
    return yaml.safe_load(config["data"]["config.yaml"])


def test_a_plan_of_an_existing_cluster_with_an_h20_mig_layout_passes(tmp_path, capsys):
    raw = _on(example_raw("003"), "H20", layout=[{"devices": [0], "profiles": {"1g.12gb": 7}}, {"devices": [1]}])
    assert run_plan(raw, "h20", str(tmp_path), "table", out=open(tmp_path / "out", "w"), sweep=False) == 0
    devices = _mig_parted(tmp_path)["mig-configs"]["triton-7x1g-1whole"]
    assert devices[0] == {"devices": [0], "mig-enabled": True,
                          "mig-devices": {"1g.12gb": 7}}
    assert devices[1] == {"devices": [1], "mig-enabled": False}


@pytest.mark.parametrize("model,profile", [("H800-80GB", "3g.40gb"), ("A800-80GB", "1g.10gb"),
                                           ("A800-40GB", "2g.10gb"), ("H20", "1g.24gb")])
def test_one_profile_for_every_gpu_plans_on_each_new_mig_model(tmp_path, model, profile):
    raw = _on(example_raw("003"), model, profile=profile)
    per_node = 2 * MIG_PROFILES[model][profile]  # seed 003's node has two GPUs
    raw["workloads"][0]["autoscaling"]["maxReplicas"] = min(raw["workloads"][0]["autoscaling"]["maxReplicas"], per_node)
    assert run_plan(raw, "mig", str(tmp_path), "table", out=open(tmp_path / "out", "w"), sweep=False) == 0
    facts = all_pool_facts(load(raw))["a100-mig"]
    assert (facts.model.name, facts.resource_name) == (model, f"nvidia.com/mig-{profile}")
    assert facts.units_per_node == per_node


@pytest.mark.parametrize("model,profiles,path,fragments", [
    ("H20", {"4g.48gb": 1, "3g.48gb": 1, "1g.12gb": 1}, "nodePools[0].sharing.layout[0].profiles",
     ["1 x 4g.48gb + 1 x 3g.48gb + 1 x 1g.12gb do not fit on one H20", "4g.48gb up to 1",
      "e.g. 1g.12gb x 7 or 4g.48gb x 1 + 3g.48gb x 1 on an H20"]),
    ("H20", {"1g.5gb": 7}, "nodePools[0].sharing.layout[0].profiles.1g.5gb",
     ["'1g.5gb' is not a MIG profile of H20", "1g.12gb", "7g.96gb"]),
    ("H800-80GB", {"3g.40gb": 2, "1g.10gb": 1}, "nodePools[0].sharing.layout[0].profiles",
     ["do not fit on one H800-80GB", "3g.40gb up to 2"]),
    ("A800-80GB", {"1g.10gb+me": 2}, "nodePools[0].sharing.layout[0].profiles",
     ["2 x 1g.10gb+me do not fit on one A800-80GB", "1g.10gb+me up to 1"]),
])
def test_an_illegal_layout_on_a_new_model_is_rejected_at_its_path(model, profiles, path, fragments):
    raw = _on(example_raw("003"), model, layout=[{"devices": [0], "profiles": profiles}, {"devices": [1]}])
    issues = rejected(raw)
    where = path if path in issues else next((p for p in issues if p.startswith(path)), None)
    assert where is not None, issues
    for fragment in fragments:
        assert fragment in issues[where], issues[where]


def test_a_profile_of_another_model_names_the_pool_models_own():
    raw = _on(example_raw("003"), "H800-80GB", profile="1g.12gb")
    issues = rejected(raw)
    assert "'1g.12gb' is not a MIG profile of H800-80GB" in issues["nodePools[0].sharing.profile"]
    assert "1g.10gb" in issues["nodePools[0].sharing.profile"]


# ---------------------------------------------------------------- a model without a sourced reported_mib (H800)
def test_cgpu_on_a_model_without_sourced_reported_memory_is_refused_naming_it():
    raw = stack_raw("local")
    raw["nodePools"][0].update({"gpuModel": "H800-80GB", "sharing": {"mode": "cgpu"}})
    issues = rejected(raw)
    message = issues["nodePools[0].sharing.mode"]
    assert "'H800-80GB' has no sourced per-card memory as nvidia-smi reports it" in message
    assert "cGPU" in message and "allowed: exclusive or mig on H800-80GB, or cGPU on" in message
    assert "L4" in message and "H800-80GB, or cGPU on T4" in message


def test_simulated_gpus_of_a_model_without_sourced_reported_memory_are_refused():
    raw = stack_raw("local")  # kind kubeconfig with simulateGpus: fake-gpu-operator advertises each GPU's memory
    raw["nodePools"][0]["gpuModel"] = "A800-40GB"
    issues = rejected(raw)
    assert "'A800-40GB' has no sourced per-card memory" in issues["nodePools[0].gpuModel"]
    assert "fake-gpu-operator gpuMemory" in issues["nodePools[0].gpuModel"]
    raw["nodePools"][0]["gpuModel"] = "A800-80GB"  # sourced: 81251 MiB
    load(raw)


def test_every_catalog_model_is_offered_by_the_stack_schema():
    from gpuplatform.schema import stack_file_schema

    prop = stack_file_schema()["$defs"]["NodePool"]["properties"]["gpuModel"]
    assert set(prop["examples"]) == set(GPU_MODELS)
    assert all(name in prop["description"] for name in GPU_MODELS)
