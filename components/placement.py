"""Where every pod of a stack can run: the node groups of the stack (the system pool, each GPU pool, or a
cluster's existing nodes) against the pods it will create (ACK's system pods, its add-ons' pods, each Helm
release's pods, the stack's own Deployments), with the kube-scheduler's filters:

* TaintToleration: a node's ``NoSchedule`` and ``NoExecute`` taints must each be tolerated (``PreferNoSchedule``
  only scores); a toleration matches by key (an empty key with ``Exists`` matches every taint), operator
  (``Exists``, or ``Equal`` with the value) and effect (empty matches all): k8s.io/api core/v1
  ``toleration.go`` ``ToleratesTaint``.
* NodeAffinity: every ``nodeSelector`` label, and one of the required ``nodeSelectorTerms`` (each a conjunction of
  ``In``, ``NotIn``, ``Exists``, ``DoesNotExist``, ``Gt``, ``Lt``; ``NotIn`` and ``DoesNotExist`` hold where the label
  is absent): k8s.io/component-helpers ``scheduling/corev1/nodeaffinity``.
* NodeResourcesFit: the pod's requests (the sum of its containers', or its largest init container's if that is
  more) within one node's allocatable.
* A required pod anti-affinity by hostname among a controller's own replicas needs that many nodes.
* The sum of requests per node group (:func:`packing_shortfalls`): every pod a group must hold (each replica;
  DaemonSets on every node they admit) within its nodes' allocatable CPU and memory and its max pods.

Pure functions over the config and the catalogs (catalogs/pods.py, catalogs/ack.py), run by validation before
anything is registered and by ``gpuplatform plan``, which prints the result.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from gpuplatform.catalogs import ack
from gpuplatform.catalogs.kubernetes import QUANTITY, quantity_value
from gpuplatform.catalogs.pods import (ADDON_PODS, ClusterPod, ack_daemonsets, ack_system_pods, chart_daemonsets,
                                       chart_pods)
from gpuplatform.catalogs.versions import chart
from gpuplatform.components import gpu_software_values as sw
from gpuplatform.components import monitoring_values as mon_mod
from gpuplatform.components import workload_manifests as wm
from gpuplatform.components.config import PlatformConfig, duration_seconds
from gpuplatform.components.pools import all_pool_facts
from gpuplatform.components.releases import chart_releases, chart_version
from gpuplatform.components.cluster_version import kubernetes_version
from gpuplatform.components.warm_capacity import placeholder_deployment
from gpuplatform.components.warm_set_objects import warm_set_pods

WELL_KNOWN_LABELS = {"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
"""Labels the kubelet sets on every node (Kubernetes "Well-Known Labels, Annotations and Taints"); ECS x86
instances, the only ones the catalogs hold."""
SYSTEM_ROLE_LABEL = ("gpuplatform.io/role", "system")
"""The system pool's own label. Not ``gpuplatform.io/pool``: GPU agents select every node carrying that key."""
SCHEDULED_EFFECTS = ("NoSchedule", "NoExecute")


@dataclass(frozen=True)
class NodeGroup:
    """Nodes alike as the scheduler sees them."""

    name: str
    labels: dict = field(default_factory=dict)
    taints: tuple = ()
    """Taints as ``{"key", "value", "effect"}`` dicts."""
    allocatable: Optional[dict] = None
    """Resource name -> amount one node offers (cpu in cores, memory in bytes, extended resources in units);
    None: not known (a cluster's existing nodes), so requests are not checked."""
    nodes: int = 1
    """How many such nodes there can be (a pool's most)."""
    assumed: bool = False
    """Nodes the stack does not create: what they offer is assumed, not known."""
    config_path: str = ""


# ------------------------------------------------------------------------------------------------ the scheduler
def tolerates(toleration: dict, taint: dict) -> bool:
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    operator = toleration.get("operator") or "Equal"
    if not key:
        return operator == "Exists"
    if key != taint.get("key"):
        return False
    return operator == "Exists" or (toleration.get("value") or "") == (taint.get("value") or "")


