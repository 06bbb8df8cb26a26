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
