"""Typed stack configuration: one model for everything a stack file (``stacks/Pulumi.<stack>.yaml``) says.

Keys are camelCase in YAML and live in the ``gpu-platform`` namespace: ``gpu-platform:settings``,
``gpu-platform:cluster``, ``gpu-platform:nodePools``, ``gpu-platform:monitoring``, ``gpu-platform:workloads``,
plus the secrets ``gpu-platform:kubeconfig`` and ``gpu-platform:grafanaAdminPassword``. Every field states its
default. Unknown keys are errors (``extra="forbid"``). Cross-field rules live in :mod:`components.validation`.
"""
from typing import Annotated, Literal, Optional, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr, SecretStr, model_validator
from pydantic.alias_generators import to_camel

from gpuplatform.catalogs.ack import SYSTEM_POOL_INSTANCE_TYPES as _SYSTEM_TYPES
from gpuplatform.catalogs.burn_rates import prometheus_duration_seconds
from gpuplatform.catalogs.metrics import slo_derived_target
from gpuplatform.catalogs.kubernetes import DEFAULT_POD_PLACEMENT, POD_PLACEMENTS
from gpuplatform.catalogs.node_autoscaling import UPSTREAM_CA as _UPSTREAM_CA
from gpuplatform.catalogs.prices import CURRENCIES
from gpuplatform.catalogs.sharing import CGPU_PLACEMENTS, CGPU_POLICIES, DEFAULT_GPU_TAINT
from gpuplatform.components.clouds import CloudProfile, cloud_for
from gpuplatform.components.clouds.compat import AckFlags
from gpuplatform.components.command_line import split_command_line

PROJECT = "gpu-platform"
SECRET_KEYS = ("kubeconfig", "grafanaAdminPassword")

_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600}


def duration_seconds(value: str) -> int:
    """'15s' -> 15, '1m' -> 60, '1m30s' -> 90."""
    import re

    parts = re.findall(r"(\d+)([smh])", value)
    if not parts or "".join(n + u for n, u in parts) != value:
        raise ValueError(f"'{value}' is not a duration; use e.g. 15s, 1m, 1m30s")
    return sum(int(n) * _DURATION_UNITS[u] for n, u in parts)


def _check_duration(value: str) -> str:
    if value.strip().startswith("-"):
        raise ValueError(f"'{value}' is negative; allowed: a positive duration such as 15s, 1m, 1m30s")
    if duration_seconds(value) <= 0:
        # a 0s scrape or collect interval never samples, a 0s window holds no sample and a 0s relist never
        # rediscovers: each would leave the HPA without a value
        raise ValueError(f"'{value}' is zero; allowed: a positive duration such as 15s, 1m, 1m30s")
    return value


Duration = Annotated[str, AfterValidator(_check_duration)]


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True)


# ---------------------------------------------------------------------------------------------- settings
class Settings(Model):
    """Environment-wide settings (``gpu-platform:settings``)."""

    environment: Literal["dev", "staging", "prod", "local"] = "dev"
    """Drives the secure/available defaults below. Default ``dev``."""
    protect: Optional[bool] = None
    """Pulumi ``protect`` on the cluster and GPU node pools. Default: true in ``prod``, false elsewhere."""
    allow_public_endpoints: bool = False
    """Allow Internet-facing LoadBalancers / API endpoints. Default false: Services are ClusterIP or intranet."""
    namespace: str = "inference"
    """Namespace of the inference workloads. Default ``inference``."""
    create_namespace: bool = True
    """Create the workload namespace (labelled Pod Security ``restricted``), and the root namespace when a workload
    sets ``runAsRoot``. Default true."""
    root_namespace: Optional[str] = None
    """Namespace of the workloads that set ``runAsRoot``, labelled Pod Security ``baseline`` (enforce) and
    ``restricted`` (warn, audit): Pod Security labels apply to a whole namespace, so root pods never lower the
    level of the others. Default ``<namespace>-root``."""

    chart_packages: Optional[str] = None
    """A directory of Helm chart packages (``<chart>-<version>.tgz``, as ``helm pull`` writes them) to install the
    pinned charts from instead of their repositories: for a deployer that cannot reach the chart repositories (an
    air-gapped network) and for ``gpuplatform rehearse``. Default none: each chart's repository."""
    allow_end_of_life_charts: list[str] = Field(default_factory=list)
    """Charts (by name, e.g. ``cert-manager``) whose end-of-life pinned version the stack may install when no
    supported pin covers its Kubernetes version: an explicit opt-in to a release that gets no more security fixes
    upstream (catalogs/versions.py names the date). Default none."""

    @property
    def root_namespace_name(self) -> str:
        return self.root_namespace or f"{self.namespace}-root"

    @property
    def is_prod(self) -> bool:
        return self.environment == "prod"

    @property
    def protect_resources(self) -> bool:
        return self.is_prod if self.protect is None else self.protect


# ---------------------------------------------------------------------------------------------- cluster
class VSwitch(Model):
    zone_id: str
    """Zone of the vSwitch, e.g. ``cn-hangzhou-k``."""
    cidr: str
    """CIDR of the vSwitch inside the VPC."""


class Disk(Model):
    category: Literal["cloud_efficiency", "cloud_ssd", "cloud_essd", "cloud_auto", "cloud_essd_entry"] = "cloud_essd"
    """Disk category. Default ``cloud_essd``."""
    size_gib: int = Field(120, ge=20, le=32768)
    """Size in GiB. Default 120."""


class SystemPool(Model):
    """The node pool of a cluster the package creates that runs everything but GPU work: ACK's system pods
    (CoreDNS, metrics-server), the add-ons' controllers and every chart's pods (Prometheus, the metrics adapter,
    cert-manager, KEDA). GPU pools are tainted and autoscaled, and ACK keeps its system pods off autoscaled nodes,
    so without it those pods have nowhere to run. Untainted, not autoscaled, spread over the cluster's zones."""

    enabled: bool = True
    """Create it. Default true; false only when nodes of your own (a pool another stack manages) take those
    pods."""
    instance_types: list[str] = Field(default_factory=lambda: list(_SYSTEM_TYPES), min_length=1)
    """CPU instance types, tried in order (catalogs/ack.py ``SYSTEM_INSTANCE_TYPES``). Default
    ``[ecs.g7.xlarge, ecs.g6.xlarge]`` (4 vCPU, 16 GiB)."""
    nodes: int = Field(2, ge=1, le=100)
    """Nodes, kept at this count (``desired_size``), spread over the cluster's vSwitch zones. At least 2: ACK's
    CoreDNS runs its replicas on different nodes. Default 2."""
    system_disk: Disk = Field(default_factory=Disk)
    """System disk. Default 120 GiB ESSD."""


class NodeAutoscaling(Model):
    """Cluster-level node autoscaling of a cluster the package creates (``cs.AutoscalingConfig``), sent when a
    node pool is autoscaled: ACK scales node pools only once it is on at the cluster level. Each default is
    ACK's (catalogs/node_autoscaling.py names the source of each); ``simulate`` reads the same values."""

    scaler_type: Literal["cluster-autoscaler", "goatscaler"] = "cluster-autoscaler"
    """``cluster-autoscaler`` (ACK node auto scaling) or ``goatscaler`` (ACK node instant scaling, Kubernetes
    1.23+, expander ``least-waste`` only). Default ``cluster-autoscaler``."""
    scan_interval: Duration = "30s"
    """How often the autoscaler looks for Pending pods and unneeded nodes. Default ``30s``."""
    scale_down_utilization_threshold: float = Field(0.5, gt=0, le=1)
    """A CPU node whose requests are below this share of its allocatable is unneeded. Default 0.5."""
    scale_down_gpu_utilization_threshold: float = Field(0.5, gt=0, le=1)
    """The same for GPU nodes (GPU requests). Default 0.5."""
    scale_down_unneeded_time: Duration = "10m"
    """How long a node stays unneeded before it is removed. Default ``10m``."""
    scale_down_delay_after_add: Duration = "10m"
    """No node is removed this long after a scale-out. Default ``10m``."""
    expander: Literal["least-waste", "random"] = "least-waste"
    """Which pool grows when several could: ``least-waste`` or ``random``. Default ``least-waste``."""
    scale_up_from_zero: bool = True
    """Scale out while the cluster has no ready node. Default true (the provider cannot send false)."""
    max_graceful_termination_sec: int = Field(14400, ge=1, le=86400)
    """Seconds the autoscaler waits for a node's pods to terminate when it removes the node. Default 14400."""

    def argument_values(self) -> dict:
        """``cs.AutoscalingConfig`` keyword arguments, in the form the provider's Read writes back (strings for
        thresholds and durations: the schema's types)."""
        from gpuplatform.catalogs.node_autoscaling import SCALE_DOWN_ENABLED, SETTINGS

        out = {"scale_down_enabled": SCALE_DOWN_ENABLED}
        for key, setting in SETTINGS.items():
            value = getattr(self, _snake(key))
            out[setting.argument] = f"{value:g}" if isinstance(value, float) else value
        return out