def untolerated_taints(spec: dict, taints) -> list[dict]:
    tolerations = spec.get("tolerations") or []
    return [t for t in taints if t.get("effect") in SCHEDULED_EFFECTS
            and not any(tolerates(tol, t) for tol in tolerations)]


def _expression_holds(expr: dict, labels: dict) -> bool:
    key, op, values = expr.get("key"), expr.get("operator"), [str(v) for v in expr.get("values") or []]
    present = key in labels
    value = labels.get(key)
    if op == "In":
        return present and value in values
    if op == "NotIn":
        return not present or value not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and values:
        try:
            a, b = int(value), int(values[0])
        except ValueError:
            return False
        return a > b if op == "Gt" else a < b
    return False


def required_terms(spec: dict) -> list[dict]:
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or {}
    return list(required.get("nodeSelectorTerms") or [])


def affinity_mismatch(spec: dict, labels: dict) -> list[str]:
    """Why the node's labels fail the pod's node selector or required node affinity (empty: they pass)."""
    out = [f"nodeSelector {k}={v} (the node has {k}={labels[k]})" if k in labels
           else f"nodeSelector {k}={v} (no such label)"
           for k, v in (spec.get("nodeSelector") or {}).items() if labels.get(k) != str(v)]
    terms = required_terms(spec)
    if terms and not any(all(_expression_holds(e, labels) for e in t.get("matchExpressions") or [])
                         and not t.get("matchFields") for t in terms):
        shown = " or ".join(
            "(" + ", ".join(f"{e.get('key')} {e.get('operator')} {e.get('values', '')}".rstrip()
                            for e in t.get("matchExpressions") or []) + ")" for t in terms)
        out.append(f"required node affinity {shown}")
    return out


def _amount(value) -> float:
    text = str(value)
    return quantity_value(text) if QUANTITY.match(text) else 0.0


def pod_requests(spec: dict) -> dict[str, float]:
    """A pod's effective requests: its containers' summed, or an init container's where that is larger."""
    total: dict[str, float] = {}
    for c in spec.get("containers") or []:
        for name, value in (((c or {}).get("resources") or {}).get("requests") or {}).items():
            total[name] = total.get(name, 0.0) + _amount(value)
    for c in spec.get("initContainers") or []:
        for name, value in (((c or {}).get("resources") or {}).get("requests") or {}).items():
            total[name] = max(total.get(name, 0.0), _amount(value))
    return {k: v for k, v in total.items() if v}


def _shown(resource: str, amount: float) -> str:
    if resource == "memory":
        return f"{amount / 2 ** 30:.1f} GiB"
    if resource == "cpu":
        return f"{amount:g} CPU"
    return f"{amount:g}"


def short_resources(spec: dict, allocatable: Optional[dict]) -> list[str]:
    if allocatable is None:
        return []
    out = []
    for name, amount in pod_requests(spec).items():
        offered = allocatable.get(name)
        if offered is None and name in ("cpu", "memory"):
            continue  # not known for these nodes
        offered = offered or 0.0
        if amount > offered:
            out.append(f"requests {_shown(name, amount)} of {name}, a node offers {_shown(name, offered)}")
    return out


def why_not(pod: ClusterPod, group: NodeGroup) -> list[str]:
    """Every reason the scheduler keeps ``pod`` off a node of ``group`` (empty: it admits the pod)."""
    reasons = [f"taint {t['key']}{'=' + t['value'] if t.get('value') else ''}:{t['effect']} not tolerated"
               for t in untolerated_taints(pod.spec, group.taints)]
    reasons += affinity_mismatch(pod.spec, group.labels)
    reasons += short_resources(pod.spec, group.allocatable)
    return reasons


@dataclass(frozen=True)
class Homeless:
    pod: ClusterPod
    reasons: dict
    """Node group name -> why it does not take the pod."""


