"""How long the engine waits for what, and the budgets the package derives its await timeouts from.

pulumi-kubernetes waits for a Deployment to become available for 10 minutes unless the object carries
``pulumi.com/timeoutSeconds`` (or the resource has custom timeouts, which win): provider/pkg/await/deployment.go
``DefaultDeploymentTimeoutMins``, provider/pkg/metadata/overrides.go ``TimeoutDuration``. A Helm release waits
300 s per operation unless ``timeout`` is set: provider/pkg/provider/helm_release.go ``defaultTimeoutSeconds``.

The budgets below are margins chosen for GPU nodes, not measured figures: a pool scaling from zero must buy an
ECS GPU instance, boot it, join it and start ACK's GPU device plugin before a replica can be scheduled; bare-metal
instances take longer to boot. A budget too short fails ``pulumi up`` with a timeout while the rollout goes on;
one too long only delays the report of a rollout that cannot succeed.
"""
from __future__ import annotations

PULUMI_DEPLOYMENT_AWAIT_SECONDS = 600
PULUMI_HELM_RELEASE_TIMEOUT_SECONDS = 300

NODE_PROVISIONING_SECONDS = {"vm": 900, "bare-metal": 1800}
"""Budget from a pod asking for a GPU to a Ready GPU node with its device plugin, per ECS instance kind."""
IMAGE_PULL_SECONDS = 600
"""Budget to pull an inference server image (Triton and vLLM images are several GB) onto a fresh node."""

HELM_RELEASE_TIMEOUT_SECONDS = {
    # CRDs, admission-webhook hook Jobs, Prometheus and Grafana pods
    "kube-prometheus-stack": 900,
    "prometheus-adapter": 600,
    "ack-alibaba-cloud-metrics-adapter": 600,
    # a DaemonSet on GPU nodes: its pods start as nodes join, each pulling a large image
    "dcgm-exporter": 900,
    # driver containers and mig-manager repartitioning GPUs (a MIG change restarts GPU clients)
    "gpu-operator": 1800,
    "fake-gpu-operator": 600,
    "keda": 600,
    "cert-manager": 600,
}
"""``timeout`` of each Helm release we install, in seconds (Helm's wait covers every object of the release)."""


def instance_kind(instance_type: str) -> str:
    """``bare-metal`` for ECS bare-metal families (``ecs.ebm*``), else ``vm``."""
    return "bare-metal" if instance_type.startswith("ecs.ebm") else "vm"


def deployment_await_seconds(node_provisioning: int, startup_seconds: int, max_replicas: int) -> int:
    """The longest a GPU Deployment's create or update may take before pulumi-kubernetes should give up.

    A rolling update (maxSurge 1, maxUnavailable 0) replaces one replica at a time, each passing its startup
    probe; the surge replica may need a new node, which may need to be provisioned, and its image pulled."""
    return node_provisioning + IMAGE_PULL_SECONDS + max(1, max_replicas) * startup_seconds
