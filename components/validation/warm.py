"""Rules of warm capacity (``autoscaling.warmReplicas``): placeholder pods that keep room for replicas on the pool
(components/warm_capacity.py)."""
from typing import Optional

from gpuplatform.components.config import PlatformConfig, Workload
from gpuplatform.components.errors import fmt
from gpuplatform.components.pools import PoolFacts
from gpuplatform.components.validation.common import _Issues
from gpuplatform.catalogs import servers
from gpuplatform.catalogs.metrics import image_version
from gpuplatform.components.pools import _amount
from gpuplatform.components.warm_set import host_gib_per_gpu, holder_memory_gib
from gpuplatform.components.warm_set import models_of
from gpuplatform.components.workload_manifests import _claim


def check_warm_capacity(cfg: PlatformConfig, p: str, w: Workload, f: Optional[PoolFacts], out: _Issues) -> None:
    """Placeholders need an autoscaler to preempt them (a fixed count never grows into their room) and a pool whose
    cluster autoscaler adds nodes (on a fixed-size pool every node is there anyway: they would only hold GPUs); the
    pool at its most nodes must hold the workload's most replicas and its placeholders together, or the replica
    that preempted the last placeholder leaves it Pending for good. A KEDA workload at ``minReplicas: 0`` may hold
    them: they keep a node ready while it sleeps, so waking skips node provisioning."""
    n = w.autoscaling.warm_replicas
    if not n:
        return
    pw = f"{p}.autoscaling.warmReplicas"
    if w.fixed:
        out.add(pw, f"{n}: placeholders make room for replicas an autoscaler adds, but the workload runs a fixed "
                "count; allowed: 0, or autoscaler hpa or keda")
        return
    pool = cfg.pool(w.node_pool)
    if pool is not None and not pool.autoscaling:
        out.add(pw, f"{n}: pool {fmt(pool.name)} has a fixed size (autoscaling: false), so its nodes are there "
                "whether or not placeholders hold them and no node is ever provisioned for a replica; allowed: 0, "
                "or autoscaling: true on the pool")
        return
    if f is None or any(issue.path.startswith((f"{p}.gpu", f"{p}.autoscaling.maxReplicas")) for issue in out):
        return
    cap = f.max_replicas(w.gpu)
    room = cap - w.autoscaling.max_replicas
    if n > room:
        out.add(pw, f"{n} placeholders do not fit pool {fmt(f.name)} beside maxReplicas "
                f"{w.autoscaling.max_replicas}: it holds {cap} replicas at most ({f.replicas_per_node(w.gpu)} per "
                f"node x {f.max_nodes} nodes); allowed: <= {max(room, 0)}, or raise the pool's maxNodes")


def check_warm_sets(cfg: PlatformConfig, facts: dict[str, PoolFacts], out: _Issues) -> None:
    """A pool's warm set (``nodePools[].warmSet``, components/warm_set.py): its models are vLLM workloads on the pool
    of a release with sleep mode, with their weights stated; whole GPUs; no more GPUs than the pool has; and the
    host memory the sleeping replicas of one GPU keep fits a node of the pool beside a replica."""

    by_name = {w.name: w for w in cfg.workloads}
    allowed = ", ".join(f"{s} >= {'.'.join(map(str, v))}" for s, v in servers.WARM_SET_SERVERS.items())
    for i, pool in enumerate(cfg.node_pools):
        ws = pool.warm_set
        if ws is None:
            continue
        p = f"nodePools[{i}].warmSet"
        on_pool = sorted(w.name for w in cfg.workloads if w.node_pool == pool.name)
        seen: set[str] = set()
        for j, name in enumerate(ws.models):
            pm = f"{p}.models[{j}]"
            if name in seen:
                out.add(pm, f"{fmt(name)} is listed twice; each model has one sleeping replica per warm GPU")
                continue
            seen.add(name)
            w = by_name.get(name)
            if w is None and not out.whole_stack:
                continue  # a composed program may add the service after this one
            if w is None or w.node_pool != pool.name:
                where = "no workload of the stack" if w is None else f"on pool {fmt(w.node_pool)}"
                out.add(pm, f"{fmt(name)} is {where}: a warm set holds replicas of workloads on its own pool; "
                        f"allowed: {', '.join(map(fmt, on_pool)) or 'none (no workload runs on this pool)'}")
                continue
            since = servers.WARM_SET_SERVERS.get(w.server or "")
            version = image_version(w.image)
            shown = ".".join(map(str, version)) if version else "an unknown version"
            if since is None:
                out.add(pm, f"{fmt(name)} runs {w.server or 'no named server'} ({w.image}, {shown}), which cannot "
                        "sleep in a warm set"
                        + ("; SGLang serves its release/resume endpoints to every client with no gate and says "
                           "nowhere whether it is released" if w.server == "sglang" else "")
                        + f"; allowed: {allowed}")
                continue
            if version is None or version < since:
                out.add(pm, f"{fmt(name)} runs {w.server} {shown} ({w.image}), which has no sleep mode the package "
                        f"read; allowed: {allowed} (an image tag naming the release)")
                continue
            if w.model is None:
                out.add(pm, f"{fmt(name)} states no model: the host memory its sleeping replicas hold is its "
                        f"weights; allowed: a workload with workloads[].model.sizeGib")
            _check_holdable(cfg, pm, w, out)
        _check_one_container(cfg, p, pool, out)
        f = facts.get(pool.name)
        if f is None:
            continue
        if f.mode != "exclusive":
            out.add(p, f"pool {fmt(pool.name)} shares its GPUs ({f.mode}): the sleeping replicas of a warm GPU "
                    "take turns on a whole GPU; allowed: sharing.mode exclusive")
        total = f.max_nodes * f.gpus_per_node
        users = [w for w in cfg.workloads if w.node_pool == pool.name and w.gpu.count]
        held = sum(w.pod_ceiling * w.gpu.count for w in users)
        if ws.gpus + held > total:
            shown = ", ".join(f"{w.name} {w.pod_ceiling} x {w.gpu.count}" for w in users) or "none"
            out.add(f"{p}.gpus", f"{ws.gpus} GPUs, but pool {fmt(pool.name)} has {total} at most ({f.max_nodes} "
                    f"nodes x {f.gpus_per_node}) and its workloads hold {held} at their most replicas ({shown}); "
                    f"allowed: <= {max(total - held, 0)}, or raise maxNodes")
        node_bytes = f.allocatable_memory_bytes
        if node_bytes is None:
            continue
        per_node = min(ws.gpus, f.gpus_per_node)
        weights = host_gib_per_gpu(cfg, pool)
        holder = holder_memory_gib(cfg, pool)
        host = holder * per_node
        replica = max((_amount(by_name[n].resources.memory) for n in ws.models if n in by_name), default=0.0)
        room = (node_bytes - replica) / 2 ** 30
        if host > room + 1e-9:
            out.add(p, f"the holder of a warm GPU requests {holder:g} GiB of host memory ({weights:g} GiB of "
                    f"sleeping weights, sleepLevel {ws.sleep_level}, + {holder - weights:g} GiB for the replica "
                    f"awake), {host:g} GiB on a node with {per_node} warm GPU(s), but a node of pool "
                    f"{fmt(pool.name)} offers {node_bytes / 2 ** 30:.1f} GiB and a replica requests "
                    f"{replica / 2 ** 30:g} GiB of it, leaving {room:.1f}; allowed: <= {room:.1f} GiB, i.e. "
                    "fewer models, sleepLevel 2 (weights discarded, read again on wake), or a larger instance type")


