"""The source documents' YAML (tests/fixtures/seed_manifests): each known misconfiguration is flagged by the
policy written for it, on plain YAML, without any Pulumi program."""

import pytest

from gpuplatform.check import exit_code, load_manifests, run_policies
from support import FIXTURES_DIR

SEEDS = FIXTURES_DIR / "seed_manifests"

# (seed file, policy id, resource name the violation is reported on, text the message must contain)
EXPECTED = [
    ("001_legacy_ack_guide.yaml", "no-removed-api-versions", "bert-intent-detection", "extensions/v1beta1"),
    ("001_legacy_ack_guide.yaml", "no-removed-api-versions", "gpu-hpa", "autoscaling/v2beta1"),
    ("001_legacy_ack_guide.yaml", "service-no-public-loadbalancer", "bert-intent-detection-svc", "Internet"),
    # judged on inputs, one resource at a time: reported on the second of the pair (here the HPA), naming both
    ("001_legacy_ack_guide.yaml", "deployment-no-replicas-with-autoscaler", "gpu-hpa",
     "bert-intent-detection, which sets spec.replicas=1"),
    # the guide configures its adapter in Helm values, which are not in the file: cannot verify, advisory
    ("001_legacy_ack_guide.yaml", "context-cannot-verify", "gpu-hpa", "duty_cycle_current"),
    ("002_ack_gpu_hpa.yaml", "hpa-pods-metric-average-value", "gpu-hpa", "Utilization"),
    ("002_ack_gpu_hpa.yaml", "no-removed-api-versions", "gpu-hpa", "autoscaling/v2beta1"),
    ("002_ack_gpu_hpa.yaml", "service-no-public-loadbalancer", "bert-intent-detection-svc", "Internet"),
    ("002_ack_gpu_hpa.yaml", "container-probes", "bert-intent-detection", "readinessProbe"),
    ("003_triton_mig.yaml", "rbac-no-cluster-admin-binding", "permissive-binding", "cluster-admin"),
    ("003_triton_mig.yaml", "rbac-no-system-group-binding", "permissive-binding", "system:serviceaccounts"),
    ("003_triton_mig.yaml", "apiservice-tls-verified", "v1beta1.custom.metrics.k8s.io", "insecureSkipTLSVerify"),
    ("003_triton_mig.yaml", "no-removed-api-versions", "v1beta1.custom.metrics.k8s.io",
     "apiregistration.k8s.io/v1beta1"),
    ("003_triton_mig.yaml", "no-removed-api-versions", "flower-hpa", "autoscaling/v2beta1"),
    ("003_triton_mig.yaml", "hpa-metric-served", "flower-hpa", "avg_time_queue_us"),
    ("003_triton_mig.yaml", "hpa-target-exists", "flower-hpa", "apps/v1beta1"),
    ("003_triton_mig.yaml", "service-no-public-loadbalancer", "flower", "Internet"),
    ("003_triton_mig.yaml", "service-metrics-port-not-exposed", "flower", "metrics"),
    ("003_triton_mig.yaml", "deployment-no-replicas-with-autoscaler", "flower-hpa", "flower, which sets spec.replicas=3"),
    ("003_triton_mig.yaml", "pod-restricted-volumes", "flower", "nfs"),
    ("003_triton_mig.yaml", "gpu-deployment-topology-spread", "flower", "7 GPU replicas"),
    ("004_cgpu_notebooks.yaml", "container-no-plaintext-secrets", "tf-notebook", "PASSWORD"),
    ("004_cgpu_notebooks.yaml", "container-no-plaintext-secrets", "tf-notebook-gpu", "PASSWORD"),
    ("004_cgpu_notebooks.yaml", "service-no-public-loadbalancer", "tf-notebook", "Internet"),
    ("004_cgpu_notebooks.yaml", "pod-run-as-non-root", "tf-notebook", "runAsNonRoot"),
]


@pytest.mark.parametrize("seed,policy_id,resource,text", EXPECTED)
def test_seed_misconfiguration_is_flagged(seed, policy_id, resource, text):
    violations = run_policies(load_manifests([SEEDS / seed]))
    hits = [v for v in violations if v.policy_id == policy_id and v.resource_name == resource]
    assert hits, f"{policy_id} did not flag {resource} in {seed}"
    assert any(text in v.message for v in hits), [v.message for v in hits]


@pytest.mark.parametrize("seed", sorted(p.name for p in SEEDS.glob("*.yaml")))
def test_every_seed_fails_the_check(seed):
    assert exit_code(run_policies(load_manifests([SEEDS / seed]))) == 1


def test_adapter_configmap_rules_count_on_plain_yaml():
    """The ConfigMap's rule serves avg_time_queue_us; only the HPA's misspelt name is reported, with the fix."""
    violations = [v for v in run_policies(load_manifests([SEEDS / "003_triton_mig.yaml"]))
                  if v.policy_id == "hpa-metric-served"]
    assert [v.message for v in violations] == [
        "HorizontalPodAutoscaler flower-hpa asks for Pods metric 'avg_time_queue_ms', but no adapter rule serves "
        "it (did you mean avg_time_queue_us?)"]
