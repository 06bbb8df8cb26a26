"""`gpuplatform plan` speaks Pulumi's language (``+`` create, the tree drawn as ``pulumi preview`` draws it) and
says what each pool runs on and what it costs to keep at its least and most nodes."""
import json
import re

import pytest

from gpuplatform.catalogs.gpus import INSTANCE_TYPES
from gpuplatform.catalogs.prices import HOURS_PER_MONTH, PRICES, list_price, unpriced_reason
from gpuplatform.cli import main
from support import stack_raw


def plan_text(capsys, *args) -> str:
    assert main(["plan", *args]) == 0
    return capsys.readouterr().out


def tree_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(("+ ", "- ", "~ "))]


def test_every_resource_is_a_create_drawn_as_a_tree(capsys):
    lines = tree_lines(plan_text(capsys, "--stack", "prod"))
    assert lines and all(line.startswith("+ ") for line in lines)
    assert lines[0].startswith("+ gpu  (gpuplatform:index:GpuPlatform)")
    # a pool component among later siblings: a bar continues beside its only child, which closes with └─
    assert "+ ├─ gpu-a100-mig  (gpuplatform:index:GpuNodePool)" in lines
    assert "+ │  └─ gpu-a100-mig-pool  (alicloud:cs/nodePool:NodePool) [protect]" in lines
    # every child sits one guide deeper than its parent, and the last child of each parent closes with └─
    depth = [len(re.match(r"\+ ((?:[│ ]  )*(?:[├└]─ )?)", line).group(1)) // 3 for line in lines]
    assert depth[0] == 0 and all(b <= a + 1 for a, b in zip(depth, depth[1:]))
    assert lines[-1].startswith("+    └─ ")


def test_prod_shows_its_pool_with_instance_type_region_nodes_gpus_and_cost(capsys):
    text = plan_text(capsys, "--stack", "prod")
    raw = stack_raw("prod")
    pool = raw["nodePools"][0]
    [instance_type] = pool["instanceTypes"]
    price = list_price(instance_type)
    gpus = INSTANCE_TYPES[instance_type].gpus
    section = text.split("Node pools\n", 1)[1].split("\n\n", 1)[0]
    row = next(line for line in section.splitlines() if line.startswith(pool["name"]))
    assert instance_type in row and raw["cluster"]["region"] in row
    assert f"{pool['minNodes']}-{pool['maxNodes']}" in row
    assert f"{pool['minNodes'] * gpus}-{pool['maxNodes'] * gpus} x A100-40GB" in row
    hourly = f"${pool['minNodes'] * price.per_hour:,.2f}-${pool['maxNodes'] * price.per_hour:,.2f}"
    assert hourly in row
    assert f"${pool['minNodes'] * price.per_hour * HOURS_PER_MONTH:,.0f}" in row
    assert row.rstrip().endswith("estimate" if price.basis == "estimate" else "list (catalog source)")
    assert price.source in section and price.retrieved in section and price.region in section


def test_plan_json_carries_the_pool_summary(capsys, tmp_path):
    assert main(["plan", "--stack", "prod", "--format", "json", "--out", str(tmp_path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    written = json.loads((tmp_path / "plan.json").read_text())
    assert doc["pools"] == written["pools"]
    system, pool = doc["pools"]
    assert (system["role"], system["autoscaled"], system["taints"], system["minNodes"]) == ("system", False, [], 2)
    raw = stack_raw("prod")["nodePools"][0]
    assert (pool["minNodes"], pool["maxNodes"], pool["instanceTypes"]) == \
        (raw["minNodes"], raw["maxNodes"], raw["instanceTypes"])
    price = list_price(raw["instanceTypes"][0])
    cost = pool["cost"]
    assert cost["known"] and cost["hourlyAtMax"] == round(raw["maxNodes"] * price.per_hour, 2)
    assert cost["monthlyAtMin"] == round(raw["minNodes"] * price.per_hour * HOURS_PER_MONTH, 2)
    assert cost["prices"][0]["source"] == price.source


def test_a_pool_without_a_list_price_says_so_instead_of_guessing(capsys, tmp_path):
    from gpuplatform.plan import pool_rows
    from gpuplatform.components.validation import load

    unpriced = next(t for t in INSTANCE_TYPES if t not in PRICES and t.startswith("ecs.gn6i"))
    raw = stack_raw("dev")
    raw["nodePools"][0]["instanceTypes"] = [unpriced]
    [row] = [r for r in pool_rows(load(raw)) if r["role"] == "gpu"]
    assert row["cost"] == {"known": False, "reason": unpriced_reason([unpriced])}
    assert unpriced in row["cost"]["reason"] and "nodePools[].price" in row["cost"]["reason"]


def test_a_stated_pool_price_wins_over_the_catalog_and_says_so(capsys, tmp_path):
    from gpuplatform.plan import pool_rows, pools_text
    from gpuplatform.components.validation import load

    raw = stack_raw("prod")
    pool = raw["nodePools"][0]
    catalog = list_price(pool["instanceTypes"][0])
    pool["price"] = {"perHour": 17.25, "source": "enterprise agreement EA-2026-03, cn-shanghai"}
    [row] = [r for r in pool_rows(load(raw)) if r["role"] == "gpu"]
    cost = row["cost"]
    assert cost["basis"] == "stated in the stack: enterprise agreement EA-2026-03, cn-shanghai"
    assert cost["hourlyAtMin"] == round(pool["minNodes"] * 17.25, 2) != round(pool["minNodes"] * catalog.per_hour, 2)
    assert cost["monthlyAtMax"] == round(pool["maxNodes"] * 17.25 * HOURS_PER_MONTH, 2)
    assert not cost["estimate"] and cost["prices"] == [{"instanceTypes": pool["instanceTypes"], "perHour": 17.25,
                                                        "basis": "stated", "source": pool["price"]["source"]}]
    text = pools_text([row])
    line = next(x for x in text.splitlines() if x.startswith(pool["name"]))
    assert line.rstrip().endswith("stated in the stack") and catalog.source not in text
    assert f"{pool['name']}: $17.25/h per node, stated in the stack: enterprise agreement EA-2026-03" in text


def test_a_stated_price_makes_an_unpriced_pool_known():
    from gpuplatform.plan import pool_rows
    from gpuplatform.components.validation import load

    raw = stack_raw("dev")
    raw["nodePools"][0]["price"] = {"perHour": 0.9, "currency": "USD", "source": "quote Q-17"}
    [row] = [r for r in pool_rows(load(raw)) if r["role"] == "gpu"]
    assert row["cost"]["known"] and row["cost"]["hourlyAtMax"] == round(row["maxNodes"] * 0.9, 2)


@pytest.mark.parametrize("price, path, says", [
    ({"perHour": 0, "source": "quote"}, "price.perHour", "greater than 0"),
    ({"perHour": -2.5, "source": "quote"}, "price.perHour", "greater than 0"),
    ({"perHour": 1.0, "currency": "CNY", "source": "quote"}, "price.currency", "'USD'"),
    ({"perHour": 1.0, "source": "   "}, "price.source", "is empty"),
    ({"perHour": 1.0}, "price.source", "required"),
])
def test_a_bad_pool_price_is_refused_naming_its_path(price, path, says):
    from gpuplatform.components.errors import ConfigError
    from gpuplatform.components.validation import load

    raw = stack_raw("dev")
    raw["nodePools"][0]["price"] = price
    with pytest.raises(ConfigError) as err:
        load(raw)
    [issue] = err.value.issues
    assert issue.path.endswith(f"nodePools[0].{path}") and says in issue.message


def test_an_existing_cluster_buys_no_nodes(capsys):
    from gpuplatform.plan import pool_rows
    from gpuplatform.components.validation import load

    assert all(not r["cost"]["known"] and "exist already" in r["cost"]["reason"]
               for r in pool_rows(load(stack_raw("local"))))


@pytest.mark.parametrize("price", list(PRICES.values()), ids=list(PRICES))
def test_every_price_names_its_basis_source_region_and_date(price):
    assert price.instance_type in INSTANCE_TYPES
    assert price.basis in ("list", "estimate") and price.per_hour > 0
    assert price.source.startswith("https://") and price.region
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", price.retrieved)
    assert price.basis == "list" or price.method, "an estimate says how it was derived"


def test_a_project_plan_has_the_pool_summary_too(tmp_path, capsys):
    from support import REPO

    assert main(["plan", "--project", str(REPO / "examples" / "reuse"), "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert [row["pool"] for row in plan["pools"]] == [row["pool"] for row in plan["capacity"]]
    section = text.split("Node pools\n", 1)[1].split("\n\n", 1)[0]
    assert all(row["pool"] in section for row in plan["pools"])
    assert all(line.startswith("+ ") for line in tree_lines(text))
    # each composed InferenceService has its NetworkPolicy as a child, in the workload's namespace
    services = {r["name"] for r in plan["resources"] if r["type"] == "gpuplatform:index:InferenceService"}
    policies = [r for r in plan["resources"] if r["type"] == "kubernetes:networking.k8s.io/v1:NetworkPolicy"]
    assert services and sorted(r["parent"] for r in policies) == sorted(services)
    assert all(r["inputs"]["spec"]["policyTypes"] == ["Ingress"] for r in policies)


def test_the_plan_says_how_long_each_replica_may_take_to_start_and_why(capsys):
    from gpuplatform.components.model_startup import load_estimate
    from gpuplatform.components.validation import load
    from test_scenarios import EXAMPLES, example_raw

    config = EXAMPLES["005"]
    assert main(["plan", "--config", str(config), "--format", "json"]) == 0
    [row] = json.loads(capsys.readouterr().out)["startup"]
    est = load_estimate(load(example_raw("005")).workloads[0])
    assert row["expectedLoadSeconds"] == round(est.expected_seconds)
    assert row["startupProbeSeconds"] == est.sized_budget_seconds and row["startupProbeBasis"] == "sized from model"
    assert row["readiness"] == "HTTP /health, 5s timeout" and row["weights"]["sizeGib"] == est.size_gib
    text = plan_text(capsys, "--config", str(config))
    assert f"{est.sized_budget_seconds}s (sized from model)" in text
    # a workload without a model keeps the generated default and says so
    from gpuplatform.plan import startup_rows, startup_text

    dev = startup_text(startup_rows(load(stack_raw("dev"))))
    assert "600s (default, no model)" in dev and "unknown (no model)" in dev


def test_two_components_of_one_name_keep_their_own_children(tmp_path):
    """A consumer names its cluster and its namespace alike: a GpuCluster and a WorkloadNamespace both called
    ``ml``. Each resource is one row, under the parent whose URN it registered with, in the tree, in plan.json
    and in the JSON tree."""
    from gpuplatform.components import GpuCluster, GpuMonitoring, GpuNodePool, InferenceService, WorkloadNamespace
    from gpuplatform.plan import ordered, tree_text, write_records
    from gpuplatform.synth import synthesize

    def program():
        cluster = GpuCluster("ml", {"cluster": {"kind": "kubeconfig", "kubernetesVersion": "1.33"}})
        pool = GpuNodePool("t4", {"cluster": cluster, "pool": {"name": "t4", "gpuModel": "T4", "gpusPerNode": 1,
                                                               "maxNodes": 2}})
        monitoring = GpuMonitoring("monitoring", {"cluster": cluster, "monitoring": {}})
        namespace = WorkloadNamespace("ml", {"cluster": cluster, "name": "ml"})
        InferenceService("svc", {"workload": {
            "name": "svc", "image": "registry.example.com/svc:1.0", "gpu": {"count": 1},
            "ports": [{"name": "http", "containerPort": 8080}],
            "autoscaling": {"maxReplicas": 2, "metrics": [{"metric": "gpu_util", "target": 60}]}},
            "node_pool": pool, "monitoring": monitoring, "namespace": namespace})

    records = synthesize({}, program)
    named_ml = {r.type for r in records if r.name == "ml"}
    assert named_ml == {"gpuplatform:index:GpuCluster", "gpuplatform:index:WorkloadNamespace"}
    rows = ordered(records)
    assert len(rows) == len(records) == len({id(r) for _, r in rows})
    assert len(tree_text(records).splitlines()) == len(records)
    for i, (depth, r) in enumerate(rows):
        parent = next((p for d, p in reversed(rows[:i]) if d == depth - 1), None) if depth else None
        assert (parent.urn if parent else "") == (r.parent_urn if r.parent else ""), r.name
    namespace_children = {r.type for _, r in rows if r.parent_urn.endswith("WorkloadNamespace::ml")}
    assert namespace_children == {"kubernetes:core/v1:Namespace"}
    write_records(tmp_path, "offline", records, set())
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert len(plan["resources"]) == plan["resourceCount"] == len(records)
    urns = {row["urn"] for row in plan["resources"]}
    assert all(row["parentUrn"] in urns for row in plan["resources"] if row["parent"])


def test_plan_prints_each_slo_with_its_target_and_verdicts(capsys):
    text = plan_text(capsys, "--stack", "prod")
    section = text.split("SLOs (", 1)[1]
    row = next(line for line in section.splitlines() if line.startswith("flower"))
    assert "triton_queue_time_us < 5000 in 99% of minutes over 28d" in row
    assert "triton_queue_time_us 3500 (stated)" in row
    assert "met (0/120 min" in row  # the 2-hour diurnal trace: every minute within the SLO
    assert main(["plan", "--stack", "prod", "--format", "json"]) == 0
    (slo,) = json.loads(capsys.readouterr().out)["slo"]
    assert set(slo["verdicts"]) == {"step", "spike", "diurnal"}
    diurnal = slo["verdicts"]["diurnal"]
    assert diurnal["met"] and diurnal["minutes"] == 120
    assert diurnal["readyReplicaHours"] >= diurnal["lowerBoundReadyReplicaHours"]
    assert not slo["verdicts"]["step"]["met"]  # a 3x step outruns the 5-minute start-up of a replica
