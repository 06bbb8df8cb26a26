"""A pool's warm set (``nodePools[].warmSet``): replicas of several models asleep on the pool's GPUs, one of them
woken when its model needs capacity (docs/model-startup.md, "Sleeping replicas", "Who wakes a sleeping replica").

What a sleeping replica costs is counted here, one source for validation, placement and the docs: its GPU (the
set's ``gpus``, each holding one sleeping replica of every model) and, at sleep level 1, its weights in the host
memory of the node (catalogs/servers.py ``sleeping_host_gib``). The pods that hold them are charged to the pool's
nodes in placement as one holder per warm GPU (:func:`warm_set_pods`), requesting that memory, so the packing
refuses a set whose sleeping weights do not fit a node beside the replicas."""
from __future__ import annotations

from dataclasses import dataclass

from gpuplatform.catalogs import servers
from gpuplatform.catalogs.pods import ClusterPod
from gpuplatform.components.config import NodePool, PlatformConfig, Workload


@dataclass(frozen=True)
class SleepingModel:
    workload: str
    size_gib: float
    host_gib: float
    """Host memory one sleeping replica holds."""
    wake_seconds: float
    """Expected wake-up (catalogs/servers.py ``wake_seconds``): an estimate from cited figures."""


def sleeping_models(cfg: PlatformConfig, pool: NodePool) -> list[SleepingModel]:
    """The set's models that are workloads with a ``model`` on the pool (validation reports the others)."""
    from gpuplatform.components.model_startup import load_estimate
    ws = pool.warm_set
    if ws is None:
        return []
    out = []
    by_name = {w.name: w for w in cfg.workloads}
    for name in ws.models:
        w: Workload | None = by_name.get(name)
        if w is None or w.model is None or w.node_pool != pool.name:
            continue
        est = load_estimate(w)
        reload = est.read_seconds if est is not None else 0.0
        out.append(SleepingModel(name, w.model.size_gib, servers.sleeping_host_gib(w.model.size_gib, ws.sleep_level),
                                 servers.wake_seconds(w.model.size_gib, ws.sleep_level, reload)))
    return out


def sleep_endpoints(w: Workload) -> "servers.SleepMode | None":
    """The sleep mode whose endpoints the workload's server serves on its API port, as its command line reads: vLLM
    with ``--enable-sleep-mode`` and ``VLLM_SERVER_DEV_MODE=1``, SGLang with ``--enable-memory-saver``. None for
    any other. They share the port with the API its clients use, and vLLM cannot serve them elsewhere (its dev
    routes are registered on the one app: llm-d-incubation/llm-d-fast-model-actuation issue #27)."""
    from gpuplatform.catalogs import server_cli as cli
    from gpuplatform.components import server_args
    mode = servers.SLEEP_MODES.get(w.server or "")
    if mode is None:
        return None
    facts = server_args.parse(w)
    if facts is None or not facts.get(cli.SLEEP_MODE):
        return None
    if mode.gate_env is not None and not facts.get(cli.DEV_MODE):
        return None
    return mode


def served_sleep_endpoints(cfg: PlatformConfig, w: Workload) -> "servers.SleepMode | None":
    """The sleep mode whose endpoints the workload's Service may reach: its own servers' (:func:`sleep_endpoints`),
    or, for a model of its pool's warm set, its sleeping replica's in a holder, which the waker routes the
    model's Service to once woken."""
    own = sleep_endpoints(w)
    if own is not None:
        return own
    pool = cfg.pool(w.node_pool)
    if pool is not None and pool.warm_set is not None and w.name in pool.warm_set.models:
        return servers.SLEEP_MODES.get(w.server or "")
    return None


def host_gib_per_gpu(cfg: PlatformConfig, pool: NodePool) -> float:
    """Host memory the sleeping replicas on one warm GPU hold: one of every model."""
    return sum(m.host_gib for m in sleeping_models(cfg, pool))



# --- the objects of a warm set (registered by components/platform.py; placement reads the holders' pods) ---

