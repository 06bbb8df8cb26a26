"""``gpuplatform simulate --compare-pools``: one workload on candidate pools, ranked by cost per day with the SLO
met (gpuplatform/simulate/compare.py), on a two-pool stack fixture and a candidates file."""
import json

import pytest
import yaml

from support import FIXTURES_DIR, cli
from gpuplatform.components.errors import ConfigError
from gpuplatform.components.stack_config import namespace_from_stack_file
from gpuplatform.components.validation import load
from gpuplatform.simulate.compare import SECONDS_PER_DAY, compare, slo_level_and_budget
from gpuplatform.simulate.report import resolve_trace

FIXTURES = FIXTURES_DIR / "compare"
STACK = FIXTURES / "Pulumi.two-pools.yaml"
CANDIDATES = FIXTURES / "candidates.yaml"


def two_pools(**changes):
    raw = namespace_from_stack_file(STACK)
    for i, price in changes.items():
        raw["nodePools"][int(i[1:])]["price"]["perHour"] = price
    return load(raw)


@pytest.fixture(scope="module")
def ranked():
    """The candidates file's three pools at a level every one keeps (shared: one run of each candidate)."""
    cfg = two_pools()
    trace = resolve_trace(cfg, "classifier", "diurnal", "1h")
    return cfg, trace, compare(cfg, "test", "classifier", trace, str(CANDIDATES), slo=0.75)


def test_cost_per_day_is_bound_replica_hours_at_the_replica_price_scaled_to_a_day(ranked):
    """Replicas pulling and loading hold their GPU units as much as serving ones: every bound replica is paid."""
    cfg, trace, (outcomes, _, _) = ranked
    prices = {p.name: p.price.per_hour for p in cfg.node_pools} | {"a100-mig-3g": 24.0}
    assert sorted(o.pool for o in outcomes) == ["a10", "a100-mig-3g", "l20"]
    for o in outcomes:
        s = o.result.summary()
        length = trace.times[-1]
        per_replica_hour = prices[o.pool] / o.replicas_per_node
        assert o.cost_per_day == round(s["replica_hours"] * per_replica_hour * SECONDS_PER_DAY / length, 2)
        assert s["replica_hours"] > s["ready_replica_hours"]
        assert o.node_cost_per_day == round(s["node_hours"] * prices[o.pool] * SECONDS_PER_DAY / length, 2)
    mig = next(o for o in outcomes if o.pool == "a100-mig-3g")
    # ebmgn7.26xlarge: 8 A100-40GB, two 3g.20gb instances each
    assert mig.replicas_per_node == 16 and mig.gpu == "1 x nvidia.com/mig-3g.20gb"


def test_candidates_are_ranked_slo_first_then_by_cost_per_day(ranked):
    _, _, (outcomes, basis, budget) = ranked
    assert basis == "--slo 0.75" and budget == 0.0
    met = [o for o in outcomes if o.slo_met]
    assert met and outcomes[:len(met)] == met
    assert [o.cost_per_day for o in met] == sorted(o.cost_per_day for o in met)


def test_each_candidate_runs_its_own_service_model(ranked):
    _, _, (outcomes, _, _) = ranked
    by_pool = {o.pool: o for o in outcomes}
    assert by_pool["l20"].service_model.requests_per_second_at_target == 20
    assert not by_pool["l20"].own_service_model
    # twice the requests per replica: fewer ready replica-hours for the same trace
    assert by_pool["l20"].result.summary()["ready_replica_hours"] < by_pool["a10"].result.summary()[
        "ready_replica_hours"]


def test_the_ranking_follows_the_prices():
    cfg = two_pools(p1=0.6)  # l20 cheaper than a10 per node
    trace = resolve_trace(cfg, "classifier", "diurnal", "1h")
    cheap, _, _ = compare(cfg, "test", "classifier", trace, "a10,l20", slo=0.75)
    assert [o.pool for o in cheap] == ["l20", "a10"]
    cfg = two_pools(p1=2.4)
    dear, _, _ = compare(cfg, "test", "classifier", trace, "a10,l20", slo=0.75)
    assert [o.pool for o in dear] == ["a10", "l20"] and all(o.own_service_model for o in dear)


