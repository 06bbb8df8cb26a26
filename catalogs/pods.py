"""Pods a cluster runs besides the stack's own workloads, as the scheduler sees them: ACK's system pods, the pods
of the ACK add-ons the package installs, and the pods of every pinned Helm chart.

Only controllers that must place their pods somewhere are listed (Deployments, StatefulSets, Jobs). A DaemonSet
creates a pod on each node it admits and none elsewhere, so "no node for it" is not a failure of scheduling; the
GPU agents among them are checked where they are configured (exporter tolerations, ``gpuplatform verify``
``exporter.ready``).

Each pod names its source and whether that source shows its scheduling constraints (``sourced``) or only that it
exists, in which case it is taken as an ordinary pod: no toleration, no node selector. That is the assumption the
home check is strict under: such a pod needs an untainted node, which is what an unsourced ACK component needs
unless ACK documents otherwise.

The chart pods are checked against the real Helm engine: ``tests/helm/catalogs/test_pods_charts.py`` renders every pinned
chart with the values each stack registers and compares every pod template with :func:`chart_pods`.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional

from gpuplatform.catalogs.sharing import AUTOSCALED_POOL_LABEL

NOT_ON_AUTOSCALED_NODES = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": AUTOSCALED_POOL_LABEL[0], "operator": "NotIn",
                           "values": [AUTOSCALED_POOL_LABEL[1]]}]}]}}}
"""The required node affinity ACK's own manifests use to keep a pod off autoscaled nodes (kube-eventer's
managed-cluster manifest: AliyunContainerService/kube-eventer ``deploy/deploy-for-sls(managed cluster).yaml``)."""


@dataclass(frozen=True)
class ClusterPod:
    """The pods of one controller, with the scheduling fields of their pod spec (Kubernetes field names)."""

    owner: str
    """``<Kind> <namespace>/<name>``, e.g. ``Deployment kube-system/coredns``."""
    origin: str
    """Who creates it: ``ACK``, ``ACK add-on arms-prometheus``, ``Helm release cert-manager``."""
    spec: dict = field(default_factory=dict)
    """``nodeSelector``, ``tolerations``, ``affinity``, ``containers[].resources.requests``,
    ``initContainers``."""
    replicas: int = 1
    one_per_node: bool = False
    """A required pod anti-affinity by hostname among its own replicas: it needs ``replicas`` nodes."""
    source: str = ""
    sourced: bool = True
    """Whether ``source`` shows its scheduling constraints; False: only that it runs (taken as an ordinary pod)."""
    hook: bool = False
    """A Helm hook Job (runs during install or upgrade, and must schedule for the release to succeed)."""
    daemonset: bool = False
    """A DaemonSet: one pod on every node it admits, none elsewhere (so "no node" is not a failure, but each of
    its pods is charged to every node it runs on)."""


def _requests(cpu: str, memory: str) -> dict:
    """A pod spec holding only its containers' summed requests."""
    return {"containers": [{"resources": {"requests": {"cpu": cpu, "memory": memory}}}]}


_TOLERATE_ALL = [{"operator": "Exists"}]
"""A DaemonSet that runs on every node whatever its taints (ACK's node agents: their tolerations are not
published; taken as tolerating everything, the conservative assumption for a node's pod count)."""


