"""Error-budget burn-rate alerts from each workload's ``slo`` (the SRE workbook's method: catalogs/burn_rates.py).

The SLI, the one definition ``simulate`` judges (gpuplatform/simulate/slo.py evaluates the same expression on its
own scraped series), ``plan`` prints and these alerts page on: each minute, for each objective, the objective's
metric read with the query the HPA's adapter sends for the workload's pods (components/adapter_rules.py
``render_metrics_query``) over the minute itself (``SLI_WINDOW``, 1m: a rate covers every request of the minute),
on the worst pod. ``max(<per-pod query>[1m]) > bool <below>`` is 1 for a bad minute, 0 for a good one, evaluated
at the end of each minute. A minute in which no pod of the workload reports the metric has no sample.

* kube-prometheus-stack: a recording rule (group interval 1m) stores the 0/1 series as
  ``gpuplatform:slo_bad_minute{namespace, workload, objective}``; the alerts count it over their windows.
* ARMS: ``PrometheusAlertRule`` holds alert expressions only (no recording rules in pulumi_alicloud's arms module),
  so the alerts count the same 0/1 expression through a 1m-step subquery, ``sum_over_time((...)[W:1m])``.

The error ratio over a window W is the bad minutes in it over W's length in minutes,
``sum_over_time(bad[W]) / clamp_min(count_over_time(bad[W]), minutes(W))``: the share of W that went bad, so
that ``ratio > burn rate x budget`` means what the workbook's table says, that share of the whole SLO window's
budget spent within W. A minute without a sample (before the rule ran, after a deploy, or while no pod reports) counts as good: averaging over the samples
present instead (``avg_over_time``) made one bad minute in the first minutes after a deploy a 100 % error ratio,
which on a 99.9 % SLO held the 6h page for hours and the 3d ticket for most of a day. A missing metric has its own
alert (the series-absent alert of components/alerts.py).
"""
from __future__ import annotations

from gpuplatform.catalogs.burn_rates import (BAD_MINUTE_STEP, BURN_RATE_WINDOWS, SLI_WINDOW, WORKBOOK_URL,
                                            BurnRateWindow, burn_rate, prometheus_duration_seconds)
from gpuplatform.catalogs.metrics import METRICS, MetricSource
from gpuplatform.components.adapter_rules import render_metrics_query
from gpuplatform.components.alerts import Alert

SLO_BURN_ALERT = "GpuSloErrorBudgetBurn"
BAD_MINUTE_RECORD = "gpuplatform:slo_bad_minute"
SLO_RULE_GROUP = "gpu-platform.slo"
ALERT_FOR = "1m"
"""Two consecutive 1m evaluations over the thresholds: one evaluation that lands on a scrape gap cannot page."""


def number(value: float) -> str:
    """A PromQL float literal without a trailing ``.0`` (``500``, ``0.144``)."""
    return f"{value:.6g}"


def workload_sli(source: MetricSource, namespace: str, workload: str) -> str:
    """The per-pod query of the workload's pods, in the form the adapter renders it for the HPA, over the minute
    judged (``SLI_WINDOW``)."""
    lab = source.labels
    return render_metrics_query(source, f'{lab.namespace}="{namespace}",{lab.pod}=~"{workload}-.*"', lab.pod,
                                SLI_WINDOW)


def bad_minute_expr(sli: str, below: float) -> str:
    return f"max({sli}) > bool {number(below)}"


def record_labels(namespace: str, workload: str, objective: str) -> dict:
    return {"namespace": namespace, "workload": workload, "objective": objective}


def recorded_selector(namespace: str, workload: str, objective: str) -> str:
    body = ",".join(f'{k}="{v}"' for k, v in record_labels(namespace, workload, objective).items())
    return f"{BAD_MINUTE_RECORD}{{{body}}}"


def window_minutes(window: str) -> float:
    return prometheus_duration_seconds(window) / prometheus_duration_seconds(BAD_MINUTE_STEP)


