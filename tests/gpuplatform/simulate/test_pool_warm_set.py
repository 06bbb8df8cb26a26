"""A pool's warm set in the simulator (examples/007: three vLLM models on one L20 pool, one warm GPU): a step on one
model wakes its sleeping replica instead of a cold start, the warm GPU stays taken until that replica is scaled in,
and ``--tune`` weighs the warm set against an extra replica per model at ``minReplicas``."""
import copy
import json

import pytest
import yaml
from support import REPO, cli

from gpuplatform.catalogs import servers
from gpuplatform.components.model_startup import READINESS_PROBE_PERIOD_SECONDS, load_estimate
from gpuplatform.components.stack_config import namespace_from_stack_file
from gpuplatform.components.validation import load
from gpuplatform.simulate.engine import service_plan
from gpuplatform.simulate.pool import simulate_pool, tune_pool
from gpuplatform.simulate.traces import Trace

EXAMPLE = REPO / "examples" / "007-warm-set" / "Pulumi.007-warm-set.yaml"
HOUR_S = 3600
MODELS = ("chat", "code", "summarize")


def example(**pool) -> dict:
    raw = copy.deepcopy(namespace_from_stack_file(EXAMPLE))
    raw["nodePools"][0]["warmSet"].update(pool)
    return raw


def per_replica(cfg) -> float:
    return service_plan(cfg, cfg.workloads[0]).rps_at_target


def steps(per: float, starts_s: dict, duration_s: int = 1500, length_s: int = 900) -> dict:
    """Each model at 0.6 of a replica's load at the target; a model named in ``starts_s`` at 1.6 replicas' for
    ``length_s`` from its start."""
    out = {}
    for name in MODELS:
        at = starts_s.get(name)
        if at is None:
            out[name] = Trace(f"flat-{name}", (0,), (0.6 * per,), duration_s)
        else:
            out[name] = Trace(f"step-{name}", (0, at, at + length_s), (0.6 * per, 1.6 * per, 0.6 * per), duration_s)
    return out


@pytest.fixture(scope="module")
def shipped():
    cfg = load(example())
    return cfg, steps(per_replica(cfg), {"chat": 300})


def test_a_step_wakes_the_models_sleeping_replica_within_a_minute(shipped):
    cfg, traces = shipped
    result = simulate_pool(cfg, "x", traces)
    chat = result.workloads[0]
    path = chat.tally.capacity_path
    wake = servers.wake_seconds(15, 1, 0)
    assert wake == 15 / servers.WAKE_HOST_TO_GPU_GIB_PER_SECOND + servers.WAKE_OVERHEAD_SECONDS
    assert path["wake"] == wake and path["wake_parts"]["copy"] == 0.75 and path["wake_parts"]["level"] == 1
    # no cold phase: no node, no pull, no load; the endpoint at the readiness probe's next pass
    assert path["node_provisioning"] == path["image_pull"] == path["model_load"] == 0 and not path["new_node"]
    assert path["probe"] == READINESS_PROBE_PERIOD_SECONDS - wake
    assert chat.capacity_ready_s == path["total"] == path["scale_up_decision"] + READINESS_PROBE_PERIOD_SECONDS
    assert chat.capacity_ready_s <= 60 and result.woken >= 1 and result.warm_gpus == 1
    # the same step without the warm set goes the cold path: a node, the image, the server's start and the weights
    cold = simulate_pool(cfg, "x", traces, warm_set_gpus=0)
    cold_path = cold.workloads[0].tally.capacity_path
    assert "wake" not in cold_path and cold_path["model_load"] > 60 and cold_path["new_node"]
    assert cold.workloads[0].capacity_ready_s > 10 * chat.capacity_ready_s
    # the replica that served alone for the 28 s keeps the backlog it built there (each replica its own queue) and
    # drains it while the woken one takes half the new arrivals: the worst pod is out of the SLO for 2 minutes
    assert cold.workloads[0].tally.bad_minutes > 5 * chat.tally.bad_minutes and chat.tally.bad_minutes == 2
    # the warm GPU is a node the pool pays for: 3 replicas and the warm set start on 4 nodes
    assert result.peak_nodes >= 4 and cold.woken == 0 and cold.warm_gpus == 0


def test_the_woken_replica_takes_the_warm_gpu_until_it_is_scaled_in(shipped):
    cfg, _ = shipped
    per = per_replica(cfg)
    # two models step at once: one warm GPU wakes one of them, the other starts cold
    together = simulate_pool(cfg, "x", steps(per, {"chat": 300, "code": 300}))
    paths = [r.tally.capacity_path for r in together.workloads[:2]]
    assert sorted("wake" in p for p in paths) == [False, True]
    # one after the other, the first's woken replica scaled in (and back asleep) before the second's step: both wake
    apart = simulate_pool(cfg, "x", steps(per, {"chat": 300, "code": 2400}, duration_s=3600))
    assert all("wake" in r.tally.capacity_path for r in apart.workloads[:2])
    assert apart.woken >= 2


