"""workloads[].slo: the model, its validation (the autoscaling metric rule, reused), its judging on a simulated
run, and the lower bound that does not depend on the settings being judged."""
from __future__ import annotations

import json

import pytest
from support import REPO, cfg_of, cli, stack_raw

from gpuplatform.components.errors import ConfigError
from gpuplatform.components.validation import load
from gpuplatform.simulate.bounds import lower_bound, lowest_replicas
from gpuplatform.simulate.engine import setup
from gpuplatform.simulate.slo import judge
from gpuplatform.simulate.traces import built_in


def _issues(raw) -> dict[str, str]:
    with pytest.raises(ConfigError) as exc:
        load(raw)
    return {i.path: i.message for i in exc.value.issues}


def _with_slo(raw, **slo) -> dict:
    raw["workloads"][0]["slo"] = slo
    return raw


# ---------------------------------------------------------------------------------------------- the model
def test_defaults_and_error_budget() -> None:
    cfg = load(_with_slo(stack_raw("prod"), objectives=[{"metric": "triton_queue_time_us", "below": 5000}]))
    slo = cfg.workloads[0].slo
    assert (slo.compliance, slo.window) == (99.0, "28d")
    assert slo.error_budget == pytest.approx(0.01)


def test_a_window_that_is_no_duration_names_its_path() -> None:
    issues = _issues(_with_slo(stack_raw("prod"), objectives=[{"metric": "triton_queue_time_us", "below": 5000}],
                               window="28 days"))
    (path, message), = [(p, m) for p, m in issues.items() if "window" in p]
    assert path.endswith("workloads[0].slo.window") and "'28 days' is not a duration" in message


def test_an_slo_needs_an_objective() -> None:
    issues = _issues(_with_slo(stack_raw("prod"), objectives=[]))
    assert any(p.endswith("workloads[0].slo.objectives") for p in issues)


# ---------------------------------------------------------------------------------------------- validation
def test_an_unknown_metric_is_refused_as_an_autoscaling_metric_is() -> None:
    raw = _with_slo(stack_raw("prod"), objectives=[{"metric": "triton_queue_time_ms", "below": 5}])
    issues = _issues(raw)
    message = issues["workloads[0].slo.objectives[0].metric"]
    assert "'triton_queue_time_ms' is not a catalog metric" in message and "triton_queue_time_us" in message
    raw = stack_raw("prod")
    raw["workloads"][0]["autoscaling"]["metrics"][0]["metric"] = "triton_queue_time_ms"
    assert _issues(raw)["workloads[0].autoscaling.metrics[0].metric"] == message  # one rule, one message


def test_a_metric_another_server_exports_is_refused() -> None:
    issues = _issues(_with_slo(stack_raw("prod"), objectives=[{"metric": "vllm_ttft_p90_ms", "below": 500}]))
    assert "is not available from 'triton'; it comes from vllm" in issues["workloads[0].slo.objectives[0].metric"]


def test_a_metric_the_image_version_does_not_export_is_refused() -> None:
    from test_metrics_vllm import vllm_workload

    raw = stack_raw("prod")
    vllm_workload("vllm/vllm-openai:v0.2.7", "gpu_engine_active", 0.5)(raw)
    _with_slo(raw, objectives=[{"metric": "vllm_ttft_p90_ms", "below": 500}])
    message = _issues(raw)["workloads[0].slo.objectives[0].metric"]
    assert "from version 0.3.1" in message and "pins 0.2.7" in message


def test_a_threshold_an_idle_replica_already_exceeds_is_unreachable() -> None:
    from test_metrics_vllm import vllm_workload

    raw = stack_raw("prod")
    vllm_workload()(raw)
    raw["workloads"][0]["serviceModel"].update({"firstTokenMs": 150, "serviceTimeMs": 400})
    _with_slo(raw, objectives=[{"metric": "vllm_ttft_p90_ms", "below": 100}])
    message = _issues(raw)["workloads[0].slo.objectives[0].below"]
    assert "100 ms can never be met" in message and "serviceModel.firstTokenMs 150 ms" in message
    raw["workloads"][0]["slo"]["objectives"][0]["below"] = 500
    load(raw)  # above the idle reading: accepted


@pytest.mark.parametrize("slo, path, words", [
    ({"objectives": [{"metric": "triton_queue_time_us", "below": 0}]}, "objectives[0].below",
     "0 is not a positive threshold"),
    ({"objectives": [{"metric": "triton_queue_time_us", "below": 5000}], "compliance": 100}, "compliance",
     "strictly between 0 and 100"),
    ({"objectives": [{"metric": "triton_queue_time_us", "below": 5000}] * 2}, "objectives[1].metric",
     "listed twice"),
    ({"objectives": [{"metric": "gpu_engine_active", "below": 1}]}, "objectives[0].below",
     "1 can never be exceeded"),
])
def test_bad_values_name_their_path(slo, path, words) -> None:
    issues = _issues(_with_slo(stack_raw("prod"), **slo))
    assert words in issues[f"workloads[0].slo.{path}"]


