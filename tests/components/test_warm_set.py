"""A pool's warm set (``nodePools[].warmSet``): sleeping replicas of several models sharing headroom. Validation
(the servers that can sleep, named with their version; the weights stated; whole GPUs; the host memory a node
keeps for the sleeping weights), the sleeping weights charged to the pool's nodes in placement, and example 007."""
from __future__ import annotations

import copy
import functools

import pytest
from support import REPO, assert_rejected

from gpuplatform.catalogs import server_cli as cli
from gpuplatform.catalogs import servers
from gpuplatform.components import server_args
from gpuplatform.components.placement import node_groups, packing_shortfalls, workload_pods
from gpuplatform.components.stack_config import namespace_from_stack_file
from gpuplatform.components.validation import load
from gpuplatform.components.warm_set import host_gib_per_gpu, sleeping_models
from gpuplatform.components.warm_set_objects import warm_set_pods

EXAMPLE = REPO / "examples" / "007-warm-set" / "Pulumi.007-warm-set.yaml"


@functools.cache
def _example() -> dict:
    return namespace_from_stack_file(EXAMPLE)


def example(**warm_set) -> dict:
    raw = copy.deepcopy(_example())
    raw["nodePools"][0]["warmSet"].update(warm_set)
    return raw


def test_example_007_validates_and_its_sleeping_weights_cost_a_nodes_host_memory():
    cfg = load(example())
    pool = cfg.node_pools[0]
    models = sleeping_models(cfg, pool)
    assert [m.workload for m in models] == ["chat", "code", "summarize"]
    assert host_gib_per_gpu(cfg, pool) == 45  # level 1: each model's 15 GiB of weights in host memory
    # the copy back at the cited ~20 GiB/s plus the per-wake overhead: well inside the 10 s goal
    assert all(m.wake_seconds == pytest.approx(1.0 + 15 / 20) for m in models)


def test_level_2_keeps_no_weights_in_host_memory_and_wakes_as_slowly_as_a_read():
    cfg = load(example(sleepLevel=2))
    pool = cfg.node_pools[0]
    assert host_gib_per_gpu(cfg, pool) == 0
    chat = sleeping_models(cfg, pool)[0]
    assert chat.wake_seconds == pytest.approx(1.0 + 15 * 1024 / 150)  # the PVC's read rate, catalogs/timeouts.py


def test_placement_charges_one_holder_per_warm_gpu_with_the_sleeping_weights():
    raw = example(gpus=2)
    raw["nodePools"][0]["maxNodes"] = 8
    cfg = load(raw)
    [holder] = warm_set_pods(cfg)
    assert holder.replicas == 2
    # 3 x 15 GiB of sleeping weights + the 24 GiB of the replica awake: the rendered holder's own request
    requests = holder.spec["containers"][0]["resources"]["requests"]
    assert requests["memory"] == "69Gi" and requests["nvidia.com/gpu"] == "1"
    assert holder.spec["nodeSelector"] == {"gpuplatform.io/pool": "l20"}
    assert holder in workload_pods(cfg)


def test_placement_refuses_holders_that_do_not_fit_beside_the_replicas():
    """On 64 GiB nodes (ecs.gn8is.2xlarge), a holder of 45 GiB of sleeping weights + 24 GiB for its awake replica
    and a 24 GiB replica never share a node: validation says so, and the packing of the pool's pods finds no node
    for the holder."""
    raw = example()
    raw["nodePools"][0]["instanceTypes"] = ["ecs.gn8is.2xlarge"]
    assert_rejected(raw, "nodePools[0].warmSet", "requests 69 GiB of host memory", "45 GiB of sleeping weights",
                    "a replica requests 24 GiB", "sleepLevel 2")
    raw["nodePools"][0]["warmSet"]["sleepLevel"] = 2
    load(raw)  # level 2 keeps no weights on the host: the holder is 24 GiB, accepted
    raw["nodePools"][0]["warmSet"]["sleepLevel"] = 1
    raw["nodePools"][0]["warmSet"]["models"] = ["chat"]  # 15 GiB + 24 GiB beside a 24 GiB replica fits 64
    cfg = load(raw)
    pods = workload_pods(cfg)
    assert packing_shortfalls(pods, node_groups(cfg)) == []


