"""What the Pulumi engine, the alicloud provider and the ACK API do with the inputs we register, reduced to the
facts the package relies on. Each fact names its upstream source; docs/ack.md lists them all.

The SDK's mock runtime accepts any input and never applies an update; these functions apply the real rules to
the recorded registrations, so a test can ask what a real `pulumi up` would leave behind.

TF = aliyun/terraform-provider-alicloud at 81c43b672 (the code behind pulumi-alicloud 4.0.0).
"""
from __future__ import annotations

import datetime as dt
import os
from typing import Optional

from gpuplatform.synth import OFFLINE_KUBECONFIG, OfflineMocks

CLUSTER = "alicloud:cs/managedKubernetes:ManagedKubernetes"
ADDON = "alicloud:cs/kubernetesAddon:KubernetesAddon"
NODE_POOL = "alicloud:cs/nodePool:NodePool"
ALICLOUD_PROVIDER = "pulumi:providers:alicloud"
CREDENTIAL = "alicloud:cs/getClusterCredential:getClusterCredential"

# TF alicloud/resource_alicloud_cs_managed_kubernetes.go: `addons` and `pod_vswitch_ids` are read by
# resourceAlicloudCSManagedKubernetesCreate only; Read never sets them and Update never reads them, so a change
# to them after creation reaches no API. (website/docs/r/cs_managed_kubernetes.html.markdown: "Only works for
# Create Operation".)
CLUSTER_CREATE_ONLY = ("addons", "podVswitchIds")
# Same schema: ForceNew, so a change replaces the whole cluster.
CLUSTER_FORCE_NEW = ("podCidr", "serviceCidr", "nodeCidrMask", "profile")
# TF website/docs/r/cs_managed_kubernetes.html.markdown, NOTE under `ip_stack`: Terway needs `pod_vswitch_ids` and
# the `terway-eniip` add-on; Flannel needs `pod_cidr` and the `flannel` add-on.
NETWORK_PLUGIN_INPUT = {"flannel": "podCidr", "terway-eniip": "podVswitchIds"}


def installed_addons(plans: list[list]) -> set[str]:
    """Add-ons running on an ACK cluster after `pulumi up` of each plan in turn, as the provider applies them.

    The cluster is created by the first plan that has it: its `addons` (those not `disabled`) are installed then.
    Later plans change `addons` in vain (create-only). A `KubernetesAddon` is installed, or adopted when present
    (TF resource_alicloud_cs_kubernetes_addon.go, Create: DescribeCsKubernetesAddon, then installAddon only when
    not found), by any plan that registers it."""
    installed: set[str] = set()
    created = False
    for records in plans:
        cluster = [r for r in records if r.type == CLUSTER]
        if cluster and not created:
            installed |= {a["name"] for a in cluster[0].inputs.get("addons", []) if not a.get("disabled")}
            created = True
        installed |= {r.inputs["name"] for r in records if r.type == ADDON}
    return installed


def resource_region(record, records: list, stack_config: dict, env: Optional[dict] = None) -> Optional[str]:
    """The region an Alibaba resource (or invoke, by its provider reference) is sent to by the engine.

    With an explicit provider the engine uses that provider's configuration: its `region` input, else
    `ALICLOUD_REGION` (pulumi_alicloud/provider.py, Provider.__init__). Without one it uses the package's default
    provider, configured from the stack's `alicloud:region`, else `ALICLOUD_REGION` (pulumi_alicloud/config/
    vars.py, `region`)."""
    env = os.environ if env is None else env
    ref = record if isinstance(record, str) else record.provider
    if not ref:
        return stack_config.get("alicloud:region") or env.get("ALICLOUD_REGION")
    urn = ref.rsplit("::", 1)[0]
    provider = next(r for r in records if r.urn == urn)
    assert provider.type == ALICLOUD_PROVIDER, f"{record} is sent to a {provider.type} provider"
    return provider.inputs.get("region") or env.get("ALICLOUD_REGION")


def node_labels_after_update(before: dict, after: dict, running: dict[str, str]) -> dict[str, str]:
    """Labels of a pool's running nodes after the provider updates the pool from `before` to `after` inputs.

    TF resource_alicloud_cs_kubernetes_node_pool.go, Update: a label change is sent in `kubernetes_config`
    together with `update_nodes` taken from the configuration; the TF doc says `update_nodes` "Synchronously
    update node labels and taints" — without it only nodes created later get the new labels."""
    if before.get("labels") == after.get("labels") or not after.get("updateNodes"):
        return running
    return {label["key"]: label.get("value", "") for label in after.get("labels", [])}


class AckCredentialApi(OfflineMocks):
    """DescribeClusterUserKubeconfig as ACK documents it (API reference, DescribeClusterUserKubeconfig and
    DescribeSubaccountK8sClusterUserConfig): `TemporaryDurationMinutes` (15-4320) issues a temporary kubeconfig
    valid that long, a new one on each call; left out, the user's kubeconfig, valid three years, until renewed
    or revoked. The provider passes the argument through (TF service_alicloud_cs.go,
    DescribeClusterKubeConfigWithExpiration)."""

    def __init__(self, now: dt.datetime, reissue_default: bool = False):
        """``reissue_default``: model an API that, against what its documentation implies, issues a new
        long-lived kubeconfig on every call (the unverified case in docs/ack.md)."""
        super().__init__()
        self.now = now
        self.reissue_default = reissue_default
        self.issued = 0
        self.expiry: dict[str, dt.datetime] = {OFFLINE_KUBECONFIG: now + dt.timedelta(days=3 * 365)}

    def call(self, args):
        if args.token != CREDENTIAL:
            return super().call(args)
        self.invokes.append((args.token, dict(args.args)))
        self.invoke_providers.append(args.provider or "")
        minutes = args.args.get("temporaryDurationMinutes")
        if not minutes and not self.reissue_default:
            kubeconfig = OFFLINE_KUBECONFIG
        elif not minutes:
            self.issued += 1
            kubeconfig = OFFLINE_KUBECONFIG.replace("token: offline", f"token: reissued-{self.issued}")
            self.expiry[kubeconfig] = self.now + dt.timedelta(days=3 * 365)
        else:
            self.issued += 1
            kubeconfig = OFFLINE_KUBECONFIG.replace("token: offline", f"token: temporary-{self.issued}")
            self.expiry[kubeconfig] = self.now + dt.timedelta(minutes=int(minutes))
        return {"kubeConfig": kubeconfig, "clusterId": args.args.get("clusterId"),
                "expiration": self.expiry[kubeconfig].isoformat(), "certificateAuthorities": []}
