"""Plain manifests get the server checks a stack's workloads get: the server of each container (by image and
command), then its probes against its health facts, its liveness probe against its least start, a monitor that
scrapes it against whether it serves metrics, and a claim its replicas share against the claim's access mode. Each
finding names the object, the container, the server and its version, and what to change."""
import copy

import pytest

from gpuplatform.catalogs import server_sglang, server_vllm
from gpuplatform.catalogs.server_base import parameters_in_name, weights_gib_lower_bound
from gpuplatform.policies.servers import least_start_seconds, server_container
from policy_helpers import only
from test_policies_rules import LLAMA_70B, SGLANG, cache_claim, extra, llm_server, pod_monitor, probed, with_port


def sglang(*args, image="lmsysorg/sglang:v0.5.4", env=None):
    obj = llm_server(image=image, command=SGLANG["command"], args=("--model-path", "/m", "--tp", "2", *args))
    if env:
        obj["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return obj


def container(obj):
    return obj["spec"]["template"]["spec"]["containers"][0]


# ---------------------------------------------------------------------------------------------- probe timeout
def test_sglang_probes_at_the_kubelets_default_timeout_fail_a_healthy_server():
    found = only("server-probe-timeout", extra(probed(sglang())))
    assert len(found) == 3  # startup, readiness, liveness
    ready = next(m for m in found if "readinessProbe" in m)
    assert ready.startswith("Deployment inference/llm container server: its readinessProbe GETs /health")
    assert "SGLang 0.5.4" in ready and "the kubelet's default timeout of 1 s" in ready
    assert f"allowed: timeoutSeconds: {server_sglang.HEALTH.probe_timeout_seconds}" in ready
    assert only("server-probe-timeout", extra(probed(sglang(), timeout=21))) == []


def test_a_stated_timeout_of_one_second_is_no_better_than_the_default():
    (m, *_rest) = only("server-probe-timeout", extra(probed(sglang(), timeout=1, startup=False)))
    assert "timeoutSeconds 1 reads every healthy answer as a failure" in m


@pytest.mark.parametrize("image,path,env,flagged", [
    ("lmsysorg/sglang:v0.4.9", "/health", None, False),            # /health was a plain 200 before 0.4.10.post2
    ("lmsysorg/sglang:v0.4.10.post2", "/health", None, True),
    ("lmsysorg/sglang:v0.4.9", "/health_generate", None, True),    # always generated
    ("lmsysorg/sglang:v0.5.6", "/health", {"SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION": "false"}, False),
    ("lmsysorg/sglang:v0.5.4", "/health", {"SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION": "false"}, True),  # not read yet
    ("lmsysorg/sglang:latest", "/health", None, True),             # a tag that pins nothing: a current release
    ("lmsysorg/sglang:v0.5.4", "/get_model_info", None, False),
])
def test_which_releases_and_paths_generate(image, path, env, flagged):
    obj = probed(sglang(image=image, env=env), path=path, startup=False)
    assert bool(only("server-probe-timeout", extra(obj))) is flagged


def test_servers_whose_health_does_not_generate_are_not_judged_on_their_timeout():
    assert only("server-probe-timeout", extra(probed(llm_server()))) == []


# ---------------------------------------------------------------------------------------------- startup probe
def test_a_70b_model_with_a_liveness_probe_and_no_startup_probe_restarts_before_it_serves():
    (m,) = only("server-startup-probe", extra(probed(llm_server(args=LLAMA_70B), timeout=5, delay=60, startup=False)))
    assert m.startswith("Deployment inference/llm container server: vLLM 0.9.2 takes at least ")
    assert "meta-llama/Llama-3.1-70B-Instruct's weights, at least 130 GiB" in m
    assert "restarts it after 90 s (initialDelaySeconds 60 + failureThreshold 3 x periodSeconds 10)" in m
    assert "allowed: a startupProbe (httpGet /health" in m


def test_a_startup_probe_or_a_liveness_budget_over_the_least_start_passes():
    assert only("server-startup-probe", extra(probed(llm_server(args=LLAMA_70B), timeout=5, delay=60))) == []
    assert only("server-startup-probe", extra(probed(llm_server(args=LLAMA_70B), timeout=5, delay=600,
                                                     startup=False))) == []


def test_the_least_start_is_the_servers_measured_start_plus_the_weights_at_the_fastest_rate():
    s = server_container(container(llm_server(args=LLAMA_70B)))
    least, how = least_start_seconds(s)
    assert least == pytest.approx(server_vllm.VLLM_START.seconds(True, cached=True) + 70e9 * 2 / 2**30 * 1024 / 600)
    eager = server_container(container(llm_server(args=(*LLAMA_70B, "--enforce-eager"))))
    assert least_start_seconds(eager)[0] == pytest.approx(least - 58 + server_vllm.VLLM_START.process.seconds)
    assert "from measured phases" in how and "600 MiB/s" in how


def test_a_server_whose_start_is_only_estimated_is_judged_on_its_weights_alone():
    tgi = llm_server(image="ghcr.io/huggingface/text-generation-inference:3.3.7", args=("--model-id", "/m"), gpus=1,
                     shm=False)
    assert only("server-startup-probe", extra(probed(tgi, timeout=5, startup=False))) == []
    big = llm_server(image="ghcr.io/huggingface/text-generation-inference:3.3.7",
                     args=("--model-id", "meta-llama/Llama-3.1-70B-Instruct"), gpus=1, shm=False)
    (m,) = only("server-startup-probe", extra(probed(big, timeout=5, startup=False)))
    assert "TGI 3.3.7 takes at least 223 s" in m


def test_a_liveness_check_that_passes_while_loading_is_not_judged():
    # SGLang's port opens before it is ready: a TCP liveness probe passes during the load
    obj = sglang()
    container(obj)["livenessProbe"] = {"tcpSocket": {"port": 30000}}
    obj_70b = copy.deepcopy(obj)
    container(obj_70b)["args"] = ["--model-path", "meta-llama/Llama-3.1-70B-Instruct", "--tp", "2"]
    assert only("server-startup-probe", extra(obj_70b)) == []
    # vLLM's does not: the same TCP probe fails until the model is loaded
    vllm = llm_server(args=LLAMA_70B)
    container(vllm)["livenessProbe"] = {"tcpSocket": {"port": 8000}}
    assert only("server-startup-probe", extra(vllm))


def test_model_sizes_from_names_are_lower_bounds():
    assert parameters_in_name("meta-llama/Llama-3.1-70B-Instruct") == 70
    assert parameters_in_name("Qwen/Qwen3-235B-A22B") == 235
    assert parameters_in_name("mistralai/Mixtral-8x7B-Instruct-v0.1") == 7
    assert parameters_in_name("deepseek-ai/DeepSeek-R1") is None
    assert weights_gib_lower_bound("TheBloke/Llama-2-70B-AWQ") == pytest.approx(70e9 * 0.5 / 2**30)
    assert weights_gib_lower_bound("meta-llama/Llama-3.1-70B", quantization="fp8") == pytest.approx(70e9 / 2**30)


# ---------------------------------------------------------------------------------------------- metrics
def test_a_podmonitor_on_sglang_without_enable_metrics_scrapes_nothing():
    (m,) = only("server-metrics-served", extra(with_port(sglang()), pod_monitor()))
    assert m.startswith("PodMonitor inference/llm scrapes the pods of Deployment inference/llm, whose container "
                        "server runs SGLang 0.5.4")
    assert "allowed: add '--enable-metrics' to the args" in m
    assert only("server-metrics-served", extra(with_port(sglang("--enable-metrics")), pod_monitor())) == []
    # a prefix argparse resolves is the flag too (SGLang's parser reads --enable-metric as --enable-metrics)
    assert only("server-metrics-served", extra(with_port(sglang("--enable-metric")), pod_monitor())) == []


def test_no_monitor_or_a_monitor_of_other_pods_is_no_finding():
    assert only("server-metrics-served", extra(with_port(sglang()))) == []
    assert only("server-metrics-served", extra(with_port(sglang()), pod_monitor(app="other"))) == []


def test_a_release_without_a_flag_table_is_read_by_the_catalogs_flags():
    on = with_port(sglang("--enable-metrics", image="lmsysorg/sglang:v0.4.6"))
    assert only("server-metrics-served", extra(on, pod_monitor())) == []
    (m,) = only("server-metrics-served", extra(with_port(sglang(image="lmsysorg/sglang:v0.4.6")), pod_monitor()))
    assert "SGLang 0.4.6" in m


def test_triton_with_metrics_turned_off_and_a_service_monitor():
    triton = llm_server(image="nvcr.io/nvidia/tritonserver:24.08-py3", command=("tritonserver",),
                        args=("--model-repository=/models", "--allow-metrics=false"), gpus=1, shm=False)
    container(triton)["ports"] = [{"name": "metrics", "containerPort": 8002}]
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "llm", "namespace": "inference",
                                                                   "labels": {"app": "llm"}},
               "spec": {"selector": {"app": "llm"}, "ports": [{"name": "metrics", "port": 8002}]}}
    monitor = {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
               "metadata": {"name": "llm", "namespace": "inference"},
               "spec": {"selector": {"matchLabels": {"app": "llm"}}, "endpoints": [{"port": "metrics"}]}}
    (m,) = only("server-metrics-served", extra(triton, service, monitor))
    assert "ServiceMonitor inference/llm" in m and "Triton 2.49.0" in m and "--allow-metrics=false" in m


