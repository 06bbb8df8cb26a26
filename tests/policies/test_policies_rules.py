"""Each policy, through its real pulumi_policy object: quiet on what our stacks register, loud on one mutation."""
import pytest

from gpuplatform.catalogs import sharing
from gpuplatform.catalogs.metrics import METRICS
from gpuplatform.policies.pack import ALL_POLICIES, POLICY_DEFS
from gpuplatform.policies.registry import REGISTRY, by_id
from policy_helpers import STACKS, find, only, pod_spec, stack_resources

from pulumi_policy import ResourceValidationPolicy, StackValidationPolicy


def container(rs):
    return pod_spec(find(rs, "Deployment"))["containers"][0]


def hpa_metric(rs):
    return find(rs, "HorizontalPodAutoscaler").inputs["spec"]["metrics"][0]["pods"]["metric"]


def api_name(metric: str, exporter: str) -> str:
    return METRICS[metric].source(exporter).api_name


def set_pool_label(rs, key, value):
    labels = find(rs, "alicloud:cs/nodePool:NodePool").inputs["labels"]
    labels[:] = [lab for lab in labels if lab["key"] != key] + [{"key": key, "value": value}]


def extra(*objs):
    """Plain Kubernetes objects appended to a stack."""
    from gpuplatform.records import RegisteredResource
    from gpuplatform.policies.k8s import type_token
    return [RegisteredResource(type_token(o["apiVersion"], o["kind"]), o["metadata"]["name"], o) for o in objs]


def _gpu_node_job(gpu=0, env=None, toleration=None, selector=None):
    """A Job on GPU nodes: by default a downloader that tolerates no GPU taint (compliant); ``toleration={}``
    tolerates every taint, as node agents do, which is no choice of GPU nodes."""
    container = {"name": "fetch", "image": "registry.example.com/fetch:1.2"}
    if gpu:
        container["resources"] = {"limits": {"nvidia.com/gpu": gpu}}
    if env:
        container["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": env}]
    spec = {"containers": [container], "restartPolicy": "Never"}
    if toleration is not None:
        spec["tolerations"] = [{"operator": "Exists", **toleration}]
    if selector:
        spec["nodeSelector"] = selector
    if gpu or env:
        spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": f"fetch-{gpu}-{env}-{bool(selector)}-{toleration}"},
            "spec": {"template": {"spec": spec}}}


def binding(role="view", subjects=None):
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "b"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                                   "name": role},
            "subjects": subjects or [{"kind": "ServiceAccount", "name": "reader", "namespace": "inference"}]}


def role(verbs=("get", "list", "watch"), resources=("pods",)):
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"},
            "rules": [{"apiGroups": [""], "resources": list(resources), "verbs": list(verbs)}]}


def apiservice(**spec):
    return {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": "v1beta1.custom.metrics.k8s.io"},
            "spec": {"group": "custom.metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100,
                     "versionPriority": 100, "service": {"name": "prometheus-adapter", "namespace": "monitoring"},
                     **spec}}


def mig_manager(namespace, image="nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.12.1"):
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "nvidia-mig-manager",
                                                                      "namespace": namespace},
            "spec": {"template": {"spec": {"hostPID": True, "containers": [
                {"name": "m", "image": image, "securityContext": {"privileged": True}}]}}}}


def ray_dashboard_ingress(annotations):
    """An Ingress to a KubeRay head Service's dashboard port, with the given annotations."""
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "ray", "namespace": "ray", "annotations": annotations},
            "spec": {"rules": [{"http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {
                "service": {"name": "raycluster-head-svc", "port": {"number": 8265}}}}]}}]}}


def llm_server(image="vllm/vllm-openai:v0.9.2", args=("--model", "/models/m", "--tensor-parallel-size", "2"),
               gpus=2, shm=True, command=()):
    """A plain Deployment of an inference server, as a team writes it by hand."""
    container = {"name": "server", "image": image, "args": list(args),
                 "resources": {"limits": {"nvidia.com/gpu": gpus}}}
    if command:
        container["command"] = list(command)
    spec = {"containers": [container]}
    if shm:
        spec["volumes"] = [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}}]
        container["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "llm", "namespace": "inference"},
            "spec": {"selector": {"matchLabels": {"app": "llm"}},
                     "template": {"metadata": {"labels": {"app": "llm"}}, "spec": spec}}}


SGLANG = dict(image="lmsysorg/sglang:v0.5.4", command=("python3", "-m", "sglang.launch_server"))


def _server_pod(obj):
    return obj["spec"]["template"]["spec"]


