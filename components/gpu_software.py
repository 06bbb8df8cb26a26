"""GPU software a cluster needs for its pools' sharing modes, as pure Helm values builders plus one component.

* ACK: the GPU stack is ACK-managed; cGPU and MIG (ACK's ``ack.node.gpu.schedule=mig`` label) need
  ``ack-ai-installer``, installed as a cluster add-on by :class:`~components.cluster.GpuCluster`.
* Other clusters with MIG pools: the NVIDIA GPU Operator (pinned) with ``mig.strategy`` and mig-manager
  following each node's ``nvidia.com/mig.config`` label.
* Simulated GPUs (``simulateGpus``): run-ai/fake-gpu-operator with one topology node pool per GPU pool.
"""
from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

from gpuplatform.catalogs.sharing import SIMULATED_POOL_LABEL
from gpuplatform.catalogs.timeouts import HELM_RELEASE_TIMEOUT_SECONDS
from gpuplatform.catalogs.versions import chart
from gpuplatform.components.pools import PoolFacts

# fake-gpu-operator reports GPUs by NVIDIA product name
SIMULATED_PRODUCTS = {"T4": "Tesla-T4", "A10": "NVIDIA-A10", "A100-40GB": "NVIDIA-A100-SXM4-40GB",
                      "A100-80GB": "NVIDIA-A100-SXM4-80GB", "H100-80GB": "NVIDIA-H100-80GB-HBM3",
                      "A30": "NVIDIA-A30", "L20": "NVIDIA-L20", "V100-16GB": "Tesla-V100-SXM2-16GB",
                      "V100-32GB": "Tesla-V100-SXM2-32GB", "H200": "NVIDIA-H200"}


def fake_gpu_operator_values(pools: list[PoolFacts]) -> dict:
    """Topology derived from the pool specs: product, GPUs per node and memory per GPU, keyed by pool name."""
    node_pools = {p.name: {"gpuProduct": SIMULATED_PRODUCTS.get(p.model.name, p.model.name),
                           "gpuCount": p.gpus_per_node, "gpuMemory": p.model.reported_mib} for p in pools}
    mig = any(p.mode == "mig" for p in pools)
    return {"topology": {"nodePools": node_pools, "nodePoolLabelKey": SIMULATED_POOL_LABEL,
                         **({"migStrategy": "mixed"} if mig else {})}}


def gpu_operator_values(pools: list[PoolFacts], monitor_labels: dict, scrape_interval: str,
                        collect_interval_ms: int) -> dict:
    """GPU Operator for MIG pools on non-ACK clusters. Its dcgm-exporter ServiceMonitor honours the exporter's
    pod labels and carries the kube-prometheus-stack ``release`` label, so per-pod GPU series reach the adapter."""
    strategies = {p.mig_strategy for p in pools if p.mode == "mig"}
    return {
        "mig": {"strategy": strategies.pop() if len(strategies) == 1 else "mixed"},
        "migManager": {"enabled": True, "config": {"default": "all-disabled"}},
        "dcgmExporter": {
            "enabled": True,
            "env": [{"name": "DCGM_EXPORTER_INTERVAL", "value": str(collect_interval_ms)}],
            "serviceMonitor": {"enabled": True, "honorLabels": True, "interval": scrape_interval,
                               "additionalLabels": dict(monitor_labels)},
        },
    }


def release(name: str, release_key: str, values: dict, overrides: dict, opts: pulumi.ResourceOptions,
            namespace: Optional[str] = None) -> k8s.helm.v3.Release:
    """A pinned Helm release from the versions catalog, with the user's ``helmValues`` merged over ours.
    Namespaces are created by the caller (with their Pod Security labels), never by Helm. The timeout is explicit
    (pulumi-kubernetes' default is 300 s per operation, short for GPU DaemonSets and CRD-heavy charts)."""
    c = chart(release_key)
    if c.repository.startswith("oci://"):
        source = {"chart": f"{c.repository}/{c.name}"}
    else:
        source = {"chart": c.name, "repository_opts": {"repo": c.repository}}
    return k8s.helm.v3.Release(name, name=c.release, version=c.version, namespace=namespace or c.namespace,
                               values=deep_merge(values, overrides), timeout=HELM_RELEASE_TIMEOUT_SECONDS[release_key],
                               opts=opts, **source)


def deep_merge(base: dict, override: dict) -> dict:
    out = dict(base)
    for key, value in (override or {}).items():
        out[key] = deep_merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out
