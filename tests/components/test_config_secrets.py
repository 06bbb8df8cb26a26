"""Secrets end to end: never parsed, registered only as secrets, never in the plan, the console or an error."""
import io
import json
import subprocess
import sys

import pytest
import yaml

from gpuplatform.components.errors import ConfigError
from gpuplatform.components.stack_config import namespace_from_stack_file
from gpuplatform.plan import run_plan
from gpuplatform.synth import stack_config_from_namespace, synthesize
from support import REPO, one, stack_raw

# recognisable values: a digits-only password (which JSON would turn into a number) and a kubeconfig token
PASSWORD = "204718293645"
TOKEN = "tok-RECOGNISABLE-7f3a91"
KUBECONFIG = f"""apiVersion: v1
kind: Config
clusters: [{{name: lab, cluster: {{server: "https://127.0.0.1:6443"}}}}]
contexts: [{{name: lab, context: {{cluster: lab, user: lab}}}}]
current-context: lab
users: [{{name: lab, user: {{token: {TOKEN}}}}}]
"""
RELEASE = "kubernetes:helm.sh/v3:Release"


def local_with_secrets() -> dict:
    raw = stack_raw("local")
    raw["kubeconfig"], raw["grafanaAdminPassword"] = KUBECONFIG, PASSWORD
    return raw


def everything_written(tmp_path, console: str) -> str:
    files = [p.read_text() for p in sorted(tmp_path.rglob("*")) if p.is_file()]
    return "\n".join([console, *files])


def test_secrets_never_reach_the_plan_the_manifests_or_the_console(tmp_path):
    out = io.StringIO()
    assert run_plan(local_with_secrets(), "local", str(tmp_path), "table", out=out) == 0
    written = everything_written(tmp_path, out.getvalue())
    assert (tmp_path / "plan.json").exists() and "[secret]" in written
    for secret in (PASSWORD, TOKEN):
        assert secret not in written


def test_secrets_are_registered_as_secrets_and_stay_strings():
    records = synthesize(stack_config_from_namespace(local_with_secrets()))
    grafana = one(records, RELEASE, "gpu-monitoring-kube-prometheus-stack")
    assert grafana.inputs["values"]["grafana"]["adminPassword"] == PASSWORD  # a string, not 204718293645
    assert PASSWORD in grafana.secret_strings
    provider = one(records, "pulumi:providers:kubernetes")
    assert provider.inputs["kubeconfig"] == KUBECONFIG and KUBECONFIG in provider.secret_strings
    for r in records:  # nowhere outside a secret
        assert TOKEN not in json.dumps(r.inputs) or KUBECONFIG in r.secret_strings, r.name
        assert PASSWORD not in json.dumps(r.inputs) or PASSWORD in r.secret_strings, r.name


def test_errors_never_repeat_a_secret():
    raw = local_with_secrets()
    raw["nodePools"][0]["maxNodes"] = -1
    with pytest.raises(Exception) as info:
        synthesize(stack_config_from_namespace(raw))
    assert "nodePools[0].maxNodes" in str(info.value)
    assert PASSWORD not in str(info.value) and TOKEN not in str(info.value)


@pytest.mark.parametrize("key", ["kubeconfig", "grafanaAdminPassword"])
def test_a_plain_text_secret_in_the_program_config_is_an_error(key):
    raw = local_with_secrets()
    config = stack_config_from_namespace(raw)
    others = tuple(f"gpu-platform:{k}" for k in ("kubeconfig", "grafanaAdminPassword") if k != key)
    with pytest.raises(Exception) as info:
        synthesize(config, secret_keys=others)
    text = str(info.value)
    assert f"gpu-platform:{key}: is stored in plain text" in text and f"--secret gpu-platform:{key}" in text
    assert PASSWORD not in text and TOKEN not in text


def test_a_secret_outside_the_secret_keys_is_refused_without_showing_it():
    config = stack_config_from_namespace(local_with_secrets())
    with pytest.raises(Exception) as info:
        synthesize(config, secret_keys=("gpu-platform:kubeconfig", "gpu-platform:grafanaAdminPassword",
                                        "gpu-platform:workloads"))
    assert "gpu-platform:workloads: is marked secret" in str(info.value)
    assert "secretEnv" in str(info.value)


def _stack_file(tmp_path, config: dict):
    path = tmp_path / "Pulumi.leak.yaml"
    path.write_text(yaml.safe_dump({"config": config}))
    return path


def test_stack_file_plain_text_and_misplaced_secrets_exit_2_without_the_values(tmp_path):
    config = {f"gpu-platform:{k}": v for k, v in stack_raw("local").items()}
    config["gpu-platform:grafanaAdminPassword"] = PASSWORD
    config["gpu-platform:kubeconfig"] = KUBECONFIG
    config["gpu-platform:workloads"][0]["env"] = {"HF_HUB_TOKEN_FILE": {"secure": "v1:AAAA"}}
    path = _stack_file(tmp_path, config)
    with pytest.raises(ConfigError) as info:
        namespace_from_stack_file(path)
    paths = [i.path for i in info.value.issues]
    assert sorted(paths) == ["grafanaAdminPassword", "kubeconfig", "workloads[0].env.HF_HUB_TOKEN_FILE"]
    proc = subprocess.run([sys.executable, "-m", "gpuplatform", "plan", "--config", str(path)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "gpu-platform:grafanaAdminPassword: is stored in plain text" in proc.stderr
    assert PASSWORD not in proc.stderr + proc.stdout and TOKEN not in proc.stderr + proc.stdout


def test_encrypted_secrets_plan_offline_with_placeholders(tmp_path):
    config = {f"gpu-platform:{k}": v for k, v in stack_raw("local").items()}
    config["gpu-platform:grafanaAdminPassword"] = {"secure": "v1:c2VjcmV0"}
    raw = namespace_from_stack_file(_stack_file(tmp_path, config))
    out = io.StringIO()
    assert run_plan(raw, "leak", str(tmp_path / "plan"), "table", out=out) == 0
    assert "offline-placeholder-secret" not in everything_written(tmp_path / "plan", out.getvalue())
