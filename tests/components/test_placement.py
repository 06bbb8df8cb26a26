"""Every pod the stack makes the cluster run has a node (components/placement.py): the scheduler's filters,
the stacks' node groups, and the error a stack gets when a pod has none.

Before the system pool, dev and prod created a cluster whose only pool was a GPU pool, tainted and autoscaled:
CoreDNS, metrics-server, the add-ons' controllers and every chart's pods had nowhere to run, and each Helm
release and add-on install waited until it timed out."""
import json

import pytest

from gpuplatform.catalogs.pods import ClusterPod
from gpuplatform.cli import main
from gpuplatform.components.placement import (NodeGroup, cluster_pods, gpu_pool_groups, homeless_pods, node_groups,
                                              pod_requests, tolerates, why_not)
from gpuplatform.components.validation import load, parse, validate
from gpuplatform.synth import stack_config_from_namespace
from support import REPO, stack_raw, synth

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


# ---------------------------------------------------------------------------------------------- the filters
@pytest.mark.parametrize("toleration, taint, expected", [
    ({"key": "nvidia.com/gpu", "operator": "Exists"}, GPU_TAINT, True),
    ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}, GPU_TAINT, True),
    ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "other"}, GPU_TAINT, False),
    ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}, GPU_TAINT, False),
    ({"operator": "Exists"}, GPU_TAINT, True),  # an empty key with Exists tolerates every taint
    ({"key": "", "operator": "Equal"}, GPU_TAINT, False),
    ({"key": "CriticalAddonsOnly", "operator": "Exists"}, GPU_TAINT, False),
])
def test_tolerations_match_as_the_api_defines(toleration, taint, expected):
    assert tolerates(toleration, taint) is expected


def _pod(**spec) -> ClusterPod:
    return ClusterPod("Deployment ns/p", "test", spec)


def _terms(*expressions) -> dict:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": list(e)} for e in expressions]}}}


NODE = NodeGroup("pool x", {"kubernetes.io/os": "linux", "k8s.aliyun.com": "true", "gpus": "4"},
                 ({**GPU_TAINT}, {"key": "soft", "effect": "PreferNoSchedule"}),
                 {"cpu": 3.9, "memory": 12 * 2 ** 30, "nvidia.com/gpu": 1.0})


