"""What each inference server's command line and environment mean, as far as the package checks them: the flags
(and the environment variables a server reads instead of flags) that decide where it listens, whether and where it
serves metrics, how many GPUs a replica spans, its batch limit, the share of GPU memory it takes, the secrets it
takes, and where it writes. Read by ``components/server_args.py`` (the parser) and the validation of workloads.

The facts of each server live in its profile module (catalogs/server_vllm.py, server_sglang.py, server_tgi.py,
server_triton.py, on the shapes of catalogs/server_base.py); this module gathers them and holds what spans servers.
Every fact was read in the server's own source at the releases named; each profile module's docstring names
the files and lines.
"""
from __future__ import annotations

from typing import Optional

from gpuplatform.catalogs.server_base import (  # noqa: F401  (the names every reader of this catalog uses)
    ALLOW_METRICS, API_KEY, DISABLE_LOG_STATS, DOWNLOAD_DIR, DP, DP_LOCAL, DRAIN_TIMEOUT, ENABLE_METRICS, ENFORCE_EAGER,
    GRPC_PORT, HEALTH_TIMEOUT, HOST, LOAD_FORMAT, MAX_BATCH, MAX_CONCURRENT, MEMORY_FRACTION, METRICS_PORT, NUM_SHARD,
    PCP, PORT, PP, PROMETHEUS_PORT, RESTRICTED, TP, UDS, SLEEP_MODE, DEV_MODE, WEIGHTS_BACKUP, CacheDir,
    CapabilityNeed, Flag, ServerCli)
from gpuplatform.catalogs.server_profiles import PROFILES
from gpuplatform.catalogs.server_vllm import RUNAI_STREAMER, VLLM_RUNAI_STREAMER_SINCE  # noqa: F401

SERVER_CLIS: dict[str, ServerCli] = {name: p.cli for name, p in PROFILES.items()}
"""Each server's command-line model, from its profile module."""

SHARED_MEMORY_GIB: dict[str, float] = {name: p.shared_memory_gib for name, p in PROFILES.items()
                                       if p.shared_memory_gib is not None}
"""Size of the memory-backed ``/dev/shm`` each server documents for a replica that spans more than one GPU (the
container runtime gives 64 MiB, and NCCL and PyTorch's tensor-parallel workers exchange through shared memory):
vLLM's Kubernetes guide mounts an ``emptyDir`` ``medium: Memory`` of ``sizeLimit: 2Gi`` at ``/dev/shm``
(docs.vllm.ai/en/v0.9.2/deployment/k8s.html: "PyTorch uses shared memory to share data between processes under
the hood, particularly for tensor parallel inference"); SGLang's install guide runs its image with
``--shm-size 32g`` (docs.sglang.ai/get_started/install.html, "Method 3: Using docker"); TGI's README with
``--shm-size 1g`` and, on Kubernetes, an ``emptyDir`` ``medium: Memory`` of ``sizeLimit: 1Gi`` ("A note on Shared
Memory (shm)"). Triton's replicas span GPUs per model configuration, which is not read here."""

SHM_MOUNT_PATH = "/dev/shm"

COMPUTE_CAPABILITY: dict[str, float] = {
    "T4": 7.5, "V100-16GB": 7.0, "V100-32GB": 7.0, "A10": 8.6, "A30": 8.0, "A100-40GB": 8.0, "A100-80GB": 8.0,
    "A800-40GB": 8.0, "A800-80GB": 8.0, "L20": 8.9, "L4": 8.9, "H20": 9.0, "H100-80GB": 9.0, "H200": 9.0,
    "H800-80GB": 9.0}
"""CUDA compute capability of each catalog GPU model (NVIDIA, "CUDA GPUs - Compute Capability",
developer.nvidia.com/cuda-gpus; the A800, H800 and H20 are the A100's and H100's silicon)."""


CAPABILITY_NEEDS: tuple[CapabilityNeed, ...] = tuple(need for p in PROFILES.values() for need in p.capability_needs)
"""Values of a server's options that need a GPU of at least (and at most) a compute capability: the server stops
at start on a GPU outside the range (each profile module, with the figures read in the server's source at the
pinned version)."""

RANGES: dict[tuple[str, str], tuple[float, float, bool, str]] = {
    (name, dest): bounds for name, p in PROFILES.items() for dest, bounds in p.value_ranges.items()}
"""(server, option dest) -> (lowest, highest, whether the lowest itself is allowed, source): values the parser
takes but the server cannot use (``--gpu-memory-utilization=90`` parses as 90.0); each profile module's."""

LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
"""Addresses only the pod's own processes reach: the kubelet probes and the Service connect to the pod's IP."""


def vllm_max_num_seqs(version: Optional[tuple[int, ...]], gpu_memory_gib: float, gpu_name: str) -> int:
    """vLLM's default ``--max-num-seqs`` for the OpenAI server: 256 up to 0.7; 1024 on every GPU in 0.8.0 (the V1
    engine); from 0.8.5 1024 on GPUs of at least 70 GiB (from 0.9.0 not A100s), else 256 (vllm==0.5.0
    engine/arg_utils.py:50, 0.8.0 :1715, 0.8.5 :1596-1609, 0.9.0 :1495-1507, 0.33.0 :2972-3036). A version the tag
    does not pin is read as the newest."""
    big = gpu_memory_gib >= 70
    if version is not None and version < (0, 8, 0):
        return 256
    if version is not None and version < (0, 8, 5):
        return 1024
    if version is not None and version < (0, 9, 0):
        return 1024 if big else 256
    return 1024 if big and "A100" not in gpu_name.upper() else 256


def vllm_memory_fraction(version: Optional[tuple[int, ...]]) -> float:
    """vLLM's default ``--gpu-memory-utilization``: 0.9 up to 0.19.1, 0.92 from 0.20.0 (vllm==0.19.1
    config/cache.py:41, 0.20.0 :66); a version the tag does not pin is read as the newest."""
    return 0.9 if version is not None and version < (0, 20, 0) else 0.92


BATCH_METRICS: dict[str, str] = {"vllm_requests_running": "vllm", "sglang_requests_running": "sglang",
                                 "tgi_batch_size": "tgi"}
"""Catalog metrics that count a replica's running batch (vllm:num_requests_running, sglang:num_running_reqs,
tgi_batch_current_size: catalogs/metrics.py), and the server whose batch limit caps them: the metric never reads
above the limit, so a target the HPA must exceed by its tolerance has to sit below it."""
