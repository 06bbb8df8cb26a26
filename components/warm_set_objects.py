"""The Kubernetes objects of a pool's warm set (components/warm_set.py holds what it costs, its names and ports): the
holder program's ConfigMap and the holders' Deployment, the NetworkPolicies around them, and the waker's objects
(docs/model-startup.md, "Who wakes a sleeping replica"). Registered by components/platform.py; placement charges the
rendered holder (:func:`warm_set_pods`)."""
from __future__ import annotations

from pathlib import Path

from gpuplatform.catalogs import servers
from gpuplatform.catalogs.images import PYTHON_IMAGE
from gpuplatform.catalogs.pods import ClusterPod
from gpuplatform.components.config import NodePool, PlatformConfig, Workload
from gpuplatform.components.warm_set import (AWAKE_LABEL, CONFIG_DIR, ENDPOINT_SLICE_MANAGER, READY_FILE, WAKER_CPU,
                                             WAKER_HEALTH_PATH, WAKER_HEALTH_PORT, WAKER_MEMORY, WAKER_USER,
                                             holder_labels, holder_memory_gib, holder_name, holder_ports, models_of,
                                             waker_labels, waker_name)
from gpuplatform.components.pools import _amount
from gpuplatform.catalogs.server_grammar import ENTRYPOINTS, IMAGE_ENTRYPOINTS
from gpuplatform.components.drain import drain_chain
from gpuplatform.components import server_args
from gpuplatform.components.model_startup import startup_seconds
from gpuplatform.components.workload_manifests import probe_paths
from gpuplatform.components.workload_manifests import _claim
from gpuplatform.catalogs.kubernetes import TMP_MOUNT_PATH, TMP_SIZE_LIMIT_GIB
from gpuplatform.catalogs import server_cli
from gpuplatform.components.model_startup import STARTUP_PROBE_PERIOD_SECONDS
from gpuplatform.components.workload_manifests import SHM_VOLUME, _gib as gib_quantity, shared_memory_gib
from gpuplatform.components.workload_manifests import service
from gpuplatform.components.network_policy import peer_object
from gpuplatform.components.workload_manifests import network_policy, workload_context
from gpuplatform.components.pools import all_pool_facts


def holder_cpu(cfg: PlatformConfig, pool: NodePool) -> str:
    models = models_of(cfg, pool)
    return max((w.resources.cpu for w in models), key=lambda c: _amount(str(c)), default="1")


def server_argv(w: Workload, port: int) -> list[str]:
    """The sleeping replica's command line: the workload's own (its ``command``, else the image's entry point),
    with sleep mode enabled and the holder's port last (argparse takes the last ``--port``)."""
    mode = servers.SLEEP_MODES[w.server]
    if w.command:
        head = list(w.command)
    else:
        head = ENTRYPOINTS[w.server][IMAGE_ENTRYPOINTS[w.server]].split()
    args = list(w.args) + list(drain_chain(w).added_args)
    enable = [f for f in mode.enable_flags if f not in args]
    return head + args + enable + [f"--port={port}"]


def server_env(w: Workload) -> dict[str, str]:
    """The workload's environment with the endpoints' gate (vLLM: ``VLLM_SERVER_DEV_MODE=1``)."""
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


def _waker_source() -> str:
    return Path(__file__).with_name("warm_set_waker.py").read_text()


def waker_image(pool: NodePool) -> str:
    """``warmSet.waker.image`` when the stack overrides it, else the pinned Python image the shipped program runs on
    (catalogs/images.py ``PYTHON_IMAGE``)."""
    return pool.warm_set.waker.image or PYTHON_IMAGE


def holder_configmap(cfg: PlatformConfig, pool: NodePool, namespace: str) -> dict:
    import json
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": holder_name(pool), "namespace": namespace, "labels": holder_labels(pool)},
            "data": {"holder.py": _holder_source(), "servers.json": json.dumps(holder_config(cfg, pool), indent=2)}}


def _volumes(models: list[Workload]) -> tuple[list[dict], list[dict]]:
    """(pod volumes, container mounts) of the models' own volumes: one per distinct claim and path (validation
    refuses two models mounting different volumes at one path)."""
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
                       "isSleeping": mode.state, "drainSeconds": _drain_seconds(w)})
    return {"namespace": namespace, "pool": pool.name,
            "holders": {"selector": {"app.kubernetes.io/name": holder_name(pool)}, "awakeLabel": AWAKE_LABEL},
            "endpointSliceManagedBy": ENDPOINT_SLICE_MANAGER, "sleepLevel": level, "models": models}


def _drain_seconds(w: Workload) -> int:
    """How long the waker waits between taking a woken replica out of its model's EndpointSlice and putting it to
    sleep: the model's preStop wait (or, without one, its routing's propagation) and its longest request."""
    chain = drain_chain(w)
    return int((chain.pre_stop_s or chain.routing.seconds) + chain.longest_request_s)


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
              "data": {"waker.py": _waker_source(),
                       "waker.json": json.dumps(waker_config(cfg, pool, namespace), indent=2)}}
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
                    "name": "waker", "image": waker_image(pool), "imagePullPolicy": "IfNotPresent",
                    # the shipped program (components/warm_set_waker.py); an image set in warmSet.waker.image is a
                    # waker of its own and runs its entry point
                    **({} if pool.warm_set.waker.image else {"command": ["python3", f"{CONFIG_DIR}/waker.py"]}),
                    "env": [{"name": "WARM_SET_CONFIG", "value": f"{CONFIG_DIR}/waker.json"},
                            # the root file system is read-only: no bytecode cache to write
                            {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"}],
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
