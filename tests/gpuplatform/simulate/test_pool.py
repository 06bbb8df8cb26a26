"""Two workloads in one pool (examples/005's vLLM twice, prePull, a 60 s load): shared nodes, placeholders either
workload preempts, and ``--tune`` over minReplicas and placeholders on bursts that do not coincide."""
import copy
import json

import pytest
import yaml
from support import REPO, cli

from gpuplatform.components.stack_config import namespace_from_stack_file
from gpuplatform.components.validation import load
from gpuplatform.simulate.engine import service_plan
from gpuplatform.simulate.pool import simulate_pool, tune_pool, with_setting
from gpuplatform.simulate.traces import Trace

# the plain variant: the shipped example's time-to-capacity measures are not what these runs compare
EXAMPLE = REPO / "examples" / "005-vllm-queue" / "plain" / "Pulumi.005-vllm-queue-plain.yaml"
HOUR_S = 3600


def two_workloads() -> dict:
    """examples/005 with a second workload like the first in its pool (10 nodes: room for both maxReplicas and two
    placeholders); each pre-pulls its image and loads in 60 s, so a replica on a warm node serves about 80 s after
    its scale-up; a 95 % SLO on 4 waiting requests."""
    raw = copy.deepcopy(namespace_from_stack_file(EXAMPLE))
    raw["nodePools"][0]["maxNodes"] = 10
    a = raw["workloads"][0]
    a["prePull"] = True
    a["serviceModel"].update({"modelLoadSeconds": 60, "imagePullSeconds": 60})
    a["slo"] = {"objectives": [{"metric": "vllm_requests_waiting", "below": 4}], "compliance": 95}
    # the pool's placeholders are what each setting states (with_setting), never the stack file's own
    a["autoscaling"]["warmReplicas"] = 0
    b = copy.deepcopy(a)
    b["name"] = "chat-b"
    b.pop("exposure", None)
    raw["workloads"].append(b)
    return raw


def bursts(per: float, starts_min: list[int], duration_s: int = HOUR_S, name: str = "bursts") -> Trace:
    """0.8 replica's load at the target, 1.9 replicas' for 15 minutes from each start."""
    times, rates = [0], [0.8 * per]
    for m in starts_min:
        times += [m * 60, m * 60 + 900]
        rates += [1.9 * per, 0.8 * per]
    return Trace(name, tuple(times), tuple(rates), duration_s)


@pytest.fixture(scope="module")
def scenario():
    cfg = load(two_workloads())
    per = service_plan(cfg, cfg.workloads[0]).rps_at_target
    return cfg, {"chat": bursts(per, [10], name="a"), "chat-b": bursts(per, [35], name="b")}


def test_either_workload_preempts_the_pools_placeholder(scenario):
    cfg, traces = scenario
    # chat-b's burst 30 minutes after chat's: chat's burst overshoots to 4 replicas, and the nodes its scale-in
    # empties are gone by then (the autoscaler's unneeded time), so chat-b's replica finds only the placeholder
    per = service_plan(cfg, cfg.workloads[0]).rps_at_target
    traces = {"chat": traces["chat"], "chat-b": bursts(per, [40], name="b")}
    result = simulate_pool(with_setting(cfg, {"chat": 1, "chat-b": 1}, 1), "x", traces)
    assert result.placeholders == 1 and result.preempted == 2  # chat's burst, then chat-b's
    # each burst's replica took the placeholder's node: no node was provisioned on its path to ready
    for r in result.workloads:
        path = r.tally.capacity_path
        assert path is not None and path["new_node"] is False and path["node_provisioning"] == 0, r.workload
    # the pool's cost is counted once: every node, whoever runs on it
    alone = simulate_pool(with_setting(cfg, {"chat": 1, "chat-b": 1}, 0), "x", traces)
    assert result.node_s > alone.node_s and result.placeholder_s > 0 == alone.placeholder_s


def test_shared_headroom_placeholders_and_a_node_a_scale_in_emptied(scenario):
    cfg, traces = scenario
    without = simulate_pool(with_setting(cfg, {"chat": 1, "chat-b": 1}, 0), "x", traces)
    shared = simulate_pool(with_setting(cfg, {"chat": 1, "chat-b": 1}, 1), "x", traces)
    chat, chat_b = without.workloads
    # without a placeholder chat's replica waits for a node; chat-b's, 25 minutes later, takes the node chat's
    # scale-in emptied (still there for the autoscaler's unneeded time, its image pulled): shared headroom too
    assert chat.tally.capacity_path["new_node"] and not chat_b.tally.capacity_path["new_node"]
    assert shared.bad_minutes["chat"] < without.bad_minutes["chat"]
    assert shared.bad_minutes["chat-b"] <= without.bad_minutes["chat-b"]


@pytest.fixture(scope="module")
def tuned(scenario):
    cfg, traces = scenario
    return tune_pool(cfg, "x", traces, max_min_replicas=2, max_placeholders=2)


def test_tune_compares_placeholders_with_min_replicas_at_the_same_slos(tuned):
    assert len(tuned.tried) == 2 * 2 * 3 and tuned.refused == 0
    floor, held = tuned.best_floor, tuned.best_placeholders
    assert floor is not None and floor[1].within_budget and floor[0]["placeholders"] == 0
    assert held is not None and held[1].within_budget and held[0]["placeholders"] >= 1
    # every setting is judged by each workload's own SLO verdict
    for setting, result in tuned.tried:
        assert result.within_budget == all(r.slo.met for r in result.workloads)
    # the answer on these bursts: a placeholder holds a node as a replica at minReplicas does, and a preempted
    # one is re-created and gets a node of its own; the floor of 2 replicas each is the cheapest within both SLOs
    assert tuned.placeholders_win is False
    assert floor[0]["minReplicas"] == {"chat": 2, "chat-b": 2}
    assert held[1].node_s > floor[1].node_s


def test_the_pool_tuning_from_the_command_line(tmp_path, monkeypatch, scenario, tuned):
    _, traces = scenario
    stack = tmp_path / "Pulumi.pool.yaml"
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["config"] = {f"gpu-platform:{k}": v for k, v in two_workloads().items()}
    stack.write_text(yaml.safe_dump(doc))
    paths = []
    for name, tr in traces.items():
        path = tmp_path / f"{name}.csv"
        path.write_text("seconds,requests_per_second\n" + "".join(f"{t},{r}\n" for t, r in zip(tr.times, tr.rates))
                        + f"{tr.duration_s},{tr.rates[-1]}\n")
        paths.append(str(path))
    args = ("simulate", "--config", str(stack), "--workload", "chat,chat-b", "--trace", ",".join(paths))
    code, out, err = cli(*args, "--tune", "--format", "json")
    assert code == 0, err
    got = json.loads(out)
    assert got["placeholdersWin"] is False and got["tried"] == len(tuned.tried)
    assert got["withoutPlaceholders"]["setting"] == tuned.best_floor[0]
    # the text of the same search (the fixture's: a second search would take as long again)
    monkeypatch.setattr("gpuplatform.simulate.pool.tune_pool", lambda *a, **k: tuned)
    code, text, err = cli(*args, "--tune")
    assert code == 0, err
    assert "Placeholders do not beat minReplicas here" in text and "node-hours" in text
    code, out, err = cli(*args, "--trace", paths[0])
    assert code == 0 and "Pool of chat, chat-b" in out
    code, _, err = cli(*args[:-2], "--trace", ",".join(paths * 2))
    assert code != 0 and "--trace" in err and "4 traces for 2 workloads" in err
