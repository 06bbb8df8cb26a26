"""Pure builders of the Kubernetes objects of one inference workload (camelCase dicts, as the API expects).

The :class:`~components.inference_service.InferenceService` component registers exactly these objects, the
tests validate them against the Kubernetes OpenAPI schemas and the policies read them: one definition each.
"""
import copy
from dataclasses import dataclass, field
from typing import Optional

from gpuplatform.catalogs import server_cli, timeouts
from gpuplatform.catalogs.kubernetes import (ACK_INTRANET_LB, HPA_DEFAULT_DOWNSCALE_STABILIZATION_SECONDS,
                                             HPA_DEFAULT_SCALE_UP, KEDA_API, PROMETHEUS_OPERATOR_API,
                                             ROOT_OPT_OUT_ANNOTATION, served_by)
# the pod layout facts live in catalogs/kubernetes.py (validation reads them too); named here as before
from gpuplatform.catalogs.kubernetes import SERVICE_PROTOCOLS, TMP_MOUNT_PATH, TMP_SIZE_LIMIT_GIB  # noqa: F401
from gpuplatform.catalogs.metrics import METRICS
from gpuplatform.catalogs.network import PLATFORM_PART_OF
from gpuplatform.catalogs.servers import SERVER_PROFILES
from gpuplatform.catalogs.versions import MONITOR_LABELS, in_cluster_prometheus_url
from gpuplatform.components.clouds import CloudProfile
from gpuplatform.components import server_args
from gpuplatform.components.drain import container_lifecycle, drain_chain, rollout_strategy
from gpuplatform.components.adapter_rules import render_metrics_query
from gpuplatform.components.config import Behavior, PlatformConfig, ScalingRules, Workload, duration_seconds
from gpuplatform.components.metric_sources import source_for
from gpuplatform.components.model_startup import (READINESS_PROBE_PERIOD_SECONDS, STARTUP_PROBE_PERIOD_SECONDS,
                                                  image_pull_budget_seconds, keda_cooldown_seconds,
                                                  scale_down_window_seconds, startup_seconds)
from gpuplatform.components.network_policy import NetworkAccess, caller_peer, network_access, peer_object
from gpuplatform.components.pools import PoolFacts
from gpuplatform.components.fluid_cache import claim_name as fluid_claim_name, fluid_objects
from gpuplatform.components.pre_pull import pre_pull_daemonset
from gpuplatform.components.cluster_version import hpa_api_version, kubernetes_version
from gpuplatform.components.warm_set import served_sleep_endpoints, sleep_endpoints

PART_OF = PLATFORM_PART_OF
LIVENESS_TIMEOUT_SECONDS = 5
"""The liveness probe's timeout when the server's own is shorter: a busy server answering slowly is not hung."""
AWAIT_TIMEOUT_ANNOTATION = "pulumi.com/timeoutSeconds"
SKIP_AWAIT_ANNOTATION = "pulumi.com/skipAwait"