def homeless_pods(pods: list[ClusterPod], groups: list[NodeGroup]) -> list[Homeless]:
    """Pods no node group admits, or (one replica per node) whose admitting groups hold too few nodes."""
    out = []
    for pod in pods:
        reasons = {g.name: why_not(pod, g) for g in groups}
        admitting = [g for g in groups if not reasons[g.name]]
        if not admitting:
            out.append(Homeless(pod, reasons))
            continue
        if pod.one_per_node and not any(g.assumed for g in admitting):
            nodes = sum(g.nodes for g in admitting)
            if nodes < pod.replicas:
                reasons = {**{g.name: [f"{pod.replicas} replicas, one per node, but its nodes hold {g.nodes}"]
                              for g in admitting}, **{k: v for k, v in reasons.items() if v}}
                out.append(Homeless(pod, reasons))
    return out


# ------------------------------------------------------------------------------------------------ the stack's nodes
def _node_resources(vcpus: Optional[int], memory_gib: Optional[float], max_pods: Optional[int]) -> dict:
    if vcpus is None or memory_gib is None:
        return {}
    cpu_m, memory_mib = ack.reserved_resources(vcpus, memory_gib, max_pods)
    return {"cpu": vcpus - cpu_m / 1000, "memory": (memory_gib * 1024 - memory_mib) * 2 ** 20}


def system_pool_group(cfg: PlatformConfig) -> Optional[NodeGroup]:
    """The system pool of a cluster the stack creates, if it has one."""
    c = cfg.cluster
    pool = getattr(c, "system_pool", None)
    if c.kind != "ack-managed" or pool is None or not pool.enabled:
        return None
    types = [ack.SYSTEM_INSTANCE_TYPES[t] for t in pool.instance_types if t in ack.SYSTEM_INSTANCE_TYPES]
    smallest = min(types, key=lambda t: (t.vcpus, t.memory_gib)) if types else None
    labels = {**WELL_KNOWN_LABELS, SYSTEM_ROLE_LABEL[0]: SYSTEM_ROLE_LABEL[1]}
    max_pods = _max_pods_of(cfg, [smallest.name]) if smallest else None
    resources = _node_resources(smallest.vcpus, smallest.memory_gib, max_pods) if smallest else {}
    if resources and max_pods is not None:
        resources["pods"] = float(max_pods)
    return NodeGroup("system pool", labels, (), resources or None, pool.nodes, config_path="cluster.systemPool")


def gpu_pool_groups(cfg: PlatformConfig) -> list[NodeGroup]:
    from gpuplatform.components.pools import all_pool_facts

    facts = all_pool_facts(cfg)
    groups = []
    for i, pool in enumerate(cfg.node_pools):
        f = facts[pool.name]
        labels = {**WELL_KNOWN_LABELS, **f.node_labels}
        if pool.autoscaling:
            labels.update(cfg.cloud.autoscaled_node_labels())
        taints = tuple({"key": k, **({"value": v} if v else {}), "effect": e} for k, v, e in f.taints)
        resources = {"cpu": f.allocatable_cpu, "memory": f.allocatable_memory_bytes}
        max_pods = f.max_pods if f.max_pods is not None else _max_pods_of(cfg, pool.instance_types)
        if max_pods is not None:
            resources["pods"] = float(max_pods)
        resources.update({name: float(n) for name, n in f.node_resources.items()})
        groups.append(NodeGroup(f"pool {pool.name}", labels, taints, resources, max(f.max_nodes, 1),
                                config_path=f"nodePools[{i}]"))
    return groups


def existing_nodes_assumption(cfg: PlatformConfig) -> Optional[str]:
    """What is assumed about nodes the stack does not create (None: the stack creates every node)."""
    c = cfg.cluster
    if c.kind == "ack-managed" and c.system_pool.enabled:
        return None
    if c.kind == "ack-managed":
        return ("cluster.systemPool.enabled is false: nodes you bring (a pool of another stack) are assumed to take "
                "ACK's system pods, the add-ons' and the charts' pods: untainted, not autoscaled, at least 2")
    what = "an adopted ACK cluster" if c.kind == "ack-existing" else "an existing cluster"
    return (f"{what}: its existing nodes are not known to the plan and are assumed to take the add-ons' and the "
            "charts' pods (untainted nodes with room); gpuplatform verify (cluster.system-pods) checks that they run")


