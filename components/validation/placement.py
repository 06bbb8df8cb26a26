"""Rule of placement: every pod the stack makes the cluster run has a node group that admits it
(components/placement.py holds the scheduler's filters and the pods)."""
from gpuplatform.components.config import PlatformConfig
from gpuplatform.components.errors import listing
from gpuplatform.components.placement import (cluster_pods, homeless_pods, node_groups, packing_shortfalls,
                                              shortfall_message, why_not, workload_pods)
from gpuplatform.components.pools import PoolFacts
from gpuplatform.components.validation.common import _Issues

_NEEDED = ("cluster", "nodePools", "monitoring")
"""The parts the pods and nodes are derived from: a problem reported there first makes this rule wait."""
HELM_VALUES_FIELDS = {"kube-prometheus-stack": "kube_prometheus_stack", "prometheus-adapter": "prometheus_adapter",
                      "ack-alibaba-cloud-metrics-adapter": "ack_metrics_adapter", "dcgm-exporter": "dcgm_exporter",
                      "gpu-operator": "gpu_operator", "keda": "keda"}
"""Release -> the ``monitoring.helmValues`` field merged over its values (components/config.py ``HelmValues``)."""


def _where(cfg: PlatformConfig, origin: str) -> str:
    """The config path a pod with no node is reported under: the release's ``helmValues`` when the stack gives it
    values of its own (they are what constrain its pods), else the system pool."""
    from pydantic.alias_generators import to_camel

    release = origin.removeprefix("Helm release ") if origin.startswith("Helm release ") else None
    field = HELM_VALUES_FIELDS.get(release or "")
    if field and getattr(cfg.monitoring.helm_values, field):
        return f"monitoring.helmValues.{to_camel(field)}"
    return "cluster.systemPool" if cfg.cluster.kind == "ack-managed" else "nodePools"


def check_pod_homes(cfg: PlatformConfig, facts: dict[str, PoolFacts], out: _Issues) -> None:
    """ACK's system pods, the add-ons' pods and every chart's pods each need a node group of the stack that admits
    them; the error names the pod and, per node group, why it does not. The stack's own workloads are checked
    by the workload rules (their pool, GPU request and node fit), with the same filters."""
    if any(i.path.split(".")[0].split("[")[0] in _NEEDED for i in out):
        return
    groups = node_groups(cfg)
    for lost in homeless_pods(cluster_pods(cfg), groups):
        reasons = "; ".join(f"{name}: {', '.join(why)}" for name, why in lost.reasons.items())
        where = _where(cfg, lost.pod.origin)
        fix = ("give the system pool room for it, or change the values that constrain it "
               "(monitoring.helmValues)" if lost.pod.origin.startswith("Helm release")
               else "a system pool (cluster.systemPool.enabled: true, the default) with enough nodes")
        out.add(where, f"{lost.pod.owner} ({lost.pod.origin}) has no node to run on, so pulumi up would wait for "
                f"it until it times out: {reasons}; allowed: {fix}")
    check_request_sums(cfg, groups, out)


def check_request_sums(cfg: PlatformConfig, groups, out: _Issues) -> None:
    """Every node group holds the sum of the requests of the pods it must run (ACK's and the add-ons' pods, every
    chart's pods as rendered, the stack's Deployments at maxReplicas, DaemonSets on every node they admit), within
    its nodes' allocatable and max pods, bin-packed (components/placement.py ``SIMPLIFICATION``)."""
    pods = cluster_pods(cfg, with_daemonsets=True) + workload_pods(cfg)
    for short in packing_shortfalls(pods, groups):
        fix = ("more or larger system nodes (cluster.systemPool.nodes, cluster.systemPool.instanceTypes), or smaller "
               "requests (monitoring.helmValues)" if short.group.config_path == "cluster.systemPool"
               else "more nodes (maxNodes), a larger instance type, or fewer or smaller replicas")
        out.add(short.group.config_path or "nodePools", f"{shortfall_message(short)}, so the scheduler would leave "
                f"them Pending; allowed: {fix} (the sum is bin-packed: docs/ack.md \"The sum of requests per node\")")


def homes_summary(cfg: PlatformConfig) -> list[str]:
    """One line per node group: the pods it is the only home of (for the plan)."""
    groups = node_groups(cfg)
    pods = cluster_pods(cfg)
    lines = []
    for g in groups:
        only = [p.owner for p in pods if not why_not(p, g)
                and all(why_not(p, other) for other in groups if other is not g)]
        if only:
            lines.append(f"{g.name}: the only home of {listing(only, 6)}")
    return lines
