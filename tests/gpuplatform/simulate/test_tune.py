"""``simulate --tune``: what it searches, that it never suggests what validation refuses, that the snippet it prints
validates and keeps the budget when merged into the stack file, and the pool growth it reports when the pool as it
is cannot. On examples/005 (vLLM, a pool of 4 A10 nodes) with the bursty built-in trace, 30 minutes of it."""
import copy
import functools
import json
import re
from types import SimpleNamespace

import pytest
import yaml

from support import REPO, cli

from gpuplatform.components.stack_config import load_stack_file, namespace_from_stack_file
from gpuplatform.components.validation import load
from gpuplatform.simulate.bursty import bursty
from gpuplatform.simulate.engine import simulate
from gpuplatform.simulate.tune import (Candidate, Search, merge_snippet, pool_ceiling, slo_level, snippet,
                                       with_candidate)

# the plain variant: the example as shipped has warm capacity, the pre-puller and the caches on
EXAMPLE = REPO / "examples" / "005-vllm-queue" / "plain" / "Pulumi.005-vllm-queue-plain.yaml"
ARGS = ("simulate", "--config", str(EXAMPLE), "--workload", "chat", "--trace", "bursty", "--duration", "30m",
        "--tune", "--format", "json", "--slo", "2")
"""Judged at a stated level (the HPA's target, 2 waiting requests), not at the example's SLO, so that the search's
figures do not move with the SLO the example states."""
GROWTH_SLO = "1.5"
"""A level nothing the example's 4 nodes hold keeps for 30 minutes without a bad minute: the search grows the pool."""


@pytest.fixture(scope="module")
def example():
    return load_stack_file(EXAMPLE), namespace_from_stack_file(EXAMPLE)


def _args(slo: str = "2") -> tuple:
    return tuple(slo if a == "2" and ARGS[k - 1] == "--slo" else a for k, a in enumerate(ARGS))


@functools.cache
def _tuned_text(budget: str, slo: str = "2") -> str:
    code, out, err = cli(*_args(slo), "--budget", budget)
    assert code == 0, err
    return out


def _tuned(budget: str, slo: str = "2") -> dict:
    """One tuning run per budget and level in this module (each takes seconds)."""
    return json.loads(_tuned_text(budget, slo))


def _adopted(raw: dict, text: str):
    """The stack with the printed snippet merged in, through the real validation."""
    return load(merge_snippet(copy.deepcopy(raw), text))


def _replay(cfg, level: float = 2.0):
    """The tuned stack on the trace the search ran (the built-in shape scaled by the stack as it was), judged at
    the level the search judged (the workload's SLO)."""
    from gpuplatform.simulate.report import resolve_trace

    trace = resolve_trace(load_stack_file(EXAMPLE), "chat", "bursty", "30m", level)
    return simulate(cfg, "005", "chat", trace, slo_target=level)


def test_the_bursty_trace_bursts_above_its_base_and_is_the_same_for_the_same_seed():
    a, b = bursty(2.0, 3600), bursty(2.0, 3600)
    assert a.rates == b.rates and a.rates != bursty(2.0, 3600, seed=7).rates
    assert all(r == int(r) for r in a.rates)  # whole requests in each second
    minutes = [sum(a.rates[m * 60:(m + 1) * 60]) / 60 for m in range(60)]
    assert max(minutes) > 1.8 * 2.0 * 0.8 and min(minutes) < 1.3 * 2.0  # bursts on a base that drifts by 20 %
    with pytest.raises(ValueError, match="must be > 0"):
        bursty(0.0)


def test_within_the_pool_it_finds_a_setting_the_stack_accepts_and_that_keeps_the_budget(example):
    cfg, raw = example
    doc = _tuned("2m")
    assert doc["own"]["bad_minutes"] > 2  # the stack's own settings do not keep it: the search had work to do
    assert doc["feasible"] and doc["best"]["bad_minutes"] <= 2 and doc["poolGrowth"] is None
    adopted = _adopted(raw, doc["snippet"])
    a = adopted.workloads[0].autoscaling
    assert a.max_replicas <= pool_ceiling(cfg, "chat")
    replay = _replay(adopted, doc["slo"])
    assert replay.tally.bad_minutes == doc["best"]["bad_minutes"] <= 2
    assert replay.over_target_s == doc["best"]["over_target_s"]
    assert replay.summary()["ready_replica_hours"] == doc["best"]["ready_replica_hours"]


