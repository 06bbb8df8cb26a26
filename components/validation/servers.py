"""Rules of a workload's inference server as its command line makes it run (components/server_args.py reads it
the way the server does, catalogs/server_cli.py says what each flag means): where it listens against the declared
ports and probes, where it serves metrics against the PodMonitor, the GPUs it spans against ``gpu``, its batch
limit against a running-batch target, credentials written in the command line, and the paths it writes under a
read-only root filesystem. A flag the catalog does not model is passed over: no opinion on it."""
import math
from typing import Optional

from gpuplatform.catalogs import server_cli as cli
from gpuplatform.catalogs import server_sglang, server_triton
from gpuplatform.catalogs.kubernetes import HPA_TOLERANCE, TMP_MOUNT_PATH, TMP_SIZE_LIMIT_GIB
from gpuplatform.catalogs.metrics import METRICS, image_version, parse_version
from gpuplatform.components.config import PlatformConfig, Workload
from gpuplatform.components.errors import fmt, one_of
from gpuplatform.components.model_startup import writable_mount  # noqa: F401 (named here too)
from gpuplatform.components.pools import PoolFacts
from gpuplatform.components.server_args import ServerFacts, effective_env, parse, resolve_dir
from gpuplatform.components.validation.common import _Issues
from gpuplatform.components.validation.workloads import credential_message

SERVER_METRICS_PATH = "/metrics"
SGLANG_METRICS_WITHOUT_KEY = server_sglang.METRICS_WITHOUT_KEY_SINCE
TRITON_UNPROBED_CATEGORY = server_triton.UNPROBED_RESTRICTED_CATEGORY


def check_server(cfg: PlatformConfig, p: str, w: Workload, f: Optional[PoolFacts], out: _Issues) -> None:
    facts = parse(w)
    if facts is None:
        return
    for path, message in facts.problems:
        out.add(f"{p}.{path}", message)
    _check_secrets(p, w, facts, out)
    if facts.reading is not None and not facts.reading.accepted:
        return  # the server exits on its command line: what it would do with it is moot
    _check_listening(p, w, facts, out)
    _check_metrics(p, w, facts, out)
    _check_health(p, w, facts, out)
    if f is not None and not any(issue.path.startswith(f"{p}.gpu") for issue in out):
        _check_gpus(p, w, facts, f, out)
    _check_batch_targets(p, w, facts, f, out)
    _check_writable(p, w, facts, out)
    _check_load_format(p, w, facts, out)
    _check_capability_and_ranges(p, w, facts, f, out)


def _check_capability_and_ranges(p: str, w: Workload, facts: ServerFacts, f: Optional[PoolFacts],
                                 out: _Issues) -> None:
    """Option values the parser takes but the server cannot use: a share written as a percentage, a dtype,
    quantization or attention backend the pool's GPU is too old (or new) for (catalogs/server_cli.py
    ``CAPABILITY_NEEDS``, ``RANGES``). Needs the parser's reading (a version the tables know)."""
    reading = facts.reading
    if reading is None or not reading.accepted:
        return
    for (server, dest), (low, high, low_ok, source) in cli.RANGES.items():
        value = reading.values.get(dest)
        if server != facts.server or dest not in reading.given or not isinstance(value, (int, float)):
            continue
        if value > high or value < low or (value == low and not low_ok):
            flag = "--" + dest.replace("_", "-")
            out.add(f"{p}.args", f"{flag} {value:g}: {reading.title} takes a fraction of the GPU's memory "
                    f"({source}); allowed: {'above' if not low_ok else 'from'} {low:g} up to {high:g}"
                    + (f" (did you mean {value / 100:g}?)" if 1 < value <= 100 else ""))
    name = f.model.name if f is not None else None
    capability = cli.COMPUTE_CAPABILITY.get(str(name)) if name else None
    if capability is None:
        return
    for need in cli.CAPABILITY_NEEDS:
        if need.server != facts.server or reading.values.get(need.dest) != need.value:
            continue
        if capability < need.minimum or (need.maximum is not None and capability > need.maximum):
            span = f"{need.minimum:g} to {need.maximum:g}" if need.maximum else f"at least {need.minimum:g}"
            flag = "--" + need.dest.replace("_", "-")
            out.add(f"{p}.args", f"{flag} {need.value}: {reading.title} needs a GPU of compute capability {span} "
                    f"(\"{need.said}\", {need.source}), but pool {fmt(f.name)} has {name} ({capability:g}); "
                    "allowed: another value, or a pool with a newer GPU")


