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


def node_pool_inputs(pool: NodePool, facts: PoolFacts) -> dict:
    """``cs.NodePool`` keyword arguments for the pool (pure, so tests assert them exactly)."""
    out = {
        "node_pool_name": pool.name,
        "instance_types": list(pool.instance_types),
        "image_type": pool.image_type,
        "system_disk_category": pool.system_disk.category,
        "system_disk_size": pool.system_disk.size_gib,
        "data_disks": [{"category": d.category, "size": d.size_gib} for d in pool.data_disks],
        "labels": [{"key": k, "value": v} for k, v in sorted(facts.node_labels.items())],
        "taints": [{"key": t.key, **({"value": t.value} if t.value else {}), "effect": t.effect} for t in pool.taints],
        # labels and taints (the sharing mode is a label) reach running nodes only with update_nodes: the
        # provider sends it with every pool update (resource_alicloud_cs_kubernetes_node_pool.go, update)
        "update_nodes": True,
        "install_cloud_monitor": True,
    }
    if pool.auto_repair:
        # a managed node pool (ACK Pro only; RAM role AliyunCSManagedNlcRole)
        out["management"] = {"enable": True, "auto_repair": True, "max_unavailable": 1}
    if pool.autoscaling:
        # never desired_size: the autoscaler owns the size (ACK reports it back; see autoscaled_pool_options)
        out["scaling_config"] = {"enable": True, "min_size": pool.min_nodes, "max_size": pool.max_nodes,
                                 "type": "gpu"}
    else:
        out.update(fixed_size(pool.desired_nodes))
    if pool.key_pair:
        out["key_name"] = pool.key_pair
    return out


def fixed_size(nodes: int) -> dict:
    """A pool kept at ``nodes`` nodes. ``scaling_config`` is Optional and Computed in the provider's schema
    (resource_alicloud_cs_kubernetes_node_pool.go), so leaving it out keeps whatever the state holds: a pool that
    was autoscaled would stay autoscaled. So ``enable: false`` is sent, and nothing else: the Read writes back all
    seven keys of ACK's ``auto_scaling`` (enable, min/max instances, type, EIP settings), and what ACK reports for
    them on a pool that does not autoscale is not documented, so every key but ``enable`` is ignored on a fixed
    pool (:data:`FIXED_POOL_IGNORED`): they do nothing while autoscaling is off. ``desired_size`` is a string in
    pulumi-alicloud 4.x."""
    return {"scaling_config": {"enable": False}, "desired_size": str(nodes)}


SCALING_CONFIG_READ = ("enable", "minSize", "maxSize", "type", "eipBandwidth", "eipInternetChargeType", "isBondEip")
"""The ``scaling_config`` keys the provider's Read writes (``scalingConfigMap`` from ACK's ``auto_scaling``)."""
FIXED_POOL_IGNORED = [f"scalingConfig.{k}" for k in SCALING_CONFIG_READ if k != "enable"]
"""What a fixed pool never compares: ACK's answer for them while autoscaling is off is not documented."""


def autoscaled_pool_options(autoscaled: bool) -> pulumi.ResourceOptions:
    """``desired_size`` is Optional, not Computed, and the provider's Read sets it whenever ACK reports one
    (``scaling_group.desired_size``): for an autoscaled pool that is the autoscaler's current count, which the stack
    never sends, so every later ``pulumi up`` would show it removed. Ignored on autoscaled pools only: a fixed
    pool's size is the stack's; a fixed pool ignores the ``scaling_config`` keys other than ``enable``
    (:func:`fixed_size`)."""
    return pulumi.ResourceOptions(ignore_changes=["desiredSize"] if autoscaled else list(FIXED_POOL_IGNORED))


def system_pool_inputs(spec) -> dict:
    """``cs.NodePool`` keyword arguments of a cluster's system pool (``cluster.systemPool``): untainted, not
    autoscaled, spread evenly over the cluster's vSwitch zones (``multi_az_policy: BALANCE``, TF doc
    cs_kubernetes_node_pool), labelled with its role. Not a managed (auto-repair) pool: auto repair needs the
    node-problem-detector and node-lifecycle-controller add-ons installed first (pulumi-alicloud ``NodePool``
    ``management.auto_repair``), whose controllers run on this pool."""
    from gpuplatform.catalogs.ack import SYSTEM_POOL_NAME
    from gpuplatform.components.placement import SYSTEM_ROLE_LABEL

    return {
        "node_pool_name": SYSTEM_POOL_NAME,
        "instance_types": list(spec.instance_types),
        "image_type": "AliyunLinux3",
        "system_disk_category": spec.system_disk.category,
        "system_disk_size": spec.system_disk.size_gib,
        "labels": [{"key": SYSTEM_ROLE_LABEL[0], "value": SYSTEM_ROLE_LABEL[1]}],
        "update_nodes": True,
        "install_cloud_monitor": True,
        "multi_az_policy": "BALANCE",
        **fixed_size(spec.nodes),
    }


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
        sharing = cluster.require_addons(*sharing_addons(cluster.is_ack, cluster.is_ack_pro, pool.sharing.mode))
        if cluster.is_ack:
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
