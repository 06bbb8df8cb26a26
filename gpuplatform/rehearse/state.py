"""What a rehearsal reads back from the cluster: where the pods are, which Deployments are available, the
autoscalers made, and what a destroy left behind."""
from __future__ import annotations

from dataclasses import dataclass, field

from gpuplatform.rehearse.apply import Discovery
from gpuplatform.rehearse.controlplane import LocalControlPlane
from gpuplatform.rehearse.nodes import REHEARSAL_LABEL

SKIPPED_KINDS = {"Event", "Lease", "EndpointSlice", "Endpoints", "ControllerRevision", "ComponentStatus",
                 "Binding", "TokenReview", "SubjectAccessReview", "SelfSubjectAccessReview",
                 "LocalSubjectAccessReview", "SelfSubjectReview", "SelfSubjectRulesReview", "TokenRequest",
                 "Eviction", "Scale"}
"""Kinds the cluster's own machinery writes (or that are requests, not objects): not what a stack leaves."""


@dataclass
class Placement:
    pods: int = 0
    scheduled: int = 0
    unschedulable: list = field(default_factory=list)
    """``namespace/pod: the scheduler's message`` for each pod it could not place."""
    deployments: list = field(default_factory=list)
    """``(namespace/name, available, desired)``."""
    autoscalers: list = field(default_factory=list)
    """``Kind namespace/name``."""


def read_placement(cp: LocalControlPlane, *, include_stand_ins: bool = False) -> Placement:
    found = Placement()
    for pod in cp.get("/api/v1/pods")["items"]:
        labels = pod["metadata"].get("labels") or {}
        if labels.get(REHEARSAL_LABEL[0]) == REHEARSAL_LABEL[1] and not include_stand_ins:
            continue
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        found.pods += 1
        if pod["spec"].get("nodeName"):
            found.scheduled += 1
            continue
        condition = next((c for c in (pod.get("status") or {}).get("conditions", []) if c["type"] == "PodScheduled"),
                         {})
        ref = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
        found.unschedulable.append(f"{ref}: {condition.get('message') or 'not yet scheduled'}")
    for d in cp.get("/apis/apps/v1/deployments")["items"]:
        labels = d["metadata"].get("labels") or {}
        if labels.get(REHEARSAL_LABEL[0]) == REHEARSAL_LABEL[1] and not include_stand_ins:
            continue
        status = d.get("status") or {}
        found.deployments.append((f"{d['metadata']['namespace']}/{d['metadata']['name']}",
                                  status.get("availableReplicas", 0), d["spec"].get("replicas", 1)))
    for item in cp.get("/apis/autoscaling/v2/horizontalpodautoscalers")["items"]:
        found.autoscalers.append(f"HorizontalPodAutoscaler {item['metadata']['namespace']}/{item['metadata']['name']}")
    status, body = cp.request("GET", "/apis/keda.sh/v1alpha1/scaledobjects")
    if status == 200:
        for item in body["items"]:
            found.autoscalers.append(f"ScaledObject {item['metadata']['namespace']}/{item['metadata']['name']}")
    return found


def inventory(cp: LocalControlPlane) -> set[tuple[str, str, str]]:
    """Every object the cluster holds, as ``(kind, namespace, name)``, but for what its own machinery writes."""
    discovery = Discovery(cp)
    discovery.refresh()
    found = set()
    for (gv, kind), resource in sorted(discovery.resources.items()):
        if kind in SKIPPED_KINDS:
            continue
        status, body = cp.request("GET", resource.path(None))
        if status != 200 or not isinstance(body, dict):
            continue
        for item in body.get("items", []):
            meta = item.get("metadata") or {}
            found.add((kind, meta.get("namespace", ""), meta.get("name", "")))
    return found


def _shown(kind: str, ns: str, name: str) -> str:
    return f"{kind} {ns + '/' if ns else ''}{name}"


def left_behind(before: set, after: set) -> tuple[list[str], list[str]]:
    """(what a destroy left that was not there before the first ``up``, what of it Helm keeps by design).

    Helm installs the CRDs of a chart's ``crds/`` directory and never deletes them on uninstall (helm.sh docs,
    "Custom Resource Definitions": "CRDs are never deleted", since deleting one deletes every object of its kind
    in the cluster); the API server's own APIService for each served group goes with its CRD."""
    left = after - before
    crd_groups = {name.split(".", 1)[1] for kind, _ns, name in left if kind == "CustomResourceDefinition"}
    kept = {(kind, ns, name) for kind, ns, name in left
            if kind == "CustomResourceDefinition"
            or (kind == "APIService" and name.split(".", 1)[-1] in crd_groups)}
    return (sorted(_shown(*x) for x in left - kept), sorted(_shown(*x) for x in kept))
