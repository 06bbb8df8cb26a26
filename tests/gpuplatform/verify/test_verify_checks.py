"""Verdicts and messages of each check against recorded API responses of a healthy and of broken clusters.

staging: ARMS + ack-alibaba-cloud-metrics-adapter, exclusive A10, HPA on DCGM_CUSTOM_PROCESS_SM_UTIL.
prod: MIG 1g.5gb (mixed), Triton avg_time_queue_us, prometheus-adapter, PodMonitor.
"""
from __future__ import annotations

import pytest
from k8s_fixture_server import api_client_for

from gpuplatform.verify import CheckResult, run_verify

STAGING_HPA = "hpa/inference/bert-intent-detection"
PROD_HPA = "hpa/inference/flower"


def verify(fake_api, cfg, stack: str, variant: str) -> tuple[dict[tuple[str, str], CheckResult], object]:
    server = fake_api(stack, variant)
    client = api_client_for(server)
    try:
        results = run_verify(cfg, client)
    finally:
        client.close()
    by_key = {(r.check, r.subject): r for r in results}
    assert len(by_key) == len(results), "check id + subject must identify a result"
    return by_key, server


def failed(results: dict) -> set[tuple[str, str]]:
    return {key for key, r in results.items() if not r.ok}


# ------------------------------------------------------------------------------------------------ healthy
def test_staging_healthy_all_checks_pass(fake_api, staging_cfg):
    results, server = verify(fake_api, staging_cfg, "staging", "healthy")
    assert failed(results) == set()
    assert {check for check, _ in results} == {
        "cluster.reachable", "credential.lifetime", "cluster.csi-driver", "cluster.system-pods",
        "nodes.present", "nodes.labels", "nodes.taints", "nodes.gpu-model", "nodes.gpu-capacity",
        "apiservice.available", "adapter.ready", "exporter.ready", "metrics.listed", "metrics.value",
        "hpa.scaling-active", "hpa.current-metrics", "model.load-time", "network.policy-enforced",
        "network.policy-peers", "slo.compliance"}
    assert results[("nodes.gpu-capacity", "pool/a10")].message == \
        "every node exposes nvidia.com/gpu >= 1 (GPU per node)"
    assert results[("metrics.listed", "bert-intent-detection/gpu_sm_util")].message == \
        "pods/DCGM_CUSTOM_PROCESS_SM_UTIL is listed"
    assert results[("hpa.current-metrics", STAGING_HPA)].message == "TARGETS DCGM_CUSTOM_PROCESS_SM_UTIL 0/20"
    assert results[("exporter.ready", "daemonset/arms-prom/ack-prometheus-gpu-exporter")].ok
    # ARMS: the SLO's compliance is not read here, and the warning gives the query to run there
    slo = results[("slo.compliance", "slo/inference/bert-intent-detection/gpu_sm_util")]
    assert slo.warning and "avg_over_time" in slo.cause
    assert all(r.cause == "" for key, r in results.items() if key[0] != "slo.compliance")
    # the nodes are selected by the pool label and the metric is read for the workload's pods only
    nodes = [q for p, q in server.requests if p == "/api/v1/nodes"]
    assert nodes == [{"labelSelector": ["gpuplatform.io/pool=a10"]}]
    values = [q for p, q in server.requests if p.endswith("/pods/*/DCGM_CUSTOM_PROCESS_SM_UTIL")]
    assert values == [{"labelSelector": ["app.kubernetes.io/name=bert-intent-detection"]}]


def test_prod_healthy_all_checks_pass(fake_api, prod_cfg):
    results, server = verify(fake_api, prod_cfg, "prod", "healthy")
    assert failed(results) == set()
    assert results[("nodes.gpu-capacity", "pool/a100-mig")].message == \
        "every node exposes exactly nvidia.com/mig-1g.5gb=56 (MIG instance per node)"
    assert results[("nodes.labels", "pool/a100-mig")].message == "all nodes carry the 3 declared labels"
    assert results[("adapter.ready", "service/monitoring/prometheus-adapter")].message == "2/2 adapter pods ready"
    assert results[("exporter.ready", "daemonset/monitoring/dcgm-exporter")].ok
    assert results[("metrics.value", "flower/triton_queue_time_us")].message == \
        "2 pod value(s): flower-5cf8b78894-jng2g=0, flower-5cf8b78894-x7q9d=12500m"
    assert results[("hpa.current-metrics", PROD_HPA)].message == "TARGETS avg_time_queue_us 4800/5000"
    assert results[("podmonitor.present", "podmonitor/inference/flower")].ok
    assert "/apis/custom.metrics.k8s.io/v1beta1/namespaces/inference/pods/*/avg_time_queue_us" in server.paths()


