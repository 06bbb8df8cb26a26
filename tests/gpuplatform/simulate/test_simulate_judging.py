"""What ``simulate`` and ``--tune`` report about a run: time to capacity only when added replicas gave it, the
built-in traces sized from what the settings compared do not change, no recommendation when nothing keeps the
budget, each cost named once, placeholders drawn."""
import json

import pytest
from support import REPO, cfg_of, cli

from gpuplatform.simulate.engine import service_plan, simulate
from gpuplatform.simulate.report import never_reasons, resolve_trace, table_text
from gpuplatform.simulate.traces import Trace

# the plain variant: the shipped example's time-to-capacity measures are not what these runs compare
EXAMPLE = REPO / "examples" / "005-vllm-queue" / "plain" / "Pulumi.005-vllm-queue-plain.yaml"


def _trace(rows, duration, name="burst") -> Trace:
    return Trace(name, tuple(t for t, _ in rows), tuple(r for _, r in rows), duration)


def test_a_load_that_falls_back_before_any_added_replica_is_ready_never_reaches_capacity() -> None:
    # dev's bert: one replica at its target serves ~10 req/s and a new one needs minutes (node, image, load); the
    # load goes over what one serves for 40 s and comes back, so no added replica is ever ready for it
    cfg = cfg_of("dev")
    per = service_plan(cfg, cfg.workloads[0]).rps_at_target
    result = simulate(cfg, "dev", "bert-intent-detection",
                      _trace([(0, 0.5 * per), (300, 1.6 * per), (340, 0.5 * per)], 1200))
    assert result.increase_at == 300
    assert result.capacity_ready_s is None and result.tally.capacity_path is None
    why = never_reasons(result)["capacity_ready_s"]
    assert "fell back" in why and "never reached" in why
    assert "ready capacity covers it  never (the load fell back" in table_text(result)


def test_a_step_that_stays_is_covered_by_the_replicas_added_for_it() -> None:
    cfg = cfg_of("dev")
    per = service_plan(cfg, cfg.workloads[0]).rps_at_target
    result = simulate(cfg, "dev", "bert-intent-detection", _trace([(0, 0.5 * per), (300, 1.6 * per)], 1500))
    assert result.capacity_ready_s is not None and result.tally.capacity_path is not None
    assert result.capacity_ready_s == result.tally.capacity_path["total"]


@pytest.mark.parametrize("shape", ["step", "spike", "ramp", "diurnal", "bursty"])
def test_built_in_traces_do_not_move_with_the_replica_settings_compared(shape) -> None:
    # minReplicas 1 vs 3 and maxReplicas 4 vs 3 (examples/005's pool holds 4): the same load for every setting
    from gpuplatform.components.stack_config import load_stack_file

    cfg = load_stack_file(EXAMPLE)
    w = cfg.workloads[0]
    other = cfg.model_copy(update={"workloads": [w.model_copy(update={"autoscaling": w.autoscaling.model_copy(
        update={"min_replicas": 3, "max_replicas": 3})})]})
    a, b = (resolve_trace(c, "chat", shape, "30m") for c in (cfg, other))
    assert (a.times, a.rates) == (b.times, b.rates)
    per = service_plan(cfg, w).rps_at_target
    if shape == "step":  # base: one replica at the target; peak 3 x base within the pool's 4 replicas
        assert a.rates[0] == pytest.approx(0.6 * per) and max(a.rates) == pytest.approx(3 * per)


@pytest.fixture(scope="module")
def overload_trace(tmp_path_factory):
    """Ten minutes at 30 replicas' load: more than examples/005's pool holds even grown by 16 nodes."""
    from gpuplatform.components.stack_config import load_stack_file

    cfg = load_stack_file(EXAMPLE)
    per = service_plan(cfg, cfg.workloads[0]).rps_at_target
    path = tmp_path_factory.mktemp("trace") / "overload.csv"
    path.write_text(f"seconds,requests_per_second\n0,{per:.4f}\n60,{30 * per:.4f}\n600,{30 * per:.4f}\n")
    return str(path)


