"""Which burn-rate rules a workload's SLO yields (their firing is tested with promtool: tests/promtool)."""
import pytest

from gpuplatform.catalogs.burn_rates import BURN_RATE_WINDOWS, burn_rate, prometheus_duration_seconds
from gpuplatform.components.config import Slo, SloObjective
from gpuplatform.components.monitoring import GpuMonitoring
from gpuplatform.components.slo_alerts import BAD_MINUTE_RECORD, SLO_RULE_GROUP
from support import cfg_of


def _with_slo(stack: str, **slo):
    cfg = cfg_of(stack)
    w = cfg.workloads[0]
    metric = w.autoscaling.metrics[0].metric
    objectives = slo.pop("objectives", [SloObjective(metric=metric, below=1)])
    return cfg.model_copy(update={"workloads": [w.model_copy(update={"slo": Slo(objectives=objectives, **slo)}),
                                                *cfg.workloads[1:]]})


def _windows(alerts) -> list[tuple[str, str]]:
    return [(a.severity, dict(a.labels)["long_window"]) for a in alerts]


def test_thirty_day_burn_rates_are_the_workbook_table():
    assert [round(burn_rate(w, "30d"), 6) for w in BURN_RATE_WINDOWS] == [14.4, 6.0, 1.0]
    assert [(w.severity, w.long, w.short) for w in BURN_RATE_WINDOWS] == [
        ("page", "1h", "5m"), ("page", "6h", "30m"), ("ticket", "3d", "6h")]


def test_the_burn_rate_keeps_the_budget_share_on_another_window():
    # 2 % of a 28-day budget in 1 hour
    assert burn_rate(BURN_RATE_WINDOWS[0], "28d") == pytest.approx(0.02 * 28 * 24)
    assert prometheus_duration_seconds("4w") == prometheus_duration_seconds("28d")
    with pytest.raises(ValueError, match="'28 days' is not a duration"):
        prometheus_duration_seconds("28 days")


def test_no_slo_no_rules():
    prod = cfg_of("prod")
    cfg = prod.model_copy(update={"workloads": [w.model_copy(update={"slo": None}) for w in prod.workloads]})
    assert [g["name"] for g in GpuMonitoring.prometheus_rule(cfg)["spec"]["groups"]] == ["gpu-platform.autoscaling"]
    assert GpuMonitoring.slo_rules(cfg, recorded=False) == ([], [])


def test_one_record_and_three_alerts_per_objective_with_the_thresholds():
    cfg = _with_slo("prod", compliance=99.5, window="30d")
    groups = GpuMonitoring.prometheus_rule(cfg)["spec"]["groups"]
    slo_group = groups[1]
    assert (slo_group["name"], slo_group["interval"]) == (SLO_RULE_GROUP, "1m")
    records = [r for r in slo_group["rules"] if "record" in r]
    alerts = [r for r in slo_group["rules"] if "alert" in r]
    assert [r["record"] for r in records] == [BAD_MINUTE_RECORD]
    assert records[0]["expr"].endswith("> bool 1") and 'pod=~"flower-.*"' in records[0]["expr"]
    assert [a["labels"]["severity"] for a in alerts] == ["page", "page", "ticket"]
    # burn rate x budget: 14.4 x 0.005, 6 x 0.005, 1 x 0.005
    assert [a["expr"].split(" > ")[1].split(" ")[0] for a in alerts] == ["0.072", "0.03", "0.005"]
    assert all(BAD_MINUTE_RECORD in a["expr"] for a in alerts)


def test_arms_alerts_carry_the_sli_and_have_unique_names():
    cfg = _with_slo("prod", window="30d")
    _, alerts = GpuMonitoring.slo_rules(cfg, recorded=False)
    assert [(BAD_MINUTE_RECORD in a.expr, f"[{dict(a.labels)['long_window']}:1m]" in a.expr) for a in alerts] == [
        (False, True)] * 3
    keys = [a.key for a in alerts + GpuMonitoring.alert_list(cfg)]
    assert len(keys) == len(set(keys))


def test_windows_that_cannot_fire_or_do_not_fit_are_left_out():
    # a 1-day window holds no 3-day ratio
    _, alerts = GpuMonitoring.slo_rules(_with_slo("prod", window="1d"), recorded=True)
    assert _windows(alerts) == [("page", "1h"), ("page", "6h")]
    # a 10 % budget: 14.4 x 0.1 is over 1, which no share of bad minutes exceeds
    _, alerts = GpuMonitoring.slo_rules(_with_slo("prod", compliance=90, window="30d"), recorded=True)
    assert _windows(alerts) == [("page", "6h"), ("ticket", "3d")]


def test_a_metric_without_a_source_is_named():
    cfg = _with_slo("prod", objectives=[SloObjective(metric="vllm_ttft_p90_ms", below=500)])
    with pytest.raises(ValueError, match=r"workloads\[flower\]\.slo\.objectives: metric 'vllm_ttft_p90_ms'"):
        GpuMonitoring.slo_rules(cfg, recorded=True)
