"""Mock-runtime tests: exact inputs of what each component registers, per sharing mode and cluster target."""
import copy
import inspect

import pytest

from gpuplatform.catalogs import sharing
from gpuplatform.catalogs.versions import chart
from gpuplatform.catalogs.kubernetes import HPA_DEFAULT_SCALE_UP
from gpuplatform.components import config as config_module
from gpuplatform.components.adapter_rules import served_names
from gpuplatform.components.workload_manifests import DEFAULT_SCALE_UP
from support import REPO, of_type, one, scaled_on, stack_raw, synth

NODE_POOL = "alicloud:cs/nodePool:NodePool"
RELEASE = "kubernetes:helm.sh/v3:Release"
HPA_V2 = "kubernetes:autoscaling/v2:HorizontalPodAutoscaler"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"


def labels_of(pool) -> dict:
    return {item["key"]: item["value"] for item in pool.inputs["labels"]}


# ------------------------------------------------------------------------------------------------ node pools
def test_cgpu_pool_inputs(stack_records):
    pool = one(stack_records("dev"), NODE_POOL, "gpu-t4-cgpu-pool")
    assert pool.inputs["instanceTypes"] == ["ecs.gn6i-c4g1.xlarge"]
    assert labels_of(pool) == {"ack.node.gpu.schedule": "cgpu", "ack.node.gpu.placement": "binpack",
                               "gpuplatform.io/pool": "t4-cgpu"}
    assert pool.inputs["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    assert pool.inputs["scalingConfig"] == {"enable": True, "minSize": 0, "maxSize": 3, "type": "gpu"}
    assert "desiredSize" not in pool.inputs and pool.ignore_changes == ("desiredSize",)
    assert pool.protect is False
    assert pool.inputs["management"] == {"enable": True, "autoRepair": True, "maxUnavailable": 1}


def test_exclusive_pool_inputs_on_adopted_cluster(stack_records):
    records = stack_records("staging")
    pool = one(records, NODE_POOL)
    assert labels_of(pool) == {"ack.node.gpu.schedule": "default", "gpuplatform.io/pool": "a10"}
    assert pool.inputs["clusterId"] == "c0123456789abcdef0123456789abcdef"
    assert pool.inputs["vswitchIds"] == ["vsw-2ze0example0a", "vsw-2ze0example0b"]
    assert pool.inputs["dataDisks"] == [{"category": "cloud_essd", "size": 200}]
    assert not of_type(records, "alicloud:cs/managedKubernetes:ManagedKubernetes")
    addons = {r.inputs["name"] for r in of_type(records, "alicloud:cs/kubernetesAddon:KubernetesAddon")}
    assert addons == {"arms-prometheus", "ack-node-problem-detector", "node-lifecycle-controller"}


def test_mig_pool_inputs_and_protection_in_prod(stack_records):
    records = stack_records("prod")
    pool = one(records, NODE_POOL, "gpu-a100-mig-pool")
    assert labels_of(pool) == {"ack.node.gpu.schedule": "mig", "nvidia.com/mig.config": "all-1g.5gb",
                               "gpuplatform.io/pool": "a100-mig"}
    assert pool.protect is True
    cluster = one(records, "alicloud:cs/managedKubernetes:ManagedKubernetes")
    assert cluster.protect is True and cluster.inputs["deletionProtection"] is True
    assert cluster.inputs["clusterSpec"] == "ack.pro.small" and cluster.inputs["version"] == "1.35.2-aliyun.1"
    assert len(of_type(records, "alicloud:vpc/switch:Switch")) == 2


def test_fixed_size_pool_uses_string_desired_size():
    raw = stack_raw("staging")
    raw["nodePools"][0].update({"autoscaling": False, "desiredNodes": 2, "minNodes": 0, "maxNodes": 10})
    raw["workloads"][0]["autoscaling"]["maxReplicas"] = 2
    pool = one(synth(raw), NODE_POOL)
    assert pool.inputs["desiredSize"] == "2"
    # explicit: scaling_config is Optional + Computed, so leaving it out would keep an autoscaled pool autoscaled;
    # nothing but enable is sent (or compared): ACK's answer for the rest of a fixed pool is not documented
    assert pool.inputs["scalingConfig"] == {"enable": False}
    assert "desiredSize" not in pool.ignore_changes and "scalingConfig.type" in pool.ignore_changes


def test_legacy_cgpu_label_and_ack_cgpu_as_a_prerequisite_on_dedicated_cluster(tmp_path):
    """ack-cgpu is installed from the console's Marketplace only (ACK's ack-cgpu release notes); neither the
    provider nor the SDK knows it as an add-on, so the stack names it as a prerequisite instead of installing it."""
    from gpuplatform.plan import run_plan

    raw = stack_raw("dev")
    raw["cluster"] = {"kind": "ack-existing", "region": "cn-hangzhou", "kubernetesVersion": "1.22",
                      "clusterId": "c-dedicated", "vswitchIds": ["vsw-1"], "professional": False}
    raw["nodePools"][0]["sharing"]["legacyLabel"] = True
    records = synth(raw)
    assert labels_of(one(records, NODE_POOL))["cgpu"] == "true"
    addons = {r.inputs["name"] for r in of_type(records, "alicloud:cs/kubernetesAddon:KubernetesAddon")}
    assert not {sharing.ACK_LEGACY_SHARING_ADDON, sharing.ACK_SHARING_ADDON} & addons
    with open(tmp_path / "out", "w") as out:
        assert run_plan(raw, "dedicated", None, "table", out=out, sweep=False) == 0
    assert "Prerequisite: ack-cgpu: legacy cGPU of a dedicated cluster: install ack-cgpu from the ACK console" in (
        tmp_path / "out").read_text()
    assert one(records, "kubernetes:autoscaling/v2beta2:HorizontalPodAutoscaler")  # 1.22: v2beta2, not v2beta1


def test_kubeconfig_target_registers_no_alibaba_resource(stack_records):
    records = stack_records("local")
    assert not [r for r in records if r.type.startswith("alicloud:")]
    provider = one(records, "pulumi:providers:kubernetes")
    assert provider.inputs["context"] == "kind-gpu"
    fake = one(records, RELEASE, "gpu-gpu-software-fake-gpu-operator")
    # only the stack's pools: the chart's own default pool stays inert (no null: the engine would not pass it on)
    assert fake.inputs["values"]["topology"]["nodePools"] == {
        "sim-t4": {"gpuProduct": "Tesla-T4", "gpuCount": 2, "gpuMemory": 15079}}
    assert fake.inputs["values"]["topology"]["nodePoolLabelKey"] == sharing.SIMULATED_POOL_LABEL
    pool = one(records, "gpuplatform:index:GpuNodePool")
    assert pool.inputs["nodeLabels"][sharing.SIMULATED_POOL_LABEL] == "sim-t4"


def test_mig_on_plain_cluster_installs_the_gpu_operator():
    raw = stack_raw("local")
    raw["cluster"]["simulateGpus"] = False
    raw["nodePools"][0] = {"name": "a100", "gpuModel": "A100-40GB", "gpusPerNode": 8, "maxNodes": 1,
                           "sharing": {"mode": "mig", "profile": "3g.20gb", "strategy": "single"}}
    raw["workloads"] = [raw["workloads"][0]]
    raw["workloads"][0]["nodePool"] = "a100"
    scaled_on(raw["workloads"][0], "gpu_engine_active", 0.6)
    records = synth(raw)
    op = one(records, RELEASE, "gpu-gpu-software-gpu-operator")
    assert op.inputs["chart"] == "gpu-operator" and op.inputs["version"] == chart("gpu-operator").version
    assert op.inputs["values"]["mig"] == {"strategy": "single"}
    sm = op.inputs["values"]["dcgmExporter"]["serviceMonitor"]
    assert sm["honorLabels"] is True and sm["additionalLabels"] == {"release": "kube-prometheus-stack"}
    assert not [r for r in of_type(records, RELEASE) if r.inputs["name"] == "dcgm-exporter"]
    container = one(records, DEPLOYMENT).inputs["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"  # single strategy: MIG devices as GPUs
    hpa = one(records, HPA_V2)
    assert hpa.inputs["spec"]["metrics"][0]["pods"]["target"] == {"type": "AverageValue", "averageValue": "600m"}


# ------------------------------------------------------------------------------------------------ workloads
@pytest.mark.parametrize("stack,expected", [
    ("dev", {"aliyun.com/gpu-mem": "4"}),
    ("staging", {"nvidia.com/gpu": "1"}),
    ("prod", {"nvidia.com/mig-1g.5gb": "1"}),
    ("local", {"nvidia.com/gpu": "1"}),
])
def test_gpu_resource_matches_sharing_mode(stack_records, stack, expected):
    for dep in of_type(stack_records(stack), DEPLOYMENT):
        spec = dep.inputs["spec"]
        res = spec["template"]["spec"]["containers"][0]["resources"]
        for key, value in expected.items():
            assert res["limits"][key] == value and res["requests"][key] == value
        assert "replicas" not in spec, "the HPA owns the replica count"


def test_core_mem_adds_core_percentage():
    raw = stack_raw("dev")
    raw["nodePools"][0]["sharing"]["policy"] = "core_mem"
    raw["workloads"][0]["gpu"]["corePercent"] = 30
    dep = one(synth(raw), DEPLOYMENT)
    limits = dep.inputs["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits[sharing.RESOURCE_GPU_MEM] == "4" and limits[sharing.RESOURCE_GPU_CORE] == "30"


def test_pods_are_scheduled_on_their_pool_with_restricted_security(stack_records):
    dep = one(stack_records("staging"), DEPLOYMENT)
    pod = dep.inputs["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"gpuplatform.io/pool": "a10"}
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present",
                                   "effect": "NoSchedule"}]
    sc = pod["containers"][0]["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False and sc["capabilities"] == {"drop": ["ALL"]}
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert {p for p in pod["containers"][0] if p.endswith("Probe")} == {"startupProbe", "readinessProbe",
                                                                       "livenessProbe"}


@pytest.mark.parametrize("version,asked,api", [("1.22", None, "autoscaling/v2beta2"), ("1.23", None, "autoscaling/v2"),
                                               ("1.30", None, "autoscaling/v2"),
                                               ("1.22", "autoscaling/v2beta1", "autoscaling/v2beta1")])
def test_hpa_api_version_follows_cluster_version(version, asked, api):
    """Below 1.23 v2beta2 (served 1.12-1.25, with behavior); v2beta1 only when the stack asks for it."""
    raw = stack_raw("staging")
    raw["cluster"]["kubernetesVersion"] = version
    if asked:
        raw["workloads"][0]["autoscaling"]["hpaApiVersion"] = asked
    hpa = one(synth(raw), f"kubernetes:{api}:HorizontalPodAutoscaler")
    metric = hpa.inputs["spec"]["metrics"][0]["pods"]
    if api != "autoscaling/v2beta1":
        assert metric == {"metric": {"name": "DCGM_CUSTOM_PROCESS_SM_UTIL"},
                          "target": {"type": "AverageValue", "averageValue": "20"}}
        assert hpa.inputs["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 600  # 300 s raised to the floor
    else:
        assert metric == {"metricName": "DCGM_CUSTOM_PROCESS_SM_UTIL", "targetAverageValue": "20"}
        assert "behavior" not in hpa.inputs["spec"]


def test_staging_hpa_is_the_ack_guide_hpa_in_the_correct_form(stack_records):
    spec = one(stack_records("staging"), HPA_V2).inputs["spec"]
    assert spec["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "bert-intent-detection"}
    assert (spec["minReplicas"], spec["maxReplicas"]) == (1, 10)
    assert spec["metrics"][0]["pods"]["target"]["type"] == "AverageValue"  # the guide wrote Utilization


def _allowed_per_second(rules: dict, policy_type: str) -> float:
    rates = [p["value"] / p["periodSeconds"] for p in rules["policies"] if p["type"] == policy_type]
    return max(rates, default=0.0)


def test_default_behavior_scales_up_fast_and_down_cautiously(stack_records):
    # staging sets no behavior of its own (prod tunes its scale-down: below)
    behavior = one(stack_records("staging"), HPA_V2).inputs["spec"]["behavior"]
    up = behavior["scaleUp"]
    # never slower than what kube-controller-manager does with no behavior at all
    assert up["stabilizationWindowSeconds"] <= HPA_DEFAULT_SCALE_UP["stabilizationWindowSeconds"]
    assert up["selectPolicy"] == "Max"
    for policy in HPA_DEFAULT_SCALE_UP["policies"]:
        assert _allowed_per_second(up, policy["type"]) >= policy["value"] / policy["periodSeconds"], policy
        assert min(p["periodSeconds"] for p in up["policies"] if p["type"] == policy["type"]) \
            <= policy["periodSeconds"]
    assert {"type": "Percent", "value": 100, "periodSeconds": 15} in up["policies"]
    # the default window (300 s) raised to the scale-in floor: staging's startup budget, 600 s without a model
    assert behavior["scaleDown"] == {"stabilizationWindowSeconds": 600, "selectPolicy": "Max",
                                     "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}


def test_a_stacks_own_scale_down_replaces_the_default(stack_records):
    """prod's tuned scale-down (stacks/Pulumi.prod.yaml): its window, the default select policy, its policies."""
    behavior = one(stack_records("prod"), HPA_V2).inputs["spec"]["behavior"]
    assert behavior["scaleDown"] == {"stabilizationWindowSeconds": 900, "selectPolicy": "Max",
                                     "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}


def test_scale_up_default_is_stated_the_same_in_config_docs_and_readme():
    """The docstring and docs/configuration.md state the default the code applies (one wording per place, from the
    code)."""
    pct = next(p for p in DEFAULT_SCALE_UP["policies"] if p["type"] == "Percent")
    pods = next(p for p in DEFAULT_SCALE_UP["policies"] if p["type"] == "Pods")
    assert pct["periodSeconds"] == pods["periodSeconds"]
    period = pct["periodSeconds"]
    doc = inspect.getsource(config_module.Behavior)
    assert f"+{pct['value']}% or +{pods['value']} pods per {period}s" in doc
    guide = " ".join((REPO / "docs" / "configuration.md").read_text().split())
    assert f"by {pct['value']}% or {pods['value']} pods per {period} s" in guide


def test_behavior_override_from_the_stack():
    raw = stack_raw("staging")
    raw["workloads"][0]["autoscaling"]["behavior"] = {"scaleDown": {
        "stabilizationWindowSeconds": 900, "policies": [{"type": "Percent", "value": 10, "periodSeconds": 120}]}}
    down = one(synth(raw), HPA_V2).inputs["spec"]["behavior"]["scaleDown"]
    assert down["stabilizationWindowSeconds"] == 900
    assert down["policies"] == [{"type": "Percent", "value": 10, "periodSeconds": 120}]


def _adapter_rules(records):
    for rel in of_type(records, RELEASE):
        values = rel.inputs.get("values") or {}
        if rel.inputs["name"] == "prometheus-adapter":
            return values["rules"]["custom"]
        if rel.inputs["name"] == "ack-alibaba-cloud-metrics-adapter":
            return values["AlibabaCloudMetricsAdapter"]["prometheus"]["adapter"]["rules"]["custom"]
    raise AssertionError("no adapter release")


@pytest.mark.parametrize("stack", ["dev", "staging", "prod", "local"])
def test_hpa_metric_names_are_served_by_the_generated_rules(stack_records, stack):
    records = stack_records(stack)
    served = served_names(_adapter_rules(records))
    asked = {m["pods"]["metric"]["name"] for h in of_type(records, HPA_V2) for m in h.inputs["spec"]["metrics"]}
    assert asked and asked <= served


def _serving_port_metrics(raw, path="/metrics"):
    """prod's workload as a server of the team's own (no ``server``: Triton serves its metrics on 8002 only), its
    metrics served on the HTTP port (as vLLM, SGLang and TGI serve theirs), scaled on a GPU metric."""
    w = raw["workloads"][0]
    w.pop("server", None)
    w["ports"] = [{"name": "http", "containerPort": 8000, "protocol": "http", "metricsPath": path},
                  {"name": "grpc", "containerPort": 8001, "protocol": "grpc"}]
    scaled_on(w, "gpu_engine_active", 0.5)
    return raw


@pytest.mark.parametrize("path", ["/metrics", "/v1/metrics"])
def test_pod_monitor_scrapes_a_serving_port_at_its_metrics_path(path):
    records = synth(_serving_port_metrics(stack_raw("prod"), path))
    mon = one(records, "kubernetes:monitoring.coreos.com/v1:PodMonitor")
    assert mon.inputs["spec"]["podMetricsEndpoints"] == [{"port": "http", "path": path, "interval": "10s"}]
    svc = one(records, "kubernetes:core/v1:Service")
    assert [p["name"] for p in svc.inputs["spec"]["ports"]] == ["http", "grpc"]  # the API port stays served


def test_a_metrics_port_can_move_its_path():
    raw = stack_raw("prod")
    # an exporter of the team's own (Triton itself serves /metrics only)
    raw["workloads"][0].pop("server", None)
    scaled_on(raw["workloads"][0], "gpu_engine_active", 0.5)
    raw["workloads"][0]["ports"][2]["metricsPath"] = "/stats/prometheus"
    mon = one(synth(raw), "kubernetes:monitoring.coreos.com/v1:PodMonitor")
    assert mon.inputs["spec"]["podMetricsEndpoints"][0]["path"] == "/stats/prometheus"


def test_no_pod_monitor_without_a_port_that_serves_metrics():
    raw = stack_raw("prod")
    raw["workloads"][0]["ports"] = raw["workloads"][0]["ports"][:2]
    scaled_on(raw["workloads"][0], "gpu_engine_active", 0.5)
    assert of_type(synth(raw), "kubernetes:monitoring.coreos.com/v1:PodMonitor") == []


def test_prod_triton_service_has_monitor_ingress_and_claims(stack_records):
    records = stack_records("prod")
    mon = one(records, "kubernetes:monitoring.coreos.com/v1:PodMonitor")
    assert mon.inputs["spec"]["podMetricsEndpoints"] == [{"port": "metrics", "path": "/metrics", "interval": "10s"}]
    assert "gpu-monitoring-kube-prometheus-stack" in mon.depends_on
    ingresses = {r.inputs["metadata"]["name"]: r.inputs for r in of_type(records, "kubernetes:networking.k8s.io/v1:Ingress")}
    # one Ingress per served port: the backend protocol annotation applies to a whole Ingress object
    assert {name: i["metadata"]["annotations"]["nginx.ingress.kubernetes.io/backend-protocol"]
            for name, i in ingresses.items()} == {"flower-http": "HTTP", "flower-grpc": "GRPC"}
    assert ingresses["flower-grpc"]["spec"]["tls"] == [{"hosts": ["flower-grpc.inference.example.com"],
                                                        "secretName": "flower-tls"}]
    svc = one(records, "kubernetes:core/v1:Service")
    assert svc.inputs["spec"]["type"] == "ClusterIP"
    assert [p["name"] for p in svc.inputs["spec"]["ports"]] == ["http", "grpc"]  # metrics port not exposed
    pv = one(records, "kubernetes:core/v1:PersistentVolume")
    assert pv.inputs["spec"]["nfs"] == {"server": "192.168.10.20", "path": "/exports/flowerdemo", "readOnly": True}
    pod = one(records, DEPLOYMENT).inputs["spec"]["template"]["spec"]
    assert {"name": "models", "persistentVolumeClaim": {"claimName": "flower-models", "readOnly": True}} in pod["volumes"]


def test_each_workload_object_waits_only_for_what_it_needs(stack_records):
    deps = {r.type.rsplit(":", 1)[1]: set(r.depends_on) for r in stack_records("prod") if r.parent == "gpu-flower"}
    namespace, pool, prometheus = "gpu-workloads-namespace", "gpu-a100-mig-pool", "gpu-monitoring-kube-prometheus-stack"
    for kind in ("Service", "PodDisruptionBudget", "HorizontalPodAutoscaler", "PersistentVolumeClaim"):
        assert deps[kind] == {namespace}, kind  # not minutes behind a node pool or a Helm release
    assert deps["Ingress"] == {namespace, "gpu-cluster-nginx-ingress-controller"}  # its address needs the controller
    assert deps["PersistentVolume"] == set()  # cluster-scoped
    assert deps["PodMonitor"] == {namespace, prometheus}  # its CRD comes with kube-prometheus-stack
    assert {namespace, pool} < deps["Deployment"] and prometheus not in deps["Deployment"]
    assert any(d.startswith("gpu-flower-persistentvolumeclaim-") for d in deps["Deployment"])
    local = {r.type.rsplit(":", 1)[1]: set(r.depends_on) for r in stack_records("local")
             if r.parent == "gpu-batch-embedder"}
    assert local["ScaledObject"] == {"gpu-workloads-namespace", "gpu-monitoring-keda"}
    assert "gpu-gpu-software-fake-gpu-operator" in local["Deployment"]  # simulated GPUs before pods that request them


def test_reused_service_passes_its_dependencies_to_every_child():
    import pulumi
    import pulumi_kubernetes as k8s

    from gpuplatform.components import GpuCluster, GpuMonitoring, GpuNodePool, InferenceService
    from gpuplatform.synth import synthesize

    def program():
        cluster = GpuCluster("c", {"cluster": {"kind": "kubeconfig", "kubernetesVersion": "1.33"}})
        pool = GpuNodePool("p", {"cluster": cluster, "pool": {"name": "p", "gpuModel": "T4", "gpusPerNode": 1,
                                                              "maxNodes": 2}})
        monitoring = GpuMonitoring("m", {"cluster": cluster})
        ns = k8s.core.v1.Namespace("team-ns", metadata={"name": "ml"})
        InferenceService("svc", {
            "workload": {"name": "svc", "image": "x:1", "gpu": {"count": 1},
                         "ports": [{"name": "http", "containerPort": 80, "protocol": "http"}],
                         "autoscaling": {"maxReplicas": 2, "metrics": [{"metric": "gpu_util", "target": 50}]}},
            "node_pool": pool, "monitoring": monitoring, "namespace": "ml"},
            opts=pulumi.ResourceOptions(depends_on=[ns]))

    records = synthesize({}, program)
    children = [r for r in records if r.parent == "svc"]
    assert children and all(r.depends_on[:1] == ["team-ns"] for r in children)
    # the component itself waits for nothing: a dependency on it would hold back every child's registration
    assert one(records, "gpuplatform:index:InferenceService").depends_on == []


def test_internal_and_public_load_balancers():
    raw = stack_raw("staging")
    svc = one(synth(raw), "kubernetes:core/v1:Service")
    assert svc.inputs["spec"]["type"] == "LoadBalancer"
    assert svc.inputs["metadata"]["annotations"] == {
        "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type": "intranet"}
    raw["settings"]["allowPublicEndpoints"] = True
    raw["workloads"][0]["exposure"]["serviceType"] = "PublicLoadBalancer"
    svc = one(synth(raw), "kubernetes:core/v1:Service")
    assert svc.inputs["spec"]["type"] == "LoadBalancer" and "annotations" not in svc.inputs["metadata"]


def test_keda_workload_gets_a_scaled_object_and_no_hpa(stack_records):
    records = stack_records("local")
    so = one(records, "kubernetes:keda.sh/v1alpha1:ScaledObject")
    assert so.inputs["spec"]["minReplicaCount"] == 0 and so.inputs["spec"]["maxReplicaCount"] == 2
    trigger = so.inputs["spec"]["triggers"][0]
    assert trigger["type"] == "prometheus" and trigger["metricType"] == "AverageValue"
    assert trigger["metadata"]["query"] == (
        'sum(avg(DCGM_FI_DEV_GPU_UTIL{namespace="inference",pod=~"batch-embedder-.*"}) by (pod))')
    assert [h.inputs["metadata"]["name"] for h in of_type(records, HPA_V2)] == ["echo-gpu"]
    keda = one(records, RELEASE, "gpu-monitoring-keda")
    assert keda.inputs["version"] == chart("keda").version
    adapter = one(records, RELEASE, "gpu-monitoring-prometheus-adapter")
    assert adapter.inputs["values"]["rules"]["external"] == []  # external.metrics.k8s.io is KEDA's


# ------------------------------------------------------------------------------------------------ monitoring
def test_arms_backend_reads_the_intranet_endpoint_and_installs_the_ack_adapter(stack_records):
    records = stack_records("staging")
    adapter = one(records, RELEASE, "gpu-monitoring-ack-metrics-adapter")
    assert adapter.inputs["chart"] == "ack-alibaba-cloud-metrics-adapter"
    assert adapter.inputs["namespace"] == "kube-system"
    prom = adapter.inputs["values"]["AlibabaCloudMetricsAdapter"]["prometheus"]
    assert prom["url"].startswith("http://offline-intranet.arms.aliyuncs.com:9090/api/v1/prometheus/")
    assert prom["prometheusHeader"] == {"Authorization": "offline-token"}
    assert prom["metricsRelistInterval"] == "1m"
    assert prom["adapter"]["rules"] == {"default": False, "custom": [{
        "seriesQuery": 'DCGM_CUSTOM_PROCESS_SM_UTIL{NamespaceName!="",PodName!=""}',
        "resources": {"overrides": {"NamespaceName": {"resource": "namespace"}, "PodName": {"resource": "pod"}}},
        "name": {"matches": "^DCGM_CUSTOM_PROCESS_SM_UTIL$", "as": "DCGM_CUSTOM_PROCESS_SM_UTIL"},
        "metricsQuery": "avg(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)"}]}
    patch = one(records, "kubernetes:apps/v1:DaemonSetPatch")
    assert patch.inputs["metadata"]["namespace"] == "arms-prom"
    assert patch.inputs["spec"]["template"]["spec"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}]
    names = {r.inputs["prometheusAlertRuleName"] for r in of_type(records, "alicloud:arms/prometheusAlertRule:PrometheusAlertRule")}
    assert {"GpuHpaMetricUnavailable", "GpuHpaAtMaxReplicas", "CustomMetricsApiUnavailable", "GpuXidError",
            "GpuMemoryNearlyFull"} <= names


def test_self_hosted_backend_in_prod(stack_records):
    records = stack_records("prod")
    kps = one(records, RELEASE, "gpu-monitoring-kube-prometheus-stack")
    spec = kps.inputs["values"]["prometheus"]["prometheusSpec"]
    assert spec["scrapeInterval"] == "10s"
    assert spec["podMonitorSelectorNilUsesHelmValues"] is False
    assert spec["serviceMonitorSelectorNilUsesHelmValues"] is False
    adapter = one(records, RELEASE, "gpu-monitoring-prometheus-adapter").inputs["values"]
    assert adapter["prometheus"] == {"url": "http://kube-prometheus-stack-prometheus.monitoring.svc", "port": 9090}
    assert adapter["replicas"] == 2 and adapter["podDisruptionBudget"]["enabled"] is True
    assert adapter["certManager"] == {"enabled": True}
    assert adapter["rbac"] == {"create": False}
    assert adapter["metricsRelistInterval"] == "30s"
    # the catalog's rule with the stack's 30s window (its values: tests/promtool/components/test_adapter_rules_triton_queue_time.py)
    queued = "sum by (<<.GroupBy>>) (increase(nv_inference_queue_duration_us{<<.LabelMatchers>>}[30s]))"
    served = "sum by (<<.GroupBy>>) (increase(nv_inference_request_success{<<.LabelMatchers>>}[30s]))"
    assert adapter["rules"]["custom"][0]["metricsQuery"] == f"({queued} / ({served} > 0)) or ({served} == 0)"
    dcgm = one(records, RELEASE, "gpu-monitoring-dcgm-exporter").inputs["values"]
    assert dcgm["serviceMonitor"]["honorLabels"] is True
    assert dcgm["extraEnv"] == [{"name": "DCGM_EXPORTER_INTERVAL", "value": "10000"}]
    roles = of_type(records, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole")
    for role in roles:
        for rule in role.inputs["rules"]:
            assert "*" not in rule["verbs"] and "*" not in rule["resources"]
    bindings = of_type(records, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding")
    assert "cluster-admin" not in {b.inputs["roleRef"]["name"] for b in bindings}
    rule = one(records, "kubernetes:monitoring.coreos.com/v1:PrometheusRule")
    assert "gpu-monitoring-kube-prometheus-stack" in rule.depends_on
    dash = one(records, "kubernetes:core/v1:ConfigMap", "gpu-autoscaling-dashboard")
    assert dash.inputs["metadata"]["labels"] == {"grafana_dashboard": "1"}


def test_dev_adapter_is_single_replica_with_a_verified_apiservice():
    """Outside prod too, the APIService gets a cert-manager certificate, not the chart's insecureSkipTLSVerify."""
    records = synth(stack_raw("local"))
    values = one(records, RELEASE, "gpu-monitoring-prometheus-adapter").inputs["values"]
    assert values["replicas"] == 1 and values["certManager"] == {"enabled": True}
    assert one(records, RELEASE, "gpu-monitoring-cert-manager").inputs["chart"] == "cert-manager"


def test_helm_values_escape_hatch_is_merged_over_ours():
    raw = stack_raw("prod")
    raw["monitoring"]["helmValues"] = {"kubePrometheusStack": {"prometheus": {"prometheusSpec": {"retention": "30d"}}}}
    spec = one(synth(raw), RELEASE, "gpu-monitoring-kube-prometheus-stack").inputs["values"]["prometheus"]["prometheusSpec"]
    assert spec["retention"] == "30d" and spec["scrapeInterval"] == "10s"


def test_no_duplicate_urns_with_many_workloads():
    raw = stack_raw("prod")
    base = raw["workloads"][0]
    raw["workloads"] = []
    for i in range(3):
        w = copy.deepcopy(base)
        w["name"] = f"flower-{i}"
        for route in w["exposure"]["ingress"]["routes"]:
            route["host"] = f"{route['port']}-{i}.inference.example.com"
        raw["workloads"].append(w)
    records = synth(raw)  # synthesize raises on duplicate URNs
    assert len(of_type(records, HPA_V2)) == 3


def test_a_stated_keda_cooldown_is_rendered_and_an_unset_one_is_raised_to_the_startup_budget():
    """batch-embedder states no model nor startup timeout: its floor is 600 s, above KEDA's 300 s default."""
    raw = stack_raw("local")
    so = one(synth(raw), "kubernetes:keda.sh/v1alpha1:ScaledObject").inputs["spec"]
    assert so["cooldownPeriod"] == 600
    assert so["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] \
        == 600
    raw["workloads"][1]["autoscaling"]["cooldownPeriodSeconds"] = 1200
    so = one(synth(raw), "kubernetes:keda.sh/v1alpha1:ScaledObject").inputs["spec"]
    assert so["cooldownPeriod"] == 1200


# ---------------------------------------------------------------------------------------------- node autoscaling
AUTOSCALING_CONFIG = "alicloud:cs/autoscalingConfig:AutoscalingConfig"


def _stack_files_creating_ack():
    from gpuplatform.components.stack_config import namespace_from_stack_file

    files = sorted((REPO / "stacks").glob("Pulumi.*.yaml")) + sorted((REPO / "examples").glob("*/Pulumi.0*.yaml"))
    out = []
    for f in files:
        raw = namespace_from_stack_file(f)
        if raw["cluster"]["kind"] == "ack-managed" and any(p.get("autoscaling", True) for p in raw["nodePools"]):
            out.append(pytest.param(raw, id=f.stem))
    return out


@pytest.mark.parametrize("raw", _stack_files_creating_ack())
def test_every_stack_that_creates_an_ack_cluster_with_an_autoscaled_pool_enables_node_autoscaling(raw):
    """ACK scales a pool only once node autoscaling is on for the cluster: one AutoscalingConfig, with ACK's
    defaults, that every autoscaled pool waits for."""
    records = synth(raw)
    config = one(records, AUTOSCALING_CONFIG)
    cluster = one(records, "alicloud:cs/managedKubernetes:ManagedKubernetes")
    assert config.inputs["clusterId"] == f"c-offline-{cluster.name}"
    assert {k: config.inputs[k] for k in ("scalerType", "scanInterval", "utilizationThreshold",
                                          "gpuUtilizationThreshold", "coolDownDuration", "unneededDuration",
                                          "expander", "scaleUpFromZero", "maxGracefulTerminationSec",
                                          "scaleDownEnabled")} == {
        "scalerType": "cluster-autoscaler", "scanInterval": "30s", "utilizationThreshold": "0.5",
        "gpuUtilizationThreshold": "0.5", "coolDownDuration": "10m", "unneededDuration": "10m",
        "expander": "least-waste", "scaleUpFromZero": True, "maxGracefulTerminationSec": 14400,
        "scaleDownEnabled": True}
    for pool in of_type(records, NODE_POOL):
        if pool.inputs["scalingConfig"].get("enable"):
            assert config.name in pool.depends_on, pool.name


def test_node_autoscaling_settings_reach_the_autoscaling_config():
    raw = stack_raw("prod")
    raw["cluster"]["nodeAutoscaling"] = {"scalerType": "goatscaler", "scanInterval": "15s",
                                         "scaleDownGpuUtilizationThreshold": 0.3, "scaleDownUnneededTime": "20m",
                                         "maxGracefulTerminationSec": 900}
    config = one(synth(raw), AUTOSCALING_CONFIG)
    assert (config.inputs["scalerType"], config.inputs["scanInterval"], config.inputs["gpuUtilizationThreshold"],
            config.inputs["coolDownDuration"], config.inputs["maxGracefulTerminationSec"]) == (
        "goatscaler", "15s", "0.3", "20m", 900)


def test_a_stack_without_an_autoscaled_pool_creates_no_autoscaling_config():
    raw = stack_raw("dev")
    raw["nodePools"][0].update({"autoscaling": False, "desiredNodes": 1})
    raw["workloads"][0]["autoscaling"]["maxReplicas"] = 2
    assert not of_type(synth(raw), AUTOSCALING_CONFIG)