def node_groups(cfg: PlatformConfig) -> list[NodeGroup]:
    groups = []
    system = system_pool_group(cfg)
    if system is not None:
        groups.append(system)
    elif existing_nodes_assumption(cfg):
        groups.append(NodeGroup("existing nodes (assumed)", dict(WELL_KNOWN_LABELS), (), None, 1, assumed=True))
    return groups + gpu_pool_groups(cfg)


# ------------------------------------------------------------------------------------------------ the stack's pods
def release_values(cfg: PlatformConfig) -> dict[str, tuple[str, str, str, str, dict]]:
    """Release key -> (chart name, chart version, release name, namespace, values as registered: ours merged with
    the stack's ``helmValues``), for every chart the stack installs."""
    mon = cfg.monitoring
    hv = mon.helm_values
    facts = list(all_pool_facts(cfg).values())
    built = {
        "kube-prometheus-stack": lambda: (mon_mod.kube_prometheus_stack_values(cfg), hv.kube_prometheus_stack),
        "prometheus-adapter": lambda: (mon_mod.prometheus_adapter_values(cfg, mon.prometheus_url or "http://x"),
                                       hv.prometheus_adapter),
        "ack-alibaba-cloud-metrics-adapter": lambda: (mon_mod.ack_adapter_values(cfg, "http://x", None),
                                                      hv.ack_metrics_adapter),
        "dcgm-exporter": lambda: (mon_mod.dcgm_exporter_values(cfg), hv.dcgm_exporter),
        "cert-manager": lambda: ({"crds": {"enabled": True}}, {}),
        "keda": lambda: ({}, hv.keda),
        "gpu-operator": lambda: (sw.gpu_operator_values(facts, dict(mon_mod.MONITOR_LABELS), mon.intervals.scrape,
                                                        duration_seconds(mon.intervals.exporter_collect) * 1000),
                                 hv.gpu_operator),
        "fake-gpu-operator": lambda: (sw.fake_gpu_operator_values(facts), {}),
    }
    out = {}
    minor = kubernetes_version(cfg)
    eol = tuple(cfg.settings.allow_end_of_life_charts)
    for key in chart_releases(cfg):
        c = chart(key)
        ours, overrides = built[key]()
        out[key] = (c.name, chart_version(key, minor, eol), c.release, c.namespace, sw.deep_merge(ours, overrides))
    return out


def workload_pods(cfg: PlatformConfig) -> list[ClusterPod]:
    """The stack's own Deployments, with the pod spec their builder writes."""
    facts = all_pool_facts(cfg)
    out = []
    for w in cfg.workloads:
        f = facts.get(w.node_pool)
        if f is None:
            continue
        ctx = wm.workload_context(cfg, w, f)
        spec = wm.deployment(w, ctx)["spec"]["template"]["spec"]
        out.append(ClusterPod(f"Deployment {ctx.namespace}/{w.name}", f"workload {w.name}", spec,
                              replicas=w.replica_ceiling, source="the stack's workload"))
        warm = placeholder_deployment(w, ctx)
        if warm is not None:
            out.append(ClusterPod(f"Deployment {ctx.namespace}/{warm['metadata']['name']}",
                                  f"warm capacity of workload {w.name}", warm["spec"]["template"]["spec"],
                                  replicas=w.warm_replicas, source="the stack's workload"))
    return out + warm_set_pods(cfg)


