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

class WaitFor(TypedDict, total=False):
    """What each child of an InferenceService waits for, by the part the child plays.

    A component's own ``opts.depends_on`` would hold back every child: the engine registers a child only after
    its parent, and the Python SDK sends a registration only once the URNs of the resource's dependencies and
    of its parent have resolved (pulumi/pulumi ``sdk/python/lib/pulumi/runtime/resource.py``,
    ``prepare_resource``); a custom resource's URN resolves when the engine has created it. So the platform, and
    a reusing project that wants the same precision, says which child needs what."""

    every_child: list
    """Resources every child waits for (what ``opts.depends_on`` of the component means). Default none."""
    namespace: list
    """The workload namespace: every namespaced child. Default none."""
    gpu_nodes: list
    """Node pools and GPU software (device plugin, operator): the Deployment, whose pods need GPU nodes.
    Default none."""
    crd_owners: dict
    """API group -> resources that install its CRDs (``monitoring.coreos.com``, ``keda.sh``): children of that
    group. Default none."""
    ingress_controller: list
    """What installs the ingress controller (the ACK add-on): the Ingress, whose await needs its address.
    Default none."""


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
    monitoring: NotRequired[dict]
    """The stack's monitoring in the stack-file format (``gpu-platform:monitoring``): its exporter fixes the HPA
    metric names, its intervals the PodMonitor and KEDA queries. Default: self-hosted Prometheus with
    dcgm-exporter and the default intervals."""
    allow_public_endpoints: NotRequired[bool]
    """Allow ``PublicLoadBalancer`` exposure. Default false."""
    prometheus_url: NotRequired[str]
    """Prometheus the KEDA trigger queries. Default the in-cluster kube-prometheus-stack service."""
    wait_for: NotRequired[WaitFor]
    """What each child waits for besides its parent (see :class:`WaitFor`). Default: every child waits for
    ``opts.depends_on`` of the component, which is then not applied to the component itself."""


@dataclass(frozen=True)
class ChildDependencies:
    """:class:`WaitFor`, resolved: which resources one child object waits for."""

    every_child: tuple = ()
    namespace: tuple = ()
    gpu_nodes: tuple = ()
    crd_owners: Mapping[str, tuple] = field(default_factory=dict)
    ingress_controller: tuple = ()

    @classmethod
    def of_args(cls, wait_for: Optional[WaitFor], component_depends_on: list) -> "ChildDependencies":
        w = wait_for or {}
        return cls(every_child=(*component_depends_on, *w.get("every_child", ())),
                   namespace=tuple(w.get("namespace", ())), gpu_nodes=tuple(w.get("gpu_nodes", ())),
                   crd_owners={group: tuple(owners) for group, owners in (w.get("crd_owners") or {}).items()},
                   ingress_controller=tuple(w.get("ingress_controller", ())))

    def of(self, obj: dict) -> list:
        deps = list(self.every_child)
        if obj["metadata"].get("namespace"):
            deps += self.namespace
        if obj["kind"] == "Deployment":
            deps += self.gpu_nodes
        if obj["kind"] == "Ingress":
            deps += self.ingress_controller
        return deps + list(self.crd_owners.get(api_group(obj["apiVersion"]), ()))


class InferenceService(pulumi.ComponentResource):
    """A GPU inference Deployment with Service, ingress, PDB, HPA/ScaledObject and PodMonitor."""

    deployment_name: pulumi.Output[str]
    service_name: pulumi.Output[str]

    def __init__(self, name: str, args: InferenceServiceArgs, opts: Optional[pulumi.ResourceOptions] = None):
        workload, ctx = _context(args)
        # the component's depends_on is handed to its children instead, so that it holds back nothing else
        deps = ChildDependencies.of_args(args.get("wait_for"), _depends_on(opts))
        if opts is not None and opts.depends_on:
            opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions())
            opts.depends_on = None
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
        routes = wm.ingresses(workload, ctx)
        self.ingresses = [add(f"{name}-ingress" if obj["metadata"]["name"] == workload.name
                              else f"{name}-ingress-{obj['metadata']['name'].removeprefix(workload.name + '-')}", obj)
                          for obj in routes]
        for obj in routes:
            if obj["metadata"].get("annotations", {}).get(wm.SKIP_AWAIT_ANNOTATION) == "true":
                pulumi.log.info(f"Ingress {obj['metadata']['name']}: its controller is external (exposure.ingress."
                                "controller), so its address is not awaited; `gpuplatform verify` checks it",
                                resource=self)
        for suffix, builder in (("pdb", wm.pod_disruption_budget), ("hpa", wm.hpa),
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
        namespace=cfg.workload_namespace(workload), pool=facts, kubernetes_version=kubernetes_version(cfg) or (1, 31),
        hpa_api_version=hpa_api_version(cfg), on_ack=cfg.is_ack, scrape_interval=mon.intervals.scrape,
        rule_window=mon.intervals.rule_window,
        **({"prometheus_url": url} if (url := prometheus_url or (mon.prometheus_url if mon.backend == "self-hosted"
                                                                   else None)) else {}),
        metric_sources=wm.context_sources(cfg, workload))


# An adopted ACK cluster stands in for "some ACK cluster": the workload rules read only that the cluster is ACK
# and its version, never its id, region or vSwitches.
_SOME_ACK_CLUSTER = {"kind": "ack-existing", "region": "cn-hangzhou", "clusterId": "c-reused",
                     "vswitchIds": ["vsw-reused"]}


def service_config(args: InferenceServiceArgs) -> PlatformConfig:
    """The args as a one-workload stack config, validated with the stack-file rules (ConfigError if bad)."""
    from gpuplatform.components.validation import parse

    version = args.get("kubernetes_version", "1.31")
    raw = {
        # the caller's namespace holds every object, root opt-outs included (the caller labels it)
        "settings": {"environment": "dev", "namespace": args.get("namespace", "inference"),
                     "rootNamespace": args.get("namespace", "inference"),
                     "allowPublicEndpoints": args.get("allow_public_endpoints", False), "createNamespace": False},
        "cluster": ({**_SOME_ACK_CLUSTER, "kubernetesVersion": version} if args.get("on_ack")
                    else {"kind": "kubeconfig", "kubernetesVersion": version}),
        "nodePools": [args["node_pool"]],
        "monitoring": args.get("monitoring") or {},
        "workloads": [args["workload"]],
    }
    cfg = parse(raw)
    issues = validate(cfg)
    if issues:
        raise ConfigError(issues)
    return cfg


def _context(args: InferenceServiceArgs) -> tuple[Workload, wm.WorkloadContext]:
    try:
        cfg = service_config(args)
    except ConfigError as exc:
        raise pulumi.RunError(exc.render()) from None
    workload = cfg.workloads[0]
    return workload, workload_context(cfg, workload, pool_facts(cfg, cfg.node_pools[0]), args.get("prometheus_url"))


__all__ = ["InferenceService", "InferenceServiceArgs", "WaitFor", "service_config", "workload_context"]
