"""Inference servers in any pod-bearing object: each container whose image or command starts vLLM, SGLang, TGI or
Triton is read by that server version's own grammar (catalogs/server_grammar.py, the tables generated from its parser),
the same reading a stack's workloads get (components/server_args.py); then the GPUs it spans are held to the GPUs
the container gets, a replica that spans more than one to a memory-backed ``/dev/shm``, its probes to the server's
health facts and start, a PodMonitor or ServiceMonitor that scrapes it to whether it serves metrics at all, and a
claim its replicas share to the claim's access mode. Every fact is the server's profile (catalogs/server_profiles.py),
the one the stack's manifests and validation read."""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from gpuplatform.catalogs import server_cli
from gpuplatform.catalogs import server_grammar as grammar
from gpuplatform.catalogs import timeouts
from gpuplatform.catalogs.metrics import image_version, parse_version, version_text
from gpuplatform.catalogs.server_base import KUBELET_PROBE_DEFAULTS, Server, weights_gib_lower_bound
from gpuplatform.catalogs.server_profiles import PROFILES
from gpuplatform.catalogs.system_components import image_repository
from gpuplatform.policies import k8s
from gpuplatform.policies.autoscaling import scrapes
from gpuplatform.policies.registry import HIGH, MANDATORY, resource_policy, stack_policy

CATEGORY = "reliability"
_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
SHELLS = ("sh", "bash", "dash", "ash", "zsh")


def _repo_is(image: str, repository: str) -> bool:
    repo = image_repository(image)
    return repo == repository or repo.endswith("/" + repository)


def server_of(c: Mapping) -> Optional[tuple[str, Optional[str], Optional[tuple[str, list[str]]]]]:
    """(server, version text or None, (entry point, argv) or None) of a container that runs vLLM or SGLang: its
    image is the server's official one, or its command starts one of the server's entry points (``vllm serve``,
    ``python3 -m sglang.launch_server``, also inside ``sh -c``). None for any other container."""
    image = str(k8s.get(c, "image") or "")
    command = [str(x) for x in k8s.as_list(k8s.get(c, "command"))]
    args = [str(x) for x in k8s.as_list(k8s.get(c, "args"))]
    env = {str(k8s.get(e, "name")): str(k8s.get(e, "value")) for e in k8s.as_list(k8s.get(c, "env"))
           if k8s.is_map(e) and isinstance(k8s.get(e, "value"), str)}
    words = command + args
    if command and command[0].rsplit("/", 1)[-1] in SHELLS and "-c" in words[:-1]:
        try:
            words, command = shlex.split(words[words.index("-c") + 1], comments=True), []
        except ValueError:
            return None
        command = words
    words = [_expand(w, env) for w in words]
    for server in (*grammar.ENTRYPOINTS, *grammar.NATIVE_ENTRYPOINTS):
        official = any(_repo_is(image, repo) for repo in server_cli.SERVER_CLIS[server].official_images)
        found = grammar.command_entrypoint(server, words) if command else None
        if found is None and not official:
            continue
        vtext = grammar.table_version(server, image_version(image))
        if found is not None:
            return server, vtext, (found[0], words[found[1]:])
        entry = grammar.IMAGE_ENTRYPOINTS.get(server) if not command else None
        return server, vtext, ((entry, words) if entry else None)
    return None


