"""The second `pulumi up` of an unchanged stack changes nothing on Alibaba Cloud.

`pulumi up` stores, for every bridged resource, what the provider's Read wrote at the end of its create or update
(pulumi-terraform-bridge: Create returns the TF state after the resource's Create, which ends in Read), and the
next run diffs the new inputs against that state, without reading again (tests/ack_provider.py says how, with
its sources). Whatever Read writes back in another form than the program sends (ACK's full version, Go's
compact JSON, a default ACK applies, an order ACK returns) is a change on every later run, and for a ForceNew
attribute a replacement. These tests apply the first plan to a model of the account, let Read write back, and
plan again."""
import dataclasses

import pytest

from ack_provider import (AUTOSCALING_CONFIG, CLUSTER, NODE_POOL, SCHEMAS, AckAccount, AckWorld, KEPT,
                          UnmodelledInput, cluster_create_request)
from gpuplatform.synth import stack_config_from_namespace, synthesize
from support import stack_raw

ACK_STACKS = ("dev", "staging", "prod")
WORLDS = {
    "documented": AckWorld(),
    # what no document settles, answered the other way: the program must not depend on either answer
    "other-answers": AckWorld(vswitch_order="as-sent", timezone="", terway_node_cidr_mask=24,
                              addon_defaults={}, pool_nodes={"t4-cgpu": 3, "a10": 4, "a100-mig": 2},
                              fixed_pool_scaling={"minSize": 2, "maxSize": 2, "type": ""}),
}


def two_ups(raw: dict, world: AckWorld):
    account = AckAccount(world)
    config = stack_config_from_namespace(raw)
    first = synthesize(config, mocks=account.mocks())
    state = account.apply(first)
    second = synthesize(config, mocks=account.mocks())
    return account, state, second


@pytest.mark.parametrize("world", sorted(WORLDS))
@pytest.mark.parametrize("stack", ACK_STACKS)
def test_the_second_up_of_an_unchanged_stack_changes_nothing(stack, world):
    account, state, second = two_ups(stack_raw(stack), dataclasses.replace(WORLDS[world]))
    changes = account.diff(second, state)
    assert not changes, "\n".join(map(str, changes))


# ---------------------------------------------------------------------------------------------- cluster version
def _cluster_name(state: dict) -> str:
    return next(s["name"] for urn, s in state.items() if CLUSTER in urn)


def _refresh(account: AckAccount, state: dict) -> dict:
    """`pulumi refresh` (or `up --refresh`): the provider's Read again, so the state holds ACK's values now."""
    out = dict(state)
    for urn, outputs in state.items():
        if CLUSTER in urn:
            out[urn] = {**outputs, "version": account.clusters[outputs["name"]]["version"]}
    return out


@pytest.mark.parametrize("refreshed", [False, True])
def test_an_upgrade_outside_the_stack_is_kept_not_downgraded(refreshed):
    """ACK (console, auto or end-of-life upgrade) moved the cluster to a newer patch: the provider's Update calls
    UpgradeCluster whenever `version` differs from the state, so sending the stack's older version would be a
    downgrade ACK refuses, on every run. The program reads the running version and keeps it."""
    raw = stack_raw("dev")
    account, state, _ = two_ups(raw, AckWorld())
    account.clusters[_cluster_name(state)]["version"] = "1.35.3-aliyun.1"
    if refreshed:
        state = _refresh(account, state)
    mocks = account.mocks()
    again = synthesize(stack_config_from_namespace(raw), mocks=mocks)
    changes = account.diff(again, state)
    assert not [c for c in changes if c.attribute == "version"], "\n".join(map(str, changes))
    cluster = next(r for r in again if r.type == CLUSTER)
    assert "version" in cluster.ignore_changes
    # the lookup names the stack's own cluster: its name and the stack's tag
    assert any(token.endswith("getClusters") and args.get("clusterName") == _cluster_name(state)
               for token, args in mocks.invokes)


def test_a_newer_version_in_the_stack_upgrades_the_cluster():
    raw = stack_raw("dev")
    account, state, _ = two_ups(raw, AckWorld())
    raw["cluster"]["kubernetesVersion"] = "1.35.3-aliyun.1"
    again = synthesize(stack_config_from_namespace(raw), mocks=account.mocks())
    changes = account.diff(again, state)
    assert [(c.attribute, c.old, c.new, c.replace) for c in changes] == [
        ("version", "1.35.2-aliyun.1", "1.35.3-aliyun.1", False)]


