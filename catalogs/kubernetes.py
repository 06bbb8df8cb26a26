"""Kubernetes facts the config validation, the components and the policies share: which API versions a
cluster version serves, Pod Security labels, where custom resources keep their pods. What a credential looks like
is catalogs/secrets.py."""
from __future__ import annotations

import re
from dataclasses import dataclass

REMOVED_APIS: dict[str, tuple[tuple[int, int], str]] = {
    # group/version -> (first Kubernetes minor that no longer serves it, replacement)
    "extensions/v1beta1": ((1, 16), "apps/v1 (workloads) or networking.k8s.io/v1 (Ingress)"),
    "apps/v1beta1": ((1, 16), "apps/v1"),
    "apps/v1beta2": ((1, 16), "apps/v1"),
    "autoscaling/v2beta1": ((1, 25), "autoscaling/v2"),
    "autoscaling/v2beta2": ((1, 26), "autoscaling/v2"),
    "apiregistration.k8s.io/v1beta1": ((1, 22), "apiregistration.k8s.io/v1"),
    "rbac.authorization.k8s.io/v1beta1": ((1, 22), "rbac.authorization.k8s.io/v1"),
    "networking.k8s.io/v1beta1": ((1, 22), "networking.k8s.io/v1"),
    "admissionregistration.k8s.io/v1beta1": ((1, 22), "admissionregistration.k8s.io/v1"),
    "apiextensions.k8s.io/v1beta1": ((1, 22), "apiextensions.k8s.io/v1"),
    "policy/v1beta1": ((1, 25), "policy/v1"),
    "batch/v1beta1": ((1, 25), "batch/v1"),
}
INTRODUCED_APIS: dict[str, tuple[int, int]] = {
    "autoscaling/v2": (1, 23),
    "policy/v1": (1, 21),
}


def served_by(api_version: str, version: tuple[int, int]) -> bool:
    """Whether a cluster of ``version`` (major, minor) serves ``api_version``."""
    removed = REMOVED_APIS.get(api_version)
    if removed and version >= removed[0]:
        return False
    return version >= INTRODUCED_APIS.get(api_version, (0, 0))


HPA_TOLERANCE = 0.1
"""``--horizontal-pod-autoscaler-tolerance`` default: the HPA changes nothing while current/target is within 10% of
1 (kube-controller-manager reference; kubernetes.io "Horizontal Pod Autoscaling", algorithm details)."""
HPA_DEFAULT_SCALE_UP = {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                        "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15},
                                     {"type": "Pods", "value": 4, "periodSeconds": 15}]}
"""What kube-controller-manager applies when an HPA sets no ``behavior.scaleUp``: double or add 4 pods every
15 s, whichever is more, with no stabilization (kubernetes.io, "Horizontal Pod Autoscaling", Default Behavior;
k8s.io/api autoscaling/v2 ``HPAScalingRules`` field docs)."""
HPA_DEFAULT_DOWNSCALE_STABILIZATION_SECONDS = 300
"""``--horizontal-pod-autoscaler-downscale-stabilization`` default (kube-controller-manager reference)."""

HPA_MIN_REPLICAS_FLOOR = 1
"""Lowest ``minReplicas`` the API server admits while the ``HPAScaleToZero`` feature gate is off (its default;
kubernetes ``pkg/apis/autoscaling/validation/validation.go``, ``validateHorizontalPodAutoscalerSpec``)."""


def hpa_replica_bounds(min_replicas, max_replicas,
                       floor: float = HPA_MIN_REPLICAS_FLOOR) -> list[tuple[str, str, str]]:
    """Why an HPA with these bounds cannot scale, as (kind, field, reason) triples; empty when it can. Kinds:
    ``below-floor``, ``no-max``, ``max-below-min``, ``never-scales``.

    The one rule config validation (``autoscaling`` of a workload) and the ``hpa-replica-bounds`` policy both
    apply. ``min_replicas`` None is the API default (1). Equal bounds are admitted by the API server but the HPA
    never changes the replica count, so a GPU-metric autoscaler that is set up that way does nothing: that is a
    fixed replica count, written as one."""
    mn = HPA_MIN_REPLICAS_FLOOR if min_replicas is None else min_replicas
    out = []
    if mn < floor:
        out.append(("below-floor", "minReplicas", f"minReplicas {_num(mn)} is below {_num(floor)}"))
    if max_replicas is None:
        out.append(("no-max", "maxReplicas", "maxReplicas is not set"))
    elif max_replicas < mn:
        out.append(("max-below-min", "minReplicas", f"minReplicas {_num(mn)} is above maxReplicas "
                    f"{_num(max_replicas)}, which the API server rejects"))
    elif max_replicas == mn:
        out.append(("never-scales", "maxReplicas", f"maxReplicas {_num(max_replicas)} is not above minReplicas {_num(mn)}, so it "
                    f"never scales"))
    return out


