"""One SLI for ``simulate`` and the burn-rate alerts: the same samples through promtool's recording rule and through
the simulator's own judge give the same bad minutes; and one bad minute after a deploy pages nobody.

The series are two Triton pods of prod's ``flower`` scraped every 15 s, whose queue time per request is set minute
by minute: a minute is bad when the worst pod's mean queue time over the minute is above the SLO's 5000 us.
"""
from functools import lru_cache

from gpuplatform.components.config import Slo, SloObjective
from gpuplatform.components.monitoring import GpuMonitoring
from gpuplatform.components.slo_alerts import BAD_MINUTE_RECORD, SLO_BURN_ALERT, slo_rule_group
from gpuplatform.simulate import promql
from gpuplatform.simulate.engine import Simulation, setup
from gpuplatform.simulate.slo import bad_minute
from gpuplatform.simulate.traces import Trace
from support import cfg_of

STEP_S = 15
REQUESTS_PER_STEP = 10
POD_A, POD_B = "flower-00001", "flower-00002"
GOOD, SLOW = 1000.0, 6000.0
# per minute, each pod's queue time (us) in each of its four 15 s steps; None: the pod reports nothing that minute
MINUTES = [
    ([GOOD] * 4, [GOOD] * 4),                       # 0 good
    ([GOOD] * 4, [SLOW] * 4),                       # 1 bad: the worst pod is over
    ([GOOD] * 4, [GOOD] * 4),                       # 2 good
    ([GOOD, GOOD, SLOW, SLOW], [GOOD] * 4),         # 3 good: the minute's mean 3500 (its last 30 s: 6000)
    ([8000.0, 8000.0, 8000.0, GOOD], [GOOD] * 4),   # 4 bad: the minute's mean 6250 (its last 30 s: 4500)
    (None, None),                                   # 5 no reading: neither pod reports
    ([5200.0] * 4, [4800.0] * 4),                   # 6 bad: the worst pod
    ([4900.0] * 4, [4900.0] * 4),                   # 7 good
    ([GOOD] * 4, None),                             # 8 good: one pod gone
    ([SLOW] * 4, None),                             # 9 bad
]
EXPECTED = [False, True, False, False, True, None, True, False, False, True]
"""The same in both releases promtool runs: the rule evaluates on the scrapes' own 15 s grid, where Prometheus 3's
left-open range (prometheus docs/migration.md, "Range selectors and lookback exclude samples coinciding with the
left boundary") leaves the minute's first step out of ``[1m]``: minute 3 reads 4333 there (2.x: 3500), minute 4
5667 (2.x: 6250). Minute 3 once had 8000 in its last 30 s, which 3.x reads as 5667, a bad minute."""


def _samples(pod_index: int) -> dict[str, list]:
    """The pod's two counters at every 15 s scrape (None where it was not scraped)."""
    queue = success = 0.0
    out = {"nv_inference_queue_duration_us": [0.0], "nv_inference_request_success": [0.0]}
    for minute in MINUTES:
        steps = minute[pod_index]
        for k in range(4):
            if steps is None:
                out["nv_inference_queue_duration_us"].append(None)
                out["nv_inference_request_success"].append(None)
                continue
            success += REQUESTS_PER_STEP
            queue += REQUESTS_PER_STEP * steps[k]
            out["nv_inference_queue_duration_us"].append(queue)
            out["nv_inference_request_success"].append(success)
    return out


def _labels(pod: str) -> dict:
    return {"namespace": "inference", "pod": pod}


@lru_cache(maxsize=1)
def _simulation() -> Simulation:
    cfg = cfg_of("prod")
    return Simulation(setup(cfg, "flower"), Trace("none", (0,), (0.0,), 60))


def _simulated_bad_minutes(version) -> list:
    """The simulator's own judge (what a run calls at the end of every minute) on these samples."""
    storage = promql.Storage()
    for index, pod in enumerate((POD_A, POD_B)):
        for name, values in _samples(index).items():
            for k, v in enumerate(values):
                if v is not None:
                    storage.add(name, _labels(pod), k * STEP_S, v)
    (expr,) = _simulation().sli
    return [bad_minute(expr, storage, 60.0 * (m + 1), version) for m in range(len(MINUTES))]


def _input_series(promtool) -> list[dict]:
    out = []
    for index, pod in enumerate((POD_A, POD_B)):
        for name, values in _samples(index).items():
            out.append({"series": promtool.selector(name, _labels(pod)),
                        "values": " ".join("_" if v is None else f"{v:g}" for v in values)})
    return out


