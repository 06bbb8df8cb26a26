"""Reusable Pulumi components for GPU inference with GPU-metric autoscaling on Kubernetes / ACK.

The classes load on first use (PEP 562), so that importing a light submodule (``errors``, ``adapter_rules``) does
not pull in pulumi_kubernetes and pydantic: ``gpuplatform check --manifests`` stays well under a second.
"""
from importlib import import_module

_EXPORTS = {
    "GpuCluster": "cluster", "GpuClusterArgs": "cluster",
    "GpuNodePool": "node_pool", "GpuNodePoolArgs": "node_pool",
    "GpuMonitoring": "monitoring", "GpuMonitoringArgs": "monitoring",
    "InferenceService": "inference_service", "InferenceServiceArgs": "inference_service",
    "GpuSoftware": "gpu_software", "GpuSoftwareArgs": "gpu_software",
    "WorkloadNamespace": "namespace", "WorkloadNamespaceArgs": "namespace",
    "GpuAlerts": "alerting", "GpuAlertsArgs": "alerting",
    "GpuPlatform": "platform", "GpuPlatformArgs": "platform",
    "read_project_config": "args",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(import_module(f"{__name__}.{_EXPORTS[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