HOLDER_PORT_BASE = 8100
"""The sleeping replicas' API ports in a holder: ``HOLDER_PORT_BASE + i`` for the i-th model of ``warmSet.models``
(they share the holder's network namespace, so each needs its own; the workloads' own pods keep theirs)."""
AWAKE_LABEL = "gpuplatform.io/awake-model"
"""Set by the waker on a holder pod while one of its replicas is awake: the model's name. The NetworkPolicy that
admits the model's clients to that replica's port selects it; without it only the waker reaches the holder."""
ENDPOINT_SLICE_MANAGER = "warm-set-waker.gpuplatform.io"
"""``endpointslice.kubernetes.io/managed-by`` of the EndpointSlices the waker writes (the EndpointSlice controller
manages only its own, ``endpointslice-controller.k8s.io``; kube-proxy reads every slice of the Service)."""
CONFIG_DIR = "/etc/gpuplatform-warm-set"
READY_FILE = "/tmp/warm-set-ready"
"""Written by the holder program once every replica sleeps (components/warm_set_holder.py); its readiness probe."""
WAKER_CPU, WAKER_MEMORY = "100m", "128Mi"
WAKER_USER = 65532
WAKER_HEALTH_PORT, WAKER_HEALTH_PATH = 8080, "/healthz"
"""What the waker serves for its probes (part of what the docs ask of it): 200 while it watches and can act."""


def holder_name(pool: NodePool) -> str:
    return f"warm-set-{pool.name}"


def waker_name(pool: NodePool) -> str:
    return f"warm-set-{pool.name}-waker"


def _labels(name: str, component: str) -> dict[str, str]:
    from gpuplatform.catalogs.network import PLATFORM_PART_OF
    return {"app.kubernetes.io/name": name, "app.kubernetes.io/component": component,
            "app.kubernetes.io/part-of": PLATFORM_PART_OF, "app.kubernetes.io/managed-by": "pulumi"}


def holder_labels(pool: NodePool) -> dict[str, str]:
    """Not any model's selector labels: the models' Deployments, HPAs, PDBs and Services never count a holder."""
    return _labels(holder_name(pool), "sleeping-replicas")


def waker_labels(pool: NodePool) -> dict[str, str]:
    return _labels(waker_name(pool), "warm-set-waker")


def models_of(cfg: PlatformConfig, pool: NodePool) -> list[Workload]:
    """The set's models that are workloads of the pool on a server that can sleep in a warm set, in the set's order
    (validation reports the others)."""
    by_name = {w.name: w for w in cfg.workloads}
    ws = pool.warm_set
    return [by_name[n] for n in dict.fromkeys(ws.models if ws else [])
            if n in by_name and by_name[n].node_pool == pool.name and by_name[n].server in servers.WARM_SET_SERVERS]


def holder_ports(cfg: PlatformConfig, pool: NodePool) -> dict[str, int]:
    """Model -> its sleeping replica's API port in a holder."""
    return {w.name: HOLDER_PORT_BASE + i for i, w in enumerate(models_of(cfg, pool))}


def _gib(text: str) -> float:
    from gpuplatform.components.pools import _amount
    return _amount(text) / 2 ** 30


def holder_memory_gib(cfg: PlatformConfig, pool: NodePool) -> float:
    """What one holder requests of its node's memory: the weights its sleeping replicas keep (level 1) plus the
    largest model's own ``resources.memory`` for the replica that is awake (a sleeping process's own footprint
    beyond its weights is not counted: no source measured it)."""
    awake = max((_gib(w.resources.memory) for w in models_of(cfg, pool)), default=0.0)
    return round(host_gib_per_gpu(cfg, pool) + awake, 3)


def holder_cpu(cfg: PlatformConfig, pool: NodePool) -> str:
    from gpuplatform.components.pools import _amount
    models = models_of(cfg, pool)
    return max((w.resources.cpu for w in models), key=lambda c: _amount(str(c)), default="1")


def server_argv(w: Workload, port: int) -> list[str]:
    """The sleeping replica's command line: the workload's own (its ``command``, else the image's entry point),
    with sleep mode enabled and the holder's port last (argparse takes the last ``--port``)."""
    from gpuplatform.catalogs.server_grammar import ENTRYPOINTS, IMAGE_ENTRYPOINTS
    mode = servers.SLEEP_MODES[w.server]
    if w.command:
        head = list(w.command)
    else:
        head = ENTRYPOINTS[w.server][IMAGE_ENTRYPOINTS[w.server]].split()
    from gpuplatform.components.drain import drain_chain
    args = list(w.args) + list(drain_chain(w).added_args)
    enable = [f for f in mode.enable_flags if f not in args]
    return head + args + enable + [f"--port={port}"]


