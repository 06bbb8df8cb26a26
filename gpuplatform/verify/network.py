"""Checks of the workloads' NetworkPolicies on the live cluster: whether its network plugin enforces them at all, and
whether each policy is there and the peers it admits by namespace and labels are pods that really run so.

A NetworkPolicy is accepted by every cluster and applied only by a plugin that implements it (docs/network.md), so
``network.policy-enforced`` reads which plugin runs: Terway's own switch (its ``eni-config`` ConfigMap), a plugin
that always enforces (Calico, Cilium, Antrea, kube-router), or flannel, which never does. ``network.policy-peers``
checks the peers catalogs/network.py states from documentation (the ingress controller's and the Prometheus pods):
pods that match them must run, and not on the host network, whose traffic carries the node's address that no pod
selector matches; on an enforcing plugin a wrong peer silently cuts the Ingress or the metrics the HPA reads.
"""
from __future__ import annotations

import json
from typing import Optional

from kubernetes import client as k8s

from gpuplatform.catalogs import network
from gpuplatform.catalogs.network import PodPeer
from gpuplatform.components.config import PlatformConfig, Workload
from gpuplatform.components.network_policy import ingress_peers, scrapers
from gpuplatform.verify.kube import REQUEST_TIMEOUT, _api_error, _not_found, _selector_string
from gpuplatform.verify.results import CheckResult, _fail, _pass, _warn

PLUGIN_NAMESPACES = ("kube-system", "calico-system")
"""Where network plugins run their node agents (calico-system: Calico installed by the Tigera operator)."""


def _daemonsets(apps: k8s.AppsV1Api) -> list[str]:
    names = []
    for ns in PLUGIN_NAMESPACES:
        try:
            names += [d.metadata.name for d in apps.list_namespaced_daemon_set(
                ns, _request_timeout=REQUEST_TIMEOUT).items]
        except Exception as exc:  # noqa: BLE001
            if not _not_found(exc):
                raise
    return names


def _terway_policy_off(core: k8s.CoreV1Api) -> Optional[str]:
    """What turns Terway's enforcement off, or None when it is on (``disable_network_policy`` unset or "false" in
    its ConfigMap, and not true in its CNI config)."""
    ns, name = network.TERWAY_CONFIGMAP
    data = core.read_namespaced_config_map(name, ns, _request_timeout=REQUEST_TIMEOUT).data or {}
    if str(data.get("disable_network_policy", "")).strip().lower() == "true":
        return f"{ns}/{name} sets disable_network_policy: \"true\""
    try:
        conf = json.loads(data.get("10-terway.conf") or "{}")
    except ValueError:
        conf = {}
    if isinstance(conf, dict) and conf.get("disable_network_policy") is True:
        return f"{ns}/{name} 10-terway.conf sets disable_network_policy: true"
    return None


def check_policy_enforced(cfg: PlatformConfig, apps: k8s.AppsV1Api, core: k8s.CoreV1Api) -> Optional[CheckResult]:
    """The cluster's network plugin applies the workloads' NetworkPolicies (a warning when it does not: the
    workloads run, unisolated)."""
    if not any(w.network_policy.enabled for w in cfg.workloads):
        return None
    subject = "cluster/network-plugin"
    try:
        running = _daemonsets(apps)
        terway = next((d for d in running if d in network.TERWAY_DAEMONSETS), None)
        if terway is not None:
            off = _terway_policy_off(core)
            if off is None:
                return _pass("network.policy-enforced", subject, f"Terway ({terway}) enforces NetworkPolicy")
            return _warn("network.policy-enforced", subject, f"Terway ({terway}) runs with network policy off: {off}",
                         "the NetworkPolicies are ignored; turn network policy support on in the terway-eniip "
                         "add-on's configuration (ACK console, Add-ons) (docs/network.md)")
    except Exception as exc:  # noqa: BLE001
        return _fail("network.policy-enforced", subject, f"cannot read the network plugin ({_api_error(exc)})",
                     "the credentials lack 'list daemonsets' in kube-system or 'get configmaps' there")
    enforcing = [f"{d}: {network.ENFORCING_DAEMONSETS[d]}" for d in running if d in network.ENFORCING_DAEMONSETS]
    if enforcing:
        return _pass("network.policy-enforced", subject, f"enforced by {'; '.join(enforcing)}")
    flannel = [d for d in running if d in network.FLANNEL_DAEMONSETS]
    if flannel:
        return _warn(
            "network.policy-enforced", subject,
            f"flannel ({flannel[0]}) does not enforce NetworkPolicy: every pod of the cluster reaches the workloads",
            "a cluster's network plugin is fixed at creation on ACK; a new cluster with networkPlugin 'terway' "
            "enforces them (docs/network.md)")
    return _warn(
        "network.policy-enforced", subject,
        f"no plugin known to enforce NetworkPolicy runs in {', '.join(PLUGIN_NAMESPACES)} "
        f"(DaemonSets: {', '.join(sorted(running)) or 'none'})",
        "check that the cluster's network plugin implements NetworkPolicy; if it does not, the workloads' policies "
        "are ignored")


