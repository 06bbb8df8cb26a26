"""A GPU the catalog lacks, described by the stack: accepted on instance types the catalog lacks, checked against
the stack's own figures, and said to be the stack's statement on every plan."""
import pytest

from gpuplatform.components.pools import pool_facts
from gpuplatform.components.validation import load
from gpuplatform.plan import custom_gpu_warnings, run_plan
from support import one, stack_raw, synth
from test_config_validation import assert_rejected, compose, set_in

NODE_POOL = "alicloud:cs/nodePool:NodePool"
CARD = {"name": "gn8v-card", "memoryGib": 95}


def described(raw, pool=0, **card):
    """Pool ``pool`` of ``raw`` on an instance type outside the catalog, its GPU described by the stack."""
    raw["nodePools"][pool].update({"instanceTypes": ["ecs.gn8v.4xlarge"], "gpusPerNode": 1,
                                   "customGpu": {**CARD, **card}})
    return raw


def test_a_described_gpu_is_accepted_and_used_as_the_pools_model():
    cfg = load(described(stack_raw("staging")))
    facts = pool_facts(cfg, cfg.node_pools[0])
    assert (facts.model.name, facts.model.reported_gib, facts.gpus_per_node) == ("gn8v-card", 95, 1)
    assert not facts.model.mig_capable
    pool = one(synth(described(stack_raw("staging"))), NODE_POOL)
    assert pool.inputs["instanceTypes"] == ["ecs.gn8v.4xlarge"]


def test_cgpu_requests_are_checked_against_the_stated_memory():
    cgpu_card = _custom(memoryGib=20, sharing=["exclusive", "cgpu"])
    assert_rejected("dev", compose(cgpu_card, set_in(["workloads", 0, "gpu"], {"memoryGib": 21})),
                    "workloads[0].gpu.memoryGib", ["21 GiB is more than one gn8v-card card offers (20 GiB",
                                                   "allowed: 1..20"])
    raw = stack_raw("dev")
    compose(cgpu_card, set_in(["workloads", 0, "gpu"], {"memoryGib": 10}))(raw)
    cfg = load(raw)
    assert pool_facts(cfg, cfg.node_pools[0]).replicas_per_node(cfg.workloads[0].gpu) == 2  # 20 GiB / 10 GiB


def test_every_plan_says_the_facts_are_the_stacks(tmp_path, capsys):
    assert custom_gpu_warnings(load(stack_raw("staging"))) == []
    warnings = custom_gpu_warnings(load(described(stack_raw("staging"))))
    assert len(warnings) == 1 and "nodePools[0].customGpu 'gn8v-card'" in warnings[0]
    assert "95 GiB" in warnings[0] and "this stack's statement" in warnings[0]
    assert run_plan(described(stack_raw("staging")), "staging", None, "table", out=open(tmp_path / "o", "w"),
                    sweep=False) == 0
    assert "customGpu 'gn8v-card' is not in the GPU catalog" in capsys.readouterr().err


def _custom(**card):
    return lambda raw: described(raw, **card)


CASES = [
    ("catalog-name", _custom(name="A10"), "nodePools[0].customGpu.name", ["'A10' is a catalog model", "customGpu"]),
    ("catalog-instance-type", compose(_custom(), set_in(["nodePools", 0, "instanceTypes"],
                                                        ["ecs.gn7i-c8g1.2xlarge"])),
     "nodePools[0].instanceTypes[0]", ["'ecs.gn7i-c8g1.2xlarge' is in the catalog with A10", "leave customGpu out"]),
    ("not-an-instance-type", compose(_custom(), set_in(["nodePools", 0, "instanceTypes"], ["gn8v 4xlarge"])),
     "nodePools[0].instanceTypes[0]", ["'gn8v 4xlarge'", "ecs.<family>.<size>"]),
    ("gpus-per-node-missing", compose(_custom(), lambda raw: raw["nodePools"][0].pop("gpusPerNode")),
     "nodePools[0].gpusPerNode", ["required with customGpu 'gn8v-card'"]),
    ("gpu-model-contradicts", compose(_custom(), set_in(["nodePools", 0, "gpuModel"], "H20")),
     "nodePools[0].gpuModel", ["'H20' contradicts customGpu 'gn8v-card'"]),
    ("mig-on-custom", compose(_custom(sharing=["exclusive"]),
                              set_in(["nodePools", 0, "sharing"], {"mode": "mig", "profile": "1g.12gb"})),
     "nodePools[0].sharing.mode", ["'mig' on customGpu 'gn8v-card'", "catalog", "allowed: exclusive"]),
    ("sharing-not-stated", compose(_custom(), set_in(["nodePools", 0, "sharing"], {"mode": "cgpu"}),
                                   set_in(["workloads", 0, "gpu"], {"memoryGib": 4})),
     "nodePools[0].sharing.mode", ["'cgpu' on customGpu 'gn8v-card'", "does not list it", "allowed: exclusive"]),
    ("no-memory", _custom(memoryGib=0), "nodePools[0].customGpu.memoryGib", ["0"]),
]


@pytest.mark.parametrize("case,mutate,path,fragments", CASES, ids=[c[0] for c in CASES])
def test_bad_custom_gpu_is_rejected(case, mutate, path, fragments):
    assert_rejected("staging", mutate, path, fragments)


@pytest.mark.parametrize("typo,near", [("L40", "Did you mean L4, L20?"), ("H2O", "Did you mean H20?"),
                                       ("A800", "Did you mean A800-80GB, A800-40GB?")])
def test_unknown_gpu_model_points_at_custom_gpu_and_close_names(typo, near):
    assert_rejected("local", set_in(["nodePools", 0, "gpuModel"], typo), "nodePools[0].gpuModel",
                    [f"{typo!r} is not a known GPU model", near, "customGpu"])
