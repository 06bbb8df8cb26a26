"""Every pod spec in every resource (tests/fixtures/pods): a resource of each kind that carries pods, with a literal
credential and (where its type can say so) a privileged container, is blocked by `check --manifests` at the line
of the offending field, with the field's path in the finding; objects whose containers lists are patterns, not
pods, are left alone."""
import json
import re
from pathlib import Path

import pytest

from gpuplatform.catalogs.kubernetes import ASSEMBLED_CONTAINERS
from gpuplatform.check import run_policies
from gpuplatform.cli import main
from gpuplatform.policies import k8s
from gpuplatform.policies.registry import by_id
from gpuplatform.records import RegisteredResource
from support import FIXTURES_DIR

PODS = FIXTURES_DIR / "pods"
SECRETS, PRIVILEGED = "container-no-plaintext-secrets", "pod-no-privileged"

# the planted credentials, by a piece of each (the fixtures hold nothing else that looks like one)
PLANTED = ("hf_Qw3rTyUi", "nvapi-Xr7m", "ghp_0123", "github_pat_", "AKIAZ7QW", "xoxb-1234", "sk-proj-",
           ":s3cr3t-pass@", ":Tr4cePassw0rd@", ":Sup3rS3cret@", ":gh-mirror-pass@", ":pr0xy-Adm1n@", "token=9f8e",
           ":wJalrXUtnFEMI")
KINDS = {
    "kserve_inferenceservice.yaml": {"InferenceService", "ServingRuntime"},
    "llminferenceservice_v1alpha1.yaml": {"LLMInferenceService", "LLMInferenceServiceConfig"},
    "llminferenceservice_v1alpha2.yaml": {"LLMInferenceService"},
    "nimservice.yaml": {"NIMService", "NIMCache"},
    "aibrix.yaml": {"StormService", "RayClusterFleet", "KVCache"},
    "dynamographdeployment.yaml": {"DynamoGraphDeployment"},
    "llmd_modelservice.yaml": {"ModelService"},
    "kueue_jobset.yaml": {"JobSet", "Workload"},
    "unknown_crd.yaml": {"AppWrapper"},
}
NO_PRIVILEGED_FIELD = {"NIMService", "NIMCache", "KVCache", "ModelService"}
"""Kinds whose containers, as these fixtures write them, have no securityContext field: the operator writes it
(catalogs/kubernetes.py ASSEMBLED_CONTAINERS; llm-d's ContainerSpec), so a literal credential is what they hold."""


def _check(path: Path) -> list[dict]:
    import io
    from contextlib import redirect_stdout

    out = io.StringIO()
    with redirect_stdout(out):
        main(["check", "--manifests", str(path), "--format", "json"])
    return json.loads(out.getvalue())


def _lines(path: Path, *needles: str) -> set[int]:
    return {i for i, text in enumerate(path.read_text().splitlines(), 1)
            if not text.lstrip().startswith("#") and any(n in text for n in needles)}


def test_the_fixtures_cover_every_kind_the_issue_lists():
    assert sorted(p.name for p in PODS.glob("*.yaml")) == sorted([*KINDS, "pod_patterns_not_pods.yaml"])


@pytest.mark.parametrize("name", sorted(KINDS))
def test_each_planted_mistake_is_blocked_at_its_line(name):
    path = PODS / name
    found = _check(path)
    mandatory = [v for v in found if v["level"] == "mandatory"]
    assert {v["policy_id"] for v in mandatory} <= {SECRETS, PRIVILEGED}, mandatory
    assert {v["line"] for v in mandatory if v["policy_id"] == SECRETS} == _lines(path, *PLANTED)
    assert {v["line"] for v in mandatory if v["policy_id"] == PRIVILEGED} == _lines(path, "privileged: true")
    kinds = {v["resource_type"].rsplit(":", 1)[1] for v in mandatory}
    assert kinds == KINDS[name]
    for kind in KINDS[name] - NO_PRIVILEGED_FIELD:
        assert any(v["policy_id"] == PRIVILEGED and v["resource_type"].endswith(f":{kind}") for v in mandatory), kind
    for v in mandatory:  # the finding names the field, and the path leads to the line reported
        assert k8s.path_in_message(v["message"]), v["message"]


def test_the_paths_name_the_fields_upstream_types_define():
    messages = [v["message"] for name in KINDS for v in _check(PODS / name) if v["level"] == "mandatory"]
    paths = {k8s.render_path(k8s.path_in_message(m)) for m in messages}
    for expected in (
            "spec.predictor.model.env[0].value",                                   # a KServe model spec
            "spec.prefill.template.containers[0].securityContext.privileged",     # LLMInferenceService prefill
            "spec.worker.containers[0].securityContext.privileged",               # its multi-node worker
            "spec.router.scheduler.template.containers[0].env[0].value",          # its scheduler
            "spec.env[0].value",                                                   # NIMService/NIMCache spec-level env
            "spec.args[0]",
            "spec.sidecarContainers[0].env[0].value",
            "spec.services.VllmDecodeWorker.extraPodSpec.mainContainer.securityContext.privileged",
            "spec.services.VllmPrefillWorker.envs[0].value",                       # Dynamo service envs
            "spec.envs[1].value",                                                  # and the graph's, once
            "spec.template.spec.roles[1].template.spec.containers[0].securityContext.privileged",  # StormService
            "spec.template.spec.workerGroupSpecs[0].template.spec.containers[0].securityContext.privileged",
            "spec.cache.env[0].value",                                             # AIBrix KVCache
            "spec.prefill.vllmProxyContainer[0].env[0].value",                     # llm-d init containers
            "spec.replicatedJobs[0].template.spec.template.spec.containers[0].args[0]",
            "spec.podSets[0].template.spec.containers[0].securityContext.privileged",
            "spec.components[0].template.spec.pytorchReplicaSpecs.Master.template.spec.containers[0]"
            ".securityContext.privileged"):                                         # the general rule
        assert expected in paths, expected
    assert sum(m.endswith("at spec.envs[1].value") for m in messages) == 1