# ------------------------------------------------------------------------------------------------ ACK itself
def ack_system_pods(cluster_spec: str) -> list[ClusterPod]:
    """Pods a new ACK managed cluster runs on its worker nodes, by cluster spec."""
    from gpuplatform.catalogs.ack import PRO_SPECS

    pods = [
        ClusterPod(
            "Deployment kube-system/coredns", "ACK", _requests("100m", "70Mi"), replicas=2, one_per_node=True,
            source="ACK 'Configure CoreDNS for high availability' (run at least 2 CoreDNS pods); CoreDNS change log "
                   "v1.8.4.3 (anti-affinity by hostname changed from preferred to required); v1.8.4.5 (elastic "
                   "nodes allowed); tolerations not published; requests 100m CPU / 70Mi: the upstream manifest "
                   "(coredns/deployment kubernetes/coredns.yaml.sed), ACK's own not published",
            sourced=False),
        ClusterPod(
            "Deployment kube-system/metrics-server", "ACK",
            {"affinity": NOT_ON_AUTOSCALED_NODES, **_requests("100m", "200Mi")},
            source="terraform-provider-alicloud website/docs/r/cs_kubernetes_node_pool.html.markdown: autoscaled "
                   "nodes are labelled k8s.aliyun.com=true 'to prevent system pods such as coredns, "
                   "metrics-servers from being scheduled to elastic nodes' (the required form is kube-eventer's); "
                   "requests 100m CPU / 200Mi: the upstream manifest (kubernetes-sigs/metrics-server "
                   "manifests/base/deployment.yaml), ACK's own not published",
            sourced=False),
    ]
    if cluster_spec not in PRO_SPECS:
        # the cluster is created with the in-cluster `csi-provisioner` add-on (catalogs/ack.py); Pro clusters get
        # `managed-csiprovisioner`, whose pods ACK runs outside the cluster ("The component pods are managed by ACK
        # and are not visible in the kube-system namespace": ACK csi-provisioner documentation, doc 134761)
        pods.append(ClusterPod(
            "Deployment kube-system/csi-provisioner", "ACK add-on csi-provisioner", {},
            source="ACK storage CSI documentation (doc 134761): csi-provisioner runs as a Deployment; "
                   "tolerations not published", sourced=False))
    return pods


ADDON_PODS: dict[str, list[ClusterPod]] = {
    "arms-prometheus": [ClusterPod(
        "Deployment arms-prom/arms-prom-ack-arms-prometheus", "ACK add-on arms-prometheus", {},
        source="ACK 'Troubleshoot issues in GPU monitoring' (the agent pod arms-prom-ack-arms-prometheus-<hash>); "
               "tolerations not published", sourced=False)],
    "ack-node-problem-detector": [ClusterPod(
        "Deployment kube-system/kube-eventer", "ACK add-on ack-node-problem-detector",
        {"affinity": NOT_ON_AUTOSCALED_NODES, **_requests("100m", "100Mi")},
        source="ACK 'ack-node-problem-detector' (parts: kube-eventer and DaemonSets); AliyunContainerService/"
               "kube-eventer deploy/deploy-for-sls(managed cluster).yaml (replicas 1, required k8s.aliyun.com "
               "NotIn [true], no tolerations); requests 100m CPU / 100Mi: kube-eventer README's install manifest")],
    "node-lifecycle-controller": [ClusterPod(
        "Deployment kube-system/node-lifecycle-controller", "ACK add-on node-lifecycle-controller", {},
        source="no ACK document shows where it runs: taken as one ordinary pod", sourced=False)],
    "nginx-ingress-controller": [ClusterPod(
        "Deployment kube-system/nginx-ingress-controller", "ACK add-on nginx-ingress-controller",
        {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "type", "operator": "NotIn", "values": ["virtual-kubelet"]},
                                  {"key": AUTOSCALED_POOL_LABEL[0], "operator": "NotIn",
                                   "values": [AUTOSCALED_POOL_LABEL[1]]}]}]}}}},
        source="copies of ACK's nginx-ingress-controller 1.9.3 manifest (aliyun-ingress-controller "
               "v1.9.3-aliyun.1): required type NotIn [virtual-kubelet], k8s.aliyun.com NotIn [true]; kind and "
               "replicas not published", sourced=False)],
    # ack-ai-installer is "a collection of device plug-ins" (ACK cloud-native AI suite, ack-ai-installer): DaemonSets
    # on GPU nodes only; ack-cgpu (adopted dedicated clusters) runs its scheduler extender on master nodes
}
"""Pods (other than DaemonSets) each ACK add-on the package installs runs on worker nodes. An add-on absent here
runs none (flannel, terway, csi-plugin and ack-ai-installer are DaemonSets; managed-csiprovisioner runs outside
the cluster)."""


