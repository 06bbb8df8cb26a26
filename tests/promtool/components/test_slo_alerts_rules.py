"""The SLO burn-rate rules, run by promtool on series that burn the error budget at known rates.

A 30-day window at 99 % makes the thresholds the SRE workbook's own (14.4x, 6x, 1x of a 1 % budget): the fast
burn pages through the 1h window only, a slow burn through the 6h window only, a steady 2 % ticket only, 0.5 %
nothing; the burn stops and the page resolves within the short window; ARMS' subquery form fires like the
recording rule form.
"""
from functools import lru_cache

from gpuplatform.components.config import Slo, SloObjective
from gpuplatform.components.monitoring import GpuMonitoring
from gpuplatform.components.slo_alerts import SLO_BURN_ALERT, slo_rule_group
from gpuplatform.components.stack_config import load_stack_file
from support import REPO

NS, WORKLOAD = "inference", "chat"
TTFT, WAITING = "vllm_ttft_p90_ms", "vllm_requests_waiting"
STEP_S = 15
# an own subset of vLLM's TTFT buckets (seconds): good requests take 50 ms, bad ones 800 ms (p90 about 0.95 s)
BUCKETS = ("0.1", "0.5", "1", "+Inf")
OBSERVATIONS_PER_STEP = 10


@lru_cache(maxsize=1)
def _cfg():
    cfg = load_stack_file(REPO / "examples" / "005-vllm-queue" / "Pulumi.005-vllm-queue.yaml")
    slo = Slo(objectives=[SloObjective(metric=TTFT, below=500), SloObjective(metric=WAITING, below=4)],
              compliance=99, window="30d")
    return cfg.model_copy(update={"workloads": [cfg.workloads[0].model_copy(update={"slo": slo})]})


def _doc(recorded: bool, windows=("1h", "6h", "3d")) -> dict:
    records, alerts = GpuMonitoring.slo_rules(_cfg(), recorded=recorded)
    alerts = [a for a in alerts if dict(a.labels)["long_window"] in windows]
    return {"groups": slo_rule_group(records, alerts)}