def server_env(w: Workload) -> dict[str, str]:
    """The workload's environment with the endpoints' gate (vLLM: ``VLLM_SERVER_DEV_MODE=1``)."""
    from gpuplatform.components import server_args
    env = dict(sorted(server_args.effective_env(w).items()))  # the order the workload's container lists them
    gate = servers.SLEEP_MODES[w.server].gate_env
    if gate is not None:
        env[gate[0]] = gate[1]
    return env


def _path(endpoint: str) -> str:
    """``POST /sleep?level=1|2`` -> ``/sleep``."""
    return endpoint.split()[-1].split("?")[0]


def holder_config(cfg: PlatformConfig, pool: NodePool) -> dict:
    """``servers.json`` of the holder program: each model's environment, port and endpoints, in the order of the
    command lines the container's args hold (:func:`holder_args`)."""
    from gpuplatform.components.model_startup import startup_seconds
    from gpuplatform.components.workload_manifests import probe_paths
    level = pool.warm_set.sleep_level
    out = []
    for w, port in zip(models_of(cfg, pool), holder_ports(cfg, pool).values()):
        mode = servers.SLEEP_MODES[w.server]
        out.append({"model": w.name, "port": port, "env": server_env(w),
                    "health": probe_paths(w)[0] or "/health", "sleep": f"{_path(mode.sleep)}?level={level}",
                    "isSleeping": _path(mode.state), "startSeconds": startup_seconds(w)})
    return {"readyFile": READY_FILE, "sleepLevel": level, "servers": out}


SERVER_SEPARATOR = "--next-server"
"""Precedes each server's command line in the holder's args."""


def holder_args(cfg: PlatformConfig, pool: NodePool) -> list[str]:
    """The servers' command lines in the container's own args, where the kubelet expands ``$(NAME)`` from the
    container's environment and a reader of the pod spec (the policy pack, an auditor) sees every flag."""
    out = [f"{CONFIG_DIR}/servers.json"]
    for w, port in zip(models_of(cfg, pool), holder_ports(cfg, pool).values()):
        out += [SERVER_SEPARATOR, *server_argv(w, port)]
    return out


def _holder_source() -> str:
    from pathlib import Path
    return Path(__file__).with_name("warm_set_holder.py").read_text()


def holder_configmap(cfg: PlatformConfig, pool: NodePool, namespace: str) -> dict:
    import json
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": holder_name(pool), "namespace": namespace, "labels": holder_labels(pool)},
            "data": {"holder.py": _holder_source(), "servers.json": json.dumps(holder_config(cfg, pool), indent=2)}}


def _volumes(models: list[Workload]) -> tuple[list[dict], list[dict]]:
    """(pod volumes, container mounts) of the models' own volumes: one per distinct claim and path (validation
    refuses two models mounting different volumes at one path)."""
    from gpuplatform.components.workload_manifests import _claim
    volumes, mounts, seen = [], [], {}
    for i, w in enumerate(models):
        for v in w.volumes:
            claim = _claim(w, v)
            key = (claim["claimName"], v.mount_path)
            if key in seen:
                continue
            name = f"m{i}-{v.name}"[:63].rstrip("-")
            seen[key] = name
            volumes.append({"name": name, "persistentVolumeClaim": claim})
            mounts.append({"name": name, "mountPath": v.mount_path, "readOnly": bool(claim["readOnly"])})
    return volumes, mounts