def test_a_server_without_sleep_mode_is_refused_naming_it_its_version_and_what_is_allowed():
    raw = example()
    raw["workloads"][1]["image"] = "vllm/vllm-openai:v0.8.5"
    assert_rejected(raw, "nodePools[0].warmSet.models[1]", "'code' runs vllm 0.8.5", "vllm/vllm-openai:v0.8.5",
                    "allowed: vllm >= 0.9.2")
    raw = example()
    raw["workloads"][2].update(image="lmsysorg/sglang:v0.5.4", server="sglang", command=[
        "python3", "-m", "sglang.launch_server"], args=["--model-path=/models/llama", "--host=0.0.0.0",
                                                         "--port=8000", "--enable-metrics"])
    raw["workloads"][2]["autoscaling"]["metrics"] = [{"metric": "sglang_queue_requests", "target": 2}]
    assert_rejected(raw, "nodePools[0].warmSet.models[2]", "'summarize' runs sglang", "0.5.4",
                    "every client with no gate", "allowed: vllm >= 0.9.2")
    raw = example()
    raw["workloads"][0]["image"] = "vllm/vllm-openai:latest"
    assert_rejected(raw, "nodePools[0].warmSet.models[0]", "an unknown version", "an image tag naming the release")


def test_names_must_be_workloads_of_the_pool_and_state_their_weights():
    assert_rejected(example(models=["chat", "chta"]), "nodePools[0].warmSet.models[1]",
                    "'chta' is no workload of the stack", "allowed: 'chat', 'code', 'summarize'")
    assert_rejected(example(models=["chat", "chat"]), "nodePools[0].warmSet.models[1]", "listed twice")
    raw = example()
    del raw["workloads"][0]["model"]
    assert_rejected(raw, "nodePools[0].warmSet.models[0]", "states no model", "workloads[].model.sizeGib")


def test_warm_gpus_must_fit_beside_the_workloads_at_their_most_replicas():
    """Seven L20s: three workloads at two replicas hold six, which leaves one for the warm set."""
    load(example(gpus=1))
    assert_rejected(example(gpus=2), "nodePools[0].warmSet.gpus", "2 GPUs", "7 at most",
                    "its workloads hold 6 at their most replicas (chat 2 x 1, code 2 x 1, summarize 2 x 1)",
                    "allowed: <= 1, or raise maxNodes")


def test_sleep_mode_is_read_from_the_command_line_and_the_flag_tables_know_it():
    raw = example()
    for other in raw["workloads"]:  # a warm GPU's replicas share one image
        other["image"] = "vllm/vllm-openai:v0.9.2"  # the release the flag tables were generated from
    w = raw["workloads"][0]
    w["args"] = [*w["args"], "--enable-sleep-mode"]
    w["env"] = {**w["env"], "VLLM_SERVER_DEV_MODE": "1"}
    facts = server_args.parse(load(raw).workloads[0])
    assert facts.get(cli.SLEEP_MODE) is True and facts.get(cli.DEV_MODE) == 1
    assert servers.VLLM_SLEEP.gate_env == ("VLLM_SERVER_DEV_MODE", "1")
    assert servers.SLEEP_MODES["sglang"].gate_env is None  # SGLang's endpoints are served to every client


# ------------------------------------------------------------------------------------------------ the endpoints
def _sleeping_chat(raw: dict, dev_mode: bool = True) -> dict:
    w = raw["workloads"][0]
    w["args"] = [*w["args"], "--enable-sleep-mode"]
    if dev_mode:
        w["env"] = {**w["env"], "VLLM_SERVER_DEV_MODE": "1"}
    return raw


def _ingress(raw: dict) -> dict:
    w = raw["workloads"][0]
    w["exposure"] = {"serviceType": "ClusterIP", "ingress": {"className": "nginx", "host": "chat.example.com",
                                                             "port": "http", "tlsSecret": "chat-tls"}}
    return raw


