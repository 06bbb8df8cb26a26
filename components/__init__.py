"""Reusable Pulumi components for GPU inference with GPU-metric autoscaling on Kubernetes / ACK."""
from gpuplatform.components.cluster import GpuCluster, GpuClusterArgs
from gpuplatform.components.inference_service import InferenceService, InferenceServiceArgs
from gpuplatform.components.monitoring import GpuMonitoring, GpuMonitoringArgs
from gpuplatform.components.node_pool import GpuNodePool, GpuNodePoolArgs
from gpuplatform.components.platform import GpuPlatform, GpuPlatformArgs

__all__ = ["GpuCluster", "GpuClusterArgs", "GpuNodePool", "GpuNodePoolArgs", "GpuMonitoring", "GpuMonitoringArgs",
           "InferenceService", "InferenceServiceArgs", "GpuPlatform", "GpuPlatformArgs"]
