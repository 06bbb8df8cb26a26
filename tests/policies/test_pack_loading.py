"""``pulumi preview --policy-pack policies`` as the CLI runs it, without the CLI.

For a Python policy pack the CLI asks the Python language host to run the folder: it reads ``PulumiPolicy.yaml``,
resolves ``runtime.options.virtualenv`` against the pack folder, and starts ``<venv>/bin/python -u -m pulumi.policy
<engine address> <pack folder>`` in the pack folder (pulumi ``sdk/python/cmd/pulumi-language-python/main.go``,
``RunPlugin`` and ``parseOptions``; a policy pack gets no default virtualenv, so without the option it would run
the ``python3`` on PATH). ``pulumi.policy`` runs the folder's ``__main__.py``, whose ``PolicyPack`` serves the
analyzer on a loopback port it prints (pulumi-policy ``policy.py``). The engine then calls ``Analyze`` per resource
with its inputs and ``AnalyzeStack`` with every resource's outputs.

Here the virtualenv is built from ``policies/requirements.txt`` alone, the pack is started that same way, and the
test talks to it over gRPC as the engine would, with every stack's resources.
"""
import copy
import dataclasses
import re
import subprocess
import sys
import venv

import pytest
import yaml
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime.proto import analyzer_pb2

from gpuplatform.check import _wire_value
from gpuplatform.policies.pack import POLICY_DEFS
from live_state import live_outputs
from support import REPO, STACKS, clean_env, served_pack, wheelhouse

PACK = REPO / "policies"
# one worker builds the pack's virtualenv and serves the pack for all of these (pytest-xdist --dist loadgroup)
pytestmark = pytest.mark.xdist_group("policy-pack-venv")
MANDATORY = analyzer_pb2.EnforcementLevel.Value("MANDATORY")


def _project_version() -> str:
    return re.search(r'(?m)^version = "([^"]+)"', (REPO / "pyproject.toml").read_text()).group(1)


def test_policy_project_file_names_its_virtualenv_and_version():
    doc = yaml.safe_load((PACK / "PulumiPolicy.yaml").read_text())
    assert doc["runtime"]["name"] == "python"
    # relative to the pack folder, the way the language host resolves it
    assert doc["runtime"]["options"]["virtualenv"] == "venv"
    assert doc["version"] == _project_version()
    assert (REPO / ".gitignore").read_text().splitlines().count("policies/venv/") == 1


def test_pack_requirements_pin_what_the_project_pins():
    def pins(path):
        return {m.group(1).lower().replace("_", "-"): m.group(2)
                for m in re.finditer(r"(?m)^([A-Za-z0-9_.-]+)==(\S+)", path.read_text())}
    pack, project = pins(PACK / "requirements.txt"), pins(REPO / "requirements.txt")
    assert set(pack) == {"pulumi", "pulumi-policy", "pyyaml"}
    assert {k: project[k] for k in pack} == pack


def test_policies_import_only_catalogs_and_themselves():
    """The pack's import closure: no components/, no pydantic or provider SDKs; catalogs/ needs only the
    standard library and yaml."""
    probe = (
        "import sys\n"
        f"sys.path.insert(0, {str(REPO)!r})\n"
        "before = set(sys.modules)\n"
        "import gpuplatform.catalogs.gpus, gpuplatform.catalogs.metrics, gpuplatform.catalogs.kubernetes\n"
        "import gpuplatform.catalogs.sharing, gpuplatform.catalogs.mig, gpuplatform.catalogs.capacity\n"
        "import gpuplatform.catalogs.versions\n"
        "catalogs = {m.split('.')[0] for m in set(sys.modules) - before}\n"
        "import gpuplatform.policies.pack\n"
        "print(sorted(catalogs - set(sys.stdlib_module_names)))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'pulumi_kubernetes', "
        "'pulumi_alicloud', 'kubernetes') or m.startswith('gpuplatform.components')))\n")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=PACK)
    assert proc.returncode == 0, proc.stderr
    catalog_deps, forbidden = proc.stdout.splitlines()
    assert set(eval(catalog_deps)) <= {"gpuplatform", "yaml"} and eval(forbidden) == []