def _ttft_buckets(bad_minutes: list[bool], pod: str) -> list[dict]:
    """Cumulative bucket counters: in minute m every 15 s step adds 10 requests, fast or (bad minute) slow."""
    counts = {le: 0 for le in BUCKETS}
    values = {le: ["0"] for le in BUCKETS}
    for bad in bad_minutes:
        for _ in range(60 // STEP_S):
            for le in BUCKETS:
                if not bad or le in ("1", "+Inf"):
                    counts[le] += OBSERVATIONS_PER_STEP
                values[le].append(str(counts[le]))
    return [{"series": f'vllm:time_to_first_token_seconds_bucket{{namespace="{NS}",pod="{pod}",le="{le}"}}',
             "values": " ".join(v)} for le, v in values.items()]


def _waiting(bad_every: int, minutes: int) -> list[dict]:
    """The waiting-requests gauge once a minute: 9 (over ``below``) one minute in ``bad_every``, else 1."""
    values = " ".join("9" if m % bad_every == bad_every - 1 else "1" for m in range(minutes + 1))
    return [{"series": f'vllm:num_requests_waiting{{namespace="{NS}",pod="{WORKLOAD}-0"}}', "values": values}]


def _firing(objective: str, *windows: str) -> list[dict]:
    """The alerts expected, with the labels and annotations their rule gives them."""
    rules = {(r["labels"]["objective"], r["labels"]["long_window"]): r for r in _doc(True)["groups"][0]["rules"]
             if "alert" in r}
    severities = {"1h": "page", "6h": "page", "3d": "ticket"}
    return [{"exp_labels": {"severity": severities[w], "namespace": NS, "workload": WORKLOAD,
                            "objective": objective, "long_window": w},
             "exp_annotations": rules[objective, w]["annotations"]} for w in windows]


def _fast_burn_series() -> list[dict]:
    # 6 h within the SLO, 20 bad minutes, then within it again; another workload's pod is slow throughout
    bad = [False] * 360 + [True] * 20 + [False] * 40
    return _ttft_buckets(bad, f"{WORKLOAD}-0") + _ttft_buckets([True] * 420, "embedder-0")


def _fast_burn_tests() -> list[dict]:
    return [
        {"alertname": SLO_BURN_ALERT, "eval_time": "6h5m", "exp_alerts": []},  # 5 bad minutes: 8 % of 1h
        {"alertname": SLO_BURN_ALERT, "eval_time": "6h16m", "exp_alerts": _firing(TTFT, "1h")},
        {"alertname": SLO_BURN_ALERT, "eval_time": "6h20m", "exp_alerts": _firing(TTFT, "1h")},
        # 1h still over the threshold (20 of 60 minutes bad), 5m clean: the page resolves
        {"alertname": SLO_BURN_ALERT, "eval_time": "6h30m", "exp_alerts": []},
    ]


def test_rules_pass_promtool_check(promtool):
    promtool.check_rules(promtool.write_rules(_doc(recorded=True), name="slo.yml"))
    promtool.check_rules(promtool.write_rules(_doc(recorded=False), name="slo-arms.yml"))


def test_fast_burn_pages_through_the_1h_window_and_resolves_when_it_stops(promtool):
    # the 3d window holds only these 7 hours, which the burn spends over 1 %: the ticket is tested on 3 days below
    promtool.test_rules(_doc(recorded=True, windows=("1h", "6h")), _fast_burn_series(), interval=f"{STEP_S}s",
                        alert_rule_tests=_fast_burn_tests())


def test_arms_subquery_form_fires_like_the_recorded_form(promtool):
    # the 1h window only: a 6h subquery stepped every minute for 7 hours costs promtool ten seconds, and the
    # windows' expressions differ in their durations only
    promtool.test_rules(_doc(recorded=False, windows=("1h",)), _fast_burn_series(), interval=f"{STEP_S}s",
                        alert_rule_tests=_fast_burn_tests())


def test_slow_burn_pages_through_the_6h_window_only(promtool):
    # 6 h within the SLO, then one bad minute in ten (10 %: under 14.4 % for 1h, over 6 % for 6h and 30m)
    bad = [False] * 360 + [m % 10 == 9 for m in range(360)]
    promtool.test_rules(_doc(recorded=True, windows=("1h", "6h")), _ttft_buckets(bad, f"{WORKLOAD}-0"),
                        interval=f"{STEP_S}s",
                        alert_rule_tests=[
                            # 1 h of the slow burn: 10 % of 1h, about 1.7 % of 6h
                            {"alertname": SLO_BURN_ALERT, "eval_time": "7h", "exp_alerts": []},
                            # 5 h of it: about 8 % of 6h
                            {"alertname": SLO_BURN_ALERT, "eval_time": "11h", "exp_alerts": _firing(TTFT, "6h")},
                        ])


def test_steady_two_percent_opens_a_ticket_and_half_a_percent_nothing(promtool):
    # three days of steady burn, the ticket's whole window: 2 % is over 1x the 1 % budget (ticket) and under 6x
    # and 14.4x (no page); 0.5 % is within the budget. The ratio counts a window's minutes not yet recorded as good,
    # so after one day the 2 % burn reads 0.67 % over the 3d window, under the ticket's 1 %: no ticket yet
    # (the 3d alert only: the pages' windows cannot fire on these burns, and three days of them triple promtool's
    # time)
    minutes = 3 * 24 * 60
    ticket = _doc(recorded=True, windows=("3d",))
    promtool.test_rules(ticket, _waiting(50, minutes), interval="1m", alert_rule_tests=[
        {"alertname": SLO_BURN_ALERT, "eval_time": "1d", "exp_alerts": []},
        {"alertname": SLO_BURN_ALERT, "eval_time": "3d", "exp_alerts": _firing(WAITING, "3d")}])
    promtool.test_rules(ticket, _waiting(200, minutes), interval="1m", alert_rule_tests=[
        {"alertname": SLO_BURN_ALERT, "eval_time": "3d", "exp_alerts": []}])
