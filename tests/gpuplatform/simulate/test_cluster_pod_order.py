"""Where the simulator's scheduler puts a replica (``cluster.podPlacement``: binpack or spread) and which replica its
ReplicaSet controller deletes on a scale-in (gpuplatform/simulate/cluster.py). The real kube-scheduler and
controller judge both in tests/realengines/gpuplatform/simulate/test_cluster_pod_order_on_real_controllers.py."""
import pytest
from support import stack_raw

from gpuplatform.catalogs.kubernetes import DEFAULT_POD_PLACEMENT, POD_PLACEMENTS
from gpuplatform.components.errors import ConfigError
from gpuplatform.components.validation import load
from gpuplatform.components.validation.parsing import parse
from gpuplatform.simulate.cluster import Node, NodePool, NodeScaler, Placeholders, Pod, Pods
from gpuplatform.simulate.workload_setup import build_setup


@pytest.mark.parametrize("stack, kind, placement", [
    ("local", "kubeconfig", "spread"), ("prod", "ack-managed", "spread"), ("staging", "ack-existing", "spread")])
def test_each_cluster_kind_places_as_its_scheduler_does_by_default(stack, kind, placement) -> None:
    cfg = parse(stack_raw(stack))
    assert cfg.cluster.kind == kind and DEFAULT_POD_PLACEMENT[kind] == placement
    assert cfg.cluster.pod_placement == placement
    assert {build_setup(cfg, w.name).pod_placement for w in cfg.workloads} == {placement}


def test_a_stack_states_its_schedulers_placement_and_a_bad_one_names_the_path_and_the_choices() -> None:
    raw = stack_raw("local")
    raw["cluster"]["podPlacement"] = "binpack"
    assert parse(raw).cluster.pod_placement == "binpack"
    raw["cluster"]["podPlacement"] = "pack"
    with pytest.raises(ConfigError) as exc:
        load(raw)
    (issue,) = [i for i in exc.value.issues if "podPlacement" in i.path]
    assert issue.path.endswith("cluster.podPlacement") and "pack" in issue.message
    assert all(choice in issue.message for choice in POD_PLACEMENTS), issue.message


def test_binpack_fills_the_fullest_node_and_spread_the_one_with_fewest_of_the_workloads_pods() -> None:
    def nodes(placement: str) -> NodePool:
        pool = NodePool(4, 3, 3, 0, False, 3, placement=placement)
        warm = Placeholders(2)
        pool.nodes[0].pods += warm.pods  # two placeholders on the first node
        return pool

    for placement, expected in (("binpack", [2, 3, 0]), ("spread", [1, 2, 2])):
        pool, pods = nodes(placement), Pods("w", 0, 0)
        pods.scale(3, 0.0)
        pods.schedule(0.0, pool)
        # binpack: all three on the node the placeholders hold (fullest first, till it is full); spread: one per
        # node with none of the workload's, the placeholders' node last (more pods, LeastAllocated)
        assert [sum(not p.placeholder for p in n.pods) for n in pool.nodes] == (
            [2, 1, 0] if placement == "binpack" else [1, 1, 1]), placement
        pods.scale(5, 1.0)
        pods.schedule(1.0, pool)
        assert [sum(not p.placeholder for p in n.pods) for n in pool.nodes] == expected, placement


def _added_node_then_scale_in(placement: str) -> list[int]:
    pool = NodePool(2, 1, 2, 0, False, 1, placement=placement)
    pods = Pods("w", 0, 0)
    pods.scale(2, 0.0)
    pods.schedule(0.0, pool)
    pool.nodes.append(Node("node-1", 30.0, 2))
    pods.scale(3, 40.0)
    pods.schedule(40.0, pool)
    pods.scale(2, 100.0)
    return [len(n.pods) for n in pool.nodes]


@pytest.mark.parametrize("placement", POD_PLACEMENTS)
def test_a_scale_in_deletes_a_replica_that_shares_its_node_before_the_newest(placement) -> None:
    """kubernetes ``ActivePodsWithRanks.Less`` rule 5: more of the ReplicaSet's pods on the node go first. The
    replica on the added node is the newest, and stays."""
    assert _added_node_then_scale_in(placement) == [1, 1]


def test_among_equally_shared_nodes_the_more_recently_ready_goes_first_by_powers_of_two() -> None:
    """Rules 6 and 8: ready time, then creation time, each compared in powers of two of its age in nanoseconds;
    within one, the newest goes here (the real controller picks by the pods' random UIDs)."""
    node = Node("node-0", 0.0, 4)

    def pod(name: str, created: float, ready_at: float) -> Pod:
        p = Pod(name, created, node=node, bound=created, started=created, ready_at=ready_at)
        node.pods.append(p)
        return p

    pods = Pods("w", 0, 0)
    pods.pods = [pod("w-old-ready-late", 0.0, 990.0),   # ready 10 s at 1000 s: 2^33 ns
                 pod("w-new-ready-early", 500.0, 900.0),  # ready 100 s: 2^36 ns
                 pod("w-a", 600.0, 950.0), pod("w-b", 700.0, 960.0)]  # ready 50 s and 40 s: both 2^35 ns
    pods.scale(3, 1000.0)
    assert "w-old-ready-late" not in [p.name for p in pods.pods]  # the most recently ready, though the oldest
    pods.scale(2, 1000.0)
    assert [p.name for p in pods.pods] == ["w-new-ready-early", "w-a"]  # same bucket: the newer w-b went


def test_a_node_added_for_a_replica_stays_through_the_scale_in_when_its_first_node_was_shared() -> None:
    """The node-hours a scale-in costs: the added node keeps a replica, so it is never empty for the autoscaler
    to remove (before, the newest replica went and the node with it after the unneeded time)."""
    pool = NodePool(2, 1, 3, 20, True, 1, scaler=NodeScaler(10, 60, 0))
    pods = Pods("w", 0, 0)
    pods.start_ready(2, pool)
    counts = {}
    for t in range(400):
        if t == 1:
            pods.scale(3, 1.0)
        if t == 100:
            pods.scale(2, 100.0)
        pods.schedule(float(t), pool)
        pool.scan(float(t), pods)
        counts[t] = len(pool.nodes)
    assert counts[50] == 2 and counts[399] == 2
    assert sorted(len(n.pods) for n in pool.nodes) == [1, 1]
