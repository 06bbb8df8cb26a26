"""InferenceService: one GPU inference workload with its Service, optional ingress, PDB and autoscaler.

Objects (see :mod:`components.workload_manifests` for each one's shape and reasons): an ``apps/v1`` Deployment
without ``spec.replicas``, static NFS PersistentVolume/claims for model repositories, a Service (ClusterIP by
default), an optional L7 Ingress (gRPC-aware), a PodDisruptionBudget, an HPA on the stack's custom metrics (or a
KEDA ScaledObject), a PodMonitor for the server's own metrics and a NetworkPolicy that admits only the ingress
controller, the monitoring's Prometheus and the callers the workload lists (components/network_policy.py); with
``autoscaling.warmReplicas``, a Deployment of placeholder pods and the cluster's PriorityClass for them
(components/warm_capacity.py).

Built from the objects it is composed with (docs/reuse.md)::

    from gpuplatform.components import GpuCluster, GpuMonitoring, GpuNodePool, InferenceService, WorkloadNamespace
    cluster = GpuCluster("ml", {"cluster": {"kind": "kubeconfig", "kubernetesVersion": "1.33"}})
    pool = GpuNodePool("a10", {"cluster": cluster, "pool": {"name": "a10", "gpuModel": "A10", "gpusPerNode": 1}})
    monitoring = GpuMonitoring("monitoring", {"cluster": cluster})
    ns = WorkloadNamespace("ml", {"cluster": cluster, "name": "ml"})
    InferenceService("llm", {"workload": {...}, "node_pool": pool, "monitoring": monitoring, "namespace": ns})

Before anything is registered the service checks its workload with the stack-file rules and its contracts with
the objects it is given: the GPU resource is one the pool advertises, the replicas fit the pool (with the other
services on it), the HPA metric is one the monitoring's adapter serves in the unit of the target, KEDA is
installed for a ScaledObject, and the namespace suits the pod. A problem is named with both sides and the fix,
the service is left out of the program, and the program fails with every problem once it has run
(components/assembly.py).
"""
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Optional, TypedDict, Union

import pulumi
from typing_extensions import NotRequired

from gpuplatform.catalogs.kubernetes import api_group
from gpuplatform.components import warm_capacity, workload_manifests as wm
from gpuplatform.components.k8s_objects import register
from gpuplatform.components.addons import ingress_addon
from gpuplatform.components.config import Workload
from gpuplatform.components.contracts import metric_contract
from gpuplatform.components.errors import ConfigError, ConfigIssue
from gpuplatform.components.k8s_validity import DNS_LABEL
from gpuplatform.components.monitoring import GpuMonitoring
from gpuplatform.components.namespace import WorkloadNamespace
from gpuplatform.components.node_pool import GpuNodePool
from gpuplatform.components.pre_pull import pre_pull_daemonset
# workload_context lives in workload_manifests (validation builds the same objects); named here as before
from gpuplatform.components.workload_manifests import workload_context
from gpuplatform.components.validation import validate as _validate
from gpuplatform.components.assembly import BUILT, ComposedComponent

class WaitFor(TypedDict, total=False):
    """What each child of an InferenceService waits for, by the part the child plays.

    A component's own ``opts.depends_on`` would hold back every child: the engine registers a child only after
    its parent, and the Python SDK sends a registration only once the URNs of the resource's dependencies and
    of its parent have resolved (pulumi/pulumi ``sdk/python/lib/pulumi/runtime/resource.py``,
    ``prepare_resource``); a custom resource's URN resolves when the engine has created it. So the platform, and
    a reusing project that wants the same precision, says which child needs what."""

    every_child: list[pulumi.Resource]
    """Resources every child waits for (what ``opts.depends_on`` of the component means). Default none."""
    namespace: list[pulumi.Resource]
    """The workload namespace: every namespaced child. Default none."""
    gpu_nodes: list[pulumi.Resource]
    """Node pools and GPU software (device plugin, operator): the Deployment, whose pods need GPU nodes.
    Default none."""
    crd_owners: dict[str, list[pulumi.Resource]]
    """API group -> resources that install its CRDs (``monitoring.coreos.com``, ``keda.sh``): children of that
    group. Default none."""
    ingress_controller: list[pulumi.Resource]
    """What installs the ingress controller (the ACK add-on): the Ingress, whose await needs its address.
    Default none."""


