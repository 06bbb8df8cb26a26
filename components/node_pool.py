"""GpuNodePool: one GPU node pool, its sharing-mode labels, taints and capacity.

On ACK it is an ``alicloud.cs.NodePool``. On any other cluster the nodes already exist: the component registers
no cloud resource and publishes the labels the nodes must carry (``gpuplatform verify`` checks them).

An autoscaled pool makes its cluster enable node autoscaling (``GpuCluster.require_node_autoscaling``: a
``cs.AutoscalingConfig`` on a cluster the stack creates; on an adopted one, a refusal where it is off).
Autoscaled pools need the RAM role ``AliyunCSManagedAutoScalerRole`` and managed pools (auto repair, ACK Pro only)
``AliyunCSManagedNlcRole`` authorized for the account (a one-time console or RAM step, not expressible in this
program); ACK labels autoscaled nodes ``k8s.aliyun.com=true``.

Label and taint changes are applied to running nodes (``update_nodes``): changing a pool's sharing mode relabels
its nodes in place, so the pods of the old mode must be gone first (ACK runs one GPU scheduling mode per node).
"""
from typing import Optional, TypedDict

import pulumi
from typing_extensions import NotRequired

from gpuplatform.components.addons import repair_addons, sharing_addons
from gpuplatform.components.config import NodePool
from gpuplatform.components.pools import PoolFacts

from gpuplatform.components.cluster import GpuCluster
from gpuplatform.components.assembly import BUILT, ComposedComponent
# the pure pool inputs live in node_pool_inputs.py (GpuCluster reads them too); named here as before
from gpuplatform.components.node_pool_inputs import (FIXED_POOL_IGNORED, SCALING_CONFIG_READ,  # noqa: F401
                                                     autoscaled_pool_options, fixed_size, node_pool_inputs,
                                                     system_pool_inputs)


class GpuNodePoolArgs(TypedDict):
    cluster: GpuCluster
    """The cluster the pool belongs to (its provider, region, kind and version). Required."""
    pool: dict
    """The pool in the stack-file format (an item of ``gpu-platform:nodePools``), e.g. ``{"name": "a10",
    "gpuModel": "A10", "gpusPerNode": 1, "maxNodes": 2}`` on an existing cluster or ``{"name": "a10",
    "instanceTypes": ["ecs.gn7i-c8g1.2xlarge"], "maxNodes": 4}`` on ACK. Required. ``autoRepair`` left out is
    resolved as in a stack file (true on ACK Pro)."""
    protect: NotRequired[bool]
    """Pulumi ``protect``: a replaced GPU pool drops all GPU capacity at once. Default: the cluster's."""


def pool_props(facts: PoolFacts) -> dict:
    """What a pool registers for the policies and for reuse: its placement, resources and capacity."""
    return {
        "poolName": facts.name, "gpuModel": facts.model.name, "gpusPerNode": facts.gpus_per_node,
        "maxNodes": facts.max_nodes, "sharingMode": facts.mode, "migProfile": facts.mig_profile,
        "migStrategy": facts.mig_strategy, "migConfig": facts.mig_config,
        "migLayout": [{"devices": list(d), "profiles": dict(p)} for d, p in facts.mig_layout],
        "cgpuPolicy": facts.cgpu_policy, "resourceName": facts.resource_name,
        "nodeResources": facts.node_resources, "unitsPerNode": facts.units_per_node, "nodeLabels": facts.node_labels,
        "tolerations": facts.tolerations, "nodeSelector": facts.node_selector,
    }


