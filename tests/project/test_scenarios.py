"""The seed scenarios, expressible: one example stack per seed (examples/<seed>-*/), and the rules that make each
one possible (several ingress ports with gRPC over TLS, fixed-replica notebooks with a root opt-out, cGPU memory
bin-packed per card, CPU and memory per node).

Each example is synthesized once per session; its authored objects go through kubernetes-validate (strict) for
the cluster's own version and the whole pack runs over it, as ``gpuplatform check`` does."""
import copy
import functools

import kubernetes_validate
import pytest

from gpuplatform.catalogs import capacity
from gpuplatform.catalogs.gpus import GPU_MODELS
from gpuplatform.catalogs.kubernetes import served_by
from gpuplatform.check import run_policies
from gpuplatform.components.errors import ConfigError
from gpuplatform.components.stack_config import namespace_from_stack_file
from gpuplatform.components.validation import kubernetes_version, load
from gpuplatform.synth import stack_config_from_namespace, synthesize
from support import REPO

EXAMPLES = {p.parent.name.split("-", 1)[0]: p for p in sorted((REPO / "examples").glob("0*/Pulumi.*.yaml"))}
SEEDS = sorted(p.name.split("_", 1)[0] for p in (REPO.parent / "shared" / "seeds").glob("0*_*.txt")) or None


def example_raw(seed: str) -> dict:
    return copy.deepcopy(namespace_from_stack_file(EXAMPLES[seed]))


PLAIN = {p.parent.parent.name.split("-", 1)[0]: p for p in sorted((REPO / "examples").glob("0*/plain/Pulumi.*.yaml"))}
"""The examples that ship time-to-capacity measures keep their plain variant (no measure) for comparison."""


def plain_raw(seed: str) -> dict:
    """The example's plain variant where it has one, else the example."""
    return copy.deepcopy(namespace_from_stack_file(PLAIN.get(seed, EXAMPLES[seed])))


@functools.cache
def example_records(seed: str):
    return synthesize(stack_config_from_namespace(example_raw(seed)), stack=EXAMPLES[seed].parent.name)


def objects(seed: str, kind: str) -> dict[str, dict]:
    return {r.inputs["metadata"]["name"]: r.inputs for r in example_records(seed)
            if r.is_kubernetes_object and r.inputs["kind"] == kind}


def rejected(raw: dict) -> dict[str, str]:
    """path -> message of every issue ``raw`` is rejected with."""
    with pytest.raises(ConfigError) as info:
        load(raw)
    return {i.path: i.message for i in info.value.issues}


# ---------------------------------------------------------------------------------------------- the examples
def test_one_example_per_seed_scenario():
    # 000 is the Chinese edition of 002, so 002 stands for both
    assert {"001", "002", "003", "004", "005", "006"} <= set(EXAMPLES)


def test_001_legacy_on_the_oldest_supported_version_uses_the_existing_prometheus():
    raw = example_raw("001")
    major, minor = kubernetes_version(load(raw))
    # the oldest version is the catalog's answer, not ours: one minor older, a pinned chart stops supporting it
    older = copy.deepcopy(raw)
    older["cluster"]["kubernetesVersion"] = f"{major}.{minor - 1}"
    assert ": no pinned " in rejected(older)["cluster.kubernetesVersion"]
    records = example_records("001")
    charts = {r.inputs.get("chart") for r in records if r.type == "kubernetes:helm.sh/v3:Release"}
    assert "kube-prometheus-stack" not in charts and "prometheus-adapter" in charts
    adapter = next(r for r in records if r.type == "kubernetes:helm.sh/v3:Release"
                   and r.inputs.get("chart") == "prometheus-adapter")
    assert adapter.inputs["values"]["prometheus"] == {
        "url": "http://ack-prometheus-operator-prometheus.monitoring.svc:9090", "port": ""}
    served = {r["name"]["as"] for r in adapter.inputs["values"]["rules"]["custom"]}
    assert served == {"duty_cycle_current"}
    assert objects("001", "PodDisruptionBudget")["bert-intent-detection"]["apiVersion"] == "policy/v1"
    assert objects("001", "HorizontalPodAutoscaler")["bert-intent-detection"]["apiVersion"] == "autoscaling/v2"


@pytest.mark.parametrize("metric,api_name", [("gpu_temperature", "temperature_celsius_current"),
                                             ("gpu_power", "power_usage_milliwatts_current")])
