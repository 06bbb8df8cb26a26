"""The PrometheusRule we generate passes `promtool check rules`, and its alerts fire on the failures they name."""
from gpuplatform.components.monitoring import GpuMonitoring
from gpuplatform.components.stack_config import load_stack_file
from support import REPO


def _rule_doc(stack: str) -> dict:
    cfg = load_stack_file(REPO / "stacks" / f"Pulumi.{stack}.yaml")
    return {"groups": GpuMonitoring.prometheus_rule(cfg)["spec"]["groups"]}


def test_generated_rules_pass_promtool_check(promtool):
    for stack in ("prod", "local"):
        promtool.check_rules(promtool.write_rules(_rule_doc(stack), name=f"{stack}.yml"))


def test_alerts_fire_on_the_failures_they_name(promtool):
    ns, hpa = 'namespace="inference"', 'horizontalpodautoscaler="flower"'
    series = [
        # HPA pinned at maxReplicas for 20 minutes
        {"series": f"kube_horizontalpodautoscaler_status_current_replicas{{{ns},{hpa}}}", "values": "7x40"},
        {"series": f"kube_horizontalpodautoscaler_spec_max_replicas{{{ns},{hpa}}}", "values": "7x40"},
        # the adapter is down
        {"series": 'aggregator_unavailable_apiservice{name="v1beta1.custom.metrics.k8s.io"}', "values": "1x40"},
        # the Triton series the HPA reads never arrives (absent) for 20 minutes
    ]
    doc = _rule_doc("prod")
    summary = {r["alert"]: r["annotations"]["summary"] for r in doc["groups"][0]["rules"]}
    promtool.test_rules(doc, series, interval="30s", alert_rule_tests=[
        promtool.alert_test("GpuHpaAtMaxReplicas", "20m", [{"exp_labels": {
            "severity": "warning", "namespace": "inference", "horizontalpodautoscaler": "flower"},
            "exp_annotations": {"summary": "HPA flower has run at maxReplicas for 15 minutes"}}]),
        promtool.alert_test("GpuHpaAtMaxReplicas", "10m", []),
        promtool.alert_test("CustomMetricsApiUnavailable", "10m", [{
            "exp_labels": {"severity": "critical"},
            "exp_annotations": {"summary": summary["CustomMetricsApiUnavailable"]}}]),
        promtool.alert_test("GpuHpaSeriesAbsent_avg_time_queue_us", "20m", [{
            "exp_labels": {"severity": "warning", "namespace": "inference"},
            "exp_annotations": {"summary": summary["GpuHpaSeriesAbsent_avg_time_queue_us"]}}]),
    ])
