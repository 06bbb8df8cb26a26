"""What every inference server's profile holds (catalogs/server_vllm.py, server_sglang.py, server_tgi.py,
server_triton.py; the registry is catalogs/server_profiles.py): the names of the facts a flag sets, the shape of a
server's command-line model (:class:`ServerCli`), of its health and start facts (:class:`ServerProfile`), of its
metrics (:class:`ServerMetrics`) and of the profile itself (:class:`Server`), which each server module fills in.

Adding a server is one new module that builds a :class:`Server` (and its flag table under
``catalogs/server_flags/``), listed in ``catalogs/server_profiles.py``; docs/servers.md walks through it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Optional

from gpuplatform.catalogs.metrics import version_text
from gpuplatform.catalogs.flag_tables import known_versions

# facts a flag sets
HOST, PORT, UDS, GRPC_PORT, METRICS_PORT = "host", "port", "uds", "grpc_port", "metrics_port"
ENABLE_METRICS, DISABLE_LOG_STATS, ALLOW_METRICS = "enable_metrics", "disable_log_stats", "allow_metrics"
TP, PP, DP, DP_LOCAL, PCP, NUM_SHARD = "tp", "pp", "dp", "dp_local", "pcp", "num_shard"
MAX_BATCH, MAX_CONCURRENT = "max_batch", "max_concurrent"
MEMORY_FRACTION, API_KEY, RESTRICTED, DOWNLOAD_DIR = "memory_fraction", "api_key", "restricted", "download_dir"
PROMETHEUS_PORT, HEALTH_TIMEOUT = "prometheus_port", "health_timeout"
LOAD_FORMAT, ENFORCE_EAGER = "load_format", "enforce_eager"
DRAIN_TIMEOUT = "drain_timeout"
"""Seconds the server waits for its requests in flight on SIGTERM (catalogs/drain.py: vLLM ``--shutdown-timeout``
from 0.18.0, Triton ``--exit-timeout-secs``)."""
SLEEP_MODE, DEV_MODE, WEIGHTS_BACKUP = "sleep_mode", "dev_mode", "weights_backup"
"""Sleep mode (catalogs/servers.py ``SLEEP_MODES``): vLLM's ``--enable-sleep-mode`` and the ``VLLM_SERVER_DEV_MODE``
that serves its endpoints; SGLang's ``--enable-memory-saver`` and ``--enable-weights-cpu-backup``."""

@dataclass(frozen=True)
class Flag:
    fact: str
    names: tuple[str, ...]
    """Spellings the server accepts (long and short)."""
    value: str = "str"
    """``int``, ``float``, ``str``, ``switch`` (a flag that takes no value: argparse ``store_true``) or ``bool``
    (a value such as true/false)."""
    env: str = ""
    """Environment variable the server reads for the same setting (TGI's clap ``env``), when it has one."""
    secret: bool = False
    """The value is a credential: written in the args it sits in the pod spec and the stack in plain text."""


@dataclass(frozen=True)
class CacheDir:
    """A directory the server writes at run time, and how it is chosen: the first environment variable set, else
    ``default`` (``~`` is ``$HOME``)."""
    what: str
    envs: tuple[str, ...]
    default: str
    since: str = ""
    below: dict = field(default_factory=dict)
    """Environment variable -> the subdirectory under it that is used (``HF_HOME`` -> ``hub``)."""


@dataclass(frozen=True)
class ServerCli:
    name: str
    flags: tuple[Flag, ...]
    defaults: dict = field(default_factory=dict)
    """Fact -> the value the server uses when neither a flag nor an environment variable sets it."""
    underscores: bool = False
    """``--max_num_seqs`` is read as ``--max-num-seqs`` (vLLM's FlexibleArgumentParser)."""
    image_env: dict = field(default_factory=dict)
    """Environment variables the server's official image sets (they apply unless the workload sets its own)."""
    official_images: tuple[str, ...] = ()
    caches: tuple[CacheDir, ...] = ()
    downloads: Optional[CacheDir] = None
    """Where the server puts weights it downloads (a model id rather than a path)."""
    ambiguous: tuple[str, ...] = ()
    """Spellings two flags claim, so the server's reading of them is not defined (TGI's ``-p``)."""
    config_files: tuple[str, ...] = ()
    """Flags that read further settings from a file (vLLM's ``--config`` YAML, FlexibleArgumentParser): with one,
    a setting the command line leaves out is not known to be the default."""
    source: str = ""

    def flag(self, name: str) -> Optional[Flag]:
        key = name.replace("_", "-") if self.underscores else name
        return next((f for f in self.flags if key in f.names), None)

    def env_flag(self, env: str) -> Optional[Flag]:
        return next((f for f in self.flags if f.env and f.env == env), None)


# huggingface_hub constants.py: HF_HUB_CACHE, else the older HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub
HF_DOWNLOADS = CacheDir("Hugging Face downloads", ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME"),
                        "~/.cache/huggingface/hub", below={"HF_HOME": "hub"})
