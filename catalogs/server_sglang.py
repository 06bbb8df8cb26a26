"""SGLang's profile: its command-line model, health paths, start, metrics, image and shared memory.

Command line (PyPI wheels 0.4.0 to 0.5.23; repository ``python/`` + the wheel path): ``srt/server_args.py`` (moved
to ``srt/arg_groups/fields/*.py`` in 0.5.20): ``--host`` 127.0.0.1 (loopback only), ``--port`` 30000,
``--enable-metrics`` off by default (``/metrics`` on the main port only when on), ``--tp-size``, ``--pp-size``
(0.4.7), ``--dp-size``, ``--max-running-requests``, ``--mem-fraction-static``, ``--api-key`` (no environment
variable; ``/health`` and ``/metrics`` exempt from 0.4.6), ``srt/environ.py`` (``SGLANG_CACHE_DIR`` from 0.5.15).

Health: ``GET /health`` (``python/sglang/srt/entrypoints/http_server.py``): up to 0.4.10.post1 a plain 200; from
0.4.10.post2 the same handler as ``/health_generate`` (PR #8444): 503 while the tokenizer manager's
``server_status`` is ``Starting`` (until the warm-up request has run), then a one-token generation it polls for
once a second, 503 after ``SGLANG_HEALTH_CHECK_TIMEOUT`` (20 s). ``SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION``
(0.5.5.post3, PR #13320) turns the generation off and defaults to true, so a healthy answer takes about a second
(sglang==0.5.23 http_server.py:218, :721-800; mostlygeek/llama-swap#276 measured 1.001 s): more than the kubelet's
default 1 s probe timeout. The HTTP server starts while the warm-up is pending, so a TCP probe passes before the
server can serve.
"""
from __future__ import annotations

from gpuplatform.catalogs.server_base import (API_KEY, DOWNLOAD_DIR, DP, ENABLE_METRICS, HEALTH_TIMEOUT, HF_DOWNLOADS,
                                              SLEEP_MODE, WEIGHTS_BACKUP,
                                              HOST, MAX_BATCH, MEMORY_FRACTION, PORT, PP, TP, TRITON_KERNEL_CACHE,
                                              CacheDir, CapabilityNeed, Flag, FlagTables, GeneratingHealth,
                                              MetricsSwitch, Server, ServerCli, ServerDrain, ServerMetrics,
                                              ServerProfile)

SGLANG_HEALTH_CHECK_TIMEOUT_SECONDS = 20
"""How long SGLang's ``/health`` waits for its one-token generation before it answers 503 itself
(``SGLANG_HEALTH_CHECK_TIMEOUT``, sglang==0.5.23 srt/entrypoints/http_server.py:218; from 0.4.6)."""
SGLANG_PROBE_TIMEOUT_SECONDS = SGLANG_HEALTH_CHECK_TIMEOUT_SECONDS + 1
"""A second over SGLang's own health timeout, so the kubelet reads the server's verdict (200 or its 503) rather
than timing out while a busy server is still generating the probe's token."""


SGLANG_START_SECONDS = 50
"""SGLang's start less the weights' read, from the phases its log names (docs.sglang.ai "Sending Requests", SGLang
0.4.1, Llama-3.1-8B on an 80 GB GPU): 19 s from the process start to "Init torch distributed begin", "Capture cuda
graph end. Time elapsed: 6.57 s", 5 s from the warm-up request to "The server is fired up and ready to roll!"
(issue #6291, 0.4.6, Qwen3-8B: capture 5.92 s). The capture runs the model's forward pass for each batch size, so
it is taken at 26 s for a GPU with a quarter of that card's memory bandwidth (an L20's 864 GB/s): an ESTIMATE
(19 + 26 + 5). SGLang compiles nothing by default (``--enable-torch-compile`` is off) and keeps no CUDA graphs
across starts, so no cache shortens it."""

CLI = ServerCli(
    "sglang",
    (Flag(HOST, ("--host",)), Flag(PORT, ("--port",), "int"),
     Flag(ENABLE_METRICS, ("--enable-metrics",), "switch"),
     Flag(TP, ("--tp-size", "--tensor-parallel-size"), "int"),
     Flag(PP, ("--pp-size", "--pipeline-parallel-size"), "int"),
     Flag(DP, ("--dp-size", "--data-parallel-size"), "int"),
     Flag(MAX_BATCH, ("--max-running-requests",), "int"),
     Flag(MEMORY_FRACTION, ("--mem-fraction-static",), "float"),
     Flag(API_KEY, ("--api-key",), secret=True),
     Flag(DOWNLOAD_DIR, ("--download-dir",)),
     Flag(HEALTH_TIMEOUT, (), "int", env="SGLANG_HEALTH_CHECK_TIMEOUT"),
     Flag(SLEEP_MODE, ("--enable-memory-saver",), "switch"),
     Flag(WEIGHTS_BACKUP, ("--enable-weights-cpu-backup",), "switch")),
    defaults={HOST: "127.0.0.1", PORT: 30000, ENABLE_METRICS: False},
    official_images=("lmsysorg/sglang",),
    caches=(CacheDir("kernel and JIT caches (SGLANG_CACHE_DIR)", ("SGLANG_CACHE_DIR",), "~/.cache/sglang",
                     since="0.5.15"),
            TRITON_KERNEL_CACHE),
    downloads=HF_DOWNLOADS,
    source="sgl-project/sglang python/sglang/srt/server_args.py (srt/arg_groups/fields from 0.5.20), "
           "srt/environ.py")