ACK_DAEMONSETS: dict[str, tuple[ClusterPod, ...]] = {
    # every node of every cluster
    "": (ClusterPod("DaemonSet kube-system/kube-proxy-worker", "ACK", {"tolerations": _TOLERATE_ALL},
                    daemonset=True, source="ACK runs kube-proxy on every worker node (DaemonSet kube-proxy-worker); "
                    "requests and tolerations not published: one pod on every node, no requests", sourced=False),),
    "flannel": (ClusterPod("DaemonSet kube-system/kube-flannel-ds", "ACK add-on flannel",
                           {"tolerations": _TOLERATE_ALL, **_requests("100m", "50Mi")}, daemonset=True,
                           source="flannel-io/flannel Documentation/kube-flannel.yml (tolerates every NoSchedule "
                           "taint; requests 100m CPU / 50Mi); ACK's manifest not published", sourced=False),),
    "terway-eniip": (ClusterPod("DaemonSet kube-system/terway-eniip", "ACK add-on terway-eniip",
                                {"tolerations": _TOLERATE_ALL}, daemonset=True,
                                source="ACK Terway: a DaemonSet on every node; requests not published: no requests",
                                sourced=False),),
    "csi-plugin": (ClusterPod("DaemonSet kube-system/csi-plugin", "ACK add-on csi-plugin",
                              {"tolerations": _TOLERATE_ALL}, daemonset=True,
                              source="ACK storage CSI documentation: csi-plugin is a DaemonSet on every node; requests "
                              "not published: no requests", sourced=False),),
    "ack-node-problem-detector": (ClusterPod(
        "DaemonSet kube-system/ack-node-problem-detector-daemonset", "ACK add-on ack-node-problem-detector",
        {"tolerations": _TOLERATE_ALL}, daemonset=True,
        source="ACK 'ack-node-problem-detector' (kube-eventer and DaemonSets); requests not published: no requests",
        sourced=False),),
}
"""DaemonSets ACK and its add-ons run on worker nodes, by add-on ("": every cluster). Each is charged to every
node it admits (a pod of the node's max pods, and its requests where a source gives them)."""


def ack_daemonsets(addons) -> list[ClusterPod]:
    """The ACK DaemonSets of a cluster running ``addons``."""
    return [p for key in ("", *addons) for p in ACK_DAEMONSETS.get(key, ())]


# ------------------------------------------------------------------------------------------------ Helm charts
SCHEDULING_KEYS = ("nodeSelector", "tolerations", "affinity", "resources")


@dataclass(frozen=True)
class ChartWorkload:
    """One pod template a chart renders, and where its values put the pod's scheduling fields."""

    kind: str
    name: str
    """Object name, ``{release}`` standing for the release name."""
    values: tuple[str, ...]
    """Values path of the block holding its ``nodeSelector``, ``tolerations``, ``affinity`` and ``resources``
    (empty: the chart's root)."""
    default: dict = field(default_factory=dict)
    """The chart's own values at that path (the scheduling keys only)."""
    requests_at: Optional[tuple[str, ...]] = None
    """Where its ``resources`` live when not under ``values`` (``resources.operator`` in KEDA)."""
    hook: bool = False
    namespace: Optional[str] = None
    """Its namespace when not the release's."""
    reads: tuple[str, ...] = SCHEDULING_KEYS
    """The scheduling keys the template takes from the values; for any other it writes ``default``'s (usually
    nothing) whatever the values say (the GPU Operator's CRD upgrade Job reads only the operator's node selector
    and tolerations)."""
    versions: Optional[tuple[str, ...]] = None
    """The pinned chart versions that render it so (None: every pinned version)."""


_CONTROL_PLANE = "node-role.kubernetes.io/control-plane"
_LEGACY_MASTER = "node-role.kubernetes.io/master"


def _tolerate(*keys: str) -> list[dict]:
    return [{"key": k, "operator": "Equal", "value": "", "effect": "NoSchedule"} for k in keys]


def _prefer(*keys: str) -> dict:
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": {"matchExpressions": [{"key": k, "operator": "In", "values": [""]}]}}
        for k in keys]}}


_LINUX = {"kubernetes.io/os": "linux"}
_KEDA_RESOURCES = {"limits": {"cpu": 1, "memory": "1000Mi"}, "requests": {"cpu": "100m", "memory": "100Mi"}}
_GPU_OPERATOR_RESOURCES = {"limits": {"cpu": "500m", "memory": "350Mi"}, "requests": {"cpu": "200m", "memory": "100Mi"}}

