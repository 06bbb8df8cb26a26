"""examples/reuse as its own project: a fresh virtualenv built from its requirements.txt alone, a consumer with
its own ``components/`` folder, and an offline plan, all outside this checkout."""
import json
import shutil
import subprocess
import venv

import pytest
import yaml

from support import REPO, clean_env, served_pack, wheelhouse

EXAMPLE = REPO / "examples" / "reuse"
# one worker builds the consumer's virtualenv for all of these (pytest-xdist --dist loadgroup)
pytestmark = pytest.mark.xdist_group("consumer-venv")


def _run(cmd, cwd, env=None, timeout=600):
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def consumer_venv(tmp_path_factory):
    """A venv with only what examples/reuse/requirements.txt names, installed the way `pulumi install` does
    (pip, from the project folder). The wheel is built and installed for real, not linked to the checkout."""
    wheels = wheelhouse()  # skips before a virtualenv is built for nothing
    root = tmp_path_factory.mktemp("consumer-venv")
    venv.EnvBuilder(with_pip=True).create(root)
    python = root / "bin" / "python"
    _run([python, "-m", "pip", "install", "-q", "--no-compile", "--disable-pip-version-check", "--no-index",
          "--find-links", str(wheels), "-r", "requirements.txt"], cwd=EXAMPLE)
    return root


def test_reuse_example_installs_and_plans_in_a_fresh_venv(consumer_venv, tmp_path):
    project = tmp_path / "team-project"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("requirements.txt", "__pycache__"))
    assert (project / "components" / "__init__.py").is_file()  # the consumer's own components/ folder
    env = clean_env(consumer_venv)
    probe = _run([consumer_venv / "bin" / "python", "-c",
                  "import gpuplatform.components as c, gpuplatform; print(c.__file__); print(gpuplatform.__path__)"],
                 cwd=project, env=env)
    installed = probe.stdout.splitlines()[0]
    assert str(consumer_venv) in installed and str(REPO) not in probe.stdout  # a real install, not the checkout
    out = tmp_path / "plan"
    proc = _run([consumer_venv / "bin" / "gpuplatform", "plan", "--project", str(project), "--out", str(out)],
                cwd=tmp_path, env=env)
    assert "embeddings-deployment" in proc.stdout and "ranker-hpa" in proc.stdout and "GPU capacity" in proc.stdout
    deployment = (out / "manifests" / "deployment-ml-serving-embeddings.yaml").read_text()
    assert "nvidia.com/gpu" in deployment
    # the ranker states its weights: the consumer's plan sizes its startup budget and probes Triton's health path
    [ranker] = [r for r in json.loads((out / "plan.json").read_text())["startup"] if r["workload"] == "ranker"]
    assert ranker["startupProbeBasis"] == "sized from model"
    assert ranker["readiness"] == "HTTP /v2/health/ready, 5s timeout"
    assert "/v2/health/ready" in (out / "manifests" / "deployment-ml-serving-ranker.yaml").read_text()
    for command in (["check", "--project", str(project)], ["check", "--manifests", str(out / "manifests")],
                    ["simulate", "--project", str(project), "--workload", "ranker", "--trace", "step"]):
        _run([consumer_venv / "bin" / "gpuplatform", *command], cwd=tmp_path, env=env)


def test_the_wheel_installs_one_namespace(consumer_venv):
    site = next((consumer_venv / "lib").glob("python3*/site-packages"))
    ours = {p.name for p in site.iterdir() if (p / "__init__.py").is_file() and p.name in
            ("components", "catalogs", "policies", "gpuplatform")}
    assert ours == {"gpuplatform"}
    assert {p.name for p in (site / "gpuplatform").iterdir() if p.is_dir() and p.name != "__pycache__"} >= {
        "components", "catalogs", "policies"}


def test_a_consumer_gets_the_pack_of_the_installed_release_and_serves_it(consumer_venv, tmp_path):
    """`gpuplatform policy-pack init` in the consumer's venv writes a folder the CLI can run: its requirements
    resolve to what is installed, and the pack it serves is this release's, with a real defect reported."""
    from google.protobuf import empty_pb2, struct_pb2
    from pulumi.runtime.proto import analyzer_pb2

    from gpuplatform.policies.pack import POLICY_DEFS
    from gpuplatform.policies.registry import strict_config

    env = clean_env(consumer_venv)
    pack = tmp_path / "ci" / "policy-pack"
    _run([consumer_venv / "bin" / "gpuplatform", "policy-pack", "init", str(pack)], cwd=tmp_path, env=env)
    version = _run([consumer_venv / "bin" / "python", "-c",
                    "from importlib.metadata import version; print(version('gpu-platform'))"],
                   cwd=tmp_path, env=env).stdout.strip()
    project = yaml.safe_load((pack / "PulumiPolicy.yaml").read_text())
    assert project["version"] == version and project["runtime"] == {"name": "python",
                                                                    "options": {"virtualenv": "venv"}}
    requirements = (pack / "requirements.txt").read_text().splitlines()
    assert f"gpu-platform=={version}" in requirements
    assert json.loads((pack / "strict.json").read_text()) == strict_config()
    # every pin is already satisfied by the installed release: pip changes nothing
    pip = _run([consumer_venv / "bin" / "python", "-m", "pip", "install", "--no-index", "--disable-pip-version-check",
                "--find-links", str(wheelhouse()), "-r", "requirements.txt"], cwd=pack, env=env)
    assert "Successfully installed" not in pip.stdout, pip.stdout
    (pack / "venv").symlink_to(consumer_venv, target_is_directory=True)
    with served_pack(pack / "venv" / "bin" / "python", pack, env) as stub:
        info = stub.GetAnalyzerInfo(empty_pb2.Empty())
        # the served version is a placeholder: the CLI takes the pack's version from PulumiPolicy.yaml (pulumi-policy
        # policy.py, GetAnalyzerInfo)
        assert info.name == "gpu-platform"
        assert [p.name for p in info.policies] == [p.id for p in POLICY_DEFS]
        props = struct_pb2.Struct()
        props.update({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "debug"}, "spec": {"containers": [
            {"name": "c", "image": "busybox:1.36", "securityContext": {"privileged": True}}]}})
        found = stub.Analyze(analyzer_pb2.AnalyzeRequest(
            type="kubernetes:core/v1:Pod", properties=props, urn="urn:pulumi:ci::team::kubernetes:core/v1:Pod::debug",
            name="debug")).diagnostics
        assert [d.policyName for d in found if d.enforcementLevel == analyzer_pb2.EnforcementLevel.Value(
            "MANDATORY")] == ["pod-no-privileged"]


def test_policy_pack_init_keeps_a_users_edits_unless_forced(consumer_venv, tmp_path):
    env = clean_env(consumer_venv)
    cli = consumer_venv / "bin" / "gpuplatform"
    pack = tmp_path / "pack"
    _run([cli, "policy-pack", "init", str(pack)], cwd=tmp_path, env=env)
    (pack / "strict.json").write_text("{}\n")
    proc = subprocess.run([cli, "policy-pack", "init", str(pack)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2 and "strict.json" in proc.stderr and "--force" in proc.stderr
    assert "Traceback" not in proc.stderr and (pack / "strict.json").read_text() == "{}\n"
    _run([cli, "policy-pack", "init", "--force", str(pack)], cwd=tmp_path, env=env)
    assert json.loads((pack / "strict.json").read_text()) != {}