def _num(value) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


QUANTITY = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")
"""A Kubernetes quantity (apimachinery ``pkg/api/resource/quantity.go``): ``16Gi``, ``500m``, ``2``; ``16GB`` is
not one. Config validation and the API-server checks of ``check --manifests`` both read it."""
_QUANTITY_SCALE = {"n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15,
                   "E": 1e18, "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50,
                   "Ei": 2 ** 60}


def quantity_value(text: str) -> float:
    """The number a :data:`QUANTITY` stands for."""
    m = QUANTITY.match(text)
    number, suffix = m.group(1), m.group(3) or ""
    sign = -1 if text.startswith("-") else 1
    if suffix[:1] in ("e", "E") and len(suffix) > 1:
        return sign * float(number) * 10 ** int(suffix[1:])
    return sign * float(number) * _QUANTITY_SCALE[suffix]


POD_TEMPLATE_PATHS: dict[tuple[str, str], tuple[tuple[str, ...], ...]] = {
    # the core PodTemplate object: template is a PodTemplateSpec (k8s.io/api core/v1 types.go PodTemplate)
    ("", "PodTemplate"): (("template", "spec"),),
    # KServe: each component of an InferenceService is a pod spec inline (PredictorSpec, TransformerSpec and
    # ExplainerSpec embed corev1.PodSpec; workerSpec of multi-node predictors too), kserve
    # pkg/apis/serving/v1beta1 (predictor.go, component.go, worker_spec.go)
    ("serving.kserve.io", "InferenceService"): (("spec", "predictor"), ("spec", "predictor", "workerSpec"),
                                                ("spec", "transformer"), ("spec", "explainer")),
    # KServe runtimes, the containers an InferenceService's model is merged into: ServingRuntimeSpec inlines
    # ServingRuntimePodSpec (containers, volumes, hostIPC...) and its workerSpec does too, kserve
    # pkg/apis/serving/v1alpha1/servingruntime_types.go
    ("serving.kserve.io", "ServingRuntime"): (("spec",), ("spec", "workerSpec")),
    ("serving.kserve.io", "ClusterServingRuntime"): (("spec",), ("spec", "workerSpec")),
    # KServe LLMInferenceService (v1alpha1 and v1alpha2 alike) and the LLMInferenceServiceConfig it composes: the
    # WorkloadSpec inlined in the spec and under prefill has template (the main, or head, pod) and worker (the
    # other pods of a multi-node group), both *corev1.PodSpec; the router's scheduler has template, and its
    # tokenizer too, kserve pkg/apis/serving/v1alpha2/llm_inference_service_types.go (WorkloadSpec.Template,
    # WorkloadSpec.Worker, SchedulerSpec.Template, TokenizerSpec.Template; v1alpha1 the same file)
    **{("serving.kserve.io", kind): (("spec", "template"), ("spec", "worker"), ("spec", "prefill", "template"),
                                     ("spec", "prefill", "worker"), ("spec", "router", "scheduler", "template"),
                                     ("spec", "router", "scheduler", "tokenizer", "template"))
       for kind in ("LLMInferenceService", "LLMInferenceServiceConfig")},
    # KubeRay: HeadGroupSpec.Template and WorkerGroupSpec.Template are corev1.PodTemplateSpec, ray-operator
    # apis/ray/v1 (raycluster_types.go; RayService.spec.rayClusterConfig and RayJob.spec.rayClusterSpec are a
    # RayClusterSpec; RayJob.spec.submitterPodTemplate is a PodTemplateSpec)
    ("ray.io", "RayCluster"): (("spec", "headGroupSpec", "template", "spec"),
                               ("spec", "workerGroupSpecs", "*", "template", "spec")),
    ("ray.io", "RayService"): (("spec", "rayClusterConfig", "headGroupSpec", "template", "spec"),
                               ("spec", "rayClusterConfig", "workerGroupSpecs", "*", "template", "spec")),
    ("ray.io", "RayJob"): (("spec", "rayClusterSpec", "headGroupSpec", "template", "spec"),
                           ("spec", "rayClusterSpec", "workerGroupSpecs", "*", "template", "spec"),
                           ("spec", "submitterPodTemplate", "spec")),
    # AIBrix orchestration.aibrix.ai/v1alpha1, vllm-project/aibrix api/orchestration/v1alpha1: PodSet.spec.template
    # and RoleSpec.template are PodTemplateSpecs (podset_types.go, roleset_types.go: RoleSet.spec.roles[]);
    # StormService.spec.template is a RoleSetTemplateSpec whose spec is a RoleSetSpec (stormservice_types.go);
    # RayClusterFleet and RayClusterReplicaSet hold a RayClusterTemplateSpec whose spec is KubeRay's RayClusterSpec
    # (raycluster_type.go); KVCache's RuntimeSpec (cache, watcher, metadata.redis/etcd.runtime) has an optional
    # template PodTemplateSpec (kvcache_types.go)
    ("orchestration.aibrix.ai", "PodSet"): (("spec", "template", "spec"),),
    ("orchestration.aibrix.ai", "RoleSet"): (("spec", "roles", "*", "template", "spec"),),
    ("orchestration.aibrix.ai", "StormService"): (("spec", "template", "spec", "roles", "*", "template", "spec"),),
    **{("orchestration.aibrix.ai", kind): (("spec", "template", "spec", "headGroupSpec", "template", "spec"),
                                           ("spec", "template", "spec", "workerGroupSpecs", "*", "template", "spec"))
       for kind in ("RayClusterFleet", "RayClusterReplicaSet")},
    ("orchestration.aibrix.ai", "KVCache"): (("spec", "cache", "template", "spec"),
                                             ("spec", "watcher", "template", "spec"),
                                             ("spec", "metadata", "redis", "runtime", "template", "spec"),
                                             ("spec", "metadata", "etcd", "runtime", "template", "spec")),
    # NVIDIA Dynamo (nvidia.com, v1alpha1 and v1beta1 alike): every service of a DynamoGraphDeployment, and a
    # DynamoComponentDeployment's spec, has extraPodSpec, an ExtraPodSpec that inlines *corev1.PodSpec (its
    # mainContainer is read by ASSEMBLED_CONTAINERS), ai-dynamo/dynamo deploy/operator/api/v1beta1
    # (dynamographdeployment_types.go: Services map[string]*DynamoComponentDeploymentSharedSpec;
    # dynamocomponentdeployment_types.go: ExtraPodSpec) and api/v1alpha1/common.go (ExtraPodSpec)
    ("nvidia.com", "DynamoGraphDeployment"): (("spec", "services", "*", "extraPodSpec"),),
    ("nvidia.com", "DynamoComponentDeployment"): (("spec", "extraPodSpec"),),
    # llm-d's ModelService (llm-d.ai/v1alpha1, the llm-d-model-service operator; current llm-d renders plain
    # Deployments and LeaderWorkerSets from its charts and Kustomize recipes, which carry no pods of their own
    # kind): decode and prefill are a PDSpec whose containers, vllmProxyContainer (its init containers) and
    # ephemeralContainers are ContainerSpec lists, llm-d/llm-d-model-service api/v1alpha1/modelservice_types.go
    ("llm-d.ai", "ModelService"): (("spec", "decode"), ("spec", "prefill")),
    # LeaderWorkerSet: leaderWorkerTemplate.leaderTemplate (optional) and .workerTemplate, lws
    # api/leaderworkerset/v1 (leaderworkerset_types.go)
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): (("spec", "leaderWorkerTemplate", "leaderTemplate", "spec"),
                                                      ("spec", "leaderWorkerTemplate", "workerTemplate", "spec")),
    # Kubeflow training-operator v1: a map of replica type -> ReplicaSpec whose template is a PodTemplateSpec,
    # pkg/apis/kubeflow.org/v1 (pytorch_types.go, tensorflow_types.go, mpi_types.go, xgboost_types.go,
    # paddlepaddle_types.go, jax_types.go)
    ("kubeflow.org", "PyTorchJob"): (("spec", "pytorchReplicaSpecs", "*", "template", "spec"),),
    ("kubeflow.org", "TFJob"): (("spec", "tfReplicaSpecs", "*", "template", "spec"),),
    ("kubeflow.org", "MPIJob"): (("spec", "mpiReplicaSpecs", "*", "template", "spec"),),
    ("kubeflow.org", "XGBoostJob"): (("spec", "xgbReplicaSpecs", "*", "template", "spec"),),
    ("kubeflow.org", "PaddleJob"): (("spec", "paddleReplicaSpecs", "*", "template", "spec"),),
    ("kubeflow.org", "JAXJob"): (("spec", "jaxReplicaSpecs", "*", "template", "spec"),),
    # JobSet: replicatedJobs[].template is a batch JobTemplateSpec, kubernetes-sigs/jobset
    # api/jobset/v1alpha2/jobset_types.go (ReplicatedJob.Template)
    ("jobset.x-k8s.io", "JobSet"): (("spec", "replicatedJobs", "*", "template", "spec", "template", "spec"),),
    # Kueue: a Workload's podSets[].template is a PodTemplateSpec, kubernetes-sigs/kueue apis/kueue/v1beta1 and
    # v1beta2 workload_types.go (PodSet.Template). Jobs Kueue admits stay their own kinds (Job, JobSet, RayJob...,
    # labelled kueue.x-k8s.io/queue-name) and are read as those.
    ("kueue.x-k8s.io", "Workload"): (("spec", "podSets", "*", "template", "spec"),),
    # Argo Rollouts: RolloutSpec.Template is a PodTemplateSpec, as a Deployment's, pkg/apis/rollouts/v1alpha1
    ("argoproj.io", "Rollout"): (("spec", "template", "spec"),),
    # Knative Serving: Service.spec.template is a RevisionTemplateSpec whose RevisionSpec embeds corev1.PodSpec,
    # serving pkg/apis/serving/v1 (revision_types.go)
    ("serving.knative.dev", "Service"): (("spec", "template", "spec"),),
    ("serving.knative.dev", "Configuration"): (("spec", "template", "spec"),),
}
"""Where resources GPU users deploy keep their pod specs; ``*`` is every item of a list or value of a map. The pod
policies judge these pods as they judge a Deployment's, and any other object with a ``containers`` list too
(:data:`POD_PATTERN_GROUPS` aside)."""
POD_FIELD_KEYS: dict[tuple[str, str], dict[str, str]] = {
    # llm-d ModelService PDSpec: InitContainers is serialized as "vllmProxyContainer"
    ("llm-d.ai", "ModelService"): {"initContainers": "vllmProxyContainer"},
}
"""Pod spec fields a resource spells its own way: pod spec key -> the key it uses."""
KSERVE_MODEL_CONTAINERS = ("model", "sklearn", "xgboost", "tensorflow", "pytorch", "triton", "onnx",
                           "huggingface", "pmml", "lightgbm", "paddle")
