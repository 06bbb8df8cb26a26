"""Triton queue time per request, evaluated by Prometheus over the cases the seed's rule gets wrong.

The seed (NVIDIA's article and Triton's k8s-onprem chart) served
``avg(delta(queue_us[30s]) / (1 + delta(success[30s]))) by (pod)``: across a Triton restart delta() of a counter
goes negative, a success delta of -1 divides by zero, an idle second model halves a busy pod's value and
``1 +`` halves the value of a pod that served one request. Each case below sits in its own namespace and runs
the query the adapter sends for it (the catalog's rule, rendered as prometheus-adapter renders it), so a
regression to any of those shapes changes a value here.

Samples are 15 s apart from 0 s to 60 s; the HPA's query runs at 60 s over the 30 s window: the samples at 30 s,
45 s and 60 s up to Prometheus 2.x, those at 45 s and 60 s from 3.0 (range selectors are left-open; prometheus
docs/migration.md, "Range selectors and lookback exclude samples coinciding with the left boundary"). Each case's
change lands where both see it (promtool of both releases runs this).
"""
from __future__ import annotations

import pytest

from gpuplatform.catalogs.metrics import METRICS
from gpuplatform.components.adapter_rules import render_for_pods

SOURCE = METRICS["triton_queue_time_us"].source("triton")
WINDOW = "30s"
EVAL_TIME = "1m"
QUEUE, SUCCESS = "nv_inference_queue_duration_us", "nv_inference_request_success"


def _model(ns: str, pod: str, model: str, queue: str, success: str) -> list[dict]:
    labels = (f'model="{model}",version="1",namespace="{ns}",pod="{pod}",container="triton",'
              f'job="{ns}/triton",endpoint="metrics"')
    return [{"series": f"{QUEUE}{{{labels}}}", "values": queue},
            {"series": f"{SUCCESS}{{{labels}}}", "values": success}]


# case -> (pods the HPA asks for, series, expected value per pod; a pod left out must be absent)
CASES = {
    # The container restarted between 30 s and 45 s: both counters start again from 0. Since the restart the
    # pod queued 4000 + 4000 us over 2 + 2 requests; before it, 20000 us over 8 requests (30 s sample = 100,
    # restart at 520000/108 just before). increase() counts 8000 / 4 = 2000 us; delta() gave (8000 - 520000) /
    # (1 + 4 - 100) = 5389 us, and a reset landing on success = last - 1 made it divide by zero.
    "restart": (["flower-a"], _model("restart", "flower-a", "resnet50",
                                     "0 500000 520000 4000 8000", "0 100 100 2 4"), {"flower-a": 2000}),
    # One model busy (3000 us per request), a second one loaded and idle on the same pod.
    "idle-model": (["flower-a"],
                   _model("idle-model", "flower-a", "resnet50", "0 0 0+30000x2", "0 0 0+10x2")
                   + _model("idle-model", "flower-a", "densenet_onnx", "5000x4", "7x4"), {"flower-a": 3000}),
    # Two models with different traffic: weighted by requests, 10 x 1000 us and 30 x 5000 us -> 4000 us
    # (the mean of the two per-model ratios would say 3000).
    "weighted": (["flower-a"],
                 _model("weighted", "flower-a", "resnet50", "0 0 0+5000x2", "0 0 0+5x2")
                 + _model("weighted", "flower-a", "densenet_onnx", "0 0 0+75000x2", "0 0 0+15x2"),
                 {"flower-a": 4000}),
    # No request at all in the window (counters flat at their old values): 0, not NaN and not absent, so the
    # HPA reads an idle service as idle and scales it down.
    "no-traffic": (["flower-a", "flower-b"],
                   _model("no-traffic", "flower-a", "resnet50", "90000x4", "30x4")
                   + _model("no-traffic", "flower-b", "resnet50", "0x4", "0x4"),
                   {"flower-a": 0, "flower-b": 0}),
    # A busy pod next to an idle one: each keeps its own value.
    "busy-and-idle": (["flower-a", "flower-b"],
                      _model("busy-and-idle", "flower-a", "resnet50", "0 0 0+12000x2", "0 0 0+4x2")
                      + _model("busy-and-idle", "flower-b", "resnet50", "250x4", "1x4"),
                      {"flower-a": 3000, "flower-b": 0}),
    # One request in the window that queued 3000 us: 3000, where "1 +" reported 1500. It completes between the
    # 45 s and 60 s scrapes: one completed between 30 s and 45 s is outside 3.x's window (30 s, 60 s], which reads 0.
    "one-request": (["flower-a"], _model("one-request", "flower-a", "resnet50", "0 0 0 0 3000", "0 0 0 0 1"),
                    {"flower-a": 3000}),
    # A pod whose first scrape is inside the window (just started): one sample cannot make an increase, so it
    # is absent (the HPA assumes 0 for it on scale-up and the target on scale-down) and the other pod is served.
    "new-pod": (["flower-a", "flower-b"],
                _model("new-pod", "flower-a", "resnet50", "0 0 0+8000x2", "0 0 0+4x2")
                + _model("new-pod", "flower-b", "resnet50", "_ _ _ _ 500", "_ _ _ _ 1"),
                {"flower-a": 2000}),
}


def test_queue_time_per_request_survives_restarts_idle_models_and_no_traffic(promtool):
    rules, tests, series = [], [], []
    for case, (pods, case_series, expected) in CASES.items():
        record = f"test:avg_time_queue_us:{case.replace('-', '_')}"
        rules.append(promtool.recording_rule(record, render_for_pods(SOURCE, case, pods, WINDOW)))
        tests.append(promtool.expr_test(record, EVAL_TIME, [
            (promtool.selector(record, {"pod": pod}), value) for pod, value in expected.items()]))
        series += case_series
    promtool.test_rules(rules, series, promql_expr_tests=tests)


@pytest.mark.parametrize("fragment", ["delta(", "1 +", "avg("])
def test_rule_has_none_of_the_seed_shapes(fragment):
    assert fragment not in SOURCE.metrics_query
