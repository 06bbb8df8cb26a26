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

Start overheads: no server documents them. vLLM's is the sum of its start phases as its own logs report them in
public measurements (``VLLM_START``, below); SGLang's, TGI's and Triton's are ESTIMATES of the same parts (process
start, CUDA context, and after the weights are in GPU memory the warm-up each server runs: SGLang profiles memory
and captures CUDA graphs; TGI warms up its batch sizes). Replace them with ``gpuplatform verify``'s
``model.load-time`` measurements (docs/verify.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


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


@dataclass(frozen=True)
class StartPhase:
    seconds: int
    basis: str


@dataclass(frozen=True)
class VllmStart:
    """vLLM's start from container start to ready, less the weights' read, in the phases its logs name. The V1
    engine (the default from 0.8.0) compiles the model with torch.compile at every start unless it finds the
    compiled graphs in its cache directory, ``$VLLM_CACHE_ROOT/torch_compile_cache`` (docs.vllm.ai design
    "torch.compile integration", "Compilation Cache": the directory can be copied to another deployment to skip the
    compilation; keyed by the configs, PyTorch's and the model's code, so a replica of the same image, model and
    arguments hits it). ``--enforce-eager`` leaves the V1 engine without compilation and CUDA graphs."""
    process: StartPhase
    compile_cold: StartPhase
    compile_cached: StartPhase
    warmup: StartPhase
    compile_since: tuple[int, ...]

    def seconds(self, compiles: bool, cached: bool) -> int:
        compile_s = (self.compile_cached if cached else self.compile_cold).seconds if compiles else 0
        return self.process.seconds + compile_s + self.warmup.seconds


VLLM_START = VllmStart(
    process=StartPhase(25, "measured, vllm-project/vllm issue #20264 (V1, about 0.9, a 3.4 GiB model, GPU not "
                           "stated): the first response 59 s after start, of which the engine's init took 34.11 s "
                           "and the weights 0.9 s; the rest is the process, imports, engine config and API server"),
    compile_cold=StartPhase(44, "estimate between two measurements: 'torch.compile takes 28.77 s in total' on an "
                                "80 GB GPU (kubernetes-sigs/gateway-api-inference-extension PR #550, a 7B model) "
                                "and 66.5 s more engine init with compilation than without on an L4 (vllm-project/"
                                "vllm PR #11078, Llama-3-8B, with autotuning)"),
    compile_cached=StartPhase(12, "estimate above one measurement: Dynamo bytecode transform 5.03 s + loading the "
                                  "cached graphs 4.19 s = 9.2 s (vllm-project/vllm PR #16848, V1, Meta-Llama-3-8B, "
                                  "GPU not stated), rounded up since the transform grows with the model"),
    warmup=StartPhase(21, "measured: engine init without compilation, i.e. memory profiling, the KV cache and CUDA "
                          "graph capture, 20.63 s on an L4 (vllm-project/vllm PR #11078, Llama-3-8B); 14.18 s with "
                          "'Graph capturing finished in 10 secs' in PR #11005"),
    compile_since=(0, 8, 0),
)
"""V1 and its compilation became the default in v0.8.0 (release notes: "enabled V1 engine by default", PR #13726).
Measured on other GPUs and models than a given stack's: ``gpuplatform verify`` (``model.load-time``) measures the
cluster's. 90 s cold, 58 s with the compile cache, 46 s for the V0 engine (no compilation)."""

SGLANG_START_SECONDS = 50
"""SGLang's start less the weights' read, from the phases its log names (docs.sglang.ai "Sending Requests", SGLang
0.4.1, Llama-3.1-8B on an 80 GB GPU): 19 s from the process start to "Init torch distributed begin", "Capture cuda
graph end. Time elapsed: 6.57 s", 5 s from the warm-up request to "The server is fired up and ready to roll!"
(issue #6291, 0.4.6, Qwen3-8B: capture 5.92 s). The capture runs the model's forward pass for each batch size, so
it is taken at 26 s for a GPU with a quarter of that card's memory bandwidth (an L20's 864 GB/s): an ESTIMATE
(19 + 26 + 5). SGLang compiles nothing by default (``--enable-torch-compile`` is off) and keeps no CUDA graphs
across starts, so no cache shortens it."""

SERVER_PROFILES: dict[str, ServerProfile] = {
    p.name: p
    for p in (
        ServerProfile("vllm", "/health", "/health", False, VLLM_START.seconds(True, False), PROBE_TIMEOUT_SECONDS,
                      "vllm-project/vllm vllm/entrypoints/openai/api_server.py (setup_server, /health)"),
        ServerProfile("sglang", "/health", "/health", True, SGLANG_START_SECONDS, SGLANG_PROBE_TIMEOUT_SECONDS,
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
