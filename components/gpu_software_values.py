"""Helm values of the GPU software charts (GPU Operator, fake-gpu-operator) and the mig-parted configs, pure over
the pools' facts: gpu_software.py registers them, and placement reads them to know which pods the charts run
without importing the component."""
import yaml

from gpuplatform.catalogs.gpus import gpu_product_label
from gpuplatform.catalogs.mig import max_instances, mig_parted_entry
from gpuplatform.catalogs.sharing import SIMULATED_POOL_LABEL
from gpuplatform.components.pools import PoolFacts


def fake_gpu_operator_values(pools: list[PoolFacts]) -> dict:
    """Topology derived from the pool specs: product, GPUs per node and memory per GPU, keyed by pool name."""
    # Helm merges our map into the chart's, whose topology keeps its ``default`` pool: a null would delete it in
    # Helm, but the Pulumi engine does not carry a null value through to the provider (gpuplatform rehearse, on the
    # real engine). It stays inert: it takes only nodes labelled <nodePoolLabelKey>=default, and a pool of ours
    # named default replaces its entry.
    node_pools: dict = {}
    # fake-gpu-operator labels its nodes with gpuProduct as GPU Feature Discovery would (nvidia.com/gpu.product)
    node_pools.update({p.name: {"gpuProduct": gpu_product_label(p.model), "gpuCount": p.gpus_per_node,
                                "gpuMemory": p.model.require_reported_mib("a simulated GPU (fake-gpu-operator "
                                                                          "gpuMemory)")} for p in pools})
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


def deep_merge(base: dict, override: dict) -> dict:
    out = dict(base)
    for key, value in (override or {}).items():
        out[key] = deep_merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out