def test_legacy_temperature_and_power_metrics_are_served(metric, api_name):
    raw = example_raw("001")
    raw["workloads"][0]["autoscaling"]["metrics"] = [{"metric": metric, "target": 70}]
    load(raw)
    records = synthesize(stack_config_from_namespace(raw))
    adapter = next(r for r in records if r.type == "kubernetes:helm.sh/v3:Release"
                   and r.inputs.get("chart") == "prometheus-adapter")
    assert {r["name"]["as"] for r in adapter.inputs["values"]["rules"]["custom"]} == {api_name}


@pytest.mark.parametrize("url", ["ack-prometheus-operator-prometheus:9090", "http://", "ftp://prom:9090"])
def test_prometheus_url_must_be_a_url(url):
    raw = example_raw("001")
    raw["monitoring"]["prometheusUrl"] = url
    assert "not a Prometheus URL" in rejected(raw)["monitoring.prometheusUrl"]


@pytest.mark.parametrize("seed", sorted(EXAMPLES))
def test_example_plans_and_passes_check(seed):
    cfg = load(example_raw(seed))
    records = example_records(seed)
    mandatory = [v for v in run_policies(records) if v.mandatory]
    assert mandatory == []
    version = kubernetes_version(cfg)
    oldest_bundled = (1, 25)  # kubernetes-validate bundles schemas from 1.25 on
    schema_version = f"{max(version, (1, 28))[0]}.{max(version, (1, 28))[1]}.0"
    # covered by the schema suite's CRD models; Fluid's fields pinned by tests/components/test_fluid_cache.py
    crd_groups = ("monitoring.coreos.com", "keda.sh", "data.fluid.io")
    for r in records:
        if not r.is_kubernetes_object or r.type.endswith("Patch") or \
                r.inputs["apiVersion"].split("/")[0] in crd_groups:
            continue
        if version < oldest_bundled and not served_by(r.inputs["apiVersion"], (1, 28)):
            # an API only older clusters serve (policy/v1beta1, autoscaling/v2beta1): no bundled schema has it
            assert served_by(r.inputs["apiVersion"], version), r.inputs["apiVersion"]
            continue
        kubernetes_validate.validate(r.inputs, schema_version, strict=True)


def test_003_seven_triton_replicas_on_one_partitioned_a100_with_http_and_grpc_ingress():
    hpa = objects("003", "HorizontalPodAutoscaler")["flower"]
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 7)
    limits = objects("003", "Deployment")["flower"]["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits["nvidia.com/mig-1g.5gb"] == "1"
    ingresses = objects("003", "Ingress")
    protocols = {n: i["metadata"]["annotations"]["nginx.ingress.kubernetes.io/backend-protocol"]
                 for n, i in ingresses.items()}
    assert protocols == {"flower-http": "HTTP", "flower-grpc": "GRPC"}
    assert all(i["spec"]["tls"][0]["secretName"] == "flower-tls" for i in ingresses.values())
    # an eighth replica has no MIG instance left on the one GPU
    raw = example_raw("003")
    raw["workloads"][0]["autoscaling"]["maxReplicas"] = 8
    assert "at most 7" in rejected(raw)["workloads[0].autoscaling.maxReplicas"]


def test_005_vllm_scales_on_requests_waiting_scraped_from_its_api_port_behind_a_streaming_ingress():
    hpa = objects("005", "HorizontalPodAutoscaler")["chat"]
    assert hpa["spec"]["metrics"] == [{"type": "Pods", "pods": {
        "metric": {"name": "vllm_num_requests_waiting"}, "target": {"type": "AverageValue", "averageValue": "2"}}}]
    assert objects("005", "PodMonitor")["chat"]["spec"]["podMetricsEndpoints"] == [
        {"port": "http", "path": "/metrics", "interval": "10s"}]
    container = objects("005", "Deployment")["chat"]["spec"]["template"]["spec"]["containers"][0]
    assert [p["containerPort"] for p in container["ports"]] == [8000]
    assert container["readinessProbe"]["httpGet"] == {"path": "/health", "port": "http"}
    annotations = objects("005", "Ingress")["chat"]["metadata"]["annotations"]
    assert {k: v for k, v in annotations.items() if k.startswith("nginx.ingress")} == {
        "nginx.ingress.kubernetes.io/backend-protocol": "HTTP",
        "nginx.ingress.kubernetes.io/proxy-read-timeout": "600",
        "nginx.ingress.kubernetes.io/proxy-send-timeout": "600",
        "nginx.ingress.kubernetes.io/proxy-buffering": "off"}


def simulate_step(example: str, workload: str) -> dict:
    """``gpuplatform simulate --trace step --format json`` of an example's workload, as a user runs it."""
    import io
    import json
    from contextlib import redirect_stderr, redirect_stdout

    from gpuplatform.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["simulate", "--config", str(EXAMPLES[example]), "--workload", workload, "--trace", "step",
                     "--format", "json"])
    assert code == 0, err.getvalue()
    return json.loads(out.getvalue())