CHART_WORKLOADS: dict[str, tuple[ChartWorkload, ...]] = {
    # 88.5.3 values.yaml: every block below defaults nodeSelector {}, tolerations [], affinity {}, resources {}
    # (grafana and kube-state-metrics in their subcharts' values). Off with the chart's defaults and so not listed:
    # the admission webhook Deployment (prometheusOperator.admissionWebhooks.deployment.enabled), ThanosRuler,
    # grafana's image renderer; the webhook patch Jobs are replaced by cert-manager Certificates when
    # prometheusOperator.admissionWebhooks.certManager.enabled. The Prometheus and Alertmanager resources are the
    # pod specs the operator gives their StatefulSets (spec.resources: the main container's).
    "kube-prometheus-stack": (
        ChartWorkload("Job", "{release}-crds-upgrade", ("crds", "upgradeJob"), hook=True),
        ChartWorkload("Job", "{release}-admission-create", ("prometheusOperator", "admissionWebhooks", "patch"),
                      hook=True),
        ChartWorkload("Job", "{release}-admission-patch", ("prometheusOperator", "admissionWebhooks", "patch"),
                      hook=True),
        ChartWorkload("Deployment", "{release}-operator", ("prometheusOperator",)),
        # the grafana container only: its sidecars take grafana.sidecar.resources (empty by default)
        ChartWorkload("Deployment", "{release}-grafana", ("grafana",)),
        ChartWorkload("Deployment", "{release}-kube-state-metrics", ("kube-state-metrics",)),
        ChartWorkload("Alertmanager", "{release}-alertmanager", ("alertmanager", "alertmanagerSpec")),
        ChartWorkload("Prometheus", "{release}-prometheus", ("prometheus", "prometheusSpec")),
    ),
    # 5.3.0 values.yaml: nodeSelector {}, tolerations [], affinity {}, resources {}
    "prometheus-adapter": (
        ChartWorkload("Deployment", "{release}", ()),
    ),
    # v1.21.1 and v1.16.2 alike: each block defaults nodeSelector kubernetes.io/os: linux, the rest empty. v1.21
    # also merges global.nodeSelector (empty) under each block's, which is not modelled. The startupapicheck Job is
    # a post-install hook (startupapicheck.jobAnnotations); the ACME solver pods run only for ACME challenges.
    "cert-manager": (
        ChartWorkload("Deployment", "{release}", (), {"nodeSelector": _LINUX}),
        ChartWorkload("Deployment", "{release}-cainjector", ("cainjector",), {"nodeSelector": _LINUX}),
        ChartWorkload("Deployment", "{release}-webhook", ("webhook",), {"nodeSelector": _LINUX}),
        ChartWorkload("Job", "{release}-startupapicheck", ("startupapicheck",), {"nodeSelector": _LINUX},
                      hook=True),
    ),
    # 2.20.2 and 2.18.1: the templates always write nodeSelector kubernetes.io/os: linux and add the values' own;
    # both read the root nodeSelector, tolerations and affinity (2.20 prefers operator./metricsServer./webhooks.
    # blocks when set, 2.18 only for affinity: a per-component block is not modelled). Names come from
    # operator.name and webhooks.name, not the release.
    "keda": (
        ChartWorkload("Deployment", "keda-operator", (), {"nodeSelector": _LINUX, "resources": _KEDA_RESOURCES},
                      requests_at=("resources", "operator")),
        ChartWorkload("Deployment", "keda-operator-metrics-apiserver", (),
                      {"nodeSelector": _LINUX, "resources": _KEDA_RESOURCES},
                      requests_at=("resources", "metricServer")),
        ChartWorkload("Deployment", "keda-admission-webhooks", (),
                      {"nodeSelector": _LINUX, "resources": _KEDA_RESOURCES}, requests_at=("resources", "webhooks")),
    ),
    # Fixed object names. The operator block's defaults differ between the pins (v25.10 has no node selector and
    # also tolerates the legacy master taint), and v25.10's CRD upgrade Job (a pre-upgrade hook) takes only the
    # operator's tolerations. The pre-delete cleanup Jobs and NFD's post-delete prune Job are left out. NFD
    # (0.19.0 in v26.7, 0.18.2 in v25.10) has the same master and gc defaults in both.
    "gpu-operator": (
        ChartWorkload("Deployment", "gpu-operator", ("operator",),
                      {"nodeSelector": _LINUX, "tolerations": _tolerate(_CONTROL_PLANE),
                       "affinity": _prefer(_CONTROL_PLANE), "resources": _GPU_OPERATOR_RESOURCES},
                      versions=("v26.7.0",)),
        ChartWorkload("Deployment", "gpu-operator", ("operator",),
                      {"tolerations": _tolerate(_LEGACY_MASTER, _CONTROL_PLANE),
                       "affinity": _prefer(_LEGACY_MASTER, _CONTROL_PLANE), "resources": _GPU_OPERATOR_RESOURCES},
                      versions=("v25.10.1",)),
        ChartWorkload("Job", "gpu-operator-upgrade-crd", ("operator",),
                      {"nodeSelector": _LINUX, "tolerations": _tolerate(_CONTROL_PLANE)}, hook=True,
                      reads=("nodeSelector", "tolerations"), versions=("v26.7.0",)),
        ChartWorkload("Job", "gpu-operator-upgrade-crd", ("operator",),
                      {"tolerations": _tolerate(_LEGACY_MASTER, _CONTROL_PLANE)}, hook=True,
                      reads=("tolerations",), versions=("v25.10.1",)),
        ChartWorkload("Deployment", "{release}-node-feature-discovery-master", ("node-feature-discovery", "master"),
                      {"tolerations": _tolerate(_CONTROL_PLANE), "affinity": _prefer(_CONTROL_PLANE),
                       "resources": {"limits": {"memory": "4Gi"}, "requests": {"cpu": "100m", "memory": "128Mi"}}}),
        ChartWorkload("Deployment", "{release}-node-feature-discovery-gc", ("node-feature-discovery", "gc"),
                      {"resources": {"limits": {"memory": "1Gi"}, "requests": {"cpu": "10m", "memory": "128Mi"}}}),
    ),
    # 0.2.0: fixed names, no scheduling values (only resources). Left out: the Deployments of zero replicas (the
    # `gpu-operator` placeholder while gpuOperator.enabled is false, and `nvidia-dcgm-exporter`, the template
    # status-updater copies for each fake node) and the DaemonSets.
    "fake-gpu-operator": (
        ChartWorkload("Deployment", "status-updater", ("statusUpdater",),
                      {"resources": {"requests": {"cpu": "200m", "memory": "200Mi"}}}, reads=("resources",)),
        ChartWorkload("Deployment", "topology-server", ("topologyServer",),
                      {"resources": {"requests": {"cpu": "100m", "memory": "100Mi"}}}, reads=("resources",)),
        ChartWorkload("Deployment", "kwok-gpu-device-plugin", ("kwokGpuDevicePlugin",),
                      {"resources": {"requests": {"cpu": "100m", "memory": "200Mi"}}}, reads=("resources",)),
        ChartWorkload("Deployment", "nvidia-dcgm-exporter-kwok", ("statusExporter", "kwok"),
                      {"resources": {"requests": {"cpu": "50m", "memory": "100Mi"}}}, reads=("resources",)),
    ),
    # dcgm-exporter 4.8.2 renders a DaemonSet only; ack-alibaba-cloud-metrics-adapter has no public chart to check
}
"""Chart name -> the non-DaemonSet pod templates it renders with the values the package gives it (hook Jobs that
run on install or upgrade included, delete and test hooks not), for every pinned version. Object names assume the
release is named after its chart, as every release here is (charts shorten or drop the chart name otherwise).
``tests/helm/catalogs/test_pods_charts.py`` proves it against the real Helm engine."""


