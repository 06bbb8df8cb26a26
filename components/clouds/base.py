"""The questions the package asks of the cloud a cluster runs in, answered once per cloud.

Every component, validation rule and command that would otherwise branch on "is this ACK?" asks its cluster's
profile instead (``cfg.cloud``, ``GpuCluster.cloud``, ``PoolFacts.cloud``). A profile holds no facts of its own:
it reads its cloud's catalog (``catalogs/ack.py`` for ACK) and says what they mean for the question asked. Adding a
cloud is a new profile answering this interface, its catalog, and its cluster kinds in the config schema
(docs/architecture.md "The cloud profile").

Profiles import catalogs only, never the config models or the builders: they sit below both.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar, Optional


@dataclass(frozen=True)
class CloudProfile(ABC):
    """One cluster's cloud: the kind it was declared as and the cloud facts of its spec that the answers depend
    on. Frozen and hashable, so the pool facts and workload contexts that carry it stay so."""

    kind: str
    """The cluster kind (``cluster.kind``)."""
    professional: bool = False
    """The cluster is on the cloud's higher tier (ACK Pro), which gates some features (:meth:`tier_lacks`)."""
    network_plugin: Optional[str] = None
    """The cluster's network plugin, where the stack sets it (ACK: flannel or terway)."""

    name: ClassVar[str]
    """Short name of the profile (``ack``, ``existing``)."""
    title: ClassVar[str]
    """How messages name the cloud (``ACK``)."""
    cluster_kinds: ClassVar[tuple[str, ...]]
    """The ``cluster.kind`` values this profile serves."""

    # ------------------------------------------------------------------ what the stack provisions through the cloud
    uses_cloud_provider: ClassVar[bool]
    """The stack talks to the cloud's own Pulumi provider: the cluster, its add-ons, node autoscaling and the
    kubeconfig come from the cloud's API (otherwise the kubeconfig is given and only the Kubernetes provider runs)."""
    creates_node_pools: ClassVar[bool]
    """GPU nodes come from node pools the stack creates (instance types required, nodes bought, priced and
    labelled by the pool); otherwise the nodes exist and carry the pool labels by hand."""
    partitions_mig: ClassVar[bool]
    """The cloud partitions MIG GPUs itself (one profile per pool); otherwise the GPU Operator's mig-manager does."""
    runs_system_components: ClassVar[bool]
    """The cloud runs controllers of its own in the cluster (``catalogs/system_components.py``), which the
    rehearsal creates beside the stack's."""
    has_account: ClassVar[bool]
    """There is a cloud account the preflight reads (service roles, quota, instance stock)."""
    cluster_checks: ClassVar[tuple[str, ...]]
    """Names of the ``gpuplatform verify`` cluster checks that apply to this cloud only."""

    @abstractmethod
    def managed_control_plane(self) -> bool:
        """The cloud runs the control plane outside the cluster (no controller-manager, scheduler or etcd to
        scrape)."""

    @abstractmethod
    def legacy_sharing_component(self) -> bool:
        """GPU sharing is served by a component the stack cannot install, selecting nodes by a label of its own
        (ACK's dedicated clusters: ack-cgpu, ``cgpu=true``)."""

    # ------------------------------------------------------------------ what the cloud offers
    @abstractmethod
    def offers(self, feature: str) -> bool:
        """Whether the cloud offers ``feature`` (a config value such as ``arms``, ``cgpu``,
        ``InternalLoadBalancer``, ``ingress-addon``) at all."""

    @abstractmethod
    def tier_lacks(self, feature: str) -> bool:
        """Whether the cloud offers ``feature`` on a higher tier than this cluster's (ACK Pro only)."""

    @abstractmethod
    def pool_managed(self, pool) -> bool:
        """Whether a node pool is managed by the cloud (auto repair)."""

    @abstractmethod
    def addons(self, cfg) -> list[str]:
        """Cloud add-ons the stack installs on the running cluster for ``cfg`` (a ``PlatformConfig``)."""

    @abstractmethod
    def sharing_addons(self, mode: str) -> list[str]:
        """Cloud add-ons a pool's GPU sharing mode needs before its pods get GPUs."""

    @abstractmethod
    def sharing_prerequisites(self, modes) -> list[str]:
        """Components the pools' sharing modes need that the stack cannot install."""

    @abstractmethod
    def repair_addons(self, pool) -> list[str]:
        """Cloud add-ons that carry out a pool's auto repair."""

    @abstractmethod
    def default_ingress_controller(self, class_name: str) -> str:
        """Who runs the controller of an Ingress of ``class_name`` when the stack does not say: ``addon`` (the
        stack installs the cloud's) or ``external``."""

    def ingress_controller(self, ingress) -> str:
        """``addon`` or ``external`` for an ``exposure.ingress``: the stack's choice, else the cloud's default."""
        return ingress.controller or self.default_ingress_controller(ingress.class_name)

    @abstractmethod
    def ingress_addons(self, workload) -> list[str]:
        """The cloud add-on that serves the workload's Ingress, when the stack installs it."""

    @abstractmethod
    def ingress_peers(self) -> tuple:
        """The cloud's ingress controllers (``catalogs.network.PodPeer``) a workload's NetworkPolicy admits: the
        one the stack installs, or the one likely there beside an external controller."""

    # ------------------------------------------------------------------ GPU software and nodes
    @abstractmethod
    def gpu_software_kind(self, simulated: bool, pool_modes) -> Optional[str]:
        """Which GPU software the pools need from this package: ``fake-gpu-operator``, ``gpu-operator`` or None
        (the cloud's or the cluster's own)."""

    @abstractmethod
    def gpu_node_labels(self, facts) -> dict[str, str]:
        """Labels the cloud's GPU stack reads off a pool's nodes (its sharing mode), beside the package's own."""

    @abstractmethod
    def autoscaled_node_labels(self) -> dict[str, str]:
        """Labels the cloud sets on every node of an autoscaled pool."""

    @abstractmethod
    def allocatable_cpu(self, vcpus: int, memory_gib: Optional[float], max_pods: Optional[int]) -> float:
        """CPU cores a node of ``vcpus`` offers pods, less what the cloud reserves."""

    @abstractmethod
    def allocatable_memory_bytes(self, vcpus: Optional[int], memory_gib: float, max_pods: Optional[int]) -> float:
        """Memory a node offers pods, in bytes, less what the cloud reserves."""

    @abstractmethod
    def max_pods_per_node(self) -> Optional[int]:
        """Pods a node runs, where the network plugin fixes it; None where not known."""

    # ------------------------------------------------------------------ diagnostics for `gpuplatform verify`
    @abstractmethod
    def sharing_component(self) -> str:
        """What serves shared GPUs on a node, as a verify cause names it."""

    @abstractmethod
    def device_plugin_hint(self) -> str:
        """Why a node's whole GPUs may not be advertised, as a verify cause says it."""

    @abstractmethod
    def mig_partition_cause(self, pool) -> Optional[str]:
        """Why a MIG pool's GPUs may stay whole when the cloud partitions them; None: the mig-manager's causes."""