def test_when_the_pool_cannot_it_says_how_many_nodes_more_and_the_grown_stack_validates(example):
    cfg, raw = example
    doc = _tuned("0s", GROWTH_SLO)
    assert not doc["feasible"] and doc["recommended"] and doc["best"]["bad_minutes"] > 0
    growth = doc["poolGrowth"]
    assert growth["pool"] == "a10" and growth["from"] == 4 and growth["to"] == 4 + growth["extraNodes"] > 4
    assert growth["pricePerNodeHour"] is None  # 005's pool names no instance type: no list price to read
    adopted = _adopted(raw, doc["snippet"])
    assert adopted.node_pools[0].max_nodes == growth["to"]
    assert _replay(adopted, float(GROWTH_SLO)).tally.bad_minutes == 0
    # one node fewer is not enough for an autoscaled setting: all replicas the pool then holds but one kept warm
    fewer = growth["extraNodes"] - 1
    ceiling = pool_ceiling(cfg, "chat", fewer)
    warm = with_candidate(cfg, "chat", Candidate(2, ceiling - 1, ceiling, extra_nodes=fewer))
    assert _replay(warm, float(GROWTH_SLO)).tally.bad_minutes > 0
    if growth["fixedCountWith"] is not None:  # ... though every replica warm, a fixed count, would be
        assert growth["fixedCountWith"] < growth["extraNodes"]
        fixed = with_candidate(cfg, "chat", Candidate(2, ceiling, ceiling, extra_nodes=growth["fixedCountWith"]))
        assert _replay(fixed, float(GROWTH_SLO)).tally.bad_minutes == 0


def test_the_table_names_the_pool_change_and_prints_the_snippet():
    table = [a for a in _args(GROWTH_SLO) if a not in ("--format", "json")]
    code, out, _ = cli(*table, "--budget", "0s")
    assert code == 0
    assert re.search(r"more nodes? \(pool 'a10' maxNodes 4 -> ", out) and "no list price" in out
    assert yaml.safe_load(out[out.index("gpu-platform:nodePools"):])["gpu-platform:nodePools"][0]["name"] == "a10"


def test_a_candidate_validation_refuses_is_never_simulated(example):
    cfg, _ = example
    from gpuplatform.simulate.report import resolve_trace

    search = Search(cfg, "005", "chat", resolve_trace(cfg, "chat", "bursty", "5m"), 0, 2)
    assert search.run(Candidate(2, 1, pool_ceiling(cfg, "chat") + 1)) is None  # more than the pool holds
    assert search.run(Candidate(2, 3, 3)) is None  # an HPA whose minReplicas equals maxReplicas never scales
    assert search.refused == 2 and search.best is None
    (_, issues), _ = search.refusals
    assert any(i.path == "workloads[0].autoscaling.maxReplicas" for i in issues)
    assert search.run(Candidate(2, 2, 4)) is not None and search.best is not None


def test_every_searched_dimension_reaches_the_snippet_and_it_validates(example):
    cfg, raw = example
    c = Candidate(1.6, 2, 3, scale_up="one pod a minute", scale_down_window_s=900, scale_down_rate="half a minute",
                  extra_nodes=1)
    tuned = _adopted(raw, snippet(cfg, "chat", c))
    a = tuned.workloads[0].autoscaling
    assert (a.metrics[0].target, a.min_replicas, a.max_replicas) == (1.6, 2, 3)
    assert a.behavior.scale_up.policies[0].type == "Pods" and a.behavior.scale_up.policies[0].period_seconds == 60
    assert a.behavior.scale_down.stabilization_window_seconds == 900
    assert a.behavior.scale_down.policies[0].type == "Percent"
    assert tuned.node_pools[0].max_nodes == 5