def probed(obj, timeout=None, startup=True, delay=0, path="/health"):
    """The server with readiness and liveness probes on ``path`` (``timeout`` None: the kubelet's default) and,
    with ``startup``, a startup probe of 20 minutes."""
    c = _server_pod(obj)["containers"][0]
    probe = {"httpGet": {"path": path, "port": 8000}, **({"timeoutSeconds": timeout} if timeout else {})}
    c["readinessProbe"] = dict(probe)
    c["livenessProbe"] = dict(probe, initialDelaySeconds=delay) if delay else dict(probe)
    if startup:
        c["startupProbe"] = dict(probe, periodSeconds=10, failureThreshold=120)
    return obj


def pod_monitor(app="llm"):
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PodMonitor",
            "metadata": {"name": app, "namespace": "inference"},
            "spec": {"selector": {"matchLabels": {"app": app}}, "podMetricsEndpoints": [{"port": "http"}]}}


def with_port(obj):
    _server_pod(obj)["containers"][0]["ports"] = [{"name": "http", "containerPort": 30000}]
    return obj


def cache_claim(obj, modes, replicas=3):
    """The server's VLLM_CACHE_ROOT on the claim ``cache`` of ``modes``, the workload at ``replicas``."""
    obj["spec"]["replicas"] = replicas
    spec = _server_pod(obj)
    c = spec["containers"][0]
    c.setdefault("volumeMounts", []).append({"name": "cache", "mountPath": "/cache"})
    c["env"] = [{"name": "VLLM_CACHE_ROOT", "value": "/cache/vllm"}]
    spec.setdefault("volumes", []).append({"name": "cache", "persistentVolumeClaim": {"claimName": "cache"}})
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"name": "cache", "namespace": "inference"},
             "spec": {"accessModes": list(modes), "resources": {"requests": {"storage": "10Gi"}}}}
    return [obj, claim]


LLAMA_70B = ("--model", "meta-llama/Llama-3.1-70B-Instruct", "--tensor-parallel-size", "2")


def adapter_config(text):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "adapter-config", "namespace": "monitoring"},
            "data": {"config.yaml": text}}


def external_hpa(rs):
    """An HPA whose target and adapter config are not among the checked resources."""
    hpa = find(rs, "HorizontalPodAutoscaler").inputs
    return [r for r in extra(hpa)]


def _mutate(stack, fn):
    def build():
        rs = stack_resources(stack)
        fn(rs)
        return rs
    return build


def _plain(*objs):
    return lambda: extra(*objs)