def _snake(key: str) -> str:
    import re

    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


class AckManagedCluster(Model):
    """Create an ACK managed cluster with its VPC and vSwitches."""

    kind: Literal["ack-managed"]
    region: str
    """Alibaba Cloud region, e.g. ``cn-hangzhou``. Every Alibaba resource and lookup of the stack goes to this
    region (one explicit provider; a stack file whose ``alicloud:region`` names another region is refused)."""
    kubernetes_version: str
    """The ACK version the cluster is created with, in ACK's own form ``X.Y.Z-aliyun.N`` (e.g. ``1.35.2-aliyun.1``):
    the form the provider reads back, so any other spelling would show a change on every run. Raise it to upgrade
    the cluster. A cluster ACK upgraded outside the stack (console, auto or end-of-life upgrade) is never sent back:
    a lower version here is kept as it runs, with a warning (same minor) or an error (an older minor, which the
    chart pins are chosen for)."""
    name: Optional[str] = None
    """Cluster name (1-63 letters, digits, '-' or '_'). Default: ``gpu-platform-<stack>``."""
    cluster_spec: Literal["ack.pro.small", "ack.standard"] = "ack.pro.small"
    """ACK cluster spec. Default ``ack.pro.small`` (Pro: needed for cGPU and managed node pools)."""
    vpc_cidr: str = "192.168.0.0/16"
    """VPC CIDR. Default ``192.168.0.0/16``."""
    vswitches: list[VSwitch] = Field(min_length=1)
    """vSwitches for control plane and nodes, inside the VPC CIDR, zones of ``region`` (at least one; two zones
    recommended)."""
    network_plugin: Literal["flannel", "terway"] = "flannel"
    """Network plugin, fixed at creation: ``flannel`` (pods get ``podCidr`` addresses) or ``terway`` (pods get
    addresses from ``podVswitches`` in the VPC). Default ``flannel``."""
    pod_cidr: Optional[str] = None
    """Flannel pod CIDR; must not overlap the VPC or the service CIDR. Only with flannel. Default
    ``172.20.0.0/16``."""
    pod_vswitches: list[VSwitch] = Field(default_factory=list)
    """Terway pod vSwitches inside the VPC CIDR, one in each zone of ``vswitches``. Required with terway, not
    allowed with flannel. Default none."""
    service_cidr: str = "172.21.0.0/20"
    """Service CIDR; must not overlap the VPC or pod CIDR. Default ``172.21.0.0/20``."""
    credential: Literal["ack-kubeconfig", "ack-ram-tool"] = "ack-kubeconfig"
    """How ``pulumi`` authenticates to the cluster. ``ack-kubeconfig``: your long-lived ACK kubeconfig (3 years),
    stored as a secret in the state. ``ack-ram-tool``: a kubeconfig whose user runs the ack-ram-tool credential
    plugin, so the state holds no client credential (ack-ram-tool and Alibaba credentials needed wherever
    ``pulumi`` runs). Default ``ack-kubeconfig``."""
    public_api_endpoint: bool = True
    """Public API server SLB (an Internet endpoint). Default true. False: no public endpoint, and the kubeconfig
    the stack uses points at the API server's intranet endpoint, so ``pulumi`` must run inside the VPC (or a
    network connected to it). Fixed at creation (the provider sends it only when it creates the cluster): the cluster
    is tagged with it and a later run stating the other value is refused; a private cluster that reports an Internet
    endpoint (ACK's default: the provider cannot send false) fails the run."""
    system_pool: SystemPool = Field(default_factory=lambda: SystemPool())
    """The pool for system pods, add-ons and charts. Default: 2 x ``ecs.g7.xlarge`` (or ``ecs.g6.xlarge``)."""
    node_autoscaling: NodeAutoscaling = Field(default_factory=lambda: NodeAutoscaling())
    """Cluster-level node autoscaling, created when a node pool is autoscaled. Default: ACK's defaults."""
    proxy_mode: Optional[Literal["ipvs", "iptables"]] = None
    """kube-proxy mode a new cluster is created with; never changed afterwards (ForceNew: a change would replace
    the cluster, so it is ignored once the cluster exists). Default: ACK's for the version (catalogs/ack.py
    ``default_proxy_mode``)."""
    pod_placement: Literal[POD_PLACEMENTS] = DEFAULT_POD_PLACEMENT["ack-managed"]  # type: ignore[valid-type]
    """How the cluster's kube-scheduler places a pod among the nodes it fits, as ``simulate`` models it (nothing is
    sent): ``spread`` the node with the fewest of the workload's pods, ``binpack`` the fullest node first. Default
    ``spread``, ACK's kube-scheduler default; state ``binpack`` if the kube-scheduler add-on's bin-packing option
    ("Preferably Use Bin Packing During Pod Scheduling") is on in your cluster. A scale-in then leaves nodes
    part-used (spread) or empties them (binpack), which is where its node-hours differ."""

    @property
    def professional(self) -> bool:
        from gpuplatform.catalogs.ack import PRO_SPECS

        return self.cluster_spec in PRO_SPECS

    @property
    def effective_pod_cidr(self) -> Optional[str]:
        from gpuplatform.catalogs.ack import DEFAULT_POD_CIDR

        return (self.pod_cidr or DEFAULT_POD_CIDR) if self.network_plugin == "flannel" else None


class AckExistingCluster(Model):
    """Adopt an existing ACK cluster by id: no cluster resource is created."""

    kind: Literal["ack-existing"]
    region: str
    """Alibaba Cloud region of the cluster."""
    kubernetes_version: str
    """Kubernetes version the cluster runs."""
    cluster_id: str
    """ACK cluster id (``c…``)."""
    vswitch_ids: list[str] = Field(min_length=1)
    """vSwitch ids new GPU node pools are placed in."""
    credential: Literal["ack-kubeconfig", "ack-ram-tool"] = "ack-kubeconfig"
    """How ``pulumi`` authenticates to the cluster. ``ack-kubeconfig``: your long-lived ACK kubeconfig (3 years),
    stored as a secret in the state. ``ack-ram-tool``: a kubeconfig whose user runs the ack-ram-tool credential
    plugin, so the state holds no client credential (ack-ram-tool and Alibaba credentials needed wherever
    ``pulumi`` runs). Default ``ack-kubeconfig``."""
    professional: bool = True
    """Whether the cluster is ACK Pro; false for a dedicated cluster, where cGPU uses the legacy ack-cgpu component
    and the cgpu=true label. Default true."""
    pod_placement: Literal[POD_PLACEMENTS] = DEFAULT_POD_PLACEMENT["ack-existing"]  # type: ignore[valid-type]
    """How the cluster's kube-scheduler places a pod among the nodes it fits, as ``simulate`` models it (nothing is
    sent): ``spread`` the node with the fewest of the workload's pods, ``binpack`` the fullest node first. Default
    ``spread``, ACK's kube-scheduler default; state ``binpack`` if the kube-scheduler add-on's bin-packing option
    ("Preferably Use Bin Packing During Pod Scheduling") is on in your cluster. A scale-in then leaves nodes
    part-used (spread) or empties them (binpack), which is where its node-hours differ."""


