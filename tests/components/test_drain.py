"""Scale-in and rollouts lose no request: the drain chain (catalogs/drain.py, components/drain.py) as the stack
renders it, as validation judges it, as the policy pack judges plain manifests and as the simulator charges it."""
import copy
import json
import math
from pathlib import Path

import pytest
import yaml

from gpuplatform.catalogs import drain as cat
from gpuplatform.catalogs.server_cli import DRAIN_TIMEOUT, SERVER_CLIS
from gpuplatform.components.drain import (CLUSTER_AUTOSCALER_MAX_GRACEFUL_TERMINATION_DEFAULT, autoscaler_grace_issues,
                                          drain_chain, pool_grace_periods, rollout_strategy)
from gpuplatform.components.stack_config import namespace_from_stack_file
from gpuplatform.components.validation import kubernetes_version, load
from support import REPO, assert_rejected, cli, stack_raw, synth

EXAMPLES = REPO / "examples"


def example_raw(name: str) -> dict:
    path = next((EXAMPLES / name).glob("Pulumi.*.yaml"))
    return copy.deepcopy(namespace_from_stack_file(path))


def deployments(raw: dict) -> list[dict]:
    """The workloads' Deployments (not their warm-capacity placeholders', which serve nothing and drain nothing)."""
    return [r.inputs for r in synth(raw) if r.type == "kubernetes:apps/v1:Deployment"
            and r.inputs["metadata"].get("labels", {}).get("app.kubernetes.io/component") != "warm-capacity"]


# ---------------------------------------------------------------------------------------------- the catalog
def test_the_sleep_action_is_native_from_1_30_and_an_exec_of_sleep_before():
    assert cat.pre_stop_hook(15, (1, 30)) == {"preStop": {"sleep": {"seconds": 15}}}
    assert cat.pre_stop_hook(15, (1, 29)) == {"preStop": {"exec": {"command": ["sleep", "15"]}}}
    assert cat.pre_stop_hook(0, (1, 35)) is None


@pytest.mark.parametrize("container,seconds", [
    ({"lifecycle": {"preStop": {"sleep": {"seconds": 20}}}}, 20),
    ({"lifecycle": {"preStop": {"exec": {"command": ["/bin/sleep", "12"]}}}}, 12),
    ({"lifecycle": {"preStop": {"exec": {"command": ["sh", "-c", "sleep 7 && kill -TERM 1"]}}}}, 7),
    ({"lifecycle": {"preStop": {"httpGet": {"path": "/drain", "port": 8000}}}}, 0),
    ({"name": "no-hook"}, None),
])
def test_a_containers_pre_stop_wait_is_read_from_every_hook_form(container, seconds):
    assert cat.pre_stop_seconds(container) == seconds


def test_the_last_flag_wins_and_both_spellings_count():
    assert cat.flag_value(["--shutdown-timeout", "10", "--shutdown-timeout=60"], ("--shutdown-timeout",)) == "60"
    assert cat.flag_value(["exec vllm serve m --shutdown-timeout 45"], ("--shutdown-timeout",)) == "45"
    assert cat.flag_value(["--port=8000"], ("--shutdown-timeout",)) is None


@pytest.mark.parametrize("value,tokens", [("8192", 8192), ("8k", 8000), ("8K", 8192), ("auto", None), ("-1", None)])
def test_vllm_token_limits_are_read_as_vllm_reads_them(value, tokens):
    assert cat.token_limit("vllm", [f"--max-model-len={value}"]) == tokens


def test_what_each_server_does_on_sigterm():
    assert cat.effective_drain_seconds("vllm", (0, 9, 2), 300) == 0  # no drain before 0.18.0: aborts
    assert cat.effective_drain_seconds("vllm", (0, 18, 0), None) == 0  # the default 0 aborts
    assert cat.effective_drain_seconds("vllm", (0, 18, 0), 120) == 120
    assert cat.effective_drain_seconds("triton", (24, 8), None) == 30
    assert math.isinf(cat.effective_drain_seconds("sglang", (0, 5, 4), None))
    assert cat.effective_drain_seconds("tgi", (3, 3, 7), None) == 90
    assert cat.SERVER_DRAINS["vllm"].since == (0, 18, 0)
    assert cat.server_of_image("docker.io/vllm/vllm-openai:v0.33.0") == "vllm"
    assert cat.server_of_image("registry.example.com/team/app:1") is None


def test_every_drain_flag_is_a_flag_of_the_servers_own_table():
    for name, spec in cat.SERVER_DRAINS.items():
        if spec.flag is not None:
            flag = SERVER_CLIS[name].flag(spec.flag)
            assert flag is not None and flag.fact == DRAIN_TIMEOUT, name
        assert spec.source, name


