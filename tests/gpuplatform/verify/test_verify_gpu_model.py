"""``nodes.gpu-model``: the card on the nodes is the one the stack was computed for, and reports the memory the
catalog holds; what the catalog could not source is proven (or refuted) on the first deploy."""
from __future__ import annotations

import copy

import pytest
from k8s_fixture_server import api_client_for
from kubernetes import client as k8s
from support import stack_raw
from test_scenarios import example_raw

from gpuplatform.catalogs.gpus import GPU_MODELS, label_memory_mib, product_match
from gpuplatform.components.pools import all_pool_facts
from gpuplatform.components.validation import load
from gpuplatform.verify import run_verify
from gpuplatform.verify.nodes import check_gpu_model


@pytest.mark.parametrize("model,label,verdict", [
    ("A10", "NVIDIA-A10", "match"),
    ("A10", "NVIDIA-A100-SXM4-40GB", "mismatch"),  # a prefix of another card's name is not that card
    ("A100-40GB", "NVIDIA-A100-PCIE-40GB", "match"),  # the form factor is not the catalog's concern
    ("A100-40GB", "NVIDIA-A100-SXM4-80GB", "mismatch"),  # the same GPU with another memory size
    ("A100-40GB", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "match"),  # GFD's single-strategy suffix
    ("T4", "Tesla-T4-SHARED", "match"),  # GFD's time-slicing suffix
    ("H100-80GB", "NVIDIA-H100-80GB-HBM3", "match"),
    ("H100-80GB", "NVIDIA-H100-PCIe", "variant"),  # no memory size in the label: not provable from it
    ("L4", "NVIDIA-L40S", "mismatch"),
    ("H20", "NVIDIA-H20", "match"),
])
def test_a_product_label_is_matched_to_the_catalog_model(model, label, verdict):
    assert product_match(GPU_MODELS[model], label) == verdict


def test_memory_labels_of_gfd_and_ack_are_read_in_mib():
    assert (label_memory_mib("15360"), label_memory_mib("16276MiB"), label_memory_mib("16GB")) == (15360, 16276, None)


def node(name: str, **labels: str) -> k8s.V1Node:
    return k8s.V1Node(metadata=k8s.V1ObjectMeta(name=name, labels=labels))


def pool_facts(stack: str, **pool_changes):
    raw = copy.deepcopy(example_raw(stack) if stack.isdigit() else stack_raw(stack))
    raw["nodePools"][0].update(pool_changes)
    cfg = load(raw)
    return all_pool_facts(cfg)[cfg.node_pools[0].name]


def test_a_cgpu_pool_whose_cards_report_fewer_gib_than_the_catalog_fails():
    pool = pool_facts("dev")  # cGPU on T4: the catalog's 15079 MiB, 14 GiB per card
    low = check_gpu_model(pool, [node("n1", **{"aliyun.accelerator/nvidia_name": "Tesla-T4",
                                               "aliyun.accelerator/nvidia_mem": "14000MiB"})])
    assert not low.ok and "cGPU counts 13 GiB per card, not 14" in low.message
    # the same GiB: a warning only (the figure differs, nothing the stack computed does)
    same = check_gpu_model(pool, [node("n1", **{"aliyun.accelerator/nvidia_name": "Tesla-T4",
                                                "aliyun.accelerator/nvidia_mem": "15109MiB"})])
    assert same.ok and same.warning and "reports 15109 MiB per card; the catalog holds 15079 MiB" in same.message


def test_a_model_without_a_sourced_figure_gets_it_reported():
    pool = pool_facts("005", gpuModel="H800-80GB")  # whole GPUs on an existing cluster
    result = check_gpu_model(pool, [node("n1", **{"nvidia.com/gpu.product": "NVIDIA-H800-80GB-HBM3",
                                                  "nvidia.com/gpu.memory": "81559"})])
    assert result.ok and result.warning
    assert "reports 81559 MiB per card; the catalog holds no sourced figure for H800-80GB" in result.message


def test_nodes_without_a_product_label_leave_the_card_unproven():
    pool = pool_facts("staging")
    result = check_gpu_model(pool, [node("n1")])
    assert result.ok and result.warning and "GPU Feature Discovery is not running there" in result.message


def test_a_pool_whose_nodes_carry_another_card_fails(fake_api, staging_cfg):
    server = fake_api("staging", "wrong-gpu")
    client = api_client_for(server)
    try:
        results = {(r.check, r.subject): r for r in run_verify(staging_cfg, client)}
    finally:
        client.close()
    result = results[("nodes.gpu-model", "pool/a10")]
    assert not result.ok
    assert result.message == ("the pool declares A10, but cn-beijing.192.168.94.107: "
                              "aliyun.accelerator/nvidia_name=Tesla-T4")
    assert "computed for the wrong GPU" in result.cause
    healthy = fake_api("staging", "healthy")
    client = api_client_for(healthy)
    try:
        ok = {(r.check, r.subject): r for r in run_verify(staging_cfg, client)}[("nodes.gpu-model", "pool/a10")]
    finally:
        client.close()
    assert (ok.ok, ok.warning, ok.message) == (True, False, "every node carries A10 (NVIDIA-A10)")
