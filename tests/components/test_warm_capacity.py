"""Warm capacity (``autoscaling.warmReplicas``): validation, the placeholder Deployment and PriorityClass, the policy
pack on them, the simulator's preemption of placeholders, ``--tune``'s knob and the plan's idle cost."""
import copy

import pytest

from support import REPO, assert_rejected, of_type, stack_raw, synth

from gpuplatform.catalogs.kubernetes import CA_EXPENDABLE_PODS_PRIORITY_CUTOFF, SCHEDULER_POD_INITIAL_BACKOFF_S
from gpuplatform.check import run_policies
from gpuplatform.components import warm_capacity
from gpuplatform.components.stack_config import namespace_from_stack_file
from gpuplatform.components.validation import load
from gpuplatform.simulate.engine import Simulation, setup
from gpuplatform.simulate.traces import built_in

# the plain variant: the example as shipped has warm capacity, the pre-puller and the caches on
EXAMPLE = REPO / "examples" / "005-vllm-queue" / "plain" / "Pulumi.005-vllm-queue-plain.yaml"


# ------------------------------------------------------------------------------------------------ validation
def test_placeholders_beyond_what_the_pool_holds_beside_max_replicas_are_refused():
    raw = stack_raw("staging")  # pool a10 holds 10 replicas, maxReplicas 10
    raw["workloads"][0]["autoscaling"]["warmReplicas"] = 2
    assert_rejected(raw, "workloads[0].autoscaling.warmReplicas", "2 placeholders", "maxReplicas 10", "allowed: <= 0",
              "maxNodes")
    raw["workloads"][0]["autoscaling"]["maxReplicas"] = 8
    assert load(raw).workloads[0].warm_replicas == 2


def test_placeholders_count_in_the_pools_total_with_its_other_workloads():
    raw = stack_raw("local")  # sim-t4 holds 4: echo-gpu 2 + batch-embedder 2
    raw["workloads"][0]["autoscaling"]["warmReplicas"] = 1
    assert_rejected(raw, "nodePools[0].maxNodes", "echo-gpu (3)")


def test_placeholders_need_an_autoscaler_and_an_autoscaled_pool():
    raw = stack_raw("dev")
    w = raw["workloads"][0]
    w.pop("autoscaling")
    w["replicas"] = 2
    w["autoscaling"] = {"autoscaler": "none", "warmReplicas": 1}
    assert_rejected(raw, "workloads[0].autoscaling.warmReplicas", "fixed count",
                    "allowed: 0, or autoscaler hpa or keda")
    raw = stack_raw("dev")
    raw["workloads"][0]["autoscaling"]["warmReplicas"] = 1
    pool = raw["nodePools"][0]
    pool.update({"autoscaling": False, "desiredNodes": pool["maxNodes"]})
    assert_rejected(raw, "workloads[0].autoscaling.warmReplicas", "fixed size", "allowed: 0")


def test_a_keda_workload_asleep_at_zero_may_keep_a_node_warm():
    raw = stack_raw("local")
    raw["nodePools"][0]["maxNodes"] += 1
    raw["workloads"][1]["autoscaling"]["warmReplicas"] = 1
    cfg = load(raw)
    assert cfg.workloads[1].autoscaling.min_replicas == 0 and cfg.workloads[1].warm_replicas == 1


# ------------------------------------------------------------------------------------------------ rendering
def _local_with_warm() -> dict:
    raw = stack_raw("local")
    raw["nodePools"][0]["maxNodes"] += 1
    for w in raw["workloads"]:
        w["autoscaling"]["warmReplicas"] = 1
    return raw


def test_each_workload_gets_placeholders_of_its_size_and_the_cluster_one_priority_class():
    records = synth(_local_with_warm())
    classes = of_type(records, "kubernetes:scheduling.k8s.io/v1:PriorityClass")
    assert len(classes) == 1
    pc = classes[0].inputs
    # at the cluster autoscaler's cutoff, not below it: an evicted placeholder must still get a node
    assert pc["value"] == CA_EXPENDABLE_PODS_PRIORITY_CUTOFF and pc["preemptionPolicy"] == "Never"
    assert pc["globalDefault"] is False
    deployments = {r.inputs["metadata"]["name"]: r.inputs for r in of_type(records, "kubernetes:apps/v1:Deployment")}
    for name in ("echo-gpu", "batch-embedder"):
        real, warm = deployments[name], deployments[f"{name}-warm"]
        assert warm["spec"]["replicas"] == 1
        pod, real_pod = warm["spec"]["template"]["spec"], real["spec"]["template"]["spec"]
        assert pod["priorityClassName"] == pc["metadata"]["name"]
        assert pod["terminationGracePeriodSeconds"] == 0 and pod["automountServiceAccountToken"] is False
        assert pod["nodeSelector"] == real_pod["nodeSelector"] and pod["tolerations"] == real_pod["tolerations"]
        (c,), (rc,) = pod["containers"], real_pod["containers"]
        assert c["resources"] == rc["resources"]  # exactly one replica's GPU, CPU and memory
        assert "@sha256:" in c["image"] and c["image"].startswith("registry.k8s.io/pause:")
        sc = c["securityContext"]
        assert sc["runAsNonRoot"] and not sc["allowPrivilegeEscalation"] and sc["capabilities"] == {"drop": ["ALL"]}
        assert sc["seccompProfile"] == {"type": "RuntimeDefault"} and sc["readOnlyRootFilesystem"]
        # the workload's Service, PodMonitor, NetworkPolicy and PDB select by its name label: not the placeholders
        assert warm["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"] != name


