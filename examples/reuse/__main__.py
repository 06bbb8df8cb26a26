"""Another team's Pulumi project: one GPU inference service on a cluster they already run.

Their cluster already has Prometheus, dcgm-exporter and prometheus-adapter serving ``gpu_utilization``; they
reuse our InferenceService for a validated Deployment + Service + PDB + HPA with the right GPU resource. Their
own ``components/`` folder lives beside ours: gpu-platform installs as ``gpuplatform.*``.
"""
import pulumi
import pulumi_kubernetes as k8s

from components import TEAM_NAMESPACE, team_autoscaling
from gpuplatform.components import InferenceService

config = pulumi.Config()
provider = k8s.Provider("existing-cluster", context=config.get("context"))

service = InferenceService("embeddings", {
    "workload": {
        "name": "embeddings",
        "image": "registry.example.com/ml/embeddings:2.3.1",
        "nodePool": "l20",
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "http"}],
        "gpu": {"count": 1},
        "probes": {"port": "http", "readinessPath": "/health", "livenessPath": "/health"},
        "autoscaling": team_autoscaling(max_replicas=4),
    },
    "node_pool": {"name": "l20", "gpuModel": "L20", "gpusPerNode": 2, "maxNodes": 2, "sharing": {"mode": "exclusive"}},
    "namespace": TEAM_NAMESPACE,
    "kubernetes_version": "1.30",
}, opts=pulumi.ResourceOptions(provider=provider))

pulumi.export("deployment", service.deployment_name)
