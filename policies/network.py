"""Network exposure of serving pods: a pod that answers on its ports and that no NetworkPolicy selects takes
connections from every pod of the cluster (Kubernetes: a pod is isolated for ingress only once a NetworkPolicy
selects it), so an inference server's unauthenticated API and metrics are one hop from any compromised pod,
bypassing the Ingress and its TLS.

Precision over volume: whether a cluster isolates a namespace is often decided outside the files checked (a
default-deny policy applied by the platform team), so a pod is judged only where the objects checked show that
NetworkPolicies are managed with it: its namespace has one among them, or the pod is one gpu-platform authors,
which carries a NetworkPolicy unless its stack turned it off. Advisory (hardening): a missing policy breaks neither
scheduling nor autoscaling, and only a network plugin that enforces NetworkPolicy would apply one; ``--strict``
raises it.
"""
from __future__ import annotations

from gpuplatform.catalogs.network import PLATFORM_PART_OF
from gpuplatform.catalogs.server_cli import SERVER_CLIS
from gpuplatform.catalogs.system_components import image_repository
from gpuplatform.policies import k8s
from gpuplatform.policies.registry import ADVISORY, MEDIUM, stack_policy

CATEGORY = "security"
SERVING_KINDS = ("Deployment", "StatefulSet", "ReplicaSet", "ReplicationController", "Pod")
"""Long-running workloads whose pods serve; DaemonSets are node agents (exporters, device plugins), judged by the
system-component policies."""
SERVER_IMAGES = tuple(repo for cli in SERVER_CLIS.values() for repo in cli.official_images)
"""Images of inference servers whose pods serve whether or not a Service in the files checked selects them."""
PART_OF = "app.kubernetes.io/part-of"


def _policy_selects(policy, labels) -> bool:
    """Whether a NetworkPolicy isolates pods with ``labels`` for ingress: its podSelector selects them (``{}``
    selects every pod of its namespace) and its policyTypes include Ingress (the default when unset)."""
    spec = k8s.as_map(k8s.get(policy.props, "spec"))
    types = [str(t) for t in k8s.as_list(spec.get("policyTypes"))]
    if types and "Ingress" not in types:
        return False
    selector = k8s.as_map(spec.get("podSelector"))
    if not k8s.as_map(selector.get("matchLabels")) and not k8s.as_list(selector.get("matchExpressions")):
        return True
    return k8s.selects(selector, labels)


def _serving_ports(spec) -> list[str]:
    numbers = [k8s.quantity(k8s.get(p, "containerPort")) for c in k8s.containers(spec, init=False)
               for p in k8s.as_list(k8s.get(c, "ports"))]
    return [k8s.fmt_number(n) for n in numbers if n is not None]


@stack_policy(
    "network-policy-selects-serving-pods",
    "Serving pods (container ports, behind a Service or running an inference server) must be selected by a "
    "NetworkPolicy of their namespace: otherwise every pod of the cluster reaches the server's API and metrics "
    "ports, bypassing the Ingress. Judged where the objects checked manage NetworkPolicies (their namespace has one, "
    "or gpu-platform authored the pod).",
    category=CATEGORY, severity=MEDIUM, level=ADVISORY, hardening=True,
    refs=("Checkov CKV2_K8S_6", "kubernetes.io Network Policies: isolated and non-isolated pods",
          "NSA/CISA Kubernetes Hardening Guide: network separation"),
    remediation="Keep the workload's networkPolicy enabled (the default), or add a NetworkPolicy that selects the "
                "pods and admits only their callers.")
def network_policy_selects_serving_pods(view, config, report):
    policies: dict[str, list] = {}
    for policy in view.objects("NetworkPolicy"):
        policies.setdefault(policy.namespace, []).append(policy)
    services: dict[str, list] = {}
    for svc in view.objects("Service"):
        services.setdefault(svc.namespace, []).append(svc)
    for r in view.objects(*SERVING_KINDS):
        spec = k8s.workload_pod_spec(r.kind, r.props)
        labels = k8s.pod_labels(r.kind, r.props)
        ports = _serving_ports(spec)
        if not ports:
            continue
        managed = bool(policies.get(r.namespace)) or labels.get(PART_OF) == PLATFORM_PART_OF
        if not managed or any(_policy_selects(p, labels) for p in policies.get(r.namespace, [])):
            continue
        behind = [s for s in services.get(r.namespace, [])
                  if k8s.selects(k8s.get(s.props, "spec", "selector"), labels)]
        images = [image_repository(c["image"]) for c in k8s.containers(spec, init=False)
                  if isinstance(k8s.get(c, "image"), str)]
        server = next((repo for image in images for repo in SERVER_IMAGES
                       if image == repo or image.endswith("/" + repo)), None)
        if not behind and server is None:
            continue
        why = f"behind {', '.join(s.label for s in behind)}" if behind else f"runs {server}"
        report(f"{r.label} serves on port(s) {', '.join(dict.fromkeys(ports))} ({why}), and no NetworkPolicy of "
               f"namespace {r.namespace} selects its pods: every pod of the cluster reaches them", r)
