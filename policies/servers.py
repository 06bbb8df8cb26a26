"""Inference servers in any pod-bearing object: each container whose image or command starts vLLM, SGLang, TGI or
Triton is read by that server version's own grammar (catalogs/server_grammar.py, the tables generated from its parser),
the same reading a stack's workloads get (components/server_args.py); then the GPUs it spans are held to the GPUs
the container gets, and a replica that spans more than one to a memory-backed ``/dev/shm``."""
from __future__ import annotations

import re
import shlex
from typing import Any, Mapping, Optional

from gpuplatform.catalogs import server_cli
from gpuplatform.catalogs import server_grammar as grammar
from gpuplatform.catalogs.metrics import image_version
from gpuplatform.catalogs.system_components import image_repository
from gpuplatform.policies import k8s
from gpuplatform.policies.registry import HIGH, MANDATORY, resource_policy

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