"""Keys of a KServe predictor that hold one container each (ModelSpec and the framework specs embed
corev1.Container): kserve pkg/apis/serving/v1beta1 predictor.go."""


@dataclass(frozen=True)
class AssembledContainer:
    """A container an operator builds from fields of its custom resource, which holds no corev1.Container list
    for it. Paths are below :attr:`at`; ``*`` in :attr:`at` is every item of a list or value of a map."""

    at: tuple[str, ...]
    """The mapping that describes the container."""
    name: str
    """The name the operator gives it; ``{name}`` is the object's metadata.name, empty: the mapping's own ``name``."""
    image: tuple[tuple[str, ...], ...] = (("image",),)
    """Where the image is, the first one set; a ``{repository, tag}`` mapping is read as ``repository:tag``."""
    fields: tuple[str, ...] = ()
    """Keys that are the container's own fields, as a corev1.Container spells them (``env``, ``args``...)."""
    base: tuple[str, ...] = ()
    """A corev1.Container the fields are merged into (Dynamo's mainContainer)."""
    env: tuple[tuple[str, ...], ...] = ()
    """Further env lists the operator appends to the container's."""
    shared_env: tuple[tuple[str, ...], ...] = ()
    """Env lists, from the object's root, the operator appends to every such container."""
    pod: tuple[str, ...] = ()
    """The corev1.PodSpec the container joins (empty: a pod of its own)."""
    containers: tuple[tuple[tuple[str, ...], str], ...] = ()
    """Lists of containers described the same way (name, image mapping, command, args, env), with the pod
    spec list each joins (``initContainers``, ``containers``)."""
    run_as_user: tuple[tuple[str, ...], int] | None = None
    """Where the pod's runAsUser comes from and the operator's default."""
    host_path: tuple[str, ...] = ()
    """A host directory the operator mounts into the pod, as the hostPath volume :attr:`host_path_volume`."""
    host_path_volume: str = ""
    cpu_memory: tuple[str, ...] = ()
    """A ``{cpu, memory}`` mapping the operator sets as the container's requests and limits."""


