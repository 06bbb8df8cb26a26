"""The real scheduler's placement of a stack's pods on kwok nodes shaped like its node groups, to set beside the
package's offline placement (components/placement.py).

Every node group gets its most nodes; every controller the cluster will run (ACK's system pods, its add-ons', each
Helm release's, the stack's Deployments at ``maxReplicas`` and their warm-capacity placeholders) is created with
its pod spec's scheduling fields and pause containers. Once the scheduler has settled, a controller is placed when
all of its pods are bound to a node; a pod it leaves Pending carries the scheduler's own reason.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from gpuplatform.components.warm_capacity import PRIORITY_CLASS_NAME, priority_class
from gpuplatform.rehearse.apply import Discovery, apply
from gpuplatform.rehearse.controlplane import ControlPlaneError, LocalControlPlane
from gpuplatform.rehearse.nodes import REHEARSAL_LABEL, controller_objects, planned_nodes


@dataclass
class Placed:
    owner: str
    scheduled: int = 0
    pending: list = field(default_factory=list)
    """The scheduler's message for each pod it could not place."""
    wanted: int = 0

    @property
    def placed(self) -> bool:
        return not self.pending and self.scheduled >= max(self.wanted, 1)


def create_nodes(cp: LocalControlPlane, discovery: Discovery, groups) -> list[str]:
    """kwok nodes for ``groups``; the notes on what was assumed. A node's capacity goes in through its status
    subresource, as a kubelet reports it."""
    nodes, notes = planned_nodes(groups)
    for node in nodes:
        body = {k: v for k, v in node.body.items() if k != "status"}
        verdict = apply(cp, discovery, body)
        if not verdict.accepted:
            raise ControlPlaneError(f"node {node.name}: {verdict.message}")
        status, answer = cp.request("PATCH", f"/api/v1/nodes/{node.name}/status", {"status": node.body["status"]},
                                    content_type="application/merge-patch+json")
        if status != 200:
            raise ControlPlaneError(f"node {node.name} status: {answer}")
    return notes


BUILT_IN_PRIORITY_CLASSES = ("system-cluster-critical", "system-node-critical")
"""The classes every API server creates at start (kubernetes pkg/apis/scheduling ``SystemPriorityClasses``)."""


def create_controllers(cp: LocalControlPlane, discovery: Discovery, pods) -> dict[str, int]:
    """A stand-in controller for each :class:`~gpuplatform.catalogs.pods.ClusterPod` (hooks as Deployments of
    one); owner -> replicas wanted."""
    wanted = {}
    # the PriorityClasses the pods name, before them: Priority admission refuses a pod whose class does not exist,
    # and its controller then never creates it (the warm-capacity placeholders' class is the stack's own object)
    for name in sorted({pod.spec.get("priorityClassName") for pod in pods} - {None, *BUILT_IN_PRIORITY_CLASSES}):
        body = priority_class() if name == PRIORITY_CLASS_NAME else {
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": 0}
        verdict = apply(cp, discovery, body)
        if not verdict.accepted:
            raise ControlPlaneError(f"PriorityClass {name}: {verdict.message}")
    for pod in pods:
        owner = pod.owner if not pod.hook else "Deployment " + pod.owner.split(" ", 1)[-1]
        body = controller_objects(owner, pod.spec, pod.replicas, pod.one_per_node)
        if body is None:
            continue
        ns = body["metadata"]["namespace"]
        apply(cp, discovery, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        verdict = apply(cp, discovery, body)
        if not verdict.accepted:
            raise ControlPlaneError(f"{owner}: {verdict.message}")
        wanted[pod.owner] = 0 if body["kind"] == "DaemonSet" else pod.replicas
    return wanted


def _pods(cp: LocalControlPlane) -> list[dict]:
    selector = f"{REHEARSAL_LABEL[0]}={REHEARSAL_LABEL[1]}"
    return cp.get(f"/api/v1/pods?labelSelector={selector}")["items"]


def _owner_of(pod: dict, kinds: dict) -> str:
    name = pod["metadata"]["labels"]["app.kubernetes.io/name"]
    return kinds.get((pod["metadata"]["namespace"], name), "")


def settled_placement(cp: LocalControlPlane, wanted: dict[str, int], timeout: float = 90) -> dict[str, Placed]:
    """Wait until every wanted pod exists and is bound or marked unschedulable (bounded), then read where each
    controller's pods are."""
    kinds = {}
    for owner in wanted:
        _kind, _, ref = owner.partition(" ")
        ns, _, name = ref.partition("/")
        kinds[(ns, name)] = owner
    deadline = time.monotonic() + timeout
    while True:
        cp.check_running()
        pods = _pods(cp)
        placed = {owner: Placed(owner, wanted=n) for owner, n in wanted.items()}
        undecided = 0
        for pod in pods:
            owner = _owner_of(pod, kinds)
            if owner not in placed:
                continue
            if pod["spec"].get("nodeName"):
                placed[owner].scheduled += 1
                continue
            condition = next((c for c in (pod.get("status") or {}).get("conditions", [])
                              if c["type"] == "PodScheduled"), None)
            if condition and condition.get("reason") == "Unschedulable":
                placed[owner].pending.append(condition.get("message", ""))
            else:
                undecided += 1
        short = sum(max(0, p.wanted - p.scheduled - len(p.pending)) for p in placed.values())
        if not undecided and not short:
            return placed
        if time.monotonic() > deadline:
            raise ControlPlaneError(f"placement did not settle in {timeout:.0f} s: {undecided} pods neither bound "
                                    f"nor unschedulable, {short} not yet created")
        time.sleep(1)