def _check_load_format(p: str, w: Workload, facts: ServerFacts, out: _Issues) -> None:
    """vLLM's ``--load-format runai_streamer`` needs a release that has it (catalogs/server_cli.py
    ``VLLM_RUNAI_STREAMER_SINCE``); an image tag that names no version is not judged."""
    setting = facts.setting(cli.LOAD_FORMAT)
    if facts.server != "vllm" or setting is None or setting.value != cli.RUNAI_STREAMER:
        return
    version = image_version(w.image)
    since = cli.VLLM_RUNAI_STREAMER_SINCE
    if version is not None and version < since:
        out.add(_at(p, setting),
                f"--load-format {cli.RUNAI_STREAMER} needs vLLM >= {'.'.join(map(str, since))} (the Run:ai Model "
                f"Streamer loader came with vllm-project/vllm PR #10192), but image {fmt(w.image)} is "
                f"{'.'.join(map(str, version))}; allowed: a vLLM image >= {'.'.join(map(str, since))}, or another "
                "--load-format")


def _at(p: str, setting) -> str:
    """The stack path of what set a fact (``args``, ``env.PORT``), the workload's ``args`` for a default."""
    return f"{p}.{setting.path}" if setting is not None and setting.path else f"{p}.args"


def _flag(server: str, fact: str) -> str:
    """The long spelling of the flag that sets ``fact``."""
    flag = next((fl for fl in cli.SERVER_CLIS[server].flags if fl.fact == fact), None)
    if flag is None:
        return fact
    return flag.names[0] if flag.names else flag.env


# ---------------------------------------------------------------------------------------------- secrets
def _check_secrets(p: str, w: Workload, facts: ServerFacts, out: _Issues) -> None:
    spec = cli.SERVER_CLIS[facts.server]
    for key, what in facts.credentials:
        out.add(f"{p}.{key}", credential_message(what))
    for key, name in facts.secrets:
        flag = spec.flag(name)
        env = f" or the secretEnv variable {flag.env} (read by {spec.name} itself)" if flag and flag.env else ""
        out.add(f"{p}.{key}", f"{name} is given a credential in plain text: it would sit in the Deployment and the "
                f"stack's state; allowed: a 'secretEnv' variable passed as '{name}=$(NAME)' (Kubernetes expands "
                f"it from the container's environment){env}")


# ---------------------------------------------------------------------------------------------- listening
def _listening(facts: ServerFacts) -> dict[int, tuple[str, str, object]]:
    """Container port -> (protocol it speaks, what it serves, the setting that chose it), for the ports whose number
    is known; a port set from a variable whose value is not known here is left out."""
    roles = {cli.PORT: ("http", "its API"), cli.GRPC_PORT: ("grpc", "its gRPC API"),
             cli.METRICS_PORT: ("metrics", "its metrics"), cli.PROMETHEUS_PORT: ("metrics", "its metrics")}
    out = {}
    for fact, (protocol, what) in roles.items():
        s = facts.setting(fact)
        if s is None or not isinstance(s.value, int):
            continue
        if fact == cli.METRICS_PORT and facts.get(cli.ALLOW_METRICS) is False:
            continue
        if fact == cli.PORT and facts.setting(cli.UDS) is not None:
            continue
        out.setdefault(s.value, (protocol, what, s))
    return out


