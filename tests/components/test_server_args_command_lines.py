"""Each inference server as its command line makes it run (components/server_args.py, catalogs/server_cli.py):
where it listens, where it serves metrics, the GPUs it spans, its batch limit, the credentials and writable paths
it takes, checked against the workload before anything is registered; the probes follow the server's own health
check; weights fit the memory one process of a replica sees. Every case here planned clean before the command line
was read, and would have failed on the cluster."""
import copy

import pytest
from support import of_type, stack_raw
from test_metric_sources_llm_servers import llm_workload
from test_scenarios import example_raw, example_records, rejected

from gpuplatform.catalogs import servers
from gpuplatform.components.validation import load
from gpuplatform.components.workload_manifests import probes

W = "workloads[0]"


def vllm(**changes) -> dict:
    """Example 005 at vLLM 0.9.2 (the release whose parser the flag tables were generated from; the example ships a
    later one for its drain) on one A10, weights from a PVC, scaled on waiting requests."""
    raw = example_raw("005")
    raw["workloads"][0]["image"] = "vllm/vllm-openai:v0.9.2"
    raw["workloads"][0].update(changes)
    return raw


def sglang(**changes) -> dict:
    """Example 006: SGLang 0.5.4 on one L20."""
    raw = example_raw("006")
    raw["workloads"][0].update(changes)
    return raw


def tgi() -> dict:
    raw = stack_raw("prod")
    llm_workload("tgi")(raw)
    return raw


def triton() -> dict:
    """prod: Triton on MIG 1g.5gb, HTTP 8000, gRPC 8001, metrics 8002."""
    return stack_raw("prod")


def args_of(raw: dict) -> list:
    return raw["workloads"][0]["args"]


def message_at(raw: dict, path: str) -> str:
    issues = rejected(raw)
    assert path in issues, f"no issue at {path}; got {issues}"
    return issues[path]


def served_deployments(records) -> list:
    """The workloads' Deployments, not their warm-capacity placeholders' (examples 005 and 006 ship some)."""
    return [d for d in of_type(records, "kubernetes:apps/v1:Deployment")
            if d.inputs["metadata"].get("labels", {}).get("app.kubernetes.io/component") != "warm-capacity"]


# ---------------------------------------------------------------------------------------------- probes
def test_sglang_probes_wait_longer_than_its_generating_health_check():
    """SGLang's /health runs a one-token generation and answers after about a second (1.001 s measured), 503
    after its own 20 s timeout; the kubelet's default timeout is 1 s. Example 006 as registered."""
    (deployment,) = served_deployments(example_records("006"))
    container = deployment.inputs["spec"]["template"]["spec"]["containers"][0]
    for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
        probe = container[kind]
        assert probe["httpGet"]["path"] == "/health"
        assert probe["timeoutSeconds"] == servers.SGLANG_HEALTH_CHECK_TIMEOUT_SECONDS + 1 > 1.0016, kind


def test_sglang_probe_timeout_follows_its_health_check_timeout_setting():
    raw = sglang()
    raw["workloads"][0]["env"]["SGLANG_HEALTH_CHECK_TIMEOUT"] = "45"
    got = probes(load(raw).workloads[0])
    assert {got[k]["timeoutSeconds"] for k in got} == {46}


def test_example_005_keeps_its_probes_and_gains_a_timeout_only():
    (deployment,) = served_deployments(example_records("005"))
    container = deployment.inputs["spec"]["template"]["spec"]["containers"][0]
    assert container["readinessProbe"] == {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 5,
                                           "failureThreshold": 3, "timeoutSeconds": 5}
    assert container["livenessProbe"]["timeoutSeconds"] == 5
    assert {"name": "HOME", "value": "/tmp"} in container["env"]


