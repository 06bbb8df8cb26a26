"""vLLM's start in its measured phases and its compile cache: a ``VLLM_CACHE_ROOT`` on a writable PVC or NFS volume
lets every replica after the first load the compiled graphs instead of compiling (catalogs/servers.py
``VLLM_START``). The estimate, the startup budget, the simulator's first and later replicas, and examples 005 and
006 with every time-to-capacity measure on, against the 120 s the measures are for."""
from __future__ import annotations

import copy

import pytest
import yaml
from test_fluid_cache import fluid
from test_pre_pull_time_to_capacity import example, step

from gpuplatform.catalogs import servers
from gpuplatform.components.model_startup import compile_cache_volume, load_estimate, startup_seconds
from gpuplatform.components.stack_config import namespace_from_stack_file
from gpuplatform.components.validation import load
from gpuplatform.simulate.cluster import NodePool, Pods
from gpuplatform.simulate.engine import simulate
from gpuplatform.simulate.report import resolve_trace
from gpuplatform.simulate.startup import path_text
from support import REPO

CACHE_VOLUME = {"name": "vllm-cache", "mountPath": "/cache", "pvc": "vllm-compile-cache", "readOnly": False}


def cached(raw: dict, root: str = "/cache/vllm", volume: dict | None = None) -> dict:
    """The workload with its compile cache at ``root`` on a writable volume."""
    w = raw["workloads"][0]
    w["volumes"] = [*w.get("volumes", []), volume or CACHE_VOLUME]
    w["env"] = {**w.get("env", {}), "VLLM_CACHE_ROOT": root}
    return raw


def all_measures(raw: dict, warm: int = 3, max_nodes: int = 7) -> dict:
    raw["nodePools"][0]["maxNodes"] = max_nodes
    raw["workloads"][0]["autoscaling"]["warmReplicas"] = warm
    raw["workloads"][0]["prePull"] = True
    return raw


def test_the_phases_add_up_cold_cached_and_without_compilation():
    s = servers.VLLM_START
    assert s.seconds(True, False) == s.process.seconds + s.compile_cold.seconds + s.warmup.seconds == 90
    assert s.seconds(True, True) == 58 and s.seconds(False, False) == s.seconds(False, True) == 46
    assert servers.start_overhead_seconds("vllm") == 90 and servers.start_overhead_seconds("sglang") == 50
    for phase in (s.process, s.compile_cold, s.compile_cached, s.warmup):
        assert "vllm-project/vllm" in phase.basis and ("measured" in phase.basis or "estimate" in phase.basis)


def test_a_cache_root_on_a_shared_volume_is_a_compile_cache():
    w = load(cached(example())).workloads[0]
    assert compile_cache_volume(w) == "vllm-cache"
    est = load_estimate(w)
    assert (est.overhead_seconds, est.cold_overhead_seconds, est.first_overhead_seconds) == (58, 90, 90)
    assert est.expected_seconds == pytest.approx(58 + 15 * 1024 / 333)
    assert est.first_expected_seconds == pytest.approx(90 + 15 * 1024 / 333)
    assert "the replica that fills the cache compiles in a 90s server start (136s)" in est.describe()
    # the budget covers the replica that compiles: the same as without the cache
    assert startup_seconds(w) == startup_seconds(load(example()).workloads[0])


@pytest.mark.parametrize("change, why", [
    (lambda raw: cached(raw, root="/tmp/vllm"), "the pod's own /tmp dies with it"),
    (lambda raw: cached(raw) | {"workloads": [raw["workloads"][0] | {"args": raw["workloads"][0]["args"]
                                                                      + ["--enforce-eager"]}]},
     "--enforce-eager compiles nothing"),
    (lambda raw: cached(raw) | {"workloads": [raw["workloads"][0] | {"image": "vllm/vllm-openai:v0.7.3"}]},
     "the V0 engine of 0.7 compiles nothing"),
    (lambda raw: cached(raw) | {"workloads": [raw["workloads"][0] | {"env": {**raw["workloads"][0]["env"],
                                                                              "VLLM_DISABLE_COMPILE_CACHE": "1"}}]},
     "the cache is switched off"),
])
def test_no_compile_cache_where_vllm_would_not_use_one(change, why):
    w = load(change(example())).workloads[0]
    assert compile_cache_volume(w) is None, why
    assert load_estimate(w).cold_overhead_seconds is None


