"""Who reaches an inference pod, and which clusters enforce a NetworkPolicy at all: the facts the workloads'
NetworkPolicies, the ``network-policy-selects-serving-pods`` policy, ``plan`` and ``gpuplatform verify`` read.

Each peer below is a namespace and the labels its pods carry, with where that is stated; ``verified`` is false
where no source states it outright, and ``gpuplatform verify`` (``network.policy-peers``) then checks, on the live
cluster, that such pods run and do not use the host network (a host-network pod's traffic is its node's, which no
pod selector matches). docs/network.md lists every fact with its source.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from gpuplatform.catalogs.versions import CHARTS

PLATFORM_PART_OF = "gpu-platform"
"""``app.kubernetes.io/part-of`` of every object the package authors for a workload. Each such workload gets a
NetworkPolicy unless its stack turns it off, so the policy pack judges a serving pod carrying it even when the
objects checked hold no NetworkPolicy at all."""

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
"""Label the API server sets on every namespace to its name (kubernetes.io "Well-Known Labels, Annotations and
Taints"; feature NamespaceDefaultLabelName, beta and on in 1.21, GA in 1.22): how a NetworkPolicy peer names a
namespace."""
NAMESPACE_NAME_LABEL_SINCE = (1, 21)
"""Before 1.21 namespaces carry no such label: a peer in another namespace is then matched by its pod labels in
every namespace, since a namespace selector by name would match nothing and shut the peer out."""


@dataclass(frozen=True)
class PodPeer:
    """Pods that may open connections to a workload: a namespace (None: every namespace) and the labels its pods
    carry (empty: every pod there)."""

    namespace: Optional[str]
    pod_labels: dict = field(default_factory=dict)
    who: str = ""
    source: str = ""
    verified: bool = True
    """Whether a source states these labels and namespace outright; when not, ``gpuplatform verify`` checks them."""


ACK_NGINX_ADDON = PodPeer(
    "kube-system", {"app": "ingress-nginx"}, "ACK's nginx-ingress-controller add-on",
    "ACK \"Configure an Ingress controller to use an internal-facing SLB instance\" (doc-detail/151506): the add-on's "
    "Service kube-system/nginx-ingress-lb selects app: ingress-nginx")
COMMUNITY_INGRESS_NGINX = PodPeer(
    "ingress-nginx", {"app.kubernetes.io/name": "ingress-nginx", "app.kubernetes.io/component": "controller"},
    "the ingress-nginx controller (community chart or manifests)",
    "kubernetes/ingress-nginx charts/ingress-nginx/templates/controller-deployment.yaml (selectorLabels with the "
    "chart's name, plus app.kubernetes.io/component: controller) and deploy/static/provider/*/deploy.yaml "
    "(namespace ingress-nginx, the namespace its install guide uses)")
_KPS = CHARTS["kube-prometheus-stack"]
KUBE_PROMETHEUS_STACK = PodPeer(
    _KPS.namespace, {"app.kubernetes.io/name": "prometheus"}, "the stack's Prometheus (kube-prometheus-stack)",
    "kube-prometheus-stack 88.5.3 templates/prometheus/networkpolicy.yaml and service.yaml select the Prometheus "
    "pods by app.kubernetes.io/name: prometheus, which prometheus-operator sets on the pods of every Prometheus")
ARMS_AGENT = PodPeer(
    "arms-prom", {}, "ACK managed Prometheus's in-cluster agent (ack-arms-prometheus)",
    "Alibaba Cloud ARMS API DescribeEnvironmentFeature (its example: feature arms-prometheus-ack-arms-prometheus "
    "in namespace arms-prom) and ACK \"ack-arms-prometheus\" (the component collects the cluster's metrics); which "
    "of its pods scrape is not published, so every pod of arms-prom is admitted",
    verified=False)

CLUSTER_SERVICE_HOST = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?\.([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.svc(\.|$)")
"""``<service>.<namespace>.svc[.<cluster domain>]``: a Prometheus URL naming an in-cluster Service, whose
namespace is then the scraper's."""


def namespace_of_service_url(host: str) -> Optional[str]:
    """The namespace of an in-cluster Service host name (``prometheus-operated.monitoring.svc``), None for any other
    host (an IP address, a name outside the cluster)."""
    m = CLUSTER_SERVICE_HOST.match(host or "")
    return m.group(2) if m else None


# ------------------------------------------------------------------------------------------------ enforcement
FLANNEL_ENFORCES = False
"""ACK: "Terway supports NetworkPolicy ... Flannel does not" (ACK "Network planning" and "Terway vs Flannel").
A NetworkPolicy on a flannel cluster is accepted and does nothing."""
TERWAY_POLICY_CONFIG = {"IPVlan": "false", "NetworkPolicy": "true"}
"""The ``terway-eniip`` add-on config of a cluster created with Terway, so it enforces NetworkPolicy: the keys
ACK's Terraform guide sets for it (ACK "Manage add-ons using Terraform", ``terway-eniip`` config
``{"IPVlan":...,"NetworkPolicy":"true"}``), IPVlan off (the default veth datapath; ACK "Use network policies":
the feature needs Terway's shared ENI mode, which ``terway-eniip`` is)."""
TERWAY_CONFIGMAP = ("kube-system", "eni-config")
"""ConfigMap Terway reads its settings from; key ``disable_network_policy`` ``"true"`` turns enforcement off, and
``""``/``"false"`` leaves it on (AliyunContainerService/terway charts/terway/templates/terwayd/configmap.yaml;
its e2e tests read the key the same way: tests/main_test.go)."""
TERWAY_DAEMONSETS = ("terway-eniip", "terway-eni", "terway")
"""Terway's DaemonSets in kube-system (terway charts/terway/templates/terwayd/daemonset.yaml and the repository's
terway*.yml manifests)."""
FLANNEL_DAEMONSETS = ("kube-flannel-ds",)
"""flannel's DaemonSet in kube-system (flannel-io/flannel Documentation/kube-flannel.yml; ACK's flannel add-on)."""
ENFORCING_DAEMONSETS = {
    "calico-node": "Calico (projectcalico/calico manifests/calico.yaml; canal runs it too)",
    "cilium": "Cilium (cilium/cilium install/kubernetes/cilium/templates/cilium-agent/daemonset.yaml)",
    "antrea-agent": "Antrea (antrea-io/antrea build/yamls/antrea.yml)",
    "kube-router": "kube-router (cloudnativelabs/kube-router daemonset/kubeadm-kuberouter-all-features.yaml)",
}
"""DaemonSets (kube-system, or calico-system for the Tigera operator's Calico) of network plugins that enforce
NetworkPolicy whenever they run, with the manifest that names them."""