@pytest.mark.parametrize("spec, reasons", [
    ({}, ["taint nvidia.com/gpu=present:NoSchedule not tolerated"]),  # PreferNoSchedule only scores
    ({"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}, []),
    ({"tolerations": [{"operator": "Exists"}], "nodeSelector": {"kubernetes.io/os": "windows"}},
     ["nodeSelector kubernetes.io/os=windows (the node has kubernetes.io/os=linux)"]),
    ({"tolerations": [{"operator": "Exists"}],
      "affinity": _terms([{"key": "k8s.aliyun.com", "operator": "NotIn", "values": ["true"]}])},
     ["required node affinity (k8s.aliyun.com NotIn ['true'])"]),
    # terms are ORed, expressions ANDed; NotIn and DoesNotExist hold where the label is absent
    ({"tolerations": [{"operator": "Exists"}],
      "affinity": _terms([{"key": "k8s.aliyun.com", "operator": "NotIn", "values": ["true"]}],
                         [{"key": "absent", "operator": "DoesNotExist"}, {"key": "gpus", "operator": "Gt",
                                                                          "values": ["2"]}])}, []),
    ({"tolerations": [{"operator": "Exists"}], "affinity": _terms([{"key": "gpus", "operator": "Lt",
                                                                   "values": ["2"]}])},
     ["required node affinity (gpus Lt ['2'])"]),
    ({"tolerations": [{"operator": "Exists"}],
      "containers": [{"resources": {"requests": {"cpu": "2", "nvidia.com/gpu": 2}}},
                     {"resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}]},
     ["requests 4 CPU of cpu, a node offers 3.9 CPU",
      "requests 2 of nvidia.com/gpu, a node offers 1"]),
])
def test_a_node_group_admits_what_the_scheduler_would(spec, reasons):
    assert why_not(_pod(**spec), NODE) == reasons


def test_an_init_container_counts_when_it_asks_more_than_the_containers_together():
    spec = {"containers": [{"resources": {"requests": {"memory": "1Gi"}}}],
            "initContainers": [{"resources": {"requests": {"memory": "3Gi", "cpu": "100m"}}}]}
    assert pod_requests(spec) == {"memory": 3 * 2 ** 30, "cpu": 0.1}


def test_one_replica_per_node_needs_as_many_nodes():
    coredns = ClusterPod("Deployment kube-system/coredns", "ACK", {}, replicas=2, one_per_node=True)
    one = NodeGroup("system pool", {}, (), None, nodes=1)
    assert [h.pod.owner for h in homeless_pods([coredns], [one])] == ["Deployment kube-system/coredns"]
    assert not homeless_pods([coredns], [NodeGroup("system pool", {}, (), None, nodes=2)])


# ---------------------------------------------------------------------------------------------- the stacks
@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_gpu_pools_alone_take_no_system_or_chart_pod(stack):
    """The stacks as they were: their GPU pools are tainted and autoscaled, so CoreDNS, metrics-server, the
    add-ons' controllers and (prod) every chart's pods have no node."""
    cfg = parse(stack_raw(stack))
    lost = {h.pod.owner: h.reasons for h in homeless_pods(cluster_pods(cfg), gpu_pool_groups(cfg))}
    assert "Deployment kube-system/coredns" in lost and "Deployment kube-system/metrics-server" in lost
    pool = f"pool {cfg.node_pools[0].name}"
    assert lost["Deployment kube-system/metrics-server"][pool] == [
        "taint nvidia.com/gpu=present:NoSchedule not tolerated", "required node affinity (k8s.aliyun.com NotIn "
        "['true'])"]
    if stack == "prod":
        assert "Deployment monitoring/kube-prometheus-stack-operator" in lost
        assert "Prometheus monitoring/kube-prometheus-stack-prometheus" in lost
    # with the system pool every one of them has a node, and the stack validates
    assert not homeless_pods(cluster_pods(cfg), node_groups(cfg))
    assert not validate(cfg)


def test_without_the_system_pool_the_stack_says_what_it_assumes(tmp_path):
    raw = stack_raw("prod")
    raw["cluster"]["systemPool"] = {"enabled": False}
    import yaml
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(yaml.safe_dump({"config": stack_config_from_namespace(raw)}))
    out = tmp_path / "out.txt"
    with open(out, "w") as handle:
        from contextlib import redirect_stdout
        with redirect_stdout(handle):
            assert main(["plan", "--config", str(path), "--no-sweep"]) == 0
    text = out.read_text()
    assert "Assumed: cluster.systemPool.enabled is false" in text
    assert "existing nodes (assumed)" in text


def test_a_chart_pod_no_pool_admits_is_a_plan_error_naming_the_pod_and_each_pools_reason(tmp_path, capsys):
    """A nodeSelector given through the escape hatch that no pool carries: Prometheus would stay Pending and the
    kube-prometheus-stack release would time out."""
    import yaml

    raw = stack_raw("prod")
    raw["monitoring"]["helmValues"] = {"kubePrometheusStack": {"prometheus": {"prometheusSpec": {
        "nodeSelector": {"disktype": "ssd"}}}}}
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(yaml.safe_dump({"config": stack_config_from_namespace(raw)}))
    assert main(["plan", "--config", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    # reported where the constraint comes from: the release's values of the stack's own
    assert "gpu-platform:monitoring.helmValues.kubePrometheusStack: Prometheus monitoring/kube-prometheus-stack-" \
           "prometheus (Helm release kube-prometheus-stack) has no node to run on" in err
    assert "system pool: nodeSelector disktype=ssd (no such label)" in err
    assert ("pool a100-mig: taint nvidia.com/gpu=present:NoSchedule not tolerated, nodeSelector disktype=ssd "
            "(no such label)") in err
    assert "Traceback" not in err and not (tmp_path / "out" / "plan.json").exists()


def test_a_chart_pod_too_big_for_any_node_is_reported():
    raw = stack_raw("prod")
    raw["monitoring"]["helmValues"] = {"kubePrometheusStack": {"prometheus": {"prometheusSpec": {
        "resources": {"requests": {"memory": "64Gi"}}}}}}
    issues = validate(parse(raw))
    assert len(issues) == 1 and issues[0].path == "monitoring.helmValues.kubePrometheusStack"
    assert "requests 64.0 GiB of memory, a node offers 12.9 GiB" in issues[0].message


def test_a_system_pool_of_one_node_is_refused():
    raw = stack_raw("dev")
    raw["cluster"]["systemPool"] = {"nodes": 1, "instanceTypes": ["ecs.t6-c1m1.large"]}
    issues = {i.path: i.message for i in validate(parse(raw))}
    assert "required anti-affinity by hostname" in issues["cluster.systemPool.nodes"]
    assert "'ecs.t6-c1m1.large' is not a catalogued CPU instance type" in issues[
        "cluster.systemPool.instanceTypes[0]"]


@pytest.mark.parametrize("stack", ["dev", "staging", "prod", "local"])
def test_each_deployment_the_program_registers_is_admitted_by_its_own_pool(stack):
    """The same filters on the pod spec the program actually registers: its selector and tolerations match the
    labels and taints its pool's nodes carry, and its requests fit one of them."""
    cfg = load(stack_raw(stack))
    groups = {g.name: g for g in node_groups(cfg)}
    deployments = [r for r in synth(stack_raw(stack)) if r.type == "kubernetes:apps/v1:Deployment"]
    assert deployments
    for d in deployments:
        spec = d.inputs["spec"]["template"]["spec"]
        pool = d.inputs["spec"]["template"]["spec"]["nodeSelector"]["gpuplatform.io/pool"]
        pod = ClusterPod(d.name, "workload", spec)
        assert why_not(pod, groups[f"pool {pool}"]) == [], d.name
        others = [g for name, g in groups.items() if name != f"pool {pool}" and not g.assumed]
        assert all(why_not(pod, g) for g in others), f"{d.name} could land outside its pool"


# ---------------------------------------------------------------------------------------------- the plan
ACK_CREATING = {"dev": REPO / "stacks" / "Pulumi.dev.yaml", "prod": REPO / "stacks" / "Pulumi.prod.yaml",
                "002-ack-gpu-metrics": REPO / "examples" / "002-ack-gpu-metrics" / "Pulumi.002-ack-gpu-metrics.yaml"}


@pytest.mark.parametrize("name", sorted(ACK_CREATING))
def test_the_plan_of_a_stack_that_creates_a_cluster_holds_what_its_first_up_needs(name, tmp_path, capsys):
    """plan.json: an untainted, non-autoscaled pool of at least 2 nodes; every NodePool states scalingConfig.enable;
    every add-on config is Go's compact JSON; the version is ACK's X.Y.Z-aliyun.N; every pod has a node."""
    from gpuplatform.catalogs.ack import go_json, parse_ack_version

    assert main(["plan", "--config", str(ACK_CREATING[name]), "--out", str(tmp_path), "--no-sweep"]) == 0
    capsys.readouterr()
    plan = json.loads((tmp_path / "plan.json").read_text())
    system = [p for p in plan["pools"] if not p["taints"] and not p["autoscaled"]]
    assert system and system[0]["minNodes"] >= 2 and system[0]["role"] == "system"
    by_type: dict = {}
    for r in plan["resources"]:
        by_type.setdefault(r["type"], []).append(r)
    pools = by_type["alicloud:cs/nodePool:NodePool"]
    assert len(pools) == len(plan["pools"])
    for pool in pools:
        assert isinstance(pool["inputs"]["scalingConfig"]["enable"], bool), pool["name"]
        if pool["inputs"]["scalingConfig"]["enable"]:
            assert "desiredSize" not in pool["inputs"] and pool["ignoreChanges"] == ["desiredSize"]
        else:
            assert pool["inputs"]["desiredSize"].isdigit()
    system_pool = next(p for p in pools if p["inputs"]["nodePoolName"] == "system")
    assert not system_pool["inputs"].get("taints") and system_pool["inputs"]["multiAzPolicy"] == "BALANCE"
    for addon in by_type.get("alicloud:cs/kubernetesAddon:KubernetesAddon", []):
        config = addon["inputs"].get("config")
        assert config is None or config == go_json(json.loads(config)), config
        assert addon["customTimeouts"] == {"create": "30m", "update": "30m", "delete": "20m"}
        assert "gpu-cluster-system" in addon["dependsOn"]
    (cluster,) = by_type["alicloud:cs/managedKubernetes:ManagedKubernetes"]
    assert parse_ack_version(cluster["inputs"]["version"])
    for entry in cluster["inputs"]["addons"]:
        assert "config" not in entry or entry["config"] == go_json(json.loads(entry["config"]))
    for release in by_type.get("kubernetes:helm.sh/v3:Release", []):
        assert "gpu-cluster-system" in release["dependsOn"], release["name"]
    assert all(p["homes"] for p in plan["placement"]["pods"])
    assert plan["placement"]["assumption"] is None


# ---------------------------------------------------------------------------------------------- the sum of requests
def test_three_10_gib_monitoring_pods_on_two_system_nodes_are_refused_by_their_sum():
    """Prometheus, Alertmanager and Grafana at 10 GiB each: every one fits a 12.9 GiB node alone, but two nodes
    hold two of them; the error names the pool, memory, the sum and what fits."""
    raw = stack_raw("prod")
    ten = {"resources": {"requests": {"memory": "10Gi"}}}
    raw["monitoring"]["helmValues"] = {"kubePrometheusStack": {
        "prometheus": {"prometheusSpec": ten}, "alertmanager": {"alertmanagerSpec": ten}, "grafana": ten}}
    issues = validate(parse(raw))
    assert [i.path for i in issues] == ["cluster.systemPool"], issues
    message = issues[0].message
    assert message.startswith("system pool: memory: the pods it must hold request ")
    assert "its 2 nodes offer 2 x 12.9 GiB allocatable = 25.8 GiB" in message
    summed = float(message.split("request ")[1].split(" GiB")[0])
    assert summed > 30.0  # the three 10 GiB pods and everything else the pool holds
    assert "pods fit, these do not: " in message and "(10.0 GiB)" in message
    # two of the three are placed: the one left is one of them
    left = message.split("these do not: ")[1].split(", so the scheduler")[0]
    assert left.count("(10.0 GiB)") == 1 and "kube-prometheus-stack" in left


def test_the_same_three_pods_fit_on_three_system_nodes():
    raw = stack_raw("prod")
    ten = {"resources": {"requests": {"memory": "10Gi"}}}
    raw["monitoring"]["helmValues"] = {"kubePrometheusStack": {
        "prometheus": {"prometheusSpec": ten}, "alertmanager": {"alertmanagerSpec": ten}, "grafana": ten}}
    raw["cluster"]["systemPool"] = {"nodes": 3}
    assert validate(parse(raw)) == []


def _ds(name: str, memory: str = "0", tolerations=None) -> ClusterPod:
    spec = {"containers": [{"resources": {"requests": {"memory": memory}}}]} if memory != "0" else {}
    if tolerations is not None:
        spec["tolerations"] = tolerations
    return ClusterPod(f"DaemonSet ns/{name}", "test", spec, daemonset=True)


def test_daemonsets_are_charged_to_every_node_they_admit_and_count_against_max_pods():
    from gpuplatform.components.placement import packing_shortfalls

    tainted = NodeGroup("pool gpu", {}, (GPU_TAINT,), {"cpu": 4.0, "memory": 4 * 2 ** 30, "pods": 3.0}, 2)
    app = ClusterPod("Deployment ns/app", "test", {"tolerations": [{"operator": "Exists"}], "containers": [
        {"resources": {"requests": {"memory": "1Gi"}}}]}, replicas=5)
    # a DaemonSet that tolerates the taint takes 1 GiB and one pod of the 3 on each node: 2 x 2 pods are left
    agent = _ds("agent", "1Gi", [{"operator": "Exists"}])
    shorts = packing_shortfalls([app, agent], [tainted])
    assert [(s.resource, s.requested, s.offered, s.left) for s in shorts] == [
        ("pods", 7.0, 6.0, ("Deployment ns/app #5 (1 pods)",))]
    assert len(shorts[0].fits) == 4
    # a DaemonSet the nodes' taint keeps off is not charged: 2 x 3 pods hold 5
    assert not packing_shortfalls([app, _ds("other", "1Gi")], [tainted])


def test_replicas_kept_apart_are_packed_on_different_nodes():
    """Two CoreDNS-like replicas of 3 GiB (one per node) and a 10 GiB pod on two 12.9 GiB nodes: the big pod and
    one replica share a node, and the other replica cannot join its twin; without the anti-affinity they fit."""
    from gpuplatform.components.placement import packing_shortfalls

    group = NodeGroup("system pool", {}, (), {"cpu": 4.0, "memory": 12.9 * 2 ** 30, "pods": 110.0}, 2)
    big = ClusterPod("StatefulSet ns/big", "test", {"containers": [{"resources": {"requests": {"memory": "10Gi"}}}]})
    three = {"containers": [{"resources": {"requests": {"memory": "3Gi"}}}]}
    apart = ClusterPod("Deployment ns/dns", "test", three, replicas=2, one_per_node=True)
    shorts = packing_shortfalls([big, apart], [group])
    assert [(s.resource, s.left) for s in shorts] == [("memory", ("Deployment ns/dns #2 (3.0 GiB)",))]
    assert not packing_shortfalls([big, ClusterPod("Deployment ns/dns", "test", three, replicas=2)], [group])


def test_the_plan_shows_each_groups_sum_against_what_its_nodes_offer():
    from gpuplatform.plan import placement_report, placement_text

    raw = stack_raw("prod")
    report = placement_report(load(raw))
    system = next(r for r in report["requests"] if r["group"] == "system pool")
    assert system["nodes"] == 2 and 0 < system["memory"]["requested"] < system["memory"]["offered"]
    assert system["pods"]["offered"] == 2 * 255  # flannel, node_cidr_mask 24
    ten = {"resources": {"requests": {"memory": "10Gi"}}}
    raw["monitoring"]["helmValues"] = {"kubePrometheusStack": {"prometheus": {"prometheusSpec": ten}}}
    bigger = next(r for r in placement_report(parse(raw))["requests"] if r["group"] == "system pool")
    assert abs(bigger["memory"]["requested"] - system["memory"]["requested"] - 10 * 2 ** 30) < 2 ** 30
    assert "Requests on system pool (2 nodes" in placement_text(report)
