"""A workload's startup estimate: how long its replicas take from container start to ready, given where its model
weights come from and how big they are, and the startup probe budget that follows.

One definition for the manifests (startup probe, Deployment await timeout), validation (budget too small, over the
limit, weights larger than the GPU memory of a replica), the simulator (model load and image pull times) and
``gpuplatform verify`` (measured load against the budget). The rates and overheads are the catalogs'
(catalogs/timeouts.py, catalogs/servers.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from gpuplatform.catalogs import server_cli as cli, servers, timeouts
from gpuplatform.catalogs.kubernetes import (HPA_DEFAULT_DOWNSCALE_STABILIZATION_SECONDS, KEDA_DEFAULT_COOLDOWN_SECONDS,
                                             TMP_MOUNT_PATH)
from gpuplatform.components.config import Workload

STARTUP_PROBE_PERIOD_SECONDS = 10
READINESS_PROBE_PERIOD_SECONDS = 5
"""The generated readiness probe's period: a replica that turns ready while already running (a woken sleeping
replica) is an endpoint at the probe's next pass."""
DEFAULT_STARTUP_TIMEOUT_SECONDS = 600
"""Startup probe budget of a workload that states neither ``model`` nor ``probes.startupTimeoutSeconds``."""


@dataclass(frozen=True)
class LoadEstimate:
    """Expected startup of one replica of a workload with a ``model``."""
    size_gib: float
    source: str
    """The key of the rate used: ``pvc`` or ``nfs`` (``source: volume``, by the volume's kind), ``image``,
    ``download``."""
    mib_per_second: float
    rate_basis: str
    """Where the rate comes from: the stack's ``model.loadMibPerSecond`` or the catalog's basis."""
    overhead_seconds: int
    image_pull_extra_seconds: int
    """Seconds the weights add to the image pull (``source: image``), else 0."""
    streamed: bool = False
    """The server streams the weights (vLLM ``--load-format runai_streamer``): read at the streamed rate."""
    fill_mib_per_second: Optional[float] = None
    """A Fluid dataset cache (``source: volume`` on a ``fluid`` volume): the rate of the first read, which fills the
    cache from OSS (catalogs/timeouts.py ``FLUID_FILL_RATE``); ``mib_per_second`` is then the cache's rate. None
    for every other source."""
    cold_overhead_seconds: Optional[int] = None
    """With a compile cache on a shared volume (:func:`compile_cache_volume`): the server's start while the cache
    is still empty (``overhead_seconds`` is then the start that finds it filled). None without one: every replica
    starts in ``overhead_seconds``."""

    @property
    def first_overhead_seconds(self) -> int:
        """The start of a replica that finds no cache filled: the first one, or the only kind without a cache."""
        return self.cold_overhead_seconds if self.cold_overhead_seconds is not None else self.overhead_seconds

    @property
    def read_seconds(self) -> float:
        return self.size_gib * 1024 / self.mib_per_second

    @property
    def expected_seconds(self) -> float:
        return timeouts.expected_load_seconds(self.size_gib, self.mib_per_second, self.overhead_seconds)

    @property
    def fill_expected_seconds(self) -> Optional[float]:
        """Container start to ready of the replica that fills a Fluid cache (None without one), at the start a
        replica has once the compile cache (if any) is filled; :attr:`first_expected_seconds` is the first
        replica's, which fills both."""
        if self.fill_mib_per_second is None:
            return None
        return timeouts.expected_load_seconds(self.size_gib, self.fill_mib_per_second, self.overhead_seconds)

    @property
    def first_expected_seconds(self) -> float:
        """Container start to ready of a replica that finds every cache empty: it reads the weights at the fill
        rate of a Fluid cache (else at the source's rate) and compiles cold."""
        rate = self.fill_mib_per_second if self.fill_mib_per_second is not None else self.mib_per_second
        return timeouts.expected_load_seconds(self.size_gib, rate, self.first_overhead_seconds)

    @property
    def slowest_expected_seconds(self) -> float:
        """The longest load a replica is expected to take: the one that fills the caches (Fluid's weights, vLLM's
        compiled graphs), else the load. The startup budget must cover it, or the kubelet restarts the replica
        that fills a cache."""
        return max(self.expected_seconds, self.first_expected_seconds)

    @property
    def sized_budget_seconds(self) -> int:
        return timeouts.sized_startup_seconds(self.slowest_expected_seconds, STARTUP_PROBE_PERIOD_SECONDS)

    def describe(self) -> str:
        """The sum, short enough for an error message."""
        kind = f"streamed {self.source}" if self.streamed else self.source
        rate = ("model.loadMibPerSecond" if self.rate_basis == "model.loadMibPerSecond"
                else f"the {kind} estimate of catalogs/timeouts.py")
        text = (f"{self.overhead_seconds}s server start + {self.size_gib:g} GiB at {self.mib_per_second:g} MiB/s "
                f"({rate})")
        firsts = []
        if self.fill_mib_per_second is not None:
            firsts.append(f"reads at {self.fill_mib_per_second:g} MiB/s from OSS")
        if self.cold_overhead_seconds is not None:
            firsts.append(f"compiles in a {self.cold_overhead_seconds}s server start")
        if firsts:
            text += f"; the replica that fills the cache {' and '.join(firsts)} ({self.first_expected_seconds:.0f}s)"
        return text


