"""gpuplatform/rehearse/pulumi_cli.py without the real CLI: the project copied from the checkout, the launcher of
our language host, the engine's event log read back, and every step bounded. The real CLI runs it in
tests/realengines/gpuplatform/rehearse/test_pulumi_cli.py."""
import json
import os
import stat
import sys
import time
from pathlib import Path

import pytest
import yaml

from gpuplatform.rehearse.pulumi_cli import (Outcome, PulumiCli, PulumiCliError, project_from_checkout,
                                             read_event_log, write_language_host_launcher, write_project)
from support import REPO



def test_the_checkouts_project_is_copied_with_its_stack_file_beside_it(tmp_path):
    before = (REPO / "stacks" / "Pulumi.local.yaml").read_text()
    project = project_from_checkout(REPO, tmp_path / "p", "local")
    doc = yaml.safe_load((project / "Pulumi.yaml").read_text())
    assert doc["name"] == "gpu-platform" and "stackConfigDir" not in doc
    assert doc["runtime"]["options"] == {"toolchain": "pip", "virtualenv": str(Path(sys.prefix).resolve())}
    assert (project / "Pulumi.local.yaml").read_text() == before
    assert (project / "__main__.py").read_text() == (REPO / "__main__.py").read_text()
    # the CLI writes the stack's encryption salt into the copy, never into the checkout's stack file
    assert (REPO / "stacks" / "Pulumi.local.yaml").read_text() == before
    with pytest.raises(PulumiCliError, match="no stack file"):
        project_from_checkout(REPO, tmp_path / "q", "nonesuch")


def test_write_project_names_its_virtualenv_and_stacks(tmp_path):
    project = write_project(tmp_path / "t", name="team", program="print(1)\n", stacks={"dev": {"team:x": 1}})
    assert yaml.safe_load((project / "Pulumi.yaml").read_text())["runtime"]["name"] == "python"
    assert yaml.safe_load((project / "Pulumi.dev.yaml").read_text()) == {"config": {"team:x": 1}}


def test_the_launcher_starts_our_language_host(tmp_path):
    launcher = write_language_host_launcher(tmp_path, "/opt/py 3/bin/python")
    assert launcher.name == "pulumi-language-python" and launcher.stat().st_mode & stat.S_IXUSR
    last = launcher.read_text().splitlines()[-1]
    assert last.startswith("exec '/opt/py 3/bin/python' ") and last.endswith('language_host.py "$@"')


def test_the_event_log_gives_changes_operations_diagnostics_and_violations(tmp_path):
    urn = "urn:pulumi:bad::team::kubernetes:apps/v1:Deployment::embedder"
    events = [
        {"sequence": 1, "diagnosticEvent": {"severity": "warning", "message": "using pulumi-resource-kubernetes "
                                            "from $PATH", "urn": ""}},
        {"sequence": 2, "diagnosticEvent": {"severity": "info", "message": "scratch", "ephemeral": True}},
        {"sequence": 3, "resOutputsEvent": {"metadata": {"op": "create", "urn": urn}}},
        {"sequence": 4, "policyEvent": {"resourceUrn": urn, "message": "privileged", "policyName": "pod-no-privileged",
                                        "policyPackName": "gpu-platform", "enforcementLevel": "mandatory"}},
        {"sequence": 5, "diagnosticEvent": {"severity": "error", "message": "preview failed\n", "urn": ""}},
        {"sequence": 6, "summaryEvent": {"resourceChanges": {"create": 2}}},
    ]
    log = tmp_path / "events.jsonl"
    log.write_text("\n".join(json.dumps(e) for e in events) + "\nnot json\n")
    outcome = Outcome("preview bad", ["pulumi"], 255, "", "", 1.0)
    read_event_log(log, outcome)
    assert outcome.changes == {"create": 2}
    assert outcome.operations == [("create", urn)]
    assert [d.severity for d in outcome.diagnostics] == ["warning", "error"]
    (violation,) = outcome.violations
    assert (violation.resource_type, violation.resource_name, violation.level) == (
        "kubernetes:apps/v1:Deployment", "embedder", "mandatory")
    assert outcome.explain().splitlines()[:2] == [
        "preview failed", "mandatory policy violation pod-no-privileged (kubernetes:apps/v1:Deployment embedder): "
        "privileged"]


def _fake_engines(tmp_path: Path, script: str) -> Path:
    engines = tmp_path / "engines"
    engines.mkdir()
    for name, body in (("pulumi", script), ("pulumi-resource-kubernetes", "exit 0\n")):
        path = engines / name
        path.write_text("#!/bin/sh\n" + body)
        path.chmod(0o755)
    return engines


def test_missing_engines_say_how_to_build_them(tmp_path):
    with pytest.raises(PulumiCliError, match=r"pulumi, pulumi-resource-kubernetes not in .*: run `make engines`"):
        PulumiCli(tmp_path, tmp_path / "w")


def test_a_step_past_its_bound_is_stopped_and_named(tmp_path):
    # a CLI that ignores the interrupt: the step still ends, within its bound plus the grace period
    engines = _fake_engines(tmp_path, "trap '' INT\necho working\nsleep 120\n")
    cli = PulumiCli(engines, tmp_path / "w")
    started = time.monotonic()
    with pytest.raises(PulumiCliError, match=r"^up dev: `pulumi up --stack dev .*` ran past its bound of 1 s"):
        cli.up(tmp_path, "dev", timeout=1)
    assert time.monotonic() - started < 60


def test_a_failed_step_shows_the_clis_own_error_and_its_environment_is_private(tmp_path):
    engines = _fake_engines(tmp_path, 'echo "error: no stack named dev" >&2\n'
                                      'env | grep -E "^(PULUMI_[A-Z_]+|PATH)=" | sort > "$PULUMI_HOME/env"\n'
                                      "exit 255\n")
    cli = PulumiCli(engines, tmp_path / "w", env={"KUBECONFIG": "/k"})
    with pytest.raises(PulumiCliError) as info:
        cli.destroy(tmp_path, "dev")
    assert str(info.value) == ("destroy dev: `pulumi destroy --stack dev --yes --skip-preview` failed (exit 255):\n"
                               "error: no stack named dev")
    seen = dict(line.split("=", 1) for line in (cli.home / "env").read_text().splitlines())
    assert seen["PULUMI_BACKEND_URL"] == cli.state.resolve().as_uri()
    assert seen["PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION"] == "true"
    assert seen["PATH"].split(os.pathsep)[:2] == [str(engines), str(cli.bin)]