def holder_deployment(cfg: PlatformConfig, pool: NodePool, facts, namespace: str) -> dict:
    """One pod per warm GPU: its one container gets the GPU from the device plugin and runs the holder program
    (components/warm_set_holder.py) with a sleeping replica of every model. Restricted Pod Security, no service
    account token (nothing in it calls the API), ``Recreate`` so a new version never waits for a GPU the old one
    holds. Not ready until every replica sleeps."""
    from gpuplatform.catalogs.kubernetes import TMP_MOUNT_PATH, TMP_SIZE_LIMIT_GIB
    from gpuplatform.catalogs import server_cli
    from gpuplatform.components.drain import drain_chain
    from gpuplatform.components.model_startup import STARTUP_PROBE_PERIOD_SECONDS
    from gpuplatform.components.workload_manifests import SHM_VOLUME, _gib as gib_quantity, shared_memory_gib
    models = models_of(cfg, pool)
    first = models[0]
    gpu = {facts.resource_for(first.gpu): "1"}
    resources = {"cpu": holder_cpu(cfg, pool), "memory": f"{holder_memory_gib(cfg, pool):g}Gi", **gpu}
    ports = holder_ports(cfg, pool)
    user = first.run_as_user
    volumes = [{"name": "tmp", "emptyDir": {"sizeLimit": f"{TMP_SIZE_LIMIT_GIB}Gi"}},
               {"name": "warm-set", "configMap": {"name": holder_name(pool)}}]
    mounts = [{"name": "tmp", "mountPath": TMP_MOUNT_PATH},
              {"name": "warm-set", "mountPath": CONFIG_DIR, "readOnly": True}]
    shm = max((shared_memory_gib(w) for w in models), default=0)
    if shm:
        volumes.append({"name": SHM_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": gib_quantity(shm)}})
        mounts.append({"name": SHM_VOLUME, "mountPath": server_cli.SHM_MOUNT_PATH})
    own_volumes, own_mounts = _volumes(models)
    env = [{"name": k, "valueFrom": {"secretKeyRef": {"name": ref.secret_name, "key": ref.key}}}
           for k, ref in sorted({k: r for w in models for k, r in w.secret_env.items()}.items())]
    start = sum(s["startSeconds"] for s in holder_config(cfg, pool)["servers"])
    ready = {"exec": {"command": ["test", "-f", READY_FILE]}}
    container = {
        "name": "sleeping-replicas", "image": first.image, "imagePullPolicy": "IfNotPresent",
        "command": ["python3", f"{CONFIG_DIR}/holder.py"],
        "args": holder_args(cfg, pool),
        "ports": [{"name": f"model-{i}", "containerPort": port, "protocol": "TCP"}
                  for i, port in enumerate(ports.values())],
        "resources": {"requests": dict(resources), "limits": dict(resources)},
        "securityContext": {"allowPrivilegeEscalation": False,
                            "readOnlyRootFilesystem": all(w.read_only_root_filesystem for w in models),
                            "runAsNonRoot": True, "runAsUser": user, "capabilities": {"drop": ["ALL"]},
                            "seccompProfile": {"type": "RuntimeDefault"}},
        "volumeMounts": mounts + own_mounts,
        "startupProbe": {**ready, "periodSeconds": STARTUP_PROBE_PERIOD_SECONDS,
                         "failureThreshold": max(1, start // STARTUP_PROBE_PERIOD_SECONDS)},
        "readinessProbe": {**ready, "periodSeconds": 10, "failureThreshold": 3},
        # the holder program exits when a server does (the kubelet restarts it); a hung server is the waker's to
        # find: /health of a sleeping vLLM still answers
        "livenessProbe": {**ready, "periodSeconds": 30, "failureThreshold": 4},
    }
    if env:
        container["env"] = env
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": holder_name(pool), "namespace": namespace, "labels": holder_labels(pool),
                     "annotations": {"gpuplatform.io/sleeping-replicas": ", ".join(
                         f"{m}:{p}" for m, p in ports.items())}},
        "spec": {
            "replicas": pool.warm_set.gpus,
            "selector": {"matchLabels": {"app.kubernetes.io/name": holder_name(pool)}},
            "strategy": {"type": "Recreate"},
            "template": {
                "metadata": {"labels": holder_labels(pool)},
                "spec": {
                    "automountServiceAccountToken": False,
                    # the awake replica drains as its own Deployment's pods do
                    "terminationGracePeriodSeconds": max(drain_chain(w).grace_s for w in models),
                    "securityContext": {"runAsNonRoot": True, "runAsUser": user, "runAsGroup": user,
                                        "fsGroup": user, "seccompProfile": {"type": "RuntimeDefault"}},
                    "nodeSelector": dict(facts.node_selector),
                    "tolerations": facts.tolerations,
                    "containers": [container],
                    "volumes": volumes + own_volumes,
                },
            },
        },
    }


def hpa_name(w: Workload) -> str:
    """The HPA that scales the model: the package's own, or the one KEDA makes for its ScaledObject
    (``keda-hpa-<name>``, KEDA docs "ScaledObject specification", horizontalPodAutoscalerConfig.name)."""
    return w.name if w.autoscaling.autoscaler == "hpa" else f"keda-hpa-{w.name}"


def endpoint_slice_name(w: Workload, pool: NodePool) -> str:
    return f"{w.name}-{holder_name(pool)}"[:63].rstrip("-")


def waker_config(cfg: PlatformConfig, pool: NodePool, namespace: str) -> dict:
    """``waker.json``: everything the waker needs to know, so it needs no other read of the stack."""
    from gpuplatform.components.workload_manifests import service
    level = pool.warm_set.sleep_level
    ports = holder_ports(cfg, pool)
    models = []
    for w in models_of(cfg, pool):
        mode = servers.SLEEP_MODES[w.server]
        svc_ports = [{"name": p["name"], "port": ports[w.name], "protocol": "TCP",
                      **({"appProtocol": p["appProtocol"]} if "appProtocol" in p else {})}
                     for p in service(w, _NoContext(namespace))["spec"]["ports"]]
        models.append({"model": w.name, "deployment": w.name, "horizontalPodAutoscaler": hpa_name(w),
                       "service": w.name, "holderPort": ports[w.name],
                       "endpointSlice": {"name": endpoint_slice_name(w, pool), "ports": svc_ports},
                       "wake": mode.wake, "sleep": f"POST {_path(mode.sleep)}?level={level}",
                       "isSleeping": mode.state})
    return {"namespace": namespace, "pool": pool.name,
            "holders": {"selector": {"app.kubernetes.io/name": holder_name(pool)}, "awakeLabel": AWAKE_LABEL},
            "endpointSliceManagedBy": ENDPOINT_SLICE_MANAGER, "sleepLevel": level, "models": models}


class _NoContext:
    """The one field of a WorkloadContext the Service builder reads: its namespace."""
    def __init__(self, namespace: str):
        self.namespace = namespace


def waker_objects(cfg: PlatformConfig, pool: NodePool, namespace: str) -> list[dict]:
    """ServiceAccount, Role, RoleBinding, ConfigMap, Deployment and NetworkPolicy of the pool's waker. The Role
    grants what the waker's job needs and no more (docs/model-startup.md, "Who wakes a sleeping replica"):
    reading the holders and labelling the one it wakes; reading the models' Deployments and HPAs, by name;
    writing its own EndpointSlices, by name (``create`` cannot be limited to names: the API server has no name
    before the object exists)."""
    import json
    name = waker_name(pool)
    labels = waker_labels(pool)
    meta = {"name": name, "namespace": namespace, "labels": labels}
    models = models_of(cfg, pool)
    slices = [endpoint_slice_name(w, pool) for w in models]
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": dict(meta), "rules": [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "patch"]},
        {"apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": [w.name for w in models],
         "verbs": ["get"]},
        {"apiGroups": ["autoscaling"], "resources": ["horizontalpodautoscalers"],
         "resourceNames": [hpa_name(w) for w in models], "verbs": ["get"]},
        {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["create"]},
        {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "resourceNames": slices,
         "verbs": ["get", "update", "delete"]},
    ]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": dict(meta),
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
               "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]}
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": dict(meta),
               "automountServiceAccountToken": False}
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": dict(meta),
              "data": {"waker.json": json.dumps(waker_config(cfg, pool, namespace), indent=2)}}
    resources = {"cpu": WAKER_CPU, "memory": WAKER_MEMORY}
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": dict(meta),
        "spec": {
            "replicas": 1,
            # two wakers would race for the same sleeping replica
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
            "template": {"metadata": {"labels": labels}, "spec": {
                "serviceAccountName": name,
                # the one pod of the warm set that calls the API server, so the token is mounted here only
                "automountServiceAccountToken": True,
                "securityContext": {"runAsNonRoot": True, "runAsUser": WAKER_USER, "runAsGroup": WAKER_USER,
                                    "seccompProfile": {"type": "RuntimeDefault"}},
                "containers": [{
                    "name": "waker", "image": pool.warm_set.waker.image, "imagePullPolicy": "IfNotPresent",
                    "env": [{"name": "WARM_SET_CONFIG", "value": f"{CONFIG_DIR}/waker.json"}],
                    "resources": {"requests": dict(resources), "limits": dict(resources)},
                    "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                        "runAsNonRoot": True, "capabilities": {"drop": ["ALL"]},
                                        "seccompProfile": {"type": "RuntimeDefault"}},
                    "volumeMounts": [{"name": "warm-set", "mountPath": CONFIG_DIR, "readOnly": True}],
                    "ports": [{"name": "health", "containerPort": WAKER_HEALTH_PORT, "protocol": "TCP"}],
                    "readinessProbe": {"httpGet": {"path": WAKER_HEALTH_PATH, "port": "health"},
                                       "periodSeconds": 10, "failureThreshold": 3},
                    "livenessProbe": {"httpGet": {"path": WAKER_HEALTH_PATH, "port": "health"},
                                      "periodSeconds": 20, "failureThreshold": 3},
                }],
                "volumes": [{"name": "warm-set", "configMap": {"name": name}}],
            }},
        },
    }
    # nothing calls the waker
    policy = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": dict(meta),
              "spec": {"podSelector": {"matchLabels": {"app.kubernetes.io/name": name}},
                       "policyTypes": ["Ingress"], "ingress": []}}
    return [account, role, binding, config, deployment, policy]


