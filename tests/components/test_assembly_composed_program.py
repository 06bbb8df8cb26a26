"""A composed program is checked as a compiler checks a file: every mistake of every component in one run, each
with its path, under ``gpuplatform plan|check --project`` and under the SDK's own program runner, with nothing
registered from the first mistake on; nested args typos get messages, not tracebacks; ``NotRequired`` holds with
postponed annotations; a missing stack file says so."""
import asyncio
import importlib
import runpy
import sys
import textwrap

import pulumi
import pytest
from pulumi.runtime import mocks as sdk_mocks
from pulumi.runtime import settings as sdk_settings

from gpuplatform.cli import main
from gpuplatform.components import GpuCluster, GpuMonitoring, GpuNodePool, InferenceService, WorkloadNamespace
from gpuplatform.components.args import check_args, typed_keys
from gpuplatform.synth import OfflineMocks, RecordingMonitor, synthesize

KUBE = {"kind": "kubeconfig", "kubernetesVersion": "1.33"}
T4 = {"name": "t4", "gpuModel": "T4", "gpusPerNode": 1, "maxNodes": 2}
PORTS = [{"name": "http", "containerPort": 8080, "protocol": "http"}]

# A consumer's program, as docs/reuse.md has one write it: its own config TypedDict, a cluster, a pool of 2 nodes x
# 2 GPUs, monitoring serving gpu_util from dcgm-exporter, a namespace, three services and their alerts. Three
# independent mistakes. The module postpones annotations and its stack leaves the NotRequired l20Nodes out: taken
# as required (Python 3.11's __required_keys__), the program would stop at read_project_config, before any of them.
MISTAKEN_PROGRAM = '''
from __future__ import annotations

from typing import TypedDict

import pulumi
from typing_extensions import NotRequired

from gpuplatform.components import (GpuAlerts, GpuCluster, GpuMonitoring, GpuNodePool, InferenceService,
                                    WorkloadNamespace, read_project_config)


class TeamConfig(TypedDict):
    context: str
    kubernetesVersion: str
    l20Nodes: NotRequired[int]


config = read_project_config(TeamConfig)
cluster = GpuCluster("ml", {"cluster": {"kind": "kubeconfig", "context": config["context"],
                                        "kubernetesVersion": config["kubernetesVersion"]}})
l20 = GpuNodePool("l20", {"cluster": cluster, "pool": {"name": "l20", "gpuModel": "L20", "gpusPerNode": 2,
                                                        "maxNodes": config.get("l20Nodes", 2)}})
monitoring = GpuMonitoring("monitoring", {"cluster": cluster, "monitoring": {"metrics": ["gpu_util"]}})
namespace = WorkloadNamespace("serving", {"cluster": cluster, "name": "ml-serving"})


def service(name, autoscaling):
    return InferenceService(name, {"workload": {
        "name": name, "image": f"registry.example.com/ml/{name}:1.0", "gpu": {"count": 1},
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "http"}],
        "probes": {"port": "http", "readinessPath": "/health", "livenessPath": "/health"},
        "autoscaling": autoscaling,
    }, "node_pool": l20, "monitoring": monitoring, "namespace": namespace})


# a metric dcgm-exporter does not export
embeddings = service("embeddings", {"maxReplicas": 2, "metrics": [{"metric": "gpu_sm_util", "target": 60}]})
# more replicas than 2 nodes x 2 GPUs hold
ranker = service("ranker", {"maxReplicas": 6, "metrics": [{"metric": "gpu_util", "target": 60}]})
# minReplicas above maxReplicas
chat = service("chat", {"minReplicas": 3, "maxReplicas": 2, "metrics": [{"metric": "gpu_util", "target": 60}]})
GpuAlerts("alerts", {"monitoring": monitoring, "services": [embeddings, ranker, chat]})
pulumi.export("nodeLabels", l20.node_labels)
'''

THREE_MISTAKES = [
    "InferenceService 'embeddings' args.workload.autoscaling.metrics[0].metric: 'gpu_sm_util' is not exported by "
    "GpuMonitoring 'monitoring''s GPU exporter 'dcgm'",
    "InferenceService 'ranker' args.workload.autoscaling.maxReplicas: 6 replicas never fit pool 'l20': at most 4",
    "InferenceService 'chat' args.workload.autoscaling.minReplicas: 'minReplicas' (3) must be <= 'maxReplicas' (2)",
]


def write_project(root, program: str, stacks: dict[str, str] | None = None):
    root.mkdir(parents=True, exist_ok=True)
    (root / "Pulumi.yaml").write_text("name: team\nruntime: python\n")
    for stack, text in (stacks or {}).items():
        (root / f"Pulumi.{stack}.yaml").write_text(text)
    (root / "__main__.py").write_text(textwrap.dedent(program))
    return root


