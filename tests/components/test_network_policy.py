"""Each workload's NetworkPolicy admits exactly the peers the stack knows, each to its own ports; its
``networkPolicy`` settings are validated with config paths; ``plan`` warns where the policy is ignored or shuts every
caller out; a composed InferenceService gets the same object."""
from dataclasses import replace

import pytest

from gpuplatform.catalogs import network
from gpuplatform.components import workload_manifests as wm
from gpuplatform.components.inference_service import workload_context
from gpuplatform.components.network_policy import network_access, network_warnings
from gpuplatform.components.pools import all_pool_facts
from gpuplatform.components.validation import load
from support import stack_raw
from test_config_validation import assert_rejected


def policy_of(raw: dict, index: int = 0):
    cfg = load(raw)
    w = cfg.workloads[index]
    return wm.network_policy(w, workload_context(cfg, w, all_pool_facts(cfg)[w.node_pool]))


def rules(policy) -> list[tuple[list, list]]:
    """(peers, ports) of each rule; peers None for a rule that admits any source."""
    return [(r.get("from"), sorted(p["port"] for p in r["ports"])) for r in policy["spec"]["ingress"]]


def in_namespace(ns: str, labels: dict) -> dict:
    peer = {"namespaceSelector": {"matchLabels": {network.NAMESPACE_NAME_LABEL: ns}}}
    return {**peer, "podSelector": {"matchLabels": labels}} if labels else peer


# ------------------------------------------------------------------------------------------------ peers
def test_prod_admits_the_ack_ingress_addon_to_the_routed_ports_and_prometheus_to_the_metrics_port():
    policy = policy_of(stack_raw("prod"))
    assert policy["metadata"]["namespace"] == "inference"
    assert policy["spec"]["podSelector"] == {"matchLabels": {"app.kubernetes.io/name": "flower"}}
    assert rules(policy) == [
        ([in_namespace("kube-system", {"app": "ingress-nginx"})], [8000, 8001]),
        ([in_namespace("monitoring", {"app.kubernetes.io/name": "prometheus"})], [8002])]


def test_an_external_nginx_controller_is_the_community_one_and_on_ack_also_the_addon():
    local = policy_of(stack_raw("local"), 1)
    assert rules(local) == [([in_namespace("ingress-nginx", network.COMMUNITY_INGRESS_NGINX.pod_labels)], [8080])]
    raw = stack_raw("prod")
    raw["workloads"][0]["exposure"]["ingress"]["controller"] = "external"
    peers = rules(policy_of(raw))[0][0]
    assert peers == [in_namespace("kube-system", {"app": "ingress-nginx"}),
                     in_namespace("ingress-nginx", network.COMMUNITY_INGRESS_NGINX.pod_labels)]


def test_load_balancer_and_alb_ports_take_any_source_and_the_metrics_port_stays_closed():
    raw = stack_raw("prod")
    raw["workloads"][0]["exposure"] = {"serviceType": "InternalLoadBalancer"}
    assert rules(policy_of(raw)) == [(None, [8000, 8001]), (rules(policy_of(stack_raw("prod")))[1][0], [8002])]
    raw = stack_raw("prod")
    ingress = raw["workloads"][0]["exposure"]["ingress"]
    ingress.update(className="alb", controller="external")
    assert rules(policy_of(raw))[0] == (None, [8000, 8001])


def test_arms_is_scraped_from_its_agents_namespace_and_a_named_prometheus_from_its_own():
    raw = stack_raw("prod")
    raw["monitoring"] = {"backend": "arms", "gpuExporter": "ack", "adapter": "prometheus-adapter"}
    assert rules(policy_of(raw))[1] == ([in_namespace("arms-prom", {})], [8002])
    raw = stack_raw("prod")
    raw["monitoring"]["prometheusUrl"] = "http://prometheus-operated.observability.svc.cluster.local:9090"
    assert rules(policy_of(raw))[1] == ([in_namespace("observability", {})], [8002])
    raw["monitoring"]["prometheusUrl"] = "http://10.0.0.7:9090"
    assert rules(policy_of(raw))[1] == ([{"namespaceSelector": {}}], [8002])