def test_the_level_judged_is_slo_then_the_workloads_own_slo_then_its_target():
    metric = SimpleNamespace(metric="vllm_requests_waiting", target=2)
    w = SimpleNamespace(name="chat", fixed=False, autoscaling=SimpleNamespace(metrics=[metric]))
    cfg = SimpleNamespace(workloads=[w])
    assert slo_level(cfg, "chat", None) == 2  # a config from before workloads[].slo
    w.slo = SimpleNamespace(objectives=[SimpleNamespace(metric="vllm_requests_waiting", below=3)])
    assert slo_level(cfg, "chat", None) == 3
    assert slo_level(cfg, "chat", 5) == 5
    w.slo = SimpleNamespace(objectives=[SimpleNamespace(metric="vllm_ttft_p90_ms", below=500)])
    assert slo_level(cfg, "chat", None) == 2  # an objective on another metric is not what the run judges


def test_a_keda_workloads_activation_threshold_reaches_the_snippet_and_it_validates():
    from support import cfg_of, stack_raw

    from gpuplatform.simulate.tune import dimensions
    from gpuplatform.simulate.traces import Trace

    cfg = cfg_of("local")
    w = next(x for x in cfg.workloads if x.name == "batch-embedder")
    dims = dimensions(cfg, w.name, Trace("flat", (0.0,), (1.0,), 60), w.autoscaling.metrics[0].target)
    assert {"min_replicas": 0} in dims["minReplicas"]  # KEDA with an activation trigger may scale to zero
    threshold = dims["activation"][-1]["activation_threshold"]
    assert threshold > 0
    c = Candidate(w.autoscaling.metrics[0].target, 0, w.autoscaling.max_replicas, activation_threshold=threshold)
    tuned = _adopted(stack_raw("local"), snippet(cfg, w.name, c))
    a = next(x for x in tuned.workloads if x.name == w.name).autoscaling
    assert a.activation.activation_threshold == threshold
    assert a.activation.source == w.autoscaling.activation.source  # the rest of the trigger kept


def test_no_window_or_cooldown_below_the_scale_in_floor_is_tried_and_the_floor_is():
    """Scale-down windows and KEDA cooldowns are searched from the startup budget up (validation refuses shorter
    ones), the budget itself among them; a cooldown found reaches the snippet, which validates."""
    from support import cfg_of, stack_raw

    from gpuplatform.components.model_startup import scale_in_floor_seconds
    from gpuplatform.simulate.traces import Trace
    from gpuplatform.simulate.tune import dimensions

    cfg = cfg_of("local")
    w = next(x for x in cfg.workloads if x.name == "batch-embedder")
    floor = scale_in_floor_seconds(w)
    dims = dimensions(cfg, w.name, Trace("flat", (0.0,), (1.0,), 60), w.autoscaling.metrics[0].target)
    windows = [d["scale_down_window_s"] for d in dims["scaleDownWindow"]]
    cooldowns = [d["cooldown_s"] for d in dims["cooldown"]]
    assert floor == 600 and min(windows) == floor and min(cooldowns) == floor
    assert 1800 in windows and 900 in cooldowns
    c = Candidate(w.autoscaling.metrics[0].target, 0, w.autoscaling.max_replicas, scale_down_window_s=floor,
                  scale_down_rate="all at once", cooldown_s=900)
    tuned = _adopted(stack_raw("local"), snippet(cfg, w.name, c))
    a = next(x for x in tuned.workloads if x.name == w.name).autoscaling
    assert a.cooldown_period_seconds == 900 and a.behavior.scale_down.stabilization_window_seconds == floor
    prod = cfg_of("prod")  # a 900 s startup budget: 0..600 s windows are never tried
    windows = [d["scale_down_window_s"] for d in dimensions(prod, "flower", Trace("flat", (0.0,), (1.0,), 60),
                                                            3500)["scaleDownWindow"]]
    assert windows == [900, 1800]


