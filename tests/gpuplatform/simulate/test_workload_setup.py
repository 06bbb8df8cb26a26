"""The simulator's per-workload setup (gpuplatform/simulate/workload_setup.py): what it reads from the stack config,
what it refuses, and that a run needs nothing but it."""
import ast
import copy
import dataclasses

import pytest

from gpuplatform.catalogs.gpus import MIG_RECONFIGURE, instance_type, provisioning
from gpuplatform.components import config as config_module
from gpuplatform.components.config import duration_seconds
from gpuplatform.components.errors import ConfigError
from gpuplatform.components.pools import all_pool_facts
from gpuplatform.components.stack_config import load_stack_file, namespace_from_stack_file
from gpuplatform.components.validation import load
from gpuplatform.simulate.engine import Simulation
from gpuplatform.simulate.pool import run_pool
from gpuplatform.simulate.traces import Trace, built_in
from gpuplatform.simulate.workload_setup import WorkloadSetup, build_setup
from support import REPO, cfg_of, stack_raw

CONFIGS = sorted([*(REPO / "stacks").glob("Pulumi.*.yaml"), *(REPO / "examples").glob("0*/Pulumi.*.yaml"),
                  *(REPO / "examples").glob("0*/plain/Pulumi.*.yaml")])
WARM_SET = REPO / "examples" / "007-warm-set" / "Pulumi.007-warm-set.yaml"
ENGINE_MODULES = ("engine", "service", "cluster", "pool", "autoscaling", "hpa", "scrape", "startup", "bounds",
                  "reasons", "wake", "slo", "promql")
"""The modules a run executes once its setups are built."""
BUILDS_FROM_CONFIG = {("engine", "simulate"), ("pool", "simulate_pool"), ("pool", "tune_pool"),
                      ("pool", "with_setting"), ("pool", "without_warm_set"), ("pool", "_pool_of")}
"""Functions of those modules that take the config: each builds the setups first (or edits a config to build them
from, for a search), and the run they start gets the setups only."""


def _autoscaled():
    for path in CONFIGS:
        try:
            cfg = load_stack_file(path)
        except ConfigError:
            continue  # an example that only composes (examples/reuse) has no stack of its own
        for w in cfg.workloads:
            if not w.fixed:
                yield pytest.param(cfg, w.name, id=f"{path.stem}-{w.name}")