class ClusterNodeAutoscaler(Model):
    """The timing of the node autoscaler a ``kubeconfig`` cluster runs itself: the package neither deploys nor
    configures one there, so nothing is sent; ``simulate`` models cluster-autoscaler with these figures (its
    flags ``--scan-interval``, ``--scale-down-unneeded-time``, ``--scale-down-delay-after-add``). State what your
    cluster's autoscaler runs with. Each default is the upstream cluster-autoscaler's (catalogs/node_autoscaling.py
    ``UPSTREAM_CA``). On a cluster of kind ``ack-managed`` the same keys are ``cluster.nodeAutoscaling`` of ACK's
    autoscaler, which the stack sends."""

    scan_interval: Duration = _UPSTREAM_CA["scanInterval"]
    """How often the autoscaler looks for Pending pods and unneeded nodes. Default ``10s``."""
    scale_down_unneeded_time: Duration = _UPSTREAM_CA["scaleDownUnneededTime"]
    """How long a node stays unneeded (empty, for the GPU pools ``simulate`` models) before it is removed: where
    the node-hours of a scale-in come from. Default ``10m``."""
    scale_down_delay_after_add: Duration = _UPSTREAM_CA["scaleDownDelayAfterAdd"]
    """No node is removed this long after a scale-out. Default ``10m``."""


class KubeconfigCluster(Model):
    """Any existing Kubernetes cluster reached by kubeconfig; no Alibaba resources at all."""

    kind: Literal["kubeconfig"]
    kubernetes_version: str
    """Kubernetes version the cluster runs."""
    kubeconfig_path: Optional[str] = None
    """Path to a kubeconfig. Default: the secret ``gpu-platform:kubeconfig``, else ``$KUBECONFIG``."""
    context: Optional[str] = None
    """kubeconfig context. Default: the current context."""
    simulate_gpus: bool = False
    """Install run-ai/fake-gpu-operator with a topology derived from the node pools, so the autoscaling loop
    runs on a cluster without GPUs. Default false."""
    node_autoscaling: ClusterNodeAutoscaler = Field(default_factory=lambda: ClusterNodeAutoscaler())
    """The cluster's own node autoscaler, as ``simulate`` models it (nothing is deployed or sent). Default: the
    upstream cluster-autoscaler's flag defaults."""
    pod_placement: Literal[POD_PLACEMENTS] = DEFAULT_POD_PLACEMENT["kubeconfig"]  # type: ignore[valid-type]
    """How the cluster's kube-scheduler places a pod among the nodes it fits, as ``simulate`` models it (nothing is
    sent): ``spread`` the node with the fewest of the workload's pods, ``binpack`` the fullest node first. Default
    ``spread``, the upstream kube-scheduler's default profile; state ``binpack`` if your scheduler scores for it
    (e.g. NodeResourcesFit with the MostAllocated strategy over the GPU resource)."""


Cluster = Annotated[Union[AckManagedCluster, AckExistingCluster, KubeconfigCluster], Field(discriminator="kind")]


# ---------------------------------------------------------------------------------------------- node pools
class ExclusiveSharing(Model):
    mode: Literal["exclusive"]


class CgpuSharing(Model):
    mode: Literal["cgpu"]
    policy: Literal[CGPU_POLICIES] = "cgpu"  # type: ignore[valid-type]
    """``cgpu`` (isolated memory), ``core_mem`` (isolated memory and compute), ``share`` (no isolation).
    Default ``cgpu``."""
    placement: Literal[CGPU_PLACEMENTS] = "binpack"  # type: ignore[valid-type]
    """How pods are packed onto cards. Default ``binpack``."""
    legacy_label: bool = False
    """Also label nodes ``cgpu=true`` (dedicated clusters running the legacy ack-cgpu component). Default false."""


class MigLayoutEntry(Model):
    """How some GPUs of each node are partitioned: one entry of a mig-parted config."""

    devices: list[int]
    """GPU indices on the node (as ``nvidia-smi`` numbers them), e.g. ``[0]``."""
    profiles: dict[str, int] = Field(default_factory=dict)
    """MIG instances per profile on each of these GPUs, e.g. ``{1g.5gb: 7}``. Default none: MIG disabled, the GPUs
    are served whole as ``nvidia.com/gpu``."""


class MigSharing(Model):
    mode: Literal["mig"]
    profile: Optional[str] = None
    """MIG profile applied to every GPU of the pool, e.g. ``1g.5gb``. Default none; set it or ``layout``."""
    layout: list[MigLayoutEntry] = Field(default_factory=list)
    """Per-GPU layout instead of ``profile``: each GPU index of a node in exactly one entry, e.g. GPU 0 as seven
    ``1g.5gb`` instances next to a whole GPU 1. Needs the ``mixed`` strategy and the GPU Operator's mig-manager
    (clusters of kind ``kubeconfig``). Default none."""
    config_name: Optional[str] = None
    """Name of the mig-parted config the layout becomes (the nodes' ``nvidia.com/mig.config`` label value).
    Default ``gpuplatform-<pool name>``; only with ``layout``."""
    strategy: Literal["single", "mixed"] = "mixed"
    """Device plugin MIG strategy: ``mixed`` exposes ``nvidia.com/mig-<profile>``, ``single`` exposes
    ``nvidia.com/gpu``. Default ``mixed``."""


Sharing = Annotated[Union[ExclusiveSharing, CgpuSharing, MigSharing], Field(discriminator="mode")]


class Taint(Model):
    key: str
    value: Optional[str] = None
    """Taint value. Default none."""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = "NoSchedule"
    """Taint effect. Default ``NoSchedule``."""


class CustomGpu(Model):
    """A GPU model the catalog (catalogs/gpus.py) does not have, described by the stack. Its facts are the stack's
    own statement: nothing checks them against a source, and ``plan`` says so on every run."""

    name: str
    """What the stack calls the card, e.g. the model an instance family carries. Not a catalog model's name."""
    memory_gib: int = Field(ge=1, le=4096)
    """GPU memory per card in whole GiB as the driver reports it (nvidia-smi total / 1024, rounded down): pool
    capacity and cGPU ``memoryGib`` requests are checked against it."""
    sharing: list[Literal["exclusive", "cgpu"]] = Field(default_factory=lambda: ["exclusive"], min_length=1)
    """Sharing modes the card runs: ``exclusive`` (whole GPUs) and/or ``cgpu`` (Alibaba cGPU). MIG is not offered:
    its profiles and placements per model come from the catalog. Default ``[exclusive]``."""


def _check_price_source(value: str) -> str:
    if not value.strip():
        raise ValueError("is empty; allowed: where the price comes from, e.g. 'contract 2026-07, cn-beijing'")
    return value.strip()


def _check_waker_image(value: Optional[str]) -> Optional[str]:
    from gpuplatform.catalogs.images import mutable_tag
    if value is None:
        return None
    ref = value.strip()
    name, _, digest = ref.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = last.partition(":")[2] if ":" in last else ""
    if not ref or " " in ref:
        raise ValueError(f"{value!r} is no image reference; allowed: an image with a version tag or a digest, "
                         "e.g. registry.example.com/platform/warm-set-waker:1.0.0")
    if not digest and (not tag or mutable_tag(tag)):
        raise ValueError(f"{value!r} is not pinned (a node pulling later would run other code); allowed: a "
                         "version tag or a digest, e.g. registry.example.com/platform/warm-set-waker:1.0.0")
    return ref


class Price(Model):
    """A pool's price stated in the stack: a negotiated price, or the list price of a region the catalog
    (catalogs/prices.py) lacks. ``plan`` and ``simulate --compare-pools`` use it instead of the catalog and show it
    as "stated in the stack: <source>"."""

    per_hour: float = Field(gt=0)
    """Price of one node (one instance of the pool's instance types) per hour, compute only. Required."""
    currency: Literal[CURRENCIES] = CURRENCIES[0]  # type: ignore[valid-type]
    """Currency of ``perHour``: the catalog's (catalogs/prices.py ``CURRENCIES``), so costs add up. Default USD."""
    source: Annotated[str, AfterValidator(_check_price_source)]
    """Where the figure comes from (a contract, a quote, the console's calculator for a region and date).
    Required, non-empty: a price nobody can trace is not one to plan with."""


class WarmSetWaker(Model):
    """The controller that wakes a sleeping replica when its model needs capacity and puts it back to sleep once the
    model's own replicas serve (docs/model-startup.md, "Who wakes a sleeping replica": what it must do, and the
    objects and permissions the package renders for it)."""
    image: Annotated[Optional[str], AfterValidator(_check_waker_image)] = None
    """A waker of your own in place of the package's, pinned by a version tag or a digest; it must do what the docs
    state, and runs its image's entry point. Default: the package's waker (components/warm_set_waker.py, shipped in
    the waker's ConfigMap) on a pinned Python image (catalogs/images.py ``PYTHON_IMAGE``)."""