# ---------------------------------------------------------------------------------------------- judging
def test_a_minute_is_bad_when_its_sli_reads_bad_or_a_request_failed() -> None:
    # per minute: the SLI's reading (True bad, False good, None no pod reported) and whether a request failed
    readings = [False, True, None, False, None]
    failed = [False, False, False, True, False]
    verdict = judge([("m", 20.0)], 99.0, [readings], failed)
    assert verdict.minutes == 5 and verdict.bad_minutes == 2 and verdict.bad_by_objective == (1,)
    assert (verdict.failed_minutes, verdict.unread_minutes) == (1, 2)
    assert verdict.fraction == pytest.approx(0.4) and not verdict.met
    assert judge([("m", 15.0)], 50.0, [[True, False]], [False, False]).met  # 1 bad minute of 2 meets 50 %
    assert not judge([("m", 15.0)], 50.1, [[True, False]], [False, False]).met


def test_a_minute_is_bad_when_any_objective_misses() -> None:
    verdict = judge([("a", 1.0), ("b", 1.0)], 99.0, [[True, False, False], [False, True, None]], [False] * 3)
    assert verdict.bad_minutes == 2 and verdict.bad_by_objective == (1, 1) and verdict.unread_minutes == 0


def test_simulate_reports_the_slo_in_json_and_the_override_judges_it() -> None:
    args = ("simulate", "--stack", "prod", "--workload", "flower", "--trace", "diurnal", "--duration", "1h",
            "--format", "json")
    code, out, err = cli(*args)
    assert code == 0, err
    slo = json.loads(out)["slo"]
    assert slo["objectives"] == [{"metric": "triton_queue_time_us", "below": 5000.0, "badMinutes": 0}]
    assert (slo["compliance"], slo["minutes"], slo["badMinutes"], slo["met"]) == (99.0, 60, 0, True)
    code, out, err = cli(*args, "--slo", "800")  # below what the HPA holds the queue at: nearly every minute is bad
    slo = json.loads(out)["slo"]
    assert slo["objectives"][0]["below"] == 800 and slo["badMinutes"] > 50 and not slo["met"]
    code, out, err = cli(*args[:-2])
    assert "SLO " in out and "0 of 60 minutes out" in out and "met" in out


# ---------------------------------------------------------------------------------------------- the bound
def test_the_bound_does_not_move_with_min_replicas() -> None:
    bounds = []
    for min_replicas in (1, 4):
        raw = stack_raw("prod")
        raw["workloads"][0]["autoscaling"]["minReplicas"] = min_replicas
        s = setup(load(raw), "flower")
        trace = built_in("diurnal", s.plan.rps_at_target, s.plan.rps_at_target * 3, 3600)
        bounds.append(lower_bound(s, trace, 5000 / 1.1).ready_replica_s)
    assert bounds[0] == pytest.approx(bounds[1])
    assert s.lowest_replicas == 1  # bounds.lowest_replicas of the workload, read into its setup


def test_keda_allows_zero() -> None:
    from support import cfg_of

    cfg = cfg_of("local")
    assert lowest_replicas(next(w for w in cfg.workloads if w.name == "batch-embedder")) == 0
    assert lowest_replicas(next(w for w in cfg.workloads if w.name == "echo-gpu")) == 1


def _without_target(stack: str = "prod") -> dict:
    from support import stack_raw

    raw = stack_raw(stack)
    del raw["workloads"][0]["autoscaling"]["metrics"][0]["target"]
    return raw


def test_a_target_left_out_is_derived_from_the_slo_rendered_and_shown_as_derived() -> None:
    """prod's flower: an SLO of 5000 us on Triton's queue time and no target: 5000 / (1.1 x 1.25) = 3636.36, to
    three figures 3630, which the HPA renders; plan says "derived" (and "stated" for the stack as written)."""
    from support import one, synth

    from gpuplatform.components.validation import load
    from gpuplatform.plan import slo_rows, slo_text

    raw = _without_target()
    t = load(raw).workloads[0].autoscaling.metrics[0]
    assert (t.target, t.derived) == (3630, True)
    hpa = one(synth(raw), "kubernetes:autoscaling/v2:HorizontalPodAutoscaler").inputs["spec"]
    assert hpa["metrics"][0]["pods"]["target"]["averageValue"] == "3630"
    row = slo_rows(load(raw))[0]
    assert row["targets"] == [{"metric": "triton_queue_time_us", "target": 3630, "basis": "derived"}]
    assert "triton_queue_time_us 3630 (derived)" in slo_text([row])
    stated = slo_rows(cfg_of("prod"))[0]["targets"][0]
    assert (stated["target"], stated["basis"]) == (3500, "stated")


