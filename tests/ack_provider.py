"""What the Pulumi engine, the alicloud provider and the ACK API do with the inputs we register, reduced to the
facts the package relies on. Each fact names its upstream source; docs/ack.md lists them all.

The SDK's mock runtime accepts any input and never applies an update; these functions apply the real rules to
the recorded registrations, so a test can ask what a real `pulumi up` would leave behind, and what the next
`pulumi up` would then change.

TF = aliyun/terraform-provider-alicloud at 81c43b672 (docs/ack.md says which release pulumi-alicloud 4.0.0
bridges and how far the files read here are from it).
"""
from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import dataclass, field
from typing import Any, Optional

from gpuplatform.synth import OFFLINE_KUBECONFIG, OfflineMocks

CLUSTER = "alicloud:cs/managedKubernetes:ManagedKubernetes"
ADDON = "alicloud:cs/kubernetesAddon:KubernetesAddon"
NODE_POOL = "alicloud:cs/nodePool:NodePool"
SWITCH = "alicloud:vpc/switch:Switch"
VPC = "alicloud:vpc/network:Network"
ALICLOUD_PROVIDER = "pulumi:providers:alicloud"
CREDENTIAL = "alicloud:cs/getClusterCredential:getClusterCredential"
GET_CLUSTERS = "alicloud:cs/getClusters:getClusters"
GET_ADDONS = "alicloud:cs/getKubernetesAddons:getKubernetesAddons"
ADOPTED_CLUSTER = "c0123456789abcdef0123456789abcdef"
"""The cluster id the adopted stacks (staging) name."""

# TF alicloud/resource_alicloud_cs_managed_kubernetes.go: `addons` and `pod_vswitch_ids` are read by
# resourceAlicloudCSManagedKubernetesCreate only; Read never sets them and Update never reads them, so a change
# to them after creation reaches no API. (website/docs/r/cs_managed_kubernetes.html.markdown: "Only works for
# Create Operation".)
CLUSTER_CREATE_ONLY = ("addons", "podVswitchIds")
# Same schema: every ForceNew attribute, so a change (or a different value read back) replaces the whole cluster.
CLUSTER_FORCE_NEW = ("podCidr", "serviceCidr", "nodeCidrMask", "profile", "proxyMode", "ipStack", "clusterDomain",
                     "serviceAccountIssuer", "apiAudiences", "autoMode")
# TF website/docs/r/cs_managed_kubernetes.html.markdown, NOTE under `ip_stack`: Terway needs `pod_vswitch_ids` and
# the `terway-eniip` add-on; Flannel needs `pod_cidr` and the `flannel` add-on.
NETWORK_PLUGIN_INPUT = {"flannel": "podCidr", "terway-eniip": "podVswitchIds"}


# ---------------------------------------------------------------------------------------------- provider schema
MISSING = object()


KEPT = "kept"
"""The provider's Read never sets the attribute: the state keeps the value the configuration gave it."""
READ = "read"
"""The provider's Read sets the attribute from what the API reports (``AckAccount.read_back`` models the value)."""


@dataclass(frozen=True)
class Attr:
    """One attribute of a TF schema, as far as a diff is concerned (terraform-plugin-sdk helper/schema)."""
    computed: bool = False
    """Optional + Computed: left out of the inputs, the value in the state stands (no diff)."""
    force_new: bool = False
    default: Any = MISSING
    """Left out of the inputs, the attribute is planned at this value."""
    block: Optional[dict] = None
    """A nested block of at most one item (TypeList, MaxItems 1, of a Resource), which the bridge presents as one
    object (pulumi-terraform-bridge flattens MaxItems-1 lists): its own attributes."""
    read: str = READ
    """Whether the provider's Read sets it (``READ``) or leaves the configured value in the state (``KEPT``)."""


def _schema(**attrs: Attr) -> dict[str, Attr]:
    return attrs


AUTOSCALING_CONFIG = "alicloud:cs/autoscalingConfig:AutoscalingConfig"