# policy id -> (compliant resources, violating resources), each a zero-argument builder
CASES = {
    "gpu-metric-matches-sharing-mode": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: hpa_metric(rs).update(name=api_name("gpu_util", "dcgm")))),
    "gpu-mig-profile-valid": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: find(rs, "gpuplatform:index:GpuNodePool").inputs.update(migProfile="1g.6gb"))),
    "gpu-node-pool-sharing-label": (
        _mutate("dev", lambda rs: None),
        _mutate("prod", lambda rs: set_pool_label(rs, sharing.ACK_SCHEDULE_LABEL, sharing.CGPU_POLICIES[0]))),
    "gpu-cgpu-memory-fits-card": (
        _mutate("dev", lambda rs: None),
        _mutate("dev", lambda rs: [container(rs)["resources"][k].update({sharing.RESOURCE_GPU_MEM: "20"})
                                   for k in ("requests", "limits")])),
    "gpu-resource-matches-pool": (
        _mutate("dev", lambda rs: None),
        _mutate("dev", lambda rs: [container(rs)["resources"].update(
            {k: {"cpu": "1", "memory": "4Gi", sharing.RESOURCE_GPU: "1"}}) for k in ("requests", "limits")])),
    "gpu-limit-equals-request": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: container(rs)["resources"]["requests"].update(
            {sharing.mig_resource("1g.5gb", "mixed"): "2"}))),
    "gpu-pod-placement": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: pod_spec(find(rs, "Deployment")).pop("tolerations"))),
    "gpu-hpa-within-pool-capacity": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: find(rs, "HorizontalPodAutoscaler").inputs["spec"].update(maxReplicas=200))),
    "hpa-metric-served": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: hpa_metric(rs).update(name="avg_time_queue_ms"))),
    "hpa-app-metric-scraped": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: find(rs, "PodMonitor").inputs["spec"].update(
            selector={"matchLabels": {"app": "someone-else"}}))),
    "adapter-config-valid": (
        _plain(adapter_config("rules:\n- seriesQuery: 'up'\n  metricsQuery: 'sum(up)'\n")),
        _plain(adapter_config("rules:\n- seriesQuery: 'up'\n   metricsQuery: sum(up)\n"))),
    "context-cannot-verify": (
        _mutate("prod", lambda rs: None),
        lambda: external_hpa(stack_resources("prod"))),
    "hpa-target-exists": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: find(rs, "HorizontalPodAutoscaler").inputs["spec"]["scaleTargetRef"].update(
            apiVersion="apps/v1beta1"))),
    "hpa-pods-metric-average-value": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: find(rs, "HorizontalPodAutoscaler").inputs["spec"]["metrics"][0]["pods"][
            "target"].update(type="Utilization"))),
    "hpa-metric-per-pod": (
        _mutate("staging", lambda rs: None),
        _mutate("staging", lambda rs: hpa_metric(rs).update(name=api_name("gpu_util", "ack")))),
    "hpa-metric-scales-down": (
        _mutate("dev", lambda rs: None),
        _mutate("dev", lambda rs: hpa_metric(rs).update(name=api_name("gpu_mem_used", "ack")))),
    "hpa-replica-bounds": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: find(rs, "HorizontalPodAutoscaler").inputs["spec"].update(maxReplicas=1))),
    "deployment-no-replicas-with-autoscaler": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: find(rs, "Deployment").inputs["spec"].update(replicas=3))),
    "gpu-resource-known": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: container(rs)["resources"]["limits"].update({"nvidia.com/gpu-all": "1"}))),
    "gpu-visible-devices-isolated": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: container(rs).setdefault("env", []).append(
            {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}))),
    "gpu-node-pod-requests-gpu": (
        _plain(_gpu_node_job(), _gpu_node_job(gpu=1), _gpu_node_job(env="void"), _gpu_node_job(toleration={})),
        _plain(_gpu_node_job(selector={"cloud.google.com/gke-accelerator": "nvidia-l4"}),
               _gpu_node_job(toleration={"key": "nvidia.com/gpu"}))),
    "helm-values-no-plaintext-secrets": (
        _mutate("prod", lambda rs: find(rs, "kubernetes:helm.sh/v3:Release").inputs["values"].setdefault(
            "grafana", {}).update(admin={"existingSecret": "grafana-admin", "passwordKey": "password"})),
        _mutate("prod", lambda rs: find(rs, "kubernetes:helm.sh/v3:Release").inputs["values"].setdefault(
            "grafana", {}).update(adminPassword="hunter2"))),
    "rbac-no-cluster-admin-binding": (_plain(binding()), _plain(binding("cluster-admin"))),
    "rbac-no-system-group-binding": (
        _plain(binding()), _plain(binding(subjects=[{"kind": "Group", "name": "system:authenticated"}]))),
    "rbac-no-wildcards": (_plain(role(verbs=["*"])), _plain(role(verbs=["*"], resources=["*"]))),
    "container-no-plaintext-secrets": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: container(rs).setdefault("env", []).append({"name": "HF_TOKEN",
                                                                                 "value": "hf_abc"}))),
    "apiservice-tls-verified": (_plain(apiservice(caBundle="LS0t")), _plain(apiservice(insecureSkipTLSVerify=True))),
    "adapter-release-tls": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: find(rs, "Release").inputs["values"].pop("certManager"))),
    "service-no-public-loadbalancer": (
        _mutate("staging", lambda rs: None),
        _mutate("staging", lambda rs: find(rs, "Service").inputs["metadata"].pop("annotations"))),
    "network-policy-selects-serving-pods": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: rs.remove(find(rs, "NetworkPolicy")))),
    "service-metrics-port-not-exposed": (
        _mutate("staging", lambda rs: None),
        _mutate("staging", lambda rs: find(rs, "Service").inputs["spec"]["ports"].append(
            {"name": "metrics", "port": 8002, "targetPort": 8002}))),
    # the real parsers' reading: SGLang's --tp is its --tp-size; --tp_size is no spelling it has
    "server-command-line": (
        _plain(llm_server(), llm_server(image="lmsysorg/sglang:v0.5.4", command=("python3", "-m", "sglang.launch_server"),
                                         args=("--model-path", "/m", "--tp", "2"))),
        _plain(llm_server(image="lmsysorg/sglang:v0.5.4", command=("python3", "-m", "sglang.launch_server"),
                          args=("--model-path", "/m", "--tp_size", "2")))),
    "server-shared-memory": (_plain(llm_server()), _plain(llm_server(shm=False))),
    # SGLang's /health generates a token (about 1 s): the kubelet's default 1 s timeout fails it, 21 s does not
    "server-probe-timeout": (
        _plain(probed(llm_server(**SGLANG, args=("--model-path", "/m", "--tp", "2")), timeout=21)),
        _plain(probed(llm_server(**SGLANG, args=("--model-path", "/m", "--tp", "2"))))),
    # 130 GiB of weights outlast a 60 + 3 x 10 s liveness budget unless a startup probe holds the liveness probe
    "server-startup-probe": (
        _plain(probed(llm_server(args=LLAMA_70B), timeout=5, delay=60)),
        _plain(probed(llm_server(args=LLAMA_70B), timeout=5, delay=60, startup=False))),
    "server-metrics-served": (
        _plain(with_port(llm_server(**SGLANG, args=("--model-path", "/m", "--tp", "2", "--enable-metrics"))),
               pod_monitor()),
        _plain(with_port(llm_server(**SGLANG, args=("--model-path", "/m", "--tp", "2"))), pod_monitor())),
    "server-cache-claim-shared": (
        _plain(*cache_claim(llm_server(), ["ReadWriteMany"])),
        _plain(*cache_claim(llm_server(), ["ReadWriteOnce"]))),
    "pod-run-as-non-root": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: container(rs)["securityContext"].update(runAsNonRoot=False))),
    "custom-metrics-single-adapter": (
        _mutate("prod", lambda rs: None),
        lambda: stack_resources("prod") + extra(apiservice(insecureSkipTLSVerify=False))),
    "pod-root-opt-out": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: find(rs, "Deployment").inputs["spec"]["template"]["metadata"].update(
            annotations={"gpuplatform.io/run-as-root": "true"}))),
    "pod-no-privilege-escalation": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: container(rs)["securityContext"].pop("allowPrivilegeEscalation"))),
    "pod-drop-all-capabilities": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: container(rs)["securityContext"].update(capabilities={"add": ["SYS_ADMIN"]}))),
    "pod-seccomp-profile": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: container(rs)["securityContext"].update(seccompProfile={"type": "Unconfined"}))),
    # recognised by its image, whatever its namespace; the same privileges for an application image are a hole
    "pod-no-privileged": (_plain(mig_manager("team-a")),
                          _plain(mig_manager("gpu-operator", image="registry.example.com/team/trainer:1.0"))),
    "pod-no-host-namespaces": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: pod_spec(find(rs, "Deployment")).update(hostNetwork=True))),
    "pod-restricted-volumes": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: pod_spec(find(rs, "Deployment"))["volumes"].append(
            {"name": "cache", "hostPath": {"path": "/data/engines", "type": "DirectoryOrCreate"}}))),
    "container-probes": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: container(rs).pop("readinessProbe"))),
    "container-resources": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: container(rs)["resources"]["limits"].pop("memory"))),
    "image-pinned": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: container(rs).update(image="nvcr.io/nvidia/tritonserver:latest"))),
    "helm-chart-pinned": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: find(rs, "Release").inputs.pop("version"))),
    "pdb-allows-disruption": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: find(rs, "PodDisruptionBudget").inputs["spec"].update(maxUnavailable=0))),
    "pdb-below-autoscaler-min": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: find(rs, "PodDisruptionBudget").inputs["spec"].update(
            minAvailable=1, maxUnavailable=None))),
    "gpu-deployment-topology-spread": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: pod_spec(find(rs, "Deployment")).pop("topologySpreadConstraints"))),
    "serving-pod-drain-grace": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: pod_spec(find(rs, "Deployment")).update(terminationGracePeriodSeconds=30))),
    "serving-pod-drain": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: container(rs).pop("lifecycle"))),
    "adapter-high-availability": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: find(rs, "Release").inputs["values"].update(replicas=1))),
    "protect-prod-infrastructure": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: setattr(find(rs, "alicloud:cs/nodePool:NodePool"), "protect", False))),
    "rbac-no-privilege-escalation": (_plain(role(resources=["pods", "pods/log"])),
                                     _plain(role(verbs=["create"], resources=["pods/exec"]))),
    "ray-dashboard-authenticated": (
        _plain(ray_dashboard_ingress({"nginx.ingress.kubernetes.io/auth-url": "https://auth.example.com/verify"})),
        _plain(ray_dashboard_ingress({}))),
    "pod-host-network-dns": (
        _mutate("prod", lambda rs: pod_spec(find(rs, "Deployment")).update(
            hostNetwork=True, dnsPolicy="ClusterFirstWithHostNet")
            or container(rs).setdefault("env", []).append({"name": "MASTER_ADDR", "value": "leader.llm.svc"})),
        _mutate("prod", lambda rs: pod_spec(find(rs, "Deployment")).update(hostNetwork=True)
            or container(rs).setdefault("env", []).append({"name": "MASTER_ADDR", "value": "leader.llm.svc"}))),
    "autoscaler-target-in-range": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: find(rs, "HorizontalPodAutoscaler").inputs["spec"]["metrics"][0]["pods"].update(
            metric={"name": api_name("vllm_kv_cache_usage", "vllm")},
            target={"type": "AverageValue", "averageValue": "50"}))),
    "no-removed-api-versions": (
        _mutate("prod", lambda rs: None),
        _mutate("prod", lambda rs: find(rs, "HorizontalPodAutoscaler").inputs.update(
            apiVersion="autoscaling/v2beta2"))),
}


