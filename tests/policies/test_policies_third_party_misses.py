"""What real third-party YAML used to get past `check --manifests` (the corpus files 45-58 show each in the shape
projects publish): each rule's edges, as small pure functions and as findings."""
import copy

import pytest
import yaml

from gpuplatform.apiserver import externally_accessible, semantic_rejections
from gpuplatform.catalogs.images import mutable_tag
from gpuplatform.catalogs.metrics import metric_range
from gpuplatform.catalogs.secrets import flag_credentials, unexpanded_variable
from gpuplatform.check import read_manifests, run_policies
from gpuplatform.policies.reliability import cluster_names_used
from gpuplatform.policies.security import escalation_grants
from gpuplatform.records import RegisteredResource
from support import FIXTURES_DIR

CORPUS = FIXTURES_DIR / "corpus"


def resource(doc: dict) -> RegisteredResource:
    group, _, version = doc["apiVersion"].rpartition("/")
    ns = doc["metadata"].get("namespace", "default")
    return RegisteredResource(f"kubernetes:{group or 'core'}/{version}:{doc['kind']}",
                              f"{ns}/{doc['metadata']['name']}", doc)


def docs(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((CORPUS / name).read_text()) if d]


def ids(found, level=None) -> set[str]:
    return {v.policy_id for v in found if level is None or v.level == level}


# ------------------------------------------------------------------------------------------------ credentials
@pytest.mark.parametrize("words, expected", [
    (["vllm", "serve", "m", "--api-key", "sk-abc123"], [(4, "--api-key", "a literal value")]),
    (["--api-key=sk-abc123"], [(0, "--api-key", "a literal value")]),
    (["python3 -m sglang.launch_server --api-key sk-abc --port 30000"], [(0, "--api-key", "a literal value")]),
    (["--hf-token", "$HF_TOKEN"], [(1, "--hf-token", "the text '$HF_TOKEN', which Kubernetes does not expand "
                                                      "(only $(NAME))")]),
    (["--api-key", "$(VLLM_API_KEY)"], []),                       # Kubernetes expands it from a Secret's env
    (["vllm serve m --api-key $VLLM_API_KEY"], []),                # a shell expands it
    (["--api-key", "<your-key>"], []),                             # a placeholder
    (["--api-key", "--port", "8000"], []),                         # no value
    (["--max-num-batched-tokens", "8192", "--tokenizer", "t"], []),  # settings that only look like it
    (["--ssl-keyfile", "/certs/key.pem", "--api-key-file", "/run/key"], []),
    (["--secret-field-selector=type!=kubernetes.io/dockercfg", "--token-ttl", "1h"], []),  # about secrets, not one
    (["--client-secret", "s3cr3t"], [(1, "--client-secret", "a literal value")]),
])
def test_a_secret_looking_flag_given_a_literal_value(words, expected):
    assert flag_credentials(words) == expected


def test_only_parenthesised_variables_are_expanded_by_kubernetes():
    assert unexpanded_variable("$HF_TOKEN") == "$HF_TOKEN"
    assert unexpanded_variable(" ${HF_TOKEN} ") == "${HF_TOKEN}"
    assert unexpanded_variable("$(HF_TOKEN)") is None
    assert unexpanded_variable("hf_$TOKEN") is None and unexpanded_variable("") is None


def test_a_custom_resources_secret_names_and_env_lists_are_not_read_as_secrets():
    (adapter,) = docs("46_aibrix_modeladapter_key.yaml")
    adapter = copy.deepcopy(adapter)
    adapter["spec"]["additionalConfig"] = {"apiKeySecret": "lora-api-key"}
    adapter["spec"]["envs"] = [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "t", "key": "k"}}}]
    assert not run_policies([resource(adapter)])
    adapter["spec"]["additionalConfig"] = {"api-key": "sk-lora-admin"}
    (v,) = run_policies([resource(adapter)])
    assert v.policy_id == "container-no-plaintext-secrets" and "sk-lora-admin" not in v.message


