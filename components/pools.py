"""Facts derived from a node pool's config: GPU model, labels, tolerations, the GPU resource and capacity.

Pure functions over the catalogs, shared by validation, the node pool component, workloads and the plan.
"""
from dataclasses import dataclass
from typing import Optional

from gpuplatform.catalogs import capacity, sharing, timeouts
from gpuplatform.catalogs.gpus import CUSTOM_ARCHITECTURE, GpuModel, gpu_model, instance_type
from gpuplatform.catalogs.mig import WHOLE_GPU, mig_config_label_value, profile_memory_gib
from gpuplatform.components.clouds import CloudProfile
from gpuplatform.components.config import GpuRequestSpec, NodePool, PlatformConfig
from gpuplatform.components.k8s_validity import QUANTITY, quantity_value


@dataclass(frozen=True)
class PoolFacts:
    name: str
    mode: str
    model: GpuModel
    gpus_per_node: int
    max_nodes: int
    cloud: CloudProfile
    """The cluster's cloud profile: what it reserves of a node, which labels its GPU stack reads."""
    simulated: bool
    mig_profile: Optional[str] = None
    mig_strategy: Optional[str] = None
    mig_layout: tuple = ()
    """Per-GPU MIG layout: ``((gpu indices), ((profile, count), ...))`` per entry; no profiles means MIG disabled."""
    mig_config_name: Optional[str] = None
    """The mig-parted config a layout becomes (the nodes' ``nvidia.com/mig.config`` value)."""
    cgpu_policy: Optional[str] = None
    cgpu_placement: Optional[str] = None
    legacy_cgpu_label: bool = False
    extra_labels: tuple = ()
    taints: tuple = ()
    node_provisioning_seconds: int = 0
    """Budget for a new node of the pool to become a Ready GPU node (0: the nodes exist already)."""
    vcpus: Optional[int] = None
    """vCPUs of the smallest instance type of the pool (None: unknown, e.g. a plain cluster's nodes)."""
    memory_gib: Optional[int] = None
    """Memory (GiB) of the smallest instance type of the pool (None: unknown)."""
    max_pods: Optional[int] = None
    """Pods a node runs (a flannel node's pod range); None where it is not known (Terway, other clusters)."""

    # ------------------------------------------------------------------ what a node offers pods
    @property
    def allocatable_cpu(self) -> Optional[float]:
        """CPU cores one node offers pods: the instance's vCPUs less what ACK reserves (an estimate,
        catalogs/ack.py ``reserved_resources``); None when not known."""
        if self.vcpus is None:
            return None
        return self.cloud.allocatable_cpu(self.vcpus, self.memory_gib, self.max_pods)

    @property
    def allocatable_memory_bytes(self) -> Optional[float]:
        """Memory one node offers pods, in bytes: as :attr:`allocatable_cpu`."""
        if self.memory_gib is None:
            return None
        return self.cloud.allocatable_memory_bytes(self.vcpus, self.memory_gib, self.max_pods)

    # ------------------------------------------------------------------ scheduling
    @property
    def node_selector(self) -> dict[str, str]:
        return {sharing.POOL_LABEL: self.name}

    @property
    def node_labels(self) -> dict[str, str]:
        """Labels every node of the pool carries (set by the ACK node pool; applied by the user elsewhere)."""
        labels = dict(self.extra_labels)
        labels[sharing.POOL_LABEL] = self.name
        labels.update(self.cloud.gpu_node_labels(self))
        if self.mode == "mig":
            labels[sharing.NVIDIA_MIG_CONFIG_LABEL] = self.mig_config
        if self.simulated:
            labels[sharing.SIMULATED_POOL_LABEL] = self.name
        return labels

    @property
    def tolerations(self) -> list[dict]:
        out = []
        for key, value, effect in self.taints:
            tol = {"key": key, "operator": "Equal" if value else "Exists", "effect": effect}
            if value:
                tol["value"] = value
            out.append(tol)
        return out

    @property
    def mig_config(self) -> Optional[str]:
        """The mig-parted config the pool's nodes are labelled with: the layout's own, or ``all-<profile>``."""
        if self.mode != "mig":
            return None
        return self.mig_config_name if self.mig_layout else mig_config_label_value(self.mig_profile)

    # ------------------------------------------------------------------ GPU resources
    @property
    def node_resources(self) -> dict[str, int]:
        """GPU extended resources one node advertises, with their amounts (a per-GPU MIG layout advertises one
        ``nvidia.com/mig-<profile>`` per profile and ``nvidia.com/gpu`` for its MIG-disabled GPUs; the mixed
        strategy of k8s-device-plugin, ``internal/rm/device_map.go``)."""
        if not self.mig_layout:
            return {self.resource_name: self.units_per_node}
        out: dict[str, int] = {}
        for devices, profiles in self.mig_layout:
            for _ in devices:
                if not profiles:
                    out[sharing.RESOURCE_GPU] = out.get(sharing.RESOURCE_GPU, 0) + 1
                for profile, count in profiles:
                    name = sharing.mig_resource(profile, "mixed")
                    out[name] = out.get(name, 0) + count
        return out

    @property
    def mig_choices(self) -> tuple[str, ...]:
        """What ``gpu.migProfile`` may name on a layout pool: its profiles, and ``whole`` for MIG-disabled GPUs."""
        names = {p for _, profiles in self.mig_layout for p, _ in profiles}
        whole = any(not profiles for _, profiles in self.mig_layout)
        return tuple(sorted(names)) + ((WHOLE_GPU,) if whole else ())

    @property
    def resource_name(self) -> Optional[str]:
        """The extended resource pods of this pool request; None when a per-GPU layout offers several."""
        if self.mode == "cgpu":
            return sharing.RESOURCE_GPU_MEM
        if self.mode == "mig":
            if self.mig_layout:
                choices = self.mig_choices
                return self._mig_resource(choices[0]) if len(choices) == 1 else None
            return sharing.mig_resource(self.mig_profile, self.mig_strategy)
        return sharing.RESOURCE_GPU

    @staticmethod
    def _mig_resource(choice: str) -> str:
        return sharing.RESOURCE_GPU if choice == WHOLE_GPU else sharing.mig_resource(choice, "mixed")

    def resource_for(self, request: GpuRequestSpec) -> Optional[str]:
        """The resource one replica's ``count`` is of: on a layout pool the one ``migProfile`` names (None when it
        names none the layout offers, or names none of several)."""
        if self.mig_layout:
            choice = request.mig_profile or (self.mig_choices[0] if len(self.mig_choices) == 1 else None)
            return self._mig_resource(choice) if choice in self.mig_choices else None
        return self.resource_name

    def mode_for(self, request: GpuRequestSpec) -> str:
        """How the replica holds its GPU: a MIG-disabled GPU of a per-GPU layout is held whole (``exclusive``), so
        device-level metrics describe the replica there."""
        if self.mig_layout and self.resource_for(request) == sharing.RESOURCE_GPU:
            return "exclusive"
        return self.mode

    def gpu_resources(self, request: GpuRequestSpec) -> dict[str, str]:
        """Requests == limits for the GPU resource of one replica."""
        if self.mode == "cgpu":
            out = {sharing.RESOURCE_GPU_MEM: str(request.memory_gib or 0)}
            if self.cgpu_policy == "core_mem" and request.core_percent:
                out[sharing.RESOURCE_GPU_CORE] = str(request.core_percent)
            return out
        return {self.resource_for(request): str(request.count or 0)}

    def device_gpu_memory(self, request: GpuRequestSpec) -> tuple[float, str]:
        """(GiB of GPU memory of one device as a process of the replica sees it, what that is): the cGPU GiB it
        requests (cGPU shows a container its share as the card's memory); one MIG instance's memory under any
        strategy (the profile name's figure, an upper bound: catalogs/mig.py), the single strategy serving it as
        ``nvidia.com/gpu`` too; else a whole GPU's memory as the driver reports it (catalogs/gpus.py
        ``reported_mib``), or its datasheet size where that is not sourced."""
        if self.mode == "cgpu":
            gib = float(request.memory_gib or 0)
            return gib, f"{gib:g} GiB of cGPU memory (gpu.memoryGib)"
        if self.mode_for(request) == "mig":
            profile = request.mig_profile if self.mig_layout else self.mig_profile
            per = profile_memory_gib(profile or "")
            if per is not None:
                return per, f"MIG {profile} = {per:g} GiB"
        if self.model.reported_mib is None:
            # no sourced nvidia-smi total: the datasheet size, an upper bound, still refuses what cannot load
            per = float(self.model.memory_gb)
            return per, f"{self.model.name} = {per:g} GiB (datasheet size)"
        per = self.model.reported_mib / 1024
        return per, f"{self.model.name} = {per:.1f} GiB"

    def devices_per_process(self, request: GpuRequestSpec) -> int:
        """GPU devices one CUDA process of the replica can use: one on cGPU (the container sees one card) and on
        MIG ("a single CUDA process can only enumerate a single MIG device", NVIDIA MIG User Guide, CUDA Device
        Enumeration), else the replica's whole GPUs."""
        if self.mode == "cgpu" or self.mode_for(request) == "mig":
            return 1
        return request.count or 1

    # ------------------------------------------------------------------ capacity
    @property
    def units_per_node(self) -> int:
        """GPU units of one node (a layout pool: its instances and whole GPUs together; see node_resources)."""
        if self.mig_layout:
            return sum(self.node_resources.values())
        return capacity.units_per_node(self.mode, self.model, self.gpus_per_node, self.mig_profile)

    def unit_of(self, resource: str) -> str:
        """What one unit of ``resource`` is on this pool: a layout's ``nvidia.com/gpu`` is a whole GPU, while the
        single strategy serves MIG instances under that same name."""
        if self.mig_layout:
            return "GPU" if resource == sharing.RESOURCE_GPU else "MIG instance"
        return self.unit

    def units_for(self, request: GpuRequestSpec) -> int:
        """Units of the replica's own resource one node advertises."""
        if self.mode == "cgpu":
            return self.units_per_node
        return self.node_resources.get(self.resource_for(request), 0)

    @property
    def unit(self) -> str:
        return sharing.SHARING_MODES[self.mode].unit

    def replicas_per_node(self, request: GpuRequestSpec) -> int:
        if self.mig_layout:
            return self.units_for(request) // request.count if request.count else 0
        return capacity.replicas_per_node(self.mode, self.model, self.gpus_per_node, to_request(request),
                                          self.mig_profile)

    def max_replicas(self, request: GpuRequestSpec) -> int:
        return self.max_nodes * self.replicas_per_node(request)

    def unplaced(self, workloads: list) -> dict[str, int]:
        """Replicas of each workload (at its most, with its warm-capacity placeholders) that the pool at its
        largest cannot place: GPU units bin-packed per card, CPU and memory per node (see
        :func:`catalogs.capacity.pack`)."""
        # one frozen Replica per workload, repeated: its quantities are parsed once, not once per replica
        replicas = [replica for w in workloads
                    for replica in [capacity.Replica(w.name, to_request(w.gpu), _amount(w.resources.cpu),
                                                     _amount(w.resources.memory),
                                                     resource=self.resource_for(w.gpu) or "")] * w.pod_ceiling]
        return capacity.pack(self.mode, self.model, self.gpus_per_node, self.max_nodes, replicas,
                             vcpus=self.allocatable_cpu, memory_bytes=self.allocatable_memory_bytes,
                             mig_profile=self.mig_profile,
                             node_units=self.node_resources if self.mode != "cgpu" else None)


