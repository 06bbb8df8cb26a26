"""The simulator's PromQL evaluator against the real Prometheus engine, on the same series.

``gpuplatform simulate`` evaluates the adapter query every HPA sync with ``gpuplatform.simulate.promql``. These
tests evaluate the same rendered queries with ``promtool test rules`` and require the values the evaluator
computed, at evaluation times on and between samples:

* every catalog source on its ``tests/fixtures/series`` fixture (the adapter-rule fixtures);
* edge cases of the range functions: a counter reset, a pod with a single sample in the window, a gap;
* the series a simulation of each stack actually wrote (its scrape times, its pods appearing mid-run), with
  the query the stack generates for those pods.
"""
from __future__ import annotations

import math

import pytest
import yaml

from gpuplatform.catalogs.metrics import METRICS
from gpuplatform.components.adapter_rules import render_for_pods, render_for_nodes
from gpuplatform.simulate import promql
from support import FIXTURES_DIR

FIXTURES = FIXTURES_DIR / "series"
STEP = 15


def expand(notation: str) -> list:
    """promtool's expanding notation -> one value (None for ``_``, ``"stale"`` for a stale marker) per step."""
    out: list = []
    for token in notation.split():
        if token == "stale":
            out.append("stale")
            continue
        if token.startswith("_"):
            n = int(token[2:]) if token.startswith("_x") else 0
            out += [None] * (n + 1)
            continue
        if "x" in token:
            head, n = token.split("x")
            n = int(n)
            for op in ("+", "-"):
                idx = head.find(op, 1)
                if idx > 0:
                    a, b = float(head[:idx]), float(head[idx + 1:])
                    b = b if op == "+" else -b
                    out += [a + b * i for i in range(n + 1)]
                    break
            else:
                out += [float(head)] * (n + 1)
        else:
            out.append(float(token))
    return out


def _storage(series: list[dict], step: float, offset: float = 0.0) -> promql.Storage:
    st = promql.Storage()
    for s in series:
        labels = dict(s["labels"])
        for i, v in enumerate(expand(s["values"])):
            if v == "stale":
                st.mark_stale(s["name"], labels, offset + i * step)
            elif v is not None:
                st.add(s["name"], labels, offset + i * step, v)
    return st


def _check(promtool, queries: dict[str, str], series: list[dict], eval_times: list[float], step: int,
           storage: promql.Storage, offset: float = 0.0) -> int:
    """Evaluate each query with our evaluator at each time; require promtool to return the same values.

    promtool compares values exactly, and Go and Python may order a float product differently in the last bit,
    so both sides compare ``round(q * scale)`` with ``scale`` giving ten significant digits. The expression is
    evaluated at the test's own time (a ``promql_expr_test`` of the query itself, not of a recording rule,
    which would only hold the value of the last rule evaluation)."""
    tests, compared = [], 0
    for key, query in queries.items():
        for t in eval_times:
            vec = promql.evaluate(query, storage, t + offset, promtool.version)
            biggest = max((abs(v) for _, v in vec), default=1.0) or 1.0
            scale = 10.0 ** (9 - math.floor(math.log10(biggest)))
            samples = []
            for labels, value in vec:
                if math.isnan(value):
                    pytest.fail(f"NaN for {key} at {t}s: pick series that do not divide 0 by 0")
                shown = {k: v for k, v in labels.items() if k != "__name__"}
                samples.append((promtool.selector("", shown), float(math.floor(value * scale + 0.5))))
                compared += 1
            tests.append(promtool.expr_test(f"round(({query}) * {scale!r})", f"{int(t)}s", samples))
    input_series = [{"series": promtool.selector(s["name"], s["labels"]), "values": s["values"]} for s in series]
    promtool.test_rules([promtool.recording_rule("sim:unused", "vector(1)")], input_series,
                        promql_expr_tests=tests, interval=f"{step}s")
    return compared


def _fixture_cases():
    for path in sorted(FIXTURES.glob("*.yaml")):
        for exporter, case in (yaml.safe_load(path.read_text()) or {}).items():
            yield path.stem, exporter, case