def test_the_recording_rule_and_the_simulator_find_the_same_bad_minutes(promtool):
    records, _ = GpuMonitoring.slo_rules(cfg_of("prod"), recorded=True)
    (record,) = records
    (expr,) = _simulation().sli
    assert record["expr"] == expr  # one expression, rendered once for both
    simulated = _simulated_bad_minutes(promtool.version)
    assert simulated == EXPECTED
    recorded = promtool.selector(BAD_MINUTE_RECORD, record["labels"])
    tests = [promtool.expr_test(recorded, f"{m + 1}m",
                                [] if bad is None else [(recorded, 1.0 if bad else 0.0)])
             for m, bad in enumerate(simulated)]
    promtool.test_rules({"groups": slo_rule_group(records, [])}, _input_series(promtool), interval=f"{STEP_S}s",
                        promql_expr_tests=tests)


# ---------------------------------------------------------------------------------------------- after a deploy
@lru_cache(maxsize=2)
def _rules(compliance: float) -> dict:
    cfg = cfg_of("prod")
    w = next(x for x in cfg.workloads if x.name == "flower")
    slo = Slo(objectives=[SloObjective(metric="triton_queue_time_us", below=5000)], compliance=compliance,
              window="28d")
    cfg = cfg.model_copy(update={"workloads": [w.model_copy(update={"slo": slo}) if x is w else x
                                               for x in cfg.workloads]})
    return {"groups": slo_rule_group(*GpuMonitoring.slo_rules(cfg, recorded=True))}


def _deployed_with_one_bad_minute(promtool, hours: int) -> list[dict]:
    """A pod deployed at 0 (no samples before), its third minute slow, every other minute good."""
    queue = success = 0.0
    values = ["0"]
    for step in range(1, hours * 240 + 1):
        success += REQUESTS_PER_STEP
        queue += REQUESTS_PER_STEP * (SLOW if 2 * 4 < step <= 3 * 4 else GOOD)
        values.append(f"{queue:g}")
    series = [{"series": promtool.selector("nv_inference_queue_duration_us", _labels(POD_A)),
               "values": " ".join(values)},
              {"series": promtool.selector("nv_inference_request_success", _labels(POD_A)),
               "values": f"0+{REQUESTS_PER_STEP}x{hours * 240}"}]
    return series


def test_one_bad_minute_after_a_deploy_pages_nobody_on_a_99_percent_slo(promtool):
    # the windows are nearly empty after a deploy: counted over the samples present, this minute was 1/3 of the
    # 1h and 5m windows at 3m (a 1h page), 1/10 of the 6h and 30m windows at 10m (a 6h page) and over 1 % of the
    # 3d and 6h windows for the first 100 minutes (a ticket); counted over each window's length it spends 1/60,
    # 1/360 and 1/4320 of them, under every threshold
    at = ("3m", "5m", "10m", "20m", "1h", "90m", "2h")
    promtool.test_rules(_rules(99.0), _deployed_with_one_bad_minute(promtool, 3), interval=f"{STEP_S}s",
                        alert_rule_tests=[promtool.alert_test(SLO_BURN_ALERT, t, []) for t in at])


def test_on_a_99_9_percent_slo_one_bad_minute_pages_only_while_the_short_window_holds_it(promtool):
    # 1 bad minute of 60 is 2.5 % of a 28-day 99.9 % budget in an hour (over the 1h window's 2 %): the fast-burn
    # page fires, and the 5m window gates it off once the minute has left it; the 6h page and the ticket never
    rules = _rules(99.9)
    page = {"severity": "page", "namespace": "inference", "workload": "flower",
            "objective": "triton_queue_time_us", "long_window": "1h"}
    annotations = next(r["annotations"] for r in rules["groups"][0]["rules"]
                       if r.get("alert") and r["labels"]["long_window"] == "1h")
    promtool.test_rules(rules, _deployed_with_one_bad_minute(promtool, 2), interval=f"{STEP_S}s",
                        alert_rule_tests=[
                            promtool.alert_test(SLO_BURN_ALERT, "5m",
                                                [{"exp_labels": page, "exp_annotations": annotations}]),
                            promtool.alert_test(SLO_BURN_ALERT, "10m", []),
                            promtool.alert_test(SLO_BURN_ALERT, "30m", []),
                            promtool.alert_test(SLO_BURN_ALERT, "2h", []),
                        ])
