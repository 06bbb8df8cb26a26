"""Facts derived from a node pool's config: GPU model, labels, tolerations, the GPU resource and capacity.

Pure functions over the catalogs, shared by validation, the node pool component, workloads and the plan.
"""
from dataclasses import dataclass
from typing import Optional

from gpuplatform.catalogs import capacity, sharing, timeouts
from gpuplatform.catalogs.gpus import GpuModel, gpu_model, instance_type
from gpuplatform.catalogs.mig import mig_config_label_value
from gpuplatform.components.config import GpuRequestSpec, NodePool, PlatformConfig
from gpuplatform.components.k8s_validity import QUANTITY, quantity_value


@dataclass(frozen=True)
class PoolFacts:
    name: str
    mode: str
    model: GpuModel
    gpus_per_node: int
    max_nodes: int
    on_ack: bool
    simulated: bool
    mig_profile: Optional[str] = None
    mig_strategy: Optional[str] = None
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

    # ------------------------------------------------------------------ scheduling
    @property
    def node_selector(self) -> dict[str, str]:
        return {sharing.POOL_LABEL: self.name}

    @property
    def node_labels(self) -> dict[str, str]:
        """Labels every node of the pool carries (set by the ACK node pool; applied by the user elsewhere)."""
        labels = dict(self.extra_labels)
        labels[sharing.POOL_LABEL] = self.name
        if self.on_ack:
            if self.mode == "exclusive":
                labels[sharing.ACK_SCHEDULE_LABEL] = sharing.ACK_EXCLUSIVE
            elif self.mode == "cgpu":
                labels[sharing.ACK_SCHEDULE_LABEL] = self.cgpu_policy
                labels[sharing.ACK_PLACEMENT_LABEL] = self.cgpu_placement
                if self.legacy_cgpu_label:
                    labels[sharing.LEGACY_CGPU_LABEL[0]] = sharing.LEGACY_CGPU_LABEL[1]
            elif self.mode == "mig":
                labels[sharing.ACK_SCHEDULE_LABEL] = sharing.ACK_MIG
        if self.mode == "mig":
            labels[sharing.NVIDIA_MIG_CONFIG_LABEL] = mig_config_label_value(self.mig_profile)
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

    # ------------------------------------------------------------------ GPU resources
    @property
    def resource_name(self) -> str:
        """The extended resource pods of this pool request."""
        if self.mode == "cgpu":
            return sharing.RESOURCE_GPU_MEM
        if self.mode == "mig":
            return sharing.mig_resource(self.mig_profile, self.mig_strategy)
        return sharing.RESOURCE_GPU

    def gpu_resources(self, request: GpuRequestSpec) -> dict[str, str]:
        """Requests == limits for the GPU resource of one replica."""
        if self.mode == "cgpu":
            out = {sharing.RESOURCE_GPU_MEM: str(request.memory_gib or 0)}
            if self.cgpu_policy == "core_mem" and request.core_percent:
                out[sharing.RESOURCE_GPU_CORE] = str(request.core_percent)
            return out
        return {self.resource_name: str(request.count or 0)}

    # ------------------------------------------------------------------ capacity
    @property
    def units_per_node(self) -> int:
        return capacity.units_per_node(self.mode, self.model, self.gpus_per_node, self.mig_profile)

    @property
    def unit(self) -> str:
        return sharing.SHARING_MODES[self.mode].unit

    def replicas_per_node(self, request: GpuRequestSpec) -> int:
        return capacity.replicas_per_node(self.mode, self.model, self.gpus_per_node, to_request(request),
                                          self.mig_profile)

    def max_replicas(self, request: GpuRequestSpec) -> int:
        return self.max_nodes * self.replicas_per_node(request)

    def unplaced(self, workloads: list) -> dict[str, int]:
        """Replicas of each workload (at its most replicas) that the pool at its largest cannot place: GPU units
        bin-packed per card, CPU and memory per node (see :func:`catalogs.capacity.pack`)."""
        replicas = [capacity.Replica(w.name, to_request(w.gpu), _amount(w.resources.cpu), _amount(w.resources.memory))
                    for w in workloads for _ in range(w.replica_ceiling)]
        return capacity.pack(self.mode, self.model, self.gpus_per_node, self.max_nodes, replicas,
                             vcpus=self.vcpus, memory_bytes=self.memory_gib * 2 ** 30 if self.memory_gib else None,
                             mig_profile=self.mig_profile)


def _amount(text: str) -> float:
    """A quantity's value; 0 for a malformed one (reported by the quantity rule, not counted here)."""
    return quantity_value(str(text)) if QUANTITY.match(str(text)) else 0


def to_request(spec: GpuRequestSpec) -> capacity.GpuRequest:
    return capacity.GpuRequest(count=spec.count or 0, memory_gib=spec.memory_gib or 0,
                               core_percent=spec.core_percent or 0)


def resolve_model(pool: NodePool) -> tuple[Optional[GpuModel], int]:
    """GPU model and GPUs per node: from the first instance type, else from ``gpuModel``/``gpusPerNode``."""
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
    types = [t for t in map(instance_type, pool.instance_types) if t is not None]
    size = pool.max_nodes if pool.autoscaling else (pool.desired_nodes or 0)
    return PoolFacts(
        name=pool.name, mode=s.mode, model=model, gpus_per_node=gpus, max_nodes=size, on_ack=cfg.is_ack,
        simulated=getattr(cfg.cluster, "simulate_gpus", False),
        mig_profile=getattr(s, "profile", None), mig_strategy=getattr(s, "strategy", None),
        cgpu_policy=getattr(s, "policy", None), cgpu_placement=getattr(s, "placement", None),
        legacy_cgpu_label=getattr(s, "legacy_label", False),
        extra_labels=tuple(sorted(pool.labels.items())),
        taints=tuple((t.key, t.value, t.effect) for t in pool.taints),
        # the autoscaler may start any of the instance types, so a replica must fit the smallest
        vcpus=min((t.vcpus for t in types), default=None), memory_gib=min((t.memory_gib for t in types), default=None),
        node_provisioning_seconds=_provisioning(cfg, pool),
    )


def _provisioning(cfg: PlatformConfig, pool: NodePool) -> int:
    """ACK pools buy their nodes (the slowest instance kind of the pool counts); other clusters' nodes exist."""
    if not cfg.is_ack or not pool.instance_types:
        return 0
    return max(timeouts.NODE_PROVISIONING_SECONDS[timeouts.instance_kind(t)] for t in pool.instance_types)


def all_pool_facts(cfg: PlatformConfig) -> dict[str, PoolFacts]:
    out = {}
    for pool in cfg.node_pools:
        facts = pool_facts(cfg, pool)
        if facts is not None:
            out[pool.name] = facts
    return out