def holder_network_policies(cfg: PlatformConfig, pool: NodePool, namespace: str) -> list[dict]:
    """Who reaches a holder's replicas. The sleep and wake endpoints share each replica's API port with the clients'
    API and a NetworkPolicy cannot filter paths, so: while a holder's replicas all sleep, only the waker reaches
    their ports (the first policy); while the waker has woken one (the holder labelled ``AWAKE_LABEL: <model>``), the
    callers the model's own NetworkPolicy admits reach that replica's port and no other (one policy per model,
    the model's rules with its port in the holder; a model without a NetworkPolicy: any caller, to that port)."""
    from gpuplatform.components.network_policy import peer_object
    from gpuplatform.components.workload_manifests import network_policy, workload_context
    from gpuplatform.components.pools import all_pool_facts
    ports = holder_ports(cfg, pool)
    select = {"app.kubernetes.io/name": holder_name(pool)}
    meta = {"namespace": namespace, "labels": holder_labels(pool)}
    out = [{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": holder_name(pool), **meta},
            "spec": {"podSelector": {"matchLabels": select}, "policyTypes": ["Ingress"],
                     "ingress": [{"from": [{"podSelector": {"matchLabels": {
                         "app.kubernetes.io/name": waker_name(pool)}}}],
                                  "ports": [{"protocol": "TCP", "port": p} for p in ports.values()]}]}}]
    facts = all_pool_facts(cfg)[pool.name]
    for w in models_of(cfg, pool):
        port = [{"protocol": "TCP", "port": ports[w.name]}]
        ctx = workload_context(cfg, w, facts)
        own = network_policy(w, ctx)  # the model's own, as its InferenceService renders it
        # Prometheus scrapes the model's pods, not the holders (no PodMonitor selects them): its rule is left out
        scrapers = [peer_object(peer, ctx.namespace, ctx.network.namespace_labels) for peer in ctx.network.scrapers]
        rules = ([{**({"from": r["from"]} if "from" in r else {}), "ports": port} for r in own["spec"]["ingress"]
                  if not (scrapers and r.get("from") == scrapers)]
                 if own is not None else [{"ports": port}])
        out.append({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                    "metadata": {"name": f"{holder_name(pool)}-{w.name}"[:63].rstrip("-"), **meta},
                    "spec": {"podSelector": {"matchLabels": {**select, AWAKE_LABEL: w.name}},
                             "policyTypes": ["Ingress"], "ingress": rules}})
    return out


