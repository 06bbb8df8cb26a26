"""``cluster.system-pods``: the pods of the cluster's system components (kube-system, ARMS's arms-prom) and of every
chart the stack installs are not stuck unscheduled.

Recorded: prod's kube-system, monitoring and cert-manager pods in ``healthy`` and in ``no-system-pool`` (the system
pool is gone and only the tainted, autoscaled GPU node is left: the DaemonSets run there, nothing else fits);
staging records no arms-prom pods, which the fake API server answers with a 404, so that namespace is skipped.
"""
from __future__ import annotations

from k8s_fixture_server import REPO
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from gpuplatform.components.stack_config import load_stack_file
from test_verify_checks import verify as verify_by_key
from gpuplatform.verify.cluster import check_system_pods, system_namespaces

PROD = "namespaces/kube-system,monitoring,cert-manager"
STAGING = "namespaces/kube-system,arms-prom"
TAINTED = ("0/1 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: present}. preemption: 0/1 "
           "nodes are available: 1 Preemption is not helpful for scheduling.")


def verify(fake_api, cfg, stack: str, variant: str):
    """The results in the order verify reports them, and the fixture server that answered."""
    by_key, server = verify_by_key(fake_api, cfg, stack, variant)
    return list(by_key.values()), server


def test_namespaces_are_kube_system_arms_and_every_chart_namespace(staging_cfg, prod_cfg):
    # staging: ARMS, and its only chart (ack-alibaba-cloud-metrics-adapter) installs into kube-system
    assert system_namespaces(staging_cfg) == ["kube-system", "arms-prom"]
    # prod: kube-prometheus-stack, dcgm-exporter and prometheus-adapter in monitoring, cert-manager in its own
    assert system_namespaces(prod_cfg) == ["kube-system", "monitoring", "cert-manager"]
    triton = load_stack_file(REPO / "examples" / "003-triton-mig" / "Pulumi.003-triton-mig.yaml")
    assert system_namespaces(triton) == ["kube-system", "gpu-operator", "monitoring", "cert-manager"]


def test_prod_pods_all_scheduled_pass_right_after_the_cluster_checks(fake_api, prod_cfg):
    results, server = verify(fake_api, prod_cfg, "prod", "healthy")
    checks = [r.check for r in results]
    # right after cluster.reachable and the ACK checks, before the pools
    assert checks[:5] == ["cluster.reachable", "credential.lifetime", "cluster.csi-driver", "cluster.pod-network",
                          "cluster.system-pods"]
    (pods,) = [r for r in results if r.check == "cluster.system-pods"]
    assert (pods.ok, pods.subject, pods.message, pods.cause) == \
        (True, PROD, "15 pod(s) in 3 namespace(s) scheduled", "")
    # every pod of each namespace is read, not only the ones of a label selector
    listed = [(p, q) for p, q in server.requests if p.startswith("/api/v1/namespaces/") and p.endswith("/pods")
              and p.split("/")[4] in ("kube-system", "cert-manager")]
    assert listed[:2] == [("/api/v1/namespaces/kube-system/pods", {}), ("/api/v1/namespaces/cert-manager/pods", {})]
    # later, flower's NetworkPolicy peer: the ACK ingress add-on's pods, by the label its Service selects
    assert listed[2:] == [("/api/v1/namespaces/kube-system/pods", {"labelSelector": ["app=ingress-nginx"]})]


def test_a_missing_namespace_is_skipped(fake_api, staging_cfg):
    results, server = verify(fake_api, staging_cfg, "staging", "healthy")
    (pods,) = [r for r in results if r.check == "cluster.system-pods"]
    assert "/api/v1/namespaces/arms-prom/pods" in server.paths()  # answered 404: no such namespace
    assert (pods.ok, pods.subject, pods.message) == (True, STAGING,
                                                     "2 pod(s) in 1 namespace(s) scheduled; no pods in arms-prom")


