"""Every catalog metric source, evaluated by Prometheus as the adapter would query it for an HPA.

For each (metric, exporter) source in ``catalogs.metrics.METRICS`` the fixture
``tests/fixtures/series/<metric>.yaml`` key ``<exporter>`` holds exporter-shaped series. The test renders
the adapter's metricsQuery for the HPA's pods (or nodes) exactly as prometheus-adapter does and asserts,
through ``promtool test rules``, the value per pod an HPA would read, one series per pod labelled only with
the resource label. The fixtures include pods the HPA does not ask for (a name the pod regex must not
prefix-match, another deployment, the same pod name in another namespace) and GPUs without a pod, so a
missing or wrong label matcher changes the result.

Fixture keys:

* ``namespace`` + ``pods`` (pod-scoped sources) or ``nodes`` (node-scoped): the objects the HPA asks for;
* ``expect``: object name -> value the adapter must return for it, for every object asked for (compared to a
  thousandth of the metric's unit);
* ``discovered``: how many fixture series the rule's seriesQuery selects;
* ``input_series``: ``name``, ``labels`` and ``values`` (a quoted string in promtool's expanding notation,
  samples 15 s apart).

A new catalog source without a fixture fails here rather than going untested.
"""
from __future__ import annotations

import re

import pytest
import yaml

from gpuplatform.catalogs.metrics import METRICS, MetricSource
from gpuplatform.components.adapter_rules import go_quote, render_for_nodes, render_for_pods, rule
from support import FIXTURES_DIR

FIXTURES = FIXTURES_DIR / "series"
WINDOW = "30s"
# Late enough that a 30s window lies wholly inside the fixture's samples (0s..60s).
EVAL_TIME = "1m"

SOURCES = [(m.name, s) for m in METRICS.values() for s in m.sources]


def _load_fixtures() -> dict[tuple[str, str], dict]:
    out = {}
    for path in sorted(FIXTURES.glob("*.yaml")):
        for exporter, case in (yaml.safe_load(path.read_text()) or {}).items():
            out[(path.stem, exporter)] = case
    return out


CASES = _load_fixtures()


def _case(metric: str, source: MetricSource) -> dict:
    case = CASES.get((metric, source.exporter))
    if case is None:
        pytest.fail(f"no synthetic series for {metric} from {source.exporter}: add key {source.exporter!r} "
                    f"to tests/fixtures/series/{metric}.yaml", pytrace=False)
    return case


def _requests(source: MetricSource, case: dict) -> dict[str, tuple[str, list[str]]]:
    """Rendered queries by case name: every object the HPA lists, and a single object (``=`` matcher)."""
    if source.scope == "node":
        nodes = case["nodes"]
        return {"hpa": (render_for_nodes(source, nodes, WINDOW), nodes),
                "one": (render_for_nodes(source, nodes[:1], WINDOW), nodes[:1])}
    ns, pods = case["namespace"], case["pods"]
    return {"hpa": (render_for_pods(source, ns, pods, WINDOW), pods),
            "one": (render_for_pods(source, ns, pods[:1], WINDOW), pods[:1])}


def _adapter_template(metrics_query: str, series: str, matchers: str, group_by: str) -> str:
    # Kept apart from render_metrics_query so a renderer that drifts from the rule text it serves is caught.
    return (metrics_query.replace("<<.Series>>", series).replace("<<.LabelMatchers>>", matchers)
            .replace("<<.GroupBy>>", group_by))


@pytest.mark.parametrize(("metric", "source"), SOURCES, ids=[f"{m}-{s.exporter}" for m, s in SOURCES])
def test_rendered_query_returns_hpa_values(promtool, metric: str, source: MetricSource) -> None:
    case = _case(metric, source)
    served = rule(source, WINDOW)
    assert served["name"]["as"] == source.api_name
    assert re.search(served["name"]["matches"], source.series), served["name"]
    group_by = source.labels.node if source.scope == "node" else source.labels.pod

    requests = _requests(source, case)
    missing = [o for _, objects in requests.values() for o in objects if o not in case["expect"]]
    assert not missing, f"fixture lacks expected values for {missing}"

    # The query tested must be the one the rule ships, not just the renderer's idea of it.
    hpa_query, hpa_objects = requests["hpa"]
    if source.scope == "node":
        matchers = f"{source.labels.node}=~{go_quote('|'.join(hpa_objects))}"
    else:
        matchers = (f"{source.labels.namespace}={go_quote(case['namespace'])},"
                    f"{source.labels.pod}=~{go_quote('|'.join(hpa_objects))}")
    assert _adapter_template(served["metricsQuery"], source.series, matchers, group_by) == hpa_query

    api = source.api_name
    # to a thousandth of the unit: histogram quantiles interpolate over float rates (75.00000000000003 for 75),
    # and promtool compares samples exactly
    rules = [promtool.recording_rule(f"test:{api}:{name}", f"round({query}, 0.001)")
             for name, (query, _) in requests.items()]
    rules.append(promtool.recording_rule(f"test:{api}:discovery", f"count({served['seriesQuery']})"))
    tests = [
        promtool.expr_test(
            f"test:{api}:{name}", EVAL_TIME,
            [(promtool.selector(f"test:{api}:{name}", {group_by: o}), case["expect"][o]) for o in objects])
        for name, (_, objects) in requests.items()
    ]
    tests.append(promtool.expr_test(f"test:{api}:discovery", EVAL_TIME,
                                    [(f"test:{api}:discovery", case["discovered"])]))
    # YAML reads an unquoted 0x4 as the integer 4, so values must be quoted strings.
    unquoted = [s["values"] for s in case["input_series"] if not isinstance(s["values"], str)]
    assert not unquoted, f"quote these fixture values: {unquoted}"
    series = [{"series": promtool.selector(s["name"], s["labels"]), "values": s["values"]}
              for s in case["input_series"]]
    promtool.test_rules(rules, series, promql_expr_tests=tests)


def test_every_fixture_belongs_to_a_catalog_source() -> None:
    known = {(m, s.exporter) for m, s in SOURCES}
    stale = sorted(set(CASES) - known)
    assert not stale, f"fixtures for sources the catalog no longer has: {stale}"
