"""The real Pulumi CLI (engines/versions.env: the CLI and pulumi-kubernetes' provider, built by ``make engines``) with
gpu-platform's Python language host (gpuplatform/rehearse/language_host.py), a local file backend, and a local
control plane (gpuplatform/rehearse/controlplane.py) as the cluster.

* a tiny program's ConfigMap: ``pulumi up`` creates it in the API server, ``pulumi preview --expect-no-changes``
  finds nothing to do, ``pulumi destroy`` deletes it and leaves an empty stack;
* the policy pack (``policies/``) through the CLI, ``pulumi preview --policy-pack``: a stack with a mandatory
  violation is blocked, a good one passes, and the findings are those of ``gpuplatform check`` on the same project.

In CI (``CI=true``) a missing engine fails these tests; elsewhere they skip saying how to build the engines.
"""
import json
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from gpuplatform.rehearse.pulumi_cli import PulumiCli, PulumiCliError, write_project
from support import REPO

PACK = REPO / "policies"

# the engines and the control plane: tests/realengines/conftest.py (a missing engine fails in CI, else skips)
pytestmark = [pytest.mark.realengines, pytest.mark.xdist_group("pulumi-cli")]


@pytest.fixture(scope="module")
def cli(engines, control_plane, tmp_path_factory):
    return PulumiCli(engines, tmp_path_factory.mktemp("pulumi"), env=control_plane.environment())


# ------------------------------------------------------------------------------------------------ up, preview, destroy
CONFIGMAP_PROGRAM = textwrap.dedent('''\
    import pulumi
    import pulumi_kubernetes as k8s

    cm = k8s.core.v1.ConfigMap("settings", metadata={"name": "rehearsal-settings", "namespace": "default"},
                               data={"greeting": pulumi.Config().require("greeting")})
    pulumi.export("uid", cm.metadata.uid)
''')


def test_configmap_up_then_no_changes_then_destroy(cli, control_plane, tmp_path):
    project = write_project(tmp_path / "configmap", name="configmap", program=CONFIGMAP_PROGRAM,
                            stacks={"rehearsal": {"configmap:greeting": "hello"}})
    cli.stack_init(project, "rehearsal")

    up = cli.up(project, "rehearsal")
    created = {urn.rsplit("::", 1)[-1] for op, urn in up.operations if op == "create"}
    assert "settings" in created, up.operations
    assert up.changes.get("create", 0) >= 2 and set(up.changes) == {"create"}, up.changes
    status, body = control_plane.request("GET", "/api/v1/namespaces/default/configmaps/rehearsal-settings")
    assert status == 200 and body["data"] == {"greeting": "hello"}, body
    # applied by the provider with server-side apply (its default), under its own field manager
    assert {(f["operation"], f["manager"].split("-")[0]) for f in body["metadata"]["managedFields"]} == {
        ("Apply", "pulumi")}, body["metadata"]["managedFields"]

    again = cli.preview(project, "rehearsal", expect_no_changes=True)
    assert set(again.changes) == {"same"} and again.changes["same"] == up.changes["create"], again.changes

    gone = cli.destroy(project, "rehearsal")
    assert gone.changes == {"delete": up.changes["create"]}, gone.changes
    status, _ = control_plane.request("GET", "/api/v1/namespaces/default/configmaps/rehearsal-settings")
    assert status == 404
    assert cli.resources(project, "rehearsal") == []


def test_a_failing_step_names_itself_and_shows_the_cli_error(cli, tmp_path):
    """A program error arrives as the CLI's own diagnostic, under the step that ran it."""
    project = write_project(tmp_path / "broken", name="broken", program="raise ValueError('no such setting')\n",
                            stacks={"rehearsal": {}})
    cli.stack_init(project, "rehearsal")
    with pytest.raises(PulumiCliError) as info:
        cli.up(project, "rehearsal", timeout=120)
    message = str(info.value)
    assert message.startswith("up rehearsal: `pulumi up --stack rehearsal"), message
    assert "ValueError: no such setting" in message, message


# ------------------------------------------------------------------------------------------------ the policy pack
TEAM_PROGRAM = textwrap.dedent('''\
    import pulumi
    import pulumi_kubernetes as k8s

    labels = {"app": "embedder"}
    container = {"name": "server", "image": "registry.k8s.io/e2e-test-images/agnhost:2.52",
                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    if pulumi.Config().get_bool("privileged"):
        container["securityContext"] = {"privileged": True}
    k8s.apps.v1.Deployment("embedder", metadata={"name": "embedder", "namespace": "default"}, spec={
        "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}}})
    k8s.autoscaling.v2.HorizontalPodAutoscaler("embedder", metadata={"name": "embedder", "namespace": "default"},
        spec={"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "embedder"},
              "minReplicas": 1, "maxReplicas": 2,
              "metrics": [{"type": "Resource", "resource": {
                  "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}}]})
''')


@pytest.fixture(scope="module")
def pack(tmp_path_factory):
    """``policies/`` as a user runs it: the same files, with ``venv`` (its runtime option) being the environment
    that runs these tests, whose pulumi, pulumi-policy and pyyaml are the versions policies/requirements.txt pins
    (tests/policies/test_pack_loading.py holds the two files to the same pins)."""
    root = tmp_path_factory.mktemp("pack") / "policies"
    shutil.copytree(PACK, root, ignore=shutil.ignore_patterns("venv", "__pycache__"))
    (root / "venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    return root


@pytest.fixture(scope="module")
def team(tmp_path_factory):
    return write_project(tmp_path_factory.mktemp("team"), name="team", program=TEAM_PROGRAM,
                         stacks={"good": {}, "bad": {"team:privileged": True}})


def check_findings(project: Path, stack: str, tmp_path: Path) -> set:
    """(policy, level, resource type, resource name) of every finding of ``gpuplatform check`` on the project."""
    from gpuplatform.cli import main

    out = tmp_path / f"check-{stack}.json"
    main(["check", "--project", str(project), "--stack", stack, "--format", "json", "--output", str(out)])
    return {(v["policy_id"], v["level"], v["resource_type"], v["resource_name"]) for v in json.loads(out.read_text())}


@pytest.mark.parametrize("stack,blocked", [("bad", True), ("good", False)])
def test_the_policy_pack_through_the_cli_blocks_what_check_blocks(cli, pack, team, stack, blocked, tmp_path):
    cli.stack_init(team, stack)
    preview = cli.preview(team, stack, policy_packs=[pack], check=False)
    found = {(v.policy, v.level, v.resource_type, v.resource_name) for v in preview.violations}
    mandatory = {f for f in found if f[1] == "mandatory"}
    assert preview.ok is not blocked, preview.explain()
    if blocked:
        assert mandatory == {("pod-no-privileged", "mandatory", "kubernetes:apps/v1:Deployment", "embedder")}
    else:
        assert not mandatory and found, found
    assert found == check_findings(team, stack, tmp_path)