def test_no_placeholders_without_warm_replicas():
    records = synth(stack_raw("local"))
    assert not of_type(records, "kubernetes:scheduling.k8s.io/v1:PriorityClass")
    cfg = load(stack_raw("local"))
    assert warm_capacity.placeholder_deployment(cfg.workloads[0], None) is None


def test_the_policy_pack_finds_nothing_new_on_placeholders():
    before = {(v.policy_id, v.message) for v in run_policies(synth(stack_raw("local")))}
    after = run_policies(synth(_local_with_warm()))
    new = [v for v in after if (v.policy_id, v.message) not in before]
    assert not new, [(v.policy_id, v.message) for v in new]


def test_plan_shows_the_idle_cost_of_warm_capacity():
    from gpuplatform.plan import capacity_rows, capacity_text

    raw = stack_raw("staging")  # an ACK pool of A10s, at a price stated in the stack
    raw["nodePools"][0]["price"] = {"perHour": 1.5, "source": "a quote"}
    raw["workloads"][0]["autoscaling"]["maxReplicas"] = 8
    raw["workloads"][0]["autoscaling"]["warmReplicas"] = 2
    rows = capacity_rows(load(raw))
    warm = rows[0]["workloads"][0]["warmCapacity"]
    assert warm["placeholders"] == 2 and warm["unitsHeld"] == 2 * (raw["workloads"][0]["gpu"].get("count") or 1)
    assert warm["priceKnown"], warm
    assert warm["nodeShare"] > 0 and warm["idlePerHour"] == pytest.approx(warm["nodeShare"] * 1.5)
    assert warm["idlePerDay"] == pytest.approx(warm["idlePerHour"] * 24, abs=0.01)
    text = capacity_text(rows)
    assert "Warm capacity" in text and f"{warm['idlePerHour']:g} {warm['currency']}/h" in text


# ------------------------------------------------------------------------------------------------ simulator
def _example(warm: int, max_nodes: int, **autoscaling) -> "object":
    raw = copy.deepcopy(namespace_from_stack_file(EXAMPLE))
    raw["nodePools"][0]["maxNodes"] = max_nodes
    raw["workloads"][0]["autoscaling"].update({"warmReplicas": warm, **autoscaling})
    return load(raw)


def _step_run(cfg):
    s = setup(cfg, "chat")
    # one replica's worth, then four: three new replicas
    trace = built_in("step", s.plan.rps_at_target, s.plan.rps_at_target * 4, 1200)
    return Simulation(s, trace).run()


def test_warm_nodes_take_node_provisioning_off_the_time_to_capacity():
    cold = _step_run(_example(0, 7))
    warm = _step_run(_example(3, 7))
    assert warm.warm.preempted == 3
    saved = cold.tally.capacity_ready_s - warm.tally.capacity_ready_s
    provision = cold.s.provision_s
    # the provisioning, within the autoscaler's 10 s scan alignment, less the preemptor's rebind
    assert provision - SCHEDULER_POD_INITIAL_BACKOFF_S <= saved <= provision + 10
    # the evicted placeholders went Pending and got nodes of their own: the warm room is back
    assert warm.warm.pending() == 0 and len(warm.nodes.nodes) == 7
    assert warm.tally.warm_s > 0 and cold.tally.warm_s == 0


def test_a_preempting_replica_binds_a_cycle_later_and_pulls_on_the_warm_node():
    sim = _step_run(_example(1, 5))
    taken = [p for p in sim.pods.pods if p.node is not None and p.created > 0
             and p.bound == p.created + SCHEDULER_POD_INITIAL_BACKOFF_S]
    assert len(taken) == 1
    pod = taken[0]
    # the warm node had not pulled the workload's image: the replica pulls it there
    assert pod.started == pod.bound + sim.s.plan.image_pull_s