# Every attribute the package sets, and every one the provider's Read writes that the package relies on; each line
# is the TF schema of the attribute and whether the Read sets it (the `d.Set` calls of the resource's Read). An
# input the stack sends that is not listed here is not modelled: `AckAccount.read_back` refuses it, so a new
# field fails these tests until its schema and Read are written down.
SCHEMAS: dict[str, dict[str, Attr]] = {
    # TF alicloud/resource_alicloud_cs_managed_kubernetes.go, resourceAlicloudCSManagedKubernetes; Read:
    # resourceAlicloudCSManagedKubernetesRead (addons, pod_vswitch_ids, new_nat_gateway and slb_internet_enabled
    # are not set by it: create-only)
    CLUSTER: _schema(
        name=Attr(computed=True), clusterSpec=Attr(computed=True), version=Attr(computed=True),
        vswitchIds=Attr(computed=True), serviceCidr=Attr(force_new=True), podCidr=Attr(force_new=True),
        nodeCidrMask=Attr(force_new=True, default=24), proxyMode=Attr(force_new=True, default="ipvs"),
        ipStack=Attr(computed=True, force_new=True), profile=Attr(computed=True, force_new=True),
        clusterDomain=Attr(force_new=True, default="cluster.local"), newNatGateway=Attr(default=True, read=KEPT),
        slbInternetEnabled=Attr(default=True, read=KEPT), deletionProtection=Attr(computed=True), timezone=Attr(),
        tags=Attr(), addons=Attr(read=KEPT), podVswitchIds=Attr(read=KEPT), resourceGroupId=Attr(computed=True),
        securityGroupId=Attr(computed=True)),
    # TF alicloud/resource_alicloud_cs_kubernetes_node_pool.go (update_nodes is not set by Read)
    NODE_POOL: _schema(
        clusterId=Attr(force_new=True), nodePoolName=Attr(computed=True), instanceTypes=Attr(),
        imageType=Attr(computed=True), systemDiskCategory=Attr(computed=True), systemDiskSize=Attr(),
        dataDisks=Attr(), labels=Attr(), taints=Attr(), updateNodes=Attr(read=KEPT),
        installCloudMonitor=Attr(default=True), desiredSize=Attr(), keyName=Attr(), vswitchIds=Attr(),
        multiAzPolicy=Attr(computed=True),
        management=Attr(computed=True, block=_schema(
            enable=Attr(), autoRepair=Attr(), autoUpgrade=Attr(), autoVulFix=Attr(), maxUnavailable=Attr(),
            surge=Attr(), surgePercentage=Attr(), autoRepairPolicy=Attr(), autoUpgradePolicy=Attr(),
            autoVulFixPolicy=Attr())),
        scalingConfig=Attr(computed=True, block=_schema(
            enable=Attr(default=True), minSize=Attr(), maxSize=Attr(), type=Attr(), eipBandwidth=Attr(),
            eipInternetChargeType=Attr(), isBondEip=Attr()))),
    # TF alicloud/resource_alicloud_cs_kubernetes_addon.go
    ADDON: _schema(clusterId=Attr(force_new=True), name=Attr(force_new=True), version=Attr(computed=True),
                   config=Attr(computed=True), cleanupCloudResources=Attr(read=KEPT)),
    # TF alicloud/resource_alicloud_cs_autoscaling_config.go: Read sets every setting from the autoscaler
    # add-on's config (cool_down_duration from ScaleDownUnneededTime, unneeded_duration from
    # ScaleDownDelayAfterAdd, ...); cluster_id, scaler_type and priorities are not set by it
    AUTOSCALING_CONFIG: _schema(
        clusterId=Attr(force_new=True, read=KEPT), scalerType=Attr(read=KEPT), priorities=Attr(read=KEPT),
        coolDownDuration=Attr(default="10m"), unneededDuration=Attr(default="10m"),
        utilizationThreshold=Attr(default="0.5"), gpuUtilizationThreshold=Attr(default="0.5"),
        scanInterval=Attr(default="30s"), scaleDownEnabled=Attr(default=True), expander=Attr(default="least-waste"),
        skipNodesWithSystemPods=Attr(), skipNodesWithLocalStorage=Attr(), daemonsetEvictionForNodes=Attr(),
        maxGracefulTerminationSec=Attr(), minReplicaCount=Attr(), recycleNodeDeletionEnabled=Attr(),
        scaleUpFromZero=Attr()),
    # TF alicloud/resource_alicloud_vswitch.go, resource_alicloud_vpc.go
    SWITCH: _schema(vpcId=Attr(computed=True, force_new=True), cidrBlock=Attr(computed=True, force_new=True),
                    zoneId=Attr(computed=True, force_new=True), vswitchName=Attr(computed=True)),
    VPC: _schema(cidrBlock=Attr(computed=True), vpcName=Attr(computed=True)),
}

