"""Who may connect to a workload's pods, as its NetworkPolicy admits them (the object itself is built by
:func:`components.workload_manifests.network_policy`), and what ``plan`` says about it.

The policy selects the workload's pods and admits, each to its own ports only:

* the ingress controller, to the ports its Ingress routes: ACK's nginx-ingress-controller add-on, or the
  community ingress-nginx (catalogs/network.py names their namespaces and pod labels); an ALB Ingress forwards
  from the load balancer's addresses in the VPC, which are no pods, so its routed ports take any source;
* the stack's Prometheus, to the metrics port (kube-prometheus-stack's Prometheus pods, ACK managed Prometheus's
  agent in ``arms-prom``, or the namespace of a Prometheus the stack names by its in-cluster URL);
* any source on the serving ports of a LoadBalancer Service: its clients arrive from outside the cluster, with
  their own address or, with ``externalTrafficPolicy: Cluster``, a node's (kubernetes.io "Network Policies":
  "cluster ingress and egress mechanisms often require rewriting the source or destination IP of packets");
* the callers the stack lists (``networkPolicy.allowFrom``).

Nothing else needs a rule: the kubelet's probes come from the pod's own node, which a NetworkPolicy cannot refuse
(kubernetes.io "Network Policies", what you can't do: "Pods cannot currently block ... access from their resident
node"); the metrics adapter and KEDA query Prometheus, not the pods. Egress is left open (model downloads, DNS).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional
from urllib.parse import urlsplit

from gpuplatform.catalogs import network
from gpuplatform.catalogs.network import PodPeer
from gpuplatform.components.config import EVERY_NAMESPACE, PlatformConfig, Workload
from gpuplatform.components.cluster_version import kubernetes_version
from gpuplatform.components.warm_set import served_sleep_endpoints


@dataclass(frozen=True)
class NetworkAccess:
    """The peers a workload's NetworkPolicy admits besides the stack's own ``allowFrom``."""

    ingress_peers: tuple[PodPeer, ...] = ()
    """Pods of the ingress controller that routes the workload's Ingress."""
    ingress_from_anywhere: bool = False
    """The routed ports take any source (an ALB forwards from its own addresses, not from pods)."""
    scrapers: tuple[PodPeer, ...] = ()
    """Pods that scrape the metrics port."""
    namespace_labels: bool = True
    """Namespaces carry ``kubernetes.io/metadata.name`` (Kubernetes 1.21+)."""


def scrapers(cfg: PlatformConfig) -> tuple[PodPeer, ...]:
    """Who scrapes the workloads' metrics ports on this stack."""
    mon = cfg.monitoring
    if mon.backend == "arms":
        return (network.ARMS_AGENT,)
    if mon.prometheus_url:
        ns = network.namespace_of_service_url(urlsplit(mon.prometheus_url).hostname or "")
        return (PodPeer(ns, {}, f"the Prometheus at {mon.prometheus_url}",
                        "monitoring.prometheusUrl names its Service" if ns else ""),)
    return (network.KUBE_PROMETHEUS_STACK,)


def ingress_peers(cfg: PlatformConfig, w: Workload) -> tuple[PodPeer, ...]:
    ing = w.exposure.ingress
    if ing is None or ing.class_name != "nginx":
        return ()
    cloud = cfg.cloud
    if ing.controller_for(cloud) == "addon":
        return cloud.ingress_peers()
    # a controller the stack does not manage: the cloud's, if it has one, or the community's
    return cloud.ingress_peers() + (network.COMMUNITY_INGRESS_NGINX,)


def network_access(cfg: PlatformConfig, w: Workload) -> NetworkAccess:
    version = kubernetes_version(cfg)
    ing = w.exposure.ingress
    return NetworkAccess(ingress_peers=ingress_peers(cfg, w),
                         ingress_from_anywhere=ing is not None and ing.class_name == "alb",
                         scrapers=scrapers(cfg),
                         namespace_labels=version is None or version >= network.NAMESPACE_NAME_LABEL_SINCE)


