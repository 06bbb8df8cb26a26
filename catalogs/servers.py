"""Inference servers a workload may name (``workloads[].server``): the HTTP paths that tell a loaded server from a
starting one, and how long a server takes to start before it reads its first weight byte.

Read by the workload manifests (probes generated for a workload that names a ``server`` and sets no ``probes``),
by validation and the simulator (the startup estimate) and by the docs.

Health paths and start facts live in each server's profile module (catalogs/server_vllm.py, server_sglang.py,
server_tgi.py, server_triton.py), each with the source it was checked in; this module gathers them.

Start overheads: no server documents them. vLLM's is the sum of its start phases as its own logs report them in
public measurements (``VLLM_START``, below); SGLang's, TGI's and Triton's are ESTIMATES of the same parts (process
start, CUDA context, and after the weights are in GPU memory the warm-up each server runs: SGLang profiles memory
and captures CUDA graphs; TGI warms up its batch sizes). Replace them with ``gpuplatform verify``'s
``model.load-time`` measurements (docs/verify.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from gpuplatform.catalogs.server_base import PROBE_TIMEOUT_SECONDS, ServerProfile, StartPhase  # noqa: F401
from gpuplatform.catalogs.server_profiles import PROFILES
from gpuplatform.catalogs.server_sglang import (SGLANG_HEALTH_CHECK_TIMEOUT_SECONDS,  # noqa: F401
                                                SGLANG_PROBE_TIMEOUT_SECONDS, SGLANG_START_SECONDS)
from gpuplatform.catalogs.server_vllm import VLLM_START, VllmStart  # noqa: F401

SERVER_PROFILES: dict[str, ServerProfile] = {name: p.health for name, p in PROFILES.items()}
"""Each server's health paths and start overhead, from its profile module."""

GENERIC_START_OVERHEAD_SECONDS = 60
"""Start overhead of a workload that names no server: an ESTIMATE."""
SERVER_NAMES = tuple(SERVER_PROFILES)


def start_overhead_seconds(server: str | None) -> int:
    profile = SERVER_PROFILES.get(server or "")
    return profile.start_overhead_seconds if profile else GENERIC_START_OVERHEAD_SECONDS


# ------------------------------------------------------------------------------------------------ sleep mode
@dataclass(frozen=True)
class SleepMode:
    """How a server frees its GPU memory without exiting and takes it back: what enables it, the HTTP endpoints
    that drive it, and where they are served. Read from the servers' source at the versions named."""
    server: str
    enable_flags: tuple[str, ...]
    """Flags the server needs on its command line."""
    gate_env: Optional[tuple[str, str]]
    """An environment variable (name, value) without which the endpoints are not served; None: always served."""
    sleep: str
    wake: str
    state: Optional[str]
    """The endpoint that says whether the server sleeps; None: it has none."""
    read_at: str
    """The release whose source the facts were read in, and where."""
    client_paths: tuple[str, ...] = ("/v1/",)
    """What clients need of the API port: the OpenAI-compatible API (the ingress routes only these prefixes to a
    server that serves the endpoints above, which share its port)."""


VLLM_SLEEP = SleepMode(
    "vllm", ("--enable-sleep-mode",), ("VLLM_SERVER_DEV_MODE", "1"),
    "POST /sleep?level=1|2", "POST /wake_up", "GET /is_sleeping",
    "vllm==0.9.2 vllm/entrypoints/openai/api_server.py:912-960 (the three routes are registered only `if "
    "envs.VLLM_SERVER_DEV_MODE`, envs.py:754: bool(int(VLLM_SERVER_DEV_MODE))); the flag in engine/arg_utils.py "
    "(catalogs/server_flags/vllm-0.9.2.json: --enable-sleep-mode / --no-enable-sleep-mode, default false); "
    "vllm==0.33.0 serves them from vllm/entrypoints/serve/dev/sleep/api_router.py under the same gate. "
    "Level 1 copies the weights to host memory and frees the KV cache, level 2 frees both "
    "(v1/worker/gpu_worker.py:81-93: CuMemAllocator.sleep(offload_tags=('weights',) if level == 1 else ())); "
    "docs.vllm.ai/en/latest/features/sleep_mode/")

SGLANG_SLEEP = SleepMode(
    "sglang", ("--enable-memory-saver", "--enable-weights-cpu-backup"), None,
    "POST /release_memory_occupation", "POST /resume_memory_occupation", None,
    "sglang==0.5.4 srt/entrypoints/http_server.py:907-924 (both routes registered unconditionally, GET or POST); "
    "server_args.py:3052-3061 (--enable-memory-saver: 'Allow saving memory using release_memory_occupation and "
    "resume_memory_occupation'; --enable-weights-cpu-backup: the weights kept in host memory meanwhile); "
    "managers/scheduler_update_weights_mixin.py:101-131")

SLEEP_MODES: dict[str, SleepMode] = {m.server: m for m in (VLLM_SLEEP, SGLANG_SLEEP)}

WARM_SET_SERVERS: dict[str, tuple[int, ...]] = {"vllm": (0, 9, 2)}
"""Servers (and their oldest release) whose replicas a pool's warm set may hold asleep. vLLM from 0.9.2, the oldest
release whose source the package read the endpoints in (earlier 0.7/0.8 releases have sleep mode in the Python
API; when their HTTP routes came is not established here). SGLang is not offered at its pinned 0.5.4: it serves
its release and resume endpoints to every client of its API port with no gate (a client could free the GPU
memory of a serving replica) and has no endpoint that says whether it is released, so a waker could not tell a
sleeping replica from a serving one; its memory saver exists for reinforcement-learning weight updates."""

WAKE_HOST_TO_GPU_GIB_PER_SECOND = 20.0
"""Level-1 wake: the weights copied back from host memory. ESTIMATE at a cited figure, rounded down: waking "is
very fast; for example, taking about 3 seconds for a model with 64 GiB of tensor data"
(github.com/llm-d-incubation/llm-d-fast-model-actuation README.md), 21 GiB/s. On what GPU and host is not said."""
WAKE_OVERHEAD_SECONDS = 1.0
"""Per wake-up besides the copy (the allocator re-mapping the KV cache, the first request's warm-up): ESTIMATE,
above the "~0.1-0.4 s" wake-ups of small models (where the copy is negligible) in Embedded LLM's post "Zero-Reload
Model Switching with vLLM Sleep Mode" (vllm-project/vllm-project.github.io PR #89; the published version,
blog.vllm.ai/2025/10/26/sleep-mode.html, has both levels "18-200x faster than full reload")."""


def sleeping_host_gib(size_gib: float, level: int) -> float:
    """Host memory a sleeping replica of weights ``size_gib`` holds: its weights at level 1 (docs.vllm.ai sleep
    mode: "The model weights are backed up in CPU memory"), none beyond the process's own at level 2."""
    return float(size_gib) if level == 1 else 0.0


def wake_seconds(size_gib: float, level: int, reload_seconds: float) -> float:
    """Expected wake-up: level 1 copies the weights back from host memory; level 2 reads them again from where
    they are stored (``reload_seconds``, the weights' read of the load estimate)."""
    copy = size_gib / WAKE_HOST_TO_GPU_GIB_PER_SECOND if level == 1 else reload_seconds
    return WAKE_OVERHEAD_SECONDS + copy
