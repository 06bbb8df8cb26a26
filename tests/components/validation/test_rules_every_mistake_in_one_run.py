"""Every mistake in one run: a consumer program written from docs/reuse.md with three mistakes, and a stack file
with two, each report all of theirs at once. A component given an object with problems of its own still has its
own arguments checked (against the pool and the services before it); only what depends on that object waits."""

import pulumi
import pytest

from gpuplatform.cli import main
from gpuplatform.components import GpuCluster, GpuMonitoring, GpuNodePool, InferenceService, WorkloadNamespace
from gpuplatform.components.validation.parsing import without_unknown_keys
from gpuplatform.synth import synthesize
from support import FIXTURES_DIR

FIXTURES = FIXTURES_DIR / "mistakes"
PORTS = [{"name": "http", "containerPort": 8080, "protocol": "http"}]


def service(name: str, **autoscaling) -> dict:
    return {"name": name, "image": f"registry.example.com/ml/{name}:1.0", "ports": PORTS, "gpu": {"count": 1},
            "autoscaling": {"metrics": [{"metric": "gpu_sm_util", "target": 60}], **autoscaling}}


def three_mistakes(exporter_serves_it: bool = False):
    """docs/reuse.md's program with a metric dcgm-exporter does not serve, a service too big for its pool and a
    service whose minReplicas is above its maxReplicas."""
    def build():
        cluster = GpuCluster("ml", {"cluster": {"kind": "kubeconfig", "context": "ml", "kubernetesVersion": "1.34"}})
        l20 = GpuNodePool("l20", {"cluster": cluster, "pool": {"name": "l20", "gpuModel": "L20", "gpusPerNode": 2,
                                                                "maxNodes": 2}})
        monitoring = GpuMonitoring("monitoring", {"cluster": cluster, "monitoring": {
            "gpuExporter": "dcgm", "metrics": ["gpu_util" if exporter_serves_it else "gpu_sm_util"]}})
        ns = WorkloadNamespace("serving", {"cluster": cluster, "name": "ml-serving"})
        for name, autoscaling in (("embeddings", {"maxReplicas": 2}), ("ranker", {"maxReplicas": 6}),
                                  ("chat", {"minReplicas": 3, "maxReplicas": 2})):
            InferenceService(name, {"workload": service(name, **autoscaling), "node_pool": l20,
                                    "monitoring": monitoring, "namespace": ns})
    return build


def problems(build) -> str:
    with pytest.raises(pulumi.RunError) as exc:
        synthesize({}, build)
    return str(exc.value)


def test_the_three_mistake_program_reports_all_three():
    msg = problems(three_mistakes())
    assert "invalid component args (3 problems):" in msg
    assert "GpuMonitoring 'monitoring' args.monitoring.metrics[0]: 'gpu_sm_util' is not exported by GPU exporter " \
           "'dcgm'" in msg
    assert "InferenceService 'ranker' args.workload.autoscaling.maxReplicas: 6 replicas never fit pool 'l20': at " \
           "most 4 (2 per node x 2 nodes)" in msg
    assert "InferenceService 'chat' args.workload.autoscaling.minReplicas: 'minReplicas' (3) must be <= " \
           "'maxReplicas' (2)" in msg
    # what depends on the faulty monitoring (the services' metrics) waits for it, and says so
    assert "not checked, as what they were given has problems: InferenceService 'embeddings' (given GpuMonitoring " \
           "'monitoring')" in msg


def test_with_the_monitoring_fixed_the_services_metrics_are_checked_against_it():
    msg = problems(three_mistakes(exporter_serves_it=True))
    assert "not checked" not in msg
    assert "InferenceService 'embeddings' args.workload.autoscaling.metrics[0].metric: 'gpu_sm_util'" in msg
    assert "'minReplicas' (3) must be <= 'maxReplicas' (2)" in msg


def test_the_two_mistake_stack_file_reports_both(capsys):
    code = main(["check", "--config", str(FIXTURES / "Pulumi.two-mistakes.yaml")])
    err = capsys.readouterr().err
    # the impossible target also makes the SLO above it unreachable: a third finding, of the same mistake
    assert code == 2 and "invalid stack configuration (3 problems):" in err, err
    assert "- gpu-platform:nodePools[0].maxNode: unknown key (not a gpu-platform setting). Did you mean 'maxNodes'" \
        in err
    assert "- gpu-platform:workloads[0].autoscaling.metrics[0].target: 150 can never be exceeded enough to scale " \
           "up: 'gpu_sm_util' is percent, 0-100" in err
    assert "- gpu-platform:workloads[0].slo.objectives[0].below: 22 is unreachable with autoscaling.metrics[0]" \
           ".target 150" in err
    assert "Traceback" not in err


def test_an_unknown_key_is_read_as_its_closest_key_or_left_out():
    raw = {"nodePools": [{"name": "a", "maxNode": 3, "minNodes": 0, "colour": "red"}]}
    errors = [{"type": "extra_forbidden", "loc": ("nodePools", 0, "maxNode")},
              {"type": "extra_forbidden", "loc": ("nodePools", 0, "colour")}]
    fixed, guessed = without_unknown_keys(raw, errors)
    assert fixed == {"nodePools": [{"name": "a", "maxNodes": 3, "minNodes": 0}]}
    assert guessed == {"nodePools[0].maxNodes"}
    assert raw["nodePools"][0]["maxNode"] == 3  # the stack's own config is left as it was


def test_a_finding_at_a_guessed_key_is_not_reported():
    """What the stack file does not say is not judged: a guess of maxNodes that makes the pool too small for the
    workloads is the guess's problem, not the stack's."""
    from gpuplatform.components.errors import ConfigIssue
    from gpuplatform.components.validation.rules import values_beside_unknown_keys
    import yaml

    raw = yaml.safe_load((FIXTURES / "Pulumi.two-mistakes.yaml").read_text())["config"]
    ns = {k.split(":", 1)[1]: v for k, v in raw.items() if k.startswith("gpu-platform:")}
    ns["nodePools"][0]["maxNode"] = 0
    found = values_beside_unknown_keys(ns, [ConfigIssue("nodePools[0].maxNode", "unknown key")])
    assert not [i for i in found if i.path.startswith("nodePools[0].maxNodes")]
    assert any(i.path == "workloads[0].autoscaling.metrics[0].target" for i in found)