def _amount(text: str) -> float:
    """A quantity's value; 0 for a malformed one (reported by the quantity rule, not counted here)."""
    return quantity_value(str(text)) if QUANTITY.match(str(text)) else 0


def to_request(spec: GpuRequestSpec) -> capacity.GpuRequest:
    return capacity.GpuRequest(count=spec.count or 0, memory_gib=spec.memory_gib or 0,
                               core_percent=spec.core_percent or 0)


def custom_model(pool: NodePool) -> Optional[GpuModel]:
    """The stack's own description of a GPU outside the catalog, as a catalog entry would hold it."""
    c = pool.custom_gpu
    if c is None:
        return None
    return GpuModel(c.name, c.memory_gib, c.memory_gib * 1024, False, CUSTOM_ARCHITECTURE)


def resolve_model(pool: NodePool) -> tuple[Optional[GpuModel], int]:
    """GPU model and GPUs per node: from the first instance type, else from ``gpuModel``/``gpusPerNode``; a
    ``customGpu`` stands for a model the catalog lacks, on instance types it may lack too."""
    if pool.custom_gpu is not None:
        return custom_model(pool), pool.gpus_per_node or 0
    if pool.instance_types:
        first = instance_type(pool.instance_types[0])
        if first is None:
            return None, 0
        gpus = min((t.gpus for t in map(instance_type, pool.instance_types) if t), default=first.gpus)
        return first.gpu, gpus
    return gpu_model(pool.gpu_model or ""), pool.gpus_per_node or 0