def _max_pods_of(cfg: PlatformConfig, instance_types) -> Optional[int]:
    """Pods one node of the smallest of ``instance_types`` runs: flannel's node pod range, Terway's ENI limit
    (catalogs/ack.py); None where not known."""
    plugin = getattr(cfg.cluster, "network_plugin", "flannel")
    if cfg.cluster.kind != "ack-managed":
        return None
    if plugin == "flannel":
        return ack.flannel_max_pods()
    limits = [ack.terway_max_pods(t) for t in instance_types]
    return None if not limits or None in limits else min(limits)  # type: ignore[type-var]


def cluster_pods(cfg: PlatformConfig, *, with_charts: bool = True, with_daemonsets: bool = False) -> list[ClusterPod]:
    """Every pod other than the stack's workloads it makes the cluster run: ACK's system pods on a cluster the
    stack creates, its add-ons' pods, and (``with_charts``) each Helm release's pods, hooks that run on install
    and upgrade included."""
    from gpuplatform.components.addons import required_addons

    pods: list[ClusterPod] = []
    addons = list(required_addons(cfg))
    if cfg.cluster.kind == "ack-managed":
        pods += ack_system_pods(cfg.cluster.cluster_spec)
        if with_daemonsets:
            created = ack.creation_addon_names(cfg.cluster.network_plugin, cfg.cluster.cluster_spec)
            pods += ack_daemonsets([*created, *addons])
    for addon in addons:
        pods += ADDON_PODS.get(addon, [])
    if with_charts:
        for chart_name, version, release, namespace, values in release_values(cfg).values():
            pods += chart_pods(chart_name, release, namespace, values, version=version)
            if with_daemonsets and (values.get("nodeExporter") or {}).get("enabled", True) is not False:
                pods += chart_daemonsets(chart_name, release, namespace, values, version=version)
    return pods


# ------------------------------------------------------------------------------------------------ the sum of requests
PACKED = ("cpu", "memory", "pods")
"""What the sum of requests is checked for: CPU, memory and the node's max pods (GPU units are checked per pool
by the capacity rules)."""
SIMPLIFICATION = (
    "bin-packed first-fit decreasing (largest memory request first) onto the group's most nodes, replicas with a "
    "required anti-affinity on different nodes, DaemonSet pods charged to every node they admit first; a pod more "
    "than one group admits is charged to the first of them (the system pool before GPU pools). The scheduler "
    "places pods one at a time in creation order and spreads them (LeastAllocated scoring), so it may strand room "
    "this packing uses: a refusal here means no placement fits; a pass does not prove the scheduler's order does")


@dataclass(frozen=True)
class Shortfall:
    group: NodeGroup
    resource: str
    requested: float
    """The sum of the requests of every pod charged to the group (DaemonSets once per node)."""
    offered: float
    """The group's nodes' allocatable, summed."""
    per_node: float
    fits: tuple[str, ...]
    left: tuple[str, ...]
    """Pods (each with its request) the packing could not place."""


def _units(resource: str, amount: float) -> str:
    if resource == "pods":
        return f"{amount:g} pods"
    return _shown(resource, amount)


def _charged(pod: ClusterPod) -> dict[str, float]:
    out = {k: v for k, v in pod_requests(pod.spec).items() if k in ("cpu", "memory")}
    out["pods"] = 1.0
    return out