def test_005_simulate_trace_step_scales_on_requests_waiting():
    doc = simulate_step("005", "chat")
    assert doc["first_scale_up_s"] is not None
    timeline = doc["timeline"]
    step_at = next(e["t"] for e in timeline if e["demand"] > timeline[0]["demand"])
    assert all(e["desired"] == 1 for e in timeline if e["t"] < step_at)
    up = next(e for e in timeline if e["desired"] > 1)
    assert up["metric"] > 2  # requests waiting per replica above the target of 2 is what scaled it
    assert max(e["ready"] for e in timeline) > 1


def test_006_sglang_scales_on_its_waiting_queue_scraped_from_its_api_port():
    hpa = objects("006", "HorizontalPodAutoscaler")["qa"]
    assert hpa["spec"]["metrics"] == [{"type": "Pods", "pods": {
        "metric": {"name": "sglang_num_queue_reqs"}, "target": {"type": "AverageValue", "averageValue": "2"}}}]
    assert objects("006", "PodMonitor")["qa"]["spec"]["podMetricsEndpoints"] == [
        {"port": "http", "path": "/metrics", "interval": "5s"}]  # the example's 5 s scrape, for a sooner decision
    container = objects("006", "Deployment")["qa"]["spec"]["template"]["spec"]["containers"][0]
    assert [p["containerPort"] for p in container["ports"]] == [30000]
    assert "--enable-metrics" in container["args"]  # SGLang serves no metrics without it


def test_006_simulate_trace_step_scales_on_the_waiting_queue():
    doc = simulate_step("006", "qa")
    assert doc["first_scale_up_s"] is not None and doc["capacity_ready_s"] is not None
    up = next(e for e in doc["timeline"] if e["desired"] > 1)
    assert up["metric"] > 2 * 1.1  # the waiting queue per replica beyond the target's tolerance scaled it
    assert doc["first_scale_up_sweep"]["never"] == 0


def test_stream_timeout_is_an_ingress_nginx_setting():
    raw = example_raw("005")
    raw["workloads"][0]["exposure"]["ingress"]["className"] = "alb"
    assert "'alb' does not read" in rejected(raw)["workloads[0].exposure.ingress.streamTimeoutSeconds"]
    raw = example_raw("005")
    raw["workloads"][0]["exposure"]["ingress"].pop("streamTimeoutSeconds")
    annotations = synthesize(stack_config_from_namespace(raw))
    ing = next(r.inputs for r in annotations if r.is_kubernetes_object and r.inputs["kind"] == "Ingress")
    assert not any("timeout" in k or "buffering" in k for k in ing["metadata"]["annotations"])


def test_004_three_fixed_notebooks_share_one_t4_as_root_in_a_baseline_namespace():
    deployments = objects("004", "Deployment")
    assert sorted(deployments) == ["tf-notebook", "tf-notebook-2", "tf-notebook-3"]
    assert objects("004", "HorizontalPodAutoscaler") == {}
    for d in deployments.values():
        assert d["spec"]["replicas"] == 1
        assert d["metadata"]["namespace"] == "inference-root"
        pod = d["spec"]["template"]["spec"]
        assert pod["containers"][0]["resources"]["limits"]["aliyun.com/gpu-mem"] == "4"
        assert pod["securityContext"]["runAsUser"] == 0 and pod["securityContext"]["runAsNonRoot"] is False
        assert pod["containers"][0]["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    svc = objects("004", "Service")["tf-notebook"]["spec"]["ports"]
    assert [(p["port"], p["targetPort"]) for p in svc] == [(80, "jupyter")]
    ns = objects("004", "Namespace")["inference-root"]["metadata"]["labels"]
    assert ns == {"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/warn": "restricted",
                  "pod-security.kubernetes.io/audit": "restricted"}
    flagged = [v for v in run_policies(example_records("004")) if v.policy_id == "pod-root-opt-out"]
    assert len(flagged) == 3 and not any(v.mandatory for v in flagged)
    assert not [v for v in run_policies(example_records("004")) if v.policy_id == "pod-run-as-non-root"]
    # a fourth 4 GiB notebook does not fit the 14 GiB card
    raw = example_raw("004")
    raw["workloads"].append({**copy.deepcopy(raw["workloads"][0]), "name": "tf-notebook-4"})
    assert "1 of tf-notebook" in rejected(raw)["nodePools[0].maxNodes"]


def test_root_opt_out_in_a_restricted_namespace_is_named():
    records = copy.deepcopy(example_records("004"))
    ns = next(r for r in records if r.is_kubernetes_object and r.inputs["kind"] == "Namespace"
              and r.inputs["metadata"]["name"] == "inference-root")
    ns.inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] = "restricted"
    messages = [v.message for v in run_policies(records) if v.policy_id == "pod-root-opt-out"]
    assert messages and all("rejects its pods" in m for m in messages)


