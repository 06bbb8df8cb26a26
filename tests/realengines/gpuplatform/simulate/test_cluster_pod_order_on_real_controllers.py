"""The real kube-scheduler and ReplicaSet controller as the judge of where ``simulate`` puts a replica and which one a
scale-in deletes (gpuplatform/simulate/cluster.py): kwok nodes of two GPUs, a Deployment of one-GPU replicas
scaled step by step, and after each step the replicas per node on both sides.

The upstream scheduler's default profile spreads (a GPU is not a resource it scores), so ``simulate`` runs with
``podPlacement: spread``, the default; the controller deletes a replica that shares its node
before one alone on its node. Node names differ (the real scheduler breaks ties at random), so a step compares the
counts per node, largest first."""
import time

import pytest

from gpuplatform.simulate.cluster import Node, NodePool, Pods

NAMESPACE = "pod-order"
GPUS_PER_NODE = 2


GROUP_LABEL = "pod-order.test/group"
"""Each test's nodes and Deployment carry their own group: the module's tests share one control plane."""


def _node(name: str, group: str) -> tuple[dict, dict]:
    capacity = {"cpu": "32", "memory": "128Gi", "pods": "110", "nvidia.com/gpu": str(GPUS_PER_NODE)}
    body = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "annotations": {"kwok.x-k8s.io/node": "fake"},
                         "labels": {"kubernetes.io/hostname": name, "type": "kwok", GROUP_LABEL: group}}}
    return body, {"status": {"capacity": capacity, "allocatable": capacity}}


def _deployment(name: str) -> dict:
    labels = {"app": name}
    container = {"name": "server", "image": "registry.k8s.io/pause:3.10",
                 "resources": {"requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"},
                               "limits": {"nvidia.com/gpu": "1"}}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"replicas": 0, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"nodeSelector": {GROUP_LABEL: name}, "containers": [container]}}}}


class RealCluster:
    def __init__(self, cp, deployment: str):
        self.cp, self.name = cp, deployment
        self.nodes: list[str] = []

    def add_node(self, name: str) -> None:
        body, status = _node(name, self.name)
        assert self.cp.request("POST", "/api/v1/nodes", body)[0] == 201
        assert self.cp.request("PATCH", f"/api/v1/nodes/{name}/status", status,
                               content_type="application/merge-patch+json")[0] == 200
        self.nodes.append(name)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            conditions = self.cp.get(f"/api/v1/nodes/{name}").get("status", {}).get("conditions", [])
            if any(c["type"] == "Ready" and c["status"] == "True" for c in conditions):
                return
            time.sleep(0.5)
        pytest.fail(f"kwok never made node {name} Ready")

    def scale(self, replicas: int) -> list[int]:
        """Scale, wait until the controller and the scheduler settle (every replica bound and Ready, the deleted
        ones gone), and return the replicas per node, largest first."""
        status, answer = self.cp.request(
            "PATCH", f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{self.name}", {"spec": {"replicas": replicas}},
            content_type="application/merge-patch+json")
        assert status == 200, answer
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            pods = [p for p in self.cp.get(f"/api/v1/namespaces/{NAMESPACE}/pods?labelSelector=app%3D{self.name}")
                    ["items"]]
            live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
            ready = [p for p in live if p["spec"].get("nodeName") and any(
                c["type"] == "Ready" and c["status"] == "True" for c in p.get("status", {}).get("conditions", []))]
            if len(pods) == len(live) == len(ready) == replicas:
                counts = {n: 0 for n in self.nodes}
                for p in ready:
                    counts[p["spec"]["nodeName"]] += 1
                # a pod is Ready after a second of kwok's stages: the next step's ranking then sees what the
                # simulator's does, every replica ready and older than the step
                time.sleep(1)
                return sorted(counts.values(), reverse=True)
            time.sleep(0.5)
        pytest.fail(f"{self.name}: {replicas} replicas never settled")


class SimulatedCluster:
    def __init__(self, nodes: int, placement: str):
        self.t = 0.0
        self.nodes = NodePool(GPUS_PER_NODE, nodes, nodes, 0, False, nodes, placement=placement)
        self.pods = Pods("w", 0, 0)

    def add_node(self) -> None:
        self.t += 5
        self.nodes.nodes.append(Node(f"node-{len(self.nodes.nodes)}", self.t, GPUS_PER_NODE))

    def scale(self, replicas: int) -> list[int]:
        self.t += 5
        self.pods.scale(replicas, self.t)
        self.pods.schedule(self.t, self.nodes)
        return sorted((len(n.pods) for n in self.nodes.nodes), reverse=True)


def test_replicas_spread_and_go_from_shared_nodes_first_as_on_the_real_controllers(control_plane):
    """Four nodes, 1 -> 8 -> 1 replicas one at a time: the scheduler puts each on a node with the fewest, the
    controller takes each from a node with the most. The simulator at ``binpack`` (a scheduler that packs, as ACK's
    with its bin-packing option on) fills a node first: the real upstream scheduler does not."""
    cp = control_plane
    assert cp.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                       "metadata": {"name": NAMESPACE}})[0] in (201, 409)
    assert cp.request("POST", f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments", _deployment("spread"))[0] == 201
    real = RealCluster(cp, "spread")
    for k in range(4):
        real.add_node(f"spread-{k}")
    spread, binpack = SimulatedCluster(4, "spread"), SimulatedCluster(4, "binpack")
    steps = [*range(1, 9), *range(7, 0, -1)]
    rows = [(n, real.scale(n), spread.scale(n), binpack.scale(n)) for n in steps]
    shown = "\n".join(f"{n} replicas: real {r}, simulate spread {s}, binpack {b}" for n, r, s, b in rows)
    print("\n" + shown)
    assert [r for _, r, _, _ in rows] == [s for _, _, s, _ in rows], shown
    assert [r for _, r, _, _ in rows] != [b for _, _, _, b in rows], shown


def test_a_scale_in_keeps_the_node_added_for_a_replica_when_its_first_node_is_shared(control_plane):
    """One node of two GPUs holds two replicas; a third needs a node the autoscaler adds; the scale-in back to two
    deletes one of the two that share the first node, not the newest replica, so the added node stays in use (and
    is not empty for the node autoscaler to remove). Newest-first, the simulator's order before, emptied it."""
    cp = control_plane
    assert cp.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                       "metadata": {"name": NAMESPACE}})[0] in (201, 409)
    assert cp.request("POST", f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments", _deployment("added"))[0] == 201
    real, sim = RealCluster(cp, "added"), SimulatedCluster(1, "binpack")
    real.add_node("added-0")
    before = (real.scale(2), sim.scale(2))
    real.add_node("added-1")
    sim.add_node()
    grown = (real.scale(3), sim.scale(3))
    after = (real.scale(2), sim.scale(2))
    shown = f"real / simulate: 2 replicas {before}, a node added and 3 {grown}, back to 2 {after}"
    print("\n" + shown)
    assert before == ([2], [2]) and grown == ([2, 1], [2, 1]), shown
    assert after == ([1, 1], [1, 1]), shown