CHART_DAEMONSETS: dict[str, tuple[ChartWorkload, ...]] = {
    # 88.5.3: the prometheus-node-exporter subchart's values: nodeSelector kubernetes.io/os: linux, tolerations
    # [{effect: NoSchedule, operator: Exists}], resources {}
    "kube-prometheus-stack": (
        ChartWorkload("DaemonSet", "{release}-prometheus-node-exporter", ("prometheus-node-exporter",),
                      {"nodeSelector": _LINUX, "tolerations": [{"effect": "NoSchedule", "operator": "Exists"}]}),
    ),
}
"""The DaemonSets a chart renders that the sum of requests per node charges (kept apart from
:data:`CHART_WORKLOADS`, whose every entry must find a home). Only those listed here are charged; the GPU
agents' DaemonSets (dcgm-exporter, the GPU Operator's) have empty requests by default and run on GPU nodes."""


UNPUBLISHED_CHART_PODS: dict[str, tuple[ClusterPod, ...]] = {
    "ack-alibaba-cloud-metrics-adapter": (ClusterPod(
        "Deployment kube-system/ack-alibaba-cloud-metrics-adapter", "Helm release ack-alibaba-cloud-metrics-adapter",
        {}, source="ACK's guides install the chart from the App Catalog into kube-system (seed 002); the chart is "
                   "not published, so its scheduling values are not known", sourced=False),),
}
"""Charts no public source publishes, so nothing renders them offline: their pods as far as ACK documents them,
taken as ordinary pods."""