# Scale up fast: GPU replicas take minutes (image pull, model load) before they serve, so a burst must start
# them at once: Kubernetes' own default, double or add 4 pods (whichever is more) every 15 s with no
# stabilization, never slower. Scale down cautiously: a released GPU replica costs the same minutes to get
# back, so wait 5 minutes of lower load (Kubernetes' default window) and remove one replica a minute.
DEFAULT_SCALE_UP = copy.deepcopy(HPA_DEFAULT_SCALE_UP)
DEFAULT_SCALE_DOWN = {"stabilizationWindowSeconds": HPA_DEFAULT_DOWNSCALE_STABILIZATION_SECONDS,
                      "selectPolicy": "Max",
                      "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}


@dataclass(frozen=True)
class WorkloadContext:
    """Everything about the stack a workload's objects depend on."""

    namespace: str
    pool: PoolFacts
    kubernetes_version: tuple[int, int]
    hpa_api_version: str
    cloud: CloudProfile
    """The cluster's cloud profile (who runs an Ingress's controller by default)."""
    scrape_interval: str = "15s"
    rule_window: str = "30s"
    prometheus_url: str = field(default_factory=in_cluster_prometheus_url)
    monitor_labels: dict = field(default_factory=lambda: dict(MONITOR_LABELS))
    metric_sources: dict = field(default_factory=dict)
    """metric name -> MetricSource for this workload."""
    network: NetworkAccess = field(default_factory=NetworkAccess)
    """Who, besides the workload's ``allowFrom``, its NetworkPolicy admits (components/network_policy.py)."""
    sleep_endpoints: Optional[object] = None
    """The sleep mode whose endpoints the workload's Service may reach (components/warm_set.py
    ``served_sleep_endpoints``): its own servers', or its warm set's replica once woken; None: none."""


def labels(w: Workload) -> dict[str, str]:
    return {"app.kubernetes.io/name": w.name, "app.kubernetes.io/part-of": PART_OF,
            "app.kubernetes.io/managed-by": "pulumi"}


def selector(w: Workload) -> dict[str, str]:
    return {"app.kubernetes.io/name": w.name}


def meta(name: str, ctx: WorkloadContext, w: Workload, **extra) -> dict:
    return {"name": name, "namespace": ctx.namespace, "labels": labels(w), **extra}


def quantity(value: float) -> str:
    """A Kubernetes quantity: whole numbers as-is, fractions in milli-units (0.8 -> '800m')."""
    return str(int(value)) if float(value).is_integer() else f"{int(round(value * 1000))}m"


def serving_ports(w: Workload) -> list:
    return [p for p in w.ports if p.protocol in SERVICE_PROTOCOLS]


def metrics_port(w: Workload):
    """The port Prometheus scrapes: a ``metrics`` port, or a serving port that declares a ``metricsPath``."""
    return next((p for p in w.ports if p.scrape_path is not None), None)


def _probe(path: Optional[str], port: str, **timing) -> dict:
    handler = {"httpGet": {"path": path, "port": port}} if path else {"tcpSocket": {"port": port}}
    return {**handler, **timing}


def await_timeout_seconds(w: Workload, ctx: "WorkloadContext") -> int:
    """``pulumi.com/timeoutSeconds`` of the Deployment: node provisioning, image pull and every replica's startup
    of a rolling update, instead of pulumi-kubernetes' 10-minute default (catalogs/timeouts.py). The startup budget
    is sized from the workload's ``model`` when the stack sets none (components/model_startup.py)."""
    return timeouts.deployment_await_seconds(ctx.pool.node_provisioning_seconds, startup_seconds(w),
                                             w.autoscaling.max_replicas, image_pull_budget_seconds(w))


def default_probe_paths(w: Workload) -> tuple[Optional[str], Optional[str], str]:
    """(readiness path, liveness path, port) of a workload without ``probes``: its server's health paths on its
    first HTTP port, which answer only once the model is loaded (catalogs/servers.py); TCP on the first serving
    port (paths None) for a workload that names no server or has no HTTP port."""
    profile = SERVER_PROFILES.get(w.server or "")
    http = next((p for p in w.ports if p.protocol == "http"), None)
    if profile is not None and http is not None:
        return profile.ready_path, profile.live_path, http.name
    return None, None, serving_ports(w)[0].name


def probe_paths(w: Workload) -> tuple[Optional[str], Optional[str], Optional[str], str]:
    """(readiness, liveness, startup path, port) of the probes: the stack's ``probes``, each path it leaves out
    taken from the server's health paths on an HTTP port (``/`` without a server); a port that speaks no HTTP
    without paths gets TCP checks (paths None)."""
    if w.probes is None:
        ready, live, port = default_probe_paths(w)
        return ready, live, ready, port
    pr = w.probes
    port = next((p for p in w.ports if p.name == pr.port), None)
    profile = SERVER_PROFILES.get(w.server or "")
    http = port is None or port.protocol == "http"
    ready = pr.readiness_path or (profile.ready_path if profile and http else "/" if http else None)
    live = pr.liveness_path or (profile.live_path if profile and http else "/" if http else None)
    return ready, live, pr.startup_path or ready, pr.port


def probe_timeout_seconds(w: Workload) -> Optional[int]:
    """``timeoutSeconds`` of the probes of a workload that names a server: the server's own (catalogs/servers.py),
    for SGLang a second over the ``SGLANG_HEALTH_CHECK_TIMEOUT`` the workload sets; None without a server (the
    kubelet's 1 s)."""
    profile = SERVER_PROFILES.get(w.server or "")
    if profile is None:
        return None
    facts = server_args.parse(w)
    own = facts.get(server_cli.HEALTH_TIMEOUT) if facts is not None else None
    if isinstance(own, int) and own > 0:
        return max(profile.probe_timeout_seconds, own + 1)
    return profile.probe_timeout_seconds


def probes(w: Workload) -> dict:
    """Readiness gates traffic, startup covers model loading, liveness restarts a hung server."""
    ready, live, start, port = probe_paths(w)
    period = STARTUP_PROBE_PERIOD_SECONDS
    timeout = startup_seconds(w)
    probe_timeout = probe_timeout_seconds(w)
    answer = {"timeoutSeconds": probe_timeout} if probe_timeout else {}
    return {
        "startupProbe": _probe(start, port, periodSeconds=period, failureThreshold=max(1, timeout // period),
                               **answer),
        "readinessProbe": _probe(ready, port, periodSeconds=READINESS_PROBE_PERIOD_SECONDS, failureThreshold=3, **answer),
        "livenessProbe": _probe(live, port, periodSeconds=15, failureThreshold=4,
                                timeoutSeconds=max(probe_timeout or 0, LIVENESS_TIMEOUT_SECONDS)),
    }


def volume_claim_name(w: Workload, volume_name: str) -> str:
    return f"{w.name}-{volume_name}"


def _user(w: Workload) -> dict:
    """Restricted Pod Security: a non-root UID. With the ``runAsRoot`` opt-out: UID 0 and no runAsNonRoot, which
    the baseline level of the root namespace admits (Pod Security Standards: runAsNonRoot is a restricted-only
    control)."""
    if w.run_as_root:
        return {"runAsNonRoot": False, "runAsUser": 0}
    return {"runAsNonRoot": True, "runAsUser": w.run_as_user}


def container(w: Workload, ctx: WorkloadContext) -> dict:
    gpu = ctx.pool.gpu_resources(w.gpu)
    resources = {"cpu": w.resources.cpu, "memory": w.resources.memory, **gpu}
    # the Secret-backed variables first: Kubernetes expands $(NAME) in a value from the variables defined before it,
    # so a plain value may be built from a secret one (DATABASE_URL=postgresql://app:$(DB_PASSWORD)@db/app)
    env = [{"name": k, "valueFrom": {"secretKeyRef": {"name": ref.secret_name, "key": ref.key}}}
           for k, ref in sorted(w.secret_env.items())]
    env += [{"name": k, "value": v} for k, v in sorted(server_args.effective_env(w).items())]
    out = {
        "name": w.name,
        "image": w.image,
        "imagePullPolicy": "IfNotPresent",
        "ports": [{"name": p.name, "containerPort": p.container_port, "protocol": "TCP"} for p in w.ports],
        "resources": {"requests": dict(resources), "limits": dict(resources)},
        "securityContext": {
            "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": w.read_only_root_filesystem,
            **_user(w), "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "volumeMounts": [{"name": "tmp", "mountPath": TMP_MOUNT_PATH}]
        + ([{"name": SHM_VOLUME, "mountPath": server_cli.SHM_MOUNT_PATH}] if shared_memory_gib(w) else [])
        + [{"name": v.name, "mountPath": v.mount_path, "readOnly": v.read_only or v.fluid is not None}
           for v in w.volumes],
        **probes(w),
    }
    chain = drain_chain(w, ctx.kubernetes_version)
    lifecycle = container_lifecycle(chain, ctx.kubernetes_version)
    if lifecycle:
        out["lifecycle"] = lifecycle
    if w.command:
        out["command"] = list(w.command)
    args = list(w.args) + list(chain.added_args)
    if args:
        out["args"] = args
    if env:
        out["env"] = env
    return out


SHM_VOLUME = "dshm"


def replica_gpus(w: Workload) -> int:
    """GPUs one replica's server spans: its command line's parallel sizes (components/server_args.py), else, for
    TGI without ``--num-shard`` (a shard per visible device) or a workload without a server, the GPUs it gets."""
    facts = server_args.parse(w)
    if facts is not None and facts.gpus is not None:
        return facts.gpus
    if facts is None or facts.server == "tgi":
        return w.gpu.count or 1
    return 1


def shared_memory_gib(w: Workload) -> float:
    """The size of the replica's memory-backed ``/dev/shm`` (0: none): ``sharedMemoryGib``, else what its server
    documents when a replica spans more than one GPU (catalogs/server_cli.py ``SHARED_MEMORY_GIB``)."""
    if w.shared_memory_gib:
        return w.shared_memory_gib
    if w.server in server_cli.SHARED_MEMORY_GIB and replica_gpus(w) > 1:
        return server_cli.SHARED_MEMORY_GIB[w.server]
    return 0


def _gib(size: float) -> str:
    return f"{int(size)}Gi" if float(size).is_integer() else f"{int(size * 1024)}Mi"


def _claim(w: Workload, v) -> dict:
    """The claim a volume mounts: the stack's PVC, the one rendered for an NFS export, or the one Fluid creates for
    a ``fluid`` volume's Dataset (always read-only: the cache serves the weights, nothing writes them)."""
    if v.fluid is not None:
        return {"claimName": fluid_claim_name(w, v), "readOnly": True}
    return {"claimName": v.pvc or volume_claim_name(w, v.name), "readOnly": v.read_only}


def deployment(w: Workload, ctx: WorkloadContext) -> dict:
    """apps/v1 Deployment; ``spec.replicas`` only for a fixed workload: otherwise the HPA (or KEDA) owns the
    replica count."""
    volumes = [{"name": "tmp", "emptyDir": {"sizeLimit": f"{TMP_SIZE_LIMIT_GIB}Gi"}}]
    shm = shared_memory_gib(w)
    if shm:
        volumes.append({"name": SHM_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": _gib(shm)}})
    volumes += [{"name": v.name, "persistentVolumeClaim": _claim(w, v)} for v in w.volumes]
    spread = [{"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "ScheduleAnyway",
               "labelSelector": {"matchLabels": selector(w)}}
              for key in ("kubernetes.io/hostname", "topology.kubernetes.io/zone")]
    template_meta = {"labels": labels(w)}
    if w.run_as_root:
        template_meta["annotations"] = {ROOT_OPT_OUT_ANNOTATION: "true"}
    # a fixed workload owns its replica count; an autoscaled one leaves it to the HPA/KEDA
    replicas = {"replicas": w.replicas} if w.fixed and w.replicas else {}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": meta(w.name, ctx, w, annotations={AWAIT_TIMEOUT_ANNOTATION: str(await_timeout_seconds(w, ctx))}),
        "spec": {
            **replicas,
            "selector": {"matchLabels": selector(w)},
            "strategy": rollout_strategy(w, ctx.pool.max_replicas(w.gpu)).strategy,
            "template": {
                "metadata": template_meta,
                "spec": {
                    "automountServiceAccountToken": False,
                    "terminationGracePeriodSeconds": drain_chain(w, ctx.kubernetes_version).grace_s,
                    "securityContext": {**_user(w), "runAsGroup": _user(w)["runAsUser"],
                                        "fsGroup": _user(w)["runAsUser"],
                                        "seccompProfile": {"type": "RuntimeDefault"}},
                    "nodeSelector": dict(ctx.pool.node_selector),
                    "tolerations": ctx.pool.tolerations,
                    "topologySpreadConstraints": spread,
                    "containers": [container(w, ctx)],
                    "volumes": volumes,
                },
            },
        },
    }


def nfs_volume_objects(w: Workload, ctx: WorkloadContext) -> list[dict]:
    """An NFS model repository as a static PersistentVolume + claim, so the pod keeps restricted Pod Security
    (which forbids inline ``nfs`` volumes)."""
    out = []
    for v in w.volumes:
        if v.nfs is None:
            continue
        claim = volume_claim_name(w, v.name)
        pv_name = f"{ctx.namespace}-{claim}"
        mode = "ReadOnlyMany" if v.read_only else "ReadWriteMany"
        out.append({"apiVersion": "v1", "kind": "PersistentVolume",
                    "metadata": {"name": pv_name, "labels": labels(w)},
                    "spec": {"capacity": {"storage": "1Gi"}, "accessModes": [mode],
                             "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
                             "mountOptions": ["nfsvers=4.1"],
                             "nfs": {"server": v.nfs.server, "path": v.nfs.path, "readOnly": v.nfs.read_only},
                             "claimRef": {"namespace": ctx.namespace, "name": claim}}})
        out.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta(claim, ctx, w),
                    "spec": {"accessModes": [mode], "storageClassName": "", "volumeName": pv_name,
                             "resources": {"requests": {"storage": "1Gi"}}}})
    return out


def service(w: Workload, ctx: WorkloadContext) -> dict:
    """ClusterIP by default; an ACK intranet SLB or (only when allowed) a public LoadBalancer. The metrics port is
    never part of the Service: the PodMonitor scrapes pods directly."""
    kind = w.exposure.service_type
    annotations = dict(ACK_INTRANET_LB) if kind == "InternalLoadBalancer" else {}
    ports = []
    for p in serving_ports(w):
        port = {"name": p.name, "port": p.service_port or p.container_port, "targetPort": p.name,
                "protocol": "TCP"}
        port["appProtocol"] = "kubernetes.io/h2c" if p.protocol == "grpc" else "http"
        ports.append(port)
    m = meta(w.name, ctx, w)
    if annotations:
        m["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Service", "metadata": m,
            "spec": {"type": "ClusterIP" if kind == "ClusterIP" else "LoadBalancer",
                     "selector": selector(w), "ports": ports}}


def streaming_annotations(seconds: int) -> dict[str, str]:
    """ingress-nginx annotations for a response that streams (kubernetes/ingress-nginx
    docs/user-guide/nginx-configuration/annotations.md, "Custom timeouts" and "Proxy buffering"). nginx's
    proxy_read_timeout and proxy_send_timeout bound the time between two successive reads or writes, not the whole
    response, so a token stream stays up as long as tokens keep coming; what they must cover is the silence before
    the first token while the request queues and its prompt is prefilled. Buffering is off by default in
    ingress-nginx's own config, but the ConfigMap can turn it on for every Ingress: set here, it holds for these
    routes whatever the ConfigMap says, and a buffered stream would reach the client in bursts."""
    return {"nginx.ingress.kubernetes.io/proxy-read-timeout": str(seconds),
            "nginx.ingress.kubernetes.io/proxy-send-timeout": str(seconds),
            "nginx.ingress.kubernetes.io/proxy-buffering": "off"}


def ingresses(w: Workload, ctx: WorkloadContext) -> list[dict]:
    """L7 routing per request (HTTP/2 for gRPC), so replicas the HPA adds take traffic at once; an L4 Service
    keeps long-lived gRPC connections pinned to the old pods. One Ingress per route: ingress-nginx and ALB read
    the backend protocol from an annotation of the whole Ingress object, so HTTP and gRPC ports cannot share
    one. The one-port form keeps the workload's name; routes are named ``<workload>-<port>``."""
    ing = w.exposure.ingress
    if ing is None:
        return []
    routes = ing.all_routes()
    out = []
    for route in routes:
        port = next(p for p in w.ports if p.name == route.port)
        grpc = port.protocol == "grpc"
        if ing.class_name == "nginx":
            annotations = {"nginx.ingress.kubernetes.io/backend-protocol": "GRPC" if grpc else "HTTP"}
            if ing.stream_timeout_seconds is not None:
                annotations.update(streaming_annotations(ing.stream_timeout_seconds))
        else:
            annotations = {"alb.ingress.kubernetes.io/backend-protocol": "grpc" if grpc else "http"}
        if ing.controller_for(ctx.cloud) == "external":
            # pulumi-kubernetes waits up to 10 minutes for .status.loadBalancer of an Ingress and fails without a
            # controller (provider/pkg/await/ingress.go); a controller outside the stack may not exist yet
            annotations[SKIP_AWAIT_ANNOTATION] = "true"
        # a server that serves its sleep and wake endpoints on this port gets only its clients' API routed: the
        # endpoints are not for clients (components/warm_set.py sleep_endpoints)
        sleeping = ctx.sleep_endpoints if ctx.sleep_endpoints is not None else sleep_endpoints(w)
        prefixes = sleeping.client_paths if sleeping is not None and not grpc else ("/",)
        spec = {"ingressClassName": ing.class_name,
                "rules": [{"host": route.host, "http": {"paths": [{
                    "path": prefix, "pathType": "Prefix",
                    "backend": {"service": {"name": w.name, "port": {"name": port.name}}}} for prefix in prefixes]}}]}
        if ing.tls_secret:
            spec["tls"] = [{"hosts": [route.host], "secretName": ing.tls_secret}]
        name = w.name if len(routes) == 1 and not ing.routes else f"{w.name}-{port.name}"
        out.append({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                    "metadata": meta(name, ctx, w, annotations=annotations), "spec": spec})
    return out


def pod_disruption_budget(w: Workload, ctx: WorkloadContext) -> Optional[dict]:
    """With more than one replica possible, voluntary disruptions (node drains) take one replica at a time.
    ``maxUnavailable: 1`` never blocks a drain, even at one replica."""
    if w.replica_ceiling <= 1:
        return None
    spec = {"maxUnavailable": 1, "selector": {"matchLabels": selector(w)}}
    if ctx.kubernetes_version >= (1, 27):
        spec["unhealthyPodEvictionPolicy"] = "AlwaysAllow"
    # policy/v1 is served from 1.21 (catalogs.kubernetes.INTRODUCED_APIS); the 1.20 clusters still supported
    # get policy/v1beta1, whose PDB has the same maxUnavailable and selector
    api = "policy/v1" if served_by("policy/v1", ctx.kubernetes_version) else "policy/v1beta1"
    return {"apiVersion": api, "kind": "PodDisruptionBudget", "metadata": meta(w.name, ctx, w),
            "spec": spec}


def _rules(rules: Optional[ScalingRules], default: dict) -> dict:
    out = copy.deepcopy(default)
    if rules is None:
        return out
    if rules.stabilization_window_seconds is not None:
        out["stabilizationWindowSeconds"] = rules.stabilization_window_seconds
    out["selectPolicy"] = rules.select_policy
    if rules.policies:
        out["policies"] = [{"type": p.type, "value": p.value, "periodSeconds": p.period_seconds}
                           for p in rules.policies]
    return out


def behavior(b: Optional[Behavior], down_window_s: Optional[int] = None) -> dict:
    """The HPA's ``behavior``: the stack's rules over the defaults. ``down_window_s``: the scale-down window when
    the stack states none (:func:`workload_behavior` passes the default raised to the scale-in floor)."""
    down = copy.deepcopy(DEFAULT_SCALE_DOWN)
    if down_window_s is not None:
        down["stabilizationWindowSeconds"] = down_window_s
    return {"scaleUp": _rules(b.scale_up if b else None, DEFAULT_SCALE_UP),
            "scaleDown": _rules(b.scale_down if b else None, down)}


def workload_behavior(w: Workload) -> dict:
    """A workload's HPA ``behavior`` (its own HPA or the one KEDA creates): a scale-down window the stack leaves
    unset is the platform default raised to the workload's startup budget (model_startup.scale_down_window_seconds),
    so a scale-down never removes a replica while it loads."""
    return behavior(w.autoscaling.behavior, scale_down_window_seconds(w))


def hpa(w: Workload, ctx: WorkloadContext) -> Optional[dict]:
    """HPA on per-pod custom metrics: ``Pods`` metrics with ``AverageValue`` targets, by the names the stack's
    adapter rules serve."""
    a = w.autoscaling
    if a.autoscaler != "hpa":
        return None
    target_ref = {"apiVersion": "apps/v1", "kind": "Deployment", "name": w.name}
    spec = {"scaleTargetRef": target_ref, "minReplicas": a.min_replicas, "maxReplicas": a.max_replicas}
    api = a.hpa_api_version or ctx.hpa_api_version
    if api != "autoscaling/v2beta1":  # v2beta2 has v2's metric shape and behavior
        spec["metrics"] = [{"type": "Pods", "pods": {
            "metric": {"name": ctx.metric_sources[t.metric].api_name},
            "target": {"type": "AverageValue", "averageValue": quantity(t.target)}}} for t in a.metrics]
        spec["behavior"] = workload_behavior(w)
    else:
        spec["metrics"] = [{"type": "Pods", "pods": {"metricName": ctx.metric_sources[t.metric].api_name,
                                                     "targetAverageValue": quantity(t.target)}}
                           for t in a.metrics]
    return {"apiVersion": api, "kind": "HorizontalPodAutoscaler",
            "metadata": meta(w.name, ctx, w), "spec": spec}


def keda_query(w: Workload, ctx: WorkloadContext, metric_name: str) -> str:
    """Sum over the workload's pods of the per-pod value; KEDA's AverageValue divides it by the replica count."""
    src = ctx.metric_sources[metric_name]
    matchers = f'{src.labels.namespace}="{ctx.namespace}",{src.labels.pod}=~"{w.name}-.*"'
    per_pod = render_metrics_query(src, matchers, src.labels.pod, ctx.rule_window)
    return f"sum({per_pod})"


INGRESS_NGINX_REQUESTS = "nginx_ingress_controller_requests"
"""ingress-nginx's request counter, labelled with the Ingress, its backend Service and the request host
(kubernetes/ingress-nginx docs/user-guide/monitoring.md); it also counts the 503s answered while no pod is ready.
Matched by ``ingress`` and ``host``, never ``namespace``/``service``: a ServiceMonitor without honorLabels gives
those two to the controller's own target and renames the exported ones ``exported_namespace``/``exported_service``."""


def activation_query(w: Workload, ctx: WorkloadContext) -> str:
    """The wake-up signal of a workload at zero replicas: a series that does not come from its pods."""
    act = w.autoscaling.activation
    if act.source == "prometheus":
        return act.query
    # a regex inside a PromQL string: the dot's backslash is itself escaped
    hosts = "|".join(r.host.replace(".", "\\\\.") for r in w.exposure.ingress.all_routes())
    names = "|".join(i["metadata"]["name"] for i in ingresses(w, ctx))
    return (f'sum(rate({INGRESS_NGINX_REQUESTS}{{ingress=~"{names}",host=~"{hosts}"}}[{ctx.rule_window}]))'
            " or vector(0)")


def scaled_object(w: Workload, ctx: WorkloadContext) -> Optional[dict]:
    a = w.autoscaling
    if a.autoscaler != "keda":
        return None
    triggers = [{"type": "prometheus", "metricType": "AverageValue",
                 "metadata": {"serverAddress": ctx.prometheus_url, "query": keda_query(w, ctx, t.metric),
                              "threshold": quantity(t.target), "ignoreNullValues": "true"}}
                for t in a.metrics]
    if a.activation is not None:
        triggers.append({"type": "prometheus", "metricType": "AverageValue",
                         "metadata": {"serverAddress": ctx.prometheus_url, "query": activation_query(w, ctx),
                                      "threshold": quantity(a.activation.target),
                                      "activationThreshold": quantity(a.activation.activation_threshold),
                                      "ignoreNullValues": "true"}})
    return {"apiVersion": KEDA_API, "kind": "ScaledObject", "metadata": meta(w.name, ctx, w),
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": w.name},
                     "minReplicaCount": a.min_replicas, "maxReplicaCount": a.max_replicas,
                     "pollingInterval": duration_seconds(ctx.scrape_interval),
                     "cooldownPeriod": keda_cooldown_seconds(w),
                     "advanced": {"horizontalPodAutoscalerConfig": {"behavior": workload_behavior(w)}},
                     "triggers": triggers}}


def pod_monitor(w: Workload, ctx: WorkloadContext) -> Optional[dict]:
    """Scrape the inference server's own metrics where it serves them: a metrics port (Triton: 8002) or a serving
    port with a metrics path (vLLM: /metrics on its API port 8000)."""
    port = metrics_port(w)
    if port is None:
        return None
    m = meta(w.name, ctx, w)
    m["labels"] = {**m["labels"], **ctx.monitor_labels}
    return {"apiVersion": PROMETHEUS_OPERATOR_API, "kind": "PodMonitor", "metadata": m,
            "spec": {"selector": {"matchLabels": selector(w)},
                     "podMetricsEndpoints": [{"port": port.name, "path": port.scrape_path,
                                              "interval": ctx.scrape_interval}]}}


def network_policy(w: Workload, ctx: WorkloadContext) -> Optional[dict]:
    """Default deny for the workload's pods: only the peers of components/network_policy.py, each to its own ports
    (by container port number, which every plugin matches). ``ingress: []`` admits nothing."""
    if not w.network_policy.enabled:
        return None
    access = ctx.network
    by_name = {p.name: p for p in w.ports}
    serving = [p.name for p in serving_ports(w)]

    def ports(names) -> list[dict]:
        return [{"protocol": "TCP", "port": by_name[n].container_port} for n in dict.fromkeys(names)]

    def peers(found) -> list[dict]:
        return [peer_object(peer, ctx.namespace, access.namespace_labels) for peer in found]

    ing = w.exposure.ingress
    routed = [r.port for r in ing.all_routes()] if ing is not None else []
    # a LoadBalancer's clients and an ALB's forwarding addresses are no pods: those ports take any source
    anywhere = serving if w.exposure.service_type != "ClusterIP" else []
    anywhere += routed if access.ingress_from_anywhere else []
    rules = [{"ports": ports(anywhere)}] if anywhere else []
    from_controller = [n for n in routed if n not in anywhere]
    if from_controller and access.ingress_peers:
        rules.append({"from": peers(access.ingress_peers), "ports": ports(from_controller)})
    scraped = metrics_port(w)
    if scraped is not None and scraped.name not in anywhere and access.scrapers:
        rules.append({"from": peers(access.scrapers), "ports": ports([scraped.name])})
    for caller in w.network_policy.allow_from:
        rules.append({"from": peers([caller_peer(caller.namespace, caller.pod_labels, ctx.namespace)]),
                      "ports": ports(caller.ports or serving)})
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta(w.name, ctx, w),
            "spec": {"podSelector": {"matchLabels": selector(w)}, "policyTypes": ["Ingress"], "ingress": rules}}


