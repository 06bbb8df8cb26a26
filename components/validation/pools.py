"""Rules of the node pools: names, sizes, labels, hardware, and the sharing mode each pool's GPUs allow."""
import re

from gpuplatform.catalogs import ack, sharing
from gpuplatform.catalogs.gpus import (GPU_MODELS, INSTANCE_TYPES, instance_type, reported_memory_unknown,
                                      sourced_reported_memory)
from gpuplatform.components.config import PlatformConfig
from gpuplatform.components.errors import fmt, one_of
from gpuplatform.components.k8s_validity import DNS_LABEL
from gpuplatform.components.pools import PoolFacts
from gpuplatform.components.validation.common import _cluster_tier, _Issues, _suggest
from gpuplatform.components.validation.mig import check_pool_mig

MAX_POOL_NAME = 40
INSTANCE_TYPE_NAME = re.compile(r"^ecs\.[a-z0-9]+(-[a-z0-9]+)*\.[a-z0-9]+$")


def check_ack_pools(cfg: PlatformConfig, facts: dict[str, PoolFacts], out: _Issues) -> None:
    """Pool features ACK offers on Pro clusters only, asked for on a Basic or dedicated cluster."""
    for i, pool in enumerate(cfg.node_pools):
        if cfg.pool_managed(pool) and cfg.cloud.tier_lacks("managed-node-pools"):
            out.add(f"nodePools[{i}].autoRepair", f"{pool.auto_repair}: managed node pools (auto repair) need an "
                    f"ACK Pro cluster, and {_cluster_tier(cfg)}; allowed: false")
        # a dedicated cluster serves cGPU through its legacy component instead (_check_pool_sharing)
        if pool.sharing.mode == "cgpu" and cfg.cloud.tier_lacks("cgpu") and not cfg.cloud.legacy_sharing_component():
            out.add(f"nodePools[{i}].sharing.mode", f"'cgpu' needs ack-ai-installer on an ACK Pro cluster, and "
                    f"{_cluster_tier(cfg)}; allowed: cluster.clusterSpec {one_of(ack.PRO_SPECS)}, or sharing "
                    "exclusive")


def check_pools(cfg: PlatformConfig, facts: dict[str, PoolFacts], out: _Issues) -> None:
    seen: dict[str, int] = {}
    for i, pool in enumerate(cfg.node_pools):
        p = f"nodePools[{i}]"
        if not DNS_LABEL.match(pool.name) or len(pool.name) > MAX_POOL_NAME:
            out.add(f"{p}.name", f"{fmt(pool.name)} is not a valid pool name; allowed: lowercase letters, digits "
                    f"and '-', starting and ending alphanumeric, at most {MAX_POOL_NAME} characters")
        if pool.name in seen:
            out.add(f"{p}.name", f"{fmt(pool.name)} is already used by nodePools[{seen[pool.name]}]; "
                    "pool names must be unique")
        seen.setdefault(pool.name, i)
        _check_pool_hardware(cfg, i, pool, out)
        if pool.min_nodes > pool.max_nodes:
            out.add(f"{p}.minNodes", f"'minNodes' ({pool.min_nodes}) must be <= 'maxNodes' ({pool.max_nodes})")
        if pool.autoscaling and pool.desired_nodes is not None:
            out.add(f"{p}.desiredNodes", f"{pool.desired_nodes}: only used when 'autoscaling' is false; "
                    "remove it or set autoscaling: false")
        if not pool.autoscaling and pool.desired_nodes is None:
            out.add(f"{p}.desiredNodes", "required when 'autoscaling' is false (the fixed pool size)")
        owned = {sharing.ACK_SCHEDULE_LABEL, sharing.ACK_PLACEMENT_LABEL, sharing.NVIDIA_MIG_CONFIG_LABEL,
                 sharing.POOL_LABEL, sharing.LEGACY_CGPU_LABEL[0]}
        for key in sorted(owned & set(pool.labels)):
            out.add(f"{p}.labels.{key}", f"{fmt(pool.labels[key])}: this label is set from 'sharing' "
                    f"(mode {pool.sharing.mode}); a node runs one GPU scheduling mode, so it cannot be set by hand")


def _check_custom_gpu(cfg: PlatformConfig, p: str, pool, out: _Issues) -> None:
    """A GPU the catalog lacks: on instance types the catalog lacks too (a catalog type carries a catalog model),
    with the GPU count stated, and only in the sharing modes the stack says the card runs."""
    c = pool.custom_gpu
    if c.name in GPU_MODELS:
        out.add(f"{p}.customGpu.name", f"{fmt(c.name)} is a catalog model; allowed: leave customGpu out and use the "
                "catalog's facts ('gpuModel' or its instance types), or a name the catalog does not have")
    if pool.gpu_model is not None and pool.gpu_model != c.name:
        out.add(f"{p}.gpuModel", f"{fmt(pool.gpu_model)} contradicts customGpu {fmt(c.name)}; allowed: leave it out, "
                "or the same name")
    for j, name in enumerate(pool.instance_types):
        known = instance_type(name)
        if known is not None:
            out.add(f"{p}.instanceTypes[{j}]", f"{fmt(name)} is in the catalog with {known.gpu_model}, so its GPU is "
                    "not a custom one; allowed: leave customGpu out, or instance types outside the catalog")
        elif not INSTANCE_TYPE_NAME.match(name):
            out.add(f"{p}.instanceTypes[{j}]", f"{fmt(name)} is not an ECS instance type name; allowed: "
                    "ecs.<family>.<size>, e.g. ecs.gn8v.4xlarge")
    if pool.gpus_per_node is None:
        out.add(f"{p}.gpusPerNode", f"required with customGpu {fmt(c.name)}: the catalog does not know how many "
                "GPUs a node of these instance types has")
    if pool.sharing.mode not in c.sharing:
        why = ("MIG profiles and placements of a model come from the catalog, which does not have this one"
               if pool.sharing.mode == "mig" else "customGpu.sharing does not list it")
        out.add(f"{p}.sharing.mode", f"{fmt(pool.sharing.mode)} on customGpu {fmt(c.name)}: {why}; allowed: "
                f"{one_of(c.sharing)}")