CASES = list(_fixture_cases())


@pytest.mark.parametrize(("metric", "exporter", "case"), CASES, ids=[f"{m}-{e}" for m, e, _ in CASES])
def test_evaluator_matches_promtool_on_adapter_fixtures(promtool, metric, exporter, case) -> None:
    source = METRICS[metric].source(exporter)
    if source.scope == "node":
        query = render_for_nodes(source, case["nodes"], "30s")
    else:
        query = render_for_pods(source, case["namespace"], case["pods"], "30s")
    series = case["input_series"]
    storage = _storage(series, STEP)
    # on samples, between samples (extrapolation), and a window reaching before the first sample
    compared = _check(promtool, {"q": query}, series, [15, 30, 37, 45, 52, 60], STEP, storage)
    assert compared > 0


EDGE_SERIES = [
    # a counter that resets inside the window (server restart), on one pod
    {"name": "nv_inference_queue_duration_us", "labels": {"namespace": "ns", "pod": "a-1", "model": "m"},
     "values": "0 40000 80000 5000 45000 85000 125000"},
    {"name": "nv_inference_request_success", "labels": {"namespace": "ns", "pod": "a-1", "model": "m"},
     "values": "0 20 40 3 23 43 63"},
    # a pod that started late: one sample, then two
    {"name": "nv_inference_queue_duration_us", "labels": {"namespace": "ns", "pod": "a-2", "model": "m"},
     "values": "_ _ _ _ _ 0 9000"},
    {"name": "nv_inference_request_success", "labels": {"namespace": "ns", "pod": "a-2", "model": "m"},
     "values": "_ _ _ _ _ 0 30"},
    # a scrape gap
    {"name": "nv_inference_queue_duration_us", "labels": {"namespace": "ns", "pod": "a-3", "model": "m"},
     "values": "100 200 _ _ 500 600 700"},
    {"name": "nv_inference_request_success", "labels": {"namespace": "ns", "pod": "a-3", "model": "m"},
     "values": "1 2 _ _ 5 6 7"},
    {"name": "DCGM_FI_DEV_GPU_UTIL", "labels": {"namespace": "ns", "pod": "a-1", "Hostname": "n"},
     "values": "10 20 30 _ _ _ 70"},
]

EDGE_QUERIES = {
    "rate": 'sum(rate(nv_inference_queue_duration_us{namespace="ns"}[30s])) by (pod)',
    "increase": 'sum(increase(nv_inference_request_success{namespace="ns"}[45s])) by (pod)',
    "delta": 'delta(nv_inference_queue_duration_us{namespace="ns",pod=~"a-1|a-3"}[30s])',
    "ratio": ('sum(increase(nv_inference_queue_duration_us{namespace="ns"}[30s])) by (pod)'
              ' / clamp_min(sum(increase(nv_inference_request_success{namespace="ns"}[30s])) by (pod), 1)'),
    "filtered": ('sum(increase(nv_inference_queue_duration_us[30s])) by (pod)'
                 ' / (sum(increase(nv_inference_request_success[30s])) by (pod) > 0)'),
    "or_idle": ('(sum by (pod) (increase(nv_inference_queue_duration_us[30s]))'
                ' / (sum by (pod) (increase(nv_inference_request_success[30s])) > 0))'
                ' or (sum by (pod) (increase(nv_inference_request_success[30s])) == 0)'),
    "and_unless": ('(max(DCGM_FI_DEV_GPU_UTIL) by (pod) and on(pod) max(nv_inference_request_success) by (pod))'
                   ' or (max(nv_inference_request_success) by (pod) unless max(DCGM_FI_DEV_GPU_UTIL) by (pod))'),
    "last": 'last_over_time(DCGM_FI_DEV_GPU_UTIL{pod="a-1"}[1m])',
    "avg_over": 'avg(avg_over_time(DCGM_FI_DEV_GPU_UTIL[1m])) by (pod)',
    "instant": 'max(DCGM_FI_DEV_GPU_UTIL) by (pod) * 2 - 1',
}


