"""Inference servers a workload may name (``workloads[].server``): the HTTP paths that tell a loaded server from a
starting one, and how long a server takes to start before it reads its first weight byte.

Read by the workload manifests (probes generated for a workload that names a ``server`` and sets no ``probes``),
by validation and the simulator (the startup estimate) and by the docs.

Health paths, each checked in the server's own source or docs:

* vLLM: ``GET /health`` (vllm-project/vllm ``vllm/entrypoints/openai/api_server.py``). The route belongs to the
  FastAPI app, which is built only after ``build_async_engine_client`` has loaded the model; it answers 503 when
  the engine has died. vLLM *binds* its port before the engine is built (``setup_server``: "bind the port before
  the engine is set up", issue #8204) but uvicorn only listens once the app runs, so a TCP probe is refused until
  the model is loaded too; the HTTP check is still the one that notices a dead engine.
* SGLang: ``GET /health`` (sgl-project/sglang ``python/sglang/srt/entrypoints/http_server.py``): up to 0.4.10.post1
  a plain 200; from 0.4.10.post2 the same handler as ``/health_generate`` (PR #8444): 503 while the tokenizer
  manager's ``server_status`` is ``Starting`` (until the warm-up request has run), then a one-token generation it
  polls for once a second, 503 after ``SGLANG_HEALTH_CHECK_TIMEOUT`` (20 s). ``SGLANG_ENABLE_HEALTH_ENDPOINT_
  GENERATION`` (0.5.5.post3, PR #13320) turns the generation off and defaults to true, so a healthy answer takes
  about a second (sglang==0.5.23 http_server.py:218, :721-800; mostlygeek/llama-swap#276 measured 1.001 s): more
  than the kubelet's default 1 s probe timeout. The HTTP server starts while the warm-up is pending, so a TCP probe
  passes before the server can serve.
* TGI: ``GET /health`` (huggingface/text-generation-inference ``router/src/server.rs``: 200 "Everything is working
  fine", 503 "Text generation inference is down"). The launcher starts the router (and its port) only once every
  shard has loaded ("Shard ready in ..." then "Starting Webserver", ``launcher/src/main.rs``).
* Triton: ``GET /v2/health/ready`` and ``/v2/health/live`` (KServe Open Inference Protocol, which Triton
  implements: "server ready ... indicates if all the models are ready for inferencing ... can be used directly to
  implement the Kubernetes readinessProbe", kserve.github.io/website/docs/reference/oip/get-v-2-health-ready;
  triton-inference-server/server ``docs/protocol``). Triton loads the repository's startup models before it starts
  its HTTP and gRPC services ("Started HTTPService" follows the model table in its log), so its port opens late;
  ``/v2/health/ready`` also turns false when a model becomes unavailable later.

Start overheads are ESTIMATES (no server documents them): process start, CUDA context, and after the weights are
in GPU memory the warm-up each server runs (vLLM and SGLang profile memory and capture CUDA graphs; TGI warms up
its batch sizes). Replace them with ``gpuplatform verify``'s ``model.load-time`` measurements (docs/verify.md).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ServerProfile:
    name: str
    ready_path: str
    """Answers 200 only once the model is loaded and the server can serve it (readiness and startup probes)."""
    live_path: str
    """Answers 200 while the server process can still serve (liveness probe)."""
    port_opens_before_ready: bool
    """Whether a TCP connect succeeds before the server can serve (then a TCP readiness probe admits traffic early)."""
    start_overhead_seconds: int
    """Container start to ready, less the time reading the weights: an ESTIMATE."""
    probe_timeout_seconds: int
    """``timeoutSeconds`` of every probe on the health paths: longer than the slowest healthy answer (the
    kubelet's default of 1 s fails SGLang's generating ``/health``)."""
    source: str
    """Where the health paths and the port behaviour were checked."""


PROBE_TIMEOUT_SECONDS = 5
"""Probe timeout of the servers whose health check does no generation (vLLM's checks the engine's error flag,
TGI's asks each shard to allocate a 2x2 tensor, Triton's reads model states): a margin over an event loop busy
with a full batch, not a measured figure. Kubernetes' default is 1 s."""
SGLANG_HEALTH_CHECK_TIMEOUT_SECONDS = 20
"""How long SGLang's ``/health`` waits for its one-token generation before it answers 503 itself
(``SGLANG_HEALTH_CHECK_TIMEOUT``, sglang==0.5.23 srt/entrypoints/http_server.py:218; from 0.4.6)."""
SGLANG_PROBE_TIMEOUT_SECONDS = SGLANG_HEALTH_CHECK_TIMEOUT_SECONDS + 1
"""A second over SGLang's own health timeout, so the kubelet reads the server's verdict (200 or its 503) rather
than timing out while a busy server is still generating the probe's token."""

SERVER_PROFILES: dict[str, ServerProfile] = {
    p.name: p
    for p in (
        ServerProfile("vllm", "/health", "/health", False, 90, PROBE_TIMEOUT_SECONDS,
                      "vllm-project/vllm vllm/entrypoints/openai/api_server.py (setup_server, /health)"),
        ServerProfile("sglang", "/health", "/health", True, 90, SGLANG_PROBE_TIMEOUT_SECONDS,
                      "sgl-project/sglang python/sglang/srt/entrypoints/http_server.py (health_generate)"),
        ServerProfile("tgi", "/health", "/health", False, 60, PROBE_TIMEOUT_SECONDS,
                      "huggingface/text-generation-inference router/src/server.rs (health), launcher/src/main.rs"),
        ServerProfile("triton", "/v2/health/ready", "/v2/health/live", False, 30, PROBE_TIMEOUT_SECONDS,
                      "KServe Open Inference Protocol /v2/health/ready; triton-inference-server/server docs/protocol"),
    )
}

GENERIC_START_OVERHEAD_SECONDS = 60
"""Start overhead of a workload that names no server: an ESTIMATE."""
SERVER_NAMES = tuple(SERVER_PROFILES)


def start_overhead_seconds(server: str | None) -> int:
    profile = SERVER_PROFILES.get(server or "")
    return profile.start_overhead_seconds if profile else GENERIC_START_OVERHEAD_SECONDS