AUTOSCALER_KEYS = {"coolDownDuration": "ScaleDownUnneededTime", "unneededDuration": "ScaleDownDelayAfterAdd",
                   "utilizationThreshold": "ScaleDownUtilizationThreshold",
                   "gpuUtilizationThreshold": "ScaleDownGpuUtilizationThreshold", "scanInterval": "ScanInterval",
                   "scaleDownEnabled": "ScaleDownEnabled", "expander": "Expander",
                   "skipNodesWithSystemPods": "SkipNodesWithSystemPods",
                   "skipNodesWithLocalStorage": "SkipNodesWithLocalStorage",
                   "daemonsetEvictionForNodes": "DaemonsetEvictionForEmptyNodes",
                   "maxGracefulTerminationSec": "MaxGracefulTerminationSec", "minReplicaCount": "MinReplicaCount",
                   "recycleNodeDeletionEnabled": "RecycleNodeDeletionEnabled", "scaleUpFromZero": "ScaleUpFromZero"}
"""Attribute -> the autoscaler add-on's config key its Read takes it from (resourceAlicloudCSAutoscalingConfigRead)."""
AUTOSCALER_DEFAULTS = {"ScaleDownUnneededTime": "10m", "ScaleDownDelayAfterAdd": "10m",
                       "ScaleDownUtilizationThreshold": "0.5", "ScaleDownGpuUtilizationThreshold": "0.5",
                       "ScanInterval": "30s", "ScaleDownEnabled": True, "Expander": "least-waste",
                       "ScaleUpFromZero": True, "MaxGracefulTerminationSec": 14400}
"""What the add-on holds for a setting no request sent (the SDK docstring's defaults)."""


def cluster_create_request(inputs: dict) -> dict:
    """The CreateCluster fields the provider's create sends for the cluster's endpoint and kube-proxy (TF
    resource_alicloud_cs_managed_kubernetes.go, resourceAlicloudCSManagedKubernetesCreate): each only when
    ``d.GetOk`` finds the attribute, and GetOk reports a zero value (false, "") as unset; a left-out attribute
    with a schema Default is planned at it (``slb_internet_enabled`` true, ``proxy_mode`` "ipvs")."""
    schema = SCHEMAS[CLUSTER]
    out = {}
    for attr, field in (("slbInternetEnabled", "endpoint_public_access"), ("proxyMode", "proxy_mode")):
        value = inputs.get(attr, schema[attr].default)
        if not _is_zero(value):
            out[field] = value
    return out


class UnmodelledInput(AssertionError):
    """An input the stack sends whose schema and Read this model does not know."""


def _is_zero(value: Any) -> bool:
    """helper/schema stores an unset primitive as its zero value and compares it so: "", 0, false and an empty
    list or map in the state equal an attribute left out of the configuration."""
    return value is MISSING or value is None or value in ("", 0, False) or value == [] or value == {}


@dataclass(frozen=True)
class Change:
    urn: str
    attribute: str
    old: Any
    new: Any
    replace: bool

    def __str__(self) -> str:
        verb = "REPLACE" if self.replace else "update"
        return f"{verb} {self.urn.rsplit('::', 1)[-1]}.{self.attribute}: {self.old!r} -> {self.new!r}"