@pytest.fixture(scope="module")
def mistaken_project(tmp_path_factory):
    return write_project(tmp_path_factory.mktemp("team"), MISTAKEN_PROGRAM, {
        "dev": "config:\n  team:context: ml-cluster\n  team:kubernetesVersion: '1.34'\n"})


def problems(message: str) -> list[str]:
    return [line.removeprefix("  - ") for line in message.splitlines() if line.startswith("  - ")]


def assert_the_three(message: str) -> None:
    found = problems(message)
    assert len(found) == 3, message
    for expected, line in zip(THREE_MISTAKES, found):
        assert line.startswith(expected), (expected, line)
    assert "Traceback" not in message


# ------------------------------------------------------------------------------------------- every mistake at once
@pytest.mark.parametrize("command", ["plan", "check"])
def test_one_run_of_the_tools_names_all_three_mistakes(mistaken_project, capsys, command):
    assert main([command, "--project", str(mistaken_project), "--stack", "dev"]) == 2
    assert_the_three(capsys.readouterr().err)


def run_as_the_language_host(path, config: dict[str, str], project: str = "team", stack: str = "dev") -> str:
    """The program as ``pulumi up`` runs it: the SDK's ``run_in_stack`` in an event loop of its own, as the Python
    language host's ``pulumi-language-python-exec`` does, which prints a ``pulumi.RunError`` as a message and
    anything else with its traceback. The message, or '' when the program succeeds."""
    sdk_settings.reset_options(project=project, stack=stack, preview=False)
    sdk_settings.configure(sdk_settings.Settings(project=project, stack=stack,
                                                 monitor=RecordingMonitor(OfflineMocks()),
                                                 engine=sdk_mocks.MockEngine(None), dry_run=False))
    pulumi.runtime.set_all_config(config, [])
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(pulumi.runtime.run_in_stack(lambda: runpy.run_path(str(path), run_name="__main__")))
    except pulumi.RunError as exc:
        return str(exc)
    finally:
        # what a failed program leaves pending ends with the process under the host; here, with the loop
        pending = asyncio.all_tasks(loop)
        for task in pending:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.close()
    return ""


def test_the_program_itself_fails_with_all_three(mistaken_project):
    message = run_as_the_language_host(mistaken_project / "__main__.py",
                                       {"team:context": "ml-cluster", "team:kubernetesVersion": "1.34"})
    assert_the_three(message)


def test_the_offline_runner_fails_the_program_with_all_three(mistaken_project, monkeypatch):
    monkeypatch.chdir(mistaken_project)
    monkeypatch.syspath_prepend(str(mistaken_project))
    with pytest.raises(pulumi.RunError) as info:
        synthesize({"team:context": "ml-cluster", "team:kubernetesVersion": "1.34"},
                   lambda: runpy.run_path(str(mistaken_project / "__main__.py"), run_name="__main__"), project="team")
    assert_the_three(str(info.value))


def test_a_component_with_problems_is_left_out_and_the_program_goes_on(tmp_path):
    """A broken pool registers nothing; the service on it still gets its own keys checked, and its contracts are
    named as not checked; components after the first mistake register nothing but are checked, and later ones
    are checked against them; reading an output of the broken pool stops the program there, with every problem
    and no traceback."""
    program = write_project(tmp_path / "team", '''
        import pulumi
        from gpuplatform.components import GpuCluster, GpuMonitoring, GpuNodePool, InferenceService

        c = GpuCluster("c", {"cluster": {"kind": "kubeconfig", "kubernetesVersion": "1.33"}})
        m = GpuMonitoring("m", {"cluster": c})
        bad = GpuNodePool("bad", {"cluster": c, "pool": {"name": "bad", "gpuModel": "T4", "gpusPerNode": 1,
                                                         "maxNodes": -1}})
        good = GpuNodePool("good", {"cluster": c, "pool": {"name": "good", "gpuModel": "T4", "gpusPerNode": 1,
                                                           "maxNodes": 2}})

        def workload(name, **extra):
            return {"name": name, "image": "registry.example.com/svc:1.0", "gpu": {"count": 1},
                    "ports": [{"name": "http", "containerPort": 8080, "protocol": "http"}],
                    "autoscaling": {"maxReplicas": 2, "metrics": [{"metric": "gpu_util", "target": 60}]}, **extra}

        InferenceService("typo", {"workload": workload("typo", imag="x:1"), "node_pool": bad, "monitoring": m,
                                  "namespace": "t"})
        InferenceService("fine", {"workload": workload("fine"), "node_pool": bad, "monitoring": m, "namespace": "t"})
        InferenceService("big", {"workload": workload("big", autoscaling={
            "maxReplicas": 3, "metrics": [{"metric": "gpu_util", "target": 60}]}), "node_pool": good, "monitoring": m,
            "namespace": "t"})
        pulumi.export("labels", bad.node_labels)
        raise AssertionError("the program went on past an output of a pool that is not built")
    ''') / "__main__.py"
    message = run_as_the_language_host(program, {})
    assert problems(message) == [
        "GpuNodePool 'bad' args.pool.maxNodes: -1: Input should be greater than or equal to 0",
        "InferenceService 'typo' args.workload.imag: unknown key (not a gpu-platform setting). Did you mean "
        "'image'? Allowed here: " + problems(message)[1].split("Allowed here: ")[1],
        "InferenceService 'big' args.workload.autoscaling.maxReplicas: 3 replicas never fit pool 'good': at most 2 "
        "(1 per node x 2 nodes); allowed: <= 2, or raise the pool's maxNodes",
    ]
    assert "not checked, as what they were given has problems: InferenceService 'fine' (given GpuNodePool 'bad')" \
        in message
    assert "the program stopped at GpuNodePool 'bad'.node_labels" in message
    assert "Traceback" not in message and "AssertionError" not in message