@pytest.mark.parametrize("server,raw_of", [("vllm", vllm), ("sglang", sglang)])
def test_a_partial_probes_block_takes_the_servers_health_paths(server, raw_of):
    raw = raw_of(probes={"port": "http", "startupTimeoutSeconds": 900})
    got = probes(load(raw).workloads[0])
    profile = servers.SERVER_PROFILES[server]
    assert got["readinessProbe"]["httpGet"] == {"path": profile.ready_path, "port": "http"}
    assert got["livenessProbe"]["httpGet"] == {"path": profile.live_path, "port": "http"}
    assert got["startupProbe"]["httpGet"]["path"] == profile.ready_path
    assert got["startupProbe"]["failureThreshold"] * got["startupProbe"]["periodSeconds"] == 900
    # what the stack states is kept
    raw = raw_of(probes={"port": "http", "readinessPath": "/v1/models"})
    assert probes(load(raw).workloads[0])["readinessProbe"]["httpGet"]["path"] == "/v1/models"


def test_a_partial_probes_block_without_a_server_probes_the_root_path():
    raw = example_raw("004")
    raw["workloads"][0]["probes"] = {"port": "jupyter"}
    got = probes(load(raw).workloads[0])
    assert got["readinessProbe"]["httpGet"]["path"] == "/" and "timeoutSeconds" not in got["readinessProbe"]


# ---------------------------------------------------------------------------------------------- listening
@pytest.mark.parametrize("raw_of,flag,fragment", [
    (vllm, "--host=127.0.0.1", "vllm listens on 127.0.0.1 (args '--host=127.0.0.1'): only processes inside the pod"),
    # --uds came with vLLM 0.10.1 (0.9.2 exits on it: test_each_mistake_is_refused_naming_the_flag_and_the_...)
    (lambda: vllm(image="vllm/vllm-openai:v0.10.1"), "--uds=/tmp/vllm.sock",
     "vLLM then serves on a Unix socket and listens on no TCP port"),
    (vllm, "--disable-log-stats", "vllm:* metrics ('vllm_requests_waiting') are never exported"),
    (triton, "--allow-metrics=false", "Triton then serves no metrics port"),
], ids=["loopback", "unix-socket", "no-log-stats", "no-triton-metrics"])
def test_one_flag_that_breaks_the_server_is_refused_at_its_args(raw_of, flag, fragment):
    raw = raw_of()
    args_of(raw).append(flag)
    assert fragment in message_at(raw, f"{W}.args")


def test_sglang_without_host_listens_on_loopback_by_default():
    raw = sglang(args=[a for a in example_raw("006")["workloads"][0]["args"] if not a.startswith("--host")])
    message = message_at(raw, f"{W}.args")
    assert "sglang listens on 127.0.0.1 (the default)" in message


def test_a_port_flag_that_differs_from_the_declared_port_is_refused():
    raw = vllm(args=[a.replace("--port=8000", "--port=8080") for a in example_raw("005")["workloads"][0]["args"]])
    message = message_at(raw, f"{W}.ports[0].containerPort")
    assert "8000: vllm listens on no such port; it listens on 8080 (its API, args '--port=8080')" in message
    assert "allowed: 8080, or '--port 8000' in args" in message


def test_tgi_listens_on_its_images_port_unless_told_otherwise():
    raw = tgi()
    raw["workloads"][0]["ports"][0]["containerPort"] = 8080
    assert "tgi listens on no such port; it listens on 80 (its API, the image's PORT)" in \
        message_at(raw, f"{W}.ports[0].containerPort")
    raw["workloads"][0]["env"] = {"PORT": "8080"}
    assert load(raw).workloads[0].ports[0].container_port == 8080


def test_an_image_built_on_tgi_is_not_judged_on_the_official_images_port():
    raw = tgi()
    raw["workloads"][0]["image"] = "registry.example.com/team/tgi-custom:1.2.0"
    raw["workloads"][0]["ports"][0]["containerPort"] = 8080
    assert load(raw).workloads[0].image.endswith("tgi-custom:1.2.0")


# ---------------------------------------------------------------------------------------------- metrics
def test_sglang_without_enable_metrics_is_refused():
    raw = sglang(args=[a for a in example_raw("006")["workloads"][0]["args"] if a != "--enable-metrics"])
    message = message_at(raw, f"{W}.args")
    assert "SGLang serves no /metrics without --enable-metrics" in message and "'sglang_queue_requests'" in message


def test_a_separate_metrics_port_for_vllm_is_refused():
    raw = vllm()
    w = raw["workloads"][0]
    w["ports"][0].pop("metricsPath")
    w["ports"].append({"name": "metrics", "containerPort": 8001, "protocol": "metrics"})
    assert "8001: vllm listens on no such port; it listens on 8000" in message_at(raw, f"{W}.ports[1].containerPort")