ASSEMBLED_CONTAINERS: dict[tuple[str, str], tuple[AssembledContainer, ...]] = {
    # NIM operator apps.nvidia.com/v1alpha1, NVIDIA/k8s-nim-operator: NIMServiceSpec has image (Image:
    # repository, tag), command, args, env, resources at spec level, and initContainers/sidecarContainers as
    # NIMContainerSpec lists (name, image, command, args, env, workingDir; no securityContext), api/apps/v1alpha1
    # nimservice_types.go and common_types.go; the operator names the container "<name>-ctr" (GetContainerName),
    # sets the pod's runAsUser from userID, 1000 by default (GetUserID; manifests/deployment.yaml renders it even
    # when 0) and mounts storage.hostPath as the hostPath volume "model-store" (nimservice_types.go GetVolumes).
    # The router's endpoint picker is a NIMContainerSpec of its own pod (common_types.go EPPConfig.ContainerSpec).
    ("apps.nvidia.com", "NIMService"): (
        AssembledContainer(("spec",), "{name}-ctr", image=(("image",),), fields=("command", "args", "env",
                                                                               "resources"),
                           containers=((("initContainers",), "initContainers"),
                                       (("sidecarContainers",), "containers")),
                           run_as_user=(("userID",), 1000), host_path=("storage", "hostPath"),
                           host_path_volume="model-store"),
        AssembledContainer(("spec", "expose", "router", "eppConfig", "containerSpec"), "",
                           fields=("command", "args", "env")),
    ),
    # NIMCache: the caching Job's container "nim-cache-ctr" runs the model puller of its source (ngc, hf or
    # dataStore .modelPuller) with spec.env merged in and spec.resources (cpu, memory) as requests and limits
    # (internal/controller/nimcache_controller.go NIMCacheContainerName, MergeEnvVars(..., nimCache.Spec.Env));
    # initContainers are NIMContainerSpecs
    ("apps.nvidia.com", "NIMCache"): (
        AssembledContainer(("spec",), "nim-cache-ctr", image=(("source", "ngc", "modelPuller"),
                                                              ("source", "hf", "modelPuller"),
                                                              ("source", "dataStore", "modelPuller")),
                           fields=("env",), containers=((("initContainers",), "initContainers"),),
                           cpu_memory=("resources",)),
    ),
    # NVIDIA Dynamo: each service's main container is extraPodSpec.mainContainer (a corev1.Container) with the
    # service's envs and the graph's envs added ("applied to all services"), dynamographdeployment_types.go
    # (Envs) and dynamocomponentdeployment_types.go (DynamoComponentDeploymentSharedSpec.Envs, ExtraPodSpec)
    ("nvidia.com", "DynamoGraphDeployment"): (
        AssembledContainer(("spec", "services", "*"), "main", base=("extraPodSpec", "mainContainer"),
                           env=(("envs",),), shared_env=(("spec", "envs"),), pod=("extraPodSpec",)),
    ),
    ("nvidia.com", "DynamoComponentDeployment"): (
        AssembledContainer(("spec",), "main", base=("extraPodSpec", "mainContainer"), env=(("envs",),),
                           pod=("extraPodSpec",)),
    ),
    # AIBrix KVCache RuntimeSpec: image, env and resources of the operator's container (pkg/controller/kvcache/
    # backends: "kvcache-server" from spec.cache, "kvcache-watcher" from spec.watcher, "redis" from
    # spec.metadata.redis.runtime; vineyard's etcd from spec.metadata.etcd.runtime)
    ("orchestration.aibrix.ai", "KVCache"): tuple(
        AssembledContainer(at, name, fields=("env", "resources"))
        for at, name in ((("spec", "cache"), "kvcache-server"), (("spec", "watcher"), "kvcache-watcher"),
                         (("spec", "metadata", "redis", "runtime"), "redis"),
                         (("spec", "metadata", "etcd", "runtime"), "etcd"))),
}
"""Custom resources whose operator builds a container out of fields that are not a container list, modelled as
the operator builds it so that the secret and pod policies judge it (NIMService's env becomes its pod's
container's env). The operator writes these containers' security context, which the resource cannot set (no
privileged container can be asked for through them); the pod policies judge what the resource does set."""