def test_every_policy_has_a_compliant_and_a_violating_case():
    assert sorted(CASES) == sorted(p.id for p in REGISTRY)
    assert len(REGISTRY) >= 30


def test_pack_holds_real_policy_objects():
    assert len(ALL_POLICIES) == len(POLICY_DEFS)
    assert all(isinstance(p, (ResourceValidationPolicy, StackValidationPolicy)) for p in ALL_POLICIES)
    assert len({p.name for p in ALL_POLICIES}) == len(ALL_POLICIES)


@pytest.mark.parametrize("policy_id", sorted(CASES))
def test_compliant(policy_id):
    compliant, _ = CASES[policy_id]
    assert only(policy_id, compliant()) == []


@pytest.mark.parametrize("policy_id", sorted(CASES))
def test_violating(policy_id):
    _, violating = CASES[policy_id]
    assert only(policy_id, violating()), f"{policy_id} did not flag its violating fixture"


@pytest.mark.parametrize("stack", STACKS)
def test_our_stacks_pass_every_policy(stack):
    from gpuplatform.check import format_table, run_policies
    violations = run_policies(stack_resources(stack))
    assert violations == [], format_table(violations)


@pytest.mark.parametrize("stack", STACKS)
def test_synthesized_stacks_pass_every_policy(stack):
    """The real program under mocks: what `pulumi preview --policy-pack policies` would see."""
    synth = pytest.importorskip("gpuplatform.synth")
    from gpuplatform.components.stack_config import namespace_from_stack_file
    from gpuplatform.check import format_table, run_policies
    from policy_helpers import REPO
    resources = synth.synthesize(synth.stack_config_from_namespace(
        namespace_from_stack_file(REPO / "stacks" / f"Pulumi.{stack}.yaml")), stack=stack)
    assert any(r.type.endswith("HorizontalPodAutoscaler") or r.type.endswith("ScaledObject") for r in resources)
    violations = run_policies(resources)
    assert violations == [], format_table(violations)