def error_ratio(bad_minute: str, window: str, recorded: bool) -> str:
    """Bad samples over the samples a full ``window`` holds (a minute without a sample counts as good): of the
    recorded series, or of the expression through a subquery. The divisor is the samples present when there are
    more than one a minute (a rule group evaluated more often than its 1m interval, as ``promtool test rules``
    does at the test's evaluation interval), so the ratio is the same either way."""
    series = f"{bad_minute}[{window}]" if recorded else f"({bad_minute})[{window}:{BAD_MINUTE_STEP}]"
    return f"sum_over_time({series}) / clamp_min(count_over_time({series}), {number(window_minutes(window))})"


def applicable_windows(slo_window: str, budget: float) -> list[tuple[BurnRateWindow, float]]:
    """The workbook's windows that fit in the SLO window, with their burn rates; a window whose threshold
    (burn rate x budget) is 1 or more could never fire (no ratio exceeds 1) and is left out."""
    total = prometheus_duration_seconds(slo_window)
    out = []
    for w in BURN_RATE_WINDOWS:
        rate = burn_rate(w, slo_window)
        if prometheus_duration_seconds(w.long) <= total and rate * budget < 1:
            out.append((w, rate))
    return out


def objective_alerts(namespace: str, workload: str, objective: str, below: float, compliance: float,
                     slo_window: str, bad_minute: str, recorded: bool) -> list[Alert]:
    """One alert per applicable workbook window: error ratio over its long and its short window both above
    ``burn rate x (1 - compliance/100)``."""
    budget = 1 - compliance / 100
    unit = METRICS[objective].unit_info.shown if objective in METRICS else ""
    out = []
    for w, rate in applicable_windows(slo_window, budget):
        threshold = number(rate * budget)
        expr = (f"{error_ratio(bad_minute, w.long, recorded)} > {threshold} and "
                f"{error_ratio(bad_minute, w.short, recorded)} > {threshold}")
        summary = (f"{workload}: {objective} above {number(below)} {unit} burns the error budget of its SLO "
                   f"({number(compliance)}% of minutes over {slo_window}) over {rate:.3g}x too fast in the last "
                   f"{w.long} and {w.short}: {number(w.budget_share * 100)}% of it spent in {w.long}")
        runbook = (f"kubectl -n {namespace} describe hpa {workload}: at maxReplicas, raise maxReplicas or grow the "
                   "node pool; replicas waiting for nodes or model load, look at scale-up speed and minReplicas; "
                   f"TARGETS <unknown>, see the metric pipeline. Method: {WORKBOOK_URL}")
        out.append(Alert(SLO_BURN_ALERT, expr, ALERT_FOR, w.severity, summary,
                         labels=(*record_labels(namespace, workload, objective).items(), ("long_window", w.long)),
                         description=runbook))
    return out


def slo_rules(namespace_of, workloads, source_of, recorded: bool) -> tuple[list[dict], list[Alert]]:
    """Recording rules (``recorded``) and burn-rate alerts of every workload with an SLO.

    ``namespace_of(workload)`` and ``source_of(workload, metric)`` resolve what the stack decides (root workloads
    live in their own namespace; the source follows the stack's exporter and the server's version)."""
    records, alerts = [], []
    for w in workloads:
        slo = getattr(w, "slo", None)
        if slo is None:
            continue
        ns = namespace_of(w)
        for o in slo.objectives:
            src = source_of(w, o.metric)
            if src is None:
                raise ValueError(f"workloads[{w.name}].slo.objectives: metric '{o.metric}' has no source for this "
                                 "workload's server and exporter")
            expr = bad_minute_expr(workload_sli(src, ns, w.name), o.below)
            if recorded:
                records.append({"record": BAD_MINUTE_RECORD, "expr": expr,
                                "labels": record_labels(ns, w.name, o.metric)})
            bad_minute = recorded_selector(ns, w.name, o.metric) if recorded else expr
            alerts += objective_alerts(ns, w.name, o.metric, o.below, slo.compliance, slo.window, bad_minute,
                                       recorded)
    return records, alerts


def slo_rule_group(records: list[dict], alerts: list[Alert]) -> list[dict]:
    """The PrometheusRule group: evaluated every minute, so each recorded sample is one minute."""
    if not records and not alerts:
        return []
    return [{"name": SLO_RULE_GROUP, "interval": BAD_MINUTE_STEP, "rules": records + [a.rule() for a in alerts]}]
