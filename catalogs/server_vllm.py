"""vLLM's profile: its command-line model, health paths, start phases, metrics, image and shared memory.

Command line (PyPI wheels 0.2.3 to 0.33.0): ``vllm/entrypoints/openai/cli_args.py`` (moved to
``entrypoints/common/cli_args.py``; ``--host`` None = every interface, ``--port`` 8000, ``--uds`` from 0.10.1),
``vllm/engine/arg_utils.py`` (``-tp``, ``-pp``, ``-dp`` from 0.8.5, ``-dpl`` from 0.9.0, ``-pcp`` from 0.12.0,
``--max-num-seqs``, ``--gpu-memory-utilization``), ``vllm/config/parallel.py`` (world size), ``vllm/config/cache.py``
(``gpu_memory_utilization`` 0.9 to 0.19.1, 0.92 from 0.20.0: "a per-instance limit"), ``vllm/envs.py``
(``VLLM_API_KEY``, ``VLLM_CACHE_ROOT`` from 0.6.0, ``VLLM_CONFIG_ROOT``), ``entrypoints/serve/middleware/
authenticate.py`` (the key guards ``/v1``, ``/v2``, ``/inference``, ``/cohere``, never ``/health`` or
``/metrics``), ``entrypoints/serve/instrumentator/metrics.py`` (``/metrics`` mounted on the API app: no metrics
port), ``v1/engine/async_llm.py`` (``--disable-log-stats`` leaves no ``vllm:*`` engine metrics).

Health: ``GET /health`` (``vllm/entrypoints/openai/api_server.py``). The route belongs to the FastAPI app, which is
built only after ``build_async_engine_client`` has loaded the model; it answers 503 when the engine has died. vLLM
*binds* its port before the engine is built (``setup_server``: "bind the port before the engine is set up", issue
#8204) but uvicorn only listens once the app runs, so a TCP probe is refused until the model is loaded too.
"""
from __future__ import annotations

from dataclasses import dataclass

from gpuplatform.catalogs.server_base import (API_KEY, DEV_MODE, DISABLE_LOG_STATS, DOWNLOAD_DIR, DP, DP_LOCAL,
                                              DRAIN_TIMEOUT, SLEEP_MODE,
                                              ENFORCE_EAGER, HF_DOWNLOADS, HOST, LOAD_FORMAT, MAX_BATCH,
                                              MEMORY_FRACTION, PCP, PORT, PP, PROBE_TIMEOUT_SECONDS, TP,
                                              TRITON_KERNEL_CACHE, UDS, CacheDir, CapabilityNeed, Flag, FlagTables,
                                              Server, ServerCli, ServerDrain, ServerMetrics, ServerProfile, StartPhase)

RUNAI_STREAMER = "runai_streamer"
VLLM_RUNAI_STREAMER_SINCE = (0, 6, 6)
"""vLLM's ``--load-format runai_streamer`` (the Run:ai Model Streamer: safetensors read by concurrent threads and
streamed to GPU memory) came with vllm-project/vllm PR #10192 and is documented from the v0.6.6 docs on
(docs.vllm.ai/en/v0.6.6/serving/runai_model_streamer.html: local directories and ``s3://``; GCS ``gs://`` and
Azure ``az://`` in later releases, docs.vllm.ai/en/stable/models/extensions/runai_model_streamer/). It needs the
``runai-model-streamer`` package (``pip install vllm[runai]``): the official ``vllm/vllm-openai`` images install it
(vllm-project/vllm ``Dockerfile``, stage ``vllm-openai-base``: ``... boto3 runai-model-streamer
runai-model-streamer[s3]``); an image built on another base may lack it."""


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


CLI = ServerCli(
    "vllm",
    (Flag(HOST, ("--host",)), Flag(PORT, ("--port",), "int"), Flag(UDS, ("--uds",)),
     Flag(DISABLE_LOG_STATS, ("--disable-log-stats",), "switch"),
     Flag(TP, ("--tensor-parallel-size", "-tp"), "int"), Flag(PP, ("--pipeline-parallel-size", "-pp"), "int"),
     Flag(DP, ("--data-parallel-size", "-dp"), "int"), Flag(DP_LOCAL, ("--data-parallel-size-local", "-dpl"),
                                                                "int"),
     Flag(PCP, ("--prefill-context-parallel-size", "-pcp"), "int"),
     Flag(MAX_BATCH, ("--max-num-seqs",), "int"), Flag(MEMORY_FRACTION, ("--gpu-memory-utilization",), "float"),
     Flag(API_KEY, ("--api-key",), secret=True, env="VLLM_API_KEY"),
     Flag(DOWNLOAD_DIR, ("--download-dir",)), Flag(LOAD_FORMAT, ("--load-format",)),
     Flag(ENFORCE_EAGER, ("--enforce-eager",), "switch"),
     Flag(DRAIN_TIMEOUT, ("--shutdown-timeout",), "int"),
     Flag(SLEEP_MODE, ("--enable-sleep-mode",), "switch"), Flag(DEV_MODE, (), "int", env="VLLM_SERVER_DEV_MODE")),
    defaults={HOST: "0.0.0.0", PORT: 8000},
    underscores=True,
    config_files=("--config",),
    official_images=("vllm/vllm-openai",),
    caches=(CacheDir("compile and kernel caches (VLLM_CACHE_ROOT)", ("VLLM_CACHE_ROOT",), "$XDG_CACHE_HOME/vllm",
                     since="0.6.0"),
            CacheDir("usage statistics (VLLM_CONFIG_ROOT)", ("VLLM_CONFIG_ROOT",), "$XDG_CONFIG_HOME/vllm"),
            TRITON_KERNEL_CACHE),
    downloads=HF_DOWNLOADS,
    source="vllm-project/vllm vllm/entrypoints/openai/cli_args.py, vllm/engine/arg_utils.py, vllm/envs.py")

