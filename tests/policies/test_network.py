"""network-policy-selects-serving-pods: a serving pod no NetworkPolicy of its namespace selects is reported where
the objects checked manage NetworkPolicies (the namespace has one, or gpu-platform authored the pod), and only
then; `plan --out` then `check --manifests` of a stack flags the workload whose NetworkPolicy is removed."""
import json
import shutil

import pytest

from gpuplatform.cli import main
from policy_helpers import only

POLICY = "network-policy-selects-serving-pods"


def deployment(name, labels, image="registry.example/team/api:1.4.2", ports=(8080,), ns="apps"):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": {
                "containers": [{"name": name, "image": image,
                                "ports": [{"containerPort": p} for p in ports]}]}}}}


def service(name, selector, ns="apps"):
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
            "spec": {"selector": selector, "ports": [{"port": 80, "targetPort": 8080}]}}


def netpol(name, pod_selector, ns="apps", types=("Ingress",)):
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": name, "namespace": ns},
            "spec": {"podSelector": pod_selector, "policyTypes": list(types)}}


def resources(*objs):
    from gpuplatform.policies.k8s import type_token
    from gpuplatform.records import RegisteredResource
    return [RegisteredResource(type_token(o["apiVersion"], o["kind"]), f"{o['metadata']['namespace']}/"
                               f"{o['metadata']['name']}", o) for o in objs]


API = {"app": "api"}


def test_a_pod_behind_a_service_that_the_namespaces_policies_leave_out_is_reported():
    found = only(POLICY, resources(deployment("api", API), service("api", API),
                                   netpol("db-only", {"matchLabels": {"app": "db"}})))
    assert found == ["Deployment apps/api serves on port(s) 8080 (behind Service apps/api), and no NetworkPolicy of "
                     "namespace apps selects its pods: every pod of the cluster reaches them"]


@pytest.mark.parametrize("policy", [netpol("all", {}), netpol("api", {"matchLabels": API}),
                                    netpol("api", {"matchExpressions": [{"key": "app", "operator": "In",
                                                                         "values": ["api"]}]}),
                                    netpol("no-types", {"matchLabels": API}, types=())])
def test_a_policy_that_selects_the_pods_for_ingress_satisfies_it(policy):
    assert only(POLICY, resources(deployment("api", API), service("api", API), policy)) == []


def test_an_egress_only_policy_does_not_isolate_ingress():
    found = only(POLICY, resources(deployment("api", API), service("api", API),
                                   netpol("egress", {"matchLabels": API}, types=("Egress",))))
    assert len(found) == 1


def test_without_any_policy_in_the_namespace_a_third_party_file_is_not_judged():
    """A platform team's default-deny may live outside the files checked: no finding from absence alone."""
    assert only(POLICY, resources(deployment("api", API), service("api", API))) == []
    # a policy of another namespace says nothing about this one
    assert only(POLICY, resources(deployment("api", API), service("api", API),
                                  netpol("other", {}, ns="web"))) == []


def test_an_inference_server_without_a_service_and_a_pod_without_ports_are_told_apart():
    server = deployment("llm", {"app": "llm"}, image="docker.io/vllm/vllm-openai:v0.9.2", ports=(8000,))
    worker = deployment("worker", {"app": "worker"}, ports=())
    found = only(POLICY, resources(server, worker, netpol("db-only", {"matchLabels": {"app": "db"}})))
    assert found == ["Deployment apps/llm serves on port(s) 8000 (runs vllm/vllm-openai), and no NetworkPolicy of "
                     "namespace apps selects its pods: every pod of the cluster reaches them"]


def test_a_gpu_platform_pod_is_judged_even_with_no_policy_at_all():
    labels = {"app.kubernetes.io/name": "api", "app.kubernetes.io/part-of": "gpu-platform"}
    found = only(POLICY, resources(deployment("api", labels), service("api", {"app.kubernetes.io/name": "api"})))
    assert len(found) == 1


@pytest.fixture(scope="module")
def local_plan(tmp_path_factory):
    out = tmp_path_factory.mktemp("plan")
    assert main(["plan", "--stack", "local", "--out", str(out), "--format", "json", "--no-sweep"]) == 0
    return out / "manifests"


def test_the_plan_renders_one_network_policy_per_workload_and_check_passes_it(local_plan, capsys):
    capsys.readouterr()
    policies = sorted(p.name for p in local_plan.glob("networkpolicy-*.yaml"))
    assert policies == ["networkpolicy-inference-batch-embedder.yaml", "networkpolicy-inference-echo-gpu.yaml"]
    assert main(["check", "--manifests", str(local_plan), "--format", "json"]) == 0
    assert [v for v in json.loads(capsys.readouterr().out) if v["policy_id"] == POLICY] == []


def test_check_of_the_plan_flags_the_workload_whose_policy_is_removed(local_plan, tmp_path, capsys):
    manifests = tmp_path / "manifests"
    shutil.copytree(local_plan, manifests)
    (manifests / "networkpolicy-inference-echo-gpu.yaml").unlink()
    capsys.readouterr()
    assert main(["check", "--manifests", str(manifests), "--format", "json"]) == 0  # advisory
    found = [v for v in json.loads(capsys.readouterr().out) if v["policy_id"] == POLICY]
    assert [(v["resource_name"], v["level"]) for v in found] == [("inference/echo-gpu", "advisory")]
    assert found[0]["file"].endswith("deployment-inference-echo-gpu.yaml")
