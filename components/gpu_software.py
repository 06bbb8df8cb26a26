"""GPU software a cluster needs for its pools' sharing modes, as pure Helm values builders plus one component.

* ACK: the GPU stack is ACK-managed; cGPU and MIG (ACK's ``ack.node.gpu.schedule=mig`` label) need
  ``ack-ai-installer``, installed as a cluster add-on by :class:`~components.cluster.GpuCluster`.
* Other clusters with MIG pools: the NVIDIA GPU Operator (pinned) with ``mig.strategy`` and mig-manager
  following each node's ``nvidia.com/mig.config`` label; a pool with a per-GPU layout adds our own mig-parted
  config (a ConfigMap the chart creates) holding every pool's config.
* Simulated GPUs (``simulateGpus``): run-ai/fake-gpu-operator with one topology node pool per GPU pool.
"""
from typing import Optional

import yaml

import pulumi
import pulumi_kubernetes as k8s

from gpuplatform.catalogs.mig import max_instances, mig_parted_entry
from gpuplatform.catalogs.sharing import SIMULATED_POOL_LABEL
from gpuplatform.catalogs.timeouts import HELM_RELEASE_TIMEOUT_SECONDS
from gpuplatform.catalogs.versions import KubeMinor, chart
from gpuplatform.components.pools import PoolFacts
from gpuplatform.components.releases import chart_version

# fake-gpu-operator reports GPUs by NVIDIA product name
SIMULATED_PRODUCTS = {"T4": "Tesla-T4", "A10": "NVIDIA-A10", "A100-40GB": "NVIDIA-A100-SXM4-40GB",
                      "A100-80GB": "NVIDIA-A100-SXM4-80GB", "H100-80GB": "NVIDIA-H100-80GB-HBM3",
                      "A30": "NVIDIA-A30", "L20": "NVIDIA-L20", "V100-16GB": "Tesla-V100-SXM2-16GB",
                      "V100-32GB": "Tesla-V100-SXM2-32GB", "H200": "NVIDIA-H200"}


def fake_gpu_operator_values(pools: list[PoolFacts]) -> dict:
    """Topology derived from the pool specs: product, GPUs per node and memory per GPU, keyed by pool name."""
    # Helm merges our map into the chart's, whose topology has a ``default`` pool; a null deletes a chart default
    # (helm.sh/docs/chart_template_guide/values_files, "Deleting a default key"), so only our pools remain
    node_pools: dict = {"default": None}
    node_pools.update({p.name: {"gpuProduct": SIMULATED_PRODUCTS.get(p.model.name, p.model.name),
                                "gpuCount": p.gpus_per_node, "gpuMemory": p.model.reported_mib} for p in pools})
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
        "migManager": {"enabled": True, "config": mig_manager_config(pools)},
        "dcgmExporter": {
            "enabled": True,
            "env": [{"name": "DCGM_EXPORTER_INTERVAL", "value": str(collect_interval_ms)}],
            "serviceMonitor": {"enabled": True, "honorLabels": True, "interval": scrape_interval,
                               "additionalLabels": dict(monitor_labels)},
        },
    }


MIG_PARTED_CONFIG_MAP = "gpuplatform-mig-parted-config"
MIG_DEFAULT_CONFIG = "all-disabled"


def mig_parted_configs(pools: list[PoolFacts]) -> dict[str, list[dict]]:
    """Every mig-parted config the cluster's MIG pools are labelled with: ``all-disabled`` (the default of
    unlabelled nodes), each uniform pool's ``all-<profile>`` and each per-GPU layout under its own name."""
    configs: dict[str, list[dict]] = {MIG_DEFAULT_CONFIG: [mig_parted_entry("all", None)]}
    for p in sorted((p for p in pools if p.mode == "mig"), key=lambda p: p.name):
        if p.mig_layout:
            configs[p.mig_config_name] = [mig_parted_entry(list(devices), dict(profiles))
                                          for devices, profiles in p.mig_layout]
        else:
            configs[p.mig_config] = [mig_parted_entry("all", {p.mig_profile: max_instances(p.model.name,
                                                                                            p.mig_profile)})]
    return configs


def mig_manager_config(pools: list[PoolFacts]) -> dict:
    """mig-manager's ``config`` values. Uniform pools use the operator's built-in ``all-<profile>`` configs; a
    per-GPU layout needs a config of our own, and a named config replaces the built-in ones (gpu-operator
    ``values.yaml`` ``migManager.config``; ``templates/mig_config.yaml`` creates the ConfigMap, whose key must be
    ``config.yaml``), so it carries every pool's config and the default."""
    if not any(p.mig_layout for p in pools):
        return {"default": MIG_DEFAULT_CONFIG}
    spec = {"version": "v1", "mig-configs": mig_parted_configs(pools)}
    return {"default": MIG_DEFAULT_CONFIG, "create": True, "name": MIG_PARTED_CONFIG_MAP,
            "data": {"config.yaml": yaml.safe_dump(spec, sort_keys=False)}}


def release(name: str, release_key: str, values: dict, overrides: dict, opts: pulumi.ResourceOptions,
            namespace: Optional[str] = None, *, kubernetes: KubeMinor) -> k8s.helm.v3.Release:
    """A pinned Helm release from the versions catalog, at the newest pinned version that supports the cluster's
    Kubernetes minor, with the user's ``helmValues`` merged over ours. Namespaces are created by the caller (with
    their Pod Security labels), never by Helm. The timeout is explicit (pulumi-kubernetes' default is 300 s per
    operation, short for GPU DaemonSets and CRD-heavy charts)."""
    c = chart(release_key)
    if c.repository.startswith("oci://"):
        source = {"chart": f"{c.repository}/{c.name}"}
    else:
        source = {"chart": c.name, "repository_opts": {"repo": c.repository}}
    return k8s.helm.v3.Release(name, name=c.release, version=chart_version(release_key, kubernetes),
                               namespace=namespace or c.namespace, values=deep_merge(values, overrides),
                               timeout=HELM_RELEASE_TIMEOUT_SECONDS[release_key], opts=opts, **source)


def deep_merge(base: dict, override: dict) -> dict:
    out = dict(base)
    for key, value in (override or {}).items():
        out[key] = deep_merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out
