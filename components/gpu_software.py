"""GPU software a cluster needs for its pools' sharing modes, as pure Helm values builders plus one component.

* ACK: the GPU stack is ACK-managed; cGPU and MIG (ACK's ``ack.node.gpu.schedule=mig`` label) need
  ``ack-ai-installer``, installed as a cluster add-on by :class:`~components.cluster.GpuCluster`.
* Other clusters with MIG pools: the NVIDIA GPU Operator (pinned) with ``mig.strategy`` and mig-manager
  following each node's ``nvidia.com/mig.config`` label; a pool with a per-GPU layout adds our own mig-parted
  config (a ConfigMap the chart creates) holding every pool's config.
* Simulated GPUs (``simulateGpus``): run-ai/fake-gpu-operator with one topology node pool per GPU pool.
"""
from typing import Optional, TypedDict

from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s
from typing_extensions import NotRequired

from gpuplatform.catalogs.timeouts import HELM_RELEASE_TIMEOUT_SECONDS
from gpuplatform.catalogs.versions import KubeMinor, chart
from gpuplatform.components.clouds import CloudProfile
from gpuplatform.components.releases import chart_version

from gpuplatform.components.cluster import GpuCluster
from gpuplatform.components.assembly import BUILT, ComposedComponent
# the pure values builders live in gpu_software_values.py (placement reads them); named here as before
from gpuplatform.components.gpu_software_values import (MIG_DEFAULT_CONFIG, MIG_PARTED_CONFIG_MAP,  # noqa: F401
                                                        deep_merge, fake_gpu_operator_values,
                                                        gpu_operator_values, mig_manager_config,
                                                        mig_parted_configs)



def release(name: str, release_key: str, values: dict, overrides: dict, opts: pulumi.ResourceOptions,
            namespace: Optional[str] = None, *, kubernetes: KubeMinor,
            allow_end_of_life: tuple[str, ...] = (), packages: Optional[str] = None) -> k8s.helm.v3.Release:
    """A pinned Helm release from the versions catalog, at the newest pinned version that supports the cluster's
    Kubernetes minor, with the user's ``helmValues`` merged over ours. Namespaces are created by the caller (with
    their Pod Security labels), never by Helm. The timeout is explicit (pulumi-kubernetes' default is 300 s per
    operation, short for GPU DaemonSets and CRD-heavy charts)."""
    c = chart(release_key)
    version = chart_version(release_key, kubernetes, allow_end_of_life)
    if packages:  # settings.chartPackages: the package of the pinned version, read from disk
        source = {"chart": str(Path(packages) / f"{c.name}-{version}.tgz")}
    elif c.repository.startswith("oci://"):
        source = {"chart": f"{c.repository}/{c.name}"}
    else:
        source = {"chart": c.name, "repository_opts": {"repo": c.repository}}
    return k8s.helm.v3.Release(name, name=c.release, version=version,
                               namespace=namespace or c.namespace, values=deep_merge(values, overrides),
                               timeout=HELM_RELEASE_TIMEOUT_SECONDS[release_key], opts=opts, **source)


class GpuSoftwareArgs(TypedDict):
    cluster: GpuCluster
    """The cluster the GPU software runs on. Required."""
    node_pools: list
    """The GpuNodePools it serves (all GPU pools of the cluster: the operator and the simulated topology are
    cluster-wide, and a pool left out gets no MIG config or fake GPUs). Required."""
    intervals: NotRequired[dict]
    """Collection and scrape intervals of the GPU Operator's dcgm-exporter, in the stack-file format
    (``gpu-platform:monitoring.intervals``); pass the same as GpuMonitoring's. Default 15s/15s."""
    helm_values: NotRequired[dict]
    """Values merged over ours for the GPU Operator release (escape hatch). Default {}."""


def gpu_software_kind(cloud: CloudProfile, simulated: bool, pool_modes) -> Optional[str]:
    """Which GPU software a cluster's pools need from this package: fake-gpu-operator for simulated GPUs, the GPU
    Operator for MIG on a plain cluster (mig-manager partitions the GPUs); on ACK the GPU stack is ACK's, and
    whole GPUs on a plain cluster use the device plugin the cluster already runs (the cloud profile's answer)."""
    return cloud.gpu_software_kind(simulated, pool_modes)