def test_metrics_on_tritons_http_port_are_refused():
    raw = triton()
    w = raw["workloads"][0]
    w["ports"] = [{"name": "http", "containerPort": 8000, "protocol": "http", "metricsPath": "/metrics"},
                  {"name": "grpc", "containerPort": 8001, "protocol": "grpc"}]
    message = message_at(raw, f"{W}.ports[0].metricsPath")
    assert "Triton serves /metrics only on its metrics port" in message
    assert "allowed: a port with protocol 'metrics' and containerPort 8002" in message


def test_triton_health_behind_a_restricted_api_never_gets_ready():
    raw = triton()
    w = raw["workloads"][0]
    w["secretEnv"] = {"TRITON_KEY": {"secretName": "triton", "key": "key"}}
    w["args"].append("--http-restricted-api=health,inference:x-triton-key=$(TRITON_KEY)")
    issues = rejected(raw)
    assert list(issues) == [f"{W}.args"] and "the kubelet's probes carry none" in issues[f"{W}.args"]
    w["args"][-1] = "--http-restricted-api=inference,model-repository:x-triton-key=$(TRITON_KEY)"
    assert load(raw).workloads[0].args[-1].startswith("--http-restricted-api=inference")


# ---------------------------------------------------------------------------------------------- GPUs
def test_a_tensor_parallel_size_above_the_gpu_count_is_refused():
    raw = vllm()
    args_of(raw).append("--tensor-parallel-size=2")
    message = message_at(raw, f"{W}.gpu.count")
    assert "1: vllm spans 2 GPUs (tensor 2 (args '--tensor-parallel-size=2'))" in message and "allowed: 2" in message


def test_gpus_the_server_does_not_use_are_refused():
    raw = vllm()
    raw["workloads"][0]["gpu"]["count"] = 2
    raw["nodePools"][0]["gpusPerNode"] = 2
    assert "so 1 of the replica's GPUs would stay idle" in message_at(raw, f"{W}.gpu.count")
    args_of(raw).extend(["-tp", "2"])
    assert load(raw).workloads[0].gpu.count == 2


def test_tgi_shards_over_the_gpus_it_sees_unless_told():
    raw = tgi()
    raw["workloads"][0]["args"] += ["--num-shard", "2"]
    assert "tgi spans 2 GPUs (shards 2" in message_at(raw, f"{W}.args")  # MIG: one device per process


def test_one_mig_device_per_process():
    raw = triton()
    w = raw["workloads"][0]
    w.update(server="sglang", image="lmsysorg/sglang:v0.5.4", command=["python3", "-m", "sglang.launch_server"],
             args=["--model-path=/models/m", "--host=0.0.0.0", "--port=8000", "--enable-metrics", "--tp-size=2"],
             ports=[{"name": "http", "containerPort": 8000, "protocol": "http", "metricsPath": "/metrics"}])
    w["autoscaling"]["metrics"] = [{"metric": "sglang_queue_requests", "target": 2}]
    w.pop("probes")
    assert "a CUDA process enumerates a single MIG device" in message_at(raw, f"{W}.args")
    w["args"][-1] = "--tp-size=1"
    w["gpu"]["count"] = 2
    assert "uses one of them and the rest stay idle" in message_at(raw, f"{W}.gpu.count")


# ---------------------------------------------------------------------------------------------- batch limit
@pytest.mark.parametrize("extra,target,limit", [([], 250, "256 at once (vLLM's default --max-num-seqs on A10"),
                                                (["--max-num-seqs=16"], 15, "16 at once (args '--max-num-seqs=16')")])
def test_a_running_batch_target_the_server_never_exceeds_is_refused(extra, target, limit):
    raw = vllm()
    args_of(raw).extend(extra)
    raw["workloads"][0]["autoscaling"]["metrics"] = [{"metric": "vllm_requests_running", "target": target}]
    assert limit in message_at(raw, f"{W}.autoscaling.metrics[0].target")