_MISSING = object()


def _lookup(values: Any, path: tuple[str, ...]) -> Any:
    """The value at ``path``, or ``_MISSING`` when a key on the way is absent (a null is a value: Helm's
    coalescing deletes the chart's default for a key set to null)."""
    node = values
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return _MISSING
        node = node[key]
    return node


def _coalesce(value: Any, default: Any) -> Any:
    """A value given over the chart's default as Helm coalesces them: maps merge key by key (a null deletes the
    key), anything else (a list, a scalar, a null) replaces the default."""
    if not isinstance(value, dict):
        return value
    out = dict(default) if isinstance(default, dict) else {}
    for key, given in value.items():
        if given is None:
            out.pop(key, None)
        else:
            out[key] = _coalesce(given, out.get(key))
    return out


def _newest_pin(chart_name: str) -> Optional[str]:
    from gpuplatform.catalogs.versions import CHARTS

    return next((c.version for c in CHARTS.values() if c.name == chart_name), None)


def chart_pods(chart_name: str, release: str, namespace: str, values: dict,
               version: Optional[str] = None) -> list[ClusterPod]:
    """The pods a release of ``chart_name`` schedules, with the scheduling fields ``values`` (ours merged with the
    stack's ``helmValues``) give each of them over the chart's defaults. ``version``: the pinned chart version the
    release installs (None: the newest pin)."""
    if chart_name in UNPUBLISHED_CHART_PODS:
        return [ClusterPod(p.owner.replace("kube-system/", f"{namespace}/", 1), f"Helm release {release}", p.spec,
                           source=p.source, sourced=False) for p in UNPUBLISHED_CHART_PODS[chart_name]]
    return _rendered(chart_name, release, namespace, values, version, CHART_WORKLOADS)


def chart_daemonsets(chart_name: str, release: str, namespace: str, values: dict,
                     version: Optional[str] = None) -> list[ClusterPod]:
    """The DaemonSets of :data:`CHART_DAEMONSETS` a release runs, with the scheduling fields its values give."""
    return [dataclasses.replace(p, daemonset=True)
            for p in _rendered(chart_name, release, namespace, values, version, CHART_DAEMONSETS)]


def _rendered(chart_name: str, release: str, namespace: str, values: dict, version: Optional[str],
              catalog: dict) -> list[ClusterPod]:
    version = version or _newest_pin(chart_name)
    out = []
    for w in catalog.get(chart_name, ()):
        if w.versions is not None and version not in w.versions:
            continue
        spec: dict = {}
        for key in SCHEDULING_KEYS:
            path = (w.requests_at or (*w.values, key)) if key == "resources" else (*w.values, key)
            given = _lookup(values, path) if key in w.reads else _MISSING
            value = w.default.get(key) if given is _MISSING else _coalesce(given, w.default.get(key))
            if key == "resources":
                requests = value.get("requests") if isinstance(value, dict) else None
                if requests:
                    spec["containers"] = [{"resources": {"requests": dict(requests)}}]
            elif value:
                spec[key] = value
        out.append(ClusterPod(f"{w.kind} {w.namespace or namespace}/{w.name.format(release=release)}",
                              f"Helm release {release}", spec, source=f"{chart_name} chart values",
                              hook=w.hook))
    return out