def _check_listening(p: str, w: Workload, facts: ServerFacts, out: _Issues) -> None:
    server = facts.server
    host = facts.setting(cli.HOST)
    if host is not None and str(host.value).strip() in cli.LOOPBACK:
        out.add(_at(p, host), f"{server} listens on {host.value} ({host.where}): only processes inside the pod reach "
                "that address, and the kubelet's probes and the Service connect to the pod's IP, so no replica "
                f"would ever be Ready; allowed: '{_flag(server, cli.HOST)} 0.0.0.0'")
    uds = facts.setting(cli.UDS)
    if uds is not None:
        out.add(_at(p, uds), f"{uds.where}: vLLM then serves on a Unix socket and listens on no TCP port, so the "
                "Service and the probes reach nothing; allowed: remove --uds")
    main = facts.setting(cli.PORT)
    if main is None or not isinstance(main.value, int) or uds is not None:
        return  # the port comes from a variable (or the image of another build): not known here
    listening = _listening(facts)
    described = ", ".join(f"{n} ({what}, {s.where})" for n, (_, what, s) in sorted(listening.items()))
    declared = {q.container_port for q in w.ports}
    reported = False
    for j, port in enumerate(w.ports):
        role = listening.get(port.container_port)
        if role is None:
            hint = ""
            if port.protocol == "http" and main.value not in declared:
                hint = f", or '{_flag(server, cli.PORT)} {port.container_port}' in args"
            out.add(f"{p}.ports[{j}].containerPort", f"{port.container_port}: {server} listens on no such port; it "
                    f"listens on {described}; allowed: {one_of(str(n) for n in sorted(listening))}{hint}")
            reported = True
            continue
        protocol, what, setting = role
        if port.protocol != protocol:
            out.add(f"{p}.ports[{j}].protocol", f"{fmt(port.protocol)}: {server} serves {what} on "
                    f"{port.container_port} ({setting.where}); allowed: {fmt(protocol)}")
    if not reported and main.value not in declared:
        out.add(f"{p}.ports", f"{server} serves its API on {main.value} ({main.where}), which no port declares, so "
                f"the Service and the probes cannot reach it; allowed: a port with containerPort {main.value}")


# ---------------------------------------------------------------------------------------------- metrics
def _app_targets(w: Workload) -> list[str]:
    """The inference-server metrics the workload scales on."""
    if w.fixed:
        return []
    return [t.metric for t in w.autoscaling.metrics if (m := METRICS.get(t.metric)) is not None and m.category == "app"]


def _check_metrics(p: str, w: Workload, facts: ServerFacts, out: _Issues) -> None:
    server = facts.server
    targets = _app_targets(w)
    scraped = [(j, port) for j, port in enumerate(w.ports) if port.scrape_path is not None]
    named = ", ".join(fmt(name) for name in targets)
    if server == "sglang" and facts.get(cli.ENABLE_METRICS) is False and (targets or scraped):
        what = f"{named} would have no series and the PodMonitor's scrape would fail" if targets else \
            "the PodMonitor's scrape would fail"
        out.add(f"{p}.args", f"SGLang serves no /metrics without --enable-metrics (off by default): {what}; "
                "allowed: add '--enable-metrics' to args")
    stats = facts.setting(cli.DISABLE_LOG_STATS)
    if server == "vllm" and stats is not None and stats.value is True and targets:
        out.add(_at(p, stats), f"{stats.where}: vLLM then records no engine statistics, so its vllm:* metrics "
                f"({named}) are never exported and the autoscaler has nothing to read; allowed: remove "
                "--disable-log-stats")
    allow = facts.setting(cli.ALLOW_METRICS)
    if server == "triton" and allow is not None and allow.value is False and (targets or scraped):
        out.add(_at(p, allow), f"{allow.where}: Triton then serves no metrics port, and the workload scrapes "
                "metrics; allowed: remove it (true by default)")
    listening = _listening(facts)
    for j, port in scraped:
        role = listening.get(port.container_port)
        if role is None:
            continue  # nothing listens there at all: the listening rule says so
        protocol, what, setting = role
        if server == "triton" and protocol != "metrics":
            metrics = next((n for n, r in listening.items() if r[0] == "metrics"), None)
            allowed = (f"a port with protocol 'metrics' and containerPort {metrics}" if metrics is not None
                       else "remove --allow-metrics=false and add a metrics port")
            out.add(f"{p}.ports[{j}].metricsPath", f"{fmt(port.metrics_path)} on {port.container_port}: Triton "
                    "serves /metrics only on its metrics port (src/http_server.cc: the HTTP API answers 404 there); "
                    f"allowed: {allowed}")
            continue
        if port.scrape_path.rstrip("/") != SERVER_METRICS_PATH:
            out.add(f"{p}.ports[{j}].metricsPath", f"{fmt(port.scrape_path)}: {server} serves its metrics at "
                    f"{SERVER_METRICS_PATH}; allowed: {SERVER_METRICS_PATH}")
    key = facts.setting(cli.API_KEY)
    version = image_version(w.image)
    if (server == "sglang" and key is not None and scraped and version is not None
            and version < parse_version(SGLANG_METRICS_WITHOUT_KEY)):
        out.add(_at(p, key), f"{key.where}: SGLang before {SGLANG_METRICS_WITHOUT_KEY} guards /metrics with the API "
                f"key too, and the PodMonitor scrapes without it; allowed: an image of SGLang "
                f"{SGLANG_METRICS_WITHOUT_KEY} or later, or no --api-key")


