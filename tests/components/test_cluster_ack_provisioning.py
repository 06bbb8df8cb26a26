"""ACK provisioning as the real provider and engine apply it (tests/ack_provider.py holds the upstream facts).

Each test replays what a real `pulumi up` does with the registered inputs, not what the mock runtime accepts."""
import datetime as dt

import pytest
from google.protobuf import json_format

from ack_provider import (ADDON, ALICLOUD_PROVIDER, CLUSTER, CLUSTER_FORCE_NEW, NETWORK_PLUGIN_INPUT, NODE_POOL,
                          AckCredentialApi, installed_addons, node_labels_after_update, resource_region)
from gpuplatform.catalogs import ack
from gpuplatform.cli import main
from gpuplatform.components.addons import required_addons
from gpuplatform.components.validation import load
from gpuplatform.records import SECRET_SIG
from gpuplatform.synth import OfflineMocks, stack_config_from_namespace, synthesize
from support import of_type, one, stack_raw, synth


def _arms_off(raw):
    """The stack before it had ARMS: self-hosted monitoring, no workload yet."""
    raw["monitoring"] = {"backend": "self-hosted", "gpuExporter": "dcgm", "adapter": "prometheus-adapter"}
    raw["workloads"] = []
    return raw


# ---------------------------------------------------------------------------------------------- 1. add-ons
def test_new_cluster_is_created_with_flannel_and_the_disk_csi_driver(stack_records):
    cluster = one(stack_records("dev"), CLUSTER)
    names = [a["name"] for a in cluster.inputs["addons"]]
    assert names[:3] == ["flannel", "csi-plugin", "managed-csiprovisioner"]
    assert cluster.inputs["podCidr"] == ack.DEFAULT_POD_CIDR and "podVswitchIds" not in cluster.inputs
    # nothing that can be added later rides on the create-only list
    enabled = {a["name"] for a in cluster.inputs["addons"] if not a.get("disabled")}
    assert all(ack.ADDONS[n].at_creation for n in enabled)


def test_terway_is_a_config_choice_with_pod_vswitches():
    raw = stack_raw("dev")
    raw["cluster"] |= {"networkPlugin": "terway",
                       "podVswitches": [{"zoneId": "cn-hangzhou-k", "cidr": "192.168.64.0/19"},
                                        {"zoneId": "cn-hangzhou-j", "cidr": "192.168.96.0/19"}]}
    records = synth(raw)
    cluster = one(records, CLUSTER)
    plugins = [a for a in cluster.inputs["addons"] if a["name"] in NETWORK_PLUGIN_INPUT]
    assert [a["name"] for a in plugins] == ["terway-eniip"] and "podCidr" not in cluster.inputs
    # created with network policy support, in the spelling the provider's Read stores (Go's json.Marshal)
    assert plugins[0]["config"] == '{"IPVlan":"false","NetworkPolicy":"true"}'
    pod_switches = [r for r in records if r.type == "alicloud:vpc/switch:Switch" and "-pod-vsw-" in r.name]
    assert len(cluster.inputs["podVswitchIds"]) == len(pod_switches) == 2


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_each_new_cluster_has_exactly_one_network_plugin_with_its_address_source(stack_records, stack):
    cluster = one(stack_records(stack), CLUSTER)
    plugins = [a["name"] for a in cluster.inputs["addons"] if a["name"] in NETWORK_PLUGIN_INPUT]
    assert len(plugins) == 1
    assert NETWORK_PLUGIN_INPUT[plugins[0]] in cluster.inputs


def test_an_addon_the_stack_needs_later_is_installed_by_the_next_up():
    """dev first without ARMS, then with it: the provider never sends a changed `addons` list after creation,
    so ARMS must arrive as a KubernetesAddon."""
    first = synth(_arms_off(stack_raw("dev")))
    second_raw = stack_raw("dev")
    second = synth(second_raw)
    needed = set(required_addons(load(second_raw)))
    assert "arms-prometheus" in needed
    assert needed <= installed_addons([first, second])