def test_nothing_registers_from_the_first_problem_on_and_later_components_are_still_checked():
    """A component with problems registers nothing, not even itself; nor does a valid one after it, which the
    components after it are still checked against. What came before the first problem registered as usual."""
    built = {}

    def program():
        built["cluster"] = c = GpuCluster("c", {"cluster": KUBE})
        built["bad"] = GpuNodePool("bad", {"cluster": c, "pool": {**T4, "name": "bad", "maxNodes": -1}})
        built["later"] = p = GpuNodePool("later", {"cluster": c, "pool": T4})
        built["service"] = InferenceService("svc", {"node_pool": p, "namespace": "t", "workload": {
            "name": "svc", "image": "registry.example.com/svc:1.0", "ports": PORTS, "gpu": {"count": 1},
            "replicas": 3}})

    message = _message(program)
    assert problems(message)[1:] == ["InferenceService 'svc' args.workload.replicas: 3 replicas never fit pool 't4': "
                                     "at most 2 (1 per node x 2 nodes); allowed: <= 2, or raise the pool's maxNodes"]
    assert "urn" in vars(built["cluster"])  # registered: it came before the first problem
    for name in ("bad", "later", "service"):
        assert "urn" not in vars(built[name]), name
    assert built["later"].facts.max_nodes == 2 and "node_labels" not in vars(built["later"])


def test_each_run_of_a_process_checks_its_own_program():
    """Problems of one run do not fail the next (gpuplatform plan runs many programs in one process: tests,
    notebooks, the Automation API)."""
    def broken():
        GpuCluster("c", {"cluster": {"kind": "kubeconfig"}})

    def fine():
        c = GpuCluster("c", {"cluster": KUBE})
        GpuNodePool("p", {"cluster": c, "pool": T4})

    with pytest.raises(pulumi.RunError):
        synthesize({}, broken)
    assert any(r.type == "gpuplatform:index:GpuNodePool" for r in synthesize({}, fine))


# ------------------------------------------------------------------------------------------- nested args typos
def _service_program(**args):
    def build():
        c = GpuCluster("c", {"cluster": KUBE})
        p = GpuNodePool("p", {"cluster": c, "pool": T4})
        m = GpuMonitoring("m", {"cluster": c})
        ns = WorkloadNamespace("ns", {"cluster": c, "name": "team"})
        workload = {"name": "chat", "image": "registry.example.com/chat:1.0", "ports": PORTS, "gpu": {"count": 1},
                    "autoscaling": {"maxReplicas": 2, "metrics": [{"metric": "gpu_util", "target": 60}]}}
        InferenceService("chat", {"workload": workload, "node_pool": p, "monitoring": m, "namespace": ns, **args})
    return build


def _message(build) -> str:
    with pytest.raises(pulumi.RunError) as info:
        synthesize({}, build)
    return str(info.value)


NESTED_TYPOS = [
    ({"workload": {"name": "chat", "image": "registry.example.com/chat:1.0", "ports": PORTS, "gpu": {"count": 1},
                   "autoscaling": {"maxReplicas": 2, "metrics": [{"metirc": "gpu_util", "target": 60}]}}},
     ["InferenceService 'chat' args.workload.autoscaling.metrics[0].metirc: unknown key (not a gpu-platform "
      "setting). Did you mean 'metric'? Allowed here: metric, target, unit"]),
    ({"wait_for": {"gpu_node": []}},
     ["InferenceService 'chat' args.wait_for.gpu_node: unknown key; did you mean 'gpu_nodes'?; allowed: crd_owners, "
      "every_child, gpu_nodes, ingress_controller, namespace (see WaitFor)"]),
    ({"wait_for": {"gpu_nodes": "monitoring"}}, ["InferenceService 'chat' args.wait_for.gpu_nodes: 'monitoring': "
                                                 "expected list"]),
    ({"wait_for": {"gpu_nodes": ["monitoring"]}}, ["InferenceService 'chat' args.wait_for.gpu_nodes[0]: "
                                                   "'monitoring': expected Resource"]),
    ({"wait_for": {"crd_owners": {"keda.sh": "keda"}}}, ["InferenceService 'chat' "
                                                         "args.wait_for.crd_owners['keda.sh']: 'keda': expected list"]),
]