# ---------------------------------------------------------------------------------------------- ingress (7)
def _triton_raw() -> dict:
    return example_raw("003")


@pytest.mark.parametrize("class_name", ["nginx", "alb"])
def test_grpc_route_without_tls_is_rejected(class_name):
    raw = _triton_raw()
    ing = raw["workloads"][0]["exposure"]["ingress"]
    ing["className"] = class_name
    del ing["tlsSecret"]
    message = rejected(raw)["workloads[0].exposure.ingress.tlsSecret"]
    assert "'grpc' speaks gRPC" in message and "TLS listener" in message


def test_http_only_route_needs_no_tls():
    raw = _triton_raw()
    ing = raw["workloads"][0]["exposure"]["ingress"]
    del ing["tlsSecret"]
    ing["routes"] = ing["routes"][:1]
    load(raw)


@pytest.mark.parametrize("routes,path,fragment", [
    ([{"port": "metrics", "host": "m.example.com"}], "routes[0].port", "not a serving port"),
    ([{"port": "http", "host": "a.example.com"}, {"port": "http", "host": "b.example.com"}], "routes[1].port",
     "routed twice"),
    ([{"port": "http", "host": "a.example.com"}, {"port": "grpc", "host": "a.example.com"}], "routes[1].host",
     "already routes '/'"),
    ([], "", "routes nothing"),
])
def test_bad_routes_are_rejected(routes, path, fragment):
    raw = _triton_raw()
    raw["workloads"][0]["exposure"]["ingress"]["routes"] = routes
    issues = rejected(raw)
    key = "workloads[0].exposure.ingress" + (f".{path}" if path else "")
    assert fragment in issues[key]


def test_one_port_form_needs_host_and_port():
    raw = _triton_raw()
    ing = raw["workloads"][0]["exposure"]["ingress"]
    ing["routes"] = []
    ing["host"] = "flower.example.com"
    assert "needs both 'host' and 'port'" in rejected(raw)["workloads[0].exposure.ingress.port"]


# ---------------------------------------------------------------------------------------------- fixed replicas (8)
def test_workload_without_autoscaling_needs_replicas():
    raw = example_raw("004")
    del raw["workloads"][0]["replicas"]
    assert "required" in rejected(raw)["workloads[0].replicas"]


def test_replicas_and_an_autoscaler_are_exclusive():
    raw = example_raw("003")
    raw["workloads"][0]["replicas"] = 2
    assert "owns the replica count" in rejected(raw)["workloads[0].replicas"]


def test_autoscaler_without_metrics_is_rejected():
    raw = example_raw("003")
    raw["workloads"][0]["autoscaling"]["metrics"] = []
    assert "at least one metric" in rejected(raw)["workloads[0].autoscaling.metrics"]


def test_fixed_replicas_beyond_the_pool_are_rejected():
    raw = example_raw("004")
    raw["workloads"][0]["replicas"] = 4
    assert "at most 3" in rejected(raw)["workloads[0].replicas"]


# ---------------------------------------------------------------------------------------------- capacity (9)
T4 = GPU_MODELS["T4"]
GiB = 2 ** 30


def _replicas(*specs):
    return [capacity.Replica(name, capacity.GpuRequest(memory_gib=gib), cpu, mem * GiB)
            for name, gib, cpu, mem in specs]


def test_cgpu_memory_is_bin_packed_per_card():
    # 8 + 4 GiB fit one 14 GiB card; 8 + 8 do not, whatever the total says
    assert capacity.pack("cgpu", T4, 1, 1, _replicas(("a", 8, 1, 1), ("b", 4, 1, 1))) == {"a": 0, "b": 0}
    assert capacity.pack("cgpu", T4, 1, 1, _replicas(("a", 8, 1, 1), ("b", 8, 1, 1))) in ({"a": 1, "b": 0},
                                                                                         {"a": 0, "b": 1})
    # two cards of one node are separate devices: 10 + 10 GiB fit two cards, 10 + 10 + 10 do not
    assert sum(capacity.pack("cgpu", T4, 2, 1, _replicas(*[("a", 10, 1, 1)] * 3)).values()) == 1