def test_a_running_batch_target_below_the_limit_is_planned():
    raw = vllm()
    args_of(raw).append("--max-num-seqs=16")
    raw["workloads"][0]["autoscaling"]["metrics"] = [{"metric": "vllm_requests_running", "target": 14}]
    assert load(raw).workloads[0].autoscaling.metrics[0].target == 14


def test_tgis_batch_is_capped_by_its_concurrent_requests():
    raw = tgi()
    raw["workloads"][0]["autoscaling"]["metrics"] = [{"metric": "tgi_batch_size", "target": 120}]
    assert "tgi runs at most 128 at once (the default)" in message_at(raw, f"{W}.autoscaling.metrics[0].target")


# ---------------------------------------------------------------------------------------------- credentials
@pytest.mark.parametrize("extra", [["--api-key", "sk-live-123"], ["--hf-token=hf_abcdef"],
                                   ["--model=https://user:tok3n@models.example.com/qwen"]])
def test_a_credential_written_in_the_args_is_refused(extra):
    raw = vllm()
    args_of(raw).extend(extra)
    message = message_at(raw, f"{W}.args")
    assert "plain text" in message and "secretEnv" in message
    assert "sk-live-123" not in message and "hf_abcdef" not in message and "tok3n" not in message


def test_a_credential_from_a_secret_reaches_the_flag_by_reference():
    raw = vllm(secretEnv={"OPENAI_KEY": {"secretName": "chat-keys", "key": "api-key"}})
    args_of(raw).append("--api-key=$(OPENAI_KEY)")
    assert load(raw).workloads[0].args[-1] == "--api-key=$(OPENAI_KEY)"
    from gpuplatform.components.server_args import parse

    raw = vllm(secretEnv={"VLLM_API_KEY": {"secretName": "chat-keys", "key": "api-key"}})
    assert parse(load(raw).workloads[0]).setting("api_key").where == "secretEnv VLLM_API_KEY"


def test_a_shell_script_is_read_as_the_server_reads_it():
    raw = vllm(command=["/bin/sh", "-c"], secretEnv={"KEY": {"secretName": "chat-keys", "key": "api-key"}},
               args=["exec vllm serve /models/Qwen2.5-7B-Instruct --port 8001 --api-key \"$KEY\""])
    assert "vllm listens on no such port; it listens on 8001" in message_at(raw, f"{W}.ports[0].containerPort")
    raw["workloads"][0]["args"] = ["exec vllm serve /models/Qwen2.5-7B-Instruct --port 8000 --api-key \"$KEY\""]
    assert load(raw).workloads[0].command == ["/bin/sh", "-c"]


def test_settings_a_config_file_may_hold_are_not_judged():
    """vLLM reads further flags from ``--config FILE.yaml``: a port the line leaves out may be set there."""
    raw = vllm(args=["--config", "/etc/vllm/serve.yaml"])
    raw["workloads"][0]["ports"][0]["containerPort"] = 8080
    assert load(raw).workloads[0].ports[0].container_port == 8080
    args_of(raw).append("--port=9000")  # what the line itself says still counts
    assert "listens on no such port; it listens on 9000" in message_at(raw, f"{W}.ports[0].containerPort")


def test_flags_the_catalog_does_not_model_pass_untouched_when_the_server_has_them():
    # the real vLLM 0.9.2 parser exits on a flag it does not declare: "--some-future-flag=3", which this test once
    # expected to pass, is refused (tests/gpuplatform/test_server_parsers.py holds the reading to the real parser)
    raw = vllm()
    args_of(raw).extend(["--max-num-batched-tokens", "8192", "--enable-prefix-caching", "--tokenizer-mode=auto",
                         "--kv-cache-dtype", "fp8"])
    assert load(raw).workloads[0].args[-1] == "fp8"
    args_of(raw).append("--some-future-flag=3")
    message = message_at(raw, f"{W}.args")
    assert "--some-future-flag: vLLM 0.9.2" in message and "unrecognized arguments: --some-future-flag=3" in message