class WarmSet(Model):
    """Replicas of several models that sleep on the pool, a model's replica woken when it needs capacity
    (docs/model-startup.md, "Sleeping replicas"): shared headroom that wakes in seconds instead of a cold start."""
    models: list[str] = Field(min_length=1)
    """Workloads on this pool whose replicas sleep in the set: each a vLLM server of a release with sleep mode
    (catalogs/servers.py ``WARM_SET_SERVERS``), with ``model`` stated (its weights size the host memory)."""
    gpus: int = Field(1, ge=1, le=1000)
    """GPUs of the pool the set holds; on each, one sleeping replica of every model, of which one at a time
    wakes. Default 1."""
    waker: WarmSetWaker = Field(default_factory=WarmSetWaker)
    """Who wakes the sleeping replicas. Default: the package's waker."""
    sleep_level: Literal[1, 2] = 1
    """vLLM's sleep level: 1 keeps the weights in host memory (wakes by a copy, seconds), 2 discards them (wakes by
    reading them again, as slow as the weights' read). Default 1."""


class NodePool(Model):
    name: str
    """Pool name (a Kubernetes label value and part of resource names)."""
    instance_types: list[str] = Field(default_factory=list)
    """ECS GPU instance types, tried in order (required on ACK). All must carry the same GPU model. Default none."""
    gpu_model: Optional[str] = None
    """GPU model for pools of an existing non-ACK cluster (e.g. ``T4``); ignored when instance types are set.
    Default none."""
    gpus_per_node: Optional[int] = Field(None, ge=1, le=16)
    """GPUs per node for pools of an existing non-ACK cluster, or of instance types outside the catalog (with
    ``customGpu``). Default none."""
    custom_gpu: Optional[CustomGpu] = None
    """A GPU model outside the catalog, described by the stack (memory, sharing modes); the pool's instance types
    may then be outside the catalog too, with ``gpusPerNode`` required. Default none: the catalog's models only."""
    autoscaling: bool = True
    """Cluster-autoscaled pool (``scaling_config`` type ``gpu``). Default true."""
    min_nodes: int = Field(0, ge=0, le=1000)
    """Autoscaling lower bound. Default 0."""
    max_nodes: int = Field(1, ge=0, le=1000)
    """Autoscaling upper bound, and the size capacity checks assume. Default 1."""
    desired_nodes: Optional[int] = Field(None, ge=0, le=1000)
    """Fixed size when ``autoscaling`` is false (required then). Default none."""
    sharing: Sharing = Field(default_factory=lambda: ExclusiveSharing(mode="exclusive"))
    """GPU sharing mode. Default exclusive whole GPUs."""
    warm_set: Optional[WarmSet] = None
    """Sleeping replicas of several models, shared headroom on this pool (docs/model-startup.md, "Sleeping
    replicas"). Default none."""
    labels: dict[str, str] = Field(default_factory=dict)
    """Extra node labels (not the sharing-mode labels, which ``sharing`` sets). Default none."""
    taints: list[Taint] = Field(default_factory=lambda: [Taint(**DEFAULT_GPU_TAINT)])
    """Node taints. Default the GPU taint ``nvidia.com/gpu=present:NoSchedule``."""
    system_disk: Disk = Field(default_factory=Disk)
    """System disk. Default 120 GiB ESSD."""
    data_disks: list[Disk] = Field(default_factory=list)
    """Data disks (images and model caches). Default none."""
    image_type: str = "AliyunLinux3"
    """Node OS image. Default ``AliyunLinux3``."""
    auto_repair: Optional[bool] = None
    """ACK managed node pool (auto repair by ACK; Pro clusters only). Default: true on ACK Pro, false on other
    clusters."""
    key_pair: Optional[str] = None
    """ECS key pair for node login. Default none (no login)."""
    price: Optional[Price] = None
    """The price of one node per hour with its source, used by ``plan``'s cost columns and ``simulate
    --compare-pools`` instead of the catalog's list price. Default none: the catalog's (catalogs/prices.py)."""


# ---------------------------------------------------------------------------------------------- monitoring
class Intervals(Model):
    exporter_collect: Duration = "15s"
    """GPU exporter collection interval (dcgm-exporter ``DCGM_EXPORTER_INTERVAL``). Default 15s."""
    scrape: Duration = "15s"
    """Prometheus scrape interval for exporters and inference pods. Default 15s."""
    rule_window: Duration = "30s"
    """Range window of windowed adapter queries (Triton queue time). Must be >= 2 x scrape. Default 30s."""
    adapter_relist: Duration = "1m"
    """Adapter series re-discovery interval. Must be >= scrape. Default 1m."""
    hpa_sync: Duration = "15s"
    """HPA controller sync period of the cluster (not set by us; used for latency estimates). Default 15s."""


class HelmValues(Model):
    """Escape hatch: values merged over ours for each release we install."""

    kube_prometheus_stack: dict = Field(default_factory=dict)
    """Values merged over ours for kube-prometheus-stack. Default {}."""
    prometheus_adapter: dict = Field(default_factory=dict)
    """Values merged over ours for prometheus-adapter. Default {}."""
    ack_metrics_adapter: dict = Field(default_factory=dict)
    """Values merged over ours for ack-alibaba-cloud-metrics-adapter. Default {}."""
    dcgm_exporter: dict = Field(default_factory=dict)
    """Values merged over ours for dcgm-exporter. Default {}."""
    gpu_operator: dict = Field(default_factory=dict)
    """Values merged over ours for the NVIDIA GPU Operator. Default {}."""
    keda: dict = Field(default_factory=dict)
    """Values merged over ours for KEDA. Default {}."""


class Monitoring(Model):
    backend: Literal["arms", "self-hosted"] = "self-hosted"
    """``arms``: ACK managed Prometheus; ``self-hosted``: kube-prometheus-stack. Default self-hosted."""
    gpu_exporter: Optional[Literal["ack", "dcgm", "ack-legacy"]] = None
    """GPU metrics source. Default ``ack`` with arms, ``dcgm`` with self-hosted. ``ack-legacy``: the 2020
    gpu_exporter of ack-prometheus-operator, assumed already running."""
    adapter: Optional[Literal["ack-alibaba-cloud-metrics-adapter", "prometheus-adapter"]] = None
    """Custom metrics adapter. Default the ACK adapter with arms, prometheus-adapter with self-hosted."""
    prometheus_url: Optional[str] = None
    """Prometheus HTTP API the adapter (and KEDA) queries, a complete ``http(s)://host:port[/path]`` URL. With
    ``self-hosted`` it names an existing Prometheus (e.g. ack-prometheus-operator's), and no kube-prometheus-stack
    is installed: that Prometheus must scrape the exporters, and its operator serves the monitor CRDs. Default:
    the ARMS intranet URL, or the kube-prometheus-stack this stack installs."""
    intervals: Intervals = Field(default_factory=Intervals)
    """Collection, scrape, rule and relist intervals (validated to agree). Default: 15s/15s/30s/1m."""
    ack_guide_rules: bool = False
    """Serve every ACK GPU exporter metric of the catalog, pod metrics also per node, so ``kubectl get --raw
    /apis/custom.metrics.k8s.io/v1beta1`` lists what the ACK guide shows (its five rules), not only the metrics
    the HPAs use. Needs ``gpuExporter: ack``. Default false."""
    alerts: bool = True
    """Install the PrometheusRule with autoscaling and GPU alerts. Default true."""
    dashboard: bool = True
    """Install the Grafana dashboard ConfigMap (self-hosted). Default true."""
    adapter_replicas: Optional[int] = Field(None, ge=1, le=5)
    """Adapter replicas. Default 2 in prod (with a PodDisruptionBudget), 1 elsewhere."""
    helm_values: HelmValues = Field(default_factory=HelmValues)
    """Per-release values overrides (escape hatch). Default none."""
    metrics: Optional[list[str]] = None
    """Catalog metrics the custom metrics adapter serves (``gpu_util``, ``triton_queue_time``, ...), GPU metrics
    from ``gpuExporter`` and app metrics from their server. Default: the metrics the stack's HPAs use; a
    GpuMonitoring built on its own serves every GPU metric of its exporter."""
    keda: Optional[bool] = None
    """Install KEDA (self-hosted). Default: when a workload uses autoscaler ``keda``."""
    adopt_adapter_release: bool = False
    """An ``ack-alibaba-cloud-metrics-adapter`` Helm release is already installed in ``kube-system`` (the way ACK's
    guides install it from the App Catalog): import it into the stack instead of installing a second release that
    would collide with it. The import leaves the release as it is; set this back to false after that first
    ``pulumi up`` and the next one applies the stack's values and rules. Default false."""

    @property
    def exporter(self) -> str:
        return self.gpu_exporter or ("ack" if self.backend == "arms" else "dcgm")

    def installs_keda(self, workloads) -> bool:
        return self.keda if self.keda is not None else any(w.autoscaling.autoscaler == "keda" for w in workloads)

    @property
    def adapter_kind(self) -> str:
        return self.adapter or ("ack-alibaba-cloud-metrics-adapter" if self.backend == "arms"
                                else "prometheus-adapter")


