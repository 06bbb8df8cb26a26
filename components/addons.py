"""Which cloud add-ons a stack needs on its running cluster, and why: one answer for the components that install
them (each asks its cluster for the ones it needs, :meth:`GpuCluster.require_addons`) and for the tests. What each
cloud installs is its profile's answer (components/clouds); this module asks it for a stack's config."""
from gpuplatform.catalogs.ack import FLUID_COMPONENT
from gpuplatform.components.clouds import CloudProfile
from gpuplatform.components.config import PlatformConfig


def required_addons(cfg: PlatformConfig) -> list[str]:
    """Cloud add-ons the stack installs on the running cluster (ACK: ``KubernetesAddon``): managed Prometheus for
    arms, the GPU sharing installer for cGPU and MIG pools, the node problem detector and lifecycle controller for
    managed (auto-repair) pools, ACK's NGINX controller for nginx Ingresses (:meth:`AckProfile.addons`)."""
    return cfg.cloud.addons(cfg)


def ingress_addon(cloud: CloudProfile, w) -> list[str]:
    """The cloud add-on that serves the workload's Ingress, when the stack installs it."""
    return cloud.ingress_addons(w)


def sharing_addons(cloud: CloudProfile, mode: str) -> list[str]:
    """Cloud add-ons a pool's sharing mode needs before its pods get GPUs (ACK: cGPU and MIG pools both, on Pro
    clusters). A dedicated cluster's legacy cGPU component (ack-cgpu) is not an add-on: a prerequisite
    (:func:`prerequisites`)."""
    return cloud.sharing_addons(mode)


def prerequisites(cfg: PlatformConfig) -> list[str]:
    """Components the stack needs but cannot install (catalogs/ack.py ``PREREQUISITES``): the legacy cGPU component
    of a dedicated cluster with cGPU pools; Fluid (``ack-fluid``) for the weights caches of ``volumes[].fluid``."""
    out = cfg.cloud.sharing_prerequisites([p.sharing.mode for p in cfg.node_pools])
    if any(v.fluid is not None for w in cfg.workloads for v in w.volumes):
        out.append(FLUID_COMPONENT)  # volumes[].fluid: its Dataset and JindoRuntime need Fluid's controllers
    return out


def repair_addons(cfg: PlatformConfig, pool) -> list[str]:
    """Auto repair is carried out by these add-ons: a managed pool created before them has nodes nobody repairs."""
    return cfg.cloud.repair_addons(pool)