def volume_kind(w: Workload) -> Optional[str]:
    """``pvc``, ``nfs`` or ``fluid`` for the volume ``model`` reads from; None when it names no volume of the
    workload."""
    vol = model_volume(w)
    if vol is None:
        return None
    return "nfs" if vol.nfs is not None else "fluid" if vol.fluid is not None else "pvc"


def model_volume(w: Workload):
    """The workload volume ``model`` reads from (``source: volume``), or None."""
    m = w.model
    if m is None or m.source != "volume":
        return None
    name = m.volume if m.volume is not None else (w.volumes[0].name if len(w.volumes) == 1 else None)
    return next((v for v in w.volumes if v.name == name), None)


def load_estimate(w: Workload) -> Optional[LoadEstimate]:
    """The startup estimate of a workload with a ``model`` (None without one)."""
    m = w.model
    if m is None:
        return None
    key = (volume_kind(w) or "pvc") if m.source == "volume" else m.source
    streamed = streams_weights(w)
    rate = (timeouts.STREAMED_LOAD_RATES if streamed else timeouts.MODEL_LOAD_RATES)[key]
    if m.load_mib_per_second is not None:
        mib_s, basis = m.load_mib_per_second, "model.loadMibPerSecond"
    else:
        mib_s, basis = rate.mib_per_second, rate.basis
    pull = 0
    if m.source == "image":
        pull = math.ceil(m.size_gib * 1024 / timeouts.IMAGE_PULL_RATE.mib_per_second)
    fill = timeouts.FLUID_FILL_RATE.mib_per_second if key == "fluid" else None
    overhead, cold = server_start_seconds(w)
    return LoadEstimate(m.size_gib, key, mib_s, basis, overhead, pull, streamed, fill, cold)


VLLM_DISABLE_COMPILE_CACHE = "VLLM_DISABLE_COMPILE_CACHE"
"""vLLM's switch that makes every start compile, whatever the cache holds (vllm/envs.py: read as an integer, any
value but 0 turns the cache off)."""


def vllm_compiles(w: Workload) -> bool:
    """vLLM compiles the model with torch.compile at start: the V1 engine (the default from
    ``VLLM_START.compile_since``; an image whose tag names no version is taken as a current one) without
    ``--enforce-eager``."""
    from gpuplatform.catalogs.metrics import image_version
    from gpuplatform.components import server_args
    if w.server != "vllm":
        return False
    version = image_version(w.image)
    if version is not None and version < servers.VLLM_START.compile_since:
        return False
    facts = server_args.parse(w)
    return not (facts is not None and facts.get(cli.ENFORCE_EAGER))


def writable_mount(path: str, w: Workload) -> Optional[str]:
    """The writable mount that holds ``path`` (``/tmp`` or a volume with readOnly false), None when it is on the
    read-only root filesystem."""
    mounts = [TMP_MOUNT_PATH] + [v.mount_path for v in w.volumes if not v.read_only]
    hits = [m for m in mounts if path == m or path.startswith(m.rstrip("/") + "/")]
    return max(hits, key=len) if hits else None


def compile_cache_volume(w: Workload) -> Optional[str]:
    """The workload volume on which vLLM keeps its compiled graphs (``$VLLM_CACHE_ROOT/torch_compile_cache``,
    resolved from the workload's environment as vLLM resolves it) when that volume outlives a replica: a writable
    PVC or NFS volume, which every replica mounts, so the first replica's compilation serves the next ones. None
    when the server does not compile or the directory is on the root filesystem or the pod's own /tmp."""
    from gpuplatform.components import server_args
    env = server_args.effective_env(w)
    if not vllm_compiles(w) or env.get(VLLM_DISABLE_COMPILE_CACHE, "0") not in ("", "0"):
        return None
    spec = cli.SERVER_CLIS["vllm"]
    facts = server_args.parse(w)
    image_env = dict(spec.image_env) if facts is not None and facts.official_image else {}
    cache = next(c for c in spec.caches if "VLLM_CACHE_ROOT" in c.envs)
    mount = writable_mount(server_args.resolve_dir(cache, env, image_env)[0], w)
    return next((v.name for v in w.volumes if mount is not None and v.mount_path == mount and not v.read_only),
                None)


def server_start_seconds(w: Workload) -> tuple[int, Optional[int]]:
    """(start of a replica, start of a replica that finds the compile cache empty, None without such a cache):
    vLLM's from its phases (catalogs/servers.py ``VLLM_START``), the other servers' estimate."""
    if w.server != "vllm":
        return servers.start_overhead_seconds(w.server), None
    compiles = vllm_compiles(w)
    cold = servers.VLLM_START.seconds(compiles, cached=False)
    if compile_cache_volume(w) is None:
        return cold, None
    return servers.VLLM_START.seconds(compiles, cached=True), cold