class InferenceServiceArgs(TypedDict):
    workload: dict
    """The workload in the stack-file format (an item of ``gpu-platform:workloads``; its ``nodePool`` may be left
    out, the pool object says it). Required."""
    node_pool: GpuNodePool
    """The GpuNodePool its replicas run on: the GPU resource, node selector, tolerations and capacity come from
    it. Required."""
    namespace: Union[WorkloadNamespace, str]
    """Where its objects live: a WorkloadNamespace (created and waited for), or the name of a namespace that
    already exists (``gpuplatform plan --project`` lists the namespaces a program does not create). Required."""
    monitoring: NotRequired[GpuMonitoring]
    """The GpuMonitoring whose adapter serves its HPA metrics (or whose KEDA runs its ScaledObject) and whose
    Prometheus scrapes its PodMonitor. Required for an autoscaled workload; default none for a fixed one."""
    wait_for: NotRequired[WaitFor]
    """Extra resources its children wait for, by the part each plays (see :class:`WaitFor`); the namespace, GPU
    nodes, CRDs and ingress controller of the objects given are waited for already. Default none."""


REMOVED_ARGS = {
    "kubernetes_version": "the version is the node_pool's cluster's (GpuCluster args.cluster.kubernetesVersion)",
    "on_ack": "whether the cluster is ACK comes from the node_pool's GpuCluster",
    "allow_public_endpoints": "exposure rules come from the node_pool's GpuCluster (args.allow_public_endpoints)",
    "prometheus_url": "the Prometheus KEDA queries is the monitoring's (GpuMonitoring args.monitoring.prometheusUrl)",
}
"""Args of 0.1.0 that the objects now carry: named in the error, with where the value comes from now."""


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


class InferenceService(ComposedComponent, pulumi.ComponentResource):
    """A GPU inference Deployment with Service, ingress, PDB, HPA/ScaledObject and PodMonitor."""

    deployment_name: pulumi.Output[str]
    service_name: pulumi.Output[str]

    def __init__(self, name: str, args: InferenceServiceArgs, opts: Optional[pulumi.ResourceOptions] = None):
        from gpuplatform.components.args import component_label
        from gpuplatform.components.assembly import checking

        with checking(self, component_label("InferenceService", name)) as outcome:
            workload, ctx, composed = _checked(name, args)
            pool, monitoring, ns = composed
            self.workload, self.context = workload, ctx
            self.label = f"InferenceService {name!r}"
            self.node_pool, self.monitoring, self.namespace = pool, monitoring, ns
            pool.services.append(self)  # the next service on the pool is checked against this one's replicas
        if not outcome.build:
            return
        # the component's depends_on is handed to its children instead, so that it holds back nothing else
        extra = dict(args.get("wait_for") or {})
        wait_for: WaitFor = {
            "every_child": list(extra.get("every_child", [])),
            "namespace": [ns.resource] if isinstance(ns, WorkloadNamespace) else [],
            "gpu_nodes": pool.gpu_nodes + list(extra.get("gpu_nodes", [])),
            "crd_owners": {**({g: [o] for g, o in monitoring.crd_owners.items()} if monitoring else {}),
                           **(extra.get("crd_owners") or {})},
            "ingress_controller": pool.cluster.require_addons(*ingress_addon(pool.cluster.cloud, workload))
            + list(extra.get("ingress_controller", [])),
        }
        wait_for["namespace"] += list(extra.get("namespace", []))
        deps = ChildDependencies.of_args(wait_for, _depends_on(opts))
        if opts is not None and opts.depends_on:
            opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions())
            opts.depends_on = None
        if opts is None or opts.provider is None:
            opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(provider=pool.cluster.provider))
        super().__init__("gpuplatform:index:InferenceService", name,
                         {"workload": workload.name, "namespace": ctx.namespace, "pool": ctx.pool.name}, opts)
        outcome.restore()

        def add(resource_name: str, obj: dict, *extra: pulumi.Resource) -> pulumi.CustomResource:
            return register(resource_name, obj, pulumi.ResourceOptions(parent=self,
                                                                       depends_on=deps.of(obj) + list(extra)))

        claims = [add(f"{name}-{obj['kind'].lower()}-{obj['metadata']['name']}", obj)
                  for obj in wm.nfs_volume_objects(workload, ctx)]
        cache = []  # the cache's namespace first, then the objects in it (components/fluid_cache.py)
        for obj in wm.fluid_objects(workload, ctx):
            cache.append(add(f"{name}-{obj['kind'].lower()}-{obj['metadata'].get('namespace', 'cluster')}-"
                             f"{obj['metadata']['name']}", obj, *cache[:1]))
        claims += cache
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
                                ("scaledobject", wm.scaled_object), ("podmonitor", wm.pod_monitor),
                                ("networkpolicy", wm.network_policy), ("prepull", pre_pull_daemonset)):
            obj = builder(workload, ctx)
            if obj is not None:
                setattr(self, suffix, add(f"{name}-{suffix}", obj))
        placeholders = warm_capacity.placeholder_deployment(workload, ctx)
        if placeholders is not None:
            self.warm_capacity = add(f"{name}-warm", placeholders, warm_capacity.ensure_priority_class(pool.cluster))
        self.deployment_name = pulumi.Output.from_input(workload.name)
        self.service_name = pulumi.Output.from_input(workload.name)
        BUILT.append(self)  # for the tools that read a composed program (components/assembly.py)
        self.register_outputs({"deployment_name": self.deployment_name, "service_name": self.service_name})