def test_no_system_pool_names_coredns_and_a_chart_pod_with_the_schedulers_message(fake_api, prod_cfg):
    results, _ = verify(fake_api, prod_cfg, "prod", "no-system-pool")
    by_key = {(r.check, r.subject): r for r in results}
    failed = {key for key, r in by_key.items() if not r.ok}
    # the adapter's pods are among the unschedulable ones, so adapter.ready fails with them; no ingress controller
    # pod runs either, so nothing matches the peer flower's NetworkPolicy admits
    assert failed == {("cluster.system-pods", PROD), ("adapter.ready", "service/monitoring/prometheus-adapter"),
                      ("network.policy-peers", "networkpolicy/inference/flower")}
    pods = by_key[("cluster.system-pods", PROD)]
    assert pods.message.startswith("9 pod(s) unschedulable (kube-system 3, monitoring 3, cert-manager 3): ")
    # the first pod of each namespace, sharing the scheduler's one message; the DaemonSet pods on the GPU node
    # (csi-plugin, dcgm-exporter) are scheduled and not named
    assert pods.message == (
        "9 pod(s) unschedulable (kube-system 3, monitoring 3, cert-manager 3): kube-system/coredns-7f6d8b5c4-k2m8p, "
        "monitoring/kube-prometheus-stack-operator-7d6c5b8f9-z6q2n, cert-manager/cert-manager-6d9f8c7b54-m2x7k "
        f"({TAINTED}) (+6 more)")
    assert "csi-plugin" not in pods.message and "dcgm-exporter" not in pods.message
    assert pods.cause.startswith("no node admits them: the system pool (cluster.systemPool) is missing")
    assert "too small" in pods.cause and "k8s.aliyun.com=true" in pods.cause
    assert "unschedulable" in by_key[("adapter.ready", "service/monitoring/prometheus-adapter")].cause


# ------------------------------------------------------------------------------------------------ stub API
def _pod(ns: str, name: str, phase: str = "Running", scheduled: tuple | None = None) -> k8s.V1Pod:
    """``scheduled``: (status, reason, message) of the PodScheduled condition; default True."""
    status, reason, message = scheduled or ("True", None, None)
    return k8s.V1Pod(metadata=k8s.V1ObjectMeta(name=name, namespace=ns),
                     status=k8s.V1PodStatus(phase=phase, conditions=[k8s.V1PodCondition(
                         type="PodScheduled", status=status, reason=reason, message=message)]))


class Core:
    """``list_namespaced_pod`` from a dict: a namespace missing from it answers an empty list, as the API server
    does for a namespace that does not exist; an exception is raised."""

    def __init__(self, pods: dict):
        self.pods, self.asked = pods, []

    def list_namespaced_pod(self, namespace, **_):
        self.asked.append(namespace)
        found = self.pods.get(namespace, [])
        if isinstance(found, Exception):
            raise found
        return k8s.V1PodList(items=found)


UNSCHEDULABLE = ("False", "Unschedulable", "0/3 nodes are available: 3 node(s) had untolerated taint "
                 "{nvidia.com/gpu: present}. preemption: 0/3 nodes are available: 3 Preemption is not helpful "
                 "for scheduling.")


def test_an_empty_list_is_a_namespace_without_pods(staging_cfg):
    core = Core({"kube-system": [_pod("kube-system", "coredns-5c7d9f8b6-q7w2m")]})
    result = check_system_pods(staging_cfg, core)
    assert core.asked == ["kube-system", "arms-prom"]
    assert (result.ok, result.message) == (True, "1 pod(s) in 1 namespace(s) scheduled; no pods in arms-prom")
    nothing = check_system_pods(staging_cfg, Core({}))
    assert (nothing.ok, nothing.message) == (True, "no pods in kube-system, arms-prom")