def _config_objects(root) -> list:
    """Every object reachable from ``root`` whose class is one of the stack config's (components/config.py)."""
    found, seen, todo = [], set(), [root]
    while todo:
        obj = todo.pop()
        if id(obj) in seen or isinstance(obj, (str, bytes, int, float, bool, type(None), type)):
            continue
        seen.add(id(obj))
        if type(obj).__module__ == config_module.__name__:
            found.append(obj)
            continue
        if isinstance(obj, dict):
            todo.extend(obj.keys())
            todo.extend(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            todo.extend(obj)
        elif dataclasses.is_dataclass(obj):
            todo.extend(getattr(obj, f.name) for f in dataclasses.fields(obj))
        elif hasattr(obj, "__dict__") and not callable(obj):
            todo.extend(vars(obj).values())
    return found


# ------------------------------------------------------------------------------------------------ what it reads
def test_the_setup_reads_the_workload_its_pool_and_the_monitoring_intervals() -> None:
    cfg = cfg_of("prod")
    w = cfg.workloads[0]
    pool = cfg.pool(w.node_pool)
    facts = all_pool_facts(cfg)[w.node_pool]
    iv = cfg.monitoring.intervals
    s = build_setup(cfg, "flower")
    assert (s.name, s.namespace, s.image, s.node_pool) == ("flower", cfg.workload_namespace(w), w.image, "a100-mig")
    assert (s.autoscaler, s.keda, s.min_replicas, s.max_replicas, s.warm_replicas) == ("hpa", False, 1, 7, 0)
    assert (s.first.metric, s.first.target) == ("triton_queue_time_us", 3500)
    assert [t.metric for t in s.triggers] == ["triton_queue_time_us"] and s.triggers[0].query is None
    assert s.hpa_spec["minReplicas"] == 1 and s.hpa_spec["maxReplicas"] == 7
    assert s.hpa_spec["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 900
    assert (s.collect_s, s.scrape_s, s.window) == (duration_seconds(iv.exporter_collect),
                                                   duration_seconds(iv.scrape), iv.rule_window)
    assert s.sync_s == duration_seconds(iv.hpa_sync) and s.major == 3
    assert not s.reads_gpu_metrics
    # the pool: MIG slots per node, its node range, provisioning plus the MIG reconfiguration, the cluster's
    # node autoscaler settings
    assert (s.slots, s.min_nodes, s.max_nodes) == (facts.replicas_per_node(w.gpu), 1, 2)
    family = instance_type(pool.instance_types[0]).family
    assert s.provision_s == provisioning(family).seconds + MIG_RECONFIGURE.seconds
    assert (s.node_scaler.scan_s, s.node_scaler.unneeded_s) == (30, 600)
    assert s.autoscaled_pool and s.warm_set is None
    # the service plan, the start-up figures stated in serviceModel, the SLO
    assert (s.plan.model_load_s, s.plan.image_pull_s, s.plan.service_time_s) == (60, 240, 0.01)
    assert s.load_estimate is None  # serviceModel.modelLoadSeconds states the load: no estimate to take apart
    assert s.slo_compliance == 99 and [(t.metric, t.target) for t in s.slo_triggers] == [("triton_queue_time_us",
                                                                                          5000)]
    assert s.lowest_replicas == 1 and s.drain is not None


def test_a_changed_config_gives_a_changed_setup() -> None:
    raw = stack_raw("prod")
    raw["monitoring"]["intervals"]["scrape"] = "5s"
    a = raw["workloads"][0]["autoscaling"]
    a["minReplicas"], a["maxReplicas"], a["warmReplicas"] = 2, 4, 1
    raw["workloads"][0]["serviceModel"]["imagePullSeconds"] = 30
    raw["nodePools"][0]["maxNodes"] = 3
    s = build_setup(load(raw), "flower")
    assert (s.scrape_s, s.min_replicas, s.max_replicas, s.warm_replicas) == (5, 2, 4, 1)
    assert (s.hpa_spec["minReplicas"], s.hpa_spec["maxReplicas"]) == (2, 4)
    assert s.plan.image_pull_s == 30 and s.max_nodes == 3


def test_a_keda_workload_gets_its_queries_its_activation_and_its_floor_of_zero() -> None:
    cfg = cfg_of("local")
    w = next(x for x in cfg.workloads if x.name == "batch-embedder")
    s = build_setup(cfg, "batch-embedder")
    assert s.keda and s.autoscaler == "keda" and s.lowest_replicas == 0
    assert s.reads_gpu_metrics and s.min_replicas == w.autoscaling.min_replicas
    assert all(t.query for t in s.triggers)  # KEDA runs its own queries, not the adapter's
    if w.autoscaling.activation is not None:
        assert s.triggers[-1].metric == "activation"
        assert s.triggers[-1].activation_threshold == w.autoscaling.activation.activation_threshold
    assert s.full_scales == {"gpu_util": 100.0}
    assert s.readings["gpu_util"] == ("utilization", 100.0)
    assert s.node_scaler.source == "the upstream cluster-autoscaler's defaults"


def test_a_model_estimate_and_the_pools_warm_set_are_read_once_into_the_setup() -> None:
    cfg = load_stack_file(WARM_SET)
    s = build_setup(cfg, "chat")
    ws = cfg.pool(s.node_pool).warm_set
    assert s.load_estimate is not None and s.plan.model_load_s == pytest.approx(s.load_estimate.expected_seconds,
                                                                                abs=1)
    assert (s.warm_set.gpus, s.warm_set.level) == (ws.gpus, ws.sleep_level)
    assert sorted(s.warm_set.wakes) == ["chat", "code", "summarize"]
    assert all(part["seconds"] > part["overhead"] for part in s.warm_set.wakes.values())


# ------------------------------------------------------------------------------------------------ what it refuses
def _raw_005() -> dict:
    return copy.deepcopy(namespace_from_stack_file(REPO / "examples" / "005-vllm-queue" / "Pulumi.005-vllm-queue.yaml"))


def test_an_unknown_or_fixed_workload_is_refused_naming_the_ones_there_are() -> None:
    with pytest.raises(ConfigError) as info:
        build_setup(cfg_of("local"), "nope")
    (issue,) = info.value.issues
    assert issue.path == "--workload" and "'nope'" in issue.message
    assert "echo-gpu" in issue.message and "batch-embedder" in issue.message
    cfg = load_stack_file(REPO / "examples" / "004-cgpu-notebooks" / "Pulumi.004-cgpu-notebooks.yaml")
    with pytest.raises(ConfigError) as info:
        build_setup(cfg, "tf-notebook")
    assert "fixed number of replicas" in info.value.issues[0].message and "none" in info.value.issues[0].message


def test_an_slo_objective_the_simulator_cannot_produce_is_refused_at_its_path() -> None:
    raw = _raw_005()
    raw["workloads"][0]["slo"]["objectives"] = [{"metric": "vllm_kv_cache_usage", "below": 0.9}]
    with pytest.raises(ConfigError) as info:
        build_setup(load(raw), "chat")
    (issue,) = info.value.issues
    assert issue.path == "workloads[0].slo.objectives[0].metric"
    assert "'vllm_kv_cache_usage' cannot be simulated" in issue.message and "tokens in flight" in issue.message


def test_an_autoscaling_metric_the_simulator_cannot_produce_is_refused_with_what_it_can() -> None:
    raw = _raw_005()
    w = raw["workloads"][0]
    w["autoscaling"]["metrics"] = [{"metric": "vllm_kv_cache_usage", "target": 0.5}]
    w.pop("slo", None)
    with pytest.raises(ConfigError) as info:
        build_setup(load(raw), "chat")
    (issue,) = info.value.issues
    assert issue.path == "workloads[0].autoscaling.metrics[0].metric"
    assert "allowed for simulate:" in issue.message and "vllm_requests_waiting" in issue.message


# ------------------------------------------------------------------------------------------------ nothing else
@pytest.mark.parametrize(("cfg", "workload"), list(_autoscaled()))
def test_a_setup_holds_no_config_object(cfg, workload) -> None:
    s = build_setup(cfg, workload)
    assert isinstance(s, WorkloadSetup)
    assert _config_objects(s) == []


def test_a_run_and_a_pool_run_take_the_setups_alone() -> None:
    """Built, the setups are all a run gets: the config is gone before the loop starts."""
    cfg = load_stack_file(WARM_SET)
    setups = [build_setup(cfg, name) for name in ("chat", "code")]
    per = setups[0].plan.rps_at_target
    del cfg
    sim = Simulation(setups[0], built_in("step", per, 2 * per, 900)).run()
    assert sim.result("007").capacity_ready_s is not None
    assert _config_objects(sim) == []
    traces = {"chat": built_in("step", per, 2 * per, 900), "code": Trace("flat", (0,), (per,), 900)}
    pooled = run_pool(setups, "007", traces)
    assert [r.workload for r in pooled.workloads] == ["chat", "code"] and pooled.node_s > 0


def test_the_engine_modules_take_no_config_past_the_setup() -> None:
    """No function of a module a run executes takes the config, but the ones that build the setups first; and
    none of them reads a setup's way back to it (``.cfg``, ``.workload``)."""
    root = REPO / "gpuplatform" / "simulate"
    offending = []
    for module in ENGINE_MODULES:
        tree = ast.parse((root / f"{module}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (module, node.name) not in \
                    BUILDS_FROM_CONFIG:
                for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs):
                    hint = ast.unparse(arg.annotation) if arg.annotation is not None else ""
                    if arg.arg == "cfg" or "PlatformConfig" in hint or hint == "Workload":
                        offending.append(f"{module}.{node.name}({arg.arg})")
            if isinstance(node, ast.Attribute) and node.attr in ("cfg", "workload") and (
                    isinstance(node.value, ast.Name) and node.value.id in ("s", "setup", "first")
                    or isinstance(node.value, ast.Attribute) and node.value.attr == "s"):
                offending.append(f"{module}: {ast.unparse(node)}")
    assert offending == []
