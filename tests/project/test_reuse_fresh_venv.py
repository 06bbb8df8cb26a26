"""examples/reuse as its own project: a fresh virtualenv built from its requirements.txt alone, a consumer with
its own ``components/`` folder, and an offline plan, all outside this checkout."""
import json
import shutil
import subprocess
import venv

import pytest

from support import REPO, clean_env, wheelhouse

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


def test_policy_pack_init_refuses_to_pin_a_checkout(consumer_venv, tmp_path):
    """pip recorded the checkout as a local directory (PEP 610 ``dir_info``): a pack pinned to it would install on
    this machine only, and the bare name would resolve to whoever registers it on a public index; init says what to
    name instead (tests/gpuplatform/test_policy_pack_source.py installs a pack written with --source in a fresh CI venv)."""
    env = clean_env(consumer_venv)
    direct_url = _run([consumer_venv / "bin" / "python", "-c", "from importlib.metadata import distribution; "
                       "print(distribution('gpu-platform').read_text('direct_url.json'))"], cwd=tmp_path, env=env)
    assert "dir_info" in json.loads(direct_url.stdout)
    proc = subprocess.run([consumer_venv / "bin" / "gpuplatform", "policy-pack", "init", str(tmp_path / "pack")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "is installed from the directory" in proc.stderr
    assert "--source" in proc.stderr and "--index-url" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "pack").exists()
