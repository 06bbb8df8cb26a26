"""slo.compliance: the live share of good minutes, read from Prometheus through the API server's service proxy."""
import pytest
from k8s_fixture_server import api_client_for

from gpuplatform.components.config import Slo, SloObjective
from gpuplatform.verify.slo import check_slo, prometheus_query_path


def _with_slo(cfg, **monitoring):
    slo = Slo(objectives=[SloObjective(metric="triton_queue_time_us", below=5000)], compliance=99, window="28d")
    w = cfg.workloads[0].model_copy(update={"slo": slo})
    mon = cfg.monitoring.model_copy(update=monitoring)
    return cfg.model_copy(update={"workloads": [w], "monitoring": mon}), w


@pytest.mark.parametrize("variant, ok, warning, found", [
    ("healthy", True, False, " in 99.63% of the minutes recorded over the last 28d (target 99%)"),
    ("slo-budget-spent", True, True, " in 97.12% of the minutes recorded over the last 28d (target 99%): the error "
                                      "budget is spent"),
    ("slo-no-minutes", True, True, ": no minute recorded yet"),
])
def test_compliance_against_the_target(fake_api, prod_cfg, variant, ok, warning, found):
    cfg, w = _with_slo(prod_cfg)
    server = fake_api("prod", variant)
    [result] = check_slo(cfg, w, api_client_for(server))
    assert (result.check, result.subject, result.ok, result.warning) == (
        "slo.compliance", "slo/inference/flower/triton_queue_time_us", ok, warning)
    assert result.message == f"triton_queue_time_us <= 5000 µs{found}"
    path, query = server.requests[-1]
    assert path == prometheus_query_path()
    assert query["query"] == ['1 - avg_over_time(gpuplatform:slo_bad_minute{namespace="inference",workload="flower",'
                              'objective="triton_queue_time_us"}[28d])']


def test_no_slo_no_query(fake_api, prod_cfg):
    server = fake_api("prod")
    w = prod_cfg.workloads[0].model_copy(update={"slo": None})
    assert check_slo(prod_cfg, w, api_client_for(server)) == []
    assert server.requests == []


def test_a_prometheus_elsewhere_is_not_queried(fake_api, prod_cfg):
    cfg, w = _with_slo(prod_cfg, prometheus_url="http://prometheus.example:9090")
    server = fake_api("prod")
    [result] = check_slo(cfg, w, api_client_for(server))
    assert result.warning and "compliance not read" in result.message and "avg_over_time" in result.cause
    assert server.requests == []