def test_a_search_never_suggests_a_window_below_the_floor(example):
    """A candidate that sets only a scale-down rate keeps the workload's default window raised to its floor, so
    validation never has to refuse it."""
    from gpuplatform.components.model_startup import scale_in_floor_seconds
    from gpuplatform.simulate.report import resolve_trace
    from gpuplatform.simulate.tune import apply

    raw = copy.deepcopy(example[1])
    # read without the streamer, the example's budget (420 s) is above the default window
    raw["workloads"][0]["args"].remove("--load-format=runai_streamer")
    cfg = load(raw)

    search = Search(cfg, "005", "chat", resolve_trace(cfg, "chat", "bursty", "5m"), 0, 2)
    floor = scale_in_floor_seconds(cfg.workloads[0])
    assert floor > 300 and search.default_window_s == floor
    c = apply(Candidate(2, 1, 3), {"scale_down_rate": "all at once"}, search.default_window_s)
    assert c.scale_down_window_s == floor and search.run(c) is not None


def test_tune_and_simulate_judge_alike_the_difference_is_the_trace_scaling(example):
    """Judged at the example's own SLO (4 waiting requests), the stack's own outcome in ``--tune`` is what a plain
    run gives on the same trace at the same level: the judging function is one. A plain ``simulate`` scales a
    built-in shape at the load a replica serves at the *target* (2), ``--tune`` at the *SLO level* (so that the trace
    does not move with the target it adopts): that, not the judge, is why their figures differ."""
    cfg, _ = example
    from gpuplatform.simulate.report import resolve_trace, trace_scaling
    from gpuplatform.simulate.tune import own_candidate

    level = slo_level(cfg, "chat", None)
    assert level == 4
    at_slo = resolve_trace(cfg, "chat", "bursty", "10m", level)
    search = Search(cfg, "005", "chat", at_slo, 0, level)
    own = search.run(own_candidate(cfg, "chat"), full=True)
    replay = simulate(cfg, "005", "chat", at_slo, slo_target=level)
    assert own.violation_s == replay.tally.bad_minutes * 60 and own.cost == (replay.tally.node_s,
                                                                             replay.tally.replica_s)
    assert own.result.slo.to_json() == replay.slo.to_json()  # feasible and the SLO verdict: one judgement
    plain = simulate(cfg, "005", "chat", resolve_trace(cfg, "chat", "bursty", "10m"), slo_target=level)
    assert plain.over_target_s != replay.over_target_s
    scaling = trace_scaling(cfg, "chat", at_slo, level)
    assert scaling["perReplicaRps"] > scaling["atTargetRps"]


def test_a_pool_that_holds_a_setting_within_the_budget_is_never_told_to_grow(example, tmp_path):
    """The pool grown to what the search said it needs: the same search now finds that setting within the pool as
    it is, from the most generous setting down, instead of stalling where minReplicas cannot pass maxReplicas."""
    _, raw = example
    grown = _tuned("0s", GROWTH_SLO)["poolGrowth"]["to"]
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["config"]["gpu-platform:nodePools"][0]["maxNodes"] = grown
    stack = tmp_path / "Pulumi.005-grown.yaml"
    stack.write_text(yaml.safe_dump(doc))
    code, out, err = cli(*[str(stack) if a == str(EXAMPLE) else a for a in _args(GROWTH_SLO)], "--budget", "0s")
    assert code == 0, err
    tuned = json.loads(out)
    assert tuned["feasible"] and tuned["poolGrowth"] is None and tuned["best"]["bad_minutes"] == 0
    adopted = load(merge_snippet(namespace_from_stack_file(stack), tuned["snippet"]))
    assert adopted.node_pools[0].max_nodes == grown and _replay(adopted, tuned["slo"]).tally.bad_minutes == 0


def test_a_candidate_is_charged_what_the_pool_bills_not_only_its_ready_replicas(example):
    """On one-GPU nodes a reactive setting also pays for nodes provisioning, replicas loading and nodes waiting for
    scale-down: ranked by ready replicas alone it would look cheaper than it is."""
    from gpuplatform.simulate.report import resolve_trace

    cfg, _ = example
    level = slo_level(cfg, "chat", None)
    search = Search(cfg, "005", "chat", resolve_trace(cfg, "chat", "bursty", "30m", level), 0, level)
    reactive = search.run(Candidate(2.0, 1, 4), full=True)
    tally = reactive.result.tally
    assert reactive.cost == (tally.node_s, tally.replica_s)
    assert tally.node_s > tally.replica_s > tally.ready_replica_s * 1.05
