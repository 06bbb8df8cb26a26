"""InferenceService: one GPU inference workload with its Service, optional ingress, PDB and autoscaler.

Objects (see :mod:`components.workload_manifests` for each one's shape and reasons): an ``apps/v1`` Deployment
without ``spec.replicas``, static NFS PersistentVolume/claims for model repositories, a Service (ClusterIP by
default), an optional L7 Ingress (gRPC-aware), a PodDisruptionBudget, an HPA on the stack's custom metrics (or a
KEDA ScaledObject) and a PodMonitor for the server's own metrics.

Reuse from another Pulumi project::

    from gpuplatform.components import InferenceService
    InferenceService("llm", {
        "workload": {...},        # an item of gpu-platform:workloads (camelCase, stack-file format)
        "node_pool": {...},       # the item of gpu-platform:nodePools it runs on
        "namespace": "inference",
    }, opts=pulumi.ResourceOptions(provider=k8s_provider))

The args are validated with the same rules as a stack file; a bad spec raises ``pulumi.RunError`` listing every
problem before anything is registered.
"""
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Optional, TypedDict

import pulumi
from typing_extensions import NotRequired

from gpuplatform.catalogs.kubernetes import api_group
from gpuplatform.components import workload_manifests as wm
from gpuplatform.components.k8s_objects import register
from gpuplatform.components.config import PlatformConfig, Workload
from gpuplatform.components.errors import ConfigError
from gpuplatform.components.pools import PoolFacts, pool_facts
from gpuplatform.components.validation import hpa_api_version, kubernetes_version, validate

class InferenceServiceArgs(TypedDict):
    workload: dict
    """The workload in the stack-file format (an item of ``gpu-platform:workloads``). Required."""
    node_pool: dict
    """The node pool it runs on, in the stack-file format (an item of ``gpu-platform:nodePools``). Required."""
    namespace: NotRequired[str]
    """Namespace of the objects (must exist). Default ``inference``."""
    kubernetes_version: NotRequired[str]
    """Cluster version; picks the HPA API (autoscaling/v2 from 1.23). Default ``1.31``."""
    on_ack: NotRequired[bool]
    """The cluster is ACK (ACK sharing labels, intranet LoadBalancer annotation). Default false."""
    gpu_exporter: NotRequired[str]
    """GPU metrics source: ``dcgm``, ``ack`` or ``ack-legacy``; fixes the HPA metric names. Default ``dcgm``."""
    allow_public_endpoints: NotRequired[bool]
    """Allow ``PublicLoadBalancer`` exposure. Default false."""
    prometheus_url: NotRequired[str]
    """Prometheus the KEDA trigger queries. Default the in-cluster kube-prometheus-stack service."""
    scrape_interval: NotRequired[str]
    """PodMonitor scrape interval. Default ``15s``."""
    rule_window: NotRequired[str]
    """Window of windowed metric queries (KEDA triggers). Default ``30s``."""


@dataclass(frozen=True)
class ChildDependencies:
    """What each child of an InferenceService waits for besides its parent.

    The platform knows which resource plays which part, so a Service or a PodDisruptionBudget waits only for its
    namespace, not for a GPU node pool or a Helm release that can take many minutes. A reusing project passes
    plain ``opts.depends_on``; every child then waits for all of it."""

    every_child: tuple = ()
    namespace: tuple = ()
    """The workload namespace: every namespaced child."""
    gpu_nodes: tuple = ()
    """Node pools and GPU software (device plugin, operator): the Deployment, whose pods need GPU nodes."""
    crd_owners: Mapping[str, tuple] = field(default_factory=dict)
    """API group -> resources that install its CRDs: children of that group."""

    def of(self, obj: dict) -> list:
        deps = list(self.every_child)
        if obj["metadata"].get("namespace"):
            deps += self.namespace
        if obj["kind"] == "Deployment":
            deps += self.gpu_nodes
        return deps + list(self.crd_owners.get(api_group(obj["apiVersion"]), ()))