@pytest.fixture(scope="session")
def pack_venv(tmp_path_factory):
    """The virtualenv the README tells users to create, from policies/requirements.txt and nothing else."""
    wheels = wheelhouse()  # skips before a virtualenv is built for nothing
    root = tmp_path_factory.mktemp("policy-venv")
    venv.EnvBuilder(with_pip=True).create(root)
    proc = subprocess.run(
        [root / "bin" / "python", "-m", "pip", "install", "-q", "--no-compile", "--disable-pip-version-check",
         "--no-index", "--find-links", str(wheels), "-r", str(PACK / "requirements.txt")],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return root


@pytest.fixture(scope="module")
def analyzer(pack_venv):
    """The pack started as the language host starts it; a stub that speaks to it as the engine does."""
    with served_pack(pack_venv / "bin" / "python", PACK, clean_env(pack_venv)) as stub:
        yield stub


def _struct(props) -> struct_pb2.Struct:
    s = struct_pb2.Struct()
    s.update(_wire_value(props))
    return s


def _stack_urns(records, stack):
    """URNs as the engine builds them for ``stack`` (the offline runner synthesizes under one name)."""
    return [dataclasses.replace(r, urn=r.urn.replace("urn:pulumi:offline::", f"urn:pulumi:{stack}::", 1))
            for r in copy.deepcopy(records)]


def _analyze_all(stub, records, stack_state):
    diagnostics = []
    for r in records:
        diagnostics += stub.Analyze(analyzer_pb2.AnalyzeRequest(
            type=r.type, properties=_struct(r.inputs), urn=r.urn, name=r.name,
            options=analyzer_pb2.AnalyzerResourceOptions(protect=r.protect))).diagnostics
    stack = analyzer_pb2.AnalyzeStackRequest(resources=[analyzer_pb2.AnalyzerResource(
        type=r.type, properties=_struct(stack_state(r)), urn=r.urn, name=r.name,
        options=analyzer_pb2.AnalyzerResourceOptions(protect=r.protect)) for r in records])
    return diagnostics + list(stub.AnalyzeStack(stack).diagnostics)


def test_the_served_pack_has_every_policy_and_its_level(analyzer):
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty())
    assert info.name == "gpu-platform"
    assert [p.name for p in info.policies] == [p.id for p in POLICY_DEFS]
    levels = {p.name: analyzer_pb2.EnforcementLevel.Name(p.enforcementLevel).lower() for p in info.policies}
    assert levels == {p.id: p.level.value for p in POLICY_DEFS}


@pytest.mark.parametrize("stack", STACKS)
def test_the_served_pack_passes_every_stack_first_and_second_preview(analyzer, stack_records, stack):
    records = _stack_urns(stack_records(stack), stack)
    first = _analyze_all(analyzer, records, lambda r: r.engine_outputs())
    second = _analyze_all(analyzer, records, live_outputs(records))
    assert [(d.policyName, d.message) for d in first + second] == []


def test_the_served_pack_reports_what_it_should(analyzer, stack_records):
    """The same wire, a real defect: components that register nothing leave GPU workloads unplaced, and an
    authored replica count under an HPA is caught from the inputs."""
    records = _stack_urns(stack_records("prod"), "prod-defects")
    dep = next(r for r in records if r.inputs.get("kind") == "Deployment")
    dep.inputs["spec"]["replicas"] = 3
    unregistered = [dataclasses.replace(r, outputs=None) if not r.custom else r for r in records]
    found = {(d.policyName, d.enforcementLevel == MANDATORY) for d in _analyze_all(
        analyzer, unregistered, lambda r: r.engine_outputs())}
    # an unplaced GPU workload blocks; an authored replica count is a hardening gap (advisory unless strict)
    assert found == {("gpu-pod-placement", True), ("deployment-no-replicas-with-autoscaler", False)}
