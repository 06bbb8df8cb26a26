"""The ``cs.NodePool`` inputs of a GPU pool and of a cluster's system pool, and the changes Pulumi ignores on them:
pure over the config, so tests assert them exactly and GpuCluster (the system pool) reads them without importing
GpuNodePool, which builds on the cluster."""
import pulumi

from gpuplatform.catalogs.ack import SYSTEM_POOL_NAME
from gpuplatform.components.config import NodePool
from gpuplatform.components.placement import SYSTEM_ROLE_LABEL
from gpuplatform.components.pools import PoolFacts


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
