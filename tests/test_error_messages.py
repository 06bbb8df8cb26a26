"""Errors stay short at any scale and speak of what the user wrote, in the user's words."""
import copy

import pytest

from gpuplatform.components.errors import FULL_ERRORS_ENV, ConfigError, counted, listing
from gpuplatform.components.validation import load
from support import stack_raw

MANY = 500


def many_workloads(n: int, max_nodes: int) -> dict:
    """prod with n copies of its workload, each with its own ingress hosts, on a pool of max_nodes nodes."""
    raw = stack_raw("prod")
    base = raw["workloads"][0]
    ingress = base["exposure"]["ingress"]
    raw["workloads"] = [
        dict(copy.deepcopy(base), name=f"svc-{i}", exposure=dict(base["exposure"], ingress=dict(
            ingress, routes=[dict(r, host=f"svc-{i}.{r['host']}") for r in ingress["routes"]])))
        for i in range(n)]
    raw["nodePools"][0]["maxNodes"] = max_nodes
    return raw


def capacity_error(raw) -> str:
    with pytest.raises(ConfigError) as exc:
        load(raw)
    return exc.value.render()


def test_capacity_error_for_hundreds_of_workloads_is_a_short_summary(monkeypatch):
    monkeypatch.delenv(FULL_ERRORS_ENV, raising=False)
    text = capacity_error(many_workloads(MANY, 2))
    assert len(text) < 500, text
    assert f"{MANY} workloads (svc-0 (7), svc-1 (7), svc-2 (7) and {MANY - 3} more)" in text
    assert "svc-10 " not in text
    assert FULL_ERRORS_ENV in text  # says how to get the rest


def test_the_full_list_on_request(monkeypatch):
    monkeypatch.setenv(FULL_ERRORS_ENV, "1")
    text = capacity_error(many_workloads(20, 1))
    assert all(f"svc-{i} (7)" in text for i in range(20))
    assert " more" not in text and FULL_ERRORS_ENV not in text


def test_a_few_items_are_listed_whole(monkeypatch):
    monkeypatch.delenv(FULL_ERRORS_ENV, raising=False)
    assert listing(["a", "b", "c"]) == "a, b, c"
    assert listing(["a", "b", "c", "d", "e"]) == "a, b, c and 2 more"


def test_units_are_counted_in_the_plural():
    assert counted(56, "MIG instance") == "56 MIG instances"
    assert counted(1, "GPU") == "1 GPU"
    assert counted(14, "GiB") == "14 GiB"
    text = capacity_error(many_workloads(30, 1))
    assert "56 MIG instances per node" in text