# ------------------------------------------------------------------------------------------------ broken: staging
def test_metric_missing_from_resource_list(fake_api, staging_cfg):
    results, _ = verify(fake_api, staging_cfg, "staging", "metric-missing")
    assert failed(results) == {("metrics.listed", "bert-intent-detection/gpu_sm_util"),
                               ("hpa.scaling-active", STAGING_HPA), ("hpa.current-metrics", STAGING_HPA)}
    listed = results[("metrics.listed", "bert-intent-detection/gpu_sm_util")]
    assert listed.message == "pods/DCGM_CUSTOM_PROCESS_SM_UTIL is not in the custom metrics API (7 resources listed)"
    assert "a rule serves 'DCGM_CUSTOM_PROCESS_SM_UTIL'" in listed.cause
    assert "ARMS GPU exporter" in listed.cause and "ack-alibaba-cloud-metrics-adapter values" in listed.cause
    # no value is read for a metric the API does not list
    assert ("metrics.value", "bert-intent-detection/gpu_sm_util") not in results
    active = results[("hpa.scaling-active", STAGING_HPA)]
    assert active.message.startswith("ScalingActive=False (FailedGetPodsMetric: ")
    assert "refuses to scale down" in active.cause
    # recorded status with currentMetrics: [{type: ""}], which kubectl prints as <unknown>
    current = results[("hpa.current-metrics", STAGING_HPA)]
    assert current.message == "TARGETS DCGM_CUSTOM_PROCESS_SM_UTIL <unknown>/20"
    assert "FailedGetPodsMetric" in current.cause


def test_apiservice_unavailable(fake_api, staging_cfg):
    results, _ = verify(fake_api, staging_cfg, "staging", "apiservice-unavailable")
    api = results[("apiservice.available", "apiservice/v1beta1.custom.metrics.k8s.io")]
    assert not api.ok
    assert api.message.startswith("Available=False (backend service kube-system/alibaba-cloud-metrics-adapter; "
                                  "MissingEndpoints: endpoints for service/alibaba-cloud-metrics-adapter")
    assert "no ready pods (MissingEndpoints)" in api.cause and "<unknown>" in api.cause
    adapter = results[("adapter.ready", "service/kube-system/alibaba-cloud-metrics-adapter")]
    assert (adapter.ok, adapter.message) == (False, "0/1 adapter pods ready")
    listed = results[("metrics.listed", "bert-intent-detection/gpu_sm_util")]
    assert listed.message == ("cannot read /apis/custom.metrics.k8s.io/v1beta1 "
                              "(HTTP 503: the server is currently unable to handle the request)")
    assert listed.cause == "APIService v1beta1.custom.metrics.k8s.io unavailable: the adapter is down"
    assert results[("hpa.current-metrics", STAGING_HPA)].message == \
        "TARGETS DCGM_CUSTOM_PROCESS_SM_UTIL <unknown>/20"
    assert all(r.ok for (check, _), r in results.items() if check.startswith("nodes."))


def test_nodes_without_gpu_capacity(fake_api, staging_cfg):
    results, _ = verify(fake_api, staging_cfg, "staging", "no-gpu-capacity")
    assert failed(results) == {("nodes.gpu-capacity", "pool/a10")}
    cap = results[("nodes.gpu-capacity", "pool/a10")]
    assert cap.message == "cn-beijing.192.168.94.107: no nvidia.com/gpu (expected 1)"
    assert cap.cause.startswith("NVIDIA device plugin not running")
    assert "ack.node.gpu.schedule=default" in cap.cause


def test_exporter_not_scheduled_on_tainted_gpu_nodes(fake_api, staging_cfg):
    results, _ = verify(fake_api, staging_cfg, "staging", "exporter-untolerated")
    exporter = results[("exporter.ready", "daemonset/arms-prom/ack-prometheus-gpu-exporter")]
    assert (exporter.ok, exporter.message) == (False, "scheduled on 0 nodes while the GPU pools have 1")
    assert "does not tolerate the GPU pools' taints" in exporter.cause


