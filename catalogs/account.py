"""What an Alibaba Cloud account needs before the first ``pulumi up`` of a stack that creates ACK resources: the
services activated, ACK's service roles authorized, and GPU instances it may buy (quota) and can buy (stock) in
the stack's zones. The first-deploy checklist of docs/deploy.md lists each with its console step; ``gpuplatform verify
--preflight`` checks the ones an API can read (``gpuplatform/verify/preflight.py``). Sources in docs/ack.md
("Account readiness").
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ServiceRole:
    name: str
    """RAM role name (read with RAM ``GetRole``; ``EntityNotExist.Role`` when it was never authorized)."""
    needed_for: str
    """Which stacks need it: ``cluster`` (creates an ACK cluster), ``autoscaling`` (an autoscaled pool),
    ``managed-pool`` (auto repair), ``arms`` (ARMS Prometheus), ``terway``."""
    purpose: str
    source: str
    step: str
    """Console step that authorizes it."""


_QUICK = ("ACK console: the first visit asks for the default roles; 'Authorize' (Container Service Management "
          "Console > Quick Authorization / RAM Quick Authorization page) creates them")

SERVICE_ROLES: tuple[ServiceRole, ...] = (
    ServiceRole("AliyunCSDefaultRole", "cluster", "ACK creates and manages the cluster's cloud resources",
                "ACK 'ACK default roles' (quick authorization)", _QUICK),
    ServiceRole("AliyunCSManagedKubernetesRole", "cluster", "the managed control plane reaches the account's "
                "resources (SLB, VPC routes)", "ACK 'ACK default roles'", _QUICK),
    ServiceRole("AliyunCSManagedCsiRole", "cluster", "the disk CSI driver attaches disks",
                "ACK 'ACK default roles'", _QUICK),
    ServiceRole("AliyunCSManagedNetworkRole", "terway", "Terway creates and binds ENIs",
                "ACK 'ACK default roles'", _QUICK),
    ServiceRole("AliyunCSManagedArmsRole", "arms", "the arms-prometheus add-on writes to ARMS",
                "ACK 'ACK default roles'", _QUICK),
    ServiceRole("AliyunCSManagedAutoScalerRole", "autoscaling", "node autoscaling resizes the pools' scaling "
                "groups", "terraform-provider-alicloud website/docs/r/cs_kubernetes_node_pool.html.markdown "
                "(NOTE: an autoscaled pool needs it)", "ACK console > Node Pools > Configure Auto Scaling > "
                "authorize AliyunCSManagedAutoScalerRole (or quick authorization)"),
    ServiceRole("AliyunCSManagedNlcRole", "managed-pool", "managed node pools repair nodes",
                "terraform-provider-alicloud website/docs/r/cs_kubernetes_node_pool.html.markdown (NOTE on "
                "managed node pools)", _QUICK),
    ServiceRole("AliyunServiceRoleForAutoScaling", "autoscaling", "Auto Scaling's service-linked role: node pools "
                "are Auto Scaling groups, which exist only once Auto Scaling is activated",
                "Auto Scaling 'Service-linked role' (created when Auto Scaling is activated)",
                "Auto Scaling console (ess.console.aliyun.com): activate the service; its service-linked role is "
                "created then"),
)
"""RAM roles a stack may need, each with what needs it."""


@dataclass(frozen=True)
class Prerequisite:
    key: str
    what: str
    step: str
    """Console or API step that meets it."""
    checked_by: str
    """The ``verify --preflight`` check id, or why no API reads it."""


CHECKLIST: tuple[Prerequisite, ...] = (
    Prerequisite("ack-activated", "Container Service for Kubernetes (ACK) activated for the account",
                 "ACK console (cs.console.aliyun.com): 'Activate' on first visit; real-name verification and a "
                 "payment method first", "not read by any API we found: check the console once"),
    Prerequisite("service-roles", "ACK's service roles authorized (quick authorization)",
                 "ACK console: 'Authorize' on first visit (RAM Quick Authorization)",
                 "account.service-role (RAM GetRole, one result per role the stack needs)"),
    Prerequisite("auto-scaling", "Auto Scaling (ESS) activated: node pools are scaling groups",
                 "Auto Scaling console (ess.console.aliyun.com): activate the service",
                 "account.service-role AliyunServiceRoleForAutoScaling (created on activation)"),
    Prerequisite("gpu-quota", "a vCPU quota for pay-as-you-go instances that holds every pool at its most nodes",
                 "Quota Center (quotas.console.aliyun.com) > ECS > pay-as-you-go vCPU quota: apply for more",
                 "account.vcpu-quota (ECS DescribeAccountAttributes max-postpaid-instance-vcpu-count)"),
    Prerequisite("gpu-stock", "each pool's instance types on sale with stock in the stack's zones",
                 "ECS console > instance purchase page for the zone, or another zone/type",
                 "account.instance-stock (ECS DescribeAvailableResource, one result per type and zone)"),
)
"""The first-deploy checklist of docs/deploy.md, in order."""

VCPU_QUOTA_ATTRIBUTE = "max-postpaid-instance-vcpu-count"
"""ECS ``DescribeAccountAttributes`` attribute: the pay-as-you-go vCPU quota (per instance family where the account
has one). Whether GPU families always carry their own entry is not documented (docs/ack.md: unverified)."""
