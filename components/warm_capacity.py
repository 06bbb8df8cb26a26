"""Warm capacity: placeholder pods that keep room for a workload's next replicas provisioned on its pool.

The cluster autoscaler adds a node only for a pod that is Pending, so a replica the HPA adds on a full pool waits for
a whole node to be provisioned before it can even pull its image. Placeholders pending-then-running ahead of time
hold that node instead: each is sized exactly like one replica (same GPU, CPU and memory requests, node selector
and tolerations), runs ``pause`` at a negative priority and is preempted by a real replica, which then binds at
once; the evicted placeholder goes Pending and the cluster autoscaler provisions a node for it, ready for the next
replica. This is the overprovisioning pattern of the cluster-autoscaler FAQ (kubernetes/autoscaler
cluster-autoscaler/FAQ.md, "How can I configure overprovisioning with Cluster Autoscaler?") and the Kubernetes task
"Overprovision Node Capacity For A Cluster" (kubernetes.io/docs/tasks/administer-cluster/node-overprovisioning/).

Objects: one ``scheduling.k8s.io/v1`` PriorityClass per cluster (:func:`priority_class`) and one ``apps/v1``
Deployment per workload with ``autoscaling.warmReplicas`` (:func:`placeholder_deployment`).
"""
from __future__ import annotations

from typing import Optional

from gpuplatform.catalogs.kubernetes import WARM_CAPACITY_PRIORITY
from gpuplatform.catalogs.network import PLATFORM_PART_OF
from gpuplatform.catalogs.images import PAUSE_IMAGE, PAUSE_IMAGE_USER
from gpuplatform.components.config import Workload

PRIORITY_CLASS_NAME = "gpu-platform-warm-capacity"
COMPONENT_LABEL = "warm-capacity"
"""``app.kubernetes.io/component`` of the placeholders."""


def priority_class() -> dict:
    """The placeholders' PriorityClass: at the cluster autoscaler's expendable cutoff (catalogs/kubernetes.py
    ``WARM_CAPACITY_PRIORITY``: below it an evicted placeholder would never get a node again), never the default,
    and ``preemptionPolicy: Never`` so a placeholder waits for a node instead of evicting anything of a lower
    priority still (kubernetes.io "Pod Priority and Preemption", Non-preempting PriorityClass, on by default since
    1.19, GA 1.24). Cluster-scoped: one per cluster, shared by every workload's placeholders."""
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": PRIORITY_CLASS_NAME,
                         "labels": {"app.kubernetes.io/part-of": PLATFORM_PART_OF,
                                    "app.kubernetes.io/component": COMPONENT_LABEL,
                                    "app.kubernetes.io/managed-by": "pulumi"}},
            "value": WARM_CAPACITY_PRIORITY, "globalDefault": False, "preemptionPolicy": "Never",
            "description": "Warm-capacity placeholders of gpu-platform: preempted by any workload pod, they keep "
                           "nodes provisioned ahead of demand (cluster-autoscaler overprovisioning)."}


def placeholder_name(w: Workload) -> str:
    return f"{w.name}-warm"


def placeholder_labels(w: Workload) -> dict[str, str]:
    """Not the workload's own selector labels: its Service, PodMonitor, NetworkPolicy and HPA never see them."""
    return {"app.kubernetes.io/name": placeholder_name(w), "app.kubernetes.io/component": COMPONENT_LABEL,
            "app.kubernetes.io/part-of": PLATFORM_PART_OF, "app.kubernetes.io/managed-by": "pulumi"}


def placeholder_deployment(w: Workload, ctx) -> Optional[dict]:
    """``autoscaling.warmReplicas`` pause pods of the workload's size on its pool, or None without warm capacity.
    Restricted Pod Security (the pause image's own non-root user, nothing writable, no capabilities), no service
    account token, ``terminationGracePeriodSeconds: 0`` so a preempting replica waits for nothing (the FAQ's own
    placeholder sets it too). GPU requests equal limits, as the device plugin requires; the containers see no GPU
    they do not request."""
    n = w.warm_replicas
    if not n:
        return None
    resources = {"cpu": w.resources.cpu, "memory": w.resources.memory, **ctx.pool.gpu_resources(w.gpu)}
    select = {"app.kubernetes.io/name": placeholder_name(w)}
    user = {"runAsNonRoot": True, "runAsUser": PAUSE_IMAGE_USER}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": placeholder_name(w), "namespace": ctx.namespace, "labels": placeholder_labels(w)},
        "spec": {
            "replicas": n,
            "selector": {"matchLabels": select},
            "template": {
                "metadata": {"labels": placeholder_labels(w)},
                "spec": {
                    "priorityClassName": PRIORITY_CLASS_NAME,
                    "terminationGracePeriodSeconds": 0,
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "securityContext": {**user, "runAsGroup": PAUSE_IMAGE_USER,
                                        "seccompProfile": {"type": "RuntimeDefault"}},
                    "nodeSelector": dict(ctx.pool.node_selector),
                    "tolerations": ctx.pool.tolerations,
                    # one node's failure takes one placeholder, not all the warm room
                    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                                   "whenUnsatisfiable": "ScheduleAnyway",
                                                   "labelSelector": {"matchLabels": select}}],
                    "containers": [{
                        "name": "pause",
                        "image": PAUSE_IMAGE,
                        "imagePullPolicy": "IfNotPresent",
                        "resources": {"requests": dict(resources), "limits": dict(resources)},
                        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                            **user, "capabilities": {"drop": ["ALL"]},
                                            "seccompProfile": {"type": "RuntimeDefault"}},
                    }],
                },
            },
        },
    }


def ensure_priority_class(cluster):
    """The cluster's placeholder PriorityClass, registered by the first workload with warm capacity and shared by the
    rest; a child of the cluster, so its URN does not depend on which workload asked first."""
    import pulumi

    from gpuplatform.components.k8s_objects import register

    existing = getattr(cluster, "_warm_priority_class", None)
    if existing is None:
        existing = register(f"{cluster._name}-warm-capacity", priority_class(),
                            pulumi.ResourceOptions(parent=cluster, provider=cluster.provider))
        cluster._warm_priority_class = existing
    return existing