def caller_peer(namespace: Optional[str], pod_labels: dict, own_namespace: str) -> PodPeer:
    """An ``allowFrom`` entry as a peer: no namespace is the workload's own, ``*`` every namespace."""
    if namespace is None:
        return PodPeer(own_namespace, dict(pod_labels))
    return PodPeer(None if namespace == EVERY_NAMESPACE else namespace, dict(pod_labels))


def peer_object(peer: PodPeer, own_namespace: str, namespace_labels: bool) -> dict:
    """A ``NetworkPolicyPeer``: pods of the workload's own namespace by pod selector alone; of another namespace by
    its name label (or, before 1.21, in every namespace); no pod selector means every pod there."""
    out: dict = {}
    namespace = peer.namespace
    if namespace != own_namespace:
        out["namespaceSelector"] = ({"matchLabels": {network.NAMESPACE_NAME_LABEL: namespace}}
                                    if namespace is not None and namespace_labels else {})
    if peer.pod_labels:
        out["podSelector"] = {"matchLabels": dict(peer.pod_labels)}
    elif "namespaceSelector" not in out:
        out["podSelector"] = {}
    return out


# ------------------------------------------------------------------------------------------------ plan
def network_warnings(cfg: PlatformConfig) -> list[str]:
    """What ``plan`` says about the workloads' NetworkPolicies: a cluster whose plugin ignores them, a Prometheus
    the stack cannot place, a workload no caller can reach, and callers that reach a server's sleep endpoints."""
    sleep_warnings: list[str] = []
    for i, w in enumerate(cfg.workloads):
        mode = served_sleep_endpoints(cfg, w)
        callers = "every pod of the cluster" if not w.network_policy.enabled else (
            "its networkPolicy.allowFrom callers" if w.network_policy.allow_from else "")
        if mode is not None and callers:
            sleep_warnings.append(
                f"WARNING: workloads[{i}] {w.name!r}: {w.server} serves {mode.sleep} and {mode.wake} on its API "
                f"port, which {callers} reach directly (the ingress routes only {', '.join(mode.client_paths)}): a "
                "NetworkPolicy cannot filter paths, so list only callers you trust to put replicas to sleep "
                "(docs/model-startup.md, \"Sleeping replicas\")")
    enabled = [(i, w) for i, w in enumerate(cfg.workloads) if w.network_policy.enabled]
    if not enabled:
        return sleep_warnings
    out = sleep_warnings
    if cfg.cluster.kind == "ack-managed" and cfg.cluster.network_plugin == "flannel":
        out.append(f"WARNING: cluster.networkPlugin 'flannel' does not enforce NetworkPolicy (ACK: Terway supports it, "
                   f"flannel does not): the NetworkPolicies of {len(enabled)} workload(s) are created, and every pod "
                   "of the cluster still reaches them; the plugin is fixed at creation, so only a new cluster with "
                   "networkPlugin 'terway' enforces them (docs/network.md)")
    anywhere = [p for p in scrapers(cfg) if p.namespace is None]
    if anywhere and any(_metrics_port(w) for _, w in enabled):
        out.append(f"WARNING: monitoring.prometheusUrl {cfg.monitoring.prometheus_url!r} names no in-cluster Service "
                   "(<name>.<namespace>.svc), so the namespace of the Prometheus that scrapes the workloads is not "
                   "known: their metrics ports admit every pod of the cluster; name it by its Service, or list it in "
                   "each workload's networkPolicy.allowFrom")
    for i, w in enabled:
        if (w.exposure.service_type == "ClusterIP" and w.exposure.ingress is None
                and not w.network_policy.allow_from):
            out.append(f"WARNING: workloads[{i}].networkPolicy.allowFrom is empty and {w.name!r} has no ingress or "
                       "LoadBalancer: its NetworkPolicy admits no caller, so no pod of the cluster reaches its "
                       "serving ports; list the callers (e.g. {namespace: apps, podLabels: {app: gateway}}), or set "
                       "networkPolicy.enabled false")
    return out


def _metrics_port(w: Workload):
    return next((p for p in w.ports if p.scrape_path is not None), None)
