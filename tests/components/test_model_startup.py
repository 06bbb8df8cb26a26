"""``workloads[].model``: the startup probe budget sized from the weights' size and source, the errors when a stated
budget cannot cover the load or a sized one passes the limit, the fit of the weights in a replica's GPU memory,
readiness on the server's own health path, and the simulator's load time."""
import copy

import re

import pytest
from support import stack_raw
from test_scenarios import EXAMPLES, rejected
from test_scenarios import plain_raw as example_raw  # the budgets below are read from the weights' disk claim

from gpuplatform.catalogs import servers, timeouts
from gpuplatform.components.clouds import ExistingClusterProfile
from gpuplatform.components.config import Workload
from gpuplatform.components.model_startup import load_estimate, startup_seconds
from gpuplatform.components.pools import all_pool_facts
from gpuplatform.components.validation import load
from gpuplatform.components.workload_manifests import WorkloadContext, await_timeout_seconds, deployment, probes
from gpuplatform.simulate.engine import simulate
from gpuplatform.simulate.report import resolve_trace, table_text
from gpuplatform.simulate.workload_setup import service_plan

W = "workloads[0]"


def chat(**model) -> dict:
    """Example 005 (vLLM on one A10 from a PVC) with its ``model`` replaced by ``model``, read the plain way (the
    example streams its weights; tests/components/test_pre_pull_time_to_capacity.py covers the streamed rate)."""
    raw = example_raw("005")
    args = raw["workloads"][0]["args"]
    args.remove("--load-format=runai_streamer")
    raw["workloads"][0]["model"] = model
    raw["workloads"][0]["serviceModel"].pop("modelLoadSeconds", None)
    if model.get("source") == "download":
        # downloaded weights need a writable volume of their size (the /tmp emptyDir holds 1 GiB)
        raw["workloads"][0]["volumes"].append({"name": "hub", "mountPath": "/hub", "pvc": "hub", "readOnly": False})
        raw["workloads"][0]["env"]["HF_HOME"] = "/hub"
    return raw


def workload(raw: dict) -> Workload:
    return load(raw).workloads[0]


# ------------------------------------------------------------------------------------------------ sizing
def test_budget_is_the_safety_factor_times_overhead_plus_size_over_rate_in_whole_periods():
    w = workload(chat(sizeGib=15, source="volume", volume="models"))
    rate = timeouts.MODEL_LOAD_RATES["pvc"].mib_per_second
    expected = servers.SERVER_PROFILES["vllm"].start_overhead_seconds + 15 * 1024 / rate
    assert load_estimate(w).expected_seconds == pytest.approx(expected)
    budget = startup_seconds(w)
    assert budget % 10 == 0 and timeouts.STARTUP_SAFETY_FACTOR * expected <= budget < \
        timeouts.STARTUP_SAFETY_FACTOR * expected + 10
    assert probes(w)["startupProbe"]["failureThreshold"] * probes(w)["startupProbe"]["periodSeconds"] == budget


def test_a_bigger_model_and_a_slower_source_get_a_longer_budget_and_await_timeout():
    cfg = load(chat(sizeGib=15, source="volume"))
    ctx = WorkloadContext("inference", all_pool_facts(cfg)["a10"], (1, 35), "autoscaling/v2", ExistingClusterProfile("kubeconfig"))
    small = cfg.workloads[0]
    big = workload(chat(sizeGib=18, source="volume"))
    download = workload(chat(sizeGib=15, source="download"))
    assert startup_seconds(small) < startup_seconds(big)
    assert startup_seconds(small) < startup_seconds(download)
    assert await_timeout_seconds(small, ctx) < await_timeout_seconds(big, ctx)
    annotation = deployment(big, ctx)["metadata"]["annotations"]["pulumi.com/timeoutSeconds"]
    assert int(annotation) == timeouts.IMAGE_PULL_SECONDS + 4 * startup_seconds(big)  # 4 = maxReplicas


def test_weights_in_the_image_lengthen_the_pull_allowance_not_the_probe():
    cfg = load(chat(sizeGib=15, source="image"))
    ctx = WorkloadContext("inference", all_pool_facts(cfg)["a10"], (1, 35), "autoscaling/v2", ExistingClusterProfile("kubeconfig"))
    w = cfg.workloads[0]
    pull = 15 * 1024 / timeouts.IMAGE_PULL_RATE.mib_per_second
    assert load_estimate(w).image_pull_extra_seconds == pytest.approx(pull, abs=1)
    assert await_timeout_seconds(w, ctx) >= timeouts.IMAGE_PULL_SECONDS + timeouts.STARTUP_SAFETY_FACTOR * pull + \
        4 * startup_seconds(w)


def test_a_measured_rate_replaces_the_catalog_estimate():
    w = workload(chat(sizeGib=15, source="volume", loadMibPerSecond=1024))
    assert load_estimate(w).expected_seconds == servers.SERVER_PROFILES["vllm"].start_overhead_seconds + 15
    assert load_estimate(w).rate_basis == "model.loadMibPerSecond"