def test_what_an_operator_controls_is_not_asked_of_the_resource():
    """NIMService's container gets its security context from the operator: only what the resource sets (a root
    user id, a host path) is judged, at the field that sets it."""
    found = {(v["policy_id"], v["resource_name"]): v for v in _check(PODS / "nimservice.yaml")
             if v["resource_type"].endswith(":NIMService")}
    assert found[("pod-run-as-non-root", "nim/llama-3-8b-instruct")]["message"].endswith("pod runAsUser is 0 at "
                                                                                        "spec.userID")
    assert found[("pod-restricted-volumes", "nim/llama-3-8b-instruct")]["message"].endswith("at spec.storage.hostPath")
    assert not {"pod-no-privilege-escalation", "pod-drop-all-capabilities", "pod-seccomp-profile"} & {
        pid for pid, _ in found}


def test_an_imageless_container_is_completed_by_its_operator():
    """An LLMInferenceService's containers take image and security context from its LLMInferenceServiceConfig:
    the hardening policies leave them to the config, which is judged itself."""
    found = _check(PODS / "llminferenceservice_v1alpha2.yaml")
    assert not [v for v in found if v["policy_id"] in ("pod-run-as-non-root", "pod-seccomp-profile")]


def test_containers_lists_that_are_not_pods_are_left_alone():
    assert _check(PODS / "pod_patterns_not_pods.yaml") == []


def _assembled_object(group, kind, spec):
    """A minimal object whose operator assembles a container as ``spec`` says, with a literal token in its env."""
    obj = {"apiVersion": f"{group}/v1alpha1", "kind": kind, "metadata": {"name": "x", "namespace": "ml"}}
    node = obj
    for i, key in enumerate(spec.at):
        if key == "*":
            continue
        child = {"svc": {}} if i + 1 < len(spec.at) and spec.at[i + 1] == "*" else {}
        node = node.setdefault(key, child)
        if child and "svc" in child:
            node = child["svc"]
    env = [{"name": "API_TOKEN", "value": "literal"}]
    if "env" in spec.fields:
        node["env"] = env
    elif spec.env:
        node[spec.env[0][0]] = env
    else:
        target = node
        for key in spec.base:
            target = target.setdefault(key, {})
        target["env"] = env
    return obj


CASES = [(g, k, s) for (g, k), specs in ASSEMBLED_CONTAINERS.items() for s in specs]


@pytest.mark.parametrize("group, kind, spec", CASES, ids=[f"{k}:{'.'.join(s.at)}" for _g, k, s in CASES])
def test_every_assembled_container_is_judged(group, kind, spec):
    obj = _assembled_object(group, kind, spec)
    found = run_policies([RegisteredResource(k8s.type_token(obj["apiVersion"], kind), "ml/x", obj)],
                         policies=[by_id(SECRETS)])
    assert [v.level for v in found] == ["mandatory"], obj
    assert re.search(r" at spec\.[\w.\[\]]*env[s]?\[0\]\.value$", found[0].message), found[0].message


def test_paths_render_and_parse_back():
    parts = ["spec", "services", "decode-worker", "extraPodSpec", "containers", 0, "env", 2, "value"]
    assert k8s.render_path(parts) == "spec.services.decode-worker.extraPodSpec.containers[0].env[2].value"
    odd = ["metadata", "annotations", "example.com/role", 3]
    assert k8s.render_path(odd) == 'metadata.annotations["example.com/role"][3]'
    for p in (parts, odd):
        assert k8s.path_in_message(f"Deployment x: something at {k8s.render_path(p)}") == p
    assert k8s.path_in_message("Deployment x: no path here") is None


def test_the_general_rule_needs_named_containers_with_an_image():
    def pods(spec):
        return k8s.pods_of("Thing", {"apiVersion": "example.com/v1", "kind": "Thing", "spec": spec})

    assert [p.path for p in pods({"job": {"containers": [{"name": "a", "image": "r/a:1"}]}})] == [("spec", "job")]
    assert pods({"containers": [{"name": "a"}]}) == []              # names only: a selection, not a pod
    assert pods({"containers": ["a", "b"]}) == []
    assert pods({"containers": [{"image": "r/a:1"}]}) == []         # no name: not a container
    # Kubernetes' own groups are read by their kinds only (a CRD's schema mentions containers everywhere)
    assert k8s.pods_of("CustomResourceDefinition", {"apiVersion": "apiextensions.k8s.io/v1", "spec": {
        "x": {"containers": [{"name": "a", "image": "r/a:1"}]}}}) == []


def test_a_value_unknown_at_preview_elsewhere_does_not_stop_the_general_rule():
    """In a preview, a field computed from another resource is unknown; the general rule passes it by and still
    judges the pod (reading the unknown value itself would turn the policy into a "can't run" advisory)."""
    from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

    obj = {"apiVersion": "example.com/v1", "kind": "Trainer", "metadata": {"name": "t", "namespace": "ml"},
           "spec": {"endpoint": UNKNOWN_STRING_VALUE, "job": {"containers": [
               {"name": "a", "image": "registry.example.com/a:1", "securityContext": {"privileged": True}}]}}}
    found = run_policies([RegisteredResource("kubernetes:example.com/v1:Trainer", "ml/t", obj)],
                         policies=[by_id(PRIVILEGED)])
    assert [(v.level, v.message) for v in found] == [
        ("mandatory", "Trainer ml/t container a is privileged at spec.job.containers[0].securityContext.privileged")]