# ---------------------------------------------------------------------------------------------- rendered stacks
def _rendered_chain_holds(dep: dict, autoscaler_seconds: int) -> tuple[float, float, float]:
    """(grace, preStop wait, server drain) read back from the rendered Deployment alone, with the catalog's readers
    (what the policy pack does with a plain manifest)."""
    spec = dep["spec"]["template"]["spec"]
    c = spec["containers"][0]
    grace = spec["terminationGracePeriodSeconds"]
    wait = cat.pre_stop_seconds(c)
    server = cat.server_of_image(c["image"])
    words = c.get("command", []) + c.get("args", [])
    seconds = cat.effective_drain_seconds(server, cat.image_release(c["image"]),
                                          cat.drain_seconds_given(server, words)) if server else 0
    assert wait is not None and wait > 0, "no preStop wait"
    assert grace <= autoscaler_seconds
    return grace, wait, seconds


@pytest.mark.parametrize("source", ["examples/005-vllm-queue", "examples/006-sglang-queue", "stacks/prod"])
def test_the_rendered_drain_chain_satisfies_the_inequality(source):
    raw = stack_raw("prod") if source == "stacks/prod" else example_raw(source.split("/")[1])
    cfg = load(copy.deepcopy(raw))
    for dep, w in zip(deployments(raw), cfg.workloads):
        grace, wait, seconds = _rendered_chain_holds(dep, CLUSTER_AUTOSCALER_MAX_GRACEFUL_TERMINATION_DEFAULT)
        bounded = min(seconds, drain_chain(w, kubernetes_version(cfg)).longest_request_s)
        assert bounded > 0, f"{w.name}: the server aborts its requests on SIGTERM"
        assert grace >= wait + bounded, (grace, wait, bounded)
        assert wait >= cat.propagation(w.exposure.ingress.class_name if w.exposure.ingress else None).seconds
        assert drain_chain(w, kubernetes_version(cfg)).lossless
    pools = [p.name for p in cfg.node_pools]
    assert autoscaler_grace_issues("ack autoscaling config", CLUSTER_AUTOSCALER_MAX_GRACEFUL_TERMINATION_DEFAULT,
                                   pool_grace_periods(cfg.workloads, pools, kubernetes_version(cfg))) == []


def test_005_gets_vllms_drain_flag_and_a_grace_period_over_both():
    dep = deployments(example_raw("005-vllm-queue"))[0]
    spec = dep["spec"]["template"]["spec"]
    c = spec["containers"][0]
    assert c["image"] == "vllm/vllm-openai:v0.33.0"
    longest = math.ceil(8192 * cat.DECODE_SECONDS_PER_TOKEN)  # --max-model-len=8192 at 47 ms a token: 386 s
    assert c["args"][-1] == f"--shutdown-timeout={longest}"
    assert c["lifecycle"] == {"preStop": {"sleep": {"seconds": 15}}}
    assert spec["terminationGracePeriodSeconds"] == 15 + longest + cat.EXIT_MARGIN_SECONDS
    # the hook adds no privilege: the container keeps restricted Pod Security
    assert c["securityContext"]["capabilities"] == {"drop": ["ALL"]} and c["securityContext"]["runAsNonRoot"]


def test_sglang_gets_no_flag_and_a_margin_for_its_watchdog():
    dep = deployments(example_raw("006-sglang-queue"))[0]
    spec = dep["spec"]["template"]["spec"]
    assert not any("timeout" in a for a in spec["containers"][0]["args"])
    assert spec["terminationGracePeriodSeconds"] == 15 + 300 + cat.EXIT_MARGIN_SECONDS + 10


def test_a_cluster_before_1_30_waits_with_an_exec_of_sleep():
    raw = example_raw("005-vllm-queue")
    raw["cluster"]["kubernetesVersion"] = "1.29"
    raw["settings"]["allowEndOfLifeCharts"] = ["cert-manager"]
    c = deployments(raw)[0]["spec"]["template"]["spec"]["containers"][0]
    assert c["lifecycle"] == {"preStop": {"exec": {"command": ["sleep", "15"]}}}


def test_the_longest_request_is_derived_from_the_token_limit_when_not_stated():
    raw = example_raw("005-vllm-queue")
    chain = drain_chain(load(raw).workloads[0], (1, 35))
    assert chain.longest_request_s == math.ceil(8192 * cat.DECODE_SECONDS_PER_TOKEN)
    assert "--max-model-len 8192" in chain.longest_basis
    assert chain.added_args == (f"--shutdown-timeout={chain.longest_request_s}",)