# triton python/triton/runtime/cache.py: TRITON_CACHE_DIR, else Path.home()/.triton/cache (vLLM and SGLang both
# compile Triton kernels at start)
TRITON_KERNEL_CACHE = CacheDir("Triton kernel cache", ("TRITON_CACHE_DIR",), "~/.triton/cache")


@dataclass(frozen=True)
class ServerProfile:
    """A server's health paths and start overhead (catalogs/servers.py tells where each was checked)."""
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
KUBELET_PROBE_DEFAULTS = {"timeoutSeconds": 1, "periodSeconds": 10, "failureThreshold": 3, "initialDelaySeconds": 0}
"""What the kubelet uses for a probe field left out (Kubernetes API, Probe v1 core)."""


@dataclass(frozen=True)
class StartPhase:
    seconds: int
    basis: str


@dataclass(frozen=True)
class GeneratingHealth:
    """A health path whose answer runs a generation, so a healthy answer takes about ``answer_seconds``: a probe
    timeout at or below it fails a healthy server."""
    paths: dict
    """Path -> the first release whose handler generates there ("" for every release)."""
    answer_seconds: float
    switch_env: str = ""
    """The environment variable that turns the generation off ("false"), and the first release that reads it."""
    switch_since: str = ""
    source: str = ""


@dataclass(frozen=True)
class MetricsSwitch:
    """The option that decides whether the server serves ``/metrics`` at all."""
    dest: str
    """The option's dest in the server's flag table (``enable_metrics``)."""
    fact: str
    """The same option among the command-line model's facts (:class:`ServerCli`), for versions the tables lack;
    its ``defaults`` say whether metrics are served when the line does not set it."""
    fix: str
    source: str = ""


@dataclass(frozen=True)
class ServerMetrics:
    path: str = "/metrics"
    on_api_port: bool = True
    """``/metrics`` is served on the API port (vLLM, SGLang, TGI); else on a metrics port of its own (Triton)."""
    switch: Optional[MetricsSwitch] = None


@dataclass(frozen=True)
class CapabilityNeed:
    """A value of an option that needs a GPU of at least (and at most) a compute capability."""
    server: str
    dest: str
    """The option (its argparse dest) and the value that needs the capability."""
    value: str
    minimum: float
    maximum: Optional[float] = None
    source: str = ""
    said: str = ""
    """What the server says when it stops on it."""


# ---------------------------------------------------------------------------------------------- SIGTERM
@dataclass(frozen=True)
class ServerDrain:
    """What a server does with the requests in flight when it receives SIGTERM (catalogs/drain.py tells how a
    serving pod stops)."""
    server: str
    flag: Optional[str]
    """The flag that sets how long it drains (None: the server has none)."""
    since: Optional[tuple[int, ...]]
    """First release that drains on SIGTERM (None: every release this catalog knows)."""
    default_seconds: Optional[int]
    """The drain when the flag is not given: 0 = SIGTERM aborts every request in flight; None = unbounded."""
    ceiling_seconds: Optional[int]
    """A bound the server keeps whatever the flags say (TGI's launcher); None when none."""
    behaviour: str
    before: str
    """What a release before ``since`` does on SIGTERM."""
    source: str
    verified: bool = True
    exit_lag_seconds: int = 0
    """How long after its last request the server may still be running (SGLang's 5 s watchdog period, twice)."""

    def drains(self, version: Optional[tuple[int, ...]]) -> bool:
        """Whether this release can drain at all (a version the tag does not pin is read as the newest)."""
        return self.since is None or version is None or tuple(version) >= self.since

    @property
    def since_text(self) -> str:
        return version_text(self.since) if self.since else "every release"



@dataclass(frozen=True)
class FlagTables:
    """Where a server's flag tables come from: the releases the generator produces a table for
    (``catalogs/server_flags/<name>-<release>.json``); for a parser that is not Python, the repository and file
    whose source at the tag ``<tag_prefix><release>`` is read (gpuplatform/server_sources.py); for an argparse one,
    the released wheel (gpuplatform/server_parsers.py)."""
    releases: tuple
    repository: str = ""
    parser_path: str = ""
    tag_prefix: str = "v"