def _depends_on(opts: Optional[pulumi.ResourceOptions]) -> list:
    deps = (opts.depends_on if opts is not None else None) or []
    return deps if isinstance(deps, list) else [deps]


def _reads_monitoring(path: str, index: int) -> bool:
    """Whether a stack-path issue depends on the monitoring a service was given: the monitoring's own keys, and
    the workload's metrics and SLO, whose contract is with the monitoring's exporter and adapter."""
    own = f"workloads[{index}]"
    return path == "monitoring" or path.startswith(("monitoring.", "monitoring[")) or any(
        path == f"{own}.{key}" or path.startswith((f"{own}.{key}.", f"{own}.{key}["))
        for key in ("autoscaling.metrics", "slo"))


def _checked(name: str, args: InferenceServiceArgs):
    """The workload and its context, after every check of the args and of the contracts with the objects given;
    otherwise :func:`args.raise_for` with every problem of the step that found some (the service is then left out
    of the program: components/assembly.py)."""
    from gpuplatform.components.args import ArgsIssue, check_args, component_label, raise_for, reprefix
    from gpuplatform.components.assembly import (is_checked, label_of, own_issues_against_unchecked,
                                                 parse_section)
    from gpuplatform.components.gpu_software import gpu_software_kind

    label = component_label("InferenceService", name)
    raw_args = dict(args) if isinstance(args, Mapping) else args
    removed = [ArgsIssue(f"{label} args.{k}", f"removed in 0.2.0: {why}") for k, why in REMOVED_ARGS.items()
               if isinstance(raw_args, Mapping) and k in raw_args]
    if isinstance(raw_args, Mapping):
        raw_args = {k: v for k, v in raw_args.items() if k not in REMOVED_ARGS}
    issues = removed + check_args("InferenceService", name, raw_args, InferenceServiceArgs)
    if isinstance(raw_args, Mapping) and isinstance(raw_args.get("node_pool"), Mapping):
        issues = [i for i in issues if i.path != f"{label} args.node_pool"]
        issues.append(ArgsIssue(f"{label} args.node_pool", "a dict in the stack-file format: since 0.2.0 a service "
                                "takes the GpuNodePool object it runs on (docs/reuse.md, \"Migrating from 0.1\")"))
    raise_for(issues)
    pool: GpuNodePool = args["node_pool"]
    monitoring: Optional[GpuMonitoring] = args.get("monitoring")
    ns = args["namespace"]
    raw_workload = dict(args["workload"])
    # the workload's own keys first, checked whatever state the pool is in (the pool object names the pool)
    raw_workload.setdefault("nodePool", pool.facts.name if is_checked(pool) else "unchecked")
    try:
        workload = parse_section(Workload, raw_workload, "workloads[0]")
    except ConfigError as exc:
        raise_for(reprefix(exc.issues, {"workloads[0]": f"{label} args.workload"}))
    cluster = pool.cluster
    namespace = ns.name if isinstance(ns, WorkloadNamespace) else ns
    others = [s for s in pool.services]
    paths = {f"workloads[{len(others)}]": f"{label} args.workload", "nodePools[0]": f"{pool.label} args.pool",
             "monitoring": f"{label_of(monitoring)} args.monitoring" if monitoring else f"{label} args.monitoring",
             **{f"workloads[{i}]": f"{s.label} args.workload"
                for i, s in enumerate(others)}}
    # a monitoring with problems of its own serves nothing yet: the workload's own args are still checked, against
    # the pool and the other services, and its metrics once that monitoring is fixed
    mon_checked = monitoring is None or is_checked(monitoring)
    problems: list[ArgsIssue] = []
    if workload.node_pool != pool.facts.name:
        problems.append(ArgsIssue(f"{label} args.workload.nodePool", f"{workload.node_pool!r}, but args.node_pool is "
                                  f"{pool.label} (pool {pool.facts.name!r}); allowed: {pool.facts.name!r} or leave "
                                  "it out"))
    if monitoring is not None and mon_checked and monitoring.cluster is not cluster:
        problems.append(ArgsIssue(f"{label} args.monitoring", f"{monitoring.label} monitors {monitoring.cluster.label},"
                                  f" but {pool.label} belongs to {cluster.label}; allowed: the monitoring of the "
                                  "pool's cluster"))
    if isinstance(ns, WorkloadNamespace) and ns.cluster is not cluster:
        problems.append(ArgsIssue(f"{label} args.namespace", f"{ns.label} is created in {ns.cluster.label}, but "
                                  f"{pool.label} belongs to {cluster.label}; allowed: a namespace of the pool's "
                                  "cluster"))
    if isinstance(ns, WorkloadNamespace):
        if workload.run_as_root and ns.pod_security == "restricted":
            problems.append(ArgsIssue(f"{label} args.namespace", f"{ns.label} enforces Pod Security 'restricted', "
                                      "which rejects the pods of a workload with runAsRoot: true; allowed: a "
                                      "WorkloadNamespace with pod_security 'baseline' for it"))
    elif not isinstance(ns, str) or not DNS_LABEL.match(ns):
        problems.append(ArgsIssue(f"{label} args.namespace", f"{ns!r} is not a namespace name; allowed: a "
                                  "WorkloadNamespace, or the name (a DNS label) of a namespace that exists"))
    needs = gpu_software_kind(cluster.cloud, cluster.simulate_gpus, [pool.facts.mode])
    if needs and pool.gpu_software_kind != needs:
        problems.append(ArgsIssue(f"{label} args.node_pool", f"{pool.label}'s GPUs are served by {needs}, which no "
                                  f"GpuSoftware installs for it yet: its pods would stay Pending; allowed: build "
                                  f"GpuSoftware with node_pools including {pool.label} before the services"))
    if monitoring is None and not workload.fixed:
        problems.append(ArgsIssue(f"{label} args.monitoring", "required: autoscaler "
                                  f"{workload.autoscaling.autoscaler!r} reads metrics some GpuMonitoring serves; "
                                  "allowed: the GpuMonitoring of "
                                  f"{cluster.label}, or a workload with fixed replicas"))
    if not mon_checked:
        cfg = cluster.view([pool.spec], None, [s.workload for s in others] + [workload], namespace=namespace)
        own = [i for i in _validate(cfg, areas=("workloads", "stack"), checked_workloads=len(others))
               if not _reads_monitoring(i.path, len(others))]
        own_issues_against_unchecked(problems + reprefix(own, paths), label_of(monitoring))
    raise_for(problems)
    mon = monitoring.spec if monitoring else None
    cfg = cluster.view([pool.spec], mon, [s.workload for s in others] + [workload], namespace=namespace)
    issues = _validate(cfg, areas=("workloads", "stack"), checked_workloads=len(others))
    if monitoring is not None:
        issues += [ConfigIssue(f"workloads[{len(others)}].{path}", msg) for path, msg in metric_contract(
            workload, mon, monitoring.served, monitoring.label, monitoring.keda_installed)]
    raise_for(reprefix(issues, paths))
    facts = pool.facts
    ctx = workload_context(cfg, workload, facts)
    return workload, ctx, (pool, monitoring, ns)


__all__ = ["InferenceService", "InferenceServiceArgs", "WaitFor", "workload_context"]