# ---------------------------------------------------------------------------------------------- writable paths
def test_server_caches_go_to_tmp_unless_home_points_elsewhere():
    raw = vllm()
    raw["workloads"][0]["env"] = {"HOME": "/home/app"}
    message = message_at(raw, f"{W}.env.HOME")
    assert "vllm writes its compile and kernel caches (VLLM_CACHE_ROOT) to /home/app/.cache/vllm" in message
    assert "and its usage statistics (VLLM_CONFIG_ROOT) to /home/app/.config/vllm" in message
    raw["workloads"][0]["env"] = {}  # HOME defaults to /tmp for a server on a read-only root
    assert load(raw).workloads[0].env == {}


def test_tgi_downloads_to_its_images_data_directory():
    raw = tgi()
    raw["workloads"][0]["model"] = {"sizeGib": 4, "source": "download"}
    message = message_at(raw, f"{W}.model.source")
    assert "tgi downloads the weights to /data/hub (the image's HF_HOME), on the read-only root" in message
    raw["workloads"][0]["volumes"] = [{"name": "data", "mountPath": "/data", "pvc": "tgi-data", "readOnly": False}]
    assert load(raw).workloads[0].volumes[0].mount_path == "/data"


def test_downloaded_weights_do_not_fit_the_tmp_emptydir():
    raw = vllm(model={"sizeGib": 15, "source": "download"})
    raw["workloads"][0]["volumes"] = []
    message = message_at(raw, f"{W}.model.source")
    assert "downloads 15 GiB of weights to /tmp/.cache/huggingface" in message and "1 GiB" in message


# ---------------------------------------------------------------------------------------------- weights fit
def test_mig_single_strategy_counts_the_slice_not_the_card():
    raw = triton()
    raw["nodePools"][0]["sharing"]["strategy"] = "single"
    raw["workloads"][0]["model"] = {"sizeGib": 6, "source": "volume"}
    assert "MIG 1g.5gb = 5 GiB" in message_at(raw, f"{W}.model.sizeGib")


def test_two_mig_devices_are_not_added_up():
    raw = triton()
    w = raw["workloads"][0]
    w.pop("server")
    w["autoscaling"]["metrics"] = [{"metric": "gpu_engine_active", "target": 0.5}]
    w["gpu"]["count"] = 2
    w["model"] = {"sizeGib": 8, "source": "volume"}
    message = message_at(raw, f"{W}.model.sizeGib")
    assert "MIG 1g.5gb = 5 GiB;" in message


def test_the_memory_fraction_counts_on_a_cgpu_share():
    raw = example_raw("004")
    w = raw["workloads"][0]
    w.update(name="chat", image="vllm/vllm-openai:v0.9.2", server="vllm", runAsRoot=False,
             readOnlyRootFilesystem=True, secretEnv={}, gpu={"memoryGib": 12},
             args=["--model=/opt/models/m", "--gpu-memory-utilization=0.5"],
             ports=[{"name": "http", "containerPort": 8000, "protocol": "http", "metricsPath": "/metrics"}],
             model={"sizeGib": 8, "source": "image"})
    raw["workloads"] = [w]
    message = message_at(raw, f"{W}.model.sizeGib")
    assert "12 GiB of cGPU memory (gpu.memoryGib) x 0.5 (args '--gpu-memory-utilization=0.5') = 6 GiB" in message
    w["args"][-1] = "--gpu-memory-utilization=0.9"
    assert load(raw).workloads[0].model.size_gib == 8


# ---------------------------------------------------------------------------------------------- targets
def test_a_latency_target_below_the_histograms_floor_is_refused():
    raw = sglang()
    raw["workloads"][0]["autoscaling"]["metrics"] = [{"metric": "sglang_ttft_p90_ms", "target": 2}]
    message = message_at(raw, f"{W}.autoscaling.metrics[0].target")
    assert "2 ms can never be met" in message and "first bound is 100 ms" in message and "at least 90 ms" in message
    assert "allowed: >= 81.819 (milliseconds)" in message


def test_a_latency_target_below_the_stated_prefill_is_refused():
    raw = vllm()
    w = raw["workloads"][0]
    w["autoscaling"]["metrics"] = [{"metric": "vllm_ttft_p90_ms", "target": 2}]
    w["serviceModel"]["firstTokenMs"] = 150
    message = message_at(raw, f"{W}.autoscaling.metrics[0].target")
    assert "an idle replica reads 235 ms (serviceModel.firstTokenMs 150 ms" in message
    w["autoscaling"]["metrics"][0]["target"] = 2000
    assert load(raw).workloads[0].autoscaling.metrics[0].target == 2000