def test_a_server_that_does_not_compile_starts_without_the_compile_phase():
    w = load(example(args=[*example()["workloads"][0]["args"], "--enforce-eager"])).workloads[0]
    assert load_estimate(w).overhead_seconds == 46


def test_the_first_replica_compiles_and_writes_the_graphs_the_next_ones_load():
    pods = Pods("chat", 0, 105, compile_extra_s=32)
    nodes = NodePool(1, 3, 3, 180, False, 3)
    pods.scale(1, 0.0)
    pods.schedule(0.0, nodes)
    first = pods.pods[0]
    pods.scale(2, 60.0)  # starts while the first still compiles: it compiles too
    pods.schedule(60.0, nodes)
    pods.scale(3, 200.0)  # starts after the first loaded: it loads the graphs
    pods.schedule(200.0, nodes)
    second, third = pods.pods[1:]
    assert (first.compiles, first.load_s) == (True, 137) and (second.compiles, second.load_s) == (True, 137)
    assert (third.compiles, third.load_s) == (False, 105)


def test_a_compiling_replica_deleted_before_it_loads_leaves_the_cache_empty():
    pods = Pods("chat", 0, 105, compile_extra_s=32)
    nodes = NodePool(1, 2, 2, 180, False, 2)
    pods.scale(1, 0.0)
    pods.schedule(0.0, nodes)
    pods.scale(0, 50.0)
    pods.scale(1, 300.0)
    pods.schedule(300.0, nodes)
    assert pods.pods[0].compiles and pods.pods[0].load_s == 137


def test_a_replica_added_to_a_running_workload_finds_the_graphs():
    """The replicas running before the step compiled and wrote the graphs: the one the step adds loads them."""
    path = step(cached(example())).tally.capacity_path
    assert path["model_load_parts"]["compile"] == "cached" and path["model_load_parts"]["server_start"] == 58
    assert path["total"] == step(example()).tally.capacity_path["total"] - 30


def test_005_with_every_measure_has_capacity_within_120s_and_prints_where_it_went(tmp_path, capsys):
    """Example 005 with its weights on a Fluid cache, the streamer, the compile cache, 3 warm replicas and the
    pre-puller: 114 s from the load step to the capacity it needs (650 s as the example stands)."""
    from gpuplatform.cli import main

    raw = all_measures(cached(copy.deepcopy(fluid())))
    path = step(raw).tally.capacity_path
    assert path["total"] <= 120 and not path["new_node"]
    assert (path["image_pull"], path["node_provisioning"], path["autoscaler_scan"]) == (0, 0, 0)
    assert path["model_load_parts"] | {} == {
        "server_start": 58, "weights": 25.6, "weights_mib_per_second": 600, "streamed": True, "compile": "cached",
        "cache": "hit"}
    stack = tmp_path / "Pulumi.005-measures.yaml"
    stack.write_text(yaml.safe_dump({"config": {f"gpu-platform:{k}": v for k, v in raw.items()}}))
    assert main(["simulate", "--config", str(stack), "--workload", "chat", "--trace", "step"]) == 0
    out = capsys.readouterr().out
    assert (f"{path['total']:.0f}s on an existing node = scale-up decision 23s + autoscaler scan 0s + node "
            "provisioning 0s + scheduling 1s + image pull 0s + model load 84s (58s server start with the compiled "
            "graphs cached + 25.6s weights streamed from the Fluid cache at 600 MiB/s)") in out