def _objects(raw: dict, kind: str) -> dict:
    from gpuplatform.synth import stack_config_from_namespace, synthesize
    records = synthesize(stack_config_from_namespace(raw), stack="007-warm-set")
    return {r.inputs["metadata"]["name"]: r.inputs for r in records
            if r.is_kubernetes_object and r.inputs["kind"] == kind}


def _outside_set() -> dict:
    """Example 007 with chat out of the warm set: only its own pods' command line says whether they sleep."""
    return example(models=["code", "summarize"])


def test_an_ingress_routes_only_the_clients_api_to_a_server_that_serves_its_sleep_endpoints():
    plain = _objects(_ingress(_outside_set()), "Ingress")["chat"]
    assert [p["path"] for p in plain["spec"]["rules"][0]["http"]["paths"]] == ["/"]
    # a model of the warm set: the waker routes its Service to a woken holder replica, which serves them
    shipped = _objects(_ingress(example()), "Ingress")["chat"]
    assert [p["path"] for p in shipped["spec"]["rules"][0]["http"]["paths"]] == ["/v1/"]
    served = _objects(_sleeping_chat(_ingress(_outside_set())), "Ingress")["chat"]
    paths = served["spec"]["rules"][0]["http"]["paths"]
    assert [(p["path"], p["pathType"]) for p in paths] == [("/v1/", "Prefix")]  # /sleep, /wake_up not routed
    assert paths[0]["backend"] == {"service": {"name": "chat", "port": {"name": "http"}}}
    # without VLLM_SERVER_DEV_MODE vLLM registers no sleep route: the whole port stays routed
    gated = _objects(_sleeping_chat(_ingress(_outside_set()), dev_mode=False), "Ingress")["chat"]
    assert [p["path"] for p in gated["spec"]["rules"][0]["http"]["paths"]] == ["/"]


def test_a_load_balancer_in_front_of_the_sleep_endpoints_is_refused():
    raw = _sleeping_chat(example())
    raw["settings"]["allowPublicEndpoints"] = True
    raw["workloads"][0]["exposure"] = {"serviceType": "PublicLoadBalancer"}
    assert_rejected(raw, "workloads[0].exposure.serviceType", "passes every path of the API port",
                    "POST /sleep?level=1|2 and POST /wake_up", "VLLM_SERVER_DEV_MODE=1",
                    "allowed: ClusterIP with an ingress (which routes only /v1/)")
    raw = example()  # as shipped: chat's own pods do not sleep, its holder replica does
    raw["settings"]["allowPublicEndpoints"] = True
    raw["workloads"][0]["exposure"] = {"serviceType": "PublicLoadBalancer"}
    assert_rejected(raw, "workloads[0].exposure.serviceType", "vllm in its pool's warm set (nodePools[].warmSet)",
                    "POST /wake_up", "allowed: ClusterIP with an ingress")


def test_plan_warns_that_in_cluster_callers_reach_the_sleep_endpoints():
    from gpuplatform.components.network_policy import network_warnings
    warnings = network_warnings(load(_sleeping_chat(_outside_set())))
    [sleeping] = [x for x in warnings if "/wake_up" in x and "'chat'" in x]
    assert sleeping.startswith("WARNING: workloads[0] 'chat': vllm serves POST /sleep?level=1|2 and POST /wake_up")
    assert "its networkPolicy.allowFrom callers reach directly" in sleeping
    assert not [x for x in network_warnings(load(_outside_set())) if "/wake_up" in x and "'chat'" in x]
    # as shipped, each model's callers reach its holder replica's endpoints while it is awake
    assert len([x for x in network_warnings(load(example())) if "/wake_up" in x]) == 3


# ------------------------------------------------------------------------------------- the rendered wake path
def _rendered(raw: dict | None = None) -> list[dict]:
    """Example 007's warm-set objects as `pulumi up` and `plan --out` register them."""
    from gpuplatform.plan import manifest_files
    from support import synth
    docs = manifest_files(synth(raw or example())).values()
    return [d for d in docs if (d.get("metadata") or {}).get("name", "").startswith("warm-set-l20")]