def _check_health(p: str, w: Workload, facts: ServerFacts, out: _Issues) -> None:
    restricted = facts.setting(cli.RESTRICTED)
    if facts.server == "triton" and restricted is not None and TRITON_UNPROBED_CATEGORY in restricted.value:
        out.add(_at(p, restricted), f"{restricted.where}: Triton then answers /v2/health/* only to requests that "
                "carry the header, and the kubelet's probes carry none, so no replica would ever be Ready; "
                "allowed: restrict the other categories (inference, model-repository, ...) and leave health open")


# ---------------------------------------------------------------------------------------------- GPUs
def _parallelism(facts: ServerFacts) -> str:
    names = {cli.TP: "tensor", cli.PP: "pipeline", cli.PCP: "prefill-context", cli.DP_LOCAL: "data (local)",
             cli.DP: "data", cli.NUM_SHARD: "shards"}
    parts = []
    for fact, name in names.items():
        s = facts.setting(fact)
        if s is not None and s.path:
            if fact == cli.DP and facts.setting(cli.DP_LOCAL) is not None:
                continue
            parts.append(f"{name} {s.value} ({s.where})")
    return " x ".join(parts) or "its defaults"


def _check_gpus(p: str, w: Workload, facts: ServerFacts, f: PoolFacts, out: _Issues) -> None:
    n = facts.gpus
    server = facts.server
    mode = f.mode_for(w.gpu)
    if mode in ("cgpu", "mig"):
        seen = ("a cGPU share shows the container one card" if mode == "cgpu" else
                "a CUDA process enumerates a single MIG device however many the container gets (NVIDIA MIG User "
                "Guide, CUDA Device Enumeration)")
        if n is not None and n > 1:
            out.add(f"{p}.args", f"{server} spans {n} GPUs ({_parallelism(facts)}), but on pool {fmt(f.name)} "
                    f"(sharing {mode}) {seen}, so its other ranks find no device; allowed: one GPU per replica "
                    "(parallel sizes 1), or a pool with whole GPUs")
        elif mode == "mig" and (w.gpu.count or 1) > 1:
            out.add(f"{p}.gpu.count", f"{w.gpu.count}: {seen}, so {server} uses one of them and the rest stay "
                    "idle (a server that starts a rank per visible device fails on the second); allowed: 1, or a "
                    "larger MIG profile")
        return
    count = w.gpu.count or 1
    if n is None or n == count:
        return
    if n > count:
        out.add(f"{p}.gpu.count", f"{count}: {server} spans {n} GPUs ({_parallelism(facts)}) and fails to start "
                f"with fewer devices than that; allowed: {n}, or smaller parallel sizes")
    else:
        out.add(f"{p}.gpu.count", f"{count}: {server} spans {n} GPU{'s' if n > 1 else ''} ({_parallelism(facts)}), "
                f"so {count - n} of the replica's GPUs would stay idle; allowed: {n}, or parallel sizes that use "
                f"all {count}")


# ---------------------------------------------------------------------------------------------- batch limit
def batch_limit(w: Workload, facts: ServerFacts, f: Optional[PoolFacts]) -> Optional[tuple[int, str]]:
    """(most requests a replica runs at once, what sets it), when it is known: vLLM's ``--max-num-seqs`` (by
    default by release and device memory: catalogs/server_cli.py), SGLang's ``--max-running-requests`` (only
    when given: derived from memory at start), TGI's ``--max-concurrent-requests`` (128; its ``--max-batch-size``
    is ignored by models that chunk prefill: backends/v3/src/backend.rs); times the data-parallel engines."""
    server = facts.server
    s = facts.setting(cli.MAX_CONCURRENT if server == "tgi" else cli.MAX_BATCH)
    if s is not None and isinstance(s.value, int):
        limit, where = s.value, s.where
    elif server == "vllm" and f is not None and not facts.config_file:
        gib, what = f.device_gpu_memory(w.gpu)
        limit = cli.vllm_max_num_seqs(image_version(w.image), gib, f.model.name)
        where = f"vLLM's default --max-num-seqs on {what}"
    else:
        return None
    dp = facts.data_parallel
    if dp > 1:
        return limit * dp, f"{where}, x {dp} data-parallel engines"
    return limit, where