def test_a_cluster_upgraded_to_another_minor_stops_the_run_naming_both_versions():
    """The stack's charts are pinned for the minor it states: running on, it would install the wrong pins."""
    raw = stack_raw("dev")
    account, state, _ = two_ups(raw, AckWorld())
    account.clusters[_cluster_name(state)]["version"] = "1.36.1-aliyun.1"
    with pytest.raises(Exception) as caught:
        synthesize(stack_config_from_namespace(raw), mocks=account.mocks())
    message = str(caught.value)
    assert "'1.35.2-aliyun.1'" in message and "runs '1.36.1-aliyun.1'" in message
    assert "set kubernetesVersion to '1.36.1-aliyun.1'" in message


def test_another_stacks_cluster_of_the_same_name_is_not_taken_for_ours():
    """The lookup matches the stack's tag, not the name alone: a cluster another stack (or a person) created under
    the same name does not set this stack's version floor."""
    raw = stack_raw("dev")
    account = AckAccount(AckWorld())
    account.clusters["gpu-platform-offline"] = {"id": "c-someone-else", "version": "1.36.1-aliyun.1",
                                                "tags": {"owner": "data-team"}}
    first = synthesize(stack_config_from_namespace(raw), mocks=account.mocks())
    cluster = next(r for r in first if r.type == CLUSTER)
    assert "version" not in cluster.ignore_changes and cluster.inputs["version"] == "1.35.2-aliyun.1"


# ---------------------------------------------------------------------------------------------- node pools
def test_a_pool_made_fixed_stops_autoscaling():
    """scaling_config is Optional + Computed: left out, the state's enable: true would stand and desired_size would
    go to an autoscaled pool. The fixed pool sends enable: false."""
    raw = stack_raw("staging")
    account, state, _ = two_ups(raw, AckWorld())
    raw["nodePools"][0].update({"autoscaling": False, "desiredNodes": 2})
    raw["workloads"][0]["autoscaling"]["maxReplicas"] = 2
    again = synthesize(stack_config_from_namespace(raw), mocks=account.mocks())
    changes = {c.attribute: (c.old, c.new) for c in account.diff(again, state) if NODE_POOL in c.urn}
    assert changes["scalingConfig.enable"] == (True, False)
    assert changes["desiredSize"] == ("1", "2")


def test_editing_the_vswitch_list_touches_no_other_vswitch():
    """vSwitches are named by zone and CIDR (both ForceNew), not by list position: removing the first one must not
    replace the one that moves up."""
    raw = stack_raw("prod")
    account, state, _ = two_ups(raw, AckWorld())
    raw["cluster"]["vswitches"] = raw["cluster"]["vswitches"][1:]
    again = synthesize(stack_config_from_namespace(raw), mocks=account.mocks())
    replaced = [c for c in account.diff(again, state) if "vpc/switch" in c.urn and c.attribute != "(resource)"]
    assert not replaced, "\n".join(map(str, replaced))
    kept = [r for r in again if "vpc/switch" in r.type]
    assert [r.inputs["cidrBlock"] for r in kept] == ["192.168.32.0/19"]


# ---------------------------------------------------------------------------------------------- adopted add-ons
def test_an_addon_the_adopted_cluster_already_runs_is_adopted_as_it_is():
    """ARMS installed before the stack, in its own configuration: the stack sends no config (so the provider has
    nothing to rewrite) and later runs change nothing."""
    before = {"arms-prometheus": {"prometheusMode": "agent", "enableGpuMonitor": True}}
    account, state, second = two_ups(stack_raw("staging"), AckWorld(addons_before=before))
    arms = next(r for r in second if r.type == "alicloud:cs/kubernetesAddon:KubernetesAddon"
                and r.inputs["name"] == "arms-prometheus")
    assert "config" not in arms.inputs and arms.retain_on_delete
    assert not account.diff(second, state)
    assert not [w for w in account.addon_writes if w[1] == "arms-prometheus"], account.addon_writes


def test_an_installed_addon_the_stack_cannot_use_as_configured_is_refused_not_rewritten():
    """ACK's NGINX add-on with an Internet SLB, on a cluster other teams use: adopting it with the stack's intranet
    config would make the provider rewrite it (its config is not a subset of the live one)."""
    raw = stack_raw("staging")
    raw["workloads"][0]["exposure"]["ingress"] = {"className": "nginx", "host": "bert.inference.example.com",
                                                  "port": "http"}
    world = AckWorld(addons_before={"nginx-ingress-controller": {"IngressSlbNetworkType": "internet"}})
    with pytest.raises(Exception) as caught:
        synthesize(stack_config_from_namespace(raw), mocks=AckAccount(world).mocks())
    message = str(caught.value)
    assert "'nginx-ingress-controller'" in message and "IngressSlbNetworkType='internet'" in message
    assert "'intranet'" in message and "does not rewrite" in message