def test_only_pending_pods_the_scheduler_turned_away_fail(staging_cfg):
    core = Core({"kube-system": [
        _pod("kube-system", "coredns-5c7d9f8b6-a", "Pending", ("True", None, None)),  # bound, pulling its image
        _pod("kube-system", "coredns-5c7d9f8b6-b", "Pending", ("False", "SchedulingGated", "gated")),
        _pod("kube-system", "metrics-job-x", "Succeeded", ("False", "Unschedulable", "old")),
    ]})
    assert check_system_pods(staging_cfg, core).ok
    core.pods["arms-prom"] = [_pod("arms-prom", "arms-prometheus-ack-arms-prometheus-7b4d9-k2j4d", "Pending",
                                   UNSCHEDULABLE)]
    result = check_system_pods(staging_cfg, core)
    assert not result.ok
    assert result.message == ("1 pod(s) unschedulable (arms-prom 1): arms-prom/arms-prometheus-ack-arms-prometheus-"
                              f"7b4d9-k2j4d ({UNSCHEDULABLE[2]})")


def test_at_most_three_pods_are_named_and_each_message_once(staging_cfg):
    other = ("False", "Unschedulable", "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated "
             "taint {nvidia.com/gpu: present}.")
    core = Core({"kube-system": [_pod("kube-system", f"coredns-5c7d9f8b6-{i}", "Pending", UNSCHEDULABLE)
                                 for i in "abcd"],
                 "arms-prom": [_pod("arms-prom", "ack-prometheus-operator-0", "Pending", other)]})
    result = check_system_pods(staging_cfg, core)
    assert result.message == (
        "5 pod(s) unschedulable (kube-system 4, arms-prom 1): kube-system/coredns-5c7d9f8b6-a, "
        f"kube-system/coredns-5c7d9f8b6-b ({UNSCHEDULABLE[2]}); arms-prom/ack-prometheus-operator-0 ({other[2]}) "
        "(+2 more)")


def test_the_cause_depends_on_who_created_the_cluster(staging_cfg, prod_cfg):
    stuck = {"kube-system": [_pod("kube-system", "coredns-5c7d9f8b6-a", "Pending", UNSCHEDULABLE)]}
    created = check_system_pods(prod_cfg, Core(stuck)).cause
    assert "cluster.systemPool" in created and "k8s.aliyun.com=true" in created
    adopted = check_system_pods(staging_cfg, Core(stuck)).cause
    assert adopted.startswith("no node admits them: the cluster has no untainted node with room for them")
    assert "k8s.aliyun.com=true" in adopted and "systemPool" not in adopted
    triton = load_stack_file(REPO / "examples" / "003-triton-mig" / "Pulumi.003-triton-mig.yaml")
    kubeconfig = check_system_pods(triton, Core(stuck)).cause
    assert "untainted node" in kubeconfig and "ACK" not in kubeconfig
    no_pool = prod_cfg.model_copy(update={"cluster": prod_cfg.cluster.model_copy(update={
        "system_pool": prod_cfg.cluster.system_pool.model_copy(update={"enabled": False})})})
    assert "cluster.systemPool.enabled is false" in check_system_pods(no_pool, Core(stuck)).cause


def test_an_api_error_is_a_failed_check_and_a_404_a_missing_namespace(staging_cfg):
    forbidden = ApiException(status=403, reason="Forbidden")
    result = check_system_pods(staging_cfg, Core({"kube-system": forbidden}))
    assert (result.ok, result.message) == (False, "cannot list pods in kube-system (HTTP 403: Forbidden)")
    assert "lack 'list pods' in kube-system" in result.cause
    missing = check_system_pods(staging_cfg, Core({"arms-prom": ApiException(status=404, reason="Not Found"),
                                                   "kube-system": [_pod("kube-system", "coredns-5c7d9f8b6-a")]}))
    assert (missing.ok, missing.message) == (True, "1 pod(s) in 1 namespace(s) scheduled; no pods in arms-prom")


def test_it_runs_on_every_cluster_kind(fake_api):
    triton = load_stack_file(REPO / "examples" / "003-triton-mig" / "Pulumi.003-triton-mig.yaml")
    results, _ = verify(fake_api, triton, "triton-mig", "healthy")
    assert [r.check for r in results][:2] == ["cluster.reachable", "cluster.system-pods"]
