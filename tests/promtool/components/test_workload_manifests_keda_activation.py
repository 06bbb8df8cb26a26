"""Scale to zero wakes up: at zero replicas the pod-sourced trigger of the local stack's batch-embedder has no
series, while the activation trigger (requests the ingress-nginx controller counts for its host, including the
ones answered 503 for want of a pod) does. Both queries are the ones the ScaledObject carries, evaluated by
Prometheus at 60 s over 15 s samples."""
import functools

from gpuplatform.plan import manifest_files
from gpuplatform.synth import stack_config_from_namespace, synthesize
from support import stack_raw

REQUESTS = "nginx_ingress_controller_requests"


@functools.cache
def _triggers() -> list[dict]:
    files = manifest_files(synthesize(stack_config_from_namespace(stack_raw("local")), stack="local"))
    scaled = next(d for d in files.values() if d.get("kind") == "ScaledObject"
                  and d["metadata"]["name"] == "batch-embedder")
    return scaled["spec"]["triggers"]


def _controller(service: str, host: str, status: str, values: str) -> dict:
    # as scraped through a ServiceMonitor with honorLabels false: the target's namespace/service win, the
    # exported ones are renamed
    labels = (f'controller_class="k8s.io/ingress-nginx",controller_namespace="ingress-nginx",'
              f'controller_pod="ingress-nginx-controller-5d8f",exported_namespace="inference",ingress="{service}",'
              f'exported_service="{service}",host="{host}",method="POST",path="/",status="{status}",'
              'namespace="ingress-nginx",service="ingress-nginx-controller-metrics",'
              'job="ingress-nginx-controller-metrics"')
    return {"series": f"{REQUESTS}{{{labels}}}", "values": values}


def test_activation_series_exists_at_zero_replicas_and_the_pod_metric_does_not(promtool):
    pod_trigger, activation = _triggers()
    assert "DCGM_FI_DEV_GPU_UTIL" in pod_trigger["metadata"]["query"]
    assert activation["metadata"]["activationThreshold"] == "0" and activation["metadata"]["threshold"] == "5"
    series = [
        # no pod of batch-embedder: its first requests are answered 503 by the controller, 6 per 15 s
        _controller("batch-embedder", "embedder.gpu.internal", "503", "0+6x4"),
        # another workload's traffic through the same controller must not wake it
        _controller("echo-gpu", "echo.gpu.internal", "200", "0+600x4"),
        # a GPU of the node, idle and without a pod
        {"series": 'DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="kind-worker",job="nvidia-dcgm-exporter"}',
         "values": "0x4"},
    ]
    rules = [promtool.recording_rule("test:pod_trigger", pod_trigger["metadata"]["query"]),
             promtool.recording_rule("test:activation", activation["metadata"]["query"])]
    promtool.test_rules(rules, series, promql_expr_tests=[
        promtool.expr_test("test:pod_trigger", "1m", []),           # nothing to wake on
        promtool.expr_test("test:activation", "1m", [("test:activation", 0.4)]),  # 6 per 15 s > threshold 0
    ])


def test_activation_reads_zero_without_requests(promtool):
    _, activation = _triggers()
    series = [_controller("echo-gpu", "echo.gpu.internal", "200", "0+600x4")]
    promtool.test_rules([promtool.recording_rule("test:activation", activation["metadata"]["query"])], series,
                        promql_expr_tests=[promtool.expr_test("test:activation", "1m", [("test:activation", 0)])])