# ------------------------------------------------------------------------------------------------ broken: prod
def test_hpa_without_current_metrics_is_unknown(fake_api, prod_cfg):
    results, _ = verify(fake_api, prod_cfg, "prod", "hpa-unknown")
    assert failed(results) == {("hpa.scaling-active", PROD_HPA), ("hpa.current-metrics", PROD_HPA)}
    assert results[("hpa.current-metrics", PROD_HPA)].message == "TARGETS avg_time_queue_us <unknown>/5000"
    active = results[("hpa.scaling-active", PROD_HPA)]
    assert "ScalingActive=False (FailedGetPodsMetric: the HPA was unable to compute the replica count" in active.message


def test_missing_pod_monitor(fake_api, prod_cfg):
    results, _ = verify(fake_api, prod_cfg, "prod", "podmonitor-missing")
    assert failed(results) == {("podmonitor.present", "podmonitor/inference/flower"),
                               ("metrics.listed", "flower/triton_queue_time_us")}
    pm = results[("podmonitor.present", "podmonitor/inference/flower")]
    assert pm.message == "PodMonitor not found"
    assert "never scrapes flower's server metrics" in pm.cause
    listed = results[("metrics.listed", "flower/triton_queue_time_us")]
    assert listed.message == "pods/avg_time_queue_us is not in the custom metrics API (2 resources listed)"
    assert "the series nv_inference_queue_duration_us exists in Prometheus (rediscovered every 30s)" in listed.cause
    assert "PodMonitor 'flower' is missing or not selected" in listed.cause
    assert "release=kube-prometheus-stack" in listed.cause


def test_pod_monitor_not_selected_and_no_samples(fake_api, prod_cfg):
    results, _ = verify(fake_api, prod_cfg, "prod", "no-samples")
    assert failed(results) == {("podmonitor.present", "podmonitor/inference/flower"),
                               ("metrics.value", "flower/triton_queue_time_us")}
    pm = results[("podmonitor.present", "podmonitor/inference/flower")]
    assert pm.message == "present but lacks label release=kube-prometheus-stack"
    assert "only selects PodMonitors labelled with its release" in pm.cause
    value = results[("metrics.value", "flower/triton_queue_time_us")]
    assert value.message == ("pods/avg_time_queue_us returned no value for pods app.kubernetes.io/name=flower "
                             "in inference")
    # the workload's pods are ready, so the gap is in scraping, not scheduling
    assert value.cause.startswith("Prometheus has no samples for these pods yet")


def test_mig_layout_not_applied(fake_api, prod_cfg):
    results, _ = verify(fake_api, prod_cfg, "prod", "mig-not-applied")
    assert failed(results) == {("nodes.gpu-capacity", "pool/a100-mig"), ("nodes.mig-partitioned", "pool/a100-mig")}
    cap = results[("nodes.gpu-capacity", "pool/a100-mig")]
    assert cap.message == "pool a100-mig: node cn-shanghai.192.168.3.41: nvidia.com/mig-1g.5gb expected 56, found none"
    assert cap.cause.startswith("MIG partitions not applied: nvidia.com/mig.config.state=failed")
    assert "'mixed' MIG strategy" in cap.cause


@pytest.mark.parametrize("stack,variant", [("staging", "healthy"), ("prod", "no-samples")])
def test_every_failure_names_a_likely_cause(fake_api, staging_cfg, prod_cfg, stack, variant):
    cfg = staging_cfg if stack == "staging" else prod_cfg
    results, _ = verify(fake_api, cfg, stack, variant)
    for r in results.values():
        assert r.message
        assert bool(r.cause) == (not r.ok or r.warning)  # a warning says what to do about it


def test_unreachable_api_server_is_one_failed_check(prod_cfg):
    from kubernetes import client as k8s

    from gpuplatform.verify import run_verify as run

    configuration = k8s.Configuration()
    configuration.host = "http://127.0.0.1:9"  # discard port: nothing listens
    configuration.retries = 0
    client = k8s.ApiClient(configuration)
    try:
        results = run(prod_cfg, client)
    finally:
        client.close()
    assert [(r.check, r.ok) for r in results] == [("cluster.reachable", False)]
    assert results[0].message.startswith("API server not reachable (")
    assert "wrong kubeconfig/context" in results[0].cause