def streams_weights(w: Workload) -> bool:
    """The workload's server streams its weights: vLLM with ``--load-format runai_streamer`` on its command line
    (catalogs/server_cli.py). The command line is the one source: no config field restates it."""
    from gpuplatform.components import server_args
    if w.server != "vllm":
        return False
    facts = server_args.parse(w)
    return facts is not None and facts.get(cli.LOAD_FORMAT) == cli.RUNAI_STREAMER


def stated_startup_seconds(w: Workload) -> Optional[int]:
    """``probes.startupTimeoutSeconds`` when the stack sets it."""
    return w.probes.startup_timeout_seconds if w.probes is not None else None


def startup_budget_seconds(w: Workload) -> int:
    """The startup probe's budget before whole periods: the stack's own, else sized from ``model``, else 600."""
    stated = stated_startup_seconds(w)
    if stated is not None:
        return stated
    est = load_estimate(w)
    return est.sized_budget_seconds if est is not None else DEFAULT_STARTUP_TIMEOUT_SECONDS


def startup_seconds(w: Workload) -> int:
    """How long the startup probe lets a replica start and load its model before the kubelet restarts it: the budget
    in whole probe periods."""
    period = STARTUP_PROBE_PERIOD_SECONDS
    return max(1, startup_budget_seconds(w) // period) * period


def image_pull_budget_seconds(w: Workload) -> int:
    """The await timeout's allowance for pulling the image onto a new node: the weights of ``source: image`` pull
    with it, at the safety factor."""
    est = load_estimate(w)
    extra = est.image_pull_extra_seconds if est is not None else 0
    return timeouts.IMAGE_PULL_SECONDS + math.ceil(timeouts.STARTUP_SAFETY_FACTOR * extra)


def on_demand_mode(image: str) -> Optional[str]:
    """``full`` or ``index-only`` for an accelerated (DADI) image of Container Registry Enterprise Edition, by its
    tag's suffix (catalogs/timeouts.py ``ON_DEMAND_IMAGE_SUFFIXES``); None for any other image."""
    tag = image.split("@", 1)[0].rsplit("/", 1)[-1].partition(":")[2]
    return next((mode for suffix, mode in timeouts.ON_DEMAND_IMAGE_SUFFIXES.items() if tag.endswith(suffix)), None)


def pull_seconds(w: Workload, whole_image_pull_seconds: int) -> tuple[int, str]:
    """(seconds, why) a replica's image takes to pull onto a node: the whole image's pull, or with an accelerated
    image loaded on demand that pull times the cited factor (catalogs/timeouts.py ``ON_DEMAND_PULL_FACTOR``)."""
    mode = on_demand_mode(w.image)
    if mode is None:
        return whole_image_pull_seconds, ""
    factor = timeouts.ON_DEMAND_PULL_FACTOR[mode]
    return (math.ceil(whole_image_pull_seconds * factor),
            f"x {factor:.3g} for on-demand loading of an accelerated image ({mode} mode)")


def scale_in_floor_seconds(w: Workload) -> int:
    """The shortest scale-down stabilization window and KEDA ``cooldownPeriod`` the workload may have: its startup
    budget (:func:`startup_seconds`). A window only delays the HPA's scale-down recommendation; when it comes, the
    ReplicaSet deletes not-ready pods first (kubernetes ``pkg/controller/replicaset``, ``getPodsToDelete``), so a
    window shorter than a replica's load removes the replicas still loading, the ones a burst started. With a
    window at least the budget, every pod the window's last scale-up started has loaded (or failed its startup
    probe) before the recommendation can fall below it (docs/simulate.md, "Scale-in floor")."""
    return startup_seconds(w)


def default_scale_down_window_seconds(w: Workload) -> int:
    """The window a workload that states none gets: the platform default (300 s) raised to the scale-in floor."""
    return max(HPA_DEFAULT_DOWNSCALE_STABILIZATION_SECONDS, scale_in_floor_seconds(w))


def scale_down_window_seconds(w: Workload) -> int:
    """The scale-down stabilization window the workload's HPA gets: the stack's own, else the default."""
    b = w.autoscaling.behavior
    rules = b.scale_down if b is not None else None
    if rules is not None and rules.stabilization_window_seconds is not None:
        return rules.stabilization_window_seconds
    return default_scale_down_window_seconds(w)


def default_keda_cooldown_seconds(w: Workload) -> int:
    """The ``cooldownPeriod`` a workload that states none gets: KEDA's default (300 s), raised to the scale-in
    floor when the workload scales to zero (the only case KEDA uses it)."""
    if w.autoscaling.min_replicas == 0:
        return max(KEDA_DEFAULT_COOLDOWN_SECONDS, scale_in_floor_seconds(w))
    return KEDA_DEFAULT_COOLDOWN_SECONDS


def keda_cooldown_seconds(w: Workload) -> int:
    """The ScaledObject's ``cooldownPeriod``: the stack's own, else the default."""
    a = w.autoscaling
    return a.cooldown_period_seconds if a.cooldown_period_seconds is not None else default_keda_cooldown_seconds(w)