# ---------------------------------------------------------------------------------------------- shared claims
def test_a_readwriteonce_compile_cache_shared_by_three_replicas():
    (m,) = only("server-cache-claim-shared", extra(*cache_claim(llm_server(), ["ReadWriteOnce"])))
    assert m.startswith("Deployment inference/llm container server (vLLM 0.9.2) keeps its compile and kernel caches "
                        "(VLLM_CACHE_ROOT) at /cache/vllm on PersistentVolumeClaim inference/cache, which is "
                        "ReadWriteOnce, and up to 3 pods of the workload mount it")
    assert "allowed: accessModes [ReadWriteMany]" in m


@pytest.mark.parametrize("modes,replicas,flagged", [
    (["ReadWriteMany"], 3, False), (["ReadOnlyMany"], 3, False), (["ReadWriteOnce"], 1, False),
    (["ReadWriteOncePod"], 2, True), (["ReadWriteOnce", "ReadWriteMany"], 3, False)])
def test_only_single_node_modes_with_more_than_one_replica(modes, replicas, flagged):
    found = only("server-cache-claim-shared", extra(*cache_claim(llm_server(), modes, replicas=replicas)))
    assert bool(found) is flagged


def test_an_autoscaler_that_may_add_replicas_counts():
    objs = cache_claim(llm_server(), ["ReadWriteOnce"], replicas=1)
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
           "metadata": {"name": "llm", "namespace": "inference"},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "llm"},
                    "minReplicas": 1, "maxReplicas": 4}}
    (m,) = only("server-cache-claim-shared", extra(*objs, hpa))
    assert "up to 4 pods of the workload mount it" in m