def test_sleep_level_2_wakes_by_reading_the_weights_again():
    cfg = load(example(sleepLevel=2))
    result = simulate_pool(cfg, "x", steps(per_replica(cfg), {"summarize": 300}))
    path = result.workloads[2].tally.capacity_path
    read = load_estimate(cfg.workloads[2]).read_seconds
    assert path["wake_parts"]["level"] == 2 and path["wake_parts"]["reload"] == pytest.approx(read, abs=1e-3)
    assert path["wake"] == pytest.approx(read + servers.WAKE_OVERHEAD_SECONDS, abs=1e-3)
    assert path["model_load"] == 0 and path["total"] <= 180


def tunable() -> dict:
    """007 with room to hold a second replica of every model (maxReplicas 3, 10 nodes) and a 95 % SLO each on 4
    waiting requests."""
    raw = example()
    raw["nodePools"][0]["maxNodes"] = 10
    for w in raw["workloads"]:
        w["autoscaling"]["maxReplicas"] = 3
        w["slo"] = {"objectives": [{"metric": "vllm_requests_waiting", "below": 4}], "compliance": 95}
    return raw


def staggered_steps(per: float) -> dict:
    """An hour; each model's step 20 minutes after the previous one's, 10 minutes long."""
    return steps(per, {"chat": 300, "code": 1500, "summarize": 2700}, duration_s=HOUR_S, length_s=600)


@pytest.fixture(scope="module")
def tuned():
    cfg = load(tunable())
    traces = staggered_steps(per_replica(cfg))
    return cfg, traces, tune_pool(cfg, "x", traces, max_min_replicas=2, max_placeholders=1)


def test_tune_weighs_the_warm_set_against_an_extra_replica_per_model(tuned):
    _, _, t = tuned
    assert t.refused == 0 and len(t.tried) == 8 * 3  # minReplicas 1-2 each x (0 or 1 placeholder, the warm set)
    floor, slept = t.best_floor, t.best_warm_set
    # headroom as replicas: every model needs its second replica held, since each steps in turn
    assert floor[0]["minReplicas"] == {"chat": 2, "code": 2, "summarize": 2} and floor[0]["warmSetGpus"] == 0
    # the warm set: one GPU for the three, each step woken
    assert slept[0]["minReplicas"] == {"chat": 1, "code": 1, "summarize": 1} and slept[0]["warmSetGpus"] == 1
    assert floor[1].within_budget and slept[1].within_budget
    assert slept[1].woken >= 3 and all("wake" in r.tally.capacity_path for r in slept[1].workloads)
    assert t.warm_set_wins is True and slept[1].node_s < floor[1].node_s
    # the settings without the warm set ran without it
    assert all(r.warm_gpus == 0 for s, r in t.tried if not s["warmSetGpus"])


def _stack_and_traces(tmp_path, raw: dict, traces: dict) -> tuple:
    stack = tmp_path / "Pulumi.pool.yaml"
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["config"] = {f"gpu-platform:{k}": v for k, v in raw.items()}
    stack.write_text(yaml.safe_dump(doc))
    paths = []
    for name, tr in traces.items():
        path = tmp_path / f"{name}.csv"
        path.write_text("seconds,requests_per_second\n" + "".join(f"{t},{r}\n" for t, r in zip(tr.times, tr.rates))
                        + f"{tr.duration_s},{tr.rates[-1]}\n")
        paths.append(str(path))
    return ("simulate", "--config", str(stack), "--workload", ",".join(traces), "--trace", ",".join(paths))


def test_the_pool_run_prints_the_wake_and_tune_the_comparison(tmp_path, monkeypatch, shipped, tuned):
    _, traces = shipped
    args = _stack_and_traces(tmp_path, example(), traces)
    code, text, err = cli(*args)
    assert code == 0, err
    assert "warm set of 1 GPU" in text and "chat: capacity after its load rose at" in text
    assert "woken from the warm set (sleep level 1)" in text and "0.75s copying 15 GiB back from host memory" in text
    cfg, stepped, t = tuned
    args = _stack_and_traces(tmp_path, tunable(), stepped)
    monkeypatch.setattr("gpuplatform.simulate.pool.tune_pool", lambda *a, **k: t)
    code, text, err = cli(*args, "--tune")
    assert code == 0, err
    assert "with the warm set" in text and "The warm set beats minReplicas here" in text
    code, out, err = cli(*args, "--tune", "--format", "json")
    got = json.loads(out)
    assert got["warmSetWins"] is True and got["withWarmSet"]["setting"]["warmSetGpus"] == 1
    assert got["withWarmSet"]["nodeHours"] < got["withoutPlaceholders"]["nodeHours"]