def test_drain_disabled_leaves_kubernetes_defaults_and_loses_requests():
    raw = example_raw("005-vllm-queue")
    raw["workloads"][0]["drain"] = {"enabled": False}
    spec = deployments(raw)[0]["spec"]["template"]["spec"]
    assert spec["terminationGracePeriodSeconds"] == 30 and "lifecycle" not in spec["containers"][0]
    assert not any(a.startswith("--shutdown-timeout") for a in spec["containers"][0]["args"])
    assert not drain_chain(load(raw).workloads[0]).lossless


# ---------------------------------------------------------------------------------------------- validation
def test_a_stated_drain_on_a_vllm_that_cannot_drain_is_refused_naming_the_first_release_that_can():
    raw = example_raw("005-vllm-queue")
    raw["workloads"][0]["image"] = "vllm/vllm-openai:v0.9.2"
    raw["workloads"][0]["drain"] = {"maxRequestSeconds": 120}
    assert_rejected(raw, "workloads[0].image", "vllm 0.9.2", "aborts every request in flight",
                    "drains from 0.18.0", "--shutdown-timeout", "PR #34730")


def test_an_unstated_drain_on_an_old_vllm_is_a_plan_warning_not_an_error():
    from gpuplatform.components.drain import drain_warnings

    raw = example_raw("005-vllm-queue")
    raw["workloads"][0]["image"] = "vllm/vllm-openai:v0.9.2"
    cfg = load(raw)
    assert any("loses requests at scale-in" in w and "drains from 0.18.0" in w for w in drain_warnings(cfg))


def test_every_drain_mistake_is_reported_at_once():
    from gpuplatform.components.errors import ConfigError

    raw = example_raw("005-vllm-queue")
    raw["workloads"][0]["drain"] = {"maxRequestSeconds": 300, "terminationGracePeriodSeconds": 60}
    raw["workloads"][0]["args"].append("--shutdown-timeout=200")
    with pytest.raises(ConfigError) as info:
        load(raw)
    text = info.value.render()
    assert "'--shutdown-timeout' (200) must be >= 'drain.maxRequestSeconds' (300)" in text
    assert "'drain.terminationGracePeriodSeconds' (60) must be >= the preStop wait (15) + the server's drain " \
           "(200 s) = 215" in text
    assert "Traceback" not in text


def test_a_tgi_drain_past_its_launchers_fixed_wait_is_refused():
    raw = example_raw("006-sglang-queue")
    w = raw["workloads"][0]
    w.update(image="ghcr.io/huggingface/text-generation-inference:3.3.7", server="tgi", command=[],
             args=["--model-id=/models/Qwen2.5-14B-Instruct", "--port=30000"], drain={"maxRequestSeconds": 200})
    w["autoscaling"]["metrics"] = [{"metric": "tgi_queue_size", "target": 2}]
    assert_rejected(raw, "workloads[0].drain.maxRequestSeconds", "200 s: tgi drains at most 90 s",
                    "allowed: <= 90")


def test_a_shell_script_without_the_flag_is_refused_when_a_drain_is_stated():
    raw = example_raw("005-vllm-queue")
    w = raw["workloads"][0]
    w["command"] = ["/bin/sh", "-c"]
    w["args"] = ["exec vllm serve /models/Qwen2.5-7B-Instruct --port 8000"]
    from gpuplatform.components.drain import drain_warnings
    assert any("cannot be added" in n for n in drain_warnings(load(copy.deepcopy(raw))))  # not stated: a warning
    w["drain"] = {"maxRequestSeconds": 120}
    assert_rejected(raw, "workloads[0].command", "--shutdown-timeout cannot be added",
                    "write --shutdown-timeout=120 into the script")


def test_the_autoscaler_setting_must_cover_the_largest_grace_period():
    issues = autoscaler_grace_issues("nodePools[0].autoscaler", 100, [("workloads[0].drain", 140),
                                                                      ("workloads[1].drain", 50)])
    assert [i.message for i in issues] == [
        "'maxGracefulTerminationSec' (100) must be >= the grace period of workloads[0].drain (140 s): a node "
        "scale-down would kill its pods while they still drain"]


