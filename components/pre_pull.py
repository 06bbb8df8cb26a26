"""The image pre-puller of a workload (``workloads[].prePull``): a DaemonSet on the workload's pool whose pods make
each node pull the workload's image, so a replica scheduled there later starts without a pull.

A DaemonSet pod is created on a node once the node is Ready, the moment a replica would be bound to it, so the
pre-puller gains nothing on a node made for the replica; it spares the pull on nodes that exist before the replica
is created: the pool's ``minNodes``, warm (placeholder) nodes, nodes a scale-in emptied (docs/model-startup.md).

The pull happens when an init container with the workload's image starts. That container must then exit at once
and with success on any image: a distroless or scratch image has no shell, and an image's own entrypoint with
``--help`` may start a whole server (vLLM imports torch) or exit non-zero. So a first init container copies a
statically linked busybox (catalogs/images.py) into an emptyDir, and the image's init container runs
``/prepull/busybox true`` from it: nothing of the image is executed. The pod then holds the node with ``pause``
and requests almost nothing; no GPU, so it does not take a replica's place (the image's init container gets
``NVIDIA_VISIBLE_DEVICES=void``, so an image that sets ``all`` sees no GPU either). Every container runs under
restricted Pod Security like the workload's own.
"""
from __future__ import annotations

from typing import Optional

from gpuplatform.catalogs.images import BUSYBOX_IMAGE, PAUSE_IMAGE
from gpuplatform.catalogs.network import PLATFORM_PART_OF
from gpuplatform.components.config import Workload

PRE_PULL_MOUNT = "/prepull"
PRE_PULL_RESOURCES = {"cpu": "10m", "memory": "16Mi"}
"""Requests = limits of each pre-puller container: busybox's ``cp``/``true`` and ``pause`` need less; the pod must
fit beside the replicas on a GPU node without taking their CPU or memory."""


def pre_pull_name(w: Workload) -> str:
    return f"{w.name}-prepull"


def _container(name: str, image: str, command: list[str], uid: int) -> dict:
    return {"name": name, "image": image, "imagePullPolicy": "IfNotPresent", "command": command,
            "resources": {"requests": dict(PRE_PULL_RESOURCES), "limits": dict(PRE_PULL_RESOURCES)},
            "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                "runAsNonRoot": True, "runAsUser": uid, "capabilities": {"drop": ["ALL"]},
                                "seccompProfile": {"type": "RuntimeDefault"}},
            "volumeMounts": [{"name": "prepull", "mountPath": PRE_PULL_MOUNT}]}


def pre_pull_daemonset(w: Workload, ctx) -> Optional[dict]:
    """apps/v1 DaemonSet ``<name>-prepull`` on the workload's pool (its nodeSelector and tolerations); None unless
    ``prePull`` is set. ``ctx``: the workload's ``WorkloadContext``."""
    if not w.pre_pull:
        return None
    name = pre_pull_name(w)
    uid = w.run_as_user
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": PLATFORM_PART_OF,
              "app.kubernetes.io/managed-by": "pulumi", "app.kubernetes.io/component": "image-pre-puller"}
    init = [_container("copy-busybox", BUSYBOX_IMAGE, ["/bin/busybox", "cp", "/bin/busybox",
                                                       f"{PRE_PULL_MOUNT}/busybox"], uid),
            {**_container("pull", w.image, [f"{PRE_PULL_MOUNT}/busybox", "true"], uid),
             # the CUDA base images set NVIDIA_VISIBLE_DEVICES=all: void keeps the NVIDIA runtime from giving
             # this container the node's GPUs (nvidia-container-toolkit, NVIDIA_VISIBLE_DEVICES)
             "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]}]
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": ctx.namespace, "labels": labels},
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "100%"}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "automountServiceAccountToken": False,
                    "securityContext": {"runAsNonRoot": True, "runAsUser": uid, "runAsGroup": uid,
                                        "seccompProfile": {"type": "RuntimeDefault"}},
                    "nodeSelector": dict(ctx.pool.node_selector),
                    "tolerations": ctx.pool.tolerations,
                    "initContainers": init,
                    "containers": [{k: v for k, v in _container("pause", PAUSE_IMAGE, ["/pause"], uid).items()
                                    if k != "volumeMounts"}],
                    "volumes": [{"name": "prepull", "emptyDir": {"sizeLimit": "16Mi"}}],
                },
            },
        },
    }
