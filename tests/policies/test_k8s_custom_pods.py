"""Pods inside custom resources are judged like a Deployment's: every pod template path of
catalogs.kubernetes.POD_TEMPLATE_PATHS is read, and a resource of the same kind in another API group is not."""
import copy

import pytest

from gpuplatform.catalogs.kubernetes import POD_TEMPLATE_PATHS
from gpuplatform.check import run_policies
from gpuplatform.policies.k8s import type_token
from gpuplatform.policies.registry import by_id
from gpuplatform.records import RegisteredResource

_VERSIONS = {"": "v1", "serving.kserve.io": "v1beta1", "ray.io": "v1", "leaderworkerset.x-k8s.io": "v1",
             "kubeflow.org": "v1", "jobset.x-k8s.io": "v1alpha2", "argoproj.io": "v1alpha1",
             "serving.knative.dev": "v1", "orchestration.aibrix.ai": "v1alpha1", "nvidia.com": "v1beta1",
             "llm-d.ai": "v1alpha1", "kueue.x-k8s.io": "v1beta1"}
_KIND_VERSIONS = {"LLMInferenceService": "v1alpha2", "LLMInferenceServiceConfig": "v1alpha2",
                  "ServingRuntime": "v1alpha1", "ClusterServingRuntime": "v1alpha1"}


def api_version(group, kind):
    version = _KIND_VERSIONS.get(kind, _VERSIONS[group])
    return f"{group}/{version}" if group else version


def _with_pod(group, kind, path, pod):
    """An object of ``kind`` with ``pod`` at ``path`` (``*``: a map value under replica specs and Dynamo's services,
    else a list item)."""
    obj = {"apiVersion": api_version(group, kind), "kind": kind, "metadata": {"name": "x", "namespace": "ml"}}
    node = obj
    for i, key in enumerate(path[:-1]):
        nxt = path[i + 1]
        if key == "*":
            continue
        if nxt == "*":
            item = {}
            node[key] = {"Worker": item} if key.endswith("ReplicaSpecs") or key == "services" else [item]
            node = item
            continue
        node = node.setdefault(key, {})
    node[path[-1]] = copy.deepcopy(pod)
    return obj


_TOKEN_POD = {"containers": [{"name": "server", "image": "registry.example.com/s:1",
                              "env": [{"name": "API_TOKEN", "value": "literal-token"}]}]}
CASES = [(g, k, p) for (g, k), paths in POD_TEMPLATE_PATHS.items() for p in paths]


@pytest.mark.parametrize("group, kind, path", CASES, ids=[f"{k}:{'.'.join(p)}" for _g, k, p in CASES])
def test_every_pod_template_path_is_judged(group, kind, path):
    # a KServe component (predictor, transformer, ...) is a pod spec itself, the others hold one under "spec"
    obj = _with_pod(group, kind, path, _TOKEN_POD)
    found = run_policies([RegisteredResource(type_token(obj["apiVersion"], kind), "ml/x", obj)],
                         policies=[by_id("container-no-plaintext-secrets")])
    assert [v.level for v in found] == ["mandatory"], obj


def test_a_kserve_model_spec_is_a_container_and_its_runtime_is_not_guessed():
    isvc = {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService", "metadata": {"name": "m"},
            "spec": {"predictor": {"model": {"modelFormat": {"name": "huggingface"},
                                             "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}}}}
    r = RegisteredResource(type_token(isvc["apiVersion"], "InferenceService"), "m", isvc)
    found = {v.policy_id: v for v in run_policies([r])}
    assert found["gpu-visible-devices-isolated"].mandatory
    assert "kserve-container" in found["gpu-visible-devices-isolated"].message
    # image, securityContext and defaults come from the ServingRuntime the controller merges in
    assert not {"image-pinned", "pod-run-as-non-root", "pod-seccomp-profile"} & set(found)


def test_a_core_service_is_not_a_knative_service():
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
           "spec": {"template": {"spec": _TOKEN_POD}, "ports": [{"port": 80}]}}
    found = run_policies([RegisteredResource("kubernetes:core/v1:Service", "s", svc)],
                         policies=[by_id("container-no-plaintext-secrets")])
    assert found == []