def test_a_pool_without_room_for_a_surge_replica_says_what_the_rollout_does():
    w = load(example_raw("005-vllm-queue")).workloads[0]
    # the surge replica needs a GPU beyond maxReplicas (4) and the warm-capacity placeholders (3)
    assert rollout_strategy(w, 8).surge
    tight = rollout_strategy(w, 7)
    assert not tight.surge and tight.strategy["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}
    assert "waits, every old replica serving, until a scale-in frees a GPU" in tight.why


# ---------------------------------------------------------------------------------------------- plain manifests
def test_a_deployment_that_breaks_the_inequality_fails_check(tmp_path):
    dep = deployments(example_raw("005-vllm-queue"))[0]
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(dep))
    code, out, _ = cli("check", "--manifests", str(good), "--format", "json")
    assert "serving-pod-drain-grace" not in {v["policy_id"] for v in json.loads(out)}
    dep["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 60
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(dep))
    code, out, _ = cli("check", "--manifests", str(bad), "--format", "json")
    found = [v for v in json.loads(out) if v["policy_id"] == "serving-pod-drain-grace"]
    assert code == 1 and found and found[0]["level"] == "mandatory"
    assert "preStop wait (15 s) + vllm's drain (--shutdown-timeout=386) = 401 s" in found[0]["message"]
    assert "PR #43208" in found[0]["message"]


# ---------------------------------------------------------------------------------------------- the simulator
def _scale_in_trace(tmp_path: Path, cfg) -> str:
    """Three replicas' load for 30 minutes, then half a replica's for an hour: the HPA removes two replicas."""
    from gpuplatform.simulate.engine import find_workload, service_plan

    per = service_plan(cfg, find_workload(cfg, "chat")).rps_at_target
    path = tmp_path / "scale-in.csv"
    path.write_text("seconds,requests_per_second\n" + "".join(
        f"{t},{(3.0 if t < 1800 else 0.5) * per:.4f}\n" for t in range(0, 5401, 60)))
    return str(path)


def test_simulate_charges_scale_in_unless_drained(tmp_path):
    from gpuplatform.simulate.engine import simulate
    from gpuplatform.simulate.report import without_drain
    from gpuplatform.simulate.traces import from_csv

    cfg = load(example_raw("005-vllm-queue"))
    trace = _scale_in_trace(tmp_path, cfg)
    after = simulate(cfg, "005", "chat", from_csv(trace, None))
    before = simulate(without_drain(cfg, "chat"), "005", "chat", from_csv(trace, None))
    assert before.tally.scale_in_removed == after.tally.scale_in_removed >= 2
    assert before.tally.scale_in_dropped > 1 and after.tally.scale_in_dropped == 0
    assert before.tally.failed_requests >= before.tally.scale_in_dropped
    # the SLO counts the minutes with lost requests: met with the drain, not without it
    assert after.slo.met and not before.slo.met
    # what --tune judges a candidate by: its time over target now includes the seconds a scale-in lost requests
    assert before.over_target_s > after.over_target_s
    # a drained replica holds its GPU while it finishes: churn is not free either way
    assert after.tally.drain_s > 0


def test_simulate_reports_dropped_requests_before_and_after(tmp_path):
    cfg_path = next((EXAMPLES / "005-vllm-queue").glob("Pulumi.*.yaml"))
    trace = _scale_in_trace(tmp_path, load(example_raw("005-vllm-queue")))
    outs = {}
    for flag in ((), ("--no-drain",)):
        code, out, _ = cli("simulate", "--config", str(cfg_path), "--workload", "chat", "--trace", trace,
                           "--format", "json", *flag)
        assert code == 0
        outs[bool(flag)] = json.loads(out)
    assert outs[False]["scale_in"]["dropped"] == 0 and outs[False]["scale_in"]["lossless"]
    assert outs[True]["scale_in"]["dropped"] > 0 and not outs[True]["scale_in"]["lossless"]
    assert outs[False]["slo"]["met"] and not outs[True]["slo"]["met"]


def test_plan_shows_each_workloads_chain_and_its_rollout(tmp_path):
    cfg_path = next((EXAMPLES / "005-vllm-queue").glob("Pulumi.*.yaml"))
    code, out, err = cli("plan", "--config", str(cfg_path), "--no-sweep", "--format", "json")
    assert code == 0
    row = json.loads(out)["drain"][0]
    assert row["workload"] == "chat" and row["lossless"] and row["holds"]
    assert (row["preStopSeconds"], row["serverDrainSeconds"], row["terminationGracePeriodSeconds"]) == (15, 386, 406)
    assert row["drainFlag"] == ["--shutdown-timeout=386"] and row["waitsFor"] == "ingress-nginx (Ingress)"
    # the pool at its most holds exactly maxReplicas: no GPU for a surge replica at that count, and plan says so
    assert not row["surgeRoom"] and "may roll out without a free GPU" in err


def test_the_clusters_node_scale_down_waits_for_the_longest_drain_on_an_autoscaled_pool():
    raw = stack_raw("prod")
    raw["cluster"]["nodeAutoscaling"] = {"maxGracefulTerminationSec": 30}
    assert_rejected(raw, "cluster.nodeAutoscaling.maxGracefulTerminationSec",
                   "'maxGracefulTerminationSec' (30) must be >= the grace period of workloads[0].drain")
