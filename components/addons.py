"""Which ACK add-ons a stack needs on its running cluster, and why: one answer for the components that install
them (each asks its cluster for the ones it needs, :meth:`GpuCluster.require_addons`) and for the tests."""
from gpuplatform.catalogs.ack import ARMS_ADDON, AUTO_REPAIR_ADDONS, FLUID_COMPONENT, INGRESS_ADDON
from gpuplatform.catalogs.sharing import ACK_LEGACY_SHARING_ADDON, ACK_SHARING_ADDON
from gpuplatform.components.config import PlatformConfig


def required_addons(cfg: PlatformConfig) -> list[str]:
    """ACK add-ons the stack installs on the running cluster (``KubernetesAddon``): managed Prometheus for arms,
    the GPU sharing installer for cGPU and MIG pools, the node problem detector and lifecycle controller for managed
    (auto-repair) pools, ACK's NGINX controller for nginx Ingresses. The network plugin and CSI driver come with
    a new cluster (``catalogs/ack.py``)."""
    if not cfg.is_ack:
        return []
    addons = []
    if cfg.monitoring.backend == "arms":
        addons.append(ARMS_ADDON)
    if any(cfg.pool_managed(p) for p in cfg.node_pools):
        addons += list(AUTO_REPAIR_ADDONS)
    addons += sorted({a for p in cfg.node_pools for a in sharing_addons(cfg.is_ack, cfg.is_ack_pro, p.sharing.mode)})
    if any(ingress_addon(cfg.is_ack, w) for w in cfg.workloads):
        addons.append(INGRESS_ADDON)
    return addons


def ingress_addon(on_ack: bool, w) -> list[str]:
    """The ACK add-on that serves the workload's Ingress, when the stack installs it."""
    ing = w.exposure.ingress
    return [INGRESS_ADDON] if ing is not None and ing.controller_for(on_ack) == "addon" else []


def sharing_addons(on_ack: bool, ack_pro: bool, mode: str) -> list[str]:
    """ACK add-ons a pool's sharing mode needs before its pods get GPUs: cGPU and MIG pools both, on Pro
    clusters. A dedicated cluster's legacy cGPU component (ack-cgpu) is not an add-on: a prerequisite
    (:func:`prerequisites`)."""
    if not on_ack or mode == "exclusive" or not ack_pro:
        return []
    # every ack.node.gpu.schedule value but "default" (cGPU policies, mig) is served by ack-ai-installer
    # (ACK "labels used by ACK to control GPUs", doc-detail/191140)
    return [ACK_SHARING_ADDON]


def prerequisites(cfg: PlatformConfig) -> list[str]:
    """Components the stack needs but cannot install (catalogs/ack.py ``PREREQUISITES``): the legacy cGPU component
    of a dedicated cluster with cGPU pools; Fluid (``ack-fluid``) for the weights caches of ``volumes[].fluid``."""
    out = []
    if cfg.is_ack and not cfg.is_ack_pro and any(p.sharing.mode == "cgpu" for p in cfg.node_pools):
        out.append(ACK_LEGACY_SHARING_ADDON)
    if any(v.fluid is not None for w in cfg.workloads for v in w.volumes):
        out.append(FLUID_COMPONENT)  # volumes[].fluid: its Dataset and JindoRuntime need Fluid's controllers
    return out


def repair_addons(cfg: PlatformConfig, pool) -> list[str]:
    """Auto repair is carried out by these add-ons: a managed pool created before them has nodes nobody repairs."""
    return list(AUTO_REPAIR_ADDONS) if cfg.pool_managed(pool) else []
