"""API-version policies judge against the target cluster's version: the stack's (registered by GpuPlatform), the
policy's kubernetesVersion, or ``check --kube-version``. The package's own output for an old cluster passes its
own pack."""
import json

import pytest

from gpuplatform.check import load_manifests, run_policies, with_kubernetes_version
from gpuplatform.cli import main
from gpuplatform.policies.registry import by_id
from live_state import live_outputs
from support import FIXTURES_DIR, stack_raw, synth

API_POLICIES = [by_id("no-removed-api-versions")]
SEED = FIXTURES_DIR / "seed_manifests" / "001_legacy_ack_guide.yaml"
HPA = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h", "namespace": "x"},
       "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}, "maxReplicas": 2}}


@pytest.fixture(scope="module")
def old_cluster():
    """The staging stack on a 1.22 cluster, synthesized by the real program (ARMS: no pinned chart limits the
    version; a self-hosted stack needs kube-prometheus-stack's 1.25 or later)."""
    raw = stack_raw("staging")
    raw["cluster"]["kubernetesVersion"] = "1.22"
    return synth(raw)


def test_the_packages_own_output_on_an_old_cluster_passes_its_pack(old_cluster):
    hpa_versions = {r.inputs["apiVersion"] for r in old_cluster if r.inputs.get("kind") == "HorizontalPodAutoscaler"}
    assert hpa_versions and hpa_versions <= {"autoscaling/v2beta1", "autoscaling/v2beta2"}
    assert run_policies(old_cluster) == []
    assert run_policies(old_cluster, policies=API_POLICIES, stack_state=live_outputs(old_cluster)) == []


def test_the_target_version_decides(old_cluster):
    """The same objects against a cluster that no longer serves them (config, as `check --kube-version` sets it)."""
    out = run_policies(old_cluster, with_kubernetes_version(None, "1.26"), policies=API_POLICIES)
    assert out and all("1.26 does not serve" in v.message for v in out)
    assert {v.policy_id for v in out} == {"no-removed-api-versions"}


@pytest.mark.parametrize("version,why", [
    (None, "removed in Kubernetes 1.25; use autoscaling/v2"),
    ("1.26", "which Kubernetes 1.26 does not serve (removed in 1.25; use autoscaling/v2)"),
])
def test_a_removed_hpa_api_version_is_one_finding(version, why, tmp_path, capsys):
    """One fact, one finding: the whole pack over an HPA of a removed apiVersion reports it once, whether the
    target version is known or not."""
    path = tmp_path / "hpa.yaml"
    path.write_text(json.dumps({**HPA, "apiVersion": "autoscaling/v2beta1"}))
    main(["check", "--manifests", str(path), "--format", "json"] + (["--kube-version", version] if version else []))
    found = [v for v in json.loads(capsys.readouterr().out) if "autoscaling/v2beta1" in v["message"]]
    assert [(v["policy_id"], v["resource_name"]) for v in found] == [("no-removed-api-versions", "x/h")]
    assert why in found[0]["message"]


@pytest.mark.parametrize("version,reported", [
    (None, {"extensions/v1beta1", "autoscaling/v2beta1"}),     # no target: anything removed anywhere
    ("1.22", {"extensions/v1beta1"}),                           # v2beta1 is still served on 1.22
    ("1.25", {"extensions/v1beta1", "autoscaling/v2beta1"}),
])
def test_plain_yaml_is_judged_against_the_given_version(version, reported):
    config = with_kubernetes_version(None, version) if version else None
    out = run_policies(load_manifests([SEED]), config, policies=[by_id("no-removed-api-versions")])
    assert {m for v in out for m in reported if m in v.message} == reported and len(out) == len(reported), out


def test_an_api_not_yet_served_is_reported(tmp_path, capsys):
    path = tmp_path / "hpa.yaml"
    path.write_text(json.dumps(HPA))

    def api_messages(version):
        main(["check", "--manifests", str(path), "--kube-version", version, "--format", "json"])
        return [v["message"] for v in json.loads(capsys.readouterr().out)
                if v["policy_id"] == "no-removed-api-versions"]

    old = api_messages("1.22")
    assert len(old) == 1 and "autoscaling/v2, which Kubernetes 1.22 does not serve (served from 1.23)" in old[0]
    assert api_messages("1.23") == []
