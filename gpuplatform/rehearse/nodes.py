"""kwok nodes shaped like a stack's node groups, and the pods of the cluster that the stack does not author.

Each node group of the plan (``components/placement.py`` ``node_groups``: the system pool, every GPU pool, or a
cluster's existing nodes) becomes as many kwok nodes as it can hold at its most, with the group's labels and taints
and its allocatable (instance type less ACK's reserve, the GPU resources of the pool's sharing mode, max pods):
the real scheduler then places the pods on what the pools can offer. ACK's own system pods and its add-ons' pods
are created as the controllers ACK runs, so they take their share of the system nodes as on a real cluster.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from gpuplatform.components.placement import NodeGroup

PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
"""What the stand-in containers of ACK's pods name (kwok pulls nothing)."""
DEFAULT_MAX_PODS = 110
"""The kubelet's default ``maxPods``, for a group whose max pods the plan does not know."""
ASSUMED_NODE = {"cpu": 1000.0, "memory": 2 ** 40}
"""What a node offers where the plan does not know its size (a cluster's existing nodes, a pool of an existing
cluster described by its GPUs only): not limited, as the plan does not limit it (kwok's own default for a node
without capacity), so neither a fit nor a shortage is claimed that the stack does not state; the report says so."""
REHEARSAL_LABEL = ("gpuplatform.io/rehearsal", "true")
OPERATOR_WORKLOADS = {"Prometheus": "StatefulSet", "Alertmanager": "StatefulSet", "ThanosRuler": "StatefulSet"}
"""Custom resources whose operator runs their pods as a StatefulSet (prometheus-operator): stood in for by one."""


@dataclass(frozen=True)
class PlannedNode:
    name: str
    group: str
    body: dict


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:40] or "node"


def _quantity(resource: str, amount: float) -> str:
    if resource == "cpu":
        return f"{round(amount * 1000)}m"
    if resource in ("memory", "ephemeral-storage"):
        return f"{int(amount // 2 ** 20)}Mi"
    return str(int(amount))


def node_resources(group: NodeGroup) -> tuple[dict, list[str]]:
    """The group's allocatable as Kubernetes quantities, and what of it is assumed rather than planned."""
    assumed = []
    amounts = {k: v for k, v in (group.allocatable or {}).items() if v is not None}
    for resource, default in ASSUMED_NODE.items():
        if resource not in amounts:
            amounts[resource] = default
            assumed.append(f"{resource} {_quantity(resource, default)}")
    if "pods" not in amounts:
        amounts["pods"] = DEFAULT_MAX_PODS
        assumed.append(f"pods {DEFAULT_MAX_PODS}")
    return {name: _quantity(name, amount) for name, amount in amounts.items()}, assumed


def planned_nodes(groups: list[NodeGroup], most_per_group: int = 10) -> tuple[list[PlannedNode], list[str]]:
    """kwok Node objects for every group at its most (capped at ``most_per_group``), and the notes on what was
    assumed or capped."""
    nodes, notes = [], []
    for group in groups:
        resources, assumed = node_resources(group)
        if assumed:
            notes.append(f"{group.name}: size not known to the plan, not limited ({', '.join(assumed)} per node)")
        count = max(1, min(group.nodes, most_per_group))
        if group.nodes > most_per_group:
            notes.append(f"{group.name}: {group.nodes} nodes at its most, rehearsed with {most_per_group}")
        for i in range(count):
            name = f"{_slug(group.name)}-{i}"
            labels = {**group.labels, "kubernetes.io/hostname": name, "type": "kwok",
                      REHEARSAL_LABEL[0]: REHEARSAL_LABEL[1]}
            taints = [{k: v for k, v in t.items() if k in ("key", "value", "effect")} for t in group.taints]
            body = {
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": labels,
                             "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}},
                "spec": {"taints": taints} if taints else {},
                "status": {"capacity": dict(resources), "allocatable": dict(resources)},
            }
            nodes.append(PlannedNode(name, group.name, body))
    return nodes, notes


def controller_objects(owner: str, spec: dict, replicas: int, one_per_node: bool) -> Optional[dict]:
    """The controller ``owner`` (``<Kind> <namespace>/<name>``) running pause containers with ``spec``'s
    scheduling fields, as the real one schedules its pods; None for kinds the rehearsal does not stand in for."""
    kind, _, ref = owner.partition(" ")
    namespace, _, name = ref.partition("/")
    kind = OPERATOR_WORKLOADS.get(kind, kind)
    if kind not in ("Deployment", "DaemonSet", "StatefulSet") or not name:
        return None
    labels = {"app.kubernetes.io/name": name, REHEARSAL_LABEL[0]: REHEARSAL_LABEL[1]}
    containers = spec.get("containers") or [{"resources": {}}]
    pod_spec = {
        **{k: v for k, v in spec.items() if k in ("nodeSelector", "tolerations", "affinity", "priorityClassName")},
        "containers": [{"name": c.get("name") or f"c{i}", "image": PAUSE_IMAGE,
                        "resources": c.get("resources") or {}} for i, c in enumerate(containers)],
    }
    if one_per_node:
        term = {"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"}
        affinity = dict(pod_spec.get("affinity") or {})
        affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        pod_spec["affinity"] = affinity
    body = {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": namespace or "default",
                                                                 "labels": labels},
            "spec": {"selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": pod_spec}}}
    if kind != "DaemonSet":
        body["spec"]["replicas"] = replicas
    if kind == "StatefulSet":
        body["spec"]["serviceName"] = name
    return body
