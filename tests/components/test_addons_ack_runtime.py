"""ACK behaviours that depend on what the provider, the engine or a controller does at run time: the ARMS lookup,
adopted add-ons, the ingress controller, await timeouts and MIG (docs/ack.md cites the upstream source of each)."""
import json

import pytest

from gpuplatform import synth as offline
from support import of_type, one, stack_raw, synth

RELEASE = "kubernetes:helm.sh/v3:Release"
ADDON = "alicloud:cs/kubernetesAddon:KubernetesAddon"
GET_PROMETHEUS = "alicloud:arms/getPrometheus:getPrometheus"


def _arms_answer(monkeypatch, answer):
    monkeypatch.setitem(offline.INVOKES, GET_PROMETHEUS, answer)


# ------------------------------------------------------------------------------------------------ ARMS lookup
def test_no_arms_instance_is_a_clear_error_not_an_empty_url(monkeypatch):
    _arms_answer(monkeypatch, lambda a: {"ids": a.args["ids"], "prometheis": []})
    with pytest.raises(Exception) as info:
        synth(stack_raw("staging"))
    message = str(info.value)
    assert "no ARMS Prometheus instance found for cluster 'c0123456789abcdef0123456789abcdef'" in message
    assert "monitoring.prometheusUrl" in message


def test_a_given_prometheus_url_needs_no_arms_instance(monkeypatch):
    _arms_answer(monkeypatch, lambda a: {"ids": a.args["ids"], "prometheis": []})
    raw = stack_raw("staging")
    raw["monitoring"]["prometheusUrl"] = "http://prometheus.example.internal:9090"
    adapter = one(synth(raw), RELEASE, "gpu-monitoring-ack-metrics-adapter")
    prom = adapter.inputs["values"]["AlibabaCloudMetricsAdapter"]["prometheus"]
    assert prom["url"] == "http://prometheus.example.internal:9090"
    assert "prometheusHeader" not in prom


def test_authorization_header_only_with_a_token(monkeypatch):
    def tokenless(a):
        found = offline._arms_prometheus(a)
        found["prometheis"][0]["authToken"] = ""
        return found
    _arms_answer(monkeypatch, tokenless)
    adapter = one(synth(stack_raw("staging")), RELEASE, "gpu-monitoring-ack-metrics-adapter")
    prom = adapter.inputs["values"]["AlibabaCloudMetricsAdapter"]["prometheus"]
    assert prom["url"].startswith("http://offline-intranet.arms.aliyuncs.com:9090/")
    assert "prometheusHeader" not in prom


def test_token_is_sent_as_a_secret_header(stack_records):
    adapter = one(stack_records("staging"), RELEASE, "gpu-monitoring-ack-metrics-adapter")
    prom = adapter.inputs["values"]["AlibabaCloudMetricsAdapter"]["prometheus"]
    assert prom["prometheusHeader"] == {"Authorization": offline.OFFLINE_TOKEN}
    assert offline.OFFLINE_TOKEN in adapter.secret_strings


# ------------------------------------------------------------------------------------------------ adopted add-ons
def test_adopted_cluster_addons_are_retained_on_destroy(stack_records):
    addons = of_type(stack_records("staging"), ADDON)
    assert addons and all(a.retain_on_delete for a in addons)


def test_addons_of_a_created_cluster_go_with_it(stack_records):
    addons = of_type(stack_records("dev"), ADDON)
    assert addons and not any(a.retain_on_delete for a in addons)


# ------------------------------------------------------------------------------------------------ ingress controller
INGRESS = "kubernetes:networking.k8s.io/v1:Ingress"


def test_nginx_ingress_on_ack_installs_the_controller_addon_with_an_intranet_slb(stack_records):
    records = stack_records("prod")
    addon = one(records, ADDON, "gpu-cluster-nginx-ingress-controller")
    assert addon.inputs["name"] == "nginx-ingress-controller"
    assert json.loads(addon.inputs["config"]) == {"IngressSlbNetworkType": "intranet"}
    ingresses = of_type(records, INGRESS)
    assert len(ingresses) == 2  # prod: HTTP and gRPC routes
    for ingress in ingresses:  # the stack runs the controller: wait for the address
        assert "pulumi.com/skipAwait" not in ingress.inputs["metadata"]["annotations"]