def test_a_first_token_after_the_whole_request_is_refused():
    raw = vllm()
    raw["workloads"][0]["serviceModel"]["firstTokenMs"] = 800
    assert "'firstTokenMs' (800) must be <= 'serviceTimeMs' (500)" in message_at(raw, f"{W}.serviceModel.firstTokenMs")


def test_a_ratio_just_over_its_ceiling_gets_no_unit_hint():
    raw = vllm()
    raw["workloads"][0]["autoscaling"]["metrics"] = [{"metric": "vllm_kv_cache_usage", "target": 0.95},
                                                     {"metric": "vllm_requests_waiting", "target": 2}]
    message = message_at(raw, f"{W}.autoscaling.metrics[0].target")
    assert "allowed: > 0 and <= 0.909" in message and "did you mean" not in message
    raw["workloads"][0]["autoscaling"]["metrics"][0]["target"] = 80
    assert "did you mean 0.8?" in message_at(raw, f"{W}.autoscaling.metrics[0].target")


# ---------------------------------------------------------------------------------------------- monitoring
@pytest.mark.parametrize("url", ["http://prometheus.monitoring.svc:9090/api/v1/query",
                                 "http://prometheus.monitoring.svc:9090/api/v1/"])
def test_a_prometheus_url_with_the_api_path_is_refused(url):
    raw = stack_raw("staging")
    raw["monitoring"]["prometheusUrl"] = url
    assert "which the adapter and KEDA append themselves" in message_at(raw, "monitoring.prometheusUrl")


@pytest.mark.parametrize("receiver,key", [
    ({"name": "chat", "slack_configs": [{"api_url": "https://hooks.slack.com/services/T0/B0/XYZ"}]},
     "slack_configs[0].api_url"),
    ({"name": "hook", "webhook_configs": [{"url": "https://oapi.dingtalk.com/robot/send?access_token=abc123"}]},
     "webhook_configs[0].url"),
])
def test_a_webhook_credential_in_helm_values_is_refused(receiver, key):
    raw = stack_raw("staging")
    values = {"alertmanager": {"config": {"receivers": [copy.deepcopy(receiver)]}}}
    raw.setdefault("monitoring", {}).setdefault("helmValues", {})["kubePrometheusStack"] = values
    path = f"monitoring.helmValues.kubePrometheusStack.alertmanager.config.receivers[0].{key}"
    message = message_at(raw, path)
    assert "value not shown" in message and "abc123" not in message and "XYZ" not in message


# ---------------------------------------------------------------------------------------------- the servers' grammar
def _two_l20(raw: dict) -> dict:
    raw["nodePools"][0]["gpusPerNode"] = 2
    raw["nodePools"][0]["instanceTypes"] = ["ecs.gn8is-2x.8xlarge"]
    raw["workloads"][0]["gpu"]["count"] = 2
    return raw


def test_sglang_tp_2_written_as_its_users_write_it_plans():
    """``--tp`` is a prefix of SGLang's ``--tp-size`` only (argparse ``allow_abbrev``): SGLang reads it as
    ``--tp-size 2``, and so does the plan: 2 GPUs per replica, no "spans 1 GPU" error."""
    raw = _two_l20(sglang())
    args_of(raw).extend(["--tp", "2"])
    facts_gpus = None
    from gpuplatform.components.server_args import parse
    cfg = load(raw)
    facts = parse(cfg.workloads[0])
    facts_gpus = facts.gpus
    assert facts_gpus == 2 and facts.reading.accepted and facts.reading.values["tensor_parallel_size"] == 2
    raw["workloads"][0]["gpu"]["count"] = 1
    assert "spans 2 GPUs" in message_at(raw, f"{W}.gpu.count")  # the reading counts, not only accepts