def test_when_nothing_keeps_the_budget_tune_recommends_nothing(overload_trace) -> None:
    args = ("simulate", "--config", str(EXAMPLE), "--workload", "chat", "--trace", overload_trace, "--tune",
            "--slo", "2")
    code, out, err = cli(*args, "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["feasible"] is False and doc["recommended"] is False and doc["poolGrowth"] is None
    assert doc["snippet"] is None  # the least over the SLO is no setting to adopt
    code, text, err = cli(*args)
    assert code == 0, err
    assert "least over" in text and "No setting keeps within the budget" in text
    assert "Set in the stack file" not in text and "gpu-platform:workloads" not in text


def _hours_named(line: str) -> list[str]:
    """Each figure on a line with the words that name it, up to the next comma or parenthesis."""
    import re

    return re.findall(r"[\d.]+ (?:/ [\d.]+ )?([A-Za-z -]*-hours[A-Za-z ]*)", line)


def test_each_hours_figure_names_what_it_counts() -> None:
    cfg = cfg_of("dev")
    result = simulate(cfg, "dev", "bert-intent-detection", resolve_trace(cfg, "bert-intent-detection", "spike", "15m"))
    cost = next(x for x in table_text(result).splitlines() if "cost used" in x)
    names = _hours_named(cost)
    assert len(names) == 3 and len(set(names)) == 3, names
    assert names[0].endswith("-hours held by replicas") and "GPU-hours of nodes" in names


def test_the_tune_lines_name_node_gpu_hours_apart_from_the_replicas_gpu_hours(overload_trace) -> None:
    code, text, _ = cli("simulate", "--config", str(EXAMPLE), "--workload", "chat", "--trace", overload_trace,
                        "--tune", "--slo", "2")
    for line in (x for x in text.splitlines() if "node-hours" in x):
        gpu = [n for n in _hours_named(line) if "GPU-hours" in n]
        assert len(gpu) == 2 and len(set(gpu)) == 2, line
        assert all("of nodes" in n or "held by" in n for n in gpu), line


def test_placeholders_are_drawn_on_the_pods_panel() -> None:
    import copy

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from gpuplatform.components.stack_config import namespace_from_stack_file
    from gpuplatform.components.validation import load
    from gpuplatform.simulate.report import figure
    from gpuplatform.simulate.traces import built_in

    raw = copy.deepcopy(namespace_from_stack_file(EXAMPLE))
    raw["nodePools"][0]["maxNodes"] = 7
    raw["workloads"][0]["autoscaling"]["warmReplicas"] = 3
    cfg = load(raw)
    per = service_plan(cfg, cfg.workloads[0]).rps_at_target
    result = simulate(cfg, "005", "chat", built_in("step", per, 4 * per, 1200))
    fig = figure(result)
    try:
        pods = fig.axes[2]
        line = next(x for x in pods.get_lines() if x.get_label().startswith("placeholders"))
        drawn = list(line.get_ydata())
        # three bound from the start; preempted by the step's replicas; back once their new nodes are up
        assert drawn[0] == 3 and min(drawn) < 3 and drawn[-1] == 3
        assert drawn == list(result.tally.seconds.warm)
        assert "3 preempted" in line.get_label() and pods.get_ylim()[1] >= 4
    finally:
        plt.close(fig)


def test_with_the_default_budget_feasible_is_the_slo_verdict() -> None:
    # examples/005 with a 90 % SLO on 30 minutes of bursty: the budget is the bad minutes its compliance allows
    # (3), and every candidate the search ran is within it exactly when its SLO verdict is met
    from gpuplatform.components.stack_config import load_stack_file
    from gpuplatform.simulate.tune import Candidate, Search, default_budget_s, slo_level

    cfg = load_stack_file(EXAMPLE)
    w = cfg.workloads[0]
    cfg = cfg.model_copy(update={"workloads": [w.model_copy(update={"slo": w.slo.model_copy(
        update={"compliance": 90.0})})]})
    level = slo_level(cfg, "chat", None)
    trace = resolve_trace(cfg, "chat", "bursty", "30m", level)
    budget = default_budget_s(cfg, "chat", trace)
    assert budget == 180.0
    search = Search(cfg, "005", "chat", trace, budget, level)
    outcomes = [search.run(Candidate(t, lo, 4), full=True) for t in (1.0, 2.0, 3.0) for lo in (1, 3)]
    verdicts = {(o.violation_s <= budget, o.result.slo.met) for o in outcomes}
    assert verdicts <= {(True, True), (False, False)} and len(verdicts) == 2, verdicts
