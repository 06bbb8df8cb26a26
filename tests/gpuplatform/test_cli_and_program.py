"""The CLI end to end: plan every stack, reject bad configs with exit 2 and no traceback, schema, reuse example."""
import io
import json
import subprocess
import sys

import pytest
import yaml

from support import REPO, STACKS, of_type, one, stack_raw
from gpuplatform.cli import main
from gpuplatform.records import RegisteredResource
from gpuplatform.synth import synthesize


@pytest.mark.parametrize("stack", STACKS)
def test_plan_every_stack_writes_plan_and_manifests(stack, tmp_path, capsys):
    # the HPA sweep is planned on prod (test_plan_json_format); local's KEDA workload adds the wake-up sweep
    sweep = [] if stack in ("prod", "local") else ["--no-sweep"]
    assert main(["plan", "--stack", stack, "--out", str(tmp_path), *sweep]) == 0
    out = capsys.readouterr().out
    assert "GPU capacity" in out and "Metric latency" in out
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert plan["resourceCount"] == len(plan["resources"]) > 10
    files = sorted(p.name for p in (tmp_path / "manifests").glob("*.yaml"))
    assert any(f.startswith("deployment-") for f in files)
    assert any(f.startswith("helmrelease-") for f in files)
    for f in files:
        assert yaml.safe_load((tmp_path / "manifests" / f).read_text())