HEALTH = ServerProfile("sglang", "/health", "/health", True, SGLANG_START_SECONDS, SGLANG_PROBE_TIMEOUT_SECONDS,
                       "sgl-project/sglang python/sglang/srt/entrypoints/http_server.py (health_generate)")

GENERATING_HEALTH = GeneratingHealth(
    {"/health": "0.4.10.post2", "/health_generate": ""}, answer_seconds=1.0,
    switch_env="SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION", switch_since="0.5.5.post3",
    source="sglang PR #8444, http_server.py health_generate; 1.001 s measured in mostlygeek/llama-swap#276")
"""SGLang's generating health check (sgl-project/sglang PR #8444: /health runs health_generate from 0.4.10.post2;
PR #13320: the switch, from 0.5.5.post3; sglang==0.5.23 srt/entrypoints/http_server.py:218, :721-800): a healthy
answer takes about a second (1.001 s measured in mostlygeek/llama-swap#276), so the kubelet's default 1 s timeout
fails a healthy server."""

DRAIN = ServerDrain(
    "sglang", None, None, None, None,
    "on SIGTERM the tokenizer manager sets its exit flag; a watchdog that looks every 5 s then waits, looking "
    "every 5 s, until no request is left in flight and exits: no time limit of its own, so the grace period "
    "bounds it. It does not refuse new requests meanwhile, so routing must have stopped first (the preStop "
    "wait), and it exits up to 10 s after its last request",
    "",
    "sgl-project/sglang PR #1838 'Drain requests before exit when receive SIGTERM' (2024; its first release is "
    "not verified here); read in the sglang==0.5.4 wheel: srt/managers/tokenizer_manager.py:1201 (SIGTERM "
    "handler), :1302-1340 (sigterm_watchdog), :2150 ('Draining requests and shutting down'); "
    "SGL_FORCE_SHUTDOWN makes it exit at once; the same drain logged by v0.4.5 in InftyAI/llmaz PR #381",
    exit_lag_seconds=10)


CAPABILITY_NEEDS = (
    CapabilityNeed("sglang", "attention_backend", "fa3", 8.0, 9.0,
                   source="sglang==0.5.4 srt/layers/attention/attention_registry.py:127-133",
                   said="FlashAttention v3 Backend requires SM>=80 and SM<=90"),
)

VALUE_RANGES = {
    "mem_fraction_static": (0.0, 1.0, False, "sglang==0.5.4 srt/server_args.py --mem-fraction-static: the fraction "
                                             "of GPU memory for weights and KV cache"),
}

METRICS_WITHOUT_KEY_SINCE = "0.4.6"
"""SGLang exempts ``/metrics`` from ``--api-key`` from 0.4.6 (sglang==0.4.6 srt/utils.py:795-798; 0.4.0 to 0.4.5
exempt ``/health`` only), so a scrape without the key gets 401 before."""


PROFILE = Server(
    "sglang", "SGLang", CLI, HEALTH,
    # SGLang compiles nothing by default and keeps no CUDA graphs across starts: no faster start is known
    fastest_start_seconds=SGLANG_START_SECONDS,
    metrics=ServerMetrics("/metrics", on_api_port=True, switch=MetricsSwitch(
        "enable_metrics", ENABLE_METRICS, fix="add '--enable-metrics' to the args",
        source="sglang==0.5.4 srt/server_args.py (--enable-metrics, store_true: off unless given)")),
    flag_tables=FlagTables(("0.5.4",)),
    entrypoints={"launch_server": "python3 -m sglang.launch_server"},
    native_parser=False,
    # sgl-project/sglang v0.5.4 docker/Dockerfile sets no ENTRYPOINT: the pod names python3 -m sglang.launch_server
    image_entrypoint=None,
    # docs.sglang.ai/get_started/install.html, "Method 3: Using docker": --shm-size 32g
    shared_memory_gib=32,
    model_dests=("model_path",),
    generating_health=GENERATING_HEALTH,
    capability_needs=CAPABILITY_NEEDS,
    value_ranges=VALUE_RANGES,
    release_dependent=(
        ("args", f"--api-key with metrics scraped: SGLang before {METRICS_WITHOUT_KEY_SINCE} guards /metrics with "
                 "the key"),),
    drain=DRAIN,
    # the longest request assumed: llm-d's figure for LLM servers (300 s, PR #1653); --context-length caps a
    # request's tokens (srt/server_args.py)
    default_max_request_seconds=300,
    token_limit_flags=("--context-length",),
    source=CLI.source)