def uses_app_metrics(w: Workload) -> bool:
    return any(METRICS[t.metric].category == "app" for t in w.autoscaling.metrics if t.metric in METRICS)


def context_sources(cfg, w: Workload) -> dict:
    return {t.metric: source_for(cfg, w, t.metric) for t in w.autoscaling.metrics}


def workload_context(cfg: PlatformConfig, workload: Workload, facts: PoolFacts,
                     prometheus_url: Optional[str] = None) -> WorkloadContext:
    """What the objects of ``workload`` need to know of the stack around it (its namespace, pool, cluster version,
    monitoring, callers): pure over the config, so validation builds the same objects the InferenceService
    registers."""
    mon = cfg.monitoring
    return WorkloadContext(
        namespace=cfg.workload_namespace(workload), pool=facts, kubernetes_version=kubernetes_version(cfg) or (1, 31),
        hpa_api_version=hpa_api_version(cfg), cloud=cfg.cloud, scrape_interval=mon.intervals.scrape,
        rule_window=mon.intervals.rule_window,
        **({"prometheus_url": url} if (url := prometheus_url or (mon.prometheus_url if mon.backend == "self-hosted"
                                                                   else None)) else {}),
        metric_sources=context_sources(cfg, workload), network=network_access(cfg, workload),
        sleep_endpoints=served_sleep_endpoints(cfg, workload))


def workload_objects(w: Workload, ctx: WorkloadContext) -> list[dict]:
    """Every Kubernetes object the InferenceService of ``w`` registers, in the order it registers them (validation
    judges them as the API server would before any is registered: components/validation/authored.py)."""
    optional = (pod_disruption_budget(w, ctx), hpa(w, ctx), scaled_object(w, ctx), pod_monitor(w, ctx),
                network_policy(w, ctx), pre_pull_daemonset(w, ctx))
    return [*nfs_volume_objects(w, ctx), *fluid_objects(w, ctx), deployment(w, ctx), service(w, ctx),
            *ingresses(w, ctx), *(obj for obj in optional if obj is not None)]