def test_a_target_left_out_with_no_objective_on_its_metric_is_a_clear_error() -> None:
    from gpuplatform.components.errors import ConfigError
    from gpuplatform.components.validation import load

    raw = _without_target()
    del raw["workloads"][0]["slo"]
    with pytest.raises(ConfigError) as info:
        load(raw)
    (issue,) = info.value.issues
    assert issue.path == "workloads[0].autoscaling.metrics[0].target"
    assert "required: the workload states no slo" in issue.message and "allowed: a target (in us)" in issue.message
    raw = _without_target()
    raw["workloads"][0]["slo"]["objectives"][0]["metric"] = "gpu_engine_active"
    with pytest.raises(ConfigError) as info:
        load(raw)
    assert any(i.path == "workloads[0].autoscaling.metrics[0].target" and "no objective on 'triton_queue_time_us'"
               in i.message for i in info.value.issues)


def test_a_derived_target_that_can_never_be_met_names_its_derivation() -> None:
    """vLLM's TTFT p90 never reads below 0.9 ms (its first bucket bound is 1 ms): an SLO of 1 ms is allowed, but
    the target derived from it (0.727 ms) is one the HPA would sit at maxReplicas chasing."""
    from gpuplatform.components.errors import ConfigError
    from gpuplatform.components.stack_config import namespace_from_stack_file
    from gpuplatform.components.validation import load

    raw = namespace_from_stack_file(REPO / "examples" / "005-vllm-queue" / "Pulumi.005-vllm-queue.yaml")
    w = raw["workloads"][0]
    w["autoscaling"]["metrics"] = [{"metric": "vllm_ttft_p90_ms"}]
    w["slo"]["objectives"] = [{"metric": "vllm_ttft_p90_ms", "below": 1}]
    with pytest.raises(ConfigError) as info:
        load(raw)
    (issue,) = info.value.issues
    assert issue.path == "workloads[0].autoscaling.metrics[0].target"
    assert issue.message.startswith("the target derived from slo.objectives[0].below (1 / (1.1 x 1.25)")
    assert "is 0.727:" in issue.message and "can never be met" in issue.message and "state a target" in issue.message
    w["slo"]["objectives"][0]["below"] = 10
    assert load(raw).workloads[0].autoscaling.metrics[0].target == 7.27


def test_the_plan_says_how_many_bad_minutes_each_trace_allows() -> None:
    """A 20-minute run judged at 99 % allows no bad minute: the table says so, for each compliance it shows."""
    from gpuplatform.plan import slo_text

    verdict = {"met": False, "badMinutes": 1, "readyReplicaHours": 1.0, "lowerBoundReadyReplicaHours": 1.0}
    rows = [{"workload": name, "objectives": [{"metric": "gpu_util", "below": 55}], "compliance": compliance,
             "window": "28d", "targets": [],
             "verdicts": {"step": {**verdict, "minutes": 20}, "spike": {**verdict, "minutes": 30},
                          "diurnal": {**verdict, "minutes": 120}}}
            for name, compliance in (("a", 99.0), ("b", 95.0))]
    note = slo_text(rows).splitlines()[-1]
    assert note.startswith("Bad minutes a trace allows at 95%: step (20 min) 1, spike (30 min) 1, diurnal (120 min) "
                           "6; a day (1440 min) 72; at 99%: step (20 min) 0, spike (30 min) 0, diurnal (120 min) 1; "
                           "a day (1440 min) 14")


def test_compliance_written_as_a_fraction_is_refused_naming_both_readings() -> None:
    raw = _with_slo(stack_raw("prod"), objectives=[{"metric": "triton_queue_time_us", "below": 5000}],
                    compliance=0.99)
    message = _issues(raw)["workloads[0].slo.compliance"]
    assert "0.99 reads as 0.99 % of minutes" in message and "allowed: 99 for 0.99 of minutes" in message


def test_a_threshold_the_hpa_target_holds_the_metric_above_is_refused_naming_both() -> None:
    raw = stack_raw("prod")
    metric = raw["workloads"][0]["autoscaling"]["metrics"][0]
    target = float(metric["target"])
    _with_slo(raw, objectives=[{"metric": metric["metric"], "below": target * 0.9}])
    message = _issues(raw)["workloads[0].slo.objectives[0].below"]
    assert f"{target * 0.9:g} is unreachable with autoscaling.metrics[0].target {target:g}" in message
    raw["workloads"][0]["slo"]["objectives"][0]["below"] = target * 1.5
    assert load(raw).workloads[0].slo.objectives[0].below == target * 1.5
