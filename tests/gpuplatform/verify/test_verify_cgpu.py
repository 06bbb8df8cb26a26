"""``sharing.cgpu-component``: on an adopted dedicated ACK cluster with cGPU pools (example 004, the seed article's
cluster), the legacy ack-cgpu component the stack cannot install runs its device plugin DaemonSet.

Recorded (``tests/fixtures/k8s_api/cgpu-notebooks/``): ``healthy``, ack-cgpu installed from the console (Helm
release ``cgpu``, DaemonSet kube-system/gpushare-device-plugin-ds with NODE SELECTOR cgpu=true, one T4 node
advertising 14 GiB of aliyun.com/gpu-mem); ``cgpu-missing``, never installed: no DaemonSet, no gpu-mem. Only the
cluster, node and cGPU checks have recorded responses; the monitoring and workload checks are not looked at.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from k8s_fixture_server import REPO, STACKS, api_client_for
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from gpuplatform.catalogs.sharing import ACK_LEGACY_SHARING_ADDON
from gpuplatform.components.addons import prerequisites
from gpuplatform.components.stack_config import load_stack_file
from gpuplatform.verify import run_verify
from gpuplatform.verify.cluster import CGPU_DEVICE_PLUGIN_DS, check_cgpu_component, uses_cgpu_component

SUBJECT = "daemonset/kube-system/gpushare-device-plugin-ds"
EXAMPLE_004 = REPO / "examples" / "004-cgpu-notebooks" / "Pulumi.004-cgpu-notebooks.yaml"


@pytest.fixture(scope="module")
def cgpu_cfg():
    return load_stack_file(EXAMPLE_004)


def results_of(fake_api, cfg, variant: str):
    server = fake_api("cgpu-notebooks", variant)
    client = api_client_for(server)
    try:
        results = run_verify(cfg, client)
    finally:
        client.close()
    return {(r.check, r.subject): r for r in results}, server


def test_installed_and_ready_passes(fake_api, cgpu_cfg):
    results, server = results_of(fake_api, cgpu_cfg, "healthy")
    cgpu = results[("sharing.cgpu-component", SUBJECT)]
    assert (cgpu.ok, cgpu.message, cgpu.cause) == (True, "ack-cgpu (Helm release cgpu): 1/1 device plugin pods ready",
                                                   "")
    assert "/apis/apps/v1/namespaces/kube-system/daemonsets/gpushare-device-plugin-ds" in server.paths()
    # the pool's nodes get their GPU memory from it
    assert results[("nodes.gpu-capacity", "pool/t4-cgpu")].ok
    assert results[("cluster.system-pods", "namespaces/kube-system,arms-prom")].ok
    checks = [check for check, _ in results]
    assert checks.index("sharing.cgpu-component") == checks.index("nodes.gpu-capacity") + 1


def test_not_installed_fails_naming_the_console_install(fake_api, cgpu_cfg):
    results, _ = results_of(fake_api, cgpu_cfg, "cgpu-missing")
    cgpu = results[("sharing.cgpu-component", SUBJECT)]
    assert not cgpu.ok
    assert cgpu.message.startswith("not found: the ack-cgpu component's device plugin is not running")
    assert cgpu.cause == ("ack-cgpu is not installed: install it from the ACK console (Marketplace > App Catalog > "
                          "ack-cgpu) as ACK documents; the stack does not install it")
    # and so the node advertises no GPU memory
    cap = results[("nodes.gpu-capacity", "pool/t4-cgpu")]
    assert not cap.ok and "no aliyun.com/gpu-mem" in cap.message and ACK_LEGACY_SHARING_ADDON in cap.cause


# ------------------------------------------------------------------------------------------------ stub API
def _daemon_set(desired: int, ready: int) -> k8s.V1DaemonSet:
    labels = {"component": "gpushare-device-plugin"}
    return k8s.V1DaemonSet(spec=k8s.V1DaemonSetSpec(
        selector=k8s.V1LabelSelector(match_labels=labels),
        template=k8s.V1PodTemplateSpec(metadata=k8s.V1ObjectMeta(labels=labels), spec=k8s.V1PodSpec(
            node_selector={"cgpu": "true"}, containers=[k8s.V1Container(name="gpushare", image="img")]))),
        status=k8s.V1DaemonSetStatus(
        desired_number_scheduled=desired, number_ready=ready, current_number_scheduled=desired,
        number_misscheduled=0))


class Apps:
    def __init__(self, found):
        self.found, self.asked = found, []

    def read_namespaced_daemon_set(self, name, namespace, **_):
        self.asked.append((namespace, name))
        if isinstance(self.found, Exception):
            raise self.found
        return self.found


def test_pods_not_ready_fail_with_the_counts(cgpu_cfg):
    apps = Apps(_daemon_set(2, 1))
    result = check_cgpu_component(cgpu_cfg, apps, 2)
    assert apps.asked == [CGPU_DEVICE_PLUGIN_DS]
    assert (result.ok, result.message) == (False, "1/2 device plugin pods ready")
    assert "crash-looping or pending" in result.cause


def test_scheduled_nowhere_while_the_pools_have_nodes_names_the_cgpu_label(cgpu_cfg):
    result = check_cgpu_component(cgpu_cfg, Apps(_daemon_set(0, 0)), 1)
    assert (result.ok, result.message) == (False, "scheduled on 0 nodes while the cGPU pools have 1")
    assert result.cause.startswith("the cGPU pools' nodes are not labelled cgpu=true")
    # a pool with no node yet: nothing to serve
    idle = check_cgpu_component(cgpu_cfg, Apps(_daemon_set(0, 0)), 0)
    assert (idle.ok, idle.message) == (True, "ack-cgpu (Helm release cgpu): 0/0 device plugin pods ready")


def test_an_api_error_is_a_failed_check(cgpu_cfg):
    result = check_cgpu_component(cgpu_cfg, Apps(ApiException(status=403, reason="Forbidden")), 1)
    assert (result.ok, result.message) == (False, "cannot read it (HTTP 403: Forbidden)")
    assert result.cause == "the credentials lack 'get daemonsets' in kube-system"


def test_only_a_dedicated_cluster_with_cgpu_pools_is_checked(cgpu_cfg, staging_cfg, prod_cfg):
    assert uses_cgpu_component(cgpu_cfg)
    pro = cgpu_cfg.model_copy(update={"cluster": cgpu_cfg.cluster.model_copy(update={"professional": True})})
    dev = load_stack_file(STACKS / "Pulumi.dev.yaml")  # cGPU through ack-ai-installer
    for cfg in (pro, dev, staging_cfg, prod_cfg):
        assert not uses_cgpu_component(cfg)
        assert check_cgpu_component(cfg, Apps(_daemon_set(1, 1)), 1) is None


@pytest.mark.parametrize("path", sorted([*STACKS.glob("Pulumi.*.yaml"), *(REPO / "examples").glob("0*/Pulumi.*.yaml")]),
                         ids=lambda p: Path(p).name)
def test_verify_checks_the_component_plan_names_as_a_prerequisite(path):
    cfg = load_stack_file(path)
    assert uses_cgpu_component(cfg) == (ACK_LEGACY_SHARING_ADDON in prerequisites(cfg))
