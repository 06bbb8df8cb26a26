"""How long the engine waits for what, and the budgets the package derives its await timeouts from.

pulumi-kubernetes waits for a Deployment to become available for 10 minutes unless the object carries
``pulumi.com/timeoutSeconds`` (or the resource has custom timeouts, which win): provider/pkg/await/deployment.go
``DefaultDeploymentTimeoutMins``, provider/pkg/metadata/overrides.go ``TimeoutDuration``. A Helm release waits
300 s per operation unless ``timeout`` is set: provider/pkg/provider/helm_release.go ``defaultTimeoutSeconds``.

The budgets below are margins chosen for GPU nodes, not measured figures: a pool scaling from zero must buy an
ECS GPU instance, boot it, join it and start ACK's GPU device plugin before a replica can be scheduled; bare-metal
instances take longer to boot. A budget too short fails ``pulumi up`` with a timeout while the rollout goes on;
one too long only delays the report of a rollout that cannot succeed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

PULUMI_DEPLOYMENT_AWAIT_SECONDS = 600
PULUMI_HELM_RELEASE_TIMEOUT_SECONDS = 300

NODE_PROVISIONING_SECONDS = {"vm": 900, "bare-metal": 1800}
"""Budget from a pod asking for a GPU to a Ready GPU node with its device plugin, per ECS instance kind."""
IMAGE_PULL_SECONDS = 600
"""Budget to pull an inference server image (Triton and vLLM images are several GB) onto a fresh node."""

HELM_RELEASE_TIMEOUT_SECONDS = {
    # CRDs, admission-webhook hook Jobs, Prometheus and Grafana pods
    "kube-prometheus-stack": 900,
    "prometheus-adapter": 600,
    "ack-alibaba-cloud-metrics-adapter": 600,
    # a DaemonSet on GPU nodes: its pods start as nodes join, each pulling a large image
    "dcgm-exporter": 900,
    # driver containers and mig-manager repartitioning GPUs (a MIG change restarts GPU clients)
    "gpu-operator": 1800,
    "fake-gpu-operator": 600,
    "keda": 600,
    "cert-manager": 600,
}
"""``timeout`` of each Helm release we install, in seconds (Helm's wait covers every object of the release)."""


PROVIDER_ADDON_TIMEOUT_MINUTES = 10
"""terraform-provider-alicloud ``resource_alicloud_cs_kubernetes_addon.go``: Create, Update and Delete each
default to 10 minutes, the time the provider waits for ACK's install or upgrade task to succeed."""
ADDON_TIMEOUTS = {"create": "30m", "update": "30m", "delete": "20m"}
"""``custom_timeouts`` of every ``KubernetesAddon``. ACK's add-on task waits for the add-on's pods to be ready
(ACK add-on error codes: ``AddonOperationFailed.WaitForAddonReadyTimeout``), and on a new cluster those pods pull
their images onto nodes the system pool has just started; ACK publishes no install time, so these are margins
three times the provider's default, not measured figures. Too short fails ``pulumi up`` while ACK goes on
installing; the next ``up`` adopts the add-on."""


def instance_kind(instance_type: str) -> str:
    """``bare-metal`` for ECS bare-metal families (``ecs.ebm*``), else ``vm``."""
    return "bare-metal" if instance_type.startswith("ecs.ebm") else "vm"


def deployment_await_seconds(node_provisioning: int, startup_seconds: int, max_replicas: int,
                             image_pull_seconds: int = IMAGE_PULL_SECONDS) -> int:
    """The longest a GPU Deployment's create or update may take before pulumi-kubernetes should give up.

    A rolling update (maxSurge 1, maxUnavailable 0) replaces one replica at a time, each passing its startup
    probe; the surge replica may need a new node, which may need to be provisioned, and its image pulled
    (``image_pull_seconds``: longer for an image that carries the model's weights)."""
    return node_provisioning + image_pull_seconds + max(1, max_replicas) * startup_seconds


# ------------------------------------------------------------------------------------------------ model loading
@dataclass(frozen=True)
class LoadRate:
    """How fast a replica reads its weights from one kind of source, in MiB/s."""
    mib_per_second: float
    basis: str
    estimate: bool = True


# The slowest link between the weights and GPU memory bounds the load. Only the disk figure has an Alibaba
# document behind it; the others are ESTIMATES, to be replaced by what ``gpuplatform verify`` (model.load-time)
# measures, or per workload with ``model.loadMibPerSecond``.
ESSD_PL1_MAX_MB_PER_SECOND = 350
"""Alibaba ECS "ESSDs": a PL1 ESSD delivers min{120 + 0.5 x capacity GiB, 350} MB/s, PL0 min{100 + 0.25 x capacity,
180} (alibabacloud.com/help/en/elastic-compute-service/latest/essds). ACK's default disk StorageClass is a PL1 ESSD."""
FLUID_CACHE_DOC = ("Alibaba ACK 'Accelerate online applications' with Fluid JindoRuntime "
                   "(alibabacloud.com/help/en/doc-detail/440265.html): a 2 GB model "
                   "(BERT wwm_uncased_L-24_H-1024_A-16) loads in 27 s or more per pod from OSS, in under 3 s from "
                   "the JindoRuntime memory cache")
FLUID_CACHE_BASIS = ("cited lower bound, rounded down: " + FLUID_CACHE_DOC + ", i.e. 2e9 B / 3 s = 636 MiB/s "
                     "at least; an SSD tier or a reader on a node without a worker reads slower")
MODEL_LOAD_RATES: dict[str, LoadRate] = {
    "pvc": LoadRate(150, "estimate within a cited ceiling: a PersistentVolumeClaim, taken as an ESSD disk; a PL1 "
                         "ESSD reads at most 350 MB/s and 170 MB/s at 100 GiB (Alibaba ECS 'ESSDs'); a PL0 at most "
                         "180 MB/s"),
    "nfs": LoadRate(100, "estimate: one NFS client of a General-purpose NAS file system, whose throughput grows with "
                         "the data stored (Alibaba 'NAS performance overview')"),
    "image": LoadRate(150, "estimate within a cited ceiling: weights baked into the image are read from the node's "
                           "system disk after the pull, an ESSD (at most 350 MB/s for PL1)"),
    "download": LoadRate(40, "estimate: the server fetches the weights from a model hub over the Internet (NAT "
                             "gateway bandwidth and the hub's per-client rate) and then reads them from /tmp"),
    "fluid": LoadRate(600, FLUID_CACHE_BASIS),
}
"""Load rate per weight source: ``pvc``, ``nfs`` and ``fluid`` are the kinds of workload volume (``source: volume``);
``fluid`` is the rate once the dataset cache holds the weights (:data:`FLUID_FILL_RATE` is the first read's)."""
STREAMED_LOAD_RATES: dict[str, LoadRate] = {
    "pvc": LoadRate(333, "estimate at a cited ceiling: vLLM's Run:ai Model Streamer (--load-format runai_streamer) "
                         "reads the safetensors with concurrent threads and streams them to GPU memory, so the disk's "
                         "own ceiling bounds the read, not one reader: a PL1 ESSD delivers at most 350 MB/s "
                         "= 333 MiB/s (Alibaba ECS 'ESSDs'); a smaller PL1 disk or a PL0 delivers less"),
    "image": LoadRate(333, "estimate at a cited ceiling: streamed from the node's system disk, an ESSD (at most "
                           "350 MB/s = 333 MiB/s for PL1)"),
    "nfs": LoadRate(100, "estimate: the NAS client's throughput bounds a streamed read as it bounds a plain one; no "
                         "gain assumed"),
    "download": LoadRate(40, "estimate: vLLM downloads a hub model before it streams it; the download bounds it"),
    "fluid": LoadRate(600, "estimate at a cited figure: the streamer reads the Fluid mount like a local directory; "
                           "no gain over one reader assumed, since the cited cache figure (" + FLUID_CACHE_DOC
                           + ") is the only measurement"),
}
"""Load rate per weight source when the server streams the weights (vLLM ``--load-format runai_streamer``). ESTIMATES
like :data:`MODEL_LOAD_RATES`: ``gpuplatform verify`` (model.load-time) measures them and ``model.loadMibPerSecond``
replaces them."""
FLUID_FILL_RATE = LoadRate(70, "cited: " + FLUID_CACHE_DOC + ": 2e9 B / 27 s = 70.6 MiB/s, one pod reading OSS "
                                "through the runtime before the cache holds the data; an estimate for larger weights, "
                                "whose read the OSS bandwidth of the bucket and the node bounds")
"""How fast the first replica reads weights from a Fluid (JindoRuntime) dataset whose cache is empty: it reads OSS
and fills the cache as it goes; later replicas read at the ``fluid`` rate (docs/model-startup.md). Plain and
streamed alike: the streamer's concurrent reads still come from OSS through one FUSE mount. ``gpuplatform verify``
(model.load-time) shows the first load against it and the later ones against the cache rate."""
IMAGE_PULL_RATE = LoadRate(100, "estimate: pulling and unpacking image layers from Container Registry over the "
                                "VPC; unpacking is single-threaded per layer")
"""How fast image bytes reach a node: an image that carries the weights pulls that much longer."""
ON_DEMAND_IMAGE_SUFFIXES = {"_containerd_accelerated": "full", "_accelerated": "index-only"}
"""Tag suffixes of the accelerated (DADI) images Container Registry Enterprise Edition converts a repository's images
into: ``_containerd_accelerated`` is full mode (containerd only); ``_accelerated`` is index-only mode, or full mode
for Docker nodes, so it is read as the slower index-only (Alibaba ACR "Load resources of a container image on
demand"; alibabacloud.com/help/en/acr/user-guide/load-resources-of-a-container-image-on-demand)."""
ON_DEMAND_PULL_FACTOR = {"full": 9 / 38, "index-only": (38 - 0.7 * (38 - 9)) / 38}
"""Pull time with on-demand loading over the pull of the whole image. Cited: ACK measured a 1.34 GB NodeBB image
pulling in 36 s and starting in 38 s, 4 s and 9 s with the accelerated image (full mode), and gives index-only mode
about 70% of full mode's effect (the ACR page above; ACK "Accelerate container startup with on-demand image
loading"). The factor is taken on pull + start (9/38), because the data the container reads at start is still
fetched then; an inference server's image reads more of itself at start (Python, PyTorch, CUDA libraries) than a
web app, so for it the factor is an ESTIMATE, which ``gpuplatform verify`` (model.load-time, image pull) corrects."""
STARTUP_SAFETY_FACTOR = 2.0
"""The startup probe allows this many times the expected load: a slower disk, a busy NAS or a cold page cache
must not restart a replica that is still loading."""
STARTUP_BUDGET_MAX_SECONDS = 3600
"""The longest startup probe budget a stack may ask for (``probes.startupTimeoutSeconds``): a replica that needs
longer is better served by a faster source than by a probe that waits an hour to notice a hung load."""


def expected_load_seconds(size_gib: float, mib_per_second: float, overhead_seconds: int) -> float:
    """Container start to ready: the server's start overhead plus reading the weights at the source's rate."""
    return overhead_seconds + size_gib * 1024 / mib_per_second


def sized_startup_seconds(expected_seconds: float, period_seconds: int) -> int:
    """The startup probe budget for an expected load: the safety factor times it, rounded up to whole probe
    periods (the kubelet counts failures per period)."""
    return max(1, math.ceil(STARTUP_SAFETY_FACTOR * expected_seconds / period_seconds)) * period_seconds