def _by(docs: list[dict], kind: str, name: str) -> dict:
    [doc] = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return doc


def test_example_007_renders_one_holder_pod_per_warm_gpu_running_every_model_asleep():
    import json
    docs = _rendered()
    assert sorted((d["kind"], d["metadata"]["name"]) for d in docs) == sorted([
        ("ConfigMap", "warm-set-l20"), ("Deployment", "warm-set-l20"), ("NetworkPolicy", "warm-set-l20"),
        ("NetworkPolicy", "warm-set-l20-chat"), ("NetworkPolicy", "warm-set-l20-code"),
        ("NetworkPolicy", "warm-set-l20-summarize"), ("ServiceAccount", "warm-set-l20-waker"),
        ("Role", "warm-set-l20-waker"), ("RoleBinding", "warm-set-l20-waker"), ("ConfigMap", "warm-set-l20-waker"),
        ("Deployment", "warm-set-l20-waker"), ("NetworkPolicy", "warm-set-l20-waker")])
    holder = _by(docs, "Deployment", "warm-set-l20")
    assert holder["spec"]["replicas"] == 1 and holder["spec"]["strategy"] == {"type": "Recreate"}
    pod = holder["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False and pod["nodeSelector"] == {"gpuplatform.io/pool": "l20"}
    [c] = pod["containers"]
    assert c["image"] == "vllm/vllm-openai:v0.33.0"
    assert c["resources"]["requests"] == c["resources"]["limits"] == {"cpu": "6", "memory": "69Gi",
                                                                      "nvidia.com/gpu": "1"}
    sc = c["securityContext"]
    assert sc["runAsNonRoot"] and sc["allowPrivilegeEscalation"] is False and sc["capabilities"] == {"drop": ["ALL"]}
    assert [p["containerPort"] for p in c["ports"]] == [8100, 8101, 8102]
    # every server's own command line, sleep mode on, its own port last, in the pod spec where the kubelet
    # expands it; the holder program reads them after its JSON file
    args = c["args"]
    lines = [w for w in " ".join(args[1:]).split("--next-server") if w.strip()]
    assert [line.split()[0:3] for line in lines] == [["python3", "-m", "vllm.entrypoints.openai.api_server"]] * 3
    for line, port, path in zip(lines, (8100, 8101, 8102), ("qwen", "qwen-coder", "llama")):
        words = line.split()
        assert "--enable-sleep-mode" in words and words[-1] == f"--port={port}"
        assert any(w.startswith(f"--model=/models/{path}/") for w in words)
        assert any(w.startswith("--shutdown-timeout=") for w in words)  # the awake one drains like its own pods
    servers = json.loads(_by(docs, "ConfigMap", "warm-set-l20")["data"]["servers.json"])
    assert [(s["model"], s["port"], s["env"]["VLLM_SERVER_DEV_MODE"], s["sleep"]) for s in servers["servers"]] == [
        ("chat", 8100, "1", "/sleep?level=1"), ("code", 8101, "1", "/sleep?level=1"),
        ("summarize", 8102, "1", "/sleep?level=1")]
    program = _by(docs, "ConfigMap", "warm-set-l20")["data"]["holder.py"]
    assert program == (REPO / "components" / "warm_set_holder.py").read_text()
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    claims = {v["name"]: v.get("persistentVolumeClaim", {}).get("claimName") for v in pod["volumes"]}
    assert {p: claims[n] for p, n in mounts.items() if p.startswith("/models")} == {
        "/models/qwen": "qwen-weights", "/models/qwen-coder": "qwen-coder-weights", "/models/llama": "llama-weights"}
    assert c["readinessProbe"]["exec"]["command"] == ["test", "-f", "/tmp/warm-set-ready"]


def test_placement_charges_exactly_the_rendered_holder():
    cfg = load(example())
    [holder] = warm_set_pods(cfg)
    rendered = _by(_rendered(), "Deployment", "warm-set-l20")
    assert holder.spec == rendered["spec"]["template"]["spec"]
    assert holder.replicas == rendered["spec"]["replicas"]


def test_only_the_waker_reaches_a_sleeping_holder_and_a_models_callers_only_its_awake_replica():
    docs = _rendered()
    base = _by(docs, "NetworkPolicy", "warm-set-l20")["spec"]
    assert base["podSelector"] == {"matchLabels": {"app.kubernetes.io/name": "warm-set-l20"}}
    assert base["ingress"] == [{"from": [{"podSelector": {"matchLabels": {
        "app.kubernetes.io/name": "warm-set-l20-waker"}}}],
        "ports": [{"protocol": "TCP", "port": p} for p in (8100, 8101, 8102)]}]
    chat = _by(docs, "NetworkPolicy", "warm-set-l20-chat")["spec"]
    assert chat["podSelector"]["matchLabels"] == {"app.kubernetes.io/name": "warm-set-l20",
                                                  "gpuplatform.io/awake-model": "chat"}
    ports = {p["port"] for rule in chat["ingress"] for p in rule["ports"]}
    assert ports == {8100}
    peers = [peer for rule in chat["ingress"] for peer in rule.get("from", [])]
    assert {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "apps"}},
            "podSelector": {"matchLabels": {"app": "gateway"}}} in peers
    assert all(rule.get("from") for rule in chat["ingress"])  # nobody unlisted
    # Prometheus scrapes chat's own pods (its NetworkPolicy admits it), never a holder
    assert not [p for p in peers if p.get("podSelector", {}).get("matchLabels", {}).get(
        "app.kubernetes.io/name") == "prometheus"]
    assert chat["ingress"] == [{"from": [{"namespaceSelector": {"matchLabels": {
        "kubernetes.io/metadata.name": "apps"}}, "podSelector": {"matchLabels": {"app": "gateway"}}}],
        "ports": [{"protocol": "TCP", "port": 8100}]}]