# ---------------------------------------------------------------------------------------------- workloads
DEFAULT_METRICS_PATH = "/metrics"


class Port(Model):
    name: str
    """Port name (IANA_SVC_NAME: lowercase, <= 15 chars)."""
    container_port: int = Field(ge=1, le=65535)
    """Port the container listens on."""
    service_port: Optional[int] = Field(None, ge=1, le=65535)
    """Port the Service (and an ingress) exposes it on, e.g. 80 for a notebook listening on 8888. Default: the
    container port."""
    protocol: Literal["http", "grpc", "metrics"] = "http"
    """What the port speaks: ``http``/``grpc`` are exposed by the Service; ``metrics`` is scraped only. Default
    ``http``."""
    metrics_path: Optional[str] = None
    """HTTP path at which this port serves the server's Prometheus metrics. On an ``http`` serving port it makes
    that port the one the PodMonitor scrapes (vLLM, SGLang and TGI serve ``/metrics`` on their API port); on a
    ``metrics`` port it replaces ``/metrics``. Default: none on a serving port, ``/metrics`` on a metrics port."""

    @property
    def scrape_path(self) -> Optional[str]:
        """Path the PodMonitor scrapes on this port, or None when the port serves no metrics."""
        if self.protocol == "metrics":
            return self.metrics_path or DEFAULT_METRICS_PATH
        return self.metrics_path


class GpuRequestSpec(Model):
    count: Optional[int] = Field(None, ge=1, le=16)
    """Whole GPUs (exclusive pools) or MIG instances (MIG pools) per replica. Default none (required on those
    pools)."""
    memory_gib: Optional[int] = Field(None, ge=1)
    """cGPU memory per replica in GiB (cGPU pools). Default none (required on cGPU pools)."""
    core_percent: Optional[int] = Field(None, ge=1, le=100)
    """cGPU compute share per replica (``core_mem`` pools only). Default none."""
    mig_profile: Optional[str] = None
    """On a MIG pool with a per-GPU ``layout``: the profile whose instances ``count`` asks for, or ``whole`` for
    MIG-disabled GPUs. Default: the pool's only kind of device (required when the layout offers several)."""


class NfsVolume(Model):
    server: str
    path: str
    read_only: bool = True
    """Mount the export read-only. Default true."""


class FluidCredentials(Model):
    """A Secret holding the OSS AccessKey pair, read by Fluid through the Dataset's ``encryptOptions``: the
    credentials never appear in the stack or the rendered objects. The Secret lives in the cache's namespace
    (``<workload>-fluid``), where the Dataset that reads OSS is."""
    secret_name: str
    """Name of the Secret."""
    access_key_id_key: str = "fs.oss.accessKeyId"
    """Key of the AccessKey ID in the Secret. Default ``fs.oss.accessKeyId`` (ACK's Fluid examples)."""
    access_key_secret_key: str = "fs.oss.accessKeySecret"
    """Key of the AccessKey secret in the Secret. Default ``fs.oss.accessKeySecret``."""


class FluidVolume(Model):
    """Model weights in an OSS bucket, served through a Fluid dataset cache (ACK's ``ack-fluid``, JindoRuntime):
    the first replica's read fills the cache, later replicas read it from the cache workers on the pool's nodes
    (docs/model-startup.md, "A node-local copy of the weights")."""
    mount_point: str
    """The OSS directory holding the model, ``oss://<bucket>/<path>``."""
    endpoint: str
    """OSS endpoint, e.g. ``oss-cn-hangzhou-internal.aliyuncs.com`` (the region's VPC endpoint)."""
    credentials: FluidCredentials
    """The Secret with the OSS AccessKey pair (by reference)."""
    cache_medium: Literal["MEM", "SSD"] = "MEM"
    """Where each cache worker keeps its blocks: ``MEM`` (the node's memory, ``/dev/shm``) or ``SSD`` (the node's
    disk, an emptyDir). Default MEM."""
    cache_quota_gib: float = Field(gt=0)
    """Cache each worker may hold, in GiB. The workers together must hold the weights (``model.sizeGib``); a MEM
    quota comes out of the node's memory, beside the replicas."""
    cache_workers: int = Field(1, ge=1)
    """Cache workers (JindoRuntime ``replicas``), one per node of the workload's pool; at most the pool's
    ``minNodes``, so no worker waits for a node (or makes the autoscaler add a GPU node for it). Default 1."""


class Volume(Model):
    name: str
    mount_path: str
    read_only: bool = True
    """Mount read-only. Default true (a model repository)."""
    nfs: Optional[NfsVolume] = None
    """NFS export (as in the Triton article). Exactly one of ``nfs``/``pvc``/``fluid`` is required. Default none."""
    pvc: Optional[str] = None
    """Existing PersistentVolumeClaim name. Default none."""
    fluid: Optional[FluidVolume] = None
    """An OSS directory behind a Fluid dataset cache (ACK's ``ack-fluid``, a prerequisite); always mounted
    read-only. Default none."""


class SecretRef(Model):
    secret_name: str
    key: str


class Probes(Model):
    port: str
    """Name of the container port the probes hit."""
    readiness_path: Optional[str] = None
    """HTTP path of the readiness probe. Default: the ``server``'s ready path (catalogs/servers.py: ``/health``,
    Triton's ``/v2/health/ready``), ``/`` for a workload that names no server."""
    liveness_path: Optional[str] = None
    """HTTP path of the liveness probe. Default: the ``server``'s live path, ``/`` without a server."""
    startup_path: Optional[str] = None
    """Startup probe path. Default: the readiness path."""
    startup_timeout_seconds: Optional[int] = Field(None, ge=10, le=3600)
    """How long server start and model loading may take before the kubelet restarts the container (the startup
    probe's budget). Must cover the expected load of ``model``. Default: sized from ``model`` (a safety factor
    times the expected load, docs/model-startup.md), else 600."""


class ModelWeights(Model):
    """Where a workload's model weights come from and how big they are: sizes the startup probe, checks that the
    weights fit the GPU memory of a replica and sets the simulated load time (docs/model-startup.md)."""

    size_gib: float = Field(gt=0, le=4096)
    """Size of the weights in GiB as stored (the checkpoint files), e.g. 15 for a 7B model in bf16."""
    source: Literal["volume", "image", "download"]
    """``volume``: read from one of the workload's ``volumes`` (a PVC, an NFS export or a Fluid cache of an OSS
    directory); ``image``: baked into the
    container image, which pulls that much longer; ``download``: the server fetches them at start (e.g. from a
    model hub) into a writable path."""
    volume: Optional[str] = None
    """With ``source: volume``: the name of the workload volume holding the weights. Default: the workload's only
    volume (required when it has several)."""
    load_mib_per_second: Optional[float] = Field(None, gt=0)
    """Measured read rate of the weights in MiB/s, replacing the catalog's estimate for the source
    (catalogs/timeouts.py ``MODEL_LOAD_RATES``; ``gpuplatform verify`` ``model.load-time`` shows what the cluster
    achieves). Default: the estimate."""


class Resources(Model):
    cpu: str = "1"
    """CPU request and limit. Default 1."""
    memory: str = "4Gi"
    """Memory request and limit. Default 4Gi."""


class MetricTarget(Model):
    metric: str
    """Logical metric name from the catalog (``gpuplatform schema`` lists them), e.g. ``gpu_sm_util``."""
    target: Optional[float] = None
    """Target average value per pod, in the metric's catalog unit (percent 0-100, ratio 0-1, MiB, microseconds,
    requests; docs/configuration.md lists each metric's). Bounded units must leave room above the target for the HPA's 10%
    tolerance (percent <= 90.909, ratio <= 0.909); Kubernetes keeps thousandths. Default: derived from the
    workload's ``slo`` objective on the same metric (``below`` / (1.1 x 1.25), catalogs/metrics.py
    ``slo_derived_target``); required when the SLO has no objective on this metric."""
    _derived: bool = PrivateAttr(default=False)

    @property
    def derived(self) -> bool:
        """The target was derived from the workload's SLO, not stated."""
        return self._derived
    unit: Optional[str] = None
    """The unit ``target`` is written in (``percent``, ``ratio``, ``MiB``, ``us``, ...), checked against the unit the
    metrics adapter serves the metric in: a target written as a ratio against a metric served in percent would
    scale at 1/100 of the intended load. Default: the served unit."""