def test_external_ingress_controller_is_not_awaited_and_not_installed():
    raw = stack_raw("prod")
    raw["workloads"][0]["exposure"]["ingress"]["controller"] = "external"
    records = synth(raw)
    assert not [a for a in of_type(records, ADDON) if a.inputs["name"] == "nginx-ingress-controller"]
    ingresses = of_type(records, INGRESS)
    assert ingresses and all(i.inputs["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true" for i in ingresses)


@pytest.mark.parametrize("change, path, words", [
    ({"className": "alb", "controller": "addon"}, "workloads[0].exposure.ingress.controller", "AlbConfig"),
])
def test_ingress_controller_the_stack_cannot_install_is_rejected(change, path, words):
    from gpuplatform.components.errors import ConfigError
    from gpuplatform.components.validation import load

    raw = stack_raw("prod")
    raw["workloads"][0]["exposure"]["ingress"].update(change)
    with pytest.raises(ConfigError) as info:
        load(raw)
    assert any(i.path == path and words in i.message for i in info.value.issues), info.value.render()


def test_addon_controller_needs_an_ack_cluster():
    from gpuplatform.components.errors import ConfigError
    from gpuplatform.components.validation import load

    raw = stack_raw("local")
    raw["workloads"][0]["exposure"] = {"ingress": {"host": "a.example.com", "port": raw["workloads"][0]["ports"][0]["name"],
                                                   "controller": "addon"}}
    with pytest.raises(ConfigError) as info:
        load(raw)
    assert any(i.path == "workloads[0].exposure.ingress.controller" and "needs an ACK cluster" in i.message
               for i in info.value.issues), info.value.render()


def test_ingress_on_a_kubeconfig_cluster_defaults_to_an_external_controller():
    raw = stack_raw("local")
    raw["workloads"][0]["exposure"] = {"ingress": {"host": "a.example.com", "port": raw["workloads"][0]["ports"][0]["name"]}}
    annotations = one(synth(raw), INGRESS, "gpu-echo-gpu-ingress").inputs["metadata"]["annotations"]
    assert annotations["pulumi.com/skipAwait"] == "true"


# ------------------------------------------------------------------------------------------------ await timeouts
DEPLOYMENT = "kubernetes:apps/v1:Deployment"


def test_gpu_deployment_timeout_covers_node_provisioning_and_every_startup(stack_records):
    from gpuplatform.catalogs import timeouts

    deployment = one(stack_records("prod"), DEPLOYMENT)
    seconds = int(deployment.inputs["metadata"]["annotations"]["pulumi.com/timeoutSeconds"])
    startup = 900  # prod's flower: startupTimeoutSeconds
    max_replicas = 7
    # bare-metal A100 nodes scaled from zero, a multi-GB image pull, then one startup per replica rolled
    assert seconds == timeouts.NODE_PROVISIONING_SECONDS["bare-metal"] + timeouts.IMAGE_PULL_SECONDS \
        + max_replicas * startup
    assert seconds > timeouts.PULUMI_DEPLOYMENT_AWAIT_SECONDS
    probe = deployment.inputs["spec"]["template"]["spec"]["containers"][0]["startupProbe"]
    assert probe["periodSeconds"] * probe["failureThreshold"] == startup


def test_existing_cluster_nodes_need_no_provisioning_budget(stack_records):
    from gpuplatform.catalogs import timeouts

    from gpuplatform.components.workload_manifests import startup_seconds
    from gpuplatform.components.validation import load

    cfg = load(stack_raw("local"))
    for w in cfg.workloads:
        deployment = one(stack_records("local"), DEPLOYMENT, f"gpu-{w.name}-deployment")
        seconds = int(deployment.inputs["metadata"]["annotations"]["pulumi.com/timeoutSeconds"])
        assert seconds == timeouts.IMAGE_PULL_SECONDS + w.autoscaling.max_replicas * startup_seconds(w)


def test_every_helm_release_has_an_explicit_timeout(stack_records):
    from gpuplatform.catalogs.timeouts import HELM_RELEASE_TIMEOUT_SECONDS

    for stack in ("dev", "prod", "local"):
        for release in of_type(stack_records(stack), RELEASE):
            assert release.inputs["timeout"] == HELM_RELEASE_TIMEOUT_SECONDS[release.inputs["name"]], release.name


# ------------------------------------------------------------------------------------------------ MIG on ACK
def test_mig_pool_on_ack_gets_the_ack_gpu_installer(stack_records):
    names = {a.inputs["name"] for a in of_type(stack_records("prod"), ADDON)}
    assert "ack-ai-installer" in names
    # the GPU Operator's mig-manager does not run on ACK: nothing installs it there
    assert not [r for r in of_type(stack_records("prod"), RELEASE) if r.inputs["name"] == "gpu-operator"]


def test_mig_deployment_waits_for_the_ack_gpu_installer():
    from engine_timing import run_with_slow
    from gpuplatform.synth import stack_config_from_namespace

    timeline = run_with_slow(stack_config_from_namespace(stack_raw("prod")), {ADDON})
    assert timeline.after_created("requested", "gpu-flower-deployment", "gpu-cluster-ack-ai-installer")


@pytest.mark.parametrize("cluster_change, sharing_change, path, words", [
    ({}, {"strategy": "single"}, "nodePools[0].sharing.strategy", "ACK exposes each MIG instance"),
    ({"kind": "ack-existing", "clusterId": "c0123456789abcdef0123456789abcdef", "vswitchIds": ["vsw-1"],
      "professional": False}, {}, "nodePools[0].sharing.mode", "ack-ai-installer"),
])
def test_mig_settings_ack_cannot_honour_are_rejected(cluster_change, sharing_change, path, words):
    from gpuplatform.components.errors import ConfigError
    from gpuplatform.components.validation import load

    raw = stack_raw("prod")
    if cluster_change:
        raw["cluster"] = {"region": raw["cluster"]["region"],
                          "kubernetesVersion": raw["cluster"]["kubernetesVersion"], **cluster_change}
    raw["nodePools"][0]["sharing"].update(sharing_change)
    with pytest.raises(ConfigError) as info:
        load(raw)
    assert any(i.path == path and words in i.message for i in info.value.issues), info.value.render()


# ------------------------------------------------------------------------------------------------ exporter tolerations
DAEMONSET_PATCH = "kubernetes:apps/v1:DaemonSetPatch"
GPU_TAINT_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}