def packing_shortfalls(pods: list[ClusterPod], groups: list[NodeGroup]) -> list[Shortfall]:
    """Per node group whose nodes are known, whether every pod it must hold fits by the sum of requests, bin-packed
    (:data:`SIMPLIFICATION`). Pods no group admits are left to :func:`homeless_pods`."""
    charged: dict[str, list[tuple[str, dict]]] = {g.name: [] for g in groups}
    for pod in pods:
        if pod.daemonset:
            continue
        admitting = [g for g in groups if not why_not(pod, g)]
        if not admitting:
            continue
        home = admitting[0]
        for i in range(pod.replicas):
            label = pod.owner if pod.replicas == 1 else f"{pod.owner} #{i + 1}"
            charged[home.name].append((label, {**_charged(pod), "_spread": pod.owner if pod.one_per_node else ""}))
    out = []
    for g in groups:
        if g.assumed or g.allocatable is None:
            continue
        node = {r: float(g.allocatable[r]) for r in PACKED if g.allocatable.get(r) is not None}
        if not node:
            continue
        daemons = [p for p in pods if p.daemonset and not affinity_mismatch(p.spec, g.labels)
                   and not untolerated_taints(p.spec, g.taints)]
        for d in daemons:
            for r, v in _charged(d).items():
                if r in node:
                    node[r] -= v
        items = sorted(charged[g.name], key=lambda it: (-it[1].get("memory", 0.0), -it[1].get("cpu", 0.0), it[0]))
        free = [dict(node) for _ in range(g.nodes)]
        spread: list[set] = [set() for _ in range(g.nodes)]
        fits, left = [], []
        for label, req in items:
            group_of = req.get("_spread")
            slot = next((i for i, f in enumerate(free) if all(f[r] >= req.get(r, 0.0) - 1e-9 for r in f)
                         and not (group_of and group_of in spread[i])), None)
            if slot is None:
                # the nodes it could join: all but those holding a replica it must keep apart from
                allowed = [i for i in range(g.nodes) if not (group_of and group_of in spread[i])]
                left.append((label, req, allowed))
                continue
            for r in free[slot]:
                free[slot][r] -= req.get(r, 0.0)
            if group_of:
                spread[slot].add(group_of)
            fits.append(label)
        if not left and all(v >= -1e-9 for v in node.values()):
            continue
        for r in node:
            per_node = float(g.allocatable[r])
            requested = (sum(req.get(r, 0.0) for _, req in charged[g.name])
                         + g.nodes * sum(_charged(d).get(r, 0.0) for d in daemons))
            short_items = [(label, req) for label, req, allowed in left if req.get(r, 0.0) > 0 and not any(
                free[i][r] >= req[r] - 1e-9 for i in allowed)]
            if node[r] < -1e-9 or short_items or requested > per_node * g.nodes + 1e-9:
                out.append(Shortfall(g, r, requested, per_node * g.nodes, per_node, tuple(fits),
                                     tuple(f"{label} ({_units(r, req.get(r, 0.0))})" for label, req in short_items)))
    return out


def request_sums(pods: list[ClusterPod], groups: list[NodeGroup]) -> list[dict]:
    """Per node group whose nodes are known: the sum of the requests charged to it (DaemonSets once per node) and
    what its nodes offer, per resource (for the plan)."""
    out = []
    for g in groups:
        if g.assumed or g.allocatable is None:
            continue
        daemons = [p for p in pods if p.daemonset and not affinity_mismatch(p.spec, g.labels)
                   and not untolerated_taints(p.spec, g.taints)]
        charged = [p for p in pods if not p.daemonset and not why_not(p, g)
                   and next((h for h in groups if not why_not(p, h)), None) is g]
        row: dict = {"group": g.name, "nodes": g.nodes}
        for r in PACKED:
            if g.allocatable.get(r) is None:
                continue
            requested = (sum(_charged(p).get(r, 0.0) * p.replicas for p in charged)
                         + g.nodes * sum(_charged(d).get(r, 0.0) for d in daemons))
            row[r] = {"requested": requested, "offered": float(g.allocatable[r]) * g.nodes}
        out.append(row)
    return out


def shortfall_message(s: Shortfall) -> str:
    g = s.group
    return (f"{g.name}: {s.resource}: the pods it must hold request {_units(s.resource, s.requested)} in sum "
            f"(DaemonSets once per node), its {g.nodes} node{'s' if g.nodes != 1 else ''} offer {g.nodes} x "
            f"{_units(s.resource, s.per_node)} allocatable = {_units(s.resource, s.offered)}; "
            f"{len(s.fits)} of {len(s.fits) + len(s.left)} pods fit, these do not: "
            f"{', '.join(s.left) or '(the DaemonSets alone exceed a node)'}")
