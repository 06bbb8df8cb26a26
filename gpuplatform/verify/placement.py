"""``nodes.pod-placement``: whether the replicas on a pool sit the way the stack's ``cluster.podPlacement`` says the
scheduler places them, the figure ``simulate`` models a scale-in's node-hours with. The scheduler's configuration
is not readable through the Kubernetes API (ACK's is its kube-scheduler add-on's), so the check reads the
evidence it leaves: a replica that joined another on a node while an older node of the pool held none of the
workload's replicas and has room for one is what packing does; a replica placed on a node of its own while an
older node holding one of them has room is what spreading does. Room is read now, so a node whose pods left since
counts as having had room: the check warns, never fails, and only when the evidence points one way."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Optional

from kubernetes import client as k8s
from kubernetes.utils import parse_quantity

from gpuplatform.components.config import PlatformConfig, Workload
from gpuplatform.components.pools import PoolFacts
from gpuplatform.components.workload_manifests import selector
from gpuplatform.verify.kube import REQUEST_TIMEOUT, _api_error, _selector_string
from gpuplatform.verify.nodes import _allocatable
from gpuplatform.verify.results import CheckResult, _fail, _pass, _warn

CHECK = "nodes.pod-placement"
ACTIVE_PHASES = ("Pending", "Running")


@dataclass(frozen=True)
class PlacedNode:
    name: str
    created: datetime
    free_units: int
    """The pool's GPU resource allocatable on the node less what its active pods request."""


@dataclass(frozen=True)
class PlacedReplica:
    name: str
    node: str
    created: datetime


def _requests(pod: k8s.V1Pod, resource: str) -> int:
    total = 0
    for c in pod.spec.containers or []:
        amounts = (c.resources.limits or {}) if c.resources else {}
        amounts = {**amounts, **((c.resources.requests or {}) if c.resources else {})}
        if resource in amounts:
            total += int(parse_quantity(amounts[resource]))
    return total


def placement_evidence(nodes: list[PlacedNode], replicas: list[PlacedReplica], units: int) -> tuple[list, list]:
    """(what packing left, what spreading left): one sentence per replica whose node tells the two apart."""
    by_node: dict[str, list[PlacedReplica]] = {}
    for r in sorted(replicas, key=lambda r: r.created):
        by_node.setdefault(r.node, []).append(r)
    known = {n.name: n for n in nodes}
    packed, spread = [], []
    for node, held in by_node.items():
        if len(held) >= 2:
            joined = held[1]
            empty = [n for n in nodes if n.name != node and n.created < joined.created and not by_node.get(n.name)
                     and n.free_units >= units]
            if empty:
                packed.append(f"{joined.name} joined {held[0].name} on {node} while {empty[0].name} held none of "
                              f"the workload's replicas (it has room for one now)")
        first = held[0]
        fuller = [other for other, there in by_node.items()
                  if other != node and other in known and there[0].created < first.created
                  and known[other].free_units >= units]
        if fuller:
            spread.append(f"{first.name} started {node}'s first replica of the workload while {fuller[0]} held "
                          f"one and has room for another now")
    return packed, spread


def check_pod_placement(cfg: PlatformConfig, w: Workload, pool: PoolFacts,
                        core: k8s.CoreV1Api) -> Optional[CheckResult]:
    """None where placement cannot matter: a pool of one replica's room per node, or no GPU resource."""
    resource = pool.resource_name
    ns = cfg.workload_namespace(w)
    subject = f"deployment/{ns}/{w.name}"
    stated = cfg.cluster.pod_placement
    if resource is None:
        return None
    try:
        pods = [p for p in core.list_namespaced_pod(ns, label_selector=_selector_string(selector(w)),
                                                   _request_timeout=REQUEST_TIMEOUT).items
                if p.spec.node_name and (p.status.phase or "") in ACTIVE_PHASES
                and p.metadata.deletion_timestamp is None]
        units = max((_requests(p, resource) for p in pods), default=0)
        if units == 0 or pool.units_per_node < 2 * units:
            return None
        nodes = core.list_node(label_selector=_selector_string(pool.node_selector),
                               _request_timeout=REQUEST_TIMEOUT).items
        placed = []
        for n in nodes:
            on_node = core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={n.metadata.name}",
                                                       _request_timeout=REQUEST_TIMEOUT).items
            held = sum(_requests(p, resource) for p in on_node if (p.status.phase or "") in ACTIVE_PHASES)
            placed.append(PlacedNode(n.metadata.name, n.metadata.creation_timestamp,
                                     _allocatable(n).get(resource, 0) - held))
    except Exception as exc:  # noqa: BLE001 - every API failure becomes a failed check, never a traceback
        return _fail(CHECK, subject, f"cannot read the pool's nodes and pods ({_api_error(exc)})",
                     "the credentials lack 'list nodes' or 'list pods' across namespaces")
    replicas = [PlacedReplica(p.metadata.name, p.spec.node_name, p.metadata.creation_timestamp) for p in pods
                if p.spec.node_name in {n.name for n in placed}]
    packed, spread = placement_evidence(placed, replicas, units)
    advice = ("set cluster.podPlacement to what the cluster's scheduler does (`simulate` models a scale-in's "
              "node-hours with it; on ACK, the kube-scheduler add-on's \"Preferably Use Bin Packing During Pod "
              "Scheduling\" option packs)")
    if stated == "spread" and packed and not spread:
        return _warn(CHECK, subject, f"the replicas look packed, the stack states spread: {packed[0]}", advice)
    if stated == "binpack" and spread and not packed:
        return _warn(CHECK, subject, f"the replicas look spread, the stack states binpack: {spread[0]}", advice)
    if packed or spread:
        seen = "packed" if packed and not spread else "spread" if spread and not packed else "mixed"
        return _pass(CHECK, subject, f"placement consistent with podPlacement {stated} (seen: {seen}, "
                                     f"{len(replicas)} replica(s) on {len({r.node for r in replicas})} node(s))")
    return _pass(CHECK, subject, f"nothing yet tells packing from spreading ({len(replicas)} replica(s) on "
                                 f"{len(placed)} node(s)); podPlacement {stated} stays as stated")