def test_keda_hpa_scaled_to_zero_passes_and_missing_one_names_keda():
    from kubernetes import client as k8s
    from kubernetes.client.exceptions import ApiException

    from gpuplatform.components.stack_config import load_stack_file
    from k8s_fixture_server import STACKS
    from gpuplatform.verify import check_hpa

    cfg = load_stack_file(STACKS / "Pulumi.local.yaml")
    workload = next(w for w in cfg.workloads if w.autoscaling.autoscaler == "keda")
    hpa = k8s.V2HorizontalPodAutoscaler(
        metadata=k8s.V1ObjectMeta(name=f"keda-hpa-{workload.name}", namespace="inference"),
        spec=k8s.V2HorizontalPodAutoscalerSpec(
            max_replicas=2, min_replicas=1,
            scale_target_ref=k8s.V2CrossVersionObjectReference(kind="Deployment", name=workload.name),
            metrics=[k8s.V2MetricSpec(type="External", external=k8s.V2ExternalMetricSource(
                metric=k8s.V2MetricIdentifier(name="s0-prometheus"),
                target=k8s.V2MetricTarget(type="AverageValue", average_value="60")))]),
        status=k8s.V2HorizontalPodAutoscalerStatus(
            desired_replicas=0, current_replicas=0,
            conditions=[k8s.V2HorizontalPodAutoscalerCondition(
                type="ScalingActive", status="False", reason="ScalingDisabled",
                message="scaling is disabled since the replica count of the target is zero")]))
    asked = []

    class Autoscaling:
        def __init__(self, found):
            self.found = found

        def read_namespaced_horizontal_pod_autoscaler(self, name, namespace, **_):
            asked.append((namespace, name))
            if not self.found:
                raise ApiException(status=404, reason="Not Found")
            return hpa

    results = {r.check: r for r in check_hpa(cfg, workload, Autoscaling(True))}
    assert asked == [("inference", f"keda-hpa-{workload.name}")]
    assert results["hpa.scaling-active"].ok
    assert results["hpa.scaling-active"].message == "scaled to zero by KEDA (ScalingDisabled)"
    assert results["hpa.current-metrics"].ok
    assert results["hpa.current-metrics"].message == "TARGETS s0-prometheus <unknown>/60 (scaled to zero)"

    missing = check_hpa(cfg, workload, Autoscaling(False))
    assert [(r.check, r.ok, r.message) for r in missing] == [("hpa.scaling-active", False, "HPA not found")]
    assert "ScaledObject is missing or invalid" in missing[0].cause


# ------------------------------------------------------------------------------------------------ ingress, MIG
def test_ingress_address_from_its_controller(fake_api, prod_cfg):
    results, _ = verify(fake_api, prod_cfg, "prod", "healthy")
    for route in ("http", "grpc"):  # prod routes its HTTP and gRPC ports through one Ingress each
        assert results[("ingress.address", f"ingress/inference/flower-{route}")].message == \
            "address 192.168.5.17 (class nginx)"
    results, _ = verify(fake_api, prod_cfg, "prod", "ingress-no-address")
    assert failed(results) == {("ingress.address", "ingress/inference/flower-http"),
                               ("ingress.address", "ingress/inference/flower-grpc")}
    assert "nginx-ingress-controller add-on" in results[("ingress.address", "ingress/inference/flower-http")].cause


def test_whole_gpus_left_on_a_mig_pool_point_at_ack_mig_partitioning(fake_api, prod_cfg):
    results, _ = verify(fake_api, prod_cfg, "prod", "healthy")
    assert results[("nodes.mig-partitioned", "pool/a100-mig")].ok
    results, _ = verify(fake_api, prod_cfg, "prod", "mig-not-applied")
    mig = results[("nodes.mig-partitioned", "pool/a100-mig")]
    assert not mig.ok and mig.message == "whole GPUs outside MIG mode: cn-shanghai.192.168.3.41: nvidia.com/gpu=8"
    assert "ack-ai-installer" in mig.cause and "ack.node.gpu.schedule=mig" in mig.cause


def test_second_adapter_in_the_same_namespace_is_named(fake_api, prod_cfg):
    # ack-prometheus-operator's prometheusAdapter also installs into 'monitoring' and claims the same APIService
    results, _ = verify(fake_api, prod_cfg, "prod", "second-adapter")
    api = results[("apiservice.available", "apiservice/v1beta1.custom.metrics.k8s.io")]
    assert not api.ok
    assert "served by monitoring/ack-prometheus-operator-prometheus-adapter" in api.message
    assert "(service prometheus-adapter)" in api.message and "another adapter" in api.cause