def test_exporter_patch_keeps_the_tolerations_the_daemonset_has(monkeypatch):
    # what the add-on set: applied alone, ours would replace these (tolerations is an atomic list)
    own = [{"operator": "Exists", "key": "CriticalAddonsOnly"},
           {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]
    monkeypatch.setitem(offline.COMPUTED, "kubernetes:apps/v1:DaemonSet",
                        lambda name: {"spec": {"template": {"spec": {"tolerations": own}}}})
    patch = one(synth(stack_raw("staging")), DAEMONSET_PATCH)
    assert patch.inputs["spec"]["template"]["spec"]["tolerations"] == [*own, GPU_TAINT_TOLERATION]
    # deleting the patch would relinquish, and so remove, the whole list it owns
    assert patch.retain_on_delete


def test_exporter_patch_adds_nothing_twice(monkeypatch):
    monkeypatch.setitem(offline.COMPUTED, "kubernetes:apps/v1:DaemonSet",
                        lambda name: {"spec": {"template": {"spec": {"tolerations": [GPU_TAINT_TOLERATION]}}}})
    patch = one(synth(stack_raw("staging")), DAEMONSET_PATCH)
    assert patch.inputs["spec"]["template"]["spec"]["tolerations"] == [GPU_TAINT_TOLERATION]


# ------------------------------------------------------------------------------------------------ adopted adapter
def test_an_installed_ack_metrics_adapter_is_imported_not_installed_twice():
    raw = stack_raw("staging")
    raw["monitoring"]["adoptAdapterRelease"] = True
    records = synth(raw)
    adapters = [r for r in of_type(records, RELEASE) if r.inputs["chart"] == "ack-alibaba-cloud-metrics-adapter"]
    assert len(adapters) == 1
    adapter = adapters[0]
    # the release ACK's guides install: same name and namespace, read by pulumi-kubernetes as <ns>/<name>
    assert (adapter.inputs["name"], adapter.inputs["namespace"]) == ("ack-alibaba-cloud-metrics-adapter", "kube-system")
    assert adapter.import_id == "kube-system/ack-alibaba-cloud-metrics-adapter"
    # an import fails on any difference: what a guide's install differs in is ignored for that first run
    assert {"values", "version", "chart"} <= set(adapter.ignore_changes)


def test_without_adoption_the_stack_installs_and_manages_the_adapter(stack_records):
    adapter = one(stack_records("staging"), RELEASE, "gpu-monitoring-ack-metrics-adapter")
    assert adapter.import_id == "" and adapter.ignore_changes == ()


def test_only_the_ack_adapter_can_be_adopted():
    from gpuplatform.components.errors import ConfigError
    from gpuplatform.components.validation import load

    raw = stack_raw("prod")
    raw["monitoring"]["adoptAdapterRelease"] = True
    with pytest.raises(ConfigError) as info:
        load(raw)
    assert any(i.path == "monitoring.adoptAdapterRelease" and "'prometheus-adapter'" in i.message
               for i in info.value.issues), info.value.render()