class ScalingPolicy(Model):
    type: Literal["Pods", "Percent"]
    value: int = Field(ge=1)
    period_seconds: int


class ScalingRules(Model):
    stabilization_window_seconds: Optional[int] = None
    """Stabilization window (0..3600). Default: the platform default for the direction (scale-down: 300 s raised to
    the startup budget, which is also its floor)."""
    select_policy: Literal["Max", "Min", "Disabled"] = "Max"
    """Which policy wins: ``Max``, ``Min`` or ``Disabled``. Default ``Max``."""
    policies: list[ScalingPolicy] = Field(default_factory=list)
    """Rate limits (``Pods``/``Percent`` per ``periodSeconds`` 1..1800). Default: the platform default."""


class Behavior(Model):
    scale_up: Optional[ScalingRules] = None
    """Overrides the scale-up defaults (no window, +100% or +4 pods per 15s)."""
    scale_down: Optional[ScalingRules] = None
    """Overrides the scale-down defaults (300s window raised to the startup budget, -1 pod per 60s). Its window is
    never below the startup budget (the scale-in floor)."""


class Activation(Model):
    """What wakes a workload KEDA scaled to zero: a signal that exists while no pod of it runs. A pod-sourced
    metric (GPU utilization, Triton queue time) has no series at zero replicas, so it can never wake it."""

    source: Literal["ingress", "prometheus"]
    """``ingress``: requests per second the ingress-nginx controller counts for this workload's ingress hosts
    (``nginx_ingress_controller_requests``; it counts requests that find no ready pod too). ``prometheus``:
    ``query`` over series of another job, such as a queue's length from its exporter."""
    query: Optional[str] = None
    """PromQL returning one value (``prometheus`` only), e.g. ``sum(redis_list_length{job="redis",key="jobs"})``.
    Default none."""
    target: float = Field(gt=0)
    """Value per replica KEDA's HPA also scales on from 1 replica up (requests per second for ``ingress``)."""
    activation_threshold: float = Field(0.0, ge=0)
    """Wake from zero when the value exceeds this (KEDA ``activationThreshold``). Default 0: any request."""


class Autoscaling(Model):
    autoscaler: Literal["hpa", "keda", "none"] = "hpa"
    """``hpa``: a HorizontalPodAutoscaler on custom metrics; ``keda``: a KEDA ScaledObject (scale to zero);
    ``none``: no autoscaler, the workload's fixed ``replicas`` (what a workload without an ``autoscaling`` block
    gets). Default ``hpa``."""
    min_replicas: int = Field(1, ge=0)
    """Lower bound (0 only with KEDA). Default 1."""
    max_replicas: int = Field(1, ge=1)
    """Upper bound; checked against the pool's capacity. Default 1."""
    metrics: list[MetricTarget] = Field(default_factory=list)
    """One or more metrics (required with ``hpa`` and ``keda``); the HPA follows the largest recommendation.
    Default none."""
    hpa_api_version: Optional[Literal["autoscaling/v2", "autoscaling/v2beta2", "autoscaling/v2beta1"]] = None
    """HPA apiVersion. Default: ``autoscaling/v2`` from Kubernetes 1.23, ``autoscaling/v2beta2`` before (served
    1.12 to 1.25, same metric shape and ``behavior``). ``autoscaling/v2beta1`` (served up to 1.24, no
    ``behavior``) only when asked for here, e.g. to match the 2020 ACK guide's objects."""
    activation: Optional[Activation] = None
    """Required with ``minReplicas: 0`` (KEDA): the trigger that wakes the workload from zero. Default none."""
    behavior: Optional[Behavior] = None
    """Scaling behavior overrides (autoscaling/v2 and v2beta2; v2beta1 has none). Default: fast scale-up, cautious scale-down (see
    workload_manifests)."""
    warm_replicas: int = Field(0, ge=0, le=1000)
    """Warm capacity: placeholder pods, each sized exactly like one replica (same GPU, CPU and memory requests, same
    node selector and tolerations), that keep that many replicas' room provisioned on the pool. They run ``pause``
    at a negative priority, so a real replica that finds no room preempts one at once instead of waiting for a new
    node; the evicted placeholder then goes Pending and the cluster autoscaler adds a node for it (the
    cluster-autoscaler FAQ's overprovisioning pattern, docs/simulate.md "Warm capacity"). They hold their GPUs:
    ``plan`` shows what they cost idle. With KEDA and ``minReplicas: 0`` they keep a node ready while the workload
    sleeps. The pool's ``maxNodes`` must hold ``maxReplicas`` plus these. Default 0 (none)."""
    cooldown_period_seconds: Optional[int] = Field(None, ge=0, le=86400)
    """KEDA only: seconds after the last active trigger before KEDA scales a ``minReplicas: 0`` workload to zero
    (ScaledObject ``cooldownPeriod``; unused from 1 replica up, where ``behavior.scaleDown`` governs). Never below
    the startup budget (the scale-in floor). Default: KEDA's 300, raised to the startup budget."""


def window_seconds(value: str) -> int:
    """An SLO's compliance window in seconds, read as Prometheus reads a range (``28d`` -> 2419200, ``1w``,
    ``12h``): the alert rules put the same text into their queries (catalogs/burn_rates.py)."""
    try:
        return int(prometheus_duration_seconds(value))
    except ValueError:
        raise ValueError(f"'{value}' is not a duration; use e.g. 28d, 1w, 12h") from None


def _check_window(value: str) -> str:
    if window_seconds(value) < 60:
        raise ValueError(f"'{value}' is shorter than a minute; allowed: a duration such as 28d, 1w, 12h")
    return value


class SloObjective(Model):
    """One objective of an SLO: a minute is bad when ``metric`` (as the metrics adapter computes it for the
    workload: the query its HPA would use, catalogs/metrics.py) is above ``below``."""

    metric: str
    """Logical metric name from the catalog that this workload's server exports at its image version (e.g.
    ``vllm_ttft_p90_ms``), in that metric's catalog unit."""
    below: float
    """The threshold, in the metric's unit: > 0 and above what an idle replica reads."""


class Slo(Model):
    """A service level objective: the share of minutes in which every objective holds, over a window. Stated once,
    it is judged by ``gpuplatform simulate`` and ``plan`` and alerted on by burn rate (docs/alerts.md)."""

    objectives: list[SloObjective] = Field(min_length=1)
    """One or more objectives, each on a different metric."""
    compliance: float = 99.0
    """Percent of minutes within every objective, in (0, 100). Default 99 (error budget 1 %)."""
    window: Annotated[str, AfterValidator(_check_window)] = "28d"
    """Compliance window, e.g. ``28d``, ``1w``, ``12h`` (units m, h, d, w). Default 28d."""

    @property
    def error_budget(self) -> float:
        """The share of minutes that may be bad: 1 - compliance/100."""
        return 1 - self.compliance / 100


class IngressRoute(Model):
    port: str
    """Name of the container port this host routes to (its protocol picks HTTP or gRPC backends)."""
    host: str
    """Host name routed to that port."""