def test_an_nfs_volume_reads_at_the_nas_rate():
    raw = chat(sizeGib=15, source="volume")
    raw["workloads"][0]["volumes"] = [{"name": "models", "mountPath": "/models",
                                       "nfs": {"server": "nas.example.com", "path": "/models"}}]
    assert load_estimate(workload(raw)).mib_per_second == timeouts.MODEL_LOAD_RATES["nfs"].mib_per_second


def test_a_stated_budget_wins_when_it_covers_the_load():
    raw = chat(sizeGib=15, source="volume")
    raw["workloads"][0]["probes"] = {"port": "http", "readinessPath": "/health", "startupTimeoutSeconds": 1200}
    assert startup_seconds(workload(raw)) == 1200


def test_without_model_the_budget_stays_600():
    raw = example_raw("005")
    raw["workloads"][0].pop("model")
    assert startup_seconds(workload(raw)) == 600


# ------------------------------------------------------------------------------------------------ rejected
def test_a_stated_budget_below_the_expected_load_names_both_paths_and_values():
    raw = chat(sizeGib=15, source="volume")
    raw["workloads"][0]["probes"] = {"port": "http", "readinessPath": "/health", "startupTimeoutSeconds": 120}
    message = rejected(raw)[f"{W}.probes.startupTimeoutSeconds"]
    assert "120 is below the expected load of workloads[0].model" in message
    assert "15 GiB" in message and "allowed: >= 192" in message


def test_a_sized_budget_over_the_limit_says_what_to_do():
    # an expected load the budget can cover only with a smaller margin: the range offered is not empty
    message = rejected(chat(sizeGib=100, source="download"))[f"{W}.model"]
    assert "exceeds the 3600s limit" in message
    low = int(re.search(r"probes.startupTimeoutSeconds between (\d+) and 3600", message).group(1))
    assert low < 3600 and "model.loadMibPerSecond" in message
    # an expected load past the limit itself: no budget covers it, and no range is offered
    message = rejected(chat(sizeGib=200, source="download"))[f"{W}.model"]
    assert "no budget covers it" in message and "model.loadMibPerSecond" in message
    assert "between" not in message


@pytest.mark.parametrize("model,fragment", [
    ({"volume": "weights"}, "'weights' is not a volume of this workload; allowed: models"),
    ({"source": "image", "volume": "models"}, "is set, but source is 'image'"),
])
def test_the_volume_must_be_one_of_the_workload(model, fragment):
    raw = chat(**{"sizeGib": 15, "source": "volume", **model})
    assert fragment in rejected(raw)[f"{W}.model.volume"]


def test_several_volumes_need_the_volume_named():
    raw = chat(sizeGib=15, source="volume")
    raw["workloads"][0]["volumes"].append({"name": "cache", "mountPath": "/cache", "pvc": "cache"})
    assert "required with source 'volume'" in rejected(raw)[f"{W}.model.volume"]


def test_weights_larger_than_the_gpus_of_a_replica_are_refused():
    message = rejected(chat(sizeGib=30, source="volume"))[f"{W}.model.sizeGib"]
    # vLLM takes --gpu-memory-utilization of the card (0.9 before 0.20, 0.92 from it; example 005 runs 0.33.0)
    assert "30 GiB of weights cannot fit" in message
    assert "A10 = 22.2 GiB x 0.92 (vLLM's default --gpu-memory-utilization) = 20.4 GiB; allowed: <= 20.4" in message
    raw = chat(sizeGib=30, source="volume")
    raw["workloads"][0]["gpu"]["count"] = 2
    raw["workloads"][0]["args"].append("--tensor-parallel-size=2")
    raw["nodePools"][0]["gpusPerNode"] = 2
    assert f"{W}.model.sizeGib" not in (rejected_or_none(raw) or {})
    # two GPUs without tensor parallelism: vLLM uses one of them, and one copy of the weights sits on it
    raw["workloads"][0]["args"].pop()
    assert "so 1 of the replica's GPUs would stay idle" in rejected(raw)[f"{W}.gpu.count"]


def test_a_gpu_without_a_sourced_nvidia_smi_total_is_measured_by_its_datasheet_size():
    raw = chat(sizeGib=90, source="volume")
    raw["nodePools"][0]["gpuModel"] = "H800-80GB"
    message = rejected(raw)[f"{W}.model.sizeGib"]
    assert "H800-80GB = 80 GiB (datasheet size) x 0.9" in message
    raw["workloads"][0]["model"]["sizeGib"] = 60
    assert load(raw).workloads[0].model.size_gib == 60


def rejected_or_none(raw):
    try:
        load(raw)
    except Exception:  # noqa: BLE001
        return rejected(raw)
    return None


