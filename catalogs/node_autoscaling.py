"""Cluster node autoscaling on ACK: the cluster-level settings ``cs.AutoscalingConfig`` sends, each with ACK's
default and where it is stated, and the upstream cluster-autoscaler's defaults for clusters the stack does not
configure.

ACK: "Node pool auto scaling only takes effect after you enable it at the cluster level" (ACK "Enable node
auto scaling"). The provider's ``alicloud_cs_autoscaling_config`` is that cluster-level switch: its create and
update call ``CreateAutoscalingConfig``, its Read reads the autoscaler add-on's config back
(``GetCsKubernetesAddonInstance(cluster, scaler_type)``) and its Delete does nothing
(terraform-provider-alicloud ``alicloud/resource_alicloud_cs_autoscaling_config.go``). Every source is listed in
``docs/ack.md`` ("Node autoscaling").
"""
from __future__ import annotations

from dataclasses import dataclass

SCALER_TYPES = ("cluster-autoscaler", "goatscaler")
"""``scaler_type`` values (pulumi-alicloud 4.0.0 ``cs.AutoscalingConfig`` docstring): ``cluster-autoscaler`` (ACK's
node auto scaling) and ``goatscaler`` (ACK's node instant scaling, the ``ack-goatscaler`` component)."""
SCALER_ADDONS = {"cluster-autoscaler": "cluster-autoscaler", "goatscaler": "goatscaler"}
"""The add-on instance each scaler type is, as the provider's Read looks it up (``GetCsKubernetesAddonInstance(
clusterId, scalerType)``): an adopted cluster with neither installed has node autoscaling off."""
EXPANDERS = ("least-waste", "random", "priority")
"""``expander`` values (pulumi-alicloud ``cs.AutoscalingConfig`` docstring). ``goatscaler`` supports
``least-waste`` only; ``priority`` needs per-scaling-group priorities, which the stack does not set."""
GOATSCALER_EXPANDERS = ("least-waste",)
GOATSCALER_MIN_MINOR = 23
"""``goatscaler`` needs Kubernetes 1.23 or later ("For cluster version 1.22 and below, we only support
cluster-autoscaler": the same docstring)."""


@dataclass(frozen=True)
class Setting:
    key: str
    """Stack-file key under ``cluster.nodeAutoscaling``."""
    argument: str
    """``cs.AutoscalingConfig`` keyword argument it is sent as."""
    default: object
    source: str


SETTINGS: dict[str, Setting] = {s.key: s for s in (
    Setting("scalerType", "scaler_type", "cluster-autoscaler",
            "provider Read: scaler_type unset reads the 'cluster-autoscaler' add-on; ACK 'Enable node auto "
            "scaling' (node auto scaling is cluster-autoscaler; instant scaling is ack-goatscaler)"),
    Setting("scanInterval", "scan_interval", "30s",
            "provider schema Default '30s'; docstring 'Default is 30s' (ACK CreateAutoscalingConfig scan_interval)"),
    Setting("scaleDownUtilizationThreshold", "utilization_threshold", "0.5",
            "provider schema Default '0.5'; docstring 'The scale-in threshold. Default is 0.5'"),
    Setting("scaleDownGpuUtilizationThreshold", "gpu_utilization_threshold", "0.5",
            "provider schema Default '0.5'; docstring 'The scale-in threshold for GPU instance. Default is 0.5'"),
    Setting("scaleDownUnneededTime", "cool_down_duration", "10m",
            "provider schema Default '10m'; Read maps cool_down_duration to the add-on's ScaleDownUnneededTime "
            "(how long a node stays unneeded before it is removed)"),
    Setting("scaleDownDelayAfterAdd", "unneeded_duration", "10m",
            "provider schema Default '10m'; Read maps unneeded_duration to the add-on's ScaleDownDelayAfterAdd "
            "(no scale-in that long after a scale-out)"),
    Setting("expander", "expander", "least-waste", "provider schema Default 'least-waste'"),
    Setting("scaleUpFromZero", "scale_up_from_zero", True,
            "pulumi-alicloud docstring 'Should CA scale up when there 0 ready nodes. Default is true'"),
    Setting("maxGracefulTerminationSec", "max_graceful_termination_sec", 14400,
            "pulumi-alicloud docstring 'Maximum number of seconds CA waits for pod termination when trying to "
            "scale down a node. Default is 14400'"),
)}
"""Every cluster-level setting the stack sends, by stack-file key."""

SCALE_DOWN_ENABLED = True
"""Sent explicitly: the provider's create sends ``scale_down_enabled`` whatever it is (``d.Get``), default true."""

UPSTREAM_CA = {"scanInterval": "10s", "scaleDownUnneededTime": "10m", "scaleDownDelayAfterAdd": "10m",
               "scaleUpFromZero": True}
"""The upstream cluster-autoscaler's flag defaults (kubernetes/autoscaler FAQ "What are the parameters to CA?":
``--scan-interval 10s``, ``--scale-down-unneeded-time 10m``, ``--scale-down-delay-after-add 10m``,
``--scale-up-from-zero true``): the defaults of ``cluster.nodeAutoscaling`` on a cluster of kind ``kubeconfig``,
whose own autoscaler ``simulate`` models."""

MAX_EMPTY_BULK_DELETE = 10
"""Empty nodes cluster-autoscaler removes at once (kubernetes/autoscaler FAQ, "How does scale-down work?": "Empty
nodes, on the other hand, can be terminated in bulk, up to 10 nodes at a time (configurable by
``--max-empty-bulk-delete`` flag)"; its default in "What are the parameters to CA?"). The stack does not set it
(``cs.AutoscalingConfig`` has no such argument), so ``simulate`` takes the upstream default on every kind."""

NOT_SENDABLE_FALSE = ("scaleUpFromZero",)
"""Booleans the provider cannot send as false: its create and update add them to the request only when
``d.GetOk`` finds them, and GetOk reports a false bool as unset (terraform-plugin-sdk helper/schema), so ACK keeps
its own true and the Read writes true back: a change on every run."""