class GpuNodePool(ComposedComponent, pulumi.ComponentResource):
    """A GPU node pool. What its nodes advertise is its contract with the services placed on it: :attr:`facts`
    (GPU resources and counts, labels, taints, capacity), also exported as outputs."""

    node_pool_id: pulumi.Output[str]
    node_selector: pulumi.Output[dict]
    tolerations: pulumi.Output[list]
    units_per_node: pulumi.Output[int]
    node_resources: pulumi.Output[dict]
    """GPU extended resources one node advertises, with amounts (several for a per-GPU MIG layout)."""
    node_labels: pulumi.Output[dict]
    """Labels the pool's nodes carry (set by the ACK node pool; put on existing nodes by hand elsewhere)."""
    facts: PoolFacts
    """What the pool's nodes advertise, known before deployment: resources per node, labels, taints,
    tolerations, node selector, capacity (``max_replicas(request)``)."""

    def __init__(self, name: str, args: GpuNodePoolArgs, opts: Optional[pulumi.ResourceOptions] = None):
        from gpuplatform.components.args import check_args, component_label, raise_for, reprefix
        from gpuplatform.components.assembly import checking, parse_section
        from gpuplatform.components.errors import ConfigError
        from gpuplatform.components.pools import pool_facts
        from gpuplatform.components.validation import validate as _validate

        label = component_label("GpuNodePool", name)
        with checking(self, label) as outcome:
            raise_for(check_args("GpuNodePool", name, args, GpuNodePoolArgs))
            cluster: GpuCluster = args["cluster"]
            try:
                # the pool's own keys first: they are checked whatever state its cluster is in
                pool = parse_section(NodePool, args["pool"], "nodePools[0]")
            except ConfigError as exc:
                raise_for(reprefix(exc.issues, {"nodePools[0]": f"{label} args.pool"}))
            others = list(cluster.node_pools)
            paths = {f"nodePools[{i}]": f"{p.label} args.pool"
                     for i, p in enumerate(others)} | {f"nodePools[{len(others)}]": f"{label} args.pool",
                                                       "cluster": f"{label} args.cluster"}
            cfg = cluster.view([p.spec for p in others] + [pool])
            raise_for(reprefix(_validate(cfg, areas=("pools", "stack")), paths))
            self.label = label
            self.cluster = cluster
            # the stack default, resolved: a managed (auto-repair) pool on ACK Pro unless the pool says otherwise
            self.spec: NodePool = pool.model_copy(update={"auto_repair": cfg.pool_managed(pool)})
            self.facts = pool_facts(cfg, pool)
            self.services: list = []
            """The InferenceServices placed on this pool so far (capacity is checked over all of them)."""
            self.gpu_software_kind: Optional[str] = None
            cluster.node_pools.append(self)
        if not outcome.build:
            return
        facts = self.facts
        props = pool_props(facts)
        super().__init__("gpuplatform:index:GpuNodePool", name, props, opts)
        outcome.restore()
        self.gpu_software: list[pulumi.Resource] = []
        """What turns the pool's GPUs into schedulable resources besides the ACK add-ons (the GPU Operator or
        fake-gpu-operator release, added by :class:`GpuSoftware`)."""
        self.pool = None
        sharing = cluster.require_addons(*sharing_addons(cluster.cloud, pool.sharing.mode))
        if cluster.cloud.creates_node_pools:
            import pulumi_alicloud as alicloud

            # auto repair is carried out by these add-ons: a pool created before them has nodes nobody repairs
            waits_for = cluster.require_addons(*repair_addons(cfg, pool))
            if self.spec.autoscaling:
                # ACK scales a pool only once node autoscaling is on for the cluster (cs.AutoscalingConfig)
                waits_for = waits_for + cluster.require_node_autoscaling(label)
            self.pool = alicloud.cs.NodePool(
                f"{name}-pool", cluster_id=cluster.cluster_id, vswitch_ids=cluster.vswitch_ids,
                **node_pool_inputs(self.spec, facts),
                opts=pulumi.ResourceOptions.merge(
                    pulumi.ResourceOptions(parent=self, protect=args.get("protect", cluster.protect),
                                           provider=cluster.alicloud_provider, depends_on=waits_for),
                    autoscaled_pool_options(self.spec.autoscaling)))
            self.node_pool_id = self.pool.node_pool_id
        else:
            self.node_pool_id = pulumi.Output.from_input(facts.name)
        self._sharing_addons = sharing
        self.node_selector = pulumi.Output.from_input(facts.node_selector)
        self.tolerations = pulumi.Output.from_input(facts.tolerations)
        self.units_per_node = pulumi.Output.from_input(facts.units_per_node)
        self.node_resources = pulumi.Output.from_input(facts.node_resources)
        self.node_labels = pulumi.Output.from_input(facts.node_labels)
        # the stack policies see a component only through its outputs (AnalyzeStack gets outputs, and a
        # component's are what it registers here), so the pool facts they judge placement and capacity by are
        # registered along with the ids; see docs/policies.md "What the policies see"
        BUILT.append(self)  # for the tools that read a composed program (components/assembly.py)
        self.register_outputs({**props, "node_pool_id": self.node_pool_id, "node_selector": self.node_selector,
                               "tolerations": self.tolerations, "units_per_node": self.units_per_node,
                               "node_resources": self.node_resources, "node_labels": self.node_labels})

    @property
    def gpu_nodes(self) -> list[pulumi.Resource]:
        """What a Deployment whose pods need this pool's GPUs waits for: the ACK node pool, the add-ons its
        sharing mode needs and the GPU software serving it."""
        return [r for r in (self.pool,) if r is not None] + list(self.gpu_software) + list(self._sharing_addons)