POD_PATTERN_GROUPS = re.compile(r"(?:^|\.)(?:kyverno\.io|gatekeeper\.sh|kubewarden\.io)$")
"""API groups of admission policy engines, whose objects hold *patterns* of pods (Kyverno's
``validate.pattern.spec.containers: [{name: "*", image: "!*:latest"}]``, Gatekeeper mutations), not pods: the
general rule (any ``containers`` list is a pod spec) does not read them."""


PROMETHEUS_OPERATOR_API = "monitoring.coreos.com/v1"
"""ServiceMonitor, PodMonitor, PrometheusRule: CRDs the kube-prometheus-stack chart (or ARMS) installs."""
KEDA_API = "keda.sh/v1alpha1"
"""ScaledObject: a CRD the KEDA chart installs."""
KEDA_DEFAULT_COOLDOWN_SECONDS = 300
"""A ScaledObject's ``cooldownPeriod`` when it sets none: how long after its last active trigger KEDA waits before
it scales a ``minReplicaCount: 0`` target to zero; it does not apply between 1 and N replicas, which the HPA's
scale-down rules govern (keda.sh/docs/2.15/reference/scaledobject-spec, ``cooldownPeriod: 300 # Optional. Default:
300 seconds``)."""


def api_group(api_version: str) -> str:
    """The API group of an ``apiVersion`` (``apps/v1`` -> ``apps``; the core group ``v1`` -> ``""``)."""
    return api_version.rpartition("/")[0]


