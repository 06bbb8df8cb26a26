"""Triton Inference Server's profile: its command-line model, health paths, metrics and image.

Command line (triton-inference-server/server v2.71.0, container 26.07): ``src/command_line_parser.cc`` (getopt; no
option read from the environment; ``--http-port`` 8000, ``--grpc-port`` 8001, ``--metrics-port`` 8002, addresses
0.0.0.0, ``--allow-metrics`` true; booleans true/on/1, false/off/0), ``src/http_server.cc`` (``/metrics`` only on
the metrics port: the HTTP port answers 404), ``--http-restricted-api``/``--grpc-restricted-protocol`` take the
shared secret in the argument.

Health: ``GET /v2/health/ready`` and ``/v2/health/live`` (KServe Open Inference Protocol, which Triton implements:
"server ready ... indicates if all the models are ready for inferencing ... can be used directly to implement the
Kubernetes readinessProbe", kserve.github.io/website/docs/reference/oip/get-v-2-health-ready;
triton-inference-server/server ``docs/protocol``). Triton loads the repository's startup models before it starts
its HTTP and gRPC services ("Started HTTPService" follows the model table in its log), so its port opens late;
``/v2/health/ready`` also turns false when a model becomes unavailable later.
"""
from __future__ import annotations

from gpuplatform.catalogs.server_base import (ALLOW_METRICS, DRAIN_TIMEOUT, GRPC_PORT, HOST, METRICS_PORT, PORT,
                                              PROBE_TIMEOUT_SECONDS, RESTRICTED, Flag, FlagTables, MetricsSwitch,
                                              Server, ServerCli, ServerDrain, ServerMetrics, ServerProfile)

CLI = ServerCli(
    "triton",
    (Flag(HOST, ("--http-address",)), Flag(PORT, ("--http-port",), "int"),
     Flag(GRPC_PORT, ("--grpc-port",), "int"), Flag(METRICS_PORT, ("--metrics-port",), "int"),
     Flag(ALLOW_METRICS, ("--allow-metrics",), "bool"),
     Flag(RESTRICTED, ("--http-restricted-api", "--grpc-restricted-protocol"), secret=True),
     Flag(DRAIN_TIMEOUT, ("--exit-timeout-secs",), "int")),
    defaults={HOST: "0.0.0.0", PORT: 8000, GRPC_PORT: 8001, METRICS_PORT: 8002, ALLOW_METRICS: True},
    official_images=("nvidia/tritonserver",),
    source="triton-inference-server/server src/command_line_parser.cc, src/http_server.cc")

HEALTH = ServerProfile("triton", "/v2/health/ready", "/v2/health/live", False, 30, PROBE_TIMEOUT_SECONDS,
                       "KServe Open Inference Protocol /v2/health/ready; triton-inference-server/server docs/protocol")
"""Its start overhead (30 s) is an ESTIMATE."""

DRAIN = ServerDrain(
    "triton", "--exit-timeout-secs", None, 30, None,
    "on SIGTERM the server stops its endpoints and waits up to --exit-timeout-secs for in-flight inferences, "
    "then exits even if some are still running",
    "",
    "triton-inference-server/server src/command_line_parser.cc (OPTION_EXIT_TIMEOUT_SECS: 'Timeout (in "
    "seconds) when exiting to wait for in-flight inferences to finish'; exit_timeout_secs_ default 30)")


UNPROBED_RESTRICTED_CATEGORY = "health"
"""The ``--http-restricted-api`` category that covers ``/v2/health/*`` (src/http_server.cc
``RETURN_AND_RESPOND_IF_RESTRICTED(req, RestrictedCategory::HEALTH, ...)``): the kubelet sends no header."""


PROFILE = Server(
    "triton", "Triton", CLI, HEALTH,
    fastest_start_seconds=HEALTH.start_overhead_seconds,
    metrics=ServerMetrics("/metrics", on_api_port=False, switch=MetricsSwitch(
        "allow_metrics", ALLOW_METRICS, fix="remove --allow-metrics=false (true by default)",
        source="triton-inference-server/server src/command_line_parser.cc (--allow-metrics, default true)")),
    flag_tables=FlagTables(("2.49.0",), "triton-inference-server/server", "src/command_line_parser.cc"),
    entrypoints={"tritonserver": "tritonserver"},
    native_parser=True,
    image_entrypoint=None,
    # a Triton replica spans GPUs per model configuration, which is not read here
    shared_memory_gib=None,
    drain=DRAIN,
    # the longest request assumed: its own default exit timeout (30 s)
    default_max_request_seconds=30,
    token_limit_flags=(),
    source=CLI.source)
