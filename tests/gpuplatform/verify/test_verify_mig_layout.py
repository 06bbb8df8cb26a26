"""MIG checks of a pool with a per-GPU layout (example 003: GPU 0 as seven 1g.5gb instances, GPU 1 whole) against
recorded node lists of a kubeconfig cluster running the GPU Operator: the nodes advertise several resources, and
mig-manager reports through ``nvidia.com/mig.config.state`` whether the layout's config is applied."""
from __future__ import annotations

import pytest
from k8s_fixture_server import REPO, api_client_for

from gpuplatform.components.stack_config import load_stack_file
from gpuplatform.verify import run_verify

POOL = "pool/a100-mig"
NODE_CHECKS = ("nodes.present", "nodes.labels", "nodes.taints", "nodes.gpu-model", "nodes.gpu-capacity",
               "nodes.mig-config", "nodes.mig-partitioned")


@pytest.fixture(scope="module")
def triton_cfg():
    return load_stack_file(REPO / "examples" / "003-triton-mig" / "Pulumi.003-triton-mig.yaml")


def node_results(fake_api, cfg, variant: str) -> dict:
    """The pool's node checks (the other checks have no recorded responses here and are not looked at)."""
    client = api_client_for(fake_api("triton-mig", variant))
    try:
        results = run_verify(cfg, client)
    finally:
        client.close()
    return {r.check: r for r in results if r.subject == POOL}


def test_layout_applied_passes_with_every_resource_exact(fake_api, triton_cfg):
    results = node_results(fake_api, triton_cfg, "healthy")
    assert sorted(results) == sorted(NODE_CHECKS)
    assert all(r.ok for r in results.values()), {k: r.message for k, r in results.items() if not r.ok}
    assert results["nodes.gpu-capacity"].message == \
        "every node exposes exactly nvidia.com/gpu=1, nvidia.com/mig-1g.5gb=7 (the triton-7x1g-1whole layout)"
    assert results["nodes.mig-config"].message == \
        "every node has nvidia.com/mig.config=triton-7x1g-1whole, applied (state success)"
    # the whole GPU the layout leaves is not mistaken for a GPU outside MIG mode
    assert results["nodes.mig-partitioned"].message == "no whole GPUs beyond the layout's 1 MIG-disabled GPU(s) per node"


def test_layout_still_being_applied_names_each_resource_and_mig_manager(fake_api, triton_cfg):
    results = node_results(fake_api, triton_cfg, "mig-pending")
    failed = {k for k, r in results.items() if not r.ok}
    assert failed == {"nodes.gpu-capacity", "nodes.mig-config", "nodes.mig-partitioned"}
    cap = results["nodes.gpu-capacity"]
    assert cap.message == ("pool a100-mig: node gpu-a100-01: nvidia.com/gpu expected 1, found 2, "
                           "nvidia.com/mig-1g.5gb expected 7, found none")
    assert cap.cause.startswith("mig-manager is still applying triton-7x1g-1whole "
                                "(nvidia.com/mig.config.state=pending)")
    assert "--wait" in cap.cause
    assert results["nodes.mig-config"].message == \
        "pool a100-mig: node gpu-a100-01: nvidia.com/mig.config.state=pending (expected success)"
    assert results["nodes.mig-partitioned"].message == \
        "whole GPUs outside MIG mode: gpu-a100-01: nvidia.com/gpu=2 (the layout leaves 1 whole)"


def test_layout_config_not_picked_up_points_at_the_cluster_policy(fake_api, triton_cfg):
    results = node_results(fake_api, triton_cfg, "config-not-picked-up")
    assert {k for k, r in results.items() if not r.ok} == \
        {"nodes.gpu-capacity", "nodes.mig-config", "nodes.mig-partitioned"}
    for check in ("nodes.gpu-capacity", "nodes.mig-config"):
        cause = results[check].cause
        assert cause.startswith("mig-manager could not apply triton-7x1g-1whole (nvidia.com/mig.config.state=failed)")
        assert "custom config was not picked up" in cause
        assert "ClusterPolicy spec.migManager.config.name must be gpuplatform-mig-parted-config" in cause
    assert results["nodes.mig-config"].message == \
        "pool a100-mig: node gpu-a100-01: nvidia.com/mig.config.state=failed (expected success)"


def test_node_left_on_another_config_is_named_with_what_it_advertises(fake_api, triton_cfg):
    """A node partitioned with the operator's built-in all-balanced before the stack's config replaced the
    built-ins: mig-manager cannot find all-balanced any more (state failed) and the old partitions stay."""
    results = node_results(fake_api, triton_cfg, "wrong-label")
    assert {k for k, r in results.items() if not r.ok} == {"nodes.labels", "nodes.gpu-capacity", "nodes.mig-config"}
    cap = results["nodes.gpu-capacity"]
    # only the second node is named, with every resource that differs, undeclared MIG profiles included
    assert cap.message == ("pool a100-mig: node gpu-a100-02: nvidia.com/gpu expected 1, found 0, "
                           "nvidia.com/mig-1g.5gb expected 7, found 4, nvidia.com/mig-2g.10gb expected 0, found 2, "
                           "nvidia.com/mig-3g.20gb expected 0, found 2")
    assert cap.cause.startswith("the node is labelled nvidia.com/mig.config=all-balanced, not triton-7x1g-1whole")
    assert results["nodes.mig-config"].message == (
        "pool a100-mig: node gpu-a100-02: nvidia.com/mig.config=all-balanced (expected triton-7x1g-1whole), "
        "nvidia.com/mig.config.state=failed (expected success)")
    assert results["nodes.mig-partitioned"].ok


def test_unhealthy_whole_gpu_is_read_from_allocatable_not_capacity(fake_api, triton_cfg):
    """The whole GPU failed its health check: capacity still counts it, allocatable (what the scheduler uses)
    does not, and mig-manager's state says nothing about it."""
    results = node_results(fake_api, triton_cfg, "gpu-unhealthy")
    assert {k for k, r in results.items() if not r.ok} == {"nodes.gpu-capacity"}
    cap = results["nodes.gpu-capacity"]
    assert cap.message == "pool a100-mig: node gpu-a100-01: nvidia.com/gpu expected 1, found 0"
    assert cap.cause.startswith("the device plugin reports unhealthy devices on node gpu-a100-01: "
                                "nvidia.com/gpu (capacity 1, allocatable 0); a GPU failed its health check")


@pytest.mark.parametrize("variant", ["mig-pending", "config-not-picked-up", "wrong-label", "gpu-unhealthy"])
def test_every_mig_failure_names_pool_node_and_cause(fake_api, triton_cfg, variant):
    for check, r in node_results(fake_api, triton_cfg, variant).items():
        assert bool(r.cause) == (not r.ok), check
        if not r.ok and check in ("nodes.gpu-capacity", "nodes.mig-config"):
            assert r.message.startswith("pool a100-mig: node gpu-a100-0"), r.message