# ------------------------------------------------------------------------------------------------ RBAC
def test_escalation_grants_by_name_only():
    rule = {"apiGroups": [""], "resources": ["pods/exec", "pods/log"], "verbs": ["create", "get"]}
    assert [(v, r) for v, r, _ in escalation_grants(rule)] == [("create", "pods/exec")]
    assert escalation_grants({"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["get"]}) == []
    assert escalation_grants({"apiGroups": ["apps"], "resources": ["pods/exec"], "verbs": ["create"]}) == []
    # '*' resources are rbac-no-wildcards' finding, not a second one here
    assert escalation_grants({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}) == []
    assert [v for v, _, _ in escalation_grants(
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["bind", "escalate"]})
    ] == ["escalate", "bind"]
    assert [r for _, r, _ in escalation_grants({"apiGroups": [""], "resources": ["nodes/proxy"], "verbs": ["get"]})
            ] == ["nodes/proxy"]


# ------------------------------------------------------------------------------------------------ images
def test_branch_tags_move_and_versions_do_not():
    assert all(mutable_tag(t) for t in ("latest", "main", "nightly", "dev", "Edge"))
    assert not any(mutable_tag(t) for t in ("v0.6.3", "nightly-2024-05-01", "24.08-py3", "dev-cu124"))


# ------------------------------------------------------------------------------------------------ API server
def test_external_traffic_policy_only_on_services_reachable_from_outside():
    svc = {"kind": "Service", "spec": {"externalTrafficPolicy": "Local", "ports": [{"port": 80}]}}
    assert [r.render() for r in semantic_rejections(svc)] == [
        "spec.externalTrafficPolicy: Invalid value: 'Local': may only be set for externally-accessible services "
        "(type LoadBalancer or NodePort, or ClusterIP with externalIPs; this one: ClusterIP)"]
    for spec in ({"type": "NodePort"}, {"type": "LoadBalancer"}, {"externalIPs": ["10.0.0.9"]}):
        assert externally_accessible(spec)
        assert not semantic_rejections({"kind": "Service", "spec": {**svc["spec"], **spec}})


def test_a_pods_metric_needs_an_average_value():
    def hpa(target, api="autoscaling/v2"):
        return {"apiVersion": api, "kind": "HorizontalPodAutoscaler", "spec": {"metrics": [
            {"type": "Pods", "pods": {"metric": {"name": "q"}, "target": target}}]}}
    assert [r.render() for r in semantic_rejections(hpa({"type": "Value", "value": "10"}))] == [
        "spec.metrics[0].pods.target.averageValue: Required value: must specify a positive target averageValue"]
    assert not semantic_rejections(hpa({"type": "AverageValue", "averageValue": "10"}))
    assert not semantic_rejections(hpa({}, api="autoscaling/v2beta1"))  # not served: no-removed-api-versions


# ------------------------------------------------------------------------------------------------ host network DNS
def test_cluster_names_a_pod_dials():
    def pod(*args, env=()):
        return {"containers": [{"name": "c", "args": list(args), "env": list(env)}]}
    assert [n for n, _, _ in cluster_names_used(pod("--dist-init-addr", "$(LWS_LEADER_ADDRESS):20000"))] == [
        "$(LWS_LEADER_ADDRESS)"]
    assert [n for n, _, _ in cluster_names_used(pod("torchrun --master-addr=llm-0.llm.ml.svc --nnodes 2"))] == [
        "llm-0.llm.ml.svc"]
    assert [n for n, _, _ in cluster_names_used(pod(env=[{"name": "MASTER_ADDR", "value": "leader"}]))] == [
        "leader"]
    assert not cluster_names_used(pod("--dist-init-addr", "10.0.0.5:20000", "--address=$NODE_IP"))
    assert not cluster_names_used(pod("--host", "0.0.0.0", "--model", "Qwen/Qwen2.5-7B"))


def test_cluster_first_with_host_net_resolves_the_leader():
    (lws,) = docs("52_sglang_host_network_lws.yaml")
    for role in ("leaderTemplate", "workerTemplate"):
        lws["spec"]["leaderWorkerTemplate"][role]["spec"]["dnsPolicy"] = "ClusterFirstWithHostNet"
    assert "pod-host-network-dns" not in ids(run_policies([resource(lws)]))


def test_a_node_agent_on_the_host_network_is_not_asked_for_cluster_dns():
    assert "pod-host-network-dns" not in ids(run_policies(read_manifests(
        [CORPUS / "05_gpushare_device_plugin.yaml", CORPUS / "32_node_exporter.yaml"]).resources))


# ------------------------------------------------------------------------------------------------ Ray dashboard
def _ray(**edit):
    objs = copy.deepcopy(docs("47_ray_dashboard_ingress.yaml"))
    for d in objs:
        if d["kind"] in edit:
            edit[d["kind"]](d)
    return run_policies([resource(d) for d in objs])


def test_an_authenticated_ray_dashboard_passes():
    assert "ray-dashboard-authenticated" in ids(_ray(), "mandatory")
    assert not _ray(Ingress=lambda d: d["metadata"].update(
        annotations={"nginx.ingress.kubernetes.io/auth-url": "https://oauth2.example.com/oauth2/auth"}))
    token = {"name": "RAY_AUTH_MODE", "value": "token"}
    assert not _ray(RayCluster=lambda d: d["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0].update(
        env=[token]))


def test_the_dashboard_port_by_name_and_kuberays_own_ingress():
    def by_name(d):
        d["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["port"] = {"name": "dashboard"}
    assert "ray-dashboard-authenticated" in ids(_ray(Ingress=by_name))

    def serve_port(d):
        d["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["port"] = {"number": 8000}
    assert not _ray(Ingress=serve_port)  # Ray Serve's HTTP port is the application, not the dashboard
    found = _ray(Ingress=serve_port, RayCluster=lambda d: d["spec"]["headGroupSpec"].update(enableIngress=True))
    assert [v.message for v in found] == [
        "RayCluster ray/llm-serve sets headGroupSpec.enableIngress: true, an Ingress to its dashboard without "
        "authentication at spec.headGroupSpec.enableIngress"]


# ------------------------------------------------------------------------------------------------ target range
def test_the_catalog_knows_the_range_of_bounded_metrics_only():
    assert metric_range("gpu_cache_usage_perc")[1].maximum == 1.0        # AIBrix's name of vLLM's series
    assert metric_range("vllm:kv_cache_usage_perc")[0] == "vllm_kv_cache_usage"
    assert metric_range("DCGM_FI_DEV_GPU_UTIL")[1].maximum == 100.0
    assert metric_range("gpu_engine_active")[1].name == "ratio"
    assert metric_range("vllm_num_requests_waiting") is None              # unbounded
    assert metric_range("vllm_ttft_p90_ms") is None and metric_range("my_own_metric") is None


def test_targets_within_range_and_rescaled_queries_pass():
    objs = copy.deepcopy(docs("53_autoscaler_targets_out_of_range.yaml"))
    aibrix, keda, hpa = objs
    aibrix["spec"]["metricsSources"][0]["targetValue"] = "0.8"
    hpa["spec"]["metrics"][0]["pods"]["target"]["averageValue"] = "800m"
    keda["spec"]["triggers"][0]["metadata"]["query"] = "avg(vllm:kv_cache_usage_perc) * 100"  # a percent now
    assert "autoscaler-target-in-range" not in ids(run_policies([resource(d) for d in objs]))
    keda["spec"]["triggers"][0]["metadata"]["query"] = "avg(vllm:kv_cache_usage_perc{model_name=\"a-b\"})"
    (v,) = [v for v in run_policies([resource(d) for d in objs]) if v.policy_id == "autoscaler-target-in-range"]
    assert v.message.startswith("ScaledObject llm/qwen-7b targets 50 on 'vllm:kv_cache_usage_perc'")


# ------------------------------------------------------------------------------------------------ printed once
def test_a_finding_is_printed_once_when_two_files_hold_the_same_workload(capsys):
    """The ACK guide's files each carry the bert-intent-detection Deployment: its HPA is reported once for it."""
    import json

    from gpuplatform.cli import main

    main(["check", "--manifests", str(CORPUS.parent / "seed_manifests"), "--format", "json"])
    found = json.loads(capsys.readouterr().out)
    keys = [(v["policy_id"], v["file"], v["line"], v["message"]) for v in found]
    assert [k for k in keys if keys.count(k) > 1] == []
    assert any(k[0] == "deployment-no-replicas-with-autoscaler" for k in keys)