class ServiceModel(Model):
    """How one replica answers load, for ``gpuplatform simulate`` and the plan's step response (docs/simulate.md).
    Never reaches the cluster."""

    requests_per_second_at_target: float = Field(10.0, gt=0)
    """Requests per second one ready replica serves while a utilization-like metric (GPU, SM, engine, memory)
    sits at its target; the metric follows load per ready replica. Default 10."""
    service_time_ms: float = Field(20.0, gt=0)
    """Mean time one request holds a serving slot, for queue metrics (Triton queue time, waiting requests of vLLM,
    SGLang, TGI): a replica completes ``concurrency`` x 1000 / serviceTimeMs requests per second. Default 20."""
    concurrency: int = Field(1, ge=1, le=1024)
    """Requests one replica serves at once: 1 for a server that runs one request at a time (it queues as an M/M/1
    server); a batching LLM server's running batch (vLLM ``--max-num-seqs``, SGLang's and TGI's batch limits)
    for the others, which queue as M/M/c servers: requests wait only once every slot is busy. Default 1."""
    first_token_ms: Optional[float] = Field(None, gt=0)
    """Time from a request's admission to its first token (its prompt's prefill), at most ``serviceTimeMs``, for
    the time-to-first-token metrics of vLLM and SGLang: each request observes its queue wait plus this. Default
    none: ``simulate`` refuses those metrics (measure yours, e.g. TTFT at low load)."""
    model_load_seconds: Optional[int] = Field(None, ge=0, le=3600)
    """Container start to ready (server start and model load). Default: the expected load of ``model``, else the
    startup probe budget (``probes.startupTimeoutSeconds``, 600 without probes), the longest the pod is allowed."""
    image_pull_seconds: int = Field(60, ge=0, le=3600)
    """Image pull on a node that does not hold the image yet; later replicas on that node reuse it. Default 60
    (an estimate: measure yours); with ``model.source: image`` the weights' pull time is added to it."""


class Ingress(Model):
    class_name: Literal["nginx", "alb"] = "nginx"
    """ingress-nginx or ACK ALB Ingress. The controller is a prerequisite: this package creates Ingress objects,
    not the controller. Default ``nginx``."""
    host: Optional[str] = None
    """Host name routed to ``port`` (the one-port form). Default none: then ``routes`` is required."""
    port: Optional[str] = None
    """Name of the container port ``host`` routes to (the one-port form). Default none."""
    routes: list[IngressRoute] = Field(default_factory=list)
    """Several serving ports, one host each (e.g. Triton's HTTP and gRPC ports); one Ingress object per route,
    since ingress-nginx and ALB set the backend protocol per Ingress object. Default none."""
    tls_secret: Optional[str] = None
    """TLS secret (type kubernetes.io/tls, in the workload namespace) covering every host. Required when a route
    carries gRPC: ingress-nginx and ALB serve gRPC (HTTP/2) only on their TLS listener. Default none."""
    stream_timeout_seconds: Optional[int] = Field(None, ge=1, le=86400)
    """For long-lived streaming responses such as an LLM server's server-sent events: ingress-nginx's read and
    send timeouts to the backend (the longest silence between two reads or writes, 60 s by default) raised to
    this many seconds, and proxy buffering off for these Ingress objects whatever the controller's ConfigMap
    says, so each event reaches the client when the server writes it. ``className: nginx`` only. Default none:
    the controller's defaults."""

    def all_routes(self) -> list[IngressRoute]:
        """The one-port form and ``routes`` alike, as routes."""
        if self.host is not None and self.port is not None:
            return [IngressRoute(port=self.port, host=self.host), *self.routes]
        return list(self.routes)
    controller: Optional[Literal["addon", "external"]] = None
    """Who runs the ingress controller. ``addon``: the stack installs ACK's ``nginx-ingress-controller`` add-on
    (intranet SLB) and waits for the Ingress to get its address; ``external``: a controller the stack does not
    manage (another stack, the console, a laptop cluster's own): the Ingress is not awaited
    (``pulumi.com/skipAwait``) and ``gpuplatform verify`` checks its address instead. Default ``addon`` for nginx
    on ACK, ``external`` otherwise."""

    def controller_for(self, cloud: CloudProfile) -> str:
        return cloud.ingress_controller(self)


class Exposure(Model):
    service_type: Literal["ClusterIP", "InternalLoadBalancer", "PublicLoadBalancer"] = "ClusterIP"
    """``ClusterIP`` (default); ``InternalLoadBalancer`` (ACK intranet SLB); ``PublicLoadBalancer`` (Internet:
    only with ``settings.allowPublicEndpoints``)."""
    ingress: Optional[Ingress] = None
    """L7 ingress, so HTTP and gRPC requests spread over new replicas at once. Default none."""


EVERY_NAMESPACE = "*"  # NetworkCaller.namespace that admits the callers of every namespace


class NetworkCaller(Model):
    """Pods the workload's NetworkPolicy lets in besides the ones the stack knows (its ingress controller, its
    Prometheus): callers in the cluster, such as an API gateway or a batch job."""

    namespace: Optional[str] = None
    """Namespace of the calling pods, or ``*`` for every namespace. Default: the workload's own namespace."""
    pod_labels: dict[str, str] = Field(default_factory=dict)
    """Labels the calling pods carry (every one of them). Default none: every pod of that namespace."""
    ports: list[str] = Field(default_factory=list)
    """Names of the workload's ports they may reach. Default: every serving (http and grpc) port."""


class NetworkPolicySettings(Model):
    """The workload's NetworkPolicy (``networking.k8s.io/v1``): its pods accept connections only from what is
    listed here and what the stack knows to call them; every other pod of the cluster is refused (docs/network.md).
    Only a network plugin that enforces NetworkPolicy applies it (Terway with network policy support, Calico,
    Cilium, ...; not flannel): ``plan`` warns on a flannel cluster and ``gpuplatform verify`` checks the cluster's
    plugin."""

    enabled: bool = True
    """Create it. Default true; false leaves the pods open to every pod of the cluster (the policy pack then reports
    them under ``network-policy-selects-serving-pods``)."""
    allow_from: list[NetworkCaller] = Field(default_factory=list)
    """Callers in the cluster, e.g. ``[{namespace: apps, podLabels: {app: gateway}}]``. Always let in: the ingress
    controller (to the ports the Ingress routes), the stack's Prometheus (to the metrics port), any source on the
    serving ports of a LoadBalancer Service or an ALB Ingress (their clients arrive from outside the cluster), and
    the kubelet's probes (a pod cannot refuse its own node). Default none: a ClusterIP workload without an ingress
    then takes no caller at all, which ``plan`` warns about."""


class Drain(Model):
    """How a replica stops without losing a request (docs/drain.md): scale-in, rollouts, node scale-down and KEDA's
    scale to zero all terminate pods. The Deployment gets a ``preStop`` wait while the Service and the Ingress
    controller stop routing to the pod, the server's own drain setting (vLLM ``--shutdown-timeout``, Triton
    ``--exit-timeout-secs``) for the longest request, and ``terminationGracePeriodSeconds`` above their sum
    (catalogs/drain.py)."""

    enabled: bool = True
    """Render the drain chain. ``false`` leaves Kubernetes' defaults (30 s grace, no preStop, no drain flag): the
    requests in flight on a replica a scale-in removes are lost, which ``plan`` says. Default true."""
    max_request_seconds: Optional[int] = Field(None, ge=1, le=3600)
    """The longest request the workload serves, in seconds: how long the server drains. Default: derived from the
    token limit on the server's command line (vLLM ``--max-model-len``, SGLang ``--context-length``, TGI
    ``--max-total-tokens``) at 47 ms a token (an estimate), else the server's default (300 s for vLLM and SGLang,
    85 s for TGI, 30 s for Triton). Stated, a server release that cannot drain is refused."""
    pre_stop_seconds: Optional[int] = Field(None, ge=0, le=600)
    """Seconds the pod keeps serving after it is marked terminating, before SIGTERM, while its endpoint removal
    reaches kube-proxy and the Ingress controller. Default: 15 with an Ingress (ingress-nginx syncs at most every
    3.3 s; KServe's 15 s), 5 behind a Service only."""
    termination_grace_period_seconds: Optional[int] = Field(None, ge=1, le=7200)
    """The pod's ``terminationGracePeriodSeconds``. Default: the preStop wait + the drain + 5 s for the server's
    exit (+10 s for SGLang, whose watchdog looks every 5 s). Stated, it must cover that sum."""