_SHELLS = frozenset({"sh", "bash", "dash", "ash", "zsh"})


def _check_holdable(cfg: PlatformConfig, pm: str, w: Workload, out: _Issues) -> None:
    """What the holder of a warm GPU needs of a model (components/warm_set_objects.py ``holder_deployment``): an autoscaler
    whose wish the waker reads, one GPU per replica, restricted Pod Security, and a command line it can extend."""
    name = fmt(w.name)
    if w.fixed:
        out.add(pm, f"{name} runs a fixed replica count: the waker wakes a sleeping replica when the model's "
                "autoscaler wants more replicas than are ready, and a fixed count never does; allowed: a workload "
                "with autoscaling.autoscaler hpa or keda")
    if (w.gpu.count or 0) != 1:
        out.add(pm, f"{name} takes {w.gpu.count or 0} GPU(s) per replica: a warm GPU holds replicas of one GPU, "
                "taking turns on it; allowed: a workload with gpu.count 1")
    if w.run_as_root:
        out.add(pm, f"{name} runs as root (runAsRoot): the holder runs under restricted Pod Security in the "
                "workloads' namespace; allowed: a workload without runAsRoot")
    if w.command and w.command[0].rsplit("/", 1)[-1] in _SHELLS:
        out.add(pm, f"{name} starts through a shell ({w.command[0]}): the holder appends --enable-sleep-mode and "
                "its own --port to the server's command line, which a script would not pass on; allowed: the "
                "server's command, or none (the image's entry point)")


def _check_one_container(cfg: PlatformConfig, p: str, pool, out: _Issues) -> None:
    """The sleeping replicas of a warm GPU share one container (the device plugin hands the GPU to one): one
    image, one user, one file system view (no two volumes at one path) and one value per secret variable."""
    models = models_of(cfg, pool)
    if len(models) < 2:
        return
    first = models[0]
    for w in models[1:]:
        if w.image != first.image:
            out.add(f"{p}.models", f"{fmt(w.name)} runs {w.image} and {fmt(first.name)} {first.image}: a warm GPU's "
                    "replicas share one container, so one image; allowed: the same image for every model")
        if w.run_as_user != first.run_as_user:
            out.add(f"{p}.models", f"{fmt(w.name)} runs as user {w.run_as_user} and {fmt(first.name)} as "
                    f"{first.run_as_user}: a warm GPU's replicas share one container; allowed: one runAsUser")
    mounted: dict[str, tuple[str, str]] = {}
    secrets: dict[str, tuple[str, tuple]] = {}
    for w in models:
        for v in w.volumes:
            claim = _claim(w, v)["claimName"]
            seen = mounted.setdefault(v.mount_path, (w.name, claim))
            if seen[1] != claim:
                out.add(f"{p}.models", f"{fmt(w.name)} mounts claim {fmt(claim)} at {v.mount_path}, where "
                        f"{fmt(seen[0])} mounts {fmt(seen[1])}: a warm GPU's replicas share one container's file "
                        "system; allowed: a distinct mountPath per volume (and the server's paths under it)")
        for k, ref in w.secret_env.items():
            seen_ref = secrets.setdefault(k, (w.name, (ref.secret_name, ref.key)))
            if seen_ref[1] != (ref.secret_name, ref.key):
                out.add(f"{p}.models", f"{fmt(w.name)} sets secretEnv {k} from {ref.secret_name}/{ref.key} and "
                        f"{fmt(seen_ref[0])} from {'/'.join(seen_ref[1])}: a warm GPU's replicas share one "
                        "container's environment; allowed: one source per variable")