MANAGED_CONTROL_PLANE_COMPONENTS: dict[str, str] = {
    # kube-prometheus-stack values key -> the Prometheus job its ServiceMonitor and alert rules use
    "kubeControllerManager": "kube-controller-manager",
    "kubeScheduler": "kube-scheduler",
    "kubeEtcd": "kube-etcd",
    "kubeProxy": "kube-proxy",
}
"""Components a managed control plane (ACK managed and ACK Pro clusters) runs out of the cluster's reach: scraping
them finds no target, so kube-prometheus-stack's ``absent(up{job=...})`` alerts for them would fire for ever."""

POD_SECURITY_ENFORCE = "pod-security.kubernetes.io/enforce"
POD_SECURITY_WARN = "pod-security.kubernetes.io/warn"
POD_SECURITY_AUDIT = "pod-security.kubernetes.io/audit"

ACK_INTRANET_LB = {"service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type": "intranet"}
"""The annotation that makes an ACK LoadBalancer Service internal (a VPC-only address)."""

# --- DNS of host-network pods ------------------------------------------------------------------------------------
HOST_NETWORK_DNS_POLICY = "ClusterFirstWithHostNet"
""""For Pods running with hostNetwork, you should explicitly set its DNS policy to ClusterFirstWithHostNet.
Otherwise, Pods running with hostNetwork and "ClusterFirst" will fallback to the behavior of the "Default" policy"
(kubernetes.io/docs/concepts/services-networking/dns-pod-service, Pod's DNS Policy): the node's resolver, which
knows no Service or pod name of the cluster."""
PEER_ADDRESS_FLAGS = ("--dist-init-addr", "--master-addr", "--master_addr", "--address", "--head-address",
                      "--nccl-init-addr", "--data-parallel-address", "--leader-address")
"""Flags of multi-node inference launchers that name the first node (SGLang ``--dist-init-addr``, torchrun
``--master-addr``/``--master_addr``, ``ray start --address``, vLLM ``--data-parallel-address``)."""
PEER_ADDRESS_ENV = ("MASTER_ADDR", "LWS_LEADER_ADDRESS", "RAY_ADDRESS", "LEADER_ADDR", "DIST_INIT_ADDR")
"""Environment variables that carry the first node's address (torch.distributed's ``MASTER_ADDR``; LeaderWorkerSet
sets ``LWS_LEADER_ADDRESS`` to the leader pod's DNS name under the group's headless Service)."""


# --- Ray's dashboard ----------------------------------------------------------------------------------------------
RAY_DASHBOARD_PORT = 8265
"""The Ray head's dashboard port (``ray start --dashboard-port``, default 8265; KubeRay's head Service names it
``dashboard``), which also serves the Jobs API: "If you expose these services (Ray Dashboard, Ray Jobs, Ray
Client), anybody who can access the associated ports can execute arbitrary code on your Ray Cluster"
(docs.ray.io/en/latest/ray-security/index.html; CVE-2023-48022)."""
RAY_AUTH_ENV = ("RAY_AUTH_MODE", "token")
"""Ray 2.52 and later require a token on the dashboard and Jobs API with ``RAY_AUTH_MODE=token`` on the head (the
fix of CVE-2025-62593, GHSA-q279-jhrf-cc6v)."""
INGRESS_AUTH_ANNOTATIONS = (
    "nginx.ingress.kubernetes.io/auth-url", "nginx.ingress.kubernetes.io/auth-type",
    "nginx.ingress.kubernetes.io/auth-tls-verify-client", "alb.ingress.kubernetes.io/auth-type",
    "cloud.google.com/backend-config", "beta.cloud.google.com/backend-config",
    "traefik.ingress.kubernetes.io/router.middlewares", "konghq.com/plugins",
)
"""Ingress annotations by which a controller authenticates requests before they reach the backend: ingress-nginx
external and basic auth and client certificates (kubernetes.github.io/ingress-nginx/user-guide/nginx-configuration/
annotations), the AWS Load Balancer Controller's ``auth-type`` (cognito, oidc), GKE's BackendConfig (where IAP is
enabled), a Traefik middleware chain and Kong plugins (whose content this check cannot see: their presence is taken
as the team's authentication)."""


