"""How a Prometheus query_range export is read as a load trace (gpuplatform.simulate.traces.replay_export)."""
from __future__ import annotations

import json

import pytest

from gpuplatform.catalogs.arrivals import ARRIVALS, kind_of
from gpuplatform.components.errors import ConfigError
from gpuplatform.simulate.traces import from_prometheus_json, replay_export

T0 = 1_700_000_000


def matrix(*series) -> dict:
    return {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": metric, "values": [[T0 + t, str(v)] for t, v in points]} for metric, points in series]}}


def triton(name: str, pod: str) -> dict:
    return {"__name__": name, "namespace": "ns", "pod": pod, "model": "m"}


def test_arrivals_are_completions_plus_the_queue_change_not_the_capped_completions() -> None:
    # 10 s steps: 100 arrive per step; the pod completes 60 and its queue grows by 40
    done = [(10 * k, 60 * k) for k in range(5)]
    pending = [(10 * k, 40 * k) for k in range(5)]
    replay = replay_export(matrix((triton("nv_inference_request_success", "a"), done),
                                  (triton("nv_inference_pending_request_count", "a"), pending)))
    assert replay.step == 10 and replay.rates == (10.0, 10.0, 10.0, 10.0)
    assert replay.times == (0, 10, 20, 30) and replay.reading == "completions + queue change"


def test_a_counter_reset_counts_what_the_restarted_server_counted() -> None:
    replay = replay_export(matrix((triton("nv_inference_request_success", "a"), [(0, 500), (10, 600), (20, 30)])))
    assert replay.rates == (10.0, 3.0)


def test_a_series_missing_at_a_grid_time_is_no_traffic_not_the_previous_value() -> None:
    # pod b goes stale after 10 s and comes back at 40 s with a new counter: nothing is held in between
    a = [(t, 10 * t) for t in range(0, 60, 10)]
    b = [(0, 0), (10, 100), (40, 50), (50, 150)]
    replay = replay_export(matrix((triton("nv_inference_request_success", "a"), a),
                                  (triton("nv_inference_request_success", "b"), b)))
    assert replay.per_pod["b"] == (10.0, 0.0, 0.0, 5.0, 10.0)
    assert replay.rates == (20.0, 10.0, 10.0, 15.0, 20.0)


def test_steps_without_any_series_replay_as_zero_and_are_reported(tmp_path) -> None:
    doc = matrix(({"job": "x"}, [(0, 26.1), (30, 26.1), (120, 5.0)]))
    path = tmp_path / "gap.json"
    path.write_text(json.dumps(doc))
    trace = from_prometheus_json(str(path))
    assert [trace.demand(t) for t in (0, 30, 60, 90, 120)] == [26.1, 26.1, 0.0, 0.0, 5.0]
    assert any("2 of 5 steps" in n for n in trace.notes)


def test_nan_and_inf_points_are_skipped_and_counted() -> None:
    doc = matrix(({"job": "x"}, [(0, 1.0), (10, "NaN"), (20, "+Inf"), (30, 4.0)]))
    for s in doc["data"]["result"]:
        s["values"] = [[ts, v.replace("nan", "NaN").replace("inf", "Inf")] for ts, v in s["values"]]
    replay = replay_export(doc)
    assert replay.rates == (1.0, 0.0, 0.0, 4.0)
    assert any(n.startswith("2 NaN/Inf point(s) skipped") for n in replay.notes)


def test_a_queue_time_exported_as_a_rate_is_refused_saying_what_it_read() -> None:
    doc = matrix(({"pod": "flower-1"}, [(0, 1200.0), (30, 4.3e6)]))
    with pytest.raises(ConfigError, match=r"reads 4\.3e\+06 .*not a request rate"):
        replay_export(doc, "queue.json")


def test_a_counter_summed_without_rate_is_refused() -> None:
    doc = matrix(({}, [(30 * k, 52_000 + 17 * k) for k in range(30)]))
    with pytest.raises(ConfigError, match="a counter's total"):
        replay_export(doc)


def test_a_series_that_counts_no_requests_is_refused_by_name() -> None:
    doc = matrix((triton("nv_inference_queue_duration_us", "a"), [(0, 1), (10, 2)]))
    with pytest.raises(ConfigError, match=r"nv_inference_queue_duration_us\{.*not a series that counts requests"):
        replay_export(doc)
    both = matrix((triton("nv_inference_request_success", "a"), [(0, 1), (10, 2)]),
                  ({"__name__": "nginx_ingress_controller_requests", "ingress": "a"}, [(0, 1), (10, 2)]))
    with pytest.raises(ConfigError, match="ingress-nginx and triton"):
        replay_export(both)


def test_histogram_buckets_and_negative_values_are_refused() -> None:
    with pytest.raises(ConfigError, match="histogram bucket"):
        replay_export(matrix(({"le": "0.5"}, [(0, 1), (10, 2)])))
    with pytest.raises(ConfigError, match="never negative"):
        replay_export(matrix(({}, [(0, 1), (10, -2)])))


def test_points_off_the_grid_are_refused() -> None:
    with pytest.raises(ConfigError, match="not on the grid"):
        replay_export(matrix(({}, [(0, 1), (10, 2), (25, 3)])))


def test_every_export_query_names_only_series_the_reader_accepts() -> None:
    for source, recipe in ARRIVALS.items():
        query = recipe.export_query("ns", "w")
        assert query.startswith('{__name__=~"') and "sum" not in query and "rate" not in query
        for name in recipe.names:
            assert kind_of(name)[0] == source
