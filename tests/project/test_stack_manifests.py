"""What each checked-in stack would apply, pinned as a reviewed snapshot.

A change to any manifest or Helm release of a stack shows up as a diff of its snapshot; regenerate with
``pytest tests/project/test_stack_manifests.py --snapshot-update`` and review the JSON diff. The explicit asserts below pin the numbers
the stacks' comments promise, so an update cannot quietly move them.
"""
import json

import pytest
from syrupy.extensions.json import JSONSnapshotExtension

from gpuplatform.components.stack_config import namespace_from_stack_file
from gpuplatform.plan import manifest_files
from gpuplatform.synth import stack_config_from_namespace, synthesize
from support import REPO

STACKS = ("dev", "staging", "prod", "local")


def stack_manifests(stack: str) -> dict[str, dict]:
    raw = namespace_from_stack_file(REPO / "stacks" / f"Pulumi.{stack}.yaml")
    files = manifest_files(synthesize(stack_config_from_namespace(raw), stack=stack))
    # registration order varies run to run; a JSON round trip also proves the documents are plain data
    return json.loads(json.dumps({name: files[name] for name in sorted(files)}, sort_keys=True))


@pytest.fixture(scope="module")
def manifests() -> dict[str, dict[str, dict]]:
    return {stack: stack_manifests(stack) for stack in STACKS}


@pytest.fixture
def json_snapshot(snapshot):
    return snapshot.use_extension(JSONSnapshotExtension)


@pytest.mark.parametrize("stack", STACKS)
def test_manifests_match_snapshot(stack, manifests, json_snapshot):
    assert manifests[stack] == json_snapshot


@pytest.mark.parametrize("stack", STACKS)
def test_manifests_are_deterministic(stack, manifests):
    """A second synthesis must give the same documents, or the snapshot would pin noise."""
    assert stack_manifests(stack) == manifests[stack]


def one(files: dict[str, dict], kind: str, name: str) -> dict:
    found = [d for f, d in files.items()
             if not f.startswith("helmrelease-") and d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind} {name}, found {len(found)}"
    return found[0]


def container(files: dict[str, dict], name: str) -> dict:
    containers = one(files, "Deployment", name)["spec"]["template"]["spec"]["containers"]
    return next(c for c in containers if c["name"] == name) if len(containers) > 1 else containers[0]


def test_prod_hpa_scales_on_triton_queue_time(manifests):
    hpa = one(manifests["prod"], "HorizontalPodAutoscaler", "flower")
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 7)
    assert hpa["spec"]["metrics"] == [{"type": "Pods", "pods": {
        "metric": {"name": "avg_time_queue_us"}, "target": {"type": "AverageValue", "averageValue": "3500"}}}]


def test_prod_deployment_requests_one_mig_slice(manifests):
    resources = container(manifests["prod"], "flower")["resources"]
    assert resources["requests"]["nvidia.com/mig-1g.5gb"] == "1"
    assert resources["limits"]["nvidia.com/mig-1g.5gb"] == "1"
    assert "nvidia.com/gpu" not in resources["requests"]


def test_staging_hpa_scales_on_process_sm_util(manifests):
    hpa = one(manifests["staging"], "HorizontalPodAutoscaler", "bert-intent-detection")
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 10)
    assert hpa["spec"]["metrics"] == [{"type": "Pods", "pods": {
        "metric": {"name": "DCGM_CUSTOM_PROCESS_SM_UTIL"}, "target": {"type": "AverageValue", "averageValue": "20"}}}]


def test_staging_service_is_an_intranet_load_balancer(manifests):
    svc = one(manifests["staging"], "Service", "bert-intent-detection")
    assert svc["spec"]["type"] == "LoadBalancer"
    assert svc["metadata"]["annotations"]["service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type"] == \
        "intranet"


def test_dev_deployment_requests_four_gib_of_cgpu_memory(manifests):
    resources = container(manifests["dev"], "bert-intent-detection")["resources"]
    assert resources["requests"]["aliyun.com/gpu-mem"] == "4"
    assert resources["limits"]["aliyun.com/gpu-mem"] == "4"
    hpa = one(manifests["dev"], "HorizontalPodAutoscaler", "bert-intent-detection")
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 6)


def test_local_scales_one_workload_by_hpa_and_one_by_keda(manifests):
    files = manifests["local"]
    hpa = one(files, "HorizontalPodAutoscaler", "echo-gpu")
    assert hpa["spec"]["metrics"][0]["pods"]["target"]["averageValue"] == "50"
    scaled = one(files, "ScaledObject", "batch-embedder")
    assert (scaled["spec"]["minReplicaCount"], scaled["spec"]["maxReplicaCount"]) == (0, 2)
    assert scaled["spec"]["triggers"][0]["type"] == "prometheus"
    assert scaled["spec"]["triggers"][0]["metadata"]["threshold"] == "60"
    assert not any(d["kind"] == "HorizontalPodAutoscaler" and d["metadata"]["name"] == "batch-embedder"
                   for f, d in files.items() if not f.startswith("helmrelease-")), \
        "KEDA owns the HPA of a ScaledObject's target; a second HPA would fight it"


@pytest.mark.parametrize("stack", STACKS)
def test_every_workload_has_a_network_policy_that_selects_its_pods(stack, manifests):
    """One NetworkPolicy per workload, in its namespace, isolating exactly the pods of its Deployment for ingress."""
    files = manifests[stack]
    deployments = {(d["metadata"]["namespace"], d["metadata"]["name"]): d for d in files.values()
                   if d.get("kind") == "Deployment"}
    policies = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in files.values()
                if p.get("kind") == "NetworkPolicy"}
    assert deployments and sorted(policies) == sorted(deployments)
    for key, policy in policies.items():
        labels = deployments[key]["spec"]["template"]["metadata"]["labels"]
        assert policy["spec"]["policyTypes"] == ["Ingress"]
        assert policy["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