# --- Services: what makes a LoadBalancer internal ---------------------------------------------------------------
INTERNAL_LB_ANNOTATIONS: dict[str, tuple[str, ...]] = {
    # Alibaba Cloud CCM: CLB address type (Alibaba "Configure CLB instances by using annotations")
    "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type": ("intranet",),
    # GKE: https://cloud.google.com/kubernetes-engine/docs/how-to/internal-load-balancing (current annotation)
    "networking.gke.io/load-balancer-type": ("internal",),
    # GKE before 1.17 and the in-tree GCE provider (kubernetes pkg/cloudprovider/providers/gce/gce_annotations.go)
    "cloud.google.com/load-balancer-type": ("internal",),
    # AWS Load Balancer Controller: https://kubernetes-sigs.github.io/aws-load-balancer-controller/latest/guide/
    # service/annotations/ (aws-load-balancer-scheme: internal | internet-facing)
    "service.beta.kubernetes.io/aws-load-balancer-scheme": ("internal",),
    # AWS, deprecated in favour of the scheme but still honoured (same page; "true" is the documented value)
    "service.beta.kubernetes.io/aws-load-balancer-internal": ("true",),
    # Azure: https://learn.microsoft.com/azure/aks/internal-lb
    "service.beta.kubernetes.io/azure-load-balancer-internal": ("true",),
}
"""Annotation -> values (compared case-insensitively) that make a ``LoadBalancer`` Service internal, per cloud."""
INTERNAL_LB_CLASSES = ("networking.gke.io/l4-regional-internal",)
"""``spec.loadBalancerClass`` values that create an internal load balancer (GKE "About LoadBalancer Services")."""
ACK_INTRANET_LB = {"service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type": "intranet"}
"""What our components put on an internal LoadBalancer on ACK."""

# --- scale targets ----------------------------------------------------------------------------------------------
SCALE_SUBRESOURCE_KINDS: dict[str, tuple[str, ...]] = {
    # built-in kinds with a /scale subresource (kubernetes pkg/registry/apps/*, core replicationcontroller)
    "Deployment": ("apps",),
    "StatefulSet": ("apps",),
    "ReplicaSet": ("apps",),
    "ReplicationController": ("",),
    # CRDs that declare subresources.scale in their upstream CRD manifests
    "LeaderWorkerSet": ("leaderworkerset.x-k8s.io",),   # kubernetes-sigs/lws config/crd
    "Rollout": ("argoproj.io",),                          # argoproj/argo-rollouts manifests/crds/rollout-crd.yaml
}
"""Kinds an HPA can scale, with their API groups: an HPA works against any object with a scale subresource."""
NOT_SCALABLE_KINDS = ("DaemonSet", "Job", "CronJob", "Pod", "Service", "ConfigMap", "Secret", "Ingress",
                      "PodDisruptionBudget", "HorizontalPodAutoscaler")
"""Built-in kinds that have no scale subresource: an HPA aimed at one never scales anything."""

READ_ONLY_API_GROUPS = ("custom.metrics.k8s.io", "external.metrics.k8s.io", "metrics.k8s.io")
"""Aggregated metrics APIs, which serve only get and list (k8s.io/metrics: pkg/apis/custom_metrics,
external_metrics): a wildcard verb on them grants no write."""

ESCALATION_GRANTS: tuple[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], str], ...] = (
    (("",), ("pods/exec",), ("create", "*"), "runs commands in any pod of its scope, with that pod's service "
     "account and mounted Secrets (Trivy KSV053, Checkov CKV2_K8S_2, Polaris rolePodExecAttach)"),
    (("",), ("pods/attach",), ("create", "*"), "attaches to the processes of any pod of its scope (Trivy KSV054, "
     "Polaris rolePodExecAttach)"),
    (("",), ("nodes/proxy",), ("get", "create", "*"), "reaches the kubelet API of every node, which runs commands "
     "in any pod there (Trivy KSV047, Checkov CKV2_K8S_2)"),
    (("rbac.authorization.k8s.io",), ("roles", "clusterroles"), ("escalate",), "grants itself any permission "
     "(Checkov CKV_K8S_158)"),
    (("rbac.authorization.k8s.io",), ("roles", "clusterroles"), ("bind",), "binds any role, cluster-admin included "
     "(Checkov CKV_K8S_157)"),
    (("",), ("users", "groups", "serviceaccounts"), ("impersonate", "*"), "acts as any user, group or service "
     "account (Trivy KSV043, Checkov CKV2_K8S_3)"),
    (("",), ("serviceaccounts/token",), ("create", "*"), "mints tokens of any service account of its scope"),
)
"""RBAC grants that let their holder gain more than they name, from the Kubernetes documentation "Role Based
Access Control Good Practices" (kubernetes.io/docs/concepts/security/rbac-good-practices: "Privilege escalation
risks": exec into pods, escalate and bind verbs, impersonate, nodes/proxy, token request): (API groups, resources,
verbs, what the holder can then do). A rule matches when its API groups hold one of these groups or ``*`` and it
names the resource (``*`` resources are judged by ``rbac-no-wildcards``) with one of the verbs."""

