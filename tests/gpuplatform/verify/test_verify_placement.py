"""``nodes.pod-placement`` (gpuplatform/verify/placement.py): the evidence packing and spreading leave, and the check
on a workload's pods and its pool's nodes as the API lists them."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

from kubernetes import client as k8s
from support import stack_raw

from gpuplatform.components.pools import all_pool_facts
from gpuplatform.components.validation.parsing import parse
from gpuplatform.verify.placement import PlacedNode, PlacedReplica, check_pod_placement, placement_evidence

T0 = datetime(2026, 12, 1, 8, 0, tzinfo=timezone.utc)


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def test_a_second_replica_beside_the_first_while_an_older_node_held_none_is_packing() -> None:
    nodes = [PlacedNode("n0", at(0), 0), PlacedNode("n1", at(0), 2)]
    replicas = [PlacedReplica("r1", "n0", at(5)), PlacedReplica("r2", "n0", at(10))]
    packed, spread = placement_evidence(nodes, replicas, 1)
    assert spread == [] and packed == [
        "r2 joined r1 on n0 while n1 held none of the workload's replicas (it has room for one now)"]


def test_a_node_added_after_the_replica_joined_tells_nothing() -> None:
    nodes = [PlacedNode("n0", at(0), 0), PlacedNode("n1", at(20), 2)]
    replicas = [PlacedReplica("r1", "n0", at(5)), PlacedReplica("r2", "n0", at(10))]
    assert placement_evidence(nodes, replicas, 1) == ([], [])


def test_a_replica_on_a_node_of_its_own_while_an_older_one_had_room_is_spreading() -> None:
    nodes = [PlacedNode("n0", at(0), 1), PlacedNode("n1", at(0), 1)]
    replicas = [PlacedReplica("r1", "n0", at(5)), PlacedReplica("r2", "n1", at(10))]
    packed, spread = placement_evidence(nodes, replicas, 1)
    assert packed == [] and spread == [
        "r2 started n1's first replica of the workload while n0 held one and has room for another now"]
    # no room on the first node: the scheduler had no choice, packing or not
    full = [PlacedNode("n0", at(0), 0), PlacedNode("n1", at(0), 1)]
    assert placement_evidence(full, replicas, 1) == ([], [])


class FakeCore:
    """What the check asks of CoreV1Api, answered from lists of API objects."""

    def __init__(self, nodes: list, pods: list, fail: bool = False):
        self.nodes, self.pods, self.fail = nodes, pods, fail

    def list_namespaced_pod(self, namespace, label_selector, **_):
        if self.fail:
            raise k8s.ApiException(status=403, reason="Forbidden")
        return SimpleNamespace(items=[p for p in self.pods if p.metadata.namespace == namespace])

    def list_node(self, label_selector, **_):
        return SimpleNamespace(items=self.nodes)

    def list_pod_for_all_namespaces(self, field_selector, **_):
        node = field_selector.split("=", 1)[1]
        return SimpleNamespace(items=[p for p in self.pods if p.spec.node_name == node])


def node(name: str, created: datetime, gpus: int) -> k8s.V1Node:
    return k8s.V1Node(metadata=k8s.V1ObjectMeta(name=name, creation_timestamp=created),
                      status=k8s.V1NodeStatus(allocatable={"nvidia.com/gpu": str(gpus)}))


def pod(name: str, on: str, created: datetime, namespace: str) -> k8s.V1Pod:
    container = k8s.V1Container(name="server", resources=k8s.V1ResourceRequirements(limits={"nvidia.com/gpu": "1"}))
    return k8s.V1Pod(metadata=k8s.V1ObjectMeta(name=name, namespace=namespace, creation_timestamp=created),
                     spec=k8s.V1PodSpec(node_name=on, containers=[container]), status=k8s.V1PodStatus(phase="Running"))


def local(**cluster):
    raw = stack_raw("local")
    raw["cluster"].update(cluster)
    cfg = parse(raw)
    w = cfg.workloads[0]
    return cfg, w, all_pool_facts(cfg)[w.node_pool], cfg.workload_namespace(w)


def test_packed_replicas_on_a_stack_that_states_spread_warn_and_say_what_to_set() -> None:
    cfg, w, pool, ns = local()
    assert cfg.cluster.pod_placement == "spread" and pool.units_per_node == 2
    core = FakeCore([node("n0", at(0), 2), node("n1", at(0), 2)],
                    [pod("echo-gpu-a", "n0", at(5), ns), pod("echo-gpu-b", "n0", at(10), ns)])
    result = check_pod_placement(cfg, w, pool, core)
    assert result.ok and result.warning and result.check == "nodes.pod-placement"
    assert "look packed, the stack states spread: echo-gpu-b joined echo-gpu-a on n0" in result.message
    assert "cluster.podPlacement" in result.cause
    stated = check_pod_placement(local(podPlacement="binpack")[0], w, pool, core)
    assert stated.ok and not stated.warning and "consistent with podPlacement binpack (seen: packed" in stated.message


def test_nothing_to_tell_apart_passes_and_a_pool_of_one_replica_per_node_is_not_checked() -> None:
    cfg, w, pool, ns = local()
    one = FakeCore([node("n0", at(0), 2), node("n1", at(0), 2)], [pod("echo-gpu-a", "n0", at(5), ns)])
    result = check_pod_placement(cfg, w, pool, one)
    assert result.ok and not result.warning and "nothing yet tells packing from spreading" in result.message
    single = FakeCore([node("n0", at(0), 1)], [pod("echo-gpu-a", "n0", at(5), ns)])
    assert check_pod_placement(cfg, w, pool.__class__(**{**pool.__dict__, "gpus_per_node": 1}), single) is None


def test_an_api_refusal_is_a_failed_check_not_a_traceback() -> None:
    cfg, w, pool, _ = local()
    result = check_pod_placement(cfg, w, pool, FakeCore([], [], fail=True))
    assert not result.ok and "cannot read the pool's nodes and pods" in result.message