def test_cpu_and_memory_are_packed_per_node():
    # three 2-CPU replicas of 4 GiB fit one 14 GiB card, but a 4-vCPU node runs only two of them
    left = capacity.pack("cgpu", T4, 1, 1, _replicas(*[("a", 4, 2, 1)] * 3), vcpus=4, memory_bytes=15 * GiB)
    assert left == {"a": 1}
    left = capacity.pack("cgpu", T4, 1, 1, _replicas(*[("a", 4, 1, 6)] * 3), vcpus=4, memory_bytes=15 * GiB)
    assert left == {"a": 1}


def test_mixed_cgpu_sizes_share_one_t4_in_a_stack():
    raw = example_raw("004")
    raw["workloads"] = raw["workloads"][:2]  # YAML merge keys share nested maps: replace them, never edit
    raw["workloads"][0]["gpu"] = {"memoryGib": 8}
    load(raw)
    raw["workloads"][1]["gpu"] = {"memoryGib": 8}
    message = rejected(raw)["nodePools[0].maxNodes"]
    assert "would stay Pending" in message and "14 GiB per T4 card" in message and ">= 2" in message


def test_replica_cpu_and_memory_must_fit_the_instance_type():
    raw = example_raw("004")
    raw["workloads"][0]["resources"] = {"cpu": "8", "memory": "32Gi"}
    issues = rejected(raw)
    # what a node offers pods: the instance's 4 vCPUs and 15 GiB less ACK's reservation
    assert "3.92 of its 4 vCPUs" in issues["workloads[0].resources.cpu"]
    assert "11.9 GiB of its 15 GiB" in issues["workloads[0].resources.memory"]


def test_cpu_bound_pool_is_rejected_though_gpu_memory_fits():
    raw = example_raw("004")
    for w in raw["workloads"]:
        w["resources"] = {"cpu": "2", "memory": "3Gi"}
    message = rejected(raw)["nodePools[0].maxNodes"]
    assert "1 of tf-notebook" in message and "3.9 CPU and 11.9 GiB per node" in message


# ---------------------------------------------------------------------------------------------- ACK guide rules (10)
def _ack_adapter_rules(records) -> list[dict]:
    adapter = next(r for r in records if r.type == "kubernetes:helm.sh/v3:Release"
                   and r.inputs.get("chart") == "ack-alibaba-cloud-metrics-adapter")
    return adapter.inputs["values"]["AlibabaCloudMetricsAdapter"]["prometheus"]["adapter"]["rules"]["custom"]


def test_002_serves_what_the_guides_kubectl_get_raw_lists():
    from gpuplatform.components.adapter_rules import listed_resources

    listed = listed_resources(_ack_adapter_rules(example_records("002")))
    # the entries the ACK guide's `kubectl get --raw "/apis/custom.metrics.k8s.io/v1beta1"` output shows, and the
    # four names it says must appear
    assert {"nodes/DCGM_CUSTOM_PROCESS_SM_UTIL", "pods/DCGM_CUSTOM_PROCESS_SM_UTIL",
            "namespaces/DCGM_CUSTOM_PROCESS_SM_UTIL", "pods/DCGM_CUSTOM_PROCESS_GPU_MEM_USED_RATIO"} <= listed
    names = {entry.split("/", 1)[1] for entry in listed}
    assert {"DCGM_FI_DEV_GPU_UTIL", "DCGM_CUSTOM_PROCESS_SM_UTIL", "DCGM_FI_DEV_FB_USED",
            "DCGM_CUSTOM_PROCESS_MEM_USED", "DCGM_CUSTOM_PROCESS_GPU_MEM_USED_RATIO"} <= names
    raw = example_raw("002")
    del raw["monitoring"]["ackGuideRules"]
    default = listed_resources(_ack_adapter_rules(synthesize(stack_config_from_namespace(raw))))
    assert default == {"pods/DCGM_CUSTOM_PROCESS_SM_UTIL", "namespaces/DCGM_CUSTOM_PROCESS_SM_UTIL"}


def test_ack_guide_rules_need_the_ack_exporter():
    raw = example_raw("003")
    raw["monitoring"]["ackGuideRules"] = True
    assert "gpuExporter 'ack'" in rejected(raw)["monitoring.ackGuideRules"]