def test_one_placeholder_does_not_help_a_step_that_needs_three_replicas_more():
    assert _step_run(_example(1, 5)).tally.capacity_ready_s == _step_run(_example(0, 5)).tally.capacity_ready_s


# ------------------------------------------------------------------------------------------------ tune
def test_tune_searches_warm_replicas_and_charges_what_placeholders_hold():
    from gpuplatform.simulate.report import resolve_trace
    from gpuplatform.simulate.tune import Candidate, Search, dimensions, slo_level

    cfg = _example(0, 6)
    level = slo_level(cfg, "chat", None)
    trace = resolve_trace(cfg, "chat", "bursty", "30m", level)
    dims = dimensions(cfg, "chat", trace, level)
    assert {d["warm_replicas"] for d in dims["warmReplicas"]} >= {0, 1}
    search = Search(cfg, "x", "chat", trace, 0.0, level)
    more_min = search.run(Candidate(2.0, 2, 4), full=True)
    warm = search.run(Candidate(2.0, 1, 4, warm_replicas=1), full=True)
    # ranked by what the pool bills: the node a placeholder keeps counts like the one a replica keeps
    assert warm.cost == (warm.result.tally.node_s, warm.result.tally.replica_s + warm.result.tally.warm_s)
    assert warm.result.tally.warm_s > 0
    # the same node held as one more ready replica, which serves at once: never better on both counts
    assert more_min.violation_s <= warm.violation_s and more_min.cost[0] <= warm.cost[0]
    refused = search.run(Candidate(2.0, 1, 6, warm_replicas=1))
    assert refused is None and search.refused == 1


def test_the_snippet_sets_warm_replicas_and_validates():
    import yaml

    from gpuplatform.simulate.tune import Candidate, merge_snippet, snippet

    cfg = _example(0, 6)
    text = snippet(cfg, "chat", Candidate(2.0, 1, 4, warm_replicas=2))
    assert yaml.safe_load(text)["gpu-platform:workloads"][0]["autoscaling"]["warmReplicas"] == 2
    raw = copy.deepcopy(namespace_from_stack_file(EXAMPLE))
    raw["nodePools"][0]["maxNodes"] = 6
    assert load(merge_snippet(raw, text)).workloads[0].warm_replicas == 2


def test_placeholder_objects_pass_the_api_servers_strict_schemas():
    import kubernetes_validate
    from kubernetes_validate import utils as kv_utils

    from gpuplatform.plan import manifest_files

    versions = sorted({v for v in kv_utils.all_versions()}, key=lambda v: tuple(int(x) for x in v.split(".")[:2]))
    docs = [body for body in manifest_files(synth(_local_with_warm())).values()
            if body.get("kind") == "PriorityClass" or (body.get("metadata") or {}).get("name", "").endswith("-warm")]
    assert len(docs) == 3
    for doc in docs:
        for version in (versions[0], versions[-1]):
            kubernetes_validate.validate(doc, version, strict=True)


def test_with_the_measures_on_a_bursty_trace_a_replica_more_beats_a_placeholder_in_slo_and_node_hours():
    """Example 005 with its weights on a Fluid cache, the pre-puller and room for 7 nodes, on 2 hours of ``bursty``
    (scaled at one replica's load): a placeholder's replica serves about 2 minutes into a burst, when most of it is
    over; a replica more at minReplicas serves at once, for fewer node-hours (docs/simulate.md, "Warm capacity")."""
    from test_fluid_cache import fluid

    from gpuplatform.simulate.engine import simulate
    from gpuplatform.simulate.report import resolve_trace

    def run(min_replicas: int, warm: int):
        raw = copy.deepcopy(fluid())
        raw["nodePools"][0]["maxNodes"] = 7
        w = raw["workloads"][0]
        w["prePull"] = True
        w["autoscaling"].update(minReplicas=min_replicas, warmReplicas=warm)
        cfg = load(raw)
        return simulate(cfg, "005", "chat", trace)

    trace = resolve_trace(load(fluid()), "chat", "bursty", None)
    reactive, placeholder, floor = run(1, 0), run(1, 1), run(3, 0)
    bad = [r.slo.bad_minutes for r in (reactive, placeholder, floor)]
    # judged by the SLI the burn-rate alerts use: the worst pod over each minute. The replica that built a burst's
    # backlog keeps it while the added ones start empty (each replica its own queue), so the worst pod is out of the
    # SLO longer than when the backlog was spread over the replicas (12 and 7 then)
    assert bad == [16, 8, 1]
    assert placeholder.tally.warm_s > 0 and floor.tally.node_s < placeholder.tally.node_s
    assert (round(placeholder.tally.node_s / 3600, 1), round(floor.tally.node_s / 3600, 2)) == (9.6, 7.45)