def attribute_diff(schema: dict[str, Attr], inputs: dict, state: dict, ignore: tuple = ()) -> list[tuple]:
    """(attribute, old, new, force_new) of every attribute whose planned value differs from the state.

    The engine first puts the old inputs' value in place of an ignored attribute (pulumi/pulumi
    pkg/resource/deploy/step_generator.go, processIgnoreChanges) and the bridge leaves ignored paths out of the
    diff, so an ignored attribute never differs. An attribute left out of the inputs is planned at its default;
    one that is Computed keeps the state's value; a plain Optional one is planned empty, which equals a zero
    value in the state (helper/schema diffString)."""
    out = []
    for name in sorted(set(schema) | set(inputs)):
        if name in ignore:
            continue
        nested = tuple(i.split(".", 1)[1] for i in ignore if i.startswith(name + "."))
        attr = schema.get(name, Attr())
        new, old = inputs.get(name, MISSING), state.get(name, MISSING)
        if new is MISSING:
            if attr.computed:
                continue
            if attr.default is not MISSING:
                new = attr.default
        if attr.block is not None and isinstance(new, dict) and isinstance(old, dict):
            for sub, o, n, fn in attribute_diff(attr.block, new, old, nested):
                out.append((f"{name}.{sub}", o, n, attr.force_new or fn))
            continue
        if _is_zero(new) and _is_zero(old):
            continue
        if new != old:
            out.append((name, None if old is MISSING else old, None if new is MISSING else new, attr.force_new))
    return out


# ---------------------------------------------------------------------------------------------- what ACK does
ALIYUN_SUFFIX = "-aliyun.1"


@dataclass
class AckWorld:
    """What the ACK API answers that the program does not decide: the values the provider's Read writes into the
    state at the end of every create and update (pulumi up stores what Read returned, without a refresh).

    Each field is either a documented behaviour or a value no document states, in which case the default is one
    possible answer and the tests run the others too (the program must not depend on it)."""
    vswitch_order: str = "sorted"
    """Order ACK returns a cluster's or pool's vSwitch ids in (DescribeClusterDetail `vswitch_ids`,
    DescribeClusterNodePoolDetail `scaling_group.vswitch_ids`): not documented; "sorted" or "as-sent"."""
    terway_node_cidr_mask: int = 26
    """NodeCidrMask a Terway cluster reports (Terway gives pods VPC addresses; the mask means nothing there): not
    documented."""
    terway_container_cidr: str = ""
    """ContainerCidr a Terway cluster reports: not documented."""
    timezone: str = "Asia/Shanghai"
    """Timezone DescribeClusterDetail reports for a cluster created without one: not documented."""
    upgraded_to: dict = field(default_factory=dict)
    """Cluster name -> the version ACK runs after an upgrade outside the stack (console, auto upgrade)."""
    addon_defaults: dict = field(default_factory=lambda: {"arms-prometheus": {"enableGpuMonitor": True}})
    """Config keys ACK adds to an add-on's stored config on install: not documented per add-on."""
    addons_before: dict = field(default_factory=dict)
    """Add-on name -> the config it was installed with before the stack existed (an adopted cluster)."""
    node_autoscaler: Optional[str] = "cluster-autoscaler"
    """The node autoscaler add-on an adopted cluster runs (None: node autoscaling is off there)."""
    fixed_pool_scaling: dict = field(default_factory=lambda: {"minSize": 0, "maxSize": 0, "type": "cpu"})
    """min/max instances and type ACK reports for a pool that does not autoscale: not documented."""
    cms_default: bool = True
    """Whether ACK installs the CloudMonitor agent when the request does not say (the provider sends cms_enabled
    only when true): the provider's schema Default is true."""
    resource_group_id: str = "rg-default"
    """The account's default resource group, which a cluster created without one is put in."""
    pool_nodes: dict = field(default_factory=dict)
    """Node pool name -> nodes the autoscaler runs now (DescribeClusterNodePoolDetail returns
    `scaling_group.desired_size` for it; TF Read sets `desired_size` whenever the API returns one)."""

    def created_version(self, requested: str) -> str:
        """ACK creates a cluster at a full version: one given without "-aliyun.N" comes back with it (ACK
        versions all carry it: DescribeKubernetesVersionMetadata)."""
        return requested if "-aliyun." in requested else requested + ALIYUN_SUFFIX

    def order(self, ids: list) -> list:
        return sorted(ids) if self.vswitch_order == "sorted" else list(ids)