def _buckets(pod: str, per_le: dict[str, str]) -> list[dict]:
    return [{"name": "h_bucket", "labels": {"namespace": "ns", "pod": pod, "le": le}, "values": v}
            for le, v in per_le.items()]


HISTOGRAM_SERIES = [
    # ranks that fall in the first bucket (interpolated from 0), inside a middle bucket, and in +Inf (the
    # largest finite bound); le values parse as floats ("1" and "1.0" alike)
    *_buckets("h-1", {"0.05": "0+1x6", "0.25": "0+3x6", "1": "0+9x6", "5.0": "0+9x6", "+Inf": "0+10x6"}),
    # a count below the previous bucket's (a scrape racing an observation): made monotonic, never negative
    *_buckets("h-2", {"0.1": "0+4x6", "0.5": "0+3x6", "2.5": "0+8x6", "+Inf": "0+8x6"}),
    # a counter reset in every bucket at once (server restart)
    *_buckets("h-3", {"0.1": "0 2 4 1 3 5 7", "1": "0 6 12 3 9 15 21", "+Inf": "0 6 12 3 9 15 21"}),
]
HISTOGRAM_QUERIES = {
    f"q{q}": f"histogram_quantile({q}, sum by (le, pod) (rate(h_bucket[30s])))"
    for q in (0.05, 0.5, 0.9, 0.95, 1)
}


def test_histogram_quantile_matches_promtool(promtool) -> None:
    storage = _storage(HISTOGRAM_SERIES, STEP)
    compared = _check(promtool, HISTOGRAM_QUERIES, HISTOGRAM_SERIES, [30, 45, 52, 60, 75, 90], STEP, storage)
    assert compared >= 5 * 6 * 3


def test_histogram_quantile_without_inf_bucket_or_observations_is_nan() -> None:
    st = promql.Storage()
    for le, v in (("0.1", 1.0), ("1", 2.0)):
        st.add("x_bucket", {"pod": "p", "le": le}, 0.0, v)
    for le in ("0.1", "+Inf"):
        st.add("y_bucket", {"pod": "p", "le": le}, 0.0, 0.0)
    for name in ("x_bucket", "y_bucket"):
        ((labels, value),) = promql.evaluate(f"histogram_quantile(0.5, {name})", st, 0.0)
        assert labels == {"pod": "p"} and math.isnan(value)


def test_evaluator_matches_promtool_on_edge_cases(promtool) -> None:
    storage = _storage(EDGE_SERIES, STEP)
    compared = _check(promtool, EDGE_QUERIES, EDGE_SERIES, [30, 45, 52, 60, 75, 90], STEP, storage)
    assert compared > 20


RELEASE_CASES = [
    # a pod born mid-window (tests/gpuplatform/simulate/test_promql_versions.py): increase(c[1m]) at 60 s is 120 up to 2.50
    # and 100 from 2.51
    {"name": "nv_inference_request_success", "labels": {"namespace": "ns", "pod": "young", "model": "m"},
     "values": "_ _ 40 80 120 160"},
    # scrapes aligned with the evaluation: 90 in 2.x, 100 in 3.x at 60 s
    {"name": "nv_inference_request_success", "labels": {"namespace": "ns", "pod": "aligned", "model": "m"},
     "values": "10 20 30 40 100 110"},
    # bucket counts one ulp apart: histogram_quantile(1, ...) reads 1 before 2.49, 0.1 from 2.49
    *_buckets("noisy", {"0.1": "3 3", "1": "3.0000000000000004 3.0000000000000004",
                        "+Inf": "3.0000000000000004 3.0000000000000004"}),
]
RELEASE_QUERIES = {
    "increase": 'sum by (pod) (increase(nv_inference_request_success{namespace="ns"}[1m]))',
    "quantile": "histogram_quantile(1, h_bucket)",
}


def test_evaluator_matches_promtool_where_releases_differ(promtool) -> None:
    """The constructed cases of the release differences, with promtool's own release: its engine settles which
    side of each difference it is on (the other side is pinned by the hand-computed values)."""
    storage = _storage(RELEASE_CASES, STEP)
    assert _check(promtool, RELEASE_QUERIES, RELEASE_CASES, [60, 67], STEP, storage) >= 4
    young = {labels["pod"]: v for labels, v in promql.evaluate(RELEASE_QUERIES["increase"], storage, 60, (2, 50, 1))}
    assert young["young"] == pytest.approx(120.0) and young["aligned"] == pytest.approx(90.0)