def _peer_text(peer: PodPeer) -> str:
    labels = _selector_string(dict(peer.pod_labels)) or "any labels"
    return f"{peer.namespace}/{labels} ({peer.who})"


def _matching(peer: PodPeer, core: k8s.CoreV1Api) -> list:
    selector = _selector_string(dict(peer.pod_labels))
    pods = core.list_namespaced_pod(peer.namespace, label_selector=selector or None,
                                    _request_timeout=REQUEST_TIMEOUT).items
    return [p for p in pods if p.status is None or p.status.phase in (None, "Running", "Pending")]


def _roles(cfg: PlatformConfig, w: Workload) -> list[tuple[str, tuple[PodPeer, ...]]]:
    """(what a group of peers is for, the peers; one of them must match) of the workload's documented peers."""
    out = []
    peers = ingress_peers(cfg, w)
    if peers and w.exposure.service_type == "ClusterIP":
        out.append(("the ingress controller", peers))
    if any(p.scrape_path is not None for p in w.ports):
        found = tuple(p for p in scrapers(cfg) if p.namespace is not None)
        if found:
            out.append(("the Prometheus that scrapes it", found))
    return out


def check_policy_peers(cfg: PlatformConfig, w: Workload, networking: k8s.NetworkingV1Api,
                       core: k8s.CoreV1Api) -> CheckResult:
    """The workload's NetworkPolicy exists, and each peer it admits by documented labels is a running pod that does
    not use the host network."""
    ns = cfg.workload_namespace(w)
    subject = f"networkpolicy/{ns}/{w.name}"
    try:
        networking.read_namespaced_network_policy(w.name, ns, _request_timeout=REQUEST_TIMEOUT)
    except Exception as exc:  # noqa: BLE001
        if _not_found(exc):
            return _fail(
                "network.policy-peers", subject,
                "NetworkPolicy not found: every pod of the cluster reaches the workload",
                "the stack is not applied, or the policy was deleted outside it")
        return _fail(
            "network.policy-peers", subject, f"cannot read it ({_api_error(exc)})", "the credentials lack 'get "
                     "networkpolicies'")
    seen = []
    for role, peers in _roles(cfg, w):
        try:
            running = [(peer, pods) for peer in peers if (pods := _matching(peer, core))]
        except Exception as exc:  # noqa: BLE001
            return _fail("network.policy-peers", subject, f"cannot list the pods of {role} ({_api_error(exc)})",
                         "the credentials lack 'list pods' in its namespace")
        if not running:
            return _fail("network.policy-peers", subject, f"no pod of {role} matches what the policy admits: "
                         f"{' or '.join(_peer_text(p) for p in peers)}",
                         f"{role} runs in another namespace or carries other labels than its documentation states, "
                         "so an enforcing network plugin refuses it; list its pods in networkPolicy.allowFrom "
                         "(docs/network.md)")
        host = [p.metadata.name for _, pods in running for p in pods if p.spec and p.spec.host_network]
        if host:
            return _fail(
                "network.policy-peers", subject, f"{role} runs on the host network ({', '.join(sorted(host))}): its "
                         "connections carry its node's address, which no pod selector matches",
                         "an enforcing network plugin refuses it; admit it by the nodes' addresses (a NetworkPolicy "
                         "you add with an ipBlock) or run it off the host network (docs/network.md)")
        seen += [f"{role}: {sum(len(pods) for _, pods in running)} pod(s) in "
                 f"{', '.join(sorted({peer.namespace for peer, _ in running}))}"]
    return _pass("network.policy-peers", subject, "present" + (f"; {'; '.join(seen)}" if seen else ""))