def _check_pool_hardware(cfg: PlatformConfig, i: int, pool, out: _Issues) -> None:
    p = f"nodePools[{i}]"
    models = set()
    if cfg.cloud.creates_node_pools and not pool.instance_types:
        out.add(f"{p}.instanceTypes", "required on ACK: at least one ECS GPU instance type, e.g. "
                "ecs.gn7i-c8g1.2xlarge")
    if pool.custom_gpu is not None:
        _check_custom_gpu(cfg, p, pool, out)
        _check_pool_sharing(cfg, p, pool, out)
        return
    for j, name in enumerate(pool.instance_types):
        itype = instance_type(name)
        if itype is None:
            out.add(f"{p}.instanceTypes[{j}]", f"{fmt(name)} is not a known ACK GPU instance type."
                    f"{_suggest(name, INSTANCE_TYPES)} See catalogs/gpus.py for the catalog; a type it lacks: "
                    "describe its GPU in 'customGpu', with 'gpusPerNode'.")
        else:
            models.add(itype.gpu_model)
    if len(models) > 1:
        out.add(f"{p}.instanceTypes", f"mixes GPU models {one_of(sorted(models))}; all instance types of a pool "
                "must carry the same GPU model so capacity and sharing are well defined")
    known = [t for t in map(instance_type, pool.instance_types) if t is not None]
    if known and pool.gpus_per_node is not None and {t.gpus for t in known} != {pool.gpus_per_node}:
        counts = ", ".join(f"{t.name} has {t.gpus}" for t in known)
        out.add(f"{p}.gpusPerNode", f"{pool.gpus_per_node} contradicts the instance types ({counts}); allowed: "
                "leave it out (the instance type decides), or the instance types' own count")
    if known and pool.gpu_model is not None and {t.gpu_model for t in known} != {pool.gpu_model}:
        out.add(f"{p}.gpuModel", f"{fmt(pool.gpu_model)} contradicts the instance types, which carry "
                f"{one_of(sorted({t.gpu_model for t in known}))}; allowed: leave it out, or the same model")
    if not pool.instance_types:
        if pool.gpu_model is None or pool.gpus_per_node is None:
            out.add(f"{p}.gpuModel", "required with 'gpusPerNode' when no instance types are given; "
                    f"allowed models: {one_of(GPU_MODELS)}")
        elif pool.gpu_model not in GPU_MODELS:
            out.add(f"{p}.gpuModel", f"{fmt(pool.gpu_model)} is not a known GPU model; allowed: "
                    f"{one_of(GPU_MODELS)}.{_suggest(pool.gpu_model, GPU_MODELS)} A model the catalog lacks: "
                    "describe it in 'customGpu'")
    check_pool_mig(cfg, p, pool, out)
    _check_pool_sharing(cfg, p, pool, out)
    _check_reported_memory(cfg, p, pool, out)


def _check_reported_memory(cfg: PlatformConfig, p: str, pool, out: _Issues) -> None:
    """cGPU counts a card in the GiB the driver reports and fake-gpu-operator advertises that memory per simulated
    GPU: a catalog model without a sourced ``reported_mib`` cannot do either (the catalog does not guess it)."""
    first = instance_type(pool.instance_types[0]) if pool.instance_types else None
    model = first.gpu if first else GPU_MODELS.get(pool.gpu_model or "")
    if model is None or model.reported_mib is not None:
        return
    where = f"{p}.instanceTypes[0]" if first else f"{p}.gpuModel"
    known = one_of(sourced_reported_memory())
    if pool.sharing.mode == "cgpu":
        why = reported_memory_unknown(model.name, "cGPU (aliyun.com/gpu-mem is counted in it)")
        out.add(f"{p}.sharing.mode", f"'cgpu': {why}; allowed: exclusive or mig on {model.name}, or cGPU on {known}")
    if getattr(cfg.cluster, "simulate_gpus", False):
        why = reported_memory_unknown(model.name, "a simulated GPU (fake-gpu-operator gpuMemory)")
        out.add(where, f"{why}; allowed with simulateGpus: {known}")


def _check_pool_sharing(cfg: PlatformConfig, p: str, pool, out: _Issues) -> None:
    s = pool.sharing
    if s.mode == "cgpu":
        if not cfg.cloud.offers("cgpu"):
            out.add(f"{p}.sharing.mode", "'cgpu' is Alibaba cGPU and needs an ACK cluster; allowed for cluster kind "
                    "'kubeconfig': exclusive, mig")
        elif cfg.cloud.legacy_sharing_component() and not s.legacy_label:
            out.add(f"{p}.sharing.legacyLabel", "false on a dedicated (non-Pro) cluster, whose ack-cgpu component "
                    "selects nodes by cgpu=true; allowed: true")
