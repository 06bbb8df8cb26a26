"""GpuNodePool: one GPU node pool, its sharing-mode labels, taints and capacity.

On ACK it is an ``alicloud.cs.NodePool``. On any other cluster the nodes already exist: the component registers
no cloud resource and publishes the labels the nodes must carry (``gpuplatform verify`` checks them).

Autoscaled pools need the RAM role ``AliyunCSManagedAutoScalerRole`` and managed pools (auto repair, ACK Pro only)
``AliyunCSManagedNlcRole`` authorized for the account (a one-time console or RAM step, not expressible in this
program); ACK labels autoscaled nodes ``k8s.aliyun.com=true``.

Label and taint changes are applied to running nodes (``update_nodes``): changing a pool's sharing mode relabels
its nodes in place, so the pods of the old mode must be gone first (ACK runs one GPU scheduling mode per node).
"""
from typing import Optional, TypedDict

import pulumi
from typing_extensions import NotRequired

from gpuplatform.components.config import Model, NodePool
from gpuplatform.components.pools import PoolFacts


class GpuNodePoolArgs(TypedDict):
    pool: dict
    """Pool spec in the stack-file format (an item of ``gpu-platform:nodePools``). Required. ``autoRepair`` true
    makes it an ACK managed pool (Pro clusters only); left out it is false here (the platform resolves the
    stack default)."""
    facts: PoolFacts
    """Derived facts (model, labels, capacity) from :func:`components.pools.pool_facts`. Required."""
    cluster_id: NotRequired[pulumi.Input[str]]
    """ACK cluster id; when absent no ACK node pool is created (existing non-ACK cluster). Default none."""
    vswitch_ids: NotRequired[pulumi.Input[list]]
    """vSwitches of the pool's nodes (ACK). Required with ``cluster_id``."""
    protect: NotRequired[bool]
    """Pulumi ``protect``: a replaced GPU pool drops all GPU capacity at once. Default false."""
    wait_for: NotRequired[list]
    """Resources the ACK node pool is created after, e.g. the add-ons its auto repair needs. Default none."""
    alicloud_provider: NotRequired[pulumi.ProviderResource]
    """The ``alicloud.Provider`` of the cluster's region (``GpuCluster.alicloud_provider``). Required with
    ``cluster_id``: without it the pool would go to whatever region ``alicloud:region`` names."""


class _Args(Model):
    pool: NodePool
    protect: bool = False


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
        out["scaling_config"] = {"enable": True, "min_size": pool.min_nodes, "max_size": pool.max_nodes,
                                 "type": "gpu"}
    else:
        # pulumi-alicloud 4.x types desired_size as a string; a disabled scaling_config is left out entirely
        # (terraform-provider-alicloud#3821: a zeroed scaling_config re-enabled autoscaling)
        out["desired_size"] = str(pool.desired_nodes)
    if pool.key_pair:
        out["key_name"] = pool.key_pair
    return out


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


class GpuNodePool(pulumi.ComponentResource):
    """A GPU node pool; outputs the selector, tolerations and capacity its workloads use."""

    node_pool_id: pulumi.Output[str]
    node_selector: pulumi.Output[dict]
    tolerations: pulumi.Output[list]
    units_per_node: pulumi.Output[int]
    node_resources: pulumi.Output[dict]
    """GPU extended resources one node advertises, with amounts (several for a per-GPU MIG layout)."""
    node_labels: pulumi.Output[dict]
    """Labels the pool's nodes carry (set by the ACK node pool; put on existing nodes by hand elsewhere)."""

    def __init__(self, name: str, args: GpuNodePoolArgs, opts: Optional[pulumi.ResourceOptions] = None):
        spec = _Args.model_validate({"pool": args["pool"], "protect": args.get("protect", False)})
        facts: PoolFacts = args["facts"]
        props = pool_props(facts)
        super().__init__("gpuplatform:index:GpuNodePool", name, props, opts)
        self.facts = facts
        self.pool = None
        if args.get("cluster_id") is not None:
            import pulumi_alicloud as alicloud

            if args.get("alicloud_provider") is None:
                raise ValueError(f"GpuNodePool {name!r}: 'alicloud_provider' is required with 'cluster_id' (pass "
                                 "GpuCluster.alicloud_provider, so the pool goes to the cluster's region)")

            self.pool = alicloud.cs.NodePool(
                f"{name}-pool", cluster_id=args["cluster_id"], vswitch_ids=args.get("vswitch_ids"),
                **node_pool_inputs(spec.pool, facts),
                opts=pulumi.ResourceOptions(parent=self, protect=spec.protect, provider=args["alicloud_provider"],
                                            depends_on=list(args.get("wait_for") or [])))
            self.node_pool_id = self.pool.node_pool_id
        else:
            self.node_pool_id = pulumi.Output.from_input(facts.name)
        self.node_selector = pulumi.Output.from_input(facts.node_selector)
        self.tolerations = pulumi.Output.from_input(facts.tolerations)
        self.units_per_node = pulumi.Output.from_input(facts.units_per_node)
        self.node_resources = pulumi.Output.from_input(facts.node_resources)
        self.node_labels = pulumi.Output.from_input(facts.node_labels)
        # the stack policies see a component only through its outputs (AnalyzeStack gets outputs, and a
        # component's are what it registers here), so the pool facts they judge placement and capacity by are
        # registered along with the ids; see docs/policies.md "What the policies see"
        self.register_outputs({**props, "node_pool_id": self.node_pool_id, "node_selector": self.node_selector,
                               "tolerations": self.tolerations, "units_per_node": self.units_per_node,
                               "node_resources": self.node_resources, "node_labels": self.node_labels})