def pool_facts(cfg: PlatformConfig, pool: NodePool) -> Optional[PoolFacts]:
    model, gpus = resolve_model(pool)
    if model is None or gpus <= 0:
        return None
    s = pool.sharing
    if s.mode == "cgpu" and model.reported_mib is None:
        return None  # cGPU is counted in the card's reported GiB, which the catalog lacks (refused by validation)
    types = [t for t in map(instance_type, pool.instance_types) if t is not None]
    size = pool.max_nodes if pool.autoscaling else (pool.desired_nodes or 0)
    return PoolFacts(
        name=pool.name, mode=s.mode, model=model, gpus_per_node=gpus, max_nodes=size, cloud=cfg.cloud,
        simulated=getattr(cfg.cluster, "simulate_gpus", False),
        mig_profile=getattr(s, "profile", None), mig_strategy=getattr(s, "strategy", None),
        mig_layout=tuple((tuple(e.devices), tuple(sorted(e.profiles.items()))) for e in getattr(s, "layout", [])),
        mig_config_name=mig_layout_config_name(pool) if getattr(s, "layout", None) else None,
        cgpu_policy=getattr(s, "policy", None), cgpu_placement=getattr(s, "placement", None),
        legacy_cgpu_label=getattr(s, "legacy_label", False),
        extra_labels=tuple(sorted(pool.labels.items())),
        taints=tuple((t.key, t.value, t.effect) for t in pool.taints),
        # the autoscaler may start any of the instance types, so a replica must fit the smallest
        vcpus=min((t.vcpus for t in types), default=None), memory_gib=min((t.memory_gib for t in types), default=None),
        node_provisioning_seconds=_provisioning(cfg, pool),
        max_pods=cfg.cloud.max_pods_per_node(),
    )


def mig_layout_config_name(pool: NodePool) -> str:
    """The mig-parted config name of a pool's per-GPU layout: the stack's ``configName`` or one per pool."""
    return pool.sharing.config_name or f"gpuplatform-{pool.name}"


def _provisioning(cfg: PlatformConfig, pool: NodePool) -> int:
    """ACK pools buy their nodes (the slowest instance kind of the pool counts); other clusters' nodes exist."""
    if not cfg.cloud.creates_node_pools or not pool.instance_types:
        return 0
    return max(timeouts.NODE_PROVISIONING_SECONDS[timeouts.instance_kind(t)] for t in pool.instance_types)


def all_pool_facts(cfg: PlatformConfig) -> dict[str, PoolFacts]:
    out = {}
    for pool in cfg.node_pools:
        facts = pool_facts(cfg, pool)
        if facts is not None:
            out[pool.name] = facts
    return out