def go_json(value: Any) -> str:
    """Go's json.Marshal of a decoded JSON object: keys sorted, no spaces, <, > and & escaped (encoding/json)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def addon_config_read(local: Optional[str], remote: dict) -> Optional[str]:
    """TF resourceAlicloudCSKubernetesAddonRead: the state's config keys, with the values ACK stores
    (mergeConfigValues(local, remote): keys of both, remote values), json.Marshal-ed; "{}" is not written back."""
    local_map = json.loads(local or "{}")

    def merge(old: dict, new: dict) -> dict:
        out = {}
        for key, value in new.items():
            if key in old:
                out[key] = merge(old[key], value) if isinstance(old[key], dict) and isinstance(value, dict) else value
        return out

    merged = go_json(merge(local_map, remote))
    return local if merged == "{}" else merged


def _is_subset(local: dict, remote: dict) -> bool:
    """TF isSubset (resource_alicloud_cs_kubernetes_addon.go): every key of ours with an equal value there."""
    for key, value in local.items():
        if key not in remote:
            return False
        if isinstance(value, dict) and isinstance(remote[key], dict):
            if not _is_subset(value, remote[key]):
                return False
        elif value != remote[key]:
            return False
    return True


class AckAccount:
    """One account's ACK as the provider sees it across several `pulumi up`: the clusters and add-ons created,
    what the provider's Read writes back, and the lookups the program makes on the next run."""

    def __init__(self, world: Optional[AckWorld] = None):
        self.world = world or AckWorld()
        self.clusters: dict[str, dict] = {}
        """Cluster name -> {id, version, tags}."""
        self.addons: dict[tuple[str, str], dict] = {}
        """(cluster id, add-on) -> config ACK stores."""
        self.addon_writes: list[tuple[str, str, dict]] = []
        """(cluster id, add-on, config sent) of every install or config update the provider made."""
        for name, config in self.world.addons_before.items():
            self.addons[(ADOPTED_CLUSTER, name)] = dict(config)
        if self.world.node_autoscaler and (ADOPTED_CLUSTER, self.world.node_autoscaler) not in self.addons:
            self.addons[(ADOPTED_CLUSTER, self.world.node_autoscaler)] = {}

    # -------------------------------------------------------------- Read, as the provider writes it back
    def read_back(self, record, inputs: dict) -> dict:
        """The state outputs after the provider created or updated ``record`` with ``inputs``: the attributes the
        Read leaves alone keep what was sent, the ones it sets hold what the API reports (``_api_answer``). An
        input outside the resource's schema is refused (:class:`UnmodelledInput`)."""
        schema = SCHEMAS[record.type]
        unknown = sorted(set(inputs) - set(schema))
        if unknown:
            raise UnmodelledInput(f"{record.type} input(s) {', '.join(unknown)} of {record.name}: not in the "
                                  "model's schema; add each with its TF schema and what the provider's Read writes")
        answer = self._api_answer(record, inputs)
        state = {}
        for name, attr in schema.items():
            if attr.read == KEPT:
                if name in inputs:
                    state[name] = inputs[name]
                continue
            if name not in answer:
                if name in inputs:
                    raise UnmodelledInput(f"{record.type}.{name} of {record.name}: the Read sets it, but the "
                                          "model does not say what the API reports for it")
                continue
            state[name] = answer[name]
        return state

    def _api_answer(self, record, inputs: dict) -> dict:
        """What the API reports for the attributes the Read sets, after a create or update with ``inputs``: what
        was sent, except where ACK answers otherwise (documented, or an undocumented answer of the world)."""
        w = self.world
        sent = {k: v for k, v in inputs.items() if SCHEMAS[record.type].get(k, Attr()).read == READ}
        if record.type == CLUSTER:
            name = inputs["name"]
            created = self.clusters.setdefault(name, {"id": f"c-offline-{record.name}",
                                                      "version": w.created_version(inputs.get("version") or "")})
            created["tags"] = dict(inputs.get("tags") or {})
            created["version"] = w.upgraded_to.get(name, created["version"])
            terway = bool(inputs.get("podVswitchIds"))
            return {**sent,
                    "version": created["version"], "vswitchIds": w.order(inputs.get("vswitchIds") or []),
                    "ipStack": "ipv4", "profile": "Default",
                    "clusterDomain": inputs.get("clusterDomain", "cluster.local"),
                    "proxyMode": inputs.get("proxyMode", "ipvs"), "timezone": inputs.get("timezone") or w.timezone,
                    "nodeCidrMask": w.terway_node_cidr_mask if terway else inputs.get("nodeCidrMask", 24),
                    "podCidr": w.terway_container_cidr if terway else inputs.get("podCidr"),
                    "deletionProtection": bool(inputs.get("deletionProtection")),
                    "tags": dict(inputs.get("tags") or {}), "resourceGroupId": w.resource_group_id,
                    "securityGroupId": f"sg-{record.name}"}
        if record.type == NODE_POOL:
            scaling = inputs.get("scalingConfig")
            autoscaled = bool(scaling and scaling.get("enable", True))
            given = scaling or {"enable": False}
            # ACK answers auto_scaling for every pool (TF Read sets scaling_config from it when non-empty); a pool
            # that does not autoscale reports what the world says (not documented)
            reported = ({"minSize": given.get("minSize", 0), "maxSize": given.get("maxSize", 0),
                         "type": given.get("type", "cpu")} if autoscaled else dict(w.fixed_pool_scaling))
            nodes = (w.pool_nodes.get(inputs["nodePoolName"], given.get("minSize", 0)) if autoscaled
                     else int(inputs.get("desiredSize") or 0))
            management = inputs.get("management") or {}
            return {**sent,
                    "scalingConfig": {"enable": autoscaled, **reported, "eipBandwidth": 0,
                                      "eipInternetChargeType": "", "isBondEip": False},
                    "desiredSize": str(nodes), "vswitchIds": w.order(inputs.get("vswitchIds") or []),
                    # cms_enabled: the provider sends it only when true (GetOk); ACK's default is on
                    "installCloudMonitor": bool(inputs.get("installCloudMonitor", True)) or w.cms_default,
                    "management": {"enable": bool(management.get("enable")),
                                   "autoRepair": bool(management.get("autoRepair")), "autoUpgrade": False,
                                   "autoVulFix": False, "maxUnavailable": management.get("maxUnavailable", 0),
                                   "surge": 0, "surgePercentage": 0, "autoRepairPolicy": None,
                                   "autoUpgradePolicy": None, "autoVulFixPolicy": None},
                    "multiAzPolicy": inputs.get("multiAzPolicy") or "PRIORITY"}
        if record.type == ADDON:
            key = (inputs["clusterId"], inputs["name"])
            local = json.loads(inputs.get("config") or "{}")
            if key not in self.addons:
                self.addons[key] = {**w.addon_defaults.get(inputs["name"], {}), **local}
                self.addon_writes.append((key[0], key[1], local))
            elif local and not _is_subset(local, self.addons[key]):
                # TF needUpgrade: updateAddonConfig when the stack's config is not a subset of the live one
                self.addons[key].update(local)
                self.addon_writes.append((key[0], key[1], local))
            return {**sent, "config": addon_config_read(inputs.get("config"), self.addons[key]),
                    "version": inputs.get("version") or "1.0.0"}
        if record.type == AUTOSCALING_CONFIG:
            # CreateAutoscalingConfig receives only what d.GetOk finds (a false bool or a 0 is never sent; the
            # provider always sends scale_down_enabled); the add-on keeps its own value for anything not sent
            scaler = inputs.get("scalerType") or "cluster-autoscaler"
            stored = self.addons.setdefault((inputs["clusterId"], scaler), dict(AUTOSCALER_DEFAULTS))
            for attr, key in AUTOSCALER_KEYS.items():
                value = inputs.get(attr, SCHEMAS[AUTOSCALING_CONFIG][attr].default)
                if attr == "scaleDownEnabled" or not _is_zero(value):
                    stored[key] = value
            return {attr: stored[key] for attr, key in AUTOSCALER_KEYS.items() if key in stored}
        if record.type in (SWITCH, VPC):
            return sent
        raise UnmodelledInput(f"{record.type}: no model of its Read")

    # -------------------------------------------------------------- lookups the program makes
    def mocks(self) -> "AccountMocks":
        return AccountMocks(self)

    def apply(self, records: list, state: Optional[dict] = None) -> dict:
        """`pulumi up` of ``records`` over ``state`` (URN -> outputs): every Alibaba resource that is new or
        differs is created or updated, and its state is what Read writes back. Returns the new state."""
        state = dict(state or {})
        out = {}
        for r in records:
            if r.type not in SCHEMAS:
                continue
            prior = _prior(r, state)
            if prior is None or diff_one(r, prior):
                out[r.urn] = self.read_back(r, r.inputs)
            else:
                out[r.urn] = prior
        return out

    def diff(self, records: list, state: dict) -> list[Change]:
        """What the next `pulumi up` of ``records`` changes on Alibaba resources, given the state the last one
        left: creates, updates and replacements (deleted resources too)."""
        changes = []
        seen = set()
        for r in records:
            if r.type not in SCHEMAS:
                continue
            prior = _prior(r, state)
            if prior is None:
                changes.append(Change(r.urn, "(resource)", None, "create", False))
                continue
            seen.add(_prior_urn(r, state))
            for attribute, old, new, replace in diff_one(r, prior):
                changes.append(Change(r.urn, attribute, old, new, replace))
        for urn in state:
            if urn not in seen and urn not in {r.urn for r in records}:
                changes.append(Change(urn, "(resource)", "exists", None, True))
        return changes