def warm_set_namespace(cfg: PlatformConfig, pool: NodePool) -> str:
    models = models_of(cfg, pool)
    return cfg.workload_namespace(models[0]) if models else cfg.settings.namespace


def warm_set_objects(cfg: PlatformConfig, pool: NodePool) -> list[dict]:
    """Every object of the pool's warm set, in the order they are registered: the holders' program and pods, the
    policies around them, then the waker. Empty for a pool without a warm set or whose set names no model."""
    from gpuplatform.components.pools import all_pool_facts
    if pool.warm_set is None or not models_of(cfg, pool):
        return []
    facts = all_pool_facts(cfg).get(pool.name)
    if facts is None:
        return []
    ns = warm_set_namespace(cfg, pool)
    return [holder_configmap(cfg, pool, ns), holder_deployment(cfg, pool, facts, ns),
            *holder_network_policies(cfg, pool, ns), *waker_objects(cfg, pool, ns)]


def warm_set_pods(cfg: PlatformConfig) -> list[ClusterPod]:
    """The holders as placement sees them: the pod template of the rendered Deployment, ``gpus`` of them, on the
    pool's nodes; each requests one GPU and the host memory of :func:`holder_memory_gib`."""
    out = []
    for pool in cfg.node_pools:
        for obj in warm_set_objects(cfg, pool):
            if obj["kind"] != "Deployment" or obj["metadata"]["name"] != holder_name(pool):
                continue
            out.append(ClusterPod(f"warm set of pool {pool.name}",
                                  f"sleeping replicas of {', '.join(pool.warm_set.models)}",
                                  obj["spec"]["template"]["spec"], replicas=obj["spec"]["replicas"],
                                  source="the stack's warm set"))
    return out