def test_006_with_every_measure_comes_closest_to_120s_on_its_weights_and_sglangs_start():
    """SGLang has no compile cache and no streamer here: on a warm, pre-pulled node with its 28 GiB on a Fluid cache
    what is left is the decision, SGLang's start and the weights read from the cache."""
    raw = namespace_from_stack_file(REPO / "examples" / "006-sglang-queue" / "plain" /
                                    "Pulumi.006-sglang-queue-plain.yaml")
    today = _step_006(copy.deepcopy(raw)).tally.capacity_path
    raw["nodePools"][0]["maxNodes"] = 6
    w = raw["workloads"][0]
    w["autoscaling"]["warmReplicas"], w["prePull"] = 2, True
    w["volumes"] = [{"name": "models", "mountPath": "/models", "fluid": {
        "mountPoint": "oss://models/qwen2.5-14b-instruct", "endpoint": "oss-cn-hangzhou-internal.aliyuncs.com",
        "credentials": {"secretName": "oss-models"}, "cacheQuotaGib": 30, "cacheMedium": "SSD"}}]
    path = _step_006(raw).tally.capacity_path
    assert (today["total"], path["total"]) == (700, 124)
    assert path["model_load_parts"]["server_start"] == servers.SGLANG_START_SECONDS
    assert "50s server start + 47.8s weights read from the Fluid cache at 600 MiB/s" in path_text(path)


def _step_006(raw: dict):
    cfg = load(raw)
    return simulate(cfg, "006", "qa", resolve_trace(cfg, "qa", "step", None))


def test_plan_shows_the_load_that_finds_the_graphs_and_the_one_that_compiles():
    from gpuplatform.plan import startup_rows, startup_text
    rows = startup_rows(load(cached(example())))
    assert (rows[0]["expectedLoadSeconds"], rows[0]["cacheFillLoadSeconds"]) == (104, 136)
    assert "104s (136s filling the cache)" in startup_text(rows)


def test_a_composed_service_reads_its_compile_cache_as_the_stack_does(tmp_path, capsys):
    """A consumer's program composing an InferenceService gets the same reading of its command line and volumes."""
    from test_assembly_composed_program import write_project

    from gpuplatform.cli import main

    project = write_project(tmp_path / "team", '''
        from gpuplatform.components import GpuCluster, GpuNodePool, InferenceService, WorkloadNamespace

        cluster = GpuCluster("ml", {"cluster": {"kind": "kubeconfig", "kubernetesVersion": "1.34"}})
        a10 = GpuNodePool("a10", {"cluster": cluster, "pool": {"name": "a10", "gpuModel": "A10", "gpusPerNode": 1,
                                                                "maxNodes": 3}})
        namespace = WorkloadNamespace("serving", {"cluster": cluster, "name": "ml-serving"})
        InferenceService("chat", {"workload": {
            "name": "chat", "image": "vllm/vllm-openai:v0.9.2", "server": "vllm", "gpu": {"count": 1},
            "ports": [{"name": "http", "containerPort": 8000, "protocol": "http"}],
            "args": ["--model=/models/qwen", "--port=8000"],
            "env": {"HOME": "/tmp", "VLLM_CACHE_ROOT": "/cache/vllm"},
            "volumes": [{"name": "models", "mountPath": "/models", "pvc": "qwen-weights"},
                        {"name": "vllm-cache", "mountPath": "/cache", "pvc": "vllm-compile-cache",
                         "readOnly": False}],
            "model": {"sizeGib": 15, "source": "volume", "volume": "models"},
            "replicas": 2,
        }, "node_pool": a10, "namespace": namespace})
    ''', {"dev": "config: {}\n"})
    assert main(["plan", "--project", str(project), "--stack", "dev", "--no-sweep"]) == 0
    out = capsys.readouterr().out
    # 58 s + 15 GiB at 150 MiB/s; the replica that compiles: 90 s + the same read
    assert "160s (192s filling the cache)" in out
