"""Reusable Pulumi components for GPU inference with GPU-metric autoscaling on Kubernetes / ACK."""
from components.cluster import GpuCluster, GpuClusterArgs
from components.inference_service import InferenceService, InferenceServiceArgs
from components.monitoring import GpuMonitoring, GpuMonitoringArgs
from components.node_pool import GpuNodePool, GpuNodePoolArgs
from components.platform import GpuPlatform, GpuPlatformArgs

__all__ = ["GpuCluster", "GpuClusterArgs", "GpuNodePool", "GpuNodePoolArgs", "GpuMonitoring", "GpuMonitoringArgs",
           "InferenceService", "InferenceServiceArgs", "GpuPlatform", "GpuPlatformArgs"]