MISTAKES = [
    # (server, extra args, the flag named, words of the server's own message)
    ("sglang", ["--tp_size", "2"], "--tp_size", "unrecognized arguments: --tp_size 2"),
    ("sglang", ["--enable-metrics=true"], "--enable-metrics", "ignored explicit argument 'true'"),
    ("sglang", ["--t", "2"], "--t", "ambiguous option: --t could match"),
    ("sglang", ["--mem-fraction-static", "80%"], "--mem-fraction-static", "invalid float value: '80%'"),
    ("sglang", ["--attention-backend", "flashattn"], "--attention-backend", "invalid choice: 'flashattn'"),
    ("sglang", ["--num-shard", "2"], "--num-shard", "unrecognized arguments: --num-shard 2"),
    ("vllm", ["--enforce-eager=true"], "--enforce-eager", "ignored explicit argument 'true'"),
    ("vllm", ["--uds", "/tmp/s"], "--uds", "unrecognized arguments: --uds /tmp/s"),
    ("vllm", ["-pcp", "2"], "-pcp", "unrecognized arguments: -pcp 2"),
    ("vllm", ["--num-shard", "2"], "--num-shard", "unrecognized arguments: --num-shard 2"),
    ("vllm", ["--dtype", "bf16"], "--dtype", "invalid choice: 'bf16'"),
    ("vllm", ["--max-num-seqs", "many"], "--max-num-seqs", "invalid int value: 'many'"),
    ("vllm", ["/models/second"], "/models/second", "unrecognized arguments: /models/second"),
]


@pytest.mark.parametrize("server,extra,flag,said", MISTAKES, ids=[" ".join(m[1]) + f" ({m[0]})" for m in MISTAKES])
def test_each_mistake_is_refused_naming_the_flag_and_the_servers_version(server, extra, flag, said):
    raw = sglang() if server == "sglang" else vllm()
    args_of(raw).extend(extra)
    message = message_at(raw, f"{W}.args")
    title = {"sglang": "SGLang 0.5.4", "vllm": "vLLM 0.9.2"}[server]
    assert message.startswith(f"{flag}: {title} (") and said in message and "allowed:" in message, message


def test_vllm_serve_with_model_flag_is_refused_as_vllm_refuses_it():
    raw = vllm(command=["vllm", "serve", "/models/Qwen2.5-7B-Instruct"])
    args_of(raw)[:] = [a for a in args_of(raw) if not a.startswith("--model=")]
    load(raw)  # `vllm serve MODEL ...` is what vLLM takes
    args_of(raw).append("--model")
    args_of(raw).append("/models/other")
    message = message_at(raw, f"{W}.args")
    assert message.startswith("--model: vLLM 0.9.2 (vllm serve)") and "positional argument" in message


def test_no_enforce_eager_is_read_and_the_last_one_wins():
    from gpuplatform.catalogs import server_cli as cli
    from gpuplatform.components.server_args import parse
    raw = vllm()
    args_of(raw).extend(["--enforce-eager", "--no-enforce-eager"])
    assert parse(load(raw).workloads[0]).get(cli.ENFORCE_EAGER) is False
    args_of(raw).append("--enforce_eager")
    assert parse(load(raw).workloads[0]).get(cli.ENFORCE_EAGER) is True


def test_a_version_the_tables_do_not_know_is_said_as_such():
    from gpuplatform.components.server_args import parse
    raw = vllm(image="vllm/vllm-openai:v0.10.1")
    facts = parse(load(raw).workloads[0])
    assert facts.reading is None
    assert any("vLLM 0.10.1: the flag tables know 0.9.2" in message for _, message in facts.notes)


# ---------------------------------------------------------------------------------------------- shared memory
def _deployment_of(raw: dict) -> dict:
    from gpuplatform.components.workload_manifests import deployment  # noqa: F401
    from support import synth
    (d,) = served_deployments(synth(raw))
    return d.inputs["spec"]["template"]["spec"]


def test_a_two_gpu_vllm_deployment_mounts_memory_backed_dev_shm():
    raw = _two_l20(vllm())
    raw["nodePools"][0]["gpuModel"] = "L20"
    args_of(raw).append("--tensor-parallel-size=2")
    spec = _deployment_of(raw)
    assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}} in spec["volumes"]
    assert {"name": "dshm", "mountPath": "/dev/shm"} in spec["containers"][0]["volumeMounts"]


