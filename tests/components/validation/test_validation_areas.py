"""``validate(areas=...)``: the rules of one component alone, in the order the whole run reports them."""
import pytest

from gpuplatform.components.validation import AREAS, RULES, parse, validate
from support import stack_raw


def _broken():
    raw = stack_raw("staging")
    raw["nodePools"][0]["minNodes"] = 12
    raw["workloads"][0]["image"] = "bert:latest"
    raw["monitoring"]["intervals"] = {"ruleWindow": "10s", "scrape": "30s"}
    return parse(raw)


def test_every_rule_belongs_to_exactly_one_area():
    grouped = [rule for rules in AREAS.values() for rule in rules]
    assert sorted(grouped, key=id) == sorted(RULES, key=id)
    assert len(set(grouped)) == len(grouped)


def test_areas_select_their_rules_and_keep_the_order():
    cfg = _broken()
    everything = validate(cfg)
    assert validate(cfg, areas=AREAS) == everything
    pools = validate(cfg, areas=["pools"])
    workloads = validate(cfg, areas=["workloads"])
    assert [i.path for i in pools] == ["nodePools[0].minNodes"]
    assert [i.path for i in workloads] == ["workloads[0].image"]
    assert [i.path for i in validate(cfg, areas=["monitoring"])] == ["monitoring.intervals.ruleWindow",
                                                                    "monitoring.intervals.exporterCollect"]
    both = validate(cfg, areas=["workloads", "pools"])
    assert both == [i for i in everything if i in pools + workloads]


def test_unknown_area_is_refused():
    with pytest.raises(ValueError, match="'pool'.*allowed: cluster"):
        validate(_broken(), areas=["pool"])