def test_the_waker_gets_the_least_it_needs_and_its_image_is_a_pinned_setting():
    docs = _rendered()
    rules = _by(docs, "Role", "warm-set-l20-waker")["rules"]
    for rule in rules:
        assert "*" not in rule["verbs"] and "*" not in rule["resources"] and "*" not in rule["apiGroups"]
    by = {(r["apiGroups"][0], r["resources"][0], tuple(r["verbs"])): r.get("resourceNames") for r in rules}
    assert by == {("", "pods", ("get", "list", "watch", "patch")): None,
                  ("apps", "deployments", ("get",)): ["chat", "code", "summarize"],
                  ("autoscaling", "horizontalpodautoscalers", ("get",)): ["chat", "code", "summarize"],
                  ("discovery.k8s.io", "endpointslices", ("create",)): None,
                  ("discovery.k8s.io", "endpointslices", ("get", "update", "delete")):
                      ["chat-warm-set-l20", "code-warm-set-l20", "summarize-warm-set-l20"]}
    binding = _by(docs, "RoleBinding", "warm-set-l20-waker")
    assert binding["roleRef"]["kind"] == "Role" and binding["subjects"][0]["name"] == "warm-set-l20-waker"
    pod = _by(docs, "Deployment", "warm-set-l20-waker")["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "warm-set-l20-waker"
    # the package's own waker: the program in the waker's ConfigMap, on the pinned Python image
    from gpuplatform.catalogs.images import PYTHON_IMAGE
    assert pod["containers"][0]["image"] == PYTHON_IMAGE
    assert pod["containers"][0]["command"] == ["python3", "/etc/gpuplatform-warm-set/waker.py"]
    assert pod["containers"][0]["securityContext"]["readOnlyRootFilesystem"] is True
    assert {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"} in pod["containers"][0]["env"]
    assert "nodeSelector" not in pod and "tolerations" not in pod  # never on a GPU node


def test_the_waker_config_names_what_it_reads_and_the_slices_it_writes():
    import json
    config = json.loads(_by(_rendered(), "ConfigMap", "warm-set-l20-waker")["data"]["waker.json"])
    chat = config["models"][0]
    assert chat["horizontalPodAutoscaler"] == "chat" and chat["deployment"] == "chat" and chat["holderPort"] == 8100
    # the Service's port name, the holder's port: kube-proxy matches a slice's ports to the Service's by name
    assert chat["endpointSlice"] == {"name": "chat-warm-set-l20", "ports": [
        {"name": "http", "port": 8100, "protocol": "TCP", "appProtocol": "http"}]}
    assert chat["wake"] == "POST /wake_up" and chat["sleep"] == "POST /sleep?level=1"
    assert chat["drainSeconds"] > 0  # the woken replica drains before it sleeps, as the model's own pods do
    program = _by(_rendered(), "ConfigMap", "warm-set-l20-waker")["data"]["waker.py"]
    assert program == (REPO / "components" / "warm_set_waker.py").read_text()
    assert config["holders"] == {"selector": {"app.kubernetes.io/name": "warm-set-l20"},
                                 "awakeLabel": "gpuplatform.io/awake-model"}


def test_the_policy_pack_finds_no_defect_in_the_warm_set_objects(monkeypatch):
    from gpuplatform.check import run_policies
    from gpuplatform.components import warm_set_objects as warm_set
    from support import synth

    def ours(found):
        return [(v.policy_id, v.message) for v in found if "warm-set" in v.resource_name + v.message]

    assert ours(run_policies(synth(example()))) == []  # advisory (hardening) policies report too
    render = warm_set.waker_objects

    def without_probes(*args):
        objects = render(*args)
        for c in (o for o in objects if o["kind"] == "Deployment"):
            for container in c["spec"]["template"]["spec"]["containers"]:
                container.pop("readinessProbe"), container.pop("livenessProbe")
        return objects
    monkeypatch.setattr(warm_set, "waker_objects", without_probes)
    assert [p for p, _ in ours(run_policies(synth(example())))] == ["container-probes"]  # the pack reads them


def test_the_warm_set_objects_pass_the_api_servers_strict_schemas():
    import kubernetes_validate
    from kubernetes_validate import utils as kv_utils
    versions = sorted(kv_utils.all_versions(), key=lambda v: tuple(int(x) for x in v.split(".")[:2]))
    docs = _rendered()
    assert len(docs) == 12
    for doc in docs:
        for version in (versions[0], versions[-1]):
            kubernetes_validate.validate(doc, version, strict=True)


def test_a_waker_image_is_an_optional_pinned_override():
    raw = example()
    raw["nodePools"][0]["warmSet"]["waker"] = {"image": "registry.example.com/platform/warm-set-waker:1.0.0"}
    pod = _by(_rendered(raw), "Deployment", "warm-set-l20-waker")["spec"]["template"]["spec"]
    # a waker of the stack's own runs its image's entry point, not the package's program
    assert pod["containers"][0]["image"] == "registry.example.com/platform/warm-set-waker:1.0.0"
    assert "command" not in pod["containers"][0]
    raw = example()
    raw["nodePools"][0]["warmSet"]["waker"] = {"image": "registry.example.com/platform/warm-set-waker:latest"}
    assert_rejected(raw, "nodePools[0].warmSet.waker.image", "is not pinned", "a version tag or a digest")


def test_what_one_container_cannot_hold_is_refused_naming_the_models():
    raw = example()
    raw["workloads"][1]["image"] = "vllm/vllm-openai:v0.32.0"
    assert_rejected(raw, "nodePools[0].warmSet.models", "'code' runs vllm/vllm-openai:v0.32.0", "one image")
    raw = example()
    raw["workloads"][1]["volumes"][0]["mountPath"] = "/models/qwen"
    assert_rejected(raw, "nodePools[0].warmSet.models", "mounts claim 'qwen-coder-weights' at /models/qwen",
                    "a distinct mountPath")
    raw = example()
    raw["workloads"][2]["gpu"] = {"count": 2}
    raw["workloads"][2]["args"] = [*raw["workloads"][2]["args"], "--tensor-parallel-size=2"]
    assert_rejected(raw, "nodePools[0].warmSet.models[2]", "takes 2 GPU(s) per replica", "gpu.count 1")