class InferenceService(pulumi.ComponentResource):
    """A GPU inference Deployment with Service, ingress, PDB, HPA/ScaledObject and PodMonitor."""

    deployment_name: pulumi.Output[str]
    service_name: pulumi.Output[str]

    def __init__(self, name: str, args: InferenceServiceArgs, opts: Optional[pulumi.ResourceOptions] = None,
                 *, _context: Optional[tuple[Workload, wm.WorkloadContext, ChildDependencies]] = None):
        if _context is None:
            workload, ctx = _standalone_context(args)
            # a component's depends_on does not hold back its children: pass it on to each of them
            deps = ChildDependencies(every_child=tuple(_depends_on(opts)))
        else:
            workload, ctx, deps = _context
        super().__init__("gpuplatform:index:InferenceService", name,
                         {"workload": workload.name, "namespace": ctx.namespace, "pool": ctx.pool.name}, opts)
        self.workload, self.context = workload, ctx

        def add(resource_name: str, obj: dict, *extra: pulumi.Resource) -> pulumi.CustomResource:
            return register(resource_name, obj, pulumi.ResourceOptions(parent=self,
                                                                       depends_on=deps.of(obj) + list(extra)))

        claims = [add(f"{name}-{obj['kind'].lower()}-{obj['metadata']['name']}", obj)
                  for obj in wm.nfs_volume_objects(workload, ctx)]
        self.deployment = add(f"{name}-deployment", wm.deployment(workload, ctx), *claims)
        self.service = add(f"{name}-service", wm.service(workload, ctx))
        for suffix, builder in (("ingress", wm.ingress), ("pdb", wm.pod_disruption_budget), ("hpa", wm.hpa),
                                ("scaledobject", wm.scaled_object), ("podmonitor", wm.pod_monitor)):
            obj = builder(workload, ctx)
            if obj is not None:
                setattr(self, suffix, add(f"{name}-{suffix}", obj))
        self.deployment_name = pulumi.Output.from_input(workload.name)
        self.service_name = pulumi.Output.from_input(workload.name)
        self.register_outputs({"deployment_name": self.deployment_name, "service_name": self.service_name})


def _depends_on(opts: Optional[pulumi.ResourceOptions]) -> list:
    deps = (opts.depends_on if opts is not None else None) or []
    return deps if isinstance(deps, list) else [deps]


def workload_context(cfg: PlatformConfig, workload: Workload, facts: PoolFacts,
                     prometheus_url: Optional[str] = None) -> wm.WorkloadContext:
    mon = cfg.monitoring
    return wm.WorkloadContext(
        namespace=cfg.settings.namespace, pool=facts, kubernetes_version=kubernetes_version(cfg) or (1, 31),
        hpa_api_version=hpa_api_version(cfg), on_ack=cfg.is_ack, scrape_interval=mon.intervals.scrape,
        rule_window=mon.intervals.rule_window,
        **({"prometheus_url": prometheus_url} if prometheus_url else {}),
        metric_sources=wm.context_sources(cfg, workload))


def _standalone_context(args: InferenceServiceArgs) -> tuple[Workload, wm.WorkloadContext]:
    """Validate the reuse args exactly like a one-workload stack file, then derive the context."""
    from gpuplatform.components.validation import parse

    exporter = args.get("gpu_exporter", "dcgm")
    raw = {
        "settings": {"environment": "dev", "namespace": args.get("namespace", "inference"),
                     "allowPublicEndpoints": args.get("allow_public_endpoints", False)},
        "cluster": ({"kind": "ack-existing", "region": "unknown", "clusterId": "external", "vswitchIds": ["external"],
                     "kubernetesVersion": args.get("kubernetes_version", "1.31")} if args.get("on_ack")
                    else {"kind": "kubeconfig", "kubernetesVersion": args.get("kubernetes_version", "1.31")}),
        "nodePools": [args["node_pool"]],
        "monitoring": {"backend": "arms" if exporter == "ack" else "self-hosted", "gpuExporter": exporter,
                       "intervals": {"scrape": args.get("scrape_interval", "15s"),
                                     "ruleWindow": args.get("rule_window", "30s")}},
        "workloads": [args["workload"]],
    }
    try:
        cfg = parse(raw)
        issues = validate(cfg)
        if issues:
            raise ConfigError(issues)
    except ConfigError as exc:
        raise pulumi.RunError(exc.render()) from None
    workload = cfg.workloads[0]
    facts = pool_facts(cfg, cfg.node_pools[0])
    return workload, workload_context(cfg, workload, facts, args.get("prometheus_url"))


__all__ = ["ChildDependencies", "InferenceService", "InferenceServiceArgs", "workload_context"]