def test_plan_json_format(capsys):
    assert main(["plan", "--stack", "prod", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["capacity"][0]["resources"] == [{"resource": "nvidia.com/mig-1g.5gb", "unitsPerNode": 56,
                                                "unitsAtMax": 112, "unit": "MIG instance"}]
    step = doc["metricLatency"][0].pop("stepResponse")  # its figures: tests/gpuplatform/simulate/test_simulate.py
    assert set(step) == {"trace", "firstScaleUpSeconds", "capacityReadySeconds", "capacityPath", "neverReasons",
                         "sweep"}
    assert step["sweep"]["worstSeconds"] <= doc["metricLatency"][0]["worstCaseSeconds"]  # the formula bounds it
    assert doc["metricLatency"][0] == {"workload": "flower", "metric": "triton_queue_time_us",
                                       "apiName": "avg_time_queue_us", "autoscaler": "hpa", "collect": 0,
                                       "scrape": 10, "window": 30, "poll": 15, "worstCaseSeconds": 55}


def test_plan_masks_secrets_and_shows_adapter_rules(tmp_path, capsys):
    assert main(["plan", "--stack", "staging", "--out", str(tmp_path), "--no-sweep"]) == 0
    text = (tmp_path / "plan.json").read_text()
    assert "offline-token" not in text and "[secret]" in text
    values = yaml.safe_load((tmp_path / "manifests" / "helmrelease-kube-system-ack-alibaba-cloud-metrics-adapter.yaml")
                            .read_text())["values"]
    rules = values["AlibabaCloudMetricsAdapter"]["prometheus"]["adapter"]["rules"]["custom"]
    assert rules[0]["name"]["as"] == "DCGM_CUSTOM_PROCESS_SM_UTIL"


def test_bad_config_exits_2_naming_every_path_without_traceback(tmp_path):
    bad = {"config": {
        "gpu-platform:cluster": {"kind": "kubeconfig", "kubernetesVersion": "1.30"},
        "gpu-platform:nodePools": [{"name": "p", "gpuModel": "T4", "gpusPerNode": 1, "minNodes": 3, "maxNodes": 1,
                                    "sharing": {"mode": "mig", "profile": "1g.5gb"}}],
        "gpu-platform:workloads": [{"name": "w", "image": "x:1", "nodePool": "q", "gpu": {"count": 1},
                                    "ports": [{"name": "http", "containerPort": 80}],
                                    "autoscaling": {"maxReplicas": 2, "metrics": [{"metric": "gpu_utl", "target": 5}]}}],
    }}
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_text(yaml.safe_dump(bad))
    proc = subprocess.run([sys.executable, "-m", "gpuplatform", "plan", "--config", str(path)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    for fragment in ["gpu-platform:nodePools[0].minNodes", "gpu-platform:nodePools[0].sharing.mode",
                     "gpu-platform:workloads[0].nodePool", "gpu-platform:workloads[0].autoscaling.metrics[0].metric"]:
        assert fragment in proc.stderr


def test_unknown_stack_exits_2(capsys):
    assert main(["plan", "--stack", "nope"]) == 2
    assert "stacks: dev, local, prod, staging" in capsys.readouterr().err


def test_program_raises_a_clean_run_error_before_registering_anything():
    import pulumi

    raw = stack_raw("staging")
    raw["nodePools"][0]["minNodes"] = 99
    with pytest.raises(Exception) as info:
        synthesize({f"gpu-platform:{k}": v for k, v in raw.items()})
    err = info.value
    while not isinstance(err, pulumi.RunError) and err.__cause__ is not None:
        err = err.__cause__
    assert isinstance(err, pulumi.RunError), repr(info.value)
    assert "gpu-platform:nodePools[0].minNodes" in str(err)


def test_schema_covers_stack_keys_and_metric_names(capsys):
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    props = schema["properties"]["config"]["properties"]
    assert {"gpu-platform:cluster", "gpu-platform:nodePools", "gpu-platform:workloads"} <= set(props)
    assert "gpu_sm_util" in schema["$defs"]["MetricTarget"]["properties"]["metric"]["enum"]


def test_stack_files_validate_against_the_exported_schema(tmp_path):
    import jsonschema

    from gpuplatform.schema import stack_file_schema

    schema = stack_file_schema()
    for stack in STACKS:
        doc = yaml.safe_load((REPO / "stacks" / f"Pulumi.{stack}.yaml").read_text())
        jsonschema.validate(doc, schema)


def test_reuse_example_synthesizes_offline(tmp_path):
    from gpuplatform.project_plan import run_project_plan

    out = io.StringIO()
    assert run_project_plan(str(REPO / "examples" / "reuse"), "dev", str(tmp_path), out, sweep=False) == 0
    plan = json.loads((tmp_path / "plan.json").read_text())
    records = [RegisteredResource(type=r["type"], name=r["name"], inputs=r["inputs"]) for r in plan["resources"]]
    assert one(records, "pulumi:providers:kubernetes").inputs == {"context": "ml-cluster"}  # project config
    deployments = of_type(records, "kubernetes:apps/v1:Deployment")
    assert {d.inputs["metadata"]["namespace"] for d in deployments} == {"ml-serving"} and len(deployments) == 2
    hpas = {h.name: h.inputs["spec"]["metrics"][0]["pods"]["metric"]["name"]
            for h in of_type(records, "kubernetes:autoscaling/v2:HorizontalPodAutoscaler")}
    assert hpas == {"embeddings-hpa": "gpu_utilization", "ranker-hpa": "avg_time_queue_us"}
    assert not [r for r in records if r.type.startswith("alicloud:")]
    text = out.getvalue()
    # the same tables as a stack's plan: capacity per pool, the label hint for existing nodes, metric latency
    assert "GPU capacity" in text and "l20   2 x L20" in text and "l20: gpuplatform.io/pool=l20" in text
    assert "ranker      triton_queue_time_us  avg_time_queue_us" in text
    assert [row["pool"] for row in plan["capacity"]] == ["l20"]


def test_reuse_with_bad_args_fails_cleanly():
    import pulumi

    from gpuplatform.components import GpuCluster, GpuNodePool, InferenceService

    def program():
        cluster = GpuCluster("c", {"cluster": {"kind": "kubeconfig", "kubernetesVersion": "1.33"}})
        pool = GpuNodePool("p", {"cluster": cluster, "pool": {"name": "p", "gpuModel": "T4", "gpusPerNode": 1}})
        InferenceService("bad", {"workload": {"name": "w", "image": "x:1", "gpu": {"memoryGib": 4}, "replicas": 1,
                                              "ports": [{"name": "http", "containerPort": 80}]},
                                 "node_pool": pool, "namespace": "team"})
    with pytest.raises(pulumi.RunError) as info:
        synthesize({}, program)
    assert "InferenceService 'bad' args.workload.gpu" in str(info.value) and "memoryGib" in str(info.value)