@dataclass(frozen=True)
class Server:
    """One inference server's profile: everything the package knows of it, filled in by its module."""
    name: str
    title: str
    cli: ServerCli
    """The facts its command line and environment set (listening, metrics, parallelism, secrets, caches)."""
    health: ServerProfile
    """Health paths, probe timeout, start overhead."""
    fastest_start_seconds: int
    """The shortest start less the weights' read this package knows for the server, whatever its options."""
    metrics: ServerMetrics
    flag_tables: FlagTables
    entrypoints: dict
    """Entry point -> the command that runs it (``serve`` -> ``vllm serve``); the flag table has one per entry point."""
    native_parser: bool
    """Its parser is not Python argparse (TGI's clap, Triton's getopt): its table is read from source."""
    image_entrypoint: Optional[str] = None
    """The entry point its official image starts when the pod sets no ``command``."""
    shared_memory_gib: Optional[float] = None
    """The memory-backed ``/dev/shm`` it documents for a replica spanning more than one GPU (None: not read)."""
    model_dests: tuple = ()
    """The flag-table dests that name the model (a hub id or a path), in the order the server prefers them."""
    model_envs: tuple = ()
    """Environment variables that name the model when no flag does (TGI's ``MODEL_ID``)."""
    generating_health: Optional[GeneratingHealth] = None
    start_phases: tuple = ()
    """(name, :class:`StartPhase`) of its start less the weights, when measured phase by phase."""
    least_start: Optional[Callable] = None
    """``least_start(option, version)`` -> the shortest start less the weights with the options the line gives
    (``option(dest)`` -> its value; ``version`` the image's, or None), when the options change it."""
    capability_needs: tuple = ()
    """(:class:`CapabilityNeed`) option values the server stops on at start on a GPU outside their range."""
    value_ranges: dict = field(default_factory=dict)
    """Option dest -> (lowest, highest, whether the lowest itself is allowed, source): values its parser takes but
    the server cannot use."""
    release_dependent: tuple = ()
    """(config path under a workload, what is judged) of the checks of a stack's workload whose verdict depends on
    the server's release beyond its caches and metrics: what an image pinned by a digest alone costs."""
    drain: Optional[ServerDrain] = None
    """What it does with the requests in flight on SIGTERM."""
    default_max_request_seconds: int = 30
    """The longest request assumed when the workload states none and its line caps no tokens."""
    token_limit_flags: tuple = ()
    """The flags that cap the tokens of one request (prompt and output), the first the one to suggest."""
    source: str = ""

    def least_start_seconds(self, option: Callable, version: Optional[tuple]) -> int:
        """The shortest start less the weights' read with the line's options: the lower bound a check that must
        not cry wolf compares with."""
        return self.least_start(option, version) if self.least_start else self.fastest_start_seconds

    def flag_table_versions(self) -> tuple:
        """The versions whose flag table the catalog holds (``catalogs/server_flags/<name>-<version>.json``)."""
        return known_versions(self.name)

    @property
    def official_images(self) -> tuple:
        return self.cli.official_images

    @property
    def secret_flags(self) -> tuple:
        """The flags that take a credential, and the environment variables the server reads them from."""
        return tuple(f for f in self.cli.flags if f.secret)


# ------------------------------------------------------------------------------------------------ model weights
BYTES_PER_PARAMETER = {"float32": 4.0, "float": 4.0, "fp32": 4.0, "bfloat16": 2.0, "float16": 2.0, "half": 2.0,
                       "fp8": 1.0, "int8": 1.0, "int4": 0.5, "awq": 0.5, "gptq": 0.5, "4bit": 0.5, "nf4": 0.5}
"""Bytes of one weight by dtype or quantization (4-bit AWQ/GPTQ/NF4 pack two weights a byte; their scales are left
out, so a size from it is a lower bound). An unquantized checkpoint is taken as 16-bit, as published LLM
checkpoints are."""
_PARAMETERS = re.compile(r"(?<![A-Za-z0-9.])(\d+(?:\.\d+)?)[Bb](?![A-Za-z0-9])")
_EXPERTS = re.compile(r"(?<![A-Za-z0-9.])(\d+)x(\d+(?:\.\d+)?)[Bb](?![A-Za-z0-9])")
_QUANT_IN_NAME = re.compile(r"(?i)(?<![A-Za-z0-9])(awq|gptq|int4|4bit|nf4|fp8|int8)(?![A-Za-z0-9])")


def parameters_in_name(model: str) -> Optional[float]:
    """Billions of parameters a model id states (``meta-llama/Llama-3.1-70B-Instruct`` -> 70,
    ``Qwen3-235B-A22B`` -> 235; a mixture of experts ``8x7B`` -> 7, the one expert it surely holds, a lower bound);
    None when the name states none."""
    name = model.rstrip("/").rsplit("/", 1)[-1]
    experts = _EXPERTS.search(name)
    if experts:
        return float(experts.group(2))
    found = _PARAMETERS.search(name)
    return float(found.group(1)) if found else None


def weights_gib_lower_bound(model: str, dtype: Optional[str] = None, quantization: Optional[str] = None
                            ) -> Optional[float]:
    """GiB of weights a model id implies at least: its stated parameters times the fewest bytes a weight takes by
    the given dtype, quantization and the quantization its name states (None without a stated size)."""
    params = parameters_in_name(model)
    if params is None:
        return None
    hints = [BYTES_PER_PARAMETER.get(str(x).lower()) for x in (dtype, quantization) if x]
    hints += [BYTES_PER_PARAMETER[m.lower()] for m in _QUANT_IN_NAME.findall(model)]
    per = min([h for h in hints if h is not None] or [2.0])
    return params * 1e9 * per / 2 ** 30