def _check_batch_targets(p: str, w: Workload, facts: ServerFacts, f: Optional[PoolFacts], out: _Issues) -> None:
    if w.fixed:
        return
    for k, t in enumerate(w.autoscaling.metrics):
        if cli.BATCH_METRICS.get(t.metric) != facts.server or t.target is None or t.target <= 0:
            continue
        known = batch_limit(w, facts, f)
        if known is None:
            continue
        limit, where = known
        ceiling = limit / (1 + HPA_TOLERANCE)
        if t.target >= ceiling:
            below = math.ceil(ceiling) - 1 if ceiling > 1 else None
            allowed = f"<= {below}" if below else "a smaller target"
            out.add(f"{p}.autoscaling.metrics[{k}].target",
                    f"{t.target:g} requests running: {facts.server} runs at most {limit} at once ({where}), and the "
                    f"HPA scales up only when the metric is more than {HPA_TOLERANCE:.0%} above its target, which a "
                    f"full batch ({limit}) never is; allowed: {allowed}, or raise "
                    f"{_flag(facts.server, cli.MAX_CONCURRENT if facts.server == 'tgi' else cli.MAX_BATCH)}")


# ---------------------------------------------------------------------------------------------- writable paths
def _check_writable(p: str, w: Workload, facts: ServerFacts, out: _Issues) -> None:
    if not w.read_only_root_filesystem:
        return
    spec = cli.SERVER_CLIS[facts.server]
    image_env = dict(spec.image_env) if facts.official_image else {}
    env = effective_env(w)
    version = image_version(w.image)
    unwritable: dict[str, list[str]] = {}
    for cache in spec.caches:
        if cache.since and version is not None and version < parse_version(cache.since):
            continue
        path, why = resolve_dir(cache, env, image_env)
        if "$" in path or writable_mount(path, w) is not None:
            continue
        var = next((name for name in cache.envs if name in w.env), None)
        where = f"{p}.env.{var}" if var else (f"{p}.env.HOME" if "HOME" in w.env else f"{p}.env")
        unwritable.setdefault(where, []).append(f"its {cache.what} to {path} ({why})")
    for where, what in unwritable.items():
        out.add(where, f"{spec.name} writes {' and '.join(what)}, on the read-only root filesystem; allowed: a path "
                "under /tmp or under a volume mounted with readOnly: false")
    if w.model is None or w.model.source != "download" or spec.downloads is None:
        return
    chosen = facts.setting(cli.DOWNLOAD_DIR)
    if chosen is not None and chosen.path and isinstance(chosen.value, str):
        path, why, where = chosen.value, chosen.where, f"{p}.{chosen.path}"
    else:
        path, why = resolve_dir(spec.downloads, env, image_env)
        var = next((name for name in spec.downloads.envs if name in w.env), None)
        where = f"{p}.env.{var}" if var else f"{p}.model.source"
    if "$" in path:
        return
    mount = writable_mount(path, w)
    if mount is None:
        out.add(where, f"source 'download': {spec.name} downloads the weights to {path} ({why}), on the read-only "
                "root filesystem; allowed: a volume mounted there with readOnly: false, or the download directory "
                "set to one")
    elif mount == TMP_MOUNT_PATH and w.model.size_gib > TMP_SIZE_LIMIT_GIB:
        out.add(where, f"source 'download': {spec.name} downloads {w.model.size_gib:g} GiB of weights to {path} "
                f"({why}), in the /tmp emptyDir of {TMP_SIZE_LIMIT_GIB} GiB (the kubelet evicts a pod past an "
                "emptyDir's sizeLimit); allowed: a volume with readOnly: false large enough for the weights, "
                "mounted there or named by the download directory")