def least_start_seconds(option, version) -> int:
    """vLLM's shortest start less the weights: the process alone with ``--enforce-eager`` or before the V1
    engine's compilation (no compilation, and the warm-up's graph capture skipped), else the process, the compile
    cache's load and the warm-up (a cache that holds the graphs: the fastest compiling start)."""
    if option("enforce_eager") is True or (version is not None and version < VLLM_START.compile_since):
        return VLLM_START.process.seconds
    return VLLM_START.seconds(True, cached=True)


HEALTH = ServerProfile("vllm", "/health", "/health", False, VLLM_START.seconds(True, False), PROBE_TIMEOUT_SECONDS,
                       "vllm-project/vllm vllm/entrypoints/openai/api_server.py (setup_server, /health)")

DRAIN = ServerDrain(
    "vllm", "--shutdown-timeout", (0, 18, 0), 0, None,
    "on SIGTERM the API server refuses new requests and the engine core waits up to --shutdown-timeout seconds "
    "for the requests in flight ('Draining N in-flight requests'), exiting as soon as none is left; 0 (the "
    "default) aborts them",
    "SIGTERM aborts every request in flight (no drain exists before 0.18.0)",
    "vllm-project/vllm PR #34730 (merged 2026-02, reverted by #36628), re-applied by PR #36666 (merged "
    "2026-03); read in the vllm==0.18.0 wheel: engine/arg_utils.py:1321 (--shutdown-timeout, int, default 0), "
    "config/vllm.py:330, entrypoints/launcher.py (SIGTERM handler passes the timeout to the engine client), "
    "v1/engine/core.py:1199-1225 (0 aborts, >0 drains); absent from vllm==0.17.1; llm-d issue #927 names "
    "v0.18.0 as the first release")


CAPABILITY_NEEDS = (
    CapabilityNeed("vllm", "dtype", "bfloat16", 8.0,
                   source="vllm==0.9.2 v1/worker/gpu_worker.py:398-408 (and worker/worker.py:554)",
                   said="Bfloat16 is only supported on GPUs with compute capability of at least 8.0"),
    *(CapabilityNeed("vllm", "quantization", method, minimum,
                     source=f"vllm==0.9.2 model_executor/layers/quantization/{module}.py:{line} get_min_capability, "
                            "checked at config.py:4468-4478",
                     said=f"The quantization method {method} is not supported for the current GPU. Minimum "
                          f"capability: {int(minimum * 10)}")
      for method, minimum, module, line in (
          ("fp8", 8.0, "fp8", 101), ("fbgemm_fp8", 8.0, "fbgemm_fp8", 51), ("modelopt", 8.9, "modelopt", 61),
          ("awq", 7.5, "awq", 60), ("awq_marlin", 8.0, "awq_marlin", 87), ("gptq_marlin", 8.0, "gptq_marlin", 138),
          ("gptq_marlin_24", 8.0, "gptq_marlin_24", 99), ("marlin", 8.0, "marlin", 79),
          ("experts_int8", 8.0, "experts_int8", 33), ("qqq", 8.0, "qqq", 97), ("bitsandbytes", 7.0, "bitsandbytes",
                                                                                  69),
          ("torchao", 7.5, "torchao", 72), ("gptq", 6.0, "gptq", 93))),
)

VALUE_RANGES = {
    "gpu_memory_utilization": (0.0, 1.0, False, "vllm==0.9.2 config.py:1582-1585 (CacheConfig: \"GPU memory "
                                                "utilization must be less than 1.0\"); a share of the GPU's "
                                                "memory, not a percentage"),
}


PROFILE = Server(
    "vllm", "vLLM", CLI, HEALTH,
    fastest_start_seconds=VLLM_START.process.seconds,
    least_start=least_start_seconds,
    metrics=ServerMetrics("/metrics", on_api_port=True),
    flag_tables=FlagTables(("0.9.2",)),
    entrypoints={"serve": "vllm serve", "api_server": "python3 -m vllm.entrypoints.openai.api_server"},
    native_parser=False,
    # vllm-project/vllm v0.9.2 docker/Dockerfile, stage vllm-openai:
    # ENTRYPOINT ["python3", "-m", "vllm.entrypoints.openai.api_server"]
    image_entrypoint="api_server",
    # docs.vllm.ai/en/v0.9.2/deployment/k8s.html: an emptyDir medium Memory, sizeLimit 2Gi, at /dev/shm
    shared_memory_gib=2,
    model_dests=("model_tag", "model"),
    start_phases=(("process", VLLM_START.process), ("compile (cold)", VLLM_START.compile_cold),
                  ("compile (cached)", VLLM_START.compile_cached), ("warm-up", VLLM_START.warmup)),
    capability_needs=CAPABILITY_NEEDS,
    value_ranges=VALUE_RANGES,
    release_dependent=(
        ("model", "the weights' fit under vLLM's default --gpu-memory-utilization, which changed between releases"),
        ("autoscaling.metrics", "batch targets under vLLM's default --max-num-seqs, which changed between releases")),
    drain=DRAIN,
    # the longest request assumed: llm-d's largest figure for LLM servers (300 s, covering 259 s measured for
    # 2k-token DeepSeek-R1 answers, PR #1653); --max-model-len caps a request's tokens (engine/arg_utils.py)
    default_max_request_seconds=300,
    token_limit_flags=("--max-model-len",),
    source=CLI.source)