def test_before_1_21_a_peer_in_another_namespace_is_matched_by_its_labels_in_every_namespace():
    raw = stack_raw("staging")
    raw["cluster"]["kubernetesVersion"] = "1.20"
    cfg = load(raw)
    assert network_access(cfg, cfg.workloads[0]).namespace_labels is False
    cfg = load(stack_raw("local"))
    w = cfg.workloads[1]
    ctx = workload_context(cfg, w, all_pool_facts(cfg)[w.node_pool])
    ctx = replace(ctx, network=replace(ctx.network, namespace_labels=False))
    assert rules(wm.network_policy(w, ctx))[0][0] == [
        {"namespaceSelector": {}, "podSelector": {"matchLabels": network.COMMUNITY_INGRESS_NGINX.pod_labels}}]


def test_allow_from_admits_each_caller_to_its_ports_or_every_serving_port():
    raw = stack_raw("prod")
    raw["workloads"][0]["networkPolicy"] = {"allowFrom": [
        {"namespace": "apps", "podLabels": {"app": "gateway"}},
        {"podLabels": {"role": "batch"}, "ports": ["grpc"]},
        {"namespace": "*", "podLabels": {"team": "ml"}, "ports": ["metrics"]},
        {"namespace": "inference"}]}
    assert rules(policy_of(raw))[2:] == [
        ([in_namespace("apps", {"app": "gateway"})], [8000, 8001]),
        ([{"podSelector": {"matchLabels": {"role": "batch"}}}], [8001]),
        ([{"namespaceSelector": {}, "podSelector": {"matchLabels": {"team": "ml"}}}], [8002]),
        ([{"podSelector": {}}], [8000, 8001])]


def test_disabled_means_no_policy():
    raw = stack_raw("prod")
    raw["workloads"][0]["networkPolicy"] = {"enabled": False}
    assert policy_of(raw) is None


# ------------------------------------------------------------------------------------------------ validation
@pytest.mark.parametrize("caller,path,fragments", [
    ({"namespace": "Apps"}, "allowFrom[0].namespace", ["'Apps' is not a valid namespace", "'*' for every"]),
    ({"podLabels": {"app": "gate way"}}, "allowFrom[0].podLabels", ["'gate way' is not a valid label value"]),
    ({"podLabels": {"-app": "x"}}, "allowFrom[0].podLabels", ["'-app' is not a valid label key"]),
    ({"ports": ["http", "admin"]}, "allowFrom[0].ports[1]",
     ["'admin' is not a port of the workload", "allowed: http, grpc, metrics"]),
])
def test_bad_callers_are_refused_with_their_path(caller, path, fragments):
    def mutate(raw):
        raw["workloads"][0]["networkPolicy"] = {"allowFrom": [caller]}
    assert_rejected("prod", mutate, f"workloads[0].networkPolicy.{path}", fragments)


def test_an_unknown_key_is_refused():
    def mutate(raw):
        raw["workloads"][0]["networkPolicy"] = {"allowFrom": [{"namespaces": ["apps"]}]}
    assert_rejected("prod", mutate, "workloads[0].networkPolicy.allowFrom[0].namespaces", [])


# ------------------------------------------------------------------------------------------------ plan
def test_plan_warns_on_flannel_on_a_workload_nobody_reaches_and_on_an_unplaced_prometheus():
    (flannel,) = network_warnings(load(stack_raw("dev")))  # dev lists its callers
    assert flannel.startswith("WARNING: cluster.networkPlugin 'flannel' does not enforce NetworkPolicy")
    raw = stack_raw("dev")
    del raw["workloads"][0]["networkPolicy"]
    assert network_warnings(load(raw))[1].startswith(
        "WARNING: workloads[0].networkPolicy.allowFrom is empty and 'bert-intent-detection' has no ingress or "
        "LoadBalancer")
    assert network_warnings(load(stack_raw("staging"))) == []
    raw = stack_raw("dev")
    raw["workloads"][0]["networkPolicy"] = {"allowFrom": [{"namespace": "apps"}]}
    raw["cluster"] |= {"networkPlugin": "terway",
                       "podVswitches": [{"zoneId": "cn-hangzhou-k", "cidr": "192.168.64.0/19"},
                                        {"zoneId": "cn-hangzhou-j", "cidr": "192.168.96.0/19"}]}
    assert network_warnings(load(raw)) == []
    raw = stack_raw("prod")
    raw["monitoring"]["prometheusUrl"] = "http://10.0.0.7:9090"
    (unplaced,) = [w for w in network_warnings(load(raw)) if "prometheusUrl" in w]
    assert "admit every pod of the cluster" in unplaced
    raw["workloads"][0]["networkPolicy"] = {"enabled": False}
    assert network_warnings(load(raw)) == []