class GpuSoftware(ComposedComponent, pulumi.ComponentResource):
    """The NVIDIA GPU Operator (MIG on a plain cluster) or fake-gpu-operator (simulated GPUs) for a cluster's GPU
    pools. Each pool it serves waits for it (``GpuNodePool.gpu_nodes``), so build it before the services."""

    release: k8s.helm.v3.Release
    kind: str
    """``gpu-operator`` or ``fake-gpu-operator``."""

    def __init__(self, name: str, args: GpuSoftwareArgs, opts: Optional[pulumi.ResourceOptions] = None):
        from gpuplatform.components.args import ArgsIssue, check_args, component_label, raise_for, reprefix
        from gpuplatform.components.assembly import checking, parse_section
        from gpuplatform.components.config import Intervals, duration_seconds
        from gpuplatform.components.errors import ConfigError
        from gpuplatform.components.node_pool import GpuNodePool
        from gpuplatform.components.validation import kubernetes_version

        label = component_label("GpuSoftware", name)
        with checking(self, label) as outcome:
            raise_for(check_args("GpuSoftware", name, args, GpuSoftwareArgs))
            issues: list[ArgsIssue] = []
            try:
                intervals = parse_section(Intervals, args.get("intervals") or {}, "monitoring.intervals")
            except ConfigError as exc:
                issues += reprefix(exc.issues, {"monitoring.intervals": f"{label} args.intervals"})
            cluster = args["cluster"]
            pools = list(args["node_pools"])
            wrong = [ArgsIssue(f"{label} args.node_pools[{i}]", f"a {type(p).__name__}: expected a GpuNodePool")
                     for i, p in enumerate(pools) if not isinstance(p, GpuNodePool)]
            wrong += [ArgsIssue(f"{label} args.node_pools[{i}]", f"pool {p.facts.name!r} belongs to another "
                                f"cluster ({p.cluster.label}); allowed: pools of {cluster.label}")
                      for i, p in enumerate(pools) if isinstance(p, GpuNodePool) and p.cluster is not cluster]
            kind = None if wrong else gpu_software_kind(cluster.cloud, cluster.simulate_gpus,
                                                        [p.facts.mode for p in pools])
            if kind is None and not wrong:
                wrong.append(ArgsIssue(f"{label} args.node_pools", "nothing to install: " + (
                    "on ACK the GPU stack is ACK's (cGPU and MIG through the ack-ai-installer add-on, which the "
                    "pools install)" if cluster.cloud.partitions_mig else "whole GPUs on a plain cluster use the NVIDIA device "
                    "plugin the cluster already runs") + "; allowed: GpuSoftware only for simulated GPUs "
                    "(cluster.simulateGpus) or MIG pools on a cluster of kind kubeconfig"))
            raise_for(issues + wrong)
            for pool in pools:
                pool.gpu_software_kind = kind  # what the services on the pool are checked against
        if not outcome.build:
            return
        super().__init__("gpuplatform:index:GpuSoftware", name, {"kind": kind}, opts)
        outcome.restore()
        self.kind = kind
        child = pulumi.ResourceOptions(parent=self, provider=cluster.provider)
        facts = [p.facts for p in pools]
        c = chart(kind)
        from gpuplatform.components.k8s_objects import namespace, register
        from gpuplatform.catalogs.versions import MONITOR_LABELS

        ns = register(f"{name}-{kind}-namespace", namespace(c.namespace, "privileged"), child)
        if kind == "fake-gpu-operator":
            values = fake_gpu_operator_values(facts)
            overrides = {}
        else:
            values = gpu_operator_values(facts, MONITOR_LABELS, intervals.scrape,
                                         duration_seconds(intervals.exporter_collect) * 1000)
            overrides = args.get("helm_values") or {}
        self.release = release(f"{name}-{kind}", kind, values, overrides,
                               pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(
                                   depends_on=[ns, *cluster.system_nodes])),
                               kubernetes=kubernetes_version(cluster.view()),
                               packages=cluster.settings.chart_packages)
        for pool in pools:
            pool.gpu_software.append(self.release)
        BUILT.append(self)  # for the tools that read a composed program (components/assembly.py)
        self.register_outputs({"kind": kind})