class Workload(Model):
    name: str
    """Workload name (Deployment, Service and HPA names)."""
    image: str
    """Container image with an explicit tag or digest."""
    node_pool: str
    """Name of the node pool the replicas run on."""
    ports: list[Port] = Field(min_length=1)
    gpu: GpuRequestSpec
    """GPU per replica; its form must match the pool's sharing mode."""
    server: Optional[Literal["triton", "vllm", "tgi", "sglang"]] = None
    """Inference server kind, which makes its app metrics (queue time, waiting requests) available. Default none."""
    command: list[str] = Field(default_factory=list)
    """Container command. Default: the image's entrypoint."""
    args: list[str] = Field(default_factory=list)
    """Container arguments, one word per item (``[--tensor-parallel-size, "2"]``). Default: the image's."""
    command_line: Optional[str] = None
    """The server's command line as one string, as it is typed in a shell (``vllm serve /models/m
    --tensor-parallel-size 2``): split as a shell splits it (quotes, no expansion) and written as ``command`` and
    ``args`` for the image's entry point (vLLM's image: ``--model /models/m ...`` after its ``api_server``
    entry point; SGLang: ``python3 -m sglang.launch_server ...``); a line that cannot be is refused with the fix.
    Not with ``command`` or ``args``. Default none."""
    env: dict[str, str] = Field(default_factory=dict)
    """Plain environment variables (no secrets: use ``secretEnv``). Default none."""
    secret_env: dict[str, SecretRef] = Field(default_factory=dict)
    """Environment variables read from Kubernetes Secrets. Default none."""
    volumes: list[Volume] = Field(default_factory=list)
    """Volumes such as a model repository. Default none (only a writable /tmp)."""
    resources: Resources = Field(default_factory=Resources)
    """CPU and memory per replica (requests = limits). Default 1 CPU, 4Gi."""
    probes: Optional[Probes] = None
    """Probes. Default: with a ``server``, HTTP checks on the server's health paths (catalogs/servers.py) on its
    first HTTP port; otherwise TCP checks on the first serving port. The startup budget is sized from ``model``
    either way."""
    model: Optional[ModelWeights] = None
    """Where the model weights come from and their size. Default none: a 600 s startup budget and no fit check."""
    pre_pull: bool = False
    """Pull the workload's image onto every node of its pool before a replica needs it: a DaemonSet
    ``<name>-prepull`` on the pool's nodes (docs/model-startup.md, "Images already on the node"). It starts pulling
    when a node is Ready, as a replica would, so it spares the pull only on nodes that exist before the replica
    (the pool's ``minNodes``, warm nodes, nodes a scale-in emptied). Default false."""
    run_as_user: int = Field(1000, ge=1)
    """Non-root UID the container runs as (restricted Pod Security). Default 1000."""
    run_as_root: bool = False
    """Explicit opt-out for images that only work as root (e.g. notebook images): the container runs as UID 0
    without ``runAsNonRoot``, in ``settings.rootNamespace`` (Pod Security ``baseline``, which allows root and still
    forbids privileged pods, host namespaces and added capabilities). Every other restriction stays; the policy
    pack reports such pods under the advisory policy ``pod-root-opt-out`` instead of failing them. Default
    false."""
    read_only_root_filesystem: bool = True
    """Default true; a writable ``/tmp`` emptyDir is mounted."""
    shared_memory_gib: Optional[float] = Field(None, gt=0, le=1024)
    """Size in GiB of the memory-backed ``/dev/shm`` (an ``emptyDir`` with ``medium: Memory``) mounted in each
    replica; it counts against the replica's memory. Default: when a replica spans more than one GPU (tensor,
    pipeline or data parallel), the size its server documents (catalogs/server_cli.py ``SHARED_MEMORY_GIB``: vLLM
    2, SGLang 32, TGI 1); none otherwise (the container runtime's 64 MiB)."""
    replicas: Optional[int] = Field(None, ge=1, le=1000)
    """Fixed replica count of a workload without an autoscaler (notebooks, a single-replica service): the
    Deployment sets ``spec.replicas`` and no HPA is created. Exactly one of ``replicas`` and ``autoscaling``.
    Default none."""
    autoscaling: Autoscaling = Field(default_factory=lambda: Autoscaling(autoscaler="none"))
    """How the replica count follows load. Default: no autoscaler (then ``replicas`` is required)."""
    exposure: Exposure = Field(default_factory=Exposure)
    """How clients reach the service. Default a ClusterIP Service, no ingress."""
    network_policy: NetworkPolicySettings = Field(default_factory=NetworkPolicySettings)
    """Which pods may connect to the replicas (a NetworkPolicy per workload). Default: only the ingress controller,
    the stack's Prometheus and the clients of a LoadBalancer Service."""
    slo: Optional[Slo] = None
    """Service level objective (docs/simulate.md, "SLOs"): judged by ``gpuplatform simulate`` and ``plan``, and alerted on (docs/alerts.md).
    Default none."""
    drain: Drain = Field(default_factory=Drain)
    """How a replica stops without losing the requests in flight (docs/drain.md). Default: a drain chain derived
    from the server and its exposure."""
    service_model: ServiceModel = Field(default_factory=ServiceModel)
    """Load model for ``gpuplatform simulate`` only. Default: 10 requests/s per replica at target, 20 ms per
    request, model load = startup probe budget, 60 s image pull."""

    @model_validator(mode="after")
    def _split_command_line(self) -> "Workload":
        """``commandLine`` as ``command`` and ``args`` (components/command_line.py ``split_command_line``); a line
        that does not split, or comes with ``command`` or ``args``, is left for validation to report."""
        if self.command_line is None or self.command or self.args:
            return self
        try:
            command, args = split_command_line(self.server, self.image, self.command_line)
        except ValueError:
            return self
        object.__setattr__(self, "command", command)
        object.__setattr__(self, "args", args)
        return self

    @model_validator(mode="after")
    def _derive_targets(self) -> "Workload":
        """A metric stated without ``target`` whose metric an SLO objective is on takes the target derived from it;
        one without such an objective keeps none, which validation reports."""
        if self.slo is None or all(t.target is not None for t in self.autoscaling.metrics):
            return self
        below = {o.metric: o.below for o in self.slo.objectives}
        metrics = []
        for t in self.autoscaling.metrics:
            if t.target is None and below.get(t.metric, 0) > 0:
                t = t.model_copy(update={"target": slo_derived_target(below[t.metric])})
                t._derived = True
            metrics.append(t)
        object.__setattr__(self, "autoscaling", self.autoscaling.model_copy(update={"metrics": metrics}))
        return self

    @property
    def fixed(self) -> bool:
        """No autoscaler: the replica count is ``replicas``."""
        return self.autoscaling.autoscaler == "none"

    @property
    def replica_ceiling(self) -> int:
        """Most replicas the workload ever runs (capacity checks size pools for it)."""
        return (self.replicas or 1) if self.fixed else self.autoscaling.max_replicas

    @property
    def warm_replicas(self) -> int:
        """Placeholder pods held for the workload (``autoscaling.warmReplicas``; none without an autoscaler)."""
        return 0 if self.fixed else self.autoscaling.warm_replicas

    @property
    def pod_ceiling(self) -> int:
        """Most pods of the workload's size on its pool: its replicas at most plus its placeholders."""
        return self.replica_ceiling + self.warm_replicas


# ---------------------------------------------------------------------------------------------- root
class PlatformConfig(AckFlags, Model):
    """The whole ``gpu-platform`` namespace of a stack file."""

    settings: Settings = Field(default_factory=Settings)
    """Environment-wide settings. Default: a ``dev`` environment."""
    cluster: Cluster
    node_pools: list[NodePool] = Field(min_length=1)
    monitoring: Monitoring = Field(default_factory=Monitoring)
    """Prometheus backend, exporter, adapter and intervals. Default: self-hosted."""
    workloads: list[Workload] = Field(default_factory=list)
    """Inference workloads. Default none."""
    kubeconfig: Optional[SecretStr] = None
    """Secret (``pulumi config set --secret``; plain text is an error): kubeconfig contents for the ``kubeconfig``
    cluster kind. Default: ``kubeconfigPath`` or ``$KUBECONFIG``."""
    grafana_admin_password: Optional[SecretStr] = None
    """Secret (``pulumi config set --secret``; plain text is an error): Grafana admin password for the self-hosted
    backend. Default: generated by the chart."""

    def workload_namespace(self, workload: "Workload") -> str:
        """Namespace a workload's objects live in (root workloads have their own)."""
        return self.settings.root_namespace_name if workload.run_as_root else self.settings.namespace

    def pool(self, name: str) -> Optional[NodePool]:
        return next((p for p in self.node_pools if p.name == name), None)

    @property
    def cloud(self) -> CloudProfile:
        """The cloud profile of the cluster (components/clouds): what the stack asks of its cloud."""
        return cloud_for(self.cluster)

    def pool_managed(self, pool: "NodePool") -> bool:
        """Whether the pool is a node pool its cloud manages (ACK: auto repair, default on Pro clusters)."""
        return self.cloud.pool_managed(pool)