@pytest.mark.parametrize("args,expected", NESTED_TYPOS, ids=["workload", "wait_for key", "wait_for type",
                                                             "wait_for item", "crd_owners value"])
def test_a_nested_typo_is_named_with_its_path(args, expected):
    """Each was a traceback from the SDK (``'depends_on' was passed a value ... that was not a Resource``), a key
    silently ignored, or a typo followed by a second line for the required key it misspells."""
    assert problems(_message(_service_program(**args))) == expected


def test_a_typo_in_a_consumers_nested_config_is_named_not_a_key_error(tmp_path, capsys):
    """The consumer's program reads ``config["pool"]["maxNodes"]`` once the config is checked: a misspelt key in the
    nested dict used to end there in a KeyError traceback."""
    project = write_project(tmp_path / "team", '''
        from typing import TypedDict
        from typing_extensions import NotRequired
        from gpuplatform.components import read_project_config

        class Pool(TypedDict):
            maxNodes: int
            zone: NotRequired[str]

        class TeamConfig(TypedDict):
            pool: Pool

        config = read_project_config(TeamConfig)
        print(config["pool"]["maxNodes"])
    ''', {"dev": "config:\n  team:pool:\n    maxNode: 2\n    zone: 3\n"})
    assert main(["plan", "--project", str(project)]) == 2
    err = capsys.readouterr().err
    assert problems(err) == ["team:pool.maxNode: unknown key; did you mean 'maxNodes'?; allowed: maxNodes, zone "
                             "(see Pool)", "team:pool.zone: 3: expected str"]
    assert "KeyError" not in err and "Traceback" not in err


# ------------------------------------------------------------------------------------------- NotRequired
ARGS_MODULE = '''
{future}
from typing import TypedDict
from typing_extensions import NotRequired, Required


class Options(TypedDict, total=False):
    region: Required[str]
    zone: str


class TeamArgs(TypedDict):
    context: str
    nodes: NotRequired[int]
    options: NotRequired[Options]
'''


@pytest.mark.parametrize("future", ["from __future__ import annotations", ""], ids=["postponed", "evaluated"])
def test_not_required_keys_are_optional_whether_annotations_are_postponed_or_not(tmp_path, monkeypatch, future):
    """With ``from __future__ import annotations`` Python 3.11 counts a ``NotRequired`` key as required in
    ``__required_keys__`` (and a ``Required`` key of a ``total=False`` class as optional); the check reads the
    annotations themselves."""
    (tmp_path / "team_args.py").write_text(ARGS_MODULE.format(future=future))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("team_args", None)
    module = importlib.import_module("team_args")
    try:
        _hints, required = typed_keys(module.TeamArgs)
        assert required == {"context"}
        assert typed_keys(module.Options)[1] == {"region"}
        assert check_args("Team", "t", {"context": "ml"}, module.TeamArgs) == []
        assert [i.path for i in check_args("Team", "t", {"options": {"zone": "a"}}, module.TeamArgs)] == [
            "Team 't' args.options.region", "Team 't' args.context"]
    finally:
        sys.modules.pop("team_args", None)


# ------------------------------------------------------------------------------------------- stack files
def test_a_stack_without_a_stack_file_is_named_with_the_stacks_there_are(mistaken_project, capsys):
    assert main(["plan", "--project", str(mistaken_project), "--stack", "prod"]) == 2
    err = capsys.readouterr().err
    assert problems(err) == [f"--stack: 'prod': the stack file '{mistaken_project / 'Pulumi.prod.yaml'}' does not "
                             "exist; stacks of project 'team' (a Pulumi.<stack>.yaml each): dev"]


def test_a_project_without_stack_files_runs_on_no_config_and_says_so(tmp_path, capsys):
    project = write_project(tmp_path / "team", '''
        from typing import TypedDict
        from gpuplatform.components import read_project_config

        class TeamConfig(TypedDict):
            context: str

        read_project_config(TeamConfig)
    ''')
    assert main(["check", "--project", str(project), "--stack", "staging"]) == 2
    err = capsys.readouterr().err
    assert problems(err) == ["team:context: required key is missing (expected str)"]
    assert "project 'team' has no stack file Pulumi.staging.yaml: the program ran with no config" in err