# ---------------------------------------------------------------------------------------------- the model itself
@pytest.mark.parametrize("stack", ACK_STACKS)
def test_every_input_the_stack_sends_is_in_the_model(stack):
    """The model covers what the stack sends, field by field: each input of each Alibaba resource is in the
    provider's schema as the model writes it down, and is either left alone by the Read or given the value the
    API reports. A field the stack starts sending is not copied back silently (see the next test)."""
    records = synthesize(stack_config_from_namespace(stack_raw(stack)), mocks=AckAccount().mocks())
    for r in records:
        if r.type in SCHEMAS:
            assert set(r.inputs) <= set(SCHEMAS[r.type]), (r.type, sorted(set(r.inputs) - set(SCHEMAS[r.type])))


def test_an_input_the_model_does_not_know_fails_the_test():
    """A node pool that also sent `cpuPolicy` (a real provider field the model does not describe): applying it
    fails, naming the field, instead of copying it back as if ACK reported it unchanged."""
    account = AckAccount(AckWorld())
    records = synthesize(stack_config_from_namespace(stack_raw("dev")), mocks=account.mocks())
    pool = next(r for r in records if r.type == NODE_POOL)
    widened = [dataclasses.replace(r, inputs={**r.inputs, "cpuPolicy": "static"}) if r is pool else r
               for r in records]
    with pytest.raises(UnmodelledInput) as caught:
        account.apply(widened)
    assert "cpuPolicy" in str(caught.value) and NODE_POOL in str(caught.value)


def test_create_only_cluster_inputs_are_the_ones_the_read_never_sets():
    """slb_internet_enabled, new_nat_gateway, addons and pod_vswitch_ids reach ACK in the create call only
    (resource_alicloud_cs_managed_kubernetes.go: its Read sets none of them)."""
    kept = sorted(k for k, a in SCHEMAS[CLUSTER].items() if a.read == KEPT)
    assert kept == ["addons", "newNatGateway", "podVswitchIds", "slbInternetEnabled"]


def test_the_cloud_monitor_agent_is_modelled_at_the_providers_default():
    """install_cloud_monitor: schema Default true, and the provider sends cms_enabled only when true (GetOk), so
    a pool that sent false would read back ACK's true on every run: the stack sends true."""
    assert SCHEMAS[NODE_POOL]["installCloudMonitor"].default is True
    records = synthesize(stack_config_from_namespace(stack_raw("prod")), mocks=AckAccount().mocks())
    assert all(r.inputs["installCloudMonitor"] is True for r in records if r.type == NODE_POOL)


# ---------------------------------------------------------------------------------------------- node autoscaling
def test_node_autoscaling_settings_read_back_unchanged_and_a_change_is_an_update():
    raw = stack_raw("prod")
    account, state, second = two_ups(raw, AckWorld())
    config = next(r for r in second if r.type == AUTOSCALING_CONFIG)
    assert config.inputs["scanInterval"] == "30s" and config.inputs["coolDownDuration"] == "10m"
    raw["cluster"]["nodeAutoscaling"] = {"scanInterval": "15s", "scaleDownUnneededTime": "20m"}
    again = synthesize(stack_config_from_namespace(raw), mocks=account.mocks())
    changes = sorted((c.attribute, c.old, c.new, c.replace) for c in account.diff(again, state)
                     if AUTOSCALING_CONFIG in c.urn)
    assert changes == [("coolDownDuration", "10m", "20m", False), ("scanInterval", "30s", "15s", False)]


def test_a_fixed_pool_reads_back_whatever_acks_scaling_answer_is():
    """A fixed pool sends enable: false only; whatever ACK reports for min/max/type while autoscaling is off is
    not compared (it does nothing then), so no undocumented answer shows a change."""
    raw = stack_raw("prod")
    for world in (AckWorld(), AckWorld(fixed_pool_scaling={"minSize": 0, "maxSize": 10, "type": "gpu"})):
        account, state, second = two_ups(raw, world)
        assert not account.diff(second, state)
    system = next(r for r in second if r.type == NODE_POOL and r.inputs["nodePoolName"] == "system")
    assert system.inputs["scalingConfig"] == {"enable": False}
    assert "scalingConfig.type" in system.ignore_changes


