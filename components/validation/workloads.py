"""Rules of a workload's own spec: name, image, ports and probes, env and volumes, its pool, and the GPU it
requests there."""
import posixpath
import re
from typing import Optional

from gpuplatform.catalogs.secrets import SECRET_ENV_PATTERN, credential_in, is_reference, unexpanded_variable
from gpuplatform.catalogs.kubernetes import SERVICE_PROTOCOLS, TMP_MOUNT_PATH
from gpuplatform.catalogs.mig import WHOLE_GPU
from gpuplatform.catalogs.server_cli import SERVER_CLIS
from gpuplatform.components.config import PlatformConfig, Workload
from gpuplatform.components.errors import counted, fmt, one_of
from gpuplatform.components.pools import PoolFacts
from gpuplatform.components.validation.common import _Issues, _suggest

DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
PORT_NAME = re.compile(r"^(?=.*[a-z])[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
SECRET_ENV = re.compile(SECRET_ENV_PATTERN)
METRICS_PATH = re.compile(r"^/[^\s?#]*$")
MAX_WORKLOAD_NAME = 50


def check_workload_name(p: str, i: int, w: Workload, seen: dict[str, int], out: _Issues) -> None:
    """A valid name, and unique: ``seen`` maps each name to the first workload that took it."""
    if not DNS_1035.match(w.name) or len(w.name) > MAX_WORKLOAD_NAME:
        out.add(f"{p}.name", f"{fmt(w.name)} is not a valid workload name; allowed: lowercase letters, digits "
                f"and '-', starting with a letter, at most {MAX_WORKLOAD_NAME} characters")
    if w.name in seen:
        out.add(f"{p}.name", f"{fmt(w.name)} is already used by workloads[{seen[w.name]}]; "
                "workload names must be unique")
    seen.setdefault(w.name, i)


def check_image(cfg: PlatformConfig, p: str, w: Workload, f: Optional[PoolFacts], out: _Issues) -> None:
    name = w.image.rsplit("/", 1)[-1]
    if "@sha256:" in w.image:
        return
    if ":" not in name:
        out.add(f"{p}.image", f"{fmt(w.image)} has no tag; allowed: an explicit version tag or a digest")
    elif name.rsplit(":", 1)[1] == "latest":
        out.add(f"{p}.image", f"{fmt(w.image)} uses 'latest'; allowed: an explicit version tag or a digest")


def _check_metrics_path(p: str, j: int, port, scraped: list[int], out: _Issues) -> None:
    """One port serves the metrics, over HTTP, at an absolute path: the PodMonitor has one endpoint per workload
    and Prometheus scrapes the text format over HTTP, which a gRPC port does not speak."""
    path = port.metrics_path
    if path is not None:
        if port.protocol == "grpc":
            out.add(f"{p}.ports[{j}].metricsPath", f"{fmt(path)} on gRPC port {fmt(port.name)}: Prometheus scrapes "
                    "metrics over plain HTTP; allowed: on an http or metrics port")
        if not METRICS_PATH.match(path):
            out.add(f"{p}.ports[{j}].metricsPath", f"{fmt(path)} is not an HTTP path; allowed: an absolute path "
                    "without query or spaces, e.g. /metrics")
    if port.scrape_path is None:
        return
    if scraped:
        out.add(f"{p}.ports[{j}]", f"{fmt(port.name)} also serves metrics, and ports[{scraped[0]}] already does; the "
                "PodMonitor scrapes one port; allowed: one port with protocol 'metrics' or one serving port with "
                "'metricsPath'")
    scraped.append(j)


def check_ports_and_probes(cfg: PlatformConfig, p: str, w: Workload, f: Optional[PoolFacts], out: _Issues) -> None:
    names, numbers, scraped = set(), {}, []
    for j, port in enumerate(w.ports):
        if not PORT_NAME.match(port.name) or len(port.name) > 15:
            out.add(f"{p}.ports[{j}].name", f"{fmt(port.name)} is not a valid port name; allowed: lowercase letters, "
                    "digits and '-', at least one letter, at most 15 characters")
        if port.name in names:
            out.add(f"{p}.ports[{j}].name", f"{fmt(port.name)} is used twice; port names must be unique")
        if port.container_port in numbers:
            other = w.ports[numbers[port.container_port]]
            hint = ""
            if {port.protocol, other.protocol} & {"metrics"} and {port.protocol, other.protocol} - {"metrics"}:
                serving = other if port.protocol == "metrics" else port
                hint = (f"; a server that serves its metrics on its serving port needs one port: set 'metricsPath' "
                        f"(e.g. /metrics) on {fmt(serving.name)} instead of a second port")
            out.add(f"{p}.ports[{j}].containerPort", f"{port.container_port} is used twice (also by "
                    f"{fmt(other.name)}){hint}")
        _check_metrics_path(p, j, port, scraped, out)
        names.add(port.name)
        numbers.setdefault(port.container_port, j)
    _check_service_ports(p, w, out)
    if not any(port.protocol in ("http", "grpc") for port in w.ports):
        out.add(f"{p}.ports", "no serving port; allowed: at least one port with protocol http or grpc (a server "
                "that serves its API and its metrics on one port: protocol http with 'metricsPath')")
    if w.probes is not None and w.probes.port not in names:
        out.add(f"{p}.probes.port", f"{fmt(w.probes.port)} is not a port of this workload; allowed: "
                f"{one_of(sorted(names))}")


def _check_service_ports(p: str, w: Workload, out: _Issues) -> None:
    """The Service exposes every serving port on its ``servicePort`` (default its container port), and the API
    server refuses a Service that lists one port/protocol twice (kubernetes ``pkg/apis/core/validation/
    validation.go``, ``ValidateService``: ``field.Duplicate`` on ``spec.ports[i]``). Two container ports that
    collide are reported once, under ``containerPort``."""
    taken: dict[int, int] = {}
    for j, port in enumerate(w.ports):
        if port.protocol not in SERVICE_PROTOCOLS:
            continue
        number = port.service_port or port.container_port
        first = taken.setdefault(number, j)
        if first == j or w.ports[first].container_port == port.container_port:
            continue
        field = "servicePort" if port.service_port else "containerPort"
        out.add(f"{p}.ports[{j}].{field}", f"{number} is also the Service port of {fmt(w.ports[first].name)} "
                f"(ports[{first}]), and a Service takes each port once (the API server refuses a duplicate "
                f"port/protocol '{number}/TCP'); allowed: a servicePort no other serving port of the workload uses")


def _check_mount_paths(p: str, w: Workload, out: _Issues) -> None:
    """Every volume mounts at its own path, and never at ``/tmp``, where the writable emptyDir every workload gets
    is mounted: the API server refuses a container that mounts one path twice (kubernetes ``pkg/apis/core/
    validation/validation.go``, ``ValidateVolumeMounts``: "must be unique"). The comparison is of the normalized
    paths: ``/models/`` and ``/models`` are one directory, the second mount hiding the first."""
    taken: dict[str, str] = {posixpath.normpath(TMP_MOUNT_PATH): "the writable /tmp emptyDir every workload gets"}
    for j, vol in enumerate(w.volumes):
        if not vol.mount_path.startswith("/"):
            continue  # not a path at all: k8s_validity says so
        path = posixpath.normpath(vol.mount_path)
        if path in taken:
            out.add(f"{p}.volumes[{j}].mountPath", f"{fmt(vol.mount_path)} is already the mount path of "
                    f"{taken[path]}, and a container mounts each path once (the API server refuses a duplicate "
                    f"mount path); allowed: a path no other volume of the workload uses, other than "
                    f"{TMP_MOUNT_PATH} (e.g. /models)")
        else:
            taken[path] = f"volumes[{j}] ({fmt(vol.name)})"


def credential_message(what: str) -> str:
    """What to say of a credential found in a value (``what``: catalogs/secrets.py ``credential_in``, e.g. ``a URL
    with a user:password@ part``); the value itself is never shown."""
    how = ("the password in 'secretEnv' and the URL built from it, e.g. postgresql://user:$(DB_PASSWORD)@host/db "
           "(Kubernetes expands $(NAME) from the variables defined before it; secretEnv comes first)"
           if what.startswith("a URL") else
           "the token in 'secretEnv' (a reference to a Kubernetes Secret), read by the program from that variable "
           "or passed on the command line as $(NAME)")
    return (f"holds {what} in plain text (value not shown), which would sit in the stack file, the Deployment and "
            f"the stack's state; allowed: {how}")


def check_env_and_volumes(cfg: PlatformConfig, p: str, w: Workload, f: Optional[PoolFacts], out: _Issues) -> None:
    for key, value in w.env.items():
        var = unexpanded_variable(value)
        if SECRET_ENV.search(key) and var:
            out.add(f"{p}.env.{key}", f"{var!r} is not expanded by Kubernetes (only $(NAME) is): the pod would get "
                    "these characters, or a tool would write the secret into the stack before apply; allowed: "
                    "move it to 'secretEnv' (a reference to a Kubernetes Secret)")
        elif SECRET_ENV.search(key) and not is_reference(value):
            out.add(f"{p}.env.{key}", "looks like a secret in plain text; allowed: move it to 'secretEnv' "
                    "(a reference to a Kubernetes Secret)")
        elif credential_in(value):
            out.add(f"{p}.env.{key}", credential_message(credential_in(value)))
    for key in set(w.env) & set(w.secret_env):
        out.add(f"{p}.secretEnv.{key}", "is also set in 'env'; set each variable once")
    vnames = set()
    for j, vol in enumerate(w.volumes):
        if sum(x is not None for x in (vol.nfs, vol.pvc, vol.fluid)) != 1:
            out.add(f"{p}.volumes[{j}]", f"{fmt(vol.name)} needs exactly one source; allowed: nfs, pvc or fluid")
        if vol.name in vnames or vol.name == "tmp":
            out.add(f"{p}.volumes[{j}].name", f"{fmt(vol.name)} is used twice or reserved ('tmp')")
        vnames.add(vol.name)
    _check_mount_paths(p, w, out)


def check_command_line(cfg: PlatformConfig, p: str, w: Workload, f: Optional[PoolFacts], out: _Issues) -> None:
    """``commandLine`` that cannot be written as ``command`` and ``args`` (or comes with them); a credential
    anywhere in ``command`` or ``args`` of a workload that names no server (a server's command line is read flag
    by flag, servers.py, which knows which flags take a credential)."""
    if w.command_line is not None:
        from gpuplatform.components.server_args import split_command_line
        try:
            command, args = split_command_line(w.server, w.image, w.command_line)
        except ValueError as e:
            out.add(f"{p}.commandLine", str(e))
        else:
            if (w.command, w.args) != (command, args):
                out.add(f"{p}.commandLine", "given with command or args; allowed: commandLine alone, or command and "
                        "args alone")
    if w.server in SERVER_CLIS:
        return
    for key, words in (("command", w.command), ("args", w.args)):
        for j, word in enumerate(words):
            what = credential_in(word)
            if what:
                out.add(f"{p}.{key}[{j}]", credential_message(what))


def check_node_pool(cfg: PlatformConfig, p: str, w: Workload, f: Optional[PoolFacts], out: _Issues) -> None:
    pool = cfg.pool(w.node_pool)
    if pool is None:
        out.add(f"{p}.nodePool", f"{fmt(w.node_pool)} is not a node pool of this stack; allowed: "
                f"{one_of(q.name for q in cfg.node_pools)}.{_suggest(w.node_pool, [q.name for q in cfg.node_pools])}")


def _check_mig_profile_request(p: str, w: Workload, f: PoolFacts, out: _Issues) -> None:
    asked = w.gpu.mig_profile
    if f.mode != "mig":
        if asked is not None:
            out.add(f"{p}.gpu.migProfile", f"{fmt(asked)}: pool {fmt(f.name)} uses sharing {f.mode}, not MIG; "
                    "allowed: leave it out")
    elif not f.mig_layout:
        if asked is not None and asked != f.mig_profile:
            out.add(f"{p}.gpu.migProfile", f"{fmt(asked)}: pool {fmt(f.name)} partitions every GPU into "
                    f"{f.mig_profile}; allowed: {f.mig_profile}, or leave it out")
    elif asked is None and len(f.mig_choices) > 1:
        out.add(f"{p}.gpu.migProfile", f"required on pool {fmt(f.name)}, whose per-GPU layout offers several "
                f"kinds of device; allowed: {one_of(f.mig_choices)} ({WHOLE_GPU}: a MIG-disabled GPU)")
    elif asked is not None and asked not in f.mig_choices:
        out.add(f"{p}.gpu.migProfile", f"{fmt(asked)} is not in the layout of pool {fmt(f.name)}; allowed: "
                f"{one_of(f.mig_choices)}")


def check_gpu_request(cfg: PlatformConfig, p: str, w: Workload, f: Optional[PoolFacts], out: _Issues) -> None:
    if f is None:
        return  # nothing is known of the pool's GPUs: the pool's own issues say why
    g = w.gpu
    _check_mig_profile_request(p, w, f, out)
    if f.mode in ("exclusive", "mig"):
        resource = f.resource_for(g) or "a MIG resource"
        unit = "whole GPUs" if f.mode == "exclusive" else f"devices ({resource})"
        if g.count is None:
            out.add(f"{p}.gpu.count", f"required on pool {fmt(f.name)} (sharing {f.mode}): the number of {unit}")
        if g.memory_gib is not None or g.core_percent is not None:
            out.add(f"{p}.gpu", f"memoryGib/corePercent request cGPU, but pool {fmt(f.name)} uses sharing "
                    f"{f.mode}; allowed: count ({resource})")
    else:
        if g.count is not None:
            out.add(f"{p}.gpu.count", f"{g.count}: pool {fmt(f.name)} shares GPUs with cGPU; allowed: "
                    f"memoryGib ({f.resource_name}, GiB per replica)")
        if g.memory_gib is None:
            out.add(f"{p}.gpu.memoryGib", f"required on cGPU pool {fmt(f.name)}: GiB of GPU memory per replica")
        elif f.model.reported_mib is not None and g.memory_gib > f.model.reported_gib:
            out.add(f"{p}.gpu.memoryGib", f"{g.memory_gib} GiB is more than one {f.model.name} card offers "
                    f"({f.model.reported_gib} GiB as the device plugin reports it); allowed: 1..{f.model.reported_gib}")
        if f.cgpu_policy == "core_mem" and g.core_percent is None:
            out.add(f"{p}.gpu.corePercent", f"required on pool {fmt(f.name)} (cGPU policy core_mem isolates compute)")
        if f.cgpu_policy != "core_mem" and g.core_percent is not None:
            out.add(f"{p}.gpu.corePercent", f"{g.core_percent}: only enforced with cGPU policy core_mem; pool "
                    f"{fmt(f.name)} uses {f.cgpu_policy}")
    if not any(issue.path.startswith(f"{p}.gpu") for issue in out) and f.replicas_per_node(g) < 1:
        field, value = ("memoryGib", g.memory_gib) if f.mode == "cgpu" else ("count", g.count)
        have = f.units_for(g)
        unit = f.resource_for(g) if f.mig_layout else f.unit
        out.add(f"{p}.gpu.{field}", f"{value}: one replica needs more than a node of pool {fmt(f.name)} has "
                f"({counted(have, unit) if not f.mig_layout else f'{have} {unit}'} per node), so the pod would stay Pending; allowed: "
                f"1..{have}, or a pool with larger nodes")