def _expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes' ``$(VAR)`` from the container's plain ``env``; a variable it cannot expand (a Secret's) stands
    for a value not known here."""
    return _REF.sub(lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), grammar.UNKNOWN), text)


def _read(c: Mapping) -> Optional[grammar.Reading]:
    found = server_of(c)
    if found is None:
        return None
    server, version, line = found
    if version is None or line is None or grammar.flag_table(server, version) is None:
        return None
    return grammar.read_any(server, version, line[0], line[1])


def _gpus_given(c: Mapping) -> Optional[int]:
    for kind in ("limits", "requests"):
        value = k8s.get(c, "resources", kind, "nvidia.com/gpu")
        if value is not None:
            try:
                return int(float(str(value)))
            except ValueError:
                return None
    return None


@resource_policy(
    "server-command-line",
    "A vLLM, SGLang, TGI or Triton container's command line is read as the server version its image tag names "
    "reads it (the flag tables generated from its own parser or source): an unknown flag, a value on a switch, a "
    "bad choice, a wrong type "
    "or an ambiguous prefix makes the server exit at start, and so does asking for more GPUs (tensor x pipeline x "
    "data parallel) than the container gets; fewer leaves the rest idle.",
    category=CATEGORY, severity=HIGH, level=MANDATORY, kinds=k8s.POD_KINDS,
    refs=("vLLM engine arguments", "SGLang server arguments"),
    remediation="Write the line as the server's parser takes it (the message names the flag and the version); "
                "request as many nvidia.com/gpu as the parallel sizes multiply to.")
def server_command_line(r, config, report):
    for c in k8s.containers(k8s.pod_spec(r.kind, r.props), init=False):
        reading = _read(c)
        if reading is None:
            continue
        where = f"{r.label} container {k8s.container_name(c)}"
        if not reading.accepted:
            report(f"{where}: {grammar.refusal(reading)}{k8s.at(r.props, c, 'args')}")
            continue
        spans, given = _spans(reading), _gpus_given(c)
        if given is not None and spans is not None and spans != given:
            effect = "fails to start with fewer devices than that" if spans > given else \
                f"leaves {given - spans} of them idle"
            report(f"{where}: {reading.title} spans {spans} GPUs ({_parallel(reading)}) but the container gets "
                   f"{given} (nvidia.com/gpu), so it {effect}; allowed: nvidia.com/gpu {spans}, or parallel sizes "
                   f"that multiply to {given}{k8s.at(r.props, c, 'resources')}")


def _spans(reading: grammar.Reading) -> Optional[int]:
    """GPUs the server spans: vLLM's and SGLang's parallel sizes, TGI's ``--num-shard`` (None without it: a shard
    per visible device), None for Triton (per model configuration)."""
    if reading.server == "tgi":
        return reading.values.get("num_shard")
    if reading.server == "triton":
        return None
    return grammar.gpus_spanned(reading.server, reading.values)


def _parallel(reading: grammar.Reading) -> str:
    if reading.server == "tgi":
        return f"--num-shard {reading.values.get('num_shard')}"
    names = {"tensor_parallel_size": "tensor", "pipeline_parallel_size": "pipeline",
             "data_parallel_size": "data", "data_parallel_size_local": "local data"}
    return " x ".join(f"{names[d]} {reading.values.get(d)}" for d in names if (reading.values.get(d) or 1) > 1) \
        or "1"


def _shm_mounted(spec: Mapping, c: Mapping) -> bool:
    memory_volumes = {k8s.get(v, "name") for v in k8s.as_list(k8s.get(spec, "volumes"))
                      if k8s.get(v, "emptyDir", "medium") == "Memory"}
    return any(k8s.get(m, "mountPath") in (server_cli.SHM_MOUNT_PATH, server_cli.SHM_MOUNT_PATH + "/")
               and k8s.get(m, "name") in memory_volumes for m in k8s.as_list(k8s.get(c, "volumeMounts")))


@resource_policy(
    "server-shared-memory",
    "A vLLM, SGLang or TGI replica that spans more than one GPU exchanges tensors between its workers through "
    "/dev/shm, which the container runtime sizes at 64 MiB: it needs a memory-backed emptyDir mounted there, "
    "sized as the server documents (vLLM 2Gi, SGLang 32Gi, TGI 1Gi).",
    category=CATEGORY, severity=HIGH, level=MANDATORY, kinds=k8s.POD_KINDS,
    refs=("vLLM docs: Using Kubernetes (shared memory)", "SGLang install guide (--shm-size)"),
    remediation="Mount an emptyDir with medium: Memory at /dev/shm (the package's Deployments do; sharedMemoryGib "
                "sizes it).")
def server_shared_memory(r, config, report):
    spec = k8s.pod_spec(r.kind, r.props)
    for c in k8s.containers(spec, init=False):
        reading = _read(c)
        if reading is None or not reading.accepted:
            continue
        spans = _spans(reading)
        if reading.server == "tgi" and spans is None:
            spans = _gpus_given(c)  # a shard per visible device
        if spans is not None and spans > 1 and not _shm_mounted(spec, c):
            size = server_cli.SHARED_MEMORY_GIB[reading.server]
            report(f"{r.label} container {k8s.container_name(c)}: {reading.title} spans {spans} GPUs and "
                   f"{server_cli.SHM_MOUNT_PATH} is the runtime's 64 MiB; allowed: a volume emptyDir {{medium: "
                   f"Memory, sizeLimit: {size:g}Gi}} mounted at {server_cli.SHM_MOUNT_PATH}"
                   f"{k8s.at(r.props, c, 'volumeMounts')}")


# ---------------------------------------------------------------------------------------------- what runs where
@dataclass
class ServerContainer:
    """A container that runs an inference server, as far as its image, command line and environment tell."""
    container: Mapping
    profile: Server
    version: Optional[tuple]
    """The release the image tag pins (None for a tag that names none)."""
    argv: list = field(default_factory=list)
    """The words after the entry point (the server's arguments)."""
    env: dict = field(default_factory=dict)
    reading: Optional[grammar.Reading] = None
    """The line as the server's parser reads it, when the flag tables know the version and the line is accepted."""
    refused: bool = False
    """The server's parser refuses the line (server-command-line says why): what it would do with it is moot."""
    release: Optional[str] = None
    """The server's release as its flag tables name it (Triton's from its NGC container tag), when told."""

    @property
    def title(self) -> str:
        if self.release is not None:
            return f"{self.profile.title} {self.release}"
        if self.version is not None and not self.profile.native_parser:
            return f"{self.profile.title} {version_text(self.version)}"
        return f"{self.profile.title} (a release its image tag does not name)"

    def value(self, dest: str, fact: str = "") -> Any:
        """An option's value: the parser's reading where the tables know the version; else the catalog's flags
        alone (the last ``--name value`` or ``--name=value`` wins, a switch takes none), then the environment
        variable the server reads instead."""
        if self.reading is not None:
            return self.reading.values.get(dest)
        spelled = "--" + dest.replace("_", "-")
        flag = next((f for f in self.profile.cli.flags if (fact and f.fact == fact) or spelled in f.names), None)
        names = flag.names if flag else (spelled,)
        found: Any = None
        for i, word in enumerate(self.argv):
            name, eq, inline = word.partition("=")
            if name not in names:
                continue
            if flag is not None and flag.value == "switch":
                found = True
            elif eq:
                found = inline
            elif i + 1 < len(self.argv):
                found = self.argv[i + 1]
        if found is None and flag is not None and flag.env and flag.env in self.env:
            found = self.env[flag.env]
        return found

    def model(self) -> Optional[str]:
        """The model the line names (a hub id or a path), else the environment variable the server reads it from."""
        for dest in self.profile.model_dests:
            value = self.value(dest)
            if isinstance(value, str) and value and (self.reading is None or dest in self.reading.given):
                return value
        return next((self.env[e] for e in self.profile.model_envs if self.env.get(e)), None)


def server_container(c: Mapping) -> Optional[ServerContainer]:
    """The server a container runs (:func:`server_of`) with its arguments and environment; None for any other."""
    found = server_of(c)
    if found is None:
        return None
    server, vtext, line = found
    env = {str(k8s.get(e, "name")): str(k8s.get(e, "value")) for e in k8s.as_list(k8s.get(c, "env"))
           if k8s.is_map(e) and isinstance(k8s.get(e, "value"), str)}
    out = ServerContainer(c, PROFILES[server], image_version(str(k8s.get(c, "image") or "")),
                          list(line[1]) if line else [], env, release=vtext)
    if vtext is not None and line is not None and grammar.flag_table(server, vtext) is not None:
        reading = grammar.read_any(server, vtext, line[0], line[1])
        out.reading = reading if reading.accepted else None
        out.refused = not reading.accepted
    return out


def _where(label: str, c: Mapping) -> str:
    return f"{label} container {k8s.container_name(c)}"


def _probe_field(probe: Mapping, name: str) -> tuple[int, bool]:
    """(a probe field's value, whether the manifest sets it); the kubelet's default when it does not."""
    value = k8s.quantity(k8s.get(probe, name))
    return (int(value), True) if value is not None else (KUBELET_PROBE_DEFAULTS[name], False)


# ---------------------------------------------------------------------------------------------- probes
def _generates(s: ServerContainer, path: str) -> bool:
    """The server's health answer at ``path`` runs a generation at this version and environment."""
    health = s.profile.generating_health
    if health is None or path not in health.paths:
        return False
    since = health.paths[path]
    if since and s.version is not None and s.version < parse_version(since):
        return False
    switched_off = str(s.env.get(health.switch_env, "")).strip().lower() in ("false", "0")
    return not (health.switch_env and switched_off and (
        s.version is None or s.version >= parse_version(health.switch_since)))


PROBES = ("startupProbe", "readinessProbe", "livenessProbe")


@resource_policy(
    "server-probe-timeout",
    "A probe on the health path of a server whose health answer runs a generation (SGLang's /health from "
    "0.4.10.post2, its /health_generate) takes about a second when the server is healthy: a timeoutSeconds at or "
    "below that (the kubelet's default is 1) reads every healthy answer as a failure, so the replica never turns "
    "Ready or is restarted in a loop.",
    category=CATEGORY, severity=HIGH, level=MANDATORY, kinds=k8s.POD_KINDS,
    refs=("sgl-project/sglang PR #8444 (/health generates)", "mostlygeek/llama-swap#276 (1.001 s)"),
    remediation="Give the probe the server's own probe timeout (SGLang: 21 s, a second over its "
                "SGLANG_HEALTH_CHECK_TIMEOUT), or set SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION=false.")
def server_probe_timeout(r, config, report):
    for c in k8s.containers(k8s.pod_spec(r.kind, r.props), init=False):
        s = server_container(c)
        if s is None or s.refused or s.profile.generating_health is None:
            continue
        health = s.profile.generating_health
        for kind in PROBES:
            probe = k8s.get(c, kind)
            path = str(k8s.get(probe, "httpGet", "path") or "").split("?", 1)[0]
            if not k8s.is_map(probe) or not _generates(s, path):
                continue
            timeout, stated = _probe_field(probe, "timeoutSeconds")
            if timeout > health.answer_seconds:
                continue
            said = f"timeoutSeconds {timeout}" if stated else f"the kubelet's default timeout of {timeout} s"
            report(f"{_where(r.label, c)}: its {kind} GETs {path}, where {s.title} answers only after generating a "
                   f"token (about {health.answer_seconds:g} s when healthy: {health.source}), and {said} reads "
                   f"every healthy answer as a failure; allowed: timeoutSeconds: "
                   f"{s.profile.health.probe_timeout_seconds} (a second over the server's own health timeout), "
                   f"or {health.switch_env}=false in env{k8s.at(r.props, c, kind)}")


def _fails_while_loading(s: ServerContainer, probe: Mapping) -> bool:
    """Whether the probe fails until the model is loaded: a TCP or HTTP check on a server that opens its port only
    then, or an HTTP check on a health path that answers 503 while the server starts."""
    if k8s.get(probe, "tcpSocket") is not None:
        return not s.profile.health.port_opens_before_ready
    path = k8s.get(probe, "httpGet", "path")
    if k8s.get(probe, "httpGet") is None:
        return False  # an exec or gRPC check: what it runs is not read here
    if not s.profile.health.port_opens_before_ready:
        return True
    return _generates(s, str(path or "/").split("?", 1)[0])


def fastest_load_mib_per_second() -> float:
    """The fastest weight read the catalog knows of any source, plain or streamed: what makes a start estimate a
    lower bound."""
    return max(rate.mib_per_second for rates in (timeouts.MODEL_LOAD_RATES, timeouts.STREAMED_LOAD_RATES)
               for rate in rates.values())


def least_start_seconds(s: ServerContainer) -> tuple[float, str]:
    """(the least time the server takes from container start to serving, how that is made up): its measured
    start less the weights (none for a server whose start is only estimated), plus the weights its model id
    implies read at the fastest rate the catalog knows."""
    parts, total = [], 0.0
    if s.profile.start_phases:
        own = s.profile.least_start_seconds(s.value, s.version)
        total += own
        parts.append(f"its own start with these options, {own} s, from measured phases")
    model = s.model()
    gib = weights_gib_lower_bound(model, s.value("dtype"), s.value("quantization") or s.value("quantize")) \
        if model else None
    if gib is not None:
        rate = fastest_load_mib_per_second()
        total += gib * 1024 / rate
        parts.append(f"{model}'s weights, at least {gib:.0f} GiB, read at {rate:g} MiB/s, the fastest source the "
                     "catalog knows")
    return total, " + ".join(parts)


@resource_policy(
    "server-startup-probe",
    "A server's liveness probe fails until the model is loaded (its port opens, or its health path answers, only "
    "then); without a startupProbe the kubelet restarts the container once the liveness probe has failed "
    "failureThreshold times after initialDelaySeconds, which a large model's load outlasts: the replica restarts "
    "in a loop and never serves. The least start is the server's measured start plus the weights its model id "
    "implies, read at the fastest rate the catalog knows.",
    category=CATEGORY, severity=HIGH, level=MANDATORY, kinds=k8s.POD_KINDS,
    refs=("Kubernetes: Configure Liveness, Readiness and Startup Probes (protect slow starting containers)",),
    remediation="Add a startupProbe on the server's ready path whose failureThreshold x periodSeconds covers the "
                "load (the package sizes it at twice the expected load); the liveness probe then starts after it.")
def server_startup_probe(r, config, report):
    for c in k8s.containers(k8s.pod_spec(r.kind, r.props), init=False):
        live = k8s.get(c, "livenessProbe")
        if not k8s.is_map(live) or k8s.get(c, "startupProbe") is not None:
            continue
        s = server_container(c)
        if s is None or s.refused or not _fails_while_loading(s, live):
            continue
        least, how = least_start_seconds(s)
        delay, period, failures = (_probe_field(live, f)[0] for f in
                                   ("initialDelaySeconds", "periodSeconds", "failureThreshold"))
        budget = delay + period * failures
        if not how or budget >= least:
            continue
        period_start = KUBELET_PROBE_DEFAULTS["periodSeconds"]
        sized = timeouts.sized_startup_seconds(least, period_start)
        ready = s.profile.health.ready_path
        report(f"{_where(r.label, c)}: {s.title} takes at least {least:.0f} s to serve ({how}), but its "
               f"livenessProbe restarts it after {budget} s (initialDelaySeconds {delay} + failureThreshold "
               f"{failures} x periodSeconds {period}) and there is no startupProbe, so it restarts before it ever "
               f"serves; allowed: a startupProbe (httpGet {ready}, periodSeconds {period_start}, failureThreshold "
               f"{sized // period_start} or more: {sized} s, twice the least start)"
               f"{k8s.at(r.props, c, 'livenessProbe')}")


# ---------------------------------------------------------------------------------------------- metrics
def metrics_off(s: ServerContainer) -> bool:
    """The server serves no ``/metrics`` at all with this line (SGLang without ``--enable-metrics``, Triton with
    ``--allow-metrics=false``)."""
    switch = s.profile.metrics.switch
    if switch is None:
        return False
    value = s.value(switch.dest, switch.fact)
    if value is grammar.UNKNOWN_VALUE:
        return False  # set from a variable whose value is not known here
    if value is None:
        return s.profile.cli.defaults.get(switch.fact) is False
    if isinstance(value, str):
        return value.strip().lower() in ("false", "off", "0")
    return value is False


@stack_policy(
    "server-metrics-served",
    "A PodMonitor or ServiceMonitor that scrapes the pods of a server which serves no /metrics with its command "
    "line (SGLang without --enable-metrics, off by default; Triton with --allow-metrics=false) gets nothing: the "
    "scrape fails and every series an autoscaler, alert or dashboard reads from the server is missing.",
    category=CATEGORY, severity=HIGH,
    refs=("SGLang docs: Production Metrics (--enable-metrics)", "Triton docs: Metrics (--allow-metrics)"),
    remediation="Turn the server's metrics on (SGLang: --enable-metrics; Triton: drop --allow-metrics=false), or "
                "stop scraping it.")
def server_metrics_served(view, config, report):
    monitors = view.objects("PodMonitor", "ServiceMonitor")
    if not monitors:
        return
    for workload in _pod_bearing(view):
        for pod in k8s.pods_of(workload.kind, workload.props):
            labels = _pod_labels(workload, pod)
            ports = {k8s.get(p, "name") for c in k8s.containers(pod.spec, init=False)
                     for p in k8s.as_list(k8s.get(c, "ports"))}
            scraping = [m for m in monitors if scrapes(view, m, workload, labels, ports)]
            if not scraping:
                continue
            for c in k8s.containers(pod.spec, init=False):
                s = server_container(c)
                if s is None or s.refused or not metrics_off(s):
                    continue
                switch = s.profile.metrics.switch
                names = ", ".join(m.label for m in scraping)
                report(f"{names} scrapes the pods of {workload.label}, whose container {k8s.container_name(c)} runs "
                       f"{s.title}, which serves no /metrics with this command line ({switch.source}), so every "
                       f"scrape fails and its series never exist; allowed: {switch.fix}"
                       f"{k8s.at(workload.props, c, 'args')}", workload)


def _pod_bearing(view) -> list:
    """The Kubernetes objects of the view that carry pods (built-in workloads and custom resources alike)."""
    return [r for r in view.objects(*k8s.POD_KINDS) if r.kind not in ("PodMonitor", "ServiceMonitor")
            and k8s.pods_of(r.kind, r.props)]


def _pod_labels(workload, pod) -> Mapping:
    """The labels of the pods a template makes: its ``metadata.labels`` beside the spec (a bare Pod's own)."""
    if workload.kind == "Pod":
        return k8s.as_map(k8s.get(workload.props, "metadata", "labels"))
    if pod.path and pod.path[-1] == "spec":
        return k8s.as_map(k8s.get(workload.props, *pod.path[:-1], "metadata", "labels"))
    return k8s.pod_labels(workload.kind, workload.props)


# ---------------------------------------------------------------------------------------------- shared claims
SINGLE_NODE_MODES = ("ReadWriteOnce", "ReadWriteOncePod")
"""Access modes a volume attaches with to one node only (ReadWriteOncePod: to one pod): a second replica on another
node waits in ContainerCreating ("Multi-Attach error", Kubernetes "Persistent Volumes", Access Modes)."""


def _replicas_at_most(view, workload) -> int:
    """The most replicas the workload may run: its ``replicas`` (a Job's ``parallelism``; a LeaderWorkerSet's
    groups) or an autoscaler's maximum, whichever is larger."""
    spec = k8s.as_map(k8s.get(workload.props, "spec"))
    key = "parallelism" if workload.kind == "Job" else "replicas"
    stated = k8s.quantity(spec.get(key))
    most = int(stated) if stated is not None else 1
    for scaler in view.scalers_of(workload):
        if scaler.max_replicas is not None:
            most = max(most, scaler.max_replicas)
    return most


def _pods_of_template(workload, pod, replicas: int) -> int:
    """How many pods one template of the workload makes at most: a replica each; in a LeaderWorkerSet a leader per
    group from its leaderTemplate and the other ``size - 1`` (all ``size`` without a leaderTemplate) from its
    workerTemplate (lws api/leaderworkerset/v1 leaderworkerset_types.go)."""
    if workload.kind != "LeaderWorkerSet":
        return replicas
    size = k8s.quantity(k8s.get(workload.props, "spec", "leaderWorkerTemplate", "size"))
    size = int(size) if size is not None else 1
    if "leaderTemplate" in pod.path:
        return replicas
    has_leader = k8s.get(workload.props, "spec", "leaderWorkerTemplate", "leaderTemplate") is not None
    return replicas * (size - 1 if has_leader else size)


def _what_it_holds(s: ServerContainer, mount_path: str) -> str:
    """What the server keeps under ``mount_path``: its caches (by the variables that place them), its downloads,
    or the model it loads."""
    def under(path: str) -> bool:
        return path == mount_path or path.startswith(mount_path.rstrip("/") + "/")
    held = [f"its {cache.what}" + (f" at {s.env[var]}" if var in cache.what else f" ({var}={s.env[var]})")
            for cache in (*s.profile.cli.caches, s.profile.cli.downloads)
            if cache is not None for var in cache.envs if var in s.env and under(s.env[var])]
    model = s.model()
    if model and model.startswith("/") and under(model):
        held.append(f"the model it loads ({model})")
    return " and ".join(dict.fromkeys(held)) or f"what it writes or reads at {mount_path}"


@stack_policy(
    "server-cache-claim-shared",
    "A PersistentVolumeClaim a server's replicas share (its compile cache, its downloads, its weights) must be "
    "mountable on more than one node when the workload may run more than one replica: a ReadWriteOnce volume "
    "attaches to one node, so a replica on another node waits in ContainerCreating (Multi-Attach error); "
    "ReadWriteOncePod admits one pod only.",
    category=CATEGORY, severity=HIGH,
    refs=("Kubernetes: Persistent Volumes, Access Modes",),
    remediation="Use a ReadWriteMany claim (NAS, CPFS) for a cache every replica writes, ReadOnlyMany for weights "
                "written once, or a StatefulSet's volumeClaimTemplates for a cache per replica.")
def server_cache_claim_shared(view, config, report):
    claims = {(pvc.namespace, pvc.obj_name): pvc for pvc in view.objects("PersistentVolumeClaim")}
    for workload in view.objects(*SCALED_KINDS):
        replicas = _replicas_at_most(view, workload)
        pods_on: dict = {}
        mounted: list = []
        for pod in k8s.pods_of(workload.kind, workload.props):
            volumes = {k8s.get(v, "name"): k8s.get(v, "persistentVolumeClaim", "claimName")
                       for v in k8s.as_list(k8s.get(pod.spec, "volumes"))
                       if k8s.get(v, "persistentVolumeClaim") is not None}
            for name in set(volumes.values()):
                pods_on[name] = pods_on.get(name, 0) + _pods_of_template(workload, pod, replicas)
            for c in k8s.containers(pod.spec, init=False):
                for mount in k8s.as_list(k8s.get(c, "volumeMounts")):
                    name = volumes.get(k8s.get(mount, "name"))
                    if name is not None:
                        mounted.append((c, mount, name))
        seen: dict = {}
        for c, mount, name in mounted:
            pvc = claims.get((workload.namespace, name))
            modes = [str(m) for m in k8s.as_list(k8s.get(pvc.props, "spec", "accessModes"))] if pvc else []
            if pods_on.get(name, 0) < 2 or not modes or any(m not in SINGLE_NODE_MODES for m in modes):
                continue
            s = seen[id(c)] if id(c) in seen else seen.setdefault(id(c), server_container(c))
            if s is None or s.refused:
                continue
            path = str(k8s.get(mount, "mountPath") or "")
            report(f"{workload.label} container {k8s.container_name(c)} ({s.title}) keeps "
                   f"{_what_it_holds(s, path)} on {pvc.label}, which is {'/'.join(modes)}, and up to "
                   f"{pods_on[name]} pods of the workload mount it: the volume attaches to one node, so every pod on "
                   f"another node waits in ContainerCreating (Multi-Attach error); allowed: accessModes "
                   f"[ReadWriteMany] (a NAS or CPFS class), [ReadOnlyMany] for weights written once, a StatefulSet's "
                   f"volumeClaimTemplates for a cache per replica, or one replica"
                   f"{k8s.at(workload.props, c, 'volumeMounts')}", workload)


SCALED_KINDS = ("Deployment", "StatefulSet", "ReplicaSet", "ReplicationController", "Job", "LeaderWorkerSet")
"""The kinds whose replicas are copies of their pod templates (a StatefulSet's volumeClaimTemplates are per replica
and are no pod volume)."""