def test_a_claim_not_among_the_manifests_or_a_container_that_runs_no_server_is_not_judged():
    deployment, _claim = cache_claim(llm_server(), ["ReadWriteOnce"])
    assert only("server-cache-claim-shared", extra(deployment)) == []
    other, claim = cache_claim(llm_server(image="registry.example.com/team/app:1.0", args=()), ["ReadWriteOnce"])
    assert only("server-cache-claim-shared", extra(other, claim)) == []


def lws(claim_in=("leaderTemplate",), size=2, replicas=1):
    """A LeaderWorkerSet of vLLM whose templates named in ``claim_in`` mount the ReadWriteOnce claim ``cache``."""
    def template(name):
        c = {"name": name, "image": "vllm/vllm-openai:v0.9.2", "args": ["--model", "/m"]}
        spec = {"containers": [c]}
        if name in claim_in:
            c["volumeMounts"] = [{"name": "cache", "mountPath": "/cache"}]
            spec["volumes"] = [{"name": "cache", "persistentVolumeClaim": {"claimName": "cache"}}]
        return {"metadata": {"labels": {"app": "llm"}}, "spec": spec}
    obj = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
           "metadata": {"name": "llm", "namespace": "inference"},
           "spec": {"replicas": replicas, "leaderWorkerTemplate": {
               "size": size, "leaderTemplate": template("leaderTemplate"),
               "workerTemplate": template("workerTemplate")}}}
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"name": "cache", "namespace": "inference"}, "spec": {"accessModes": ["ReadWriteOnce"]}}
    return [obj, claim]


@pytest.mark.parametrize("claim_in,size,replicas,pods", [
    (("leaderTemplate",), 2, 1, 0),                      # one leader: nothing shared
    (("leaderTemplate", "workerTemplate"), 2, 1, 2),     # the leader and its worker
    (("workerTemplate",), 3, 1, 2),                      # two workers of one group
    (("leaderTemplate",), 2, 2, 2),                      # two groups' leaders
])
def test_a_leaderworkerset_counts_the_pods_each_template_makes(claim_in, size, replicas, pods):
    found = only("server-cache-claim-shared", extra(*lws(claim_in, size, replicas)))
    assert (found[0].count(f"up to {pods} pods") if found else 0) == (1 if pods else 0)
    assert "LeaderWorkerSet inference/llm" in (found[0] if found else "LeaderWorkerSet inference/llm")


def test_a_monitor_scraping_the_pods_of_a_leaderworkerset():
    obj, _claim = lws(claim_in=())
    for t in ("leaderTemplate", "workerTemplate"):
        c = obj["spec"]["leaderWorkerTemplate"][t]["spec"]["containers"][0]
        c.update(image="lmsysorg/sglang:v0.5.4", command=["python3", "-m", "sglang.launch_server"],
                 args=["--model-path", "/m"], ports=[{"name": "http", "containerPort": 30000}])
    found = only("server-metrics-served", extra(obj, pod_monitor()))
    assert found and all(m.startswith("PodMonitor inference/llm scrapes the pods of LeaderWorkerSet inference/llm")
                         for m in found)
