"""Another team's Pulumi project: GPU inference on the cluster it already runs, composed from gpu-platform's
public components (``gpuplatform.components.__all__``) and nothing else of the package.

A plain cluster reached by kubeconfig, one pool of L20 nodes, monitoring that serves the two metrics the services
scale on, a namespace of its own, an embeddings service on GPU utilization and a Triton ranker on queue time,
and the alerts for both. Every component checks its args and its contracts with the others before anything is
registered; ``gpuplatform plan|check|simulate|verify --project .`` read the same program.
"""
from typing import TypedDict

import pulumi
from typing_extensions import NotRequired

from components import TEAM_NAMESPACE, team_autoscaling
from gpuplatform.components import (GpuAlerts, GpuCluster, GpuMonitoring, GpuNodePool, InferenceService,
                                    WorkloadNamespace, read_project_config)


class TeamConfig(TypedDict):
    context: str
    """kubeconfig context of the team's cluster."""
    kubernetesVersion: str
    """What the cluster runs."""
    l20Nodes: NotRequired[int]
    """L20 nodes the team may use (default 2)."""


config = read_project_config(TeamConfig)

cluster = GpuCluster("ml-cluster", {
    "cluster": {"kind": "kubeconfig", "context": config["context"],
                "kubernetesVersion": config["kubernetesVersion"]},
    "environment": "staging",
})
l20 = GpuNodePool("l20", {"cluster": cluster, "pool": {
    "name": "l20", "gpuModel": "L20", "gpusPerNode": 2, "maxNodes": config.get("l20Nodes", 2),
    "taints": [{"key": "team.example.com/gpu", "value": "ml", "effect": "NoSchedule"}]}})
monitoring = GpuMonitoring("monitoring", {"cluster": cluster, "monitoring": {
    "metrics": ["gpu_util", "triton_queue_time_us"],
    "intervals": {"scrape": "10s", "exporterCollect": "10s", "ruleWindow": "30s", "adapterRelist": "30s"},
    "dashboard": False}})
namespace = WorkloadNamespace("serving", {"cluster": cluster, "name": TEAM_NAMESPACE})

embeddings = InferenceService("embeddings", {
    "workload": {
        "name": "embeddings",
        "image": "registry.example.com/ml/embeddings:2.3.1",
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "http"}],
        "gpu": {"count": 1},
        "probes": {"port": "http", "readinessPath": "/health", "livenessPath": "/health"},
        "autoscaling": team_autoscaling(max_replicas=2),
    },
    "node_pool": l20, "monitoring": monitoring, "namespace": namespace,
})
ranker = InferenceService("ranker", {
    "workload": {
        "name": "ranker",
        "image": "nvcr.io/nvidia/tritonserver:24.08-py3",
        "server": "triton",
        "command": ["tritonserver"],
        "args": ["--model-repository=/models", "--allow-gpu-metrics=false"],
        "ports": [{"name": "http", "containerPort": 8000, "protocol": "http"},
                  {"name": "grpc", "containerPort": 8001, "protocol": "grpc"},
                  {"name": "metrics", "containerPort": 8002, "protocol": "metrics"}],
        "gpu": {"count": 1},
        "resources": {"cpu": "2", "memory": "8Gi"},
        # the ranking models are baked into the team's image: the startup probe's budget is sized from them, and
        # the probes are Triton's own /v2/health/ready and /v2/health/live (the server profile's)
        "model": {"sizeGib": 2, "source": "image"},
        # the team's nodes exist already: a DaemonSet pulls the image (and the weights in it) onto each of them
        # before a replica needs it, so a scale-up starts without the 240 s pull
        "prePull": True,
        "autoscaling": {"minReplicas": 1, "maxReplicas": 2,
                        "metrics": [{"metric": "triton_queue_time_us", "target": 8000, "unit": "us"}]},
        "serviceModel": {"serviceTimeMs": 8, "imagePullSeconds": 240},
    },
    "node_pool": l20, "monitoring": monitoring, "namespace": namespace,
})
GpuAlerts("serving-alerts", {"monitoring": monitoring, "services": [embeddings, ranker]})

pulumi.export("nodeLabels", l20.node_labels)
pulumi.export("services", {"embeddings": embeddings.service_name, "ranker": ranker.service_name})