def test_addons_after_creation_are_kubernetes_addons_others_can_wait_for(stack_records):
    records = stack_records("dev")
    addons = {r.inputs["name"]: r for r in of_type(records, ADDON)}
    assert set(addons) == {"arms-prometheus", "ack-node-problem-detector", "node-lifecycle-controller",
                           "ack-ai-installer"}
    # Go's json.Marshal form, which the provider's Read writes back (tests/components/test_cluster_second_up.py)
    assert addons["arms-prometheus"].inputs["config"] == '{"prometheusMode":"default"}'


def test_replayed_plans_change_no_force_new_cluster_input():
    """Adding monitoring later must not touch an input whose change replaces the cluster."""
    before = one(synth(_arms_off(stack_raw("dev"))), CLUSTER).inputs
    after = one(synth(stack_raw("dev")), CLUSTER).inputs
    assert {k: before.get(k) for k in CLUSTER_FORCE_NEW} == {k: after.get(k) for k in CLUSTER_FORCE_NEW}
    assert before["addons"] == after["addons"]


# ---------------------------------------------------------------------------------------------- 2. region
@pytest.mark.parametrize("stack", ["dev", "staging"])
def test_every_alicloud_resource_and_invoke_goes_to_the_cluster_region(stack):
    raw = stack_raw(stack)
    config = stack_config_from_namespace(raw)
    config["alicloud:region"] = raw["cluster"]["region"]  # the same region: allowed, and still not what is read
    mocks = OfflineMocks()
    records = synthesize(config, mocks=mocks)
    env = {"ALICLOUD_REGION": "us-west-1"}
    alicloud = [r for r in records if r.type.startswith("alicloud:")]
    assert alicloud
    for r in alicloud:
        assert resource_region(r, records, config, env) == raw["cluster"]["region"], r.name
    alicloud_invokes = [p for (token, _), p in zip(mocks.invokes, mocks.invoke_providers)
                        if token.startswith("alicloud:")]
    assert alicloud_invokes
    for ref in alicloud_invokes:
        assert resource_region(ref, records, config, env) == raw["cluster"]["region"]
    assert len(of_type(records, ALICLOUD_PROVIDER)) == 1


