"""Text Generation Inference's profile: its command-line model, health paths, metrics, image and shared memory.

Command line (huggingface/text-generation-inference v3.3.7): ``launcher/src/main.rs`` (clap ``Args``: every flag but
``--env`` also read from the environment variable of its name in capitals), ``Dockerfile`` (the image sets
``PORT=80`` and ``HF_HOME=/data``), ``router/src/server.rs`` (``/metrics`` and ``/health`` on the main port,
unauthenticated; the key guards only the generation routes).

Health: ``GET /health`` (``router/src/server.rs``: 200 "Everything is working fine", 503 "Text generation inference
is down"). The launcher starts the router (and its port) only once every shard has loaded ("Shard ready in ..."
then "Starting Webserver", ``launcher/src/main.rs``).
"""
from __future__ import annotations

from gpuplatform.catalogs.server_base import (API_KEY, DOWNLOAD_DIR, HOST, MAX_BATCH, MAX_CONCURRENT, MEMORY_FRACTION,
                                              NUM_SHARD, PORT, PROBE_TIMEOUT_SECONDS, PROMETHEUS_PORT, CacheDir, Flag,
                                              FlagTables, Server, ServerCli, ServerDrain, ServerMetrics, ServerProfile)

CLI = ServerCli(
    "tgi",
    (Flag(HOST, ("--hostname",)), Flag(PORT, ("--port",), "int", env="PORT"),
     Flag(PROMETHEUS_PORT, ("--prometheus-port",), "int", env="PROMETHEUS_PORT"),
     Flag(NUM_SHARD, ("--num-shard",), "int", env="NUM_SHARD"),
     Flag(MAX_BATCH, ("--max-batch-size",), "int", env="MAX_BATCH_SIZE"),
     Flag(MAX_CONCURRENT, ("--max-concurrent-requests",), "int", env="MAX_CONCURRENT_REQUESTS"),
     Flag(MEMORY_FRACTION, ("--cuda-memory-fraction",), "float", env="CUDA_MEMORY_FRACTION"),
     Flag(API_KEY, ("--api-key",), secret=True, env="API_KEY"),
     Flag(DOWNLOAD_DIR, ("--huggingface-hub-cache",), env="HUGGINGFACE_HUB_CACHE")),
    # HOSTNAME is not read from the environment here: Kubernetes sets it to the pod's name, which is no
    # address, and the router then binds 0.0.0.0 (router/src/server.rs: "Invalid hostname, defaulting to
    # 0.0.0.0")
    defaults={HOST: "0.0.0.0", PORT: 3000, PROMETHEUS_PORT: 9000, MAX_CONCURRENT: 128, MEMORY_FRACTION: 1.0},
    image_env={"PORT": "80", "HF_HOME": "/data"},
    official_images=("huggingface/text-generation-inference",),
    downloads=CacheDir("Hugging Face downloads", ("HUGGINGFACE_HUB_CACHE", "HF_HOME"), "~/.cache/huggingface/hub",
                       below={"HF_HOME": "hub"}),
    ambiguous=("-p",),
    source="huggingface/text-generation-inference launcher/src/main.rs, Dockerfile, router/src/server.rs")

HEALTH = ServerProfile("tgi", "/health", "/health", False, 60, PROBE_TIMEOUT_SECONDS,
                       "huggingface/text-generation-inference router/src/server.rs (health), launcher/src/main.rs")
"""Its start overhead (60 s) is an ESTIMATE: process start, CUDA context and the warm-up of its batch sizes."""

DRAIN = ServerDrain(
    "tgi", None, None, None, 90,
    "on SIGTERM the launcher sends SIGTERM to its router and waits for it up to a fixed 90 s ('Waiting for "
    "webserver to gracefully shutdown'), then stops the shards; no flag sets it, so a drain longer than 90 s "
    "cannot be had",
    "",
    "huggingface/text-generation-inference launcher/src/main.rs (webserver.terminate, wait_timeout 90 s); "
    "that the router finishes its in-flight streams in that time is UNVERIFIED", verified=False)


PROFILE = Server(
    "tgi", "TGI", CLI, HEALTH,
    fastest_start_seconds=HEALTH.start_overhead_seconds,
    metrics=ServerMetrics("/metrics", on_api_port=True),
    flag_tables=FlagTables(("3.3.7",), "huggingface/text-generation-inference", "launcher/src/main.rs"),
    entrypoints={"launcher": "text-generation-launcher"},
    native_parser=True,
    # huggingface/text-generation-inference v3.3.7 Dockerfile: ENTRYPOINT text-generation-launcher
    image_entrypoint="launcher",
    # TGI's README "A note on Shared Memory (shm)": --shm-size 1g; on Kubernetes an emptyDir medium Memory of 1Gi
    shared_memory_gib=1,
    model_dests=("model_id",),
    model_envs=("MODEL_ID",),
    drain=DRAIN,
    # the longest request assumed: kept under its launcher's fixed 90 s; --max-total-tokens caps a request's
    # tokens (launcher/src/main.rs; env MAX_TOTAL_TOKENS)
    default_max_request_seconds=85,
    token_limit_flags=("--max-total-tokens",),
    source=CLI.source)