def test_one_gpu_gets_no_dev_shm_unless_the_stack_sizes_it():
    raw = vllm()
    assert all(v["name"] != "dshm" for v in _deployment_of(raw)["volumes"])
    raw["workloads"][0]["sharedMemoryGib"] = 0.5
    assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "512Mi"}} in _deployment_of(raw)["volumes"]


# ---------------------------------------------------------------------------------------------- commandLine
def test_a_pasted_vllm_serve_line_runs_under_the_images_entry_point():
    raw = vllm()
    w = raw["workloads"][0]
    w.pop("args")
    w["commandLine"] = ("vllm serve /models/Qwen2.5-7B-Instruct --served-model-name qwen2.5-7b-instruct "
                        "--port 8000 --max-model-len 8192")
    got = load(raw).workloads[0]
    assert got.command == [] and got.args[:2] == ["--model", "/models/Qwen2.5-7B-Instruct"]
    assert got.args[-2:] == ["--max-model-len", "8192"]


@pytest.mark.parametrize("line,said", [
    ("vllm serve --model /models/m", "vLLM refuses --model after `vllm serve`"),
    ("vllm serve /models/m | tee /tmp/log", "allowed: command: [sh, -c, 'vllm serve /models/m | tee /tmp/log']"),
    ("vllm serve '/models/m", "does not split as a shell would split it"),
    ("text-generation-launcher --model-id m", "starts no vLLM entry point"),
])
def test_a_command_line_that_cannot_be_written_is_refused_with_the_fix(line, said):
    raw = vllm()
    raw["workloads"][0].pop("args")
    raw["workloads"][0]["commandLine"] = line
    assert said in message_at(raw, f"{W}.commandLine")


def test_command_line_and_args_together_are_refused():
    raw = vllm(commandLine="vllm serve /models/m")
    assert "allowed: commandLine alone" in message_at(raw, f"{W}.commandLine")


def test_an_args_item_holding_flag_and_value_is_refused_with_its_split():
    raw = sglang()
    args_of(raw).append("--tp-size 2")
    message = message_at(raw, f"{W}.args")
    assert "'--tp-size 2' is one word to the server" in message
    assert "allowed: two items '--tp-size', '2', or '--tp-size=2'" in message


# ---------------------------------------------------------------------------------------------- GPU capability, ranges
def _on_t4(raw: dict) -> dict:
    raw["nodePools"][0]["gpuModel"] = "T4"
    raw["nodePools"][0]["instanceTypes"] = ["ecs.gn6i-c4g1.xlarge"]
    return raw


@pytest.mark.parametrize("extra,said", [
    (["--dtype", "bfloat16"], "--dtype bfloat16: vLLM 0.9.2 needs a GPU of compute capability at least 8"),
    (["--quantization", "fp8"], "--quantization fp8: vLLM 0.9.2 needs a GPU of compute capability at least 8"),
])
def test_a_dtype_or_quantization_the_t4_cannot_run_is_refused(extra, said):
    raw = _on_t4(vllm())
    args_of(raw).extend(extra)
    message = message_at(raw, f"{W}.args")
    assert said in message and "has T4 (7.5)" in message
    raw = vllm()  # the A10 (8.6) runs both
    args_of(raw).extend(extra)
    assert f"{extra[0]} {extra[1]}:" not in str(rejected(raw) if _rejects(raw) else "")


def _rejects(raw: dict) -> bool:
    try:
        load(raw)
    except Exception:  # noqa: BLE001 - ConfigError
        return True
    return False


def test_memory_utilization_written_as_a_percentage_is_refused():
    raw = vllm()
    args_of(raw).append("--gpu-memory-utilization=90")
    message = message_at(raw, f"{W}.args")
    assert "--gpu-memory-utilization 90: vLLM 0.9.2 takes a fraction" in message and "did you mean 0.9?" in message


def test_triton_booleans_are_read_as_triton_reads_them():
    raw = triton()
    args_of(raw).append("--allow-gpu-metrics=yes")
    message = message_at(raw, f"{W}.args")
    assert message.startswith("--allow-gpu-metrics: Triton 2.49.0 (tritonserver) exits on this line: invalid value "
                              "for bool option: yes")
    args_of(raw)[-1] = "--allow-gpu-metrics=OFF"
    load(raw)
