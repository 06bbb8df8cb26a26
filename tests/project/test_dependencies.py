"""Dependencies split by what a user runs: the base install is the policy pack's; the components, ACK, verify,
the plot and the Helm engine each come with an extra. Each process here hides the modules of the extras it does not
install, as a virtualenv without them would (tests/gpuplatform/test_policy_pack_source.py installs the pack for real, and
benchmarks/pack_install.py measures it)."""
import json
import re
import subprocess
import sys
import tomllib

import pytest
from packaging.requirements import Requirement

from gpuplatform.extras import EXTRA_OF_MODULE, WHAT_NEEDS_IT
from support import REPO

PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
EXTRAS = PROJECT["optional-dependencies"]
MANIFEST = REPO / "tests" / "fixtures" / "corpus" / "06_triton_autoscaled.yaml"
DISTRIBUTION_OF_MODULE = {"pydantic": "pydantic", "pulumi_kubernetes": "pulumi-kubernetes",
                          "kubernetes_validate": "kubernetes-validate", "jsonschema": "kubernetes-validate",
                          "referencing": "kubernetes-validate", "pulumi_alicloud": "pulumi-alicloud",
                          "kubernetes": "kubernetes", "matplotlib": "matplotlib", "helm": "helm-python-sdk"}
"""Module -> the distribution our extra names for it (jsonschema and referencing come with kubernetes-validate)."""


def _names(requirements) -> set:
    return {Requirement(r).name.lower() for r in requirements}


def _closure(extra: str) -> set:
    """Every distribution an extra installs, the extras it names of gpu-platform itself included."""
    out = set()
    for r in map(Requirement, EXTRAS[extra]):
        out |= set().union(*(_closure(e) for e in r.extras)) if r.name == "gpu-platform" else {r.name.lower()}
    return out


def test_the_base_install_is_what_the_policy_pack_imports():
    assert _names(PROJECT["dependencies"]) == {"pulumi", "pulumi-policy", "pyyaml"}


def test_every_optional_module_names_the_extra_that_installs_it():
    assert set(EXTRA_OF_MODULE.values()) == set(WHAT_NEEDS_IT) == set(EXTRAS) - {"all"}
    for module, extra in EXTRA_OF_MODULE.items():
        assert DISTRIBUTION_OF_MODULE[module] in _closure(extra), (module, extra)
    assert _closure("all") == set().union(*(_closure(e) for e in WHAT_NEEDS_IT))


def test_requirements_txt_pins_the_full_set():
    pinned = {m.group(1).lower().replace("_", "-")
              for m in re.finditer(r"(?m)^([A-Za-z0-9_.-]+)==", (REPO / "requirements.txt").read_text())}
    assert _names(PROJECT["dependencies"]) | _closure("all") <= pinned


def _without(modules, code: str, *args: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter where ``modules`` cannot be imported, as if not installed."""
    hide = ("import sys, importlib.abc\n"
            f"HIDDEN = {sorted(modules)!r}\n"
            "class NotInstalled(importlib.abc.MetaPathFinder):\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] in HIDDEN:\n"
            "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
            "sys.meta_path.insert(0, NotInstalled())\n")
    return subprocess.run([sys.executable, "-c", hide + code, *args], cwd=REPO, capture_output=True, text=True,
                          timeout=300)


CLI = ("import json\nfrom gpuplatform.cli import main\n"
       "code = main(sys.argv[1:])\n"
       "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in HIDDEN)))\n"
       "sys.exit(code)\n")


def test_the_policy_pack_builds_with_the_base_install_only():
    proc = _without(EXTRA_OF_MODULE, "from gpuplatform.policies.pack import POLICY_DEFS\n"
                                     "from gpuplatform.policies.registry import strict_config\n"
                                     "print(len(POLICY_DEFS), len(strict_config()))\n")
    assert proc.returncode == 0, proc.stderr
    policies, configured = map(int, proc.stdout.split())
    assert policies >= 50 and configured > 0


def test_check_manifests_runs_every_policy_with_the_base_install_only():
    proc = _without(EXTRA_OF_MODULE, CLI, "check", "--manifests", str(MANIFEST),
                    "--format", "json")
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
    report, imported = proc.stdout.rsplit("\n", 2)[:2]
    assert json.loads(imported) == []
    assert isinstance(json.loads(report), list)
    # the API server's schemas are kubernetes-validate's: without it the check says so rather than pass silently
    assert "the API server's schema checks did not run" in proc.stderr and "gpu-platform[stack]" in proc.stderr


HEAVY = {m for m, extra in EXTRA_OF_MODULE.items() if extra != "stack"}


def test_check_and_plan_of_a_kubeconfig_stack_need_the_stack_extra_only(tmp_path):
    for command in (["check", "--stack", "local"], ["plan", "--stack", "local", "--out", str(tmp_path / "plan")]):
        proc = _without(HEAVY, CLI, *command)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
        assert json.loads(proc.stdout.splitlines()[-1]) == []


@pytest.mark.parametrize("hidden, command, extra", [
    (EXTRA_OF_MODULE, ["check", "--stack", "local"], "stack"),
    (HEAVY, ["check", "--stack", "dev"], "ack"),
    (HEAVY, ["plan", "--stack", "dev", "--no-sweep"], "ack"),
    (HEAVY, ["verify", "--stack", "local", "--kubeconfig", "/nonexistent/kubeconfig"], "verify"),
])
def test_a_command_without_its_extra_names_the_extra_to_install(hidden, command, extra):
    proc = _without(hidden, CLI, *command)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert f"pip install 'gpu-platform[{extra}]'" in proc.stderr and WHAT_NEEDS_IT[extra] in proc.stderr