ROOT_OPT_OUT_ANNOTATION = "gpuplatform.io/run-as-root"
"""Pod template annotation of a workload that opts out of non-root (``runAsRoot``): the policy pack reports it
under the advisory ``pod-root-opt-out`` instead of failing ``pod-run-as-non-root``."""

# --------------------------------------------------------------------------------------- warm capacity
CA_EXPENDABLE_PODS_PRIORITY_CUTOFF = -10
"""cluster-autoscaler's ``--expendable-pods-priority-cutoff`` default (-10 since CA 1.12): pods with a priority
*below* it neither trigger a scale-up nor keep a node from scaling down (kubernetes/autoscaler
cluster-autoscaler/FAQ.md, "How does Cluster Autoscaler work with Pod Priority and Preemption?"). ACK's
cluster-autoscaler keeps the upstream default."""
WARM_CAPACITY_PRIORITY = CA_EXPENDABLE_PODS_PRIORITY_CUTOFF
"""Priority of warm-capacity placeholders: the cutoff itself, the lowest priority at which a Pending pod still makes
the cluster autoscaler add a node (the FAQ's "How can I configure overprovisioning with Cluster Autoscaler?" reserves
-10 for overprovisioning pods for that reason). A lower value (the Kubernetes docs' example uses -1000) would make
an evicted placeholder expendable: it would never get its node back, and the warm capacity would be gone after the
first burst. Every other pod (priority 0 by default) preempts it."""
SCHEDULER_POD_INITIAL_BACKOFF_S = 1
"""kube-scheduler's ``podInitialBackoffSeconds`` default (KubeSchedulerConfiguration v1, kubernetes
pkg/scheduler/apis/config/v1/defaults.go): a pod that preempted others is retried from the scheduling queue after
its victims are gone (kubernetes.io "Pod Priority and Preemption": the preemptor gets ``nominatedNodeName`` and is
bound on a later cycle). The simulator binds it this long after the preemption; the victims' own graceful
termination is 0 s (placeholders set ``terminationGracePeriodSeconds: 0``)."""


# ------------------------------------------------------------------------------------- every workload's pod
TMP_MOUNT_PATH = "/tmp"
"""Where every workload's writable emptyDir is mounted (its root filesystem is read-only by default)."""
TMP_SIZE_LIMIT_GIB = 1
"""Size limit of the writable ``/tmp`` emptyDir every workload gets (the kubelet evicts a pod that writes more)."""
SERVICE_PROTOCOLS = ("http", "grpc")
"""The port protocols a workload's Service exposes; a ``metrics`` port is scraped from the pods only."""

POD_PLACEMENTS = ("binpack", "spread")
"""How the cluster's scheduler picks among the nodes a pod fits, as ``simulate`` models it (``cluster.podPlacement``):
``binpack`` the fullest node first, ``spread`` the node with the fewest of the workload's pods first."""
DEFAULT_POD_PLACEMENT = {"ack-managed": "spread", "ack-existing": "spread", "kubeconfig": "spread"}
"""Per cluster kind, the placement its scheduler uses unless the stack states another. The upstream kube-scheduler's
default profile spreads: its scoring plugins include NodeResourcesFit with the LeastAllocated strategy
(pkg/scheduler/apis/config/v1/defaults.go) and PodTopologySpread at weight 2 with the system default constraint of
maxSkew 3 per hostname, ScheduleAnyway (pkg/scheduler/framework/plugins/podtopologyspread/plugin.go
``systemDefaultConstraints``); a GPU is not among the resources it scores. Measured on kube-scheduler v1.35.4
(tests/realengines/gpuplatform/simulate/test_cluster_pod_order_on_real_controllers.py). ACK's kube-scheduler add-on
spreads unless its bin-packing option is on: the current "Customize kube-scheduler parameters" page (ACK managed
and dedicated clusters) lists that option with the default false, and the kube-scheduler component page says it
spreads pods by default; an earlier revision of the same page, and the page for ACK Lingjun clusters, list true.
A cluster with the option on states ``binpack``."""