def test_unsupported_constructs_are_refused() -> None:
    for query in ('sum without (pod) (x)', 'x / on(pod) group_left y', 'quantile_over_time(0.9, x[5m])',
                  'x offset 5m'):
        with pytest.raises(promql.PromQLError):
            promql.parse(query)


@pytest.mark.parametrize("stack_name", ["prod", "staging", "dev", "local"])
def test_evaluator_matches_promtool_on_simulated_series(promtool, stack_name) -> None:
    """The series a simulation of the stack wrote, and the queries it evaluated, through promtool."""
    from support import REPO

    from gpuplatform.components.stack_config import load_stack_file

    cfg = load_stack_file(REPO / "stacks" / f"Pulumi.{stack_name}.yaml")
    assert _check_simulation(promtool, cfg, stack_name) > 0


def test_evaluator_matches_promtool_on_a_simulated_histogram(promtool) -> None:
    """TGI's request-duration and SGLang's time-to-first-token buckets as the simulator writes them, and the p90 the
    adapter reads from them."""
    from support import stack_raw
    from test_metric_sources_llm_servers import llm_workload

    from gpuplatform.components.validation import load

    for server, metric, target in [("tgi", "tgi_request_latency_p90_ms", 1500), ("sglang", "sglang_ttft_p90_ms", 900)]:
        raw = stack_raw("prod")
        llm_workload(server, metric)(raw)
        raw["workloads"][0]["autoscaling"]["metrics"][0]["target"] = target
        raw["workloads"][0]["serviceModel"].update({"concurrency": 8, "firstTokenMs": 150})
        assert _check_simulation(promtool, load(raw), "prod") > 0, metric


def _check_simulation(promtool, cfg, stack_name: str) -> int:
    from gpuplatform.simulate import engine
    from gpuplatform.simulate.traces import built_in

    w = next(x for x in cfg.workloads if x.autoscaling.autoscaler == "hpa")
    plan = engine.service_plan(cfg, w)
    trace = built_in("step", plan.rps_at_target, plan.rps_at_target * w.autoscaling.max_replicas, 900)
    captured = {}
    real_evaluate = promql.evaluate

    def spy(query, storage, t, *args):
        captured.setdefault("storage", storage)
        captured.setdefault("queries", {})[query] = t
        return real_evaluate(query, storage, t, *args)

    promql.evaluate = spy
    try:
        engine.simulate(cfg, stack_name, w.name, trace)
    finally:
        promql.evaluate = real_evaluate
    storage: promql.Storage = captured["storage"]
    scrape = int(engine.duration_seconds(cfg.monitoring.intervals.scrape))
    # the samples sit on the scrape phase: shift them so promtool's series start at 0
    first = min(s.times[0] for n in storage.names() for s in storage.select(n))
    offset = first
    series = []
    for name in sorted(storage.names()):
        for s in storage.select(name):
            slots = {round((ts - offset) / scrape): v for ts, v in zip(s.times, s.values)}
            last = max(slots)
            values = " ".join(_fmt(slots.get(i)) for i in range(last + 1))
            labels = {k: v for k, v in s.labels.items() if k != "__name__"}
            series.append({"name": name, "labels": labels, "values": values})
    queries = sorted(captured["queries"])
    # the queries of the last syncs name every pod of the run's end; check a spread of them
    picks = {f"q{i}": q for i, q in enumerate(queries[-3:] + queries[:2])}
    times = [t - offset for t in (300, 330, 347, 420, 600, 890) if t - offset > 0]
    return _check(promtool, picks, series, [round(t) for t in times], scrape, storage, offset)


def _fmt(v) -> str:
    if v is None:
        return "_"
    if math.isnan(v):
        return "stale"  # promtool's notation for a stale marker (the simulator writes no other NaN)
    return f"{v:.17g}"
