"""Kubernetes facts the config validation, the components and the policies share: which API versions a
cluster version serves, Pod Security labels, and what a secret-looking variable name is."""
from __future__ import annotations

import re

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
    # KServe: each component of an InferenceService is a pod spec inline (PredictorSpec, TransformerSpec and
    # ExplainerSpec embed corev1.PodSpec; workerSpec of multi-node predictors too), kserve
    # pkg/apis/serving/v1beta1 (predictor.go, component.go, worker_spec.go)
    ("serving.kserve.io", "InferenceService"): (("spec", "predictor"), ("spec", "predictor", "workerSpec"),
                                                ("spec", "transformer"), ("spec", "explainer")),
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
    # JobSet: replicatedJobs[].template is a batch JobTemplateSpec, jobset api/jobset/v1alpha2
    ("jobset.x-k8s.io", "JobSet"): (("spec", "replicatedJobs", "*", "template", "spec", "template", "spec"),),
    # Argo Rollouts: RolloutSpec.Template is a PodTemplateSpec, as a Deployment's, pkg/apis/rollouts/v1alpha1
    ("argoproj.io", "Rollout"): (("spec", "template", "spec"),),
    # Knative Serving: Service.spec.template is a RevisionTemplateSpec whose RevisionSpec embeds corev1.PodSpec,
    # serving pkg/apis/serving/v1 (revision_types.go)
    ("serving.knative.dev", "Service"): (("spec", "template", "spec"),),
    ("serving.knative.dev", "Configuration"): (("spec", "template", "spec"),),
}
"""Where custom resources GPU users deploy keep their pod specs; ``*`` is every item of a list or value of a map.
The pod policies judge these pods as they judge a Deployment's."""
KSERVE_MODEL_CONTAINERS = ("model", "sklearn", "xgboost", "tensorflow", "pytorch", "triton", "onnx",
                           "huggingface", "pmml", "lightgbm", "paddle")
"""Keys of a KServe predictor that hold one container each (ModelSpec and the framework specs embed
corev1.Container): kserve pkg/apis/serving/v1beta1 predictor.go."""


_REFERENCE_KEY = re.compile(r"(?i)(?:^EXISTING_|_(?:REF|ENABLED|ENABLE)$|(?:^|_)FROM_SECRETS?$|"
                            r"(?:PASSWORD|PASSWD|TOKEN|CREDENTIALS?)_KEY$)")
"""Keys that name where a secret is (an existing Secret, a key inside one, a reference), not the secret."""


SECRET_URL_KEY = re.compile(r"(?i)(?:^|_)(?:WEBHOOK_URL|SLACK_API_URL|ROUTING_KEY|SERVICE_KEY|INTEGRATION_KEY)$")
"""Keys whose value is itself the credential: Alertmanager marks them ``<secret>`` in its configuration reference
(prometheus.io/docs/alerting/latest/configuration: ``slack_api_url``, ``webhook_url`` of Microsoft Teams and
Discord, PagerDuty ``routing_key``/``service_key``; each has a ``*_file`` form that reads it from a mounted
Secret), and the same key in other charts' values: whoever holds the URL can post to the channel."""
SECRET_QUERY_PARAMETER = re.compile(r"(?i)^(?:access_?token|token|api_?key|key|secret|signature|sig|password)$")
"""URL query parameters that carry a credential (a DingTalk robot's ``access_token``, a signed URL's ``signature``)."""
INCOMING_WEBHOOK = re.compile(r"(?i)^(?:hooks\.slack\.com/services/|[a-z0-9.-]*\.webhook\.office\.com/|"
                              r"(?:discord|discordapp)\.com/api/webhooks/)")
"""Incoming-webhook URLs whose path is the credential (Slack's ``hooks.slack.com/services/...``, Microsoft Teams',
Discord's): Alertmanager marks the keys holding them ``<secret>``, under whichever key a chart puts them."""


def url_credential(value: str) -> str | None:
    """What credential a URL written as text carries (None: none): a ``user:password@`` part or a query parameter
    that holds a token or key. Parsed as clients parse it (``urllib.parse``)."""
    from urllib.parse import parse_qsl, urlsplit

    text = value.strip()
    if "://" not in text:
        return None
    try:
        parts = urlsplit(text)
    except ValueError:
        return None
    if parts.password:
        return "a user:password@ part"
    if INCOMING_WEBHOOK.match(f"{parts.hostname or ''}{parts.path}"):
        return "an incoming-webhook path"
    names = [k for k, v in parse_qsl(parts.query, keep_blank_values=True) if v and SECRET_QUERY_PARAMETER.match(k)]
    return f"the query parameter {names[0]!r}" if names else None


def plaintext_secrets(values, path: str = "") -> list[str]:
    """Paths of password-like values written in plain text anywhere in a nested mapping (Helm values, env): a key
    that reads as a secret by :data:`SECRET_ENV_PATTERN` or :data:`SECRET_URL_KEY` once camelCase is spelled in
    words (``adminPassword`` -> ``ADMIN_PASSWORD``) and holds a non-empty string, or a URL carrying a credential
    (:func:`url_credential`) under any key. References are not secrets: keys naming a file, path, Secret name or
    existing Secret (``passwordFile``, ``existingSecret``), and mappings (``secretKeyRef``) hold none."""
    pattern = re.compile(SECRET_ENV_PATTERN)
    out = []
    if isinstance(values, dict):
        for key, value in values.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(value, (dict, list)):
                out += plaintext_secrets(value, where)
                continue
            words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", str(key)).replace("-", "_").replace(".", "_").upper()
            if not isinstance(value, str) or not value.strip() or _REFERENCE_KEY.search(words):
                continue
            if pattern.search(words) or SECRET_URL_KEY.search(words) or url_credential(value):
                out.append(where)
    elif isinstance(values, list):
        for i, item in enumerate(values):
            if isinstance(item, str) and url_credential(item):
                out.append(f"{path}[{i}]")
            else:
                out += plaintext_secrets(item, f"{path}[{i}]")
    return out


PROMETHEUS_OPERATOR_API = "monitoring.coreos.com/v1"
"""ServiceMonitor, PodMonitor, PrometheusRule: CRDs the kube-prometheus-stack chart (or ARMS) installs."""
KEDA_API = "keda.sh/v1alpha1"
"""ScaledObject: a CRD the KEDA chart installs."""


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

SECRET_ENV_PATTERN = (r"(?i)^(?!.*_(?:FILE|PATH|DIR|NAME)$).*?(?:^|_)"
                      r"(?:PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?)(?:_|$)")
"""Environment variable names whose values must come from a Secret, never a literal. Matched on whole
``_``-separated words (``HF_TOKEN``, ``OPENAI_API_KEY``, ``AWS_SECRET_ACCESS_KEY``), so that settings such as
``TOKENIZERS_PARALLELISM`` (Hugging Face tokenizers, set by most vLLM/TGI manifests) are not mistaken for
secrets, and names of files or objects that hold one (``*_TOKEN_FILE``, ``*_SECRET_NAME``) are not either."""

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

ROOT_OPT_OUT_ANNOTATION = "gpuplatform.io/run-as-root"
"""Pod template annotation of a workload that opts out of non-root (``runAsRoot``): the policy pack reports it
under the advisory ``pod-root-opt-out`` instead of failing ``pod-run-as-non-root``."""