def diff_one(record, state: dict) -> list[tuple]:
    return attribute_diff(SCHEMAS[record.type], record.inputs, state, tuple(record.ignore_changes))


def _prior_urn(record, state: dict) -> Optional[str]:
    if record.urn in state:
        return record.urn
    for parent_urn, typ, name in record.aliases:
        for urn in state:
            if urn.endswith(f"::{name}") and f"{typ}::" in urn:
                return urn
    return None


def _prior(record, state: dict) -> Optional[dict]:
    urn = _prior_urn(record, state)
    return None if urn is None else state[urn]


class AccountMocks(OfflineMocks):
    """The offline mocks, answering the program's ACK lookups from an :class:`AckAccount`."""

    def __init__(self, account: AckAccount):
        super().__init__()
        self.account = account

    def call(self, args):
        if args.token == GET_CLUSTERS:
            self.invokes.append((args.token, dict(args.args)))
            self.invoke_providers.append(args.provider or "")
            name = args.args.get("clusterName")
            found = [{"clusterId": c["id"], "id": c["id"], "clusterName": n, "currentVersion": c["version"],
                      "clusterType": "ManagedKubernetes", "tags": c.get("tags", {})}
                     for n, c in self.account.clusters.items() if name is None or n == name]
            return {"clusters": found, "ids": [c["id"] for c in found]}
        if args.token == GET_ADDONS:
            self.invokes.append((args.token, dict(args.args)))
            self.invoke_providers.append(args.provider or "")
            cluster = args.args.get("clusterId")
            found = [{"name": n, "currentVersion": "1.0.0", "currentConfig": go_json(cfg), "nextVersion": "",
                      "required": False} for (c, n), cfg in self.account.addons.items() if c == cluster]
            return {"clusterId": cluster, "addons": found, "ids": [f"{cluster}:{a['name']}" for a in found]}
        return super().call(args)


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