@pytest.mark.parametrize("stack", ["dev", "staging"])
def test_a_stack_file_naming_another_region_is_refused_naming_both(stack, tmp_path, capsys):
    """alicloud:region would silently do nothing: the stack's one provider is built from cluster.region."""
    import yaml

    raw = stack_raw(stack)
    path = tmp_path / f"Pulumi.{stack}.yaml"
    path.write_text(yaml.safe_dump({"config": {**stack_config_from_namespace(raw), "alicloud:region": "eu-central-1"}}))
    assert main(["plan", "--config", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"gpu-platform:cluster.region: {raw['cluster']['region']!r}" in err
    assert "alicloud:region 'eu-central-1'" in err and "Traceback" not in err
    assert not (tmp_path / "out" / "plan.json").exists()
    # under the CLI the program reads the same setting from the stack's config and stops the same way
    with pytest.raises(Exception, match="alicloud:region 'eu-central-1'"):
        synthesize({**stack_config_from_namespace(raw), "alicloud:region": "eu-central-1"})


def test_kubeconfig_cluster_has_no_alibaba_provider(stack_records):
    assert not of_type(stack_records("local"), ALICLOUD_PROVIDER)


BAD_CLUSTER = {
    "cluster.vswitches[0].zoneId": ({"vswitches": [{"zoneId": "cn-beijing-a", "cidr": "192.168.0.0/19"}]},
                                    ["'cn-beijing-a'", "'cn-hangzhou'"]),
    "cluster.vswitches[1].cidr": ({"vswitches": [{"zoneId": "cn-hangzhou-k", "cidr": "192.168.0.0/19"},
                                                 {"zoneId": "cn-hangzhou-j", "cidr": "192.168.16.0/20"}]},
                                  ["'192.168.16.0/20'", "overlaps", "cluster.vswitches[0]"]),
    "cluster.vswitches[0].cidr": ({"vswitches": [{"zoneId": "cn-hangzhou-k", "cidr": "10.0.0.0/19"}]},
                                  ["'10.0.0.0/19'", "outside the VPC CIDR '192.168.0.0/16'"]),
    "cluster.serviceCidr": ({"serviceCidr": "192.168.128.0/20"}, ["'192.168.128.0/20'", "VPC CIDR"]),
    "cluster.podCidr": ({"podCidr": "192.168.0.0/17"}, ["'192.168.0.0/17'", "VPC CIDR"]),
    "cluster.name": ({"name": "-gpu platform"}, ["'-gpu platform'", "1 to 63 characters"]),
    "cluster.podVswitches": ({"networkPlugin": "terway"}, ["cn-hangzhou-j", "cn-hangzhou-k", "Terway"]),
    "nodePools[0].sharing.mode": ({"clusterSpec": "ack.standard"}, ["'cgpu'", "ACK Pro", "'ack.standard'"]),
}


@pytest.mark.parametrize("path", sorted(BAD_CLUSTER))
def test_bad_ack_cluster_config_is_rejected_naming_path_and_value(path):
    from test_config_validation import assert_rejected

    change, fragments = BAD_CLUSTER[path]
    assert_rejected("dev", lambda raw: raw["cluster"].update(change), path, fragments)


def test_managed_pool_on_a_basic_cluster_is_rejected():
    from test_config_validation import assert_rejected

    def mutate(raw):
        raw["cluster"]["clusterSpec"] = "ack.standard"
        raw["nodePools"][0] |= {"sharing": {"mode": "exclusive"}, "autoRepair": True}
        raw["workloads"][0]["gpu"] = {"count": 1}
    assert_rejected("dev", mutate, "nodePools[0].autoRepair", ["True", "ACK Pro", "'ack.standard'"])


def test_bad_cluster_config_exits_2_before_anything_is_registered(tmp_path, capsys):
    import yaml

    raw = stack_raw("dev")
    raw["cluster"] |= {"name": "-bad", "serviceCidr": "192.168.0.0/24",
                       "vswitches": [{"zoneId": "cn-shanghai-l", "cidr": "10.1.0.0/24"}]}
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_text(yaml.safe_dump({"config": stack_config_from_namespace(raw)}))
    assert main(["plan", "--config", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    for fragment in ["gpu-platform:cluster.name: '-bad'", "gpu-platform:cluster.serviceCidr: '192.168.0.0/24'",
                     "gpu-platform:cluster.vswitches[0].zoneId: 'cn-shanghai-l'",
                     "gpu-platform:cluster.vswitches[0].cidr: '10.1.0.0/24'"]:
        assert fragment in err
    assert "Traceback" not in err and not (tmp_path / "out" / "plan.json").exists()


# ---------------------------------------------------------------------------------------------- 3. kubeconfig
def test_two_consecutive_plans_give_the_kubernetes_provider_identical_inputs():
    api = AckCredentialApi(now=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc))
    config = stack_config_from_namespace(stack_raw("dev"))
    runs = [one(synthesize(config, mocks=api), "pulumi:providers:kubernetes").inputs for _ in range(2)]
    assert runs[0] == runs[1]


def test_the_kubeconfig_in_state_outlives_destroy_and_refresh_and_stays_secret():
    now = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    api = AckCredentialApi(now=now)
    records = synthesize(stack_config_from_namespace(stack_raw("dev")), mocks=api)
    provider = one(records, "pulumi:providers:kubernetes")
    kubeconfig = provider.inputs["kubeconfig"]
    assert kubeconfig in provider.secret_strings
    # destroy/refresh use the provider inputs stored in state (pulumi/pulumi#4981): a month later they must work
    assert api.expiry[kubeconfig] - now > dt.timedelta(days=365)


# ---------------------------------------------------------------------------------------------- 9. node pools
def test_a_sharing_mode_change_reaches_the_running_nodes():
    before_raw = stack_raw("dev")
    after_raw = stack_raw("dev")
    after_raw["nodePools"][0]["sharing"]["policy"] = "core_mem"
    after_raw["workloads"][0]["gpu"]["corePercent"] = 30
    before = one(synth(before_raw), NODE_POOL, "gpu-t4-cgpu-pool").inputs
    after = one(synth(after_raw), NODE_POOL, "gpu-t4-cgpu-pool").inputs
    running = {label["key"]: label.get("value", "") for label in before["labels"]}
    labels = node_labels_after_update(before, after, running)
    assert labels["ack.node.gpu.schedule"] == "core_mem"


def test_managed_pools_only_on_pro_and_the_auto_repair_addons_only_for_them():
    raw = stack_raw("dev")
    raw["cluster"]["clusterSpec"] = "ack.standard"
    raw["nodePools"][0]["sharing"] = {"mode": "exclusive"}
    raw["workloads"][0]["gpu"] = {"count": 1}
    raw["workloads"][0]["autoscaling"]["maxReplicas"] = 3
    records = synth(raw)
    assert "management" not in one(records, NODE_POOL, "gpu-t4-cgpu-pool").inputs
    assert not {"ack-node-problem-detector", "node-lifecycle-controller"} & {
        r.inputs["name"] for r in of_type(records, ADDON)}


def test_managed_pool_on_pro(stack_records):
    pool = one(stack_records("staging"), NODE_POOL).inputs
    assert pool["management"]["enable"] is True and pool["updateNodes"] is True


# ---------------------------------------------------------------------------------------------- 10. secrets
def _is_secret(value: dict) -> bool:
    return isinstance(value, dict) and value.get(SECRET_SIG[0]) == SECRET_SIG[1]


@pytest.mark.parametrize("stack", ["dev", "staging"])
def test_the_arms_url_is_registered_and_exported_only_as_a_secret(stack):
    mocks = OfflineMocks()
    records = synthesize(stack_config_from_namespace(stack_raw(stack)), mocks=mocks)
    outputs = {urn: json_format.MessageToDict(struct) for urn, struct in mocks.outputs.items()}
    # the program exports GpuPlatform.prometheus_url, the same Output these components register
    with_url = {urn: o["prometheus_url"] for urn, o in outputs.items() if "prometheus_url" in o}
    assert any(urn.endswith("GpuPlatform::gpu") for urn in with_url)
    for urn, value in with_url.items():
        assert _is_secret(value), urn
    url = "arms.aliyuncs.com"
    for r in records:
        plain = [s for s in _strings(r.inputs) if url in s and s not in r.secret_strings]
        assert not plain, f"{r.name} registers the ARMS URL in plain text"


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


# ---------------------------------------------------------------------------------------------- docs/ack.md
def test_every_unverified_behaviour_has_a_verify_check_and_a_first_deploy_line():
    import re

    from support import REPO

    doc = (REPO / "docs" / "ack.md").read_text()
    guide = (REPO / "docs" / "deploy.md").read_text()
    first_deploy = guide[guide.index("### First deploy on ACK"):guide.index("### After `pulumi up`: verify")]
    verify_source = "\n".join(p.read_text() for p in sorted((REPO / "gpuplatform" / "verify").glob("*.py")))
    rows = [line for line in doc.splitlines() if line.startswith("|") and "**unverified**" in line]
    assert rows
    for row in rows:
        checks = re.findall(r"verify ((?:`[a-z-]+\.[a-z-]+`(?:, )?)+)", row)
        ids = [c for group in checks for c in re.findall(r"`([a-z-]+\.[a-z-]+)`", group)]
        assert ids, f"no verify check named in: {row}"
        for check in ids:
            assert f'"{check}"' in verify_source, f"{check} is not a verify check"
            assert check in first_deploy, f"{check} is not in docs/deploy.md's first deploy section"
    lines = doc.splitlines()
    for row, following in zip(lines, lines[1:] + [""]):
        header = following.startswith("|---")
        if row.startswith("|") and not row.startswith("|---") and not header:
            assert "verified-by-source" in row or "**unverified**" in row, row


# ---------------------------------------------------------------------------------------------- 3b. ack-ram-tool
def test_ack_ram_tool_credential_keeps_no_client_credential_and_is_stable_even_if_ack_reissues():
    import yaml

    raw = stack_raw("dev")
    raw["cluster"]["credential"] = "ack-ram-tool"
    api = AckCredentialApi(now=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc), reissue_default=True)
    config = stack_config_from_namespace(raw)
    runs = [one(synthesize(config, mocks=api), "pulumi:providers:kubernetes").inputs for _ in range(2)]
    assert api.issued == 2, "the model handed out a new credential on each run"
    assert runs[0] == runs[1]
    kubeconfig = yaml.safe_load(runs[0]["kubeconfig"])
    user = kubeconfig["users"][0]["user"]
    assert set(user) == {"exec"} and user["exec"]["command"] == "ack-ram-tool"
    assert user["exec"]["args"][:4] == ["credential-plugin", "get-credential", "--cluster-id",
                                        "c-offline-gpu-cluster-ack"]
    assert kubeconfig["clusters"][0]["cluster"] == {"server": "https://127.0.0.1:6443"}


def test_default_credential_depends_on_ack_returning_the_same_kubeconfig():
    """The unverified assumption, made visible: were ACK to reissue the default kubeconfig on every call, the
    provider would change on every run (the README's first-deploy preview check catches it)."""
    api = AckCredentialApi(now=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc), reissue_default=True)
    config = stack_config_from_namespace(stack_raw("dev"))
    runs = [one(synthesize(config, mocks=api), "pulumi:providers:kubernetes").inputs for _ in range(2)]
    assert runs[0] != runs[1]


# ---------------------------------------------------------------------------------------------- 3c. private endpoint
@pytest.mark.parametrize("credential", ["ack-kubeconfig", "ack-ram-tool"])
def test_a_cluster_without_a_public_endpoint_is_reached_on_its_intranet_endpoint(credential):
    """The credential API is asked for the public endpoint (TF service_alicloud_cs.go: PrivateIpAddress=false); a
    cluster created without one is reached on the intranet endpoint the cluster reports (connections), with the
    same credential."""
    import yaml

    raw = stack_raw("dev")
    raw["cluster"] |= {"publicApiEndpoint": False, "credential": credential}
    records = synth(raw)
    assert one(records, CLUSTER).inputs["slbInternetEnabled"] is False
    kubeconfig = yaml.safe_load(one(records, "pulumi:providers:kubernetes").inputs["kubeconfig"])
    assert [c["cluster"]["server"] for c in kubeconfig["clusters"]] == ["https://192.168.0.250:6443"]
    public = yaml.safe_load(one(synth(stack_raw("dev")), "pulumi:providers:kubernetes").inputs["kubeconfig"])
    assert public["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:6443"


def test_a_private_cluster_that_acks_default_made_public_fails_the_run():
    """slb_internet_enabled=false never reaches CreateCluster (the provider's create sends EndpointPublicAccess
    only when d.GetOk finds it, and GetOk reports false as unset): the cluster is private only by ACK's own
    default. The program reads what the cluster reports and stops when it has an Internet endpoint."""
    from gpuplatform.components.cluster import _private_intranet_endpoint as private_endpoint_check

    assert private_endpoint_check([{"api_server_intranet": "https://192.168.0.250:6443"}]) == \
        "https://192.168.0.250:6443"
    with pytest.raises(Exception) as caught:
        private_endpoint_check([{"api_server_intranet": "https://192.168.0.250:6443",
                                 "api_server_internet": "https://47.1.2.3:6443"}])
    message = str(caught.value)
    assert "publicApiEndpoint: false" in message and "https://47.1.2.3:6443" in message
    assert "sends no EndpointPublicAccess" in message and "ACK console" in message


# ---------------------------------------------------------------------------------------------- 1b. creation order
def test_addons_and_releases_wait_for_the_system_pool_and_gpu_pools_for_the_addons(stack_records):
    """ACK's add-on task waits for the add-on's pods (AddonOperationFailed.WaitForAddonReadyTimeout) and a Helm
    release for its own: both need the system pool's nodes first. The system pool is not a managed pool, so it
    needs none of the add-ons."""
    records = stack_records("prod")
    system = one(records, NODE_POOL, "gpu-cluster-system")
    assert "management" not in system.inputs and "gpu-cluster-ack-node-problem-detector" not in system.depends_on
    for addon in of_type(records, ADDON):
        assert "gpu-cluster-system" in addon.depends_on, addon.name
    for release in of_type(records, "kubernetes:helm.sh/v3:Release"):
        assert "gpu-cluster-system" in release.depends_on, release.name
    gpu = one(records, NODE_POOL, "gpu-a100-mig-pool")
    assert {"gpu-cluster-ack-node-problem-detector", "gpu-cluster-node-lifecycle-controller"} <= set(gpu.depends_on)