def test_a_level_no_candidate_keeps_ranks_none_as_met():
    cfg = two_pools()
    trace = resolve_trace(cfg, "classifier", "spike", "30m")
    outcomes, basis, _ = compare(cfg, "test", "classifier", trace, "a10,l20")
    assert basis.startswith("the workload's target 0.6")
    assert all(o.over_level_s > 0 and o.slo_met is False for o in outcomes)


def test_the_slo_level_and_budget_come_from_the_workload_slo_when_it_has_one():
    cfg = two_pools()
    w = cfg.workloads[0]

    class Objective:
        metric, below = "gpu_engine_active", 0.8

    class Slo:
        objectives, compliance = [Objective()], 99.0

    # the SLO is read defensively (workloads[].slo may not exist in this version): a stand-in object with its shape
    slo_cfg = cfg.model_copy(update={"workloads": [_with_slo(w, Slo())]})
    assert slo_level_and_budget(slo_cfg, "classifier", None)[:2] == (0.8, pytest.approx(0.01))
    assert slo_level_and_budget(slo_cfg, "classifier", 0.7)[:2] == (0.7, pytest.approx(0.01))
    assert slo_level_and_budget(cfg, "classifier", None)[:2] == (0.6, 0.0)


def _with_slo(w, slo):
    class WithSlo:
        def __getattr__(self, name):
            return slo if name == "slo" else getattr(w, name)
    return WithSlo()


def test_a_candidate_the_stack_refuses_is_listed_with_the_refusal_not_run(tmp_path):
    path = tmp_path / "candidates.yaml"
    path.write_text(yaml.safe_dump({"candidates": [
        {"nodePool": "a10"},
        {"nodePool": {"name": "t4", "instanceTypes": ["ecs.gn6i-c4g1.xlarge"], "maxNodes": 1}}]}))
    cfg = two_pools()
    trace = resolve_trace(cfg, "classifier", "diurnal", "1h")
    outcomes, _, _ = compare(cfg, "test", "classifier", trace, str(path), slo=0.75)
    assert [o.pool for o in outcomes] == ["a10", "t4"]
    t4 = outcomes[1]
    assert t4.result is None and any("maxReplicas" in why for why in t4.refused), t4.refused


@pytest.mark.parametrize("arg, says", [
    ("a10,h100", "'h100': not a pool of the stack; pools: a10, l20"),
    ("missing.yaml", "no such file"),
])
def test_bad_candidates_are_refused_naming_the_flag(arg, says):
    cfg = two_pools()
    trace = resolve_trace(cfg, "classifier", "diurnal", "1h")
    with pytest.raises(ConfigError) as err:
        compare(cfg, "test", "classifier", trace, arg)
    assert err.value.issues[0].path == "--compare-pools" and says in err.value.issues[0].message


def test_a_bad_candidates_file_names_the_key(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"candidates": [{"nodePool": "a10", "serviceModel": {"requestsPerSecond": 3}}]}))
    cfg = two_pools()
    trace = resolve_trace(cfg, "classifier", "diurnal", "1h")
    with pytest.raises(ConfigError) as err:
        compare(cfg, "test", "classifier", trace, str(path))
    assert "candidates[0].serviceModel.requestsPerSecond" in err.value.issues[0].message


def test_the_cli_prints_the_ranking_as_a_table_and_json():
    args = ["simulate", "--config", str(STACK), "--workload", "classifier", "--trace", "diurnal", "--duration", "1h",
            "--compare-pools", str(CANDIDATES), "--slo", "0.75"]
    code, out, _ = cli(*args, "--format", "json")
    doc = json.loads(out)
    assert code == 0 and [r["pool"] for r in doc["ranking"]][0] in ("a10", "l20", "a100-mig-3g")
    assert all(r["priceBasis"] == "stated in the stack: illustrative test figure" for r in doc["ranking"])
    code, out, _ = cli(*args)
    assert code == 0 and "SLO: --slo 0.75" in out
    rows = [line.split() for line in out.splitlines() if line[:1].isdigit()]
    assert [r[1] for r in rows] == [r["pool"] for r in doc["ranking"]]
    assert all(f"${r['costPerDay']:,.2f}" in out for r in doc["ranking"])
    code, _, err = cli(*args, "--tune")
    assert code != 0 and "--compare-pools" in err