def test_an_existing_cluster_keeps_its_proxy_mode_when_the_default_changes():
    """A cluster created with ipvs (the stack's earlier fixed value) is never replaced for the version's default:
    proxyMode is ForceNew and ignored after creation."""
    raw = stack_raw("dev")
    account, state, _ = two_ups(raw, AckWorld())
    urn = next(u for u in state if CLUSTER in u)
    state[urn]["proxyMode"] = "ipvs"
    again = synthesize(stack_config_from_namespace(raw), mocks=account.mocks())
    cluster = next(r for r in again if r.type == CLUSTER)
    assert cluster.inputs["proxyMode"] == "iptables" and "proxyMode" in cluster.ignore_changes
    assert not [c for c in account.diff(again, state) if c.replace]


def test_flipping_public_api_endpoint_on_an_existing_cluster_is_refused():
    raw = stack_raw("dev")
    account, state, _ = two_ups(raw, AckWorld())
    raw["cluster"]["publicApiEndpoint"] = False
    with pytest.raises(Exception) as caught:
        synthesize(stack_config_from_namespace(raw), mocks=account.mocks())
    message = str(caught.value)
    assert "cluster.publicApiEndpoint" in message and "created with publicApiEndpoint true" in message
    assert "allowed: true" in message


def test_an_adopted_cluster_without_node_autoscaling_refuses_an_autoscaled_pool():
    with pytest.raises(Exception) as caught:
        synthesize(stack_config_from_namespace(stack_raw("staging")),
                   mocks=AckAccount(AckWorld(node_autoscaler=None)).mocks())
    message = str(caught.value)
    assert "node autoscaling is off on the adopted cluster" in message and "autoscaling: false" in message


SDK_ARGS = {CLUSTER: "cs.ManagedKubernetesArgs", NODE_POOL: "cs.NodePoolArgs",
            "alicloud:cs/kubernetesAddon:KubernetesAddon": "cs.KubernetesAddonInitArgs",
            AUTOSCALING_CONFIG: "cs.AutoscalingConfigArgs", "alicloud:vpc/switch:Switch": "vpc.SwitchArgs",
            "alicloud:vpc/network:Network": "vpc.NetworkArgs"}


@pytest.mark.parametrize("token", sorted(SDK_ARGS))
def test_the_models_attributes_are_the_providers(token):
    """Each modelled attribute is an input of the resource in pulumi-alicloud 4.0.0 (its Args class), with its
    nested keys for the blocks: a misspelt or invented attribute cannot stand in for a real one."""
    import inspect
    import re

    import pulumi_alicloud as alicloud

    import importlib

    module, cls = SDK_ARGS[token].split(".")
    # the resource module's own Args (the add-on's is KubernetesAddonInitArgs: cs._inputs.KubernetesAddonArgs is
    # the cluster's `addons` item)
    resource_module = {"ManagedKubernetesArgs": "managed_kubernetes", "NodePoolArgs": "node_pool",
                       "KubernetesAddonInitArgs": "kubernetes_addon", "AutoscalingConfigArgs": "autoscaling_config",
                       "SwitchArgs": "switch", "NetworkArgs": "network"}[cls]
    args = getattr(importlib.import_module(f"pulumi_alicloud.{module}.{resource_module}"), cls)
    params = set(inspect.signature(args.__init__).parameters) - {"__self__", "self"}

    def camel(name: str) -> str:
        return re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)

    assert set(SCHEMAS[token]) <= {camel(p) for p in params}, sorted(set(SCHEMAS[token]) - {camel(p) for p in params})
    blocks = {"scalingConfig": "NodePoolScalingConfigArgs", "management": "NodePoolManagementArgs"}
    for name, attr in SCHEMAS[token].items():
        if attr.block is not None:
            nested = set(inspect.signature(getattr(alicloud.cs, blocks[name]).__init__).parameters)
            assert set(attr.block) <= {camel(p) for p in nested}, (name, sorted(set(attr.block) - {camel(p) for p in nested}))


def test_a_private_clusters_create_call_carries_no_endpoint_setting():
    """What the create call sends: a public cluster asks for the Internet endpoint; a private one sends nothing
    (GetOk drops false), so the program checks what the cluster reports instead of trusting ACK's default
    (components/cluster.py _private_intranet_endpoint). The version's proxy mode is sent explicitly."""
    raw = stack_raw("dev")
    public = next(r for r in synthesize(stack_config_from_namespace(raw), mocks=AckAccount().mocks())
                  if r.type == CLUSTER)
    assert cluster_create_request(public.inputs) == {"endpoint_public_access": True, "proxy_mode": "iptables"}
    raw["cluster"]["publicApiEndpoint"] = False
    private = next(r for r in synthesize(stack_config_from_namespace(raw), mocks=AckAccount().mocks())
                   if r.type == CLUSTER)
    assert private.inputs["slbInternetEnabled"] is False
    assert cluster_create_request(private.inputs) == {"proxy_mode": "iptables"}