def test_a_mig_instance_holds_only_its_profile_memory():
    raw = stack_raw("prod")
    raw["workloads"][0]["model"] = {"sizeGib": 6, "source": "image"}
    assert "MIG 1g.5gb = 5 GiB" in rejected(raw)[f"{W}.model.sizeGib"]
    raw["workloads"][0]["model"]["sizeGib"] = 4
    load(raw)


def test_a_cgpu_replica_holds_the_gib_it_requests():
    raw = copy.deepcopy(example_raw("004"))
    raw["workloads"][0]["model"] = {"sizeGib": 5, "source": "image"}
    assert "5 GiB of weights cannot fit" in rejected(raw)[f"{W}.model.sizeGib"]
    assert "4 GiB of cGPU memory (gpu.memoryGib)" in rejected(raw)[f"{W}.model.sizeGib"]
    raw["workloads"][0]["model"]["sizeGib"] = 3.5
    load(raw)


# ------------------------------------------------------------------------------------------------ readiness
@pytest.mark.parametrize("server", sorted(servers.SERVER_PROFILES))
def test_a_named_server_without_probes_gets_http_probes_on_its_health_path(server):
    raw = example_raw("005")
    raw["workloads"][0].update(server=server, autoscaling={"autoscaler": "none"}, replicas=1)
    raw["workloads"][0].pop("slo")  # the example's SLO is on a vLLM metric
    if server == "sglang":  # listening beyond the pod and serving the /metrics the port declares
        raw["workloads"][0]["args"] += ["--host=0.0.0.0", "--enable-metrics"]
    if server == "triton":  # Triton serves /metrics on its metrics port only
        raw["workloads"][0]["ports"][0].pop("metricsPath")
    w = workload(raw)
    profile = servers.SERVER_PROFILES[server]
    got = probes(w)
    assert {got[k]["timeoutSeconds"] for k in ("startupProbe", "readinessProbe")} == {profile.probe_timeout_seconds}
    assert got["readinessProbe"]["httpGet"] == {"path": profile.ready_path, "port": "http"}
    assert got["startupProbe"]["httpGet"] == {"path": profile.ready_path, "port": "http"}
    assert got["livenessProbe"]["httpGet"] == {"path": profile.live_path, "port": "http"}


def test_no_server_keeps_tcp_probes():
    raw = example_raw("005")
    raw["workloads"][0].pop("server")
    raw["workloads"][0].pop("slo")  # the example's SLO is on a vLLM metric
    raw["workloads"][0]["autoscaling"] = {"autoscaler": "none"}
    raw["workloads"][0]["replicas"] = 1
    got = probes(workload(raw))
    assert got["readinessProbe"]["tcpSocket"] == {"port": "http"} and "httpGet" not in got["startupProbe"]


def test_the_server_literal_and_the_profile_table_agree():
    from typing import get_args

    assert set(get_args(Workload.model_fields["server"].annotation.__args__[0])) == set(servers.SERVER_PROFILES)


# ------------------------------------------------------------------------------------------------ simulator
def run_step(raw):
    cfg = load(raw)
    return simulate(cfg, "t", "chat", resolve_trace(cfg, "chat", "step", "40m"))


def test_the_simulated_load_is_the_expected_load_not_the_budget():
    cfg = load(chat(sizeGib=15, source="volume"))
    plan = service_plan(cfg, cfg.workloads[0])
    expected = load_estimate(cfg.workloads[0]).expected_seconds
    assert plan.model_load_s == pytest.approx(expected, abs=1) and plan.model_load_s < startup_seconds(cfg.workloads[0])
    assert "expected from model" in plan.startup_basis


def test_weights_in_the_image_lengthen_the_simulated_pull():
    cfg = load(chat(sizeGib=15, source="image"))
    plan = service_plan(cfg, cfg.workloads[0])
    assert plan.image_pull_s == 300 + load_estimate(cfg.workloads[0]).image_pull_extra_seconds
    assert "for 15 GiB of weights in the image" in plan.startup_basis


def test_a_bigger_model_delays_first_capacity_in_the_step_trace():
    small, big = run_step(chat(sizeGib=5, source="volume")), run_step(chat(sizeGib=18, source="volume"))
    assert small.capacity_ready_s is not None and big.capacity_ready_s is not None
    # the same decisions, 13 GiB more at the PVC rate before the new replica is ready
    delay = 13 * 1024 / timeouts.MODEL_LOAD_RATES["pvc"].mib_per_second
    assert big.capacity_ready_s - small.capacity_ready_s == pytest.approx(delay, abs=10)
    assert "Start-up figures: model load expected from model" in table_text(big)


def test_example_files_state_model_and_no_hand_set_startup_budget():
    for seed in ("005", "006"):
        w = example_raw(seed)["workloads"][0]
        assert "model" in w and "startupTimeoutSeconds" not in (w.get("probes") or {}), EXAMPLES[seed]