def test_a_gpu_node_pod_without_gpus_is_reported_once_per_signal():
    from gpuplatform.check import run_policies
    found = run_policies(extra(_gpu_node_job(selector={"nvidia.com/gpu.present": "true"}),
                               _gpu_node_job(toleration={"key": "nvidia.com/gpu"})),
                         policies=[by_id("gpu-node-pod-requests-gpu")])
    # advisory: whether the container sees the node's GPUs depends on its image and the node's runtime config
    assert [v.level for v in found] == ["advisory", "advisory"]
    assert sorted(any(f" {why} but requests no GPU" in v.message for v in found) for why in (
        "selects GPU nodes by nvidia.com/gpu.present", "tolerates the GPU taint nvidia.com/gpu")) == [True, True]


@pytest.mark.parametrize("resources", [
    {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 8000, "nvidia.com/gpucores": 30},      # HAMi
    {"nvidia.com/gpu": 1, "nvidia.com/gpumem-percentage": 50},                       # HAMi
    {"volcano.sh/vgpu-number": 1, "volcano.sh/vgpu-memory": 4096, "volcano.sh/vgpu-cores": 25},  # Volcano vGPU
], ids=["hami", "hami-percentage", "volcano-vgpu"])
def test_other_gpu_sharing_schedulers_resources_are_neither_typos_nor_missing(resources):
    job = _gpu_node_job(toleration={"key": "nvidia.com/gpu"})
    job["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": dict(resources)}
    assert only("gpu-resource-known", extra(job)) == []
    assert only("gpu-node-pod-requests-gpu", extra(job)) == []


def test_the_cgpu_memory_policy_refuses_a_model_without_sourced_reported_memory():
    # H800-80GB: no citable nvidia-smi total in the catalog, so there is no card size to compare a request with
    rs = stack_resources("dev")
    find(rs, "gpuplatform:index:GpuNodePool").inputs["gpuModel"] = "H800-80GB"
    found = only("gpu-cgpu-memory-fits-card", rs)
    assert found and all("'H800-80GB' has no sourced per-card memory" in m for m in found)
    assert sharing.RESOURCE_GPU_MEM in found[0]
