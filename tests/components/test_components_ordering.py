"""What the engine creates before what, with registrations that take time (see ``engine_timing``).

Each test makes some resource types slow and reads which registrations reached the engine while they were being
created, and which only afterwards: an Output, ``depends_on``, a parent or a provider all hold a registration
back the same way under the real engine, so these tests see every one of them.
"""
import pytest

from engine_timing import run_with_slow
from gpuplatform.synth import stack_config_from_namespace
from support import stack_raw

NODE_POOL = "alicloud:cs/nodePool:NodePool"
ADDON = "alicloud:cs/kubernetesAddon:KubernetesAddon"
RELEASE = "kubernetes:helm.sh/v3:Release"
GET_PROMETHEUS = "alicloud:arms/getPrometheus:getPrometheus"


@pytest.fixture(scope="module")
def prod_slow_pool():
    return run_with_slow(stack_config_from_namespace(stack_raw("prod")), {NODE_POOL})


def test_only_the_deployment_waits_for_its_gpu_pool(prod_slow_pool):
    early = prod_slow_pool.requested_before_created("gpu-a100-mig-pool")
    # the workload's other objects and all of monitoring reach the cluster while the GPU pool is still scaling
    assert {"gpu-flower-service", "gpu-flower-hpa", "gpu-flower-pdb", "gpu-flower-ingress-http",
            "gpu-monitoring-namespace", "gpu-monitoring-kube-prometheus-stack",
            "gpu-monitoring-prometheus-adapter", "gpu-monitoring-dcgm-exporter"} <= early
    assert prod_slow_pool.after_created("requested", "gpu-flower-deployment", "gpu-a100-mig-pool")


def test_monitors_wait_for_the_release_that_installs_their_crds_and_nothing_else():
    timeline = run_with_slow(stack_config_from_namespace(stack_raw("prod")), {RELEASE})
    kps = "gpu-monitoring-kube-prometheus-stack"
    assert timeline.after_created("requested", "gpu-flower-podmonitor", kps)
    assert timeline.after_created("requested", "gpu-autoscaling-alerts", kps)
    early = timeline.requested_before_created(kps)
    assert {"gpu-flower-deployment", "gpu-flower-service", "gpu-flower-hpa", "gpu-autoscaling-dashboard"} <= early


@pytest.fixture(scope="module")
def staging_slow_addons():
    return run_with_slow(stack_config_from_namespace(stack_raw("staging")), {ADDON})


def test_node_pool_waits_for_the_auto_repair_addons(staging_slow_addons):
    for addon in ("gpu-cluster-ack-node-problem-detector", "gpu-cluster-node-lifecycle-controller"):
        assert staging_slow_addons.after_created("requested", "gpu-a10-pool", addon)


def test_arms_lookup_and_alert_rules_wait_for_the_arms_addon(staging_slow_addons):
    arms = "gpu-cluster-arms-prometheus"
    assert staging_slow_addons.after_created("invoked", GET_PROMETHEUS, arms)
    alert_rules = [n for n in staging_slow_addons.names("requested") if n.startswith("gpu-autoscaling-alert-")]
    assert alert_rules and all(staging_slow_addons.after_created("requested", n, arms) for n in alert_rules)
    assert staging_slow_addons.after_created("requested", "gpu-monitoring-gpu-exporter-tolerations", arms)
    # the exporter's current tolerations are read once the add-on that creates the DaemonSet is there
    assert staging_slow_addons.after_created("read", "gpu-monitoring-gpu-exporter", arms)


def test_kubernetes_objects_do_not_wait_for_unrelated_addons(staging_slow_addons):
    early = staging_slow_addons.requested_before_created("gpu-cluster-arms-prometheus")
    assert {"gpu-cluster-k8s", "gpu-workloads-namespace", "gpu-bert-intent-detection-service"} <= early


def test_cgpu_deployment_waits_for_the_sharing_installer():
    timeline = run_with_slow(stack_config_from_namespace(stack_raw("dev")), {ADDON})
    installer = "gpu-cluster-ack-ai-installer"
    deployments = [n for n in timeline.names("requested") if n.endswith("-deployment")]
    assert deployments and all(timeline.after_created("requested", d, installer) for d in deployments)
    services = {n for n in timeline.names("requested") if n.endswith("-service")}
    assert services and services <= timeline.requested_before_created(installer)


def test_ingress_waits_for_its_controller_addon_and_nothing_else_does():
    timeline = run_with_slow(stack_config_from_namespace(stack_raw("prod")), {ADDON})
    controller = "gpu-cluster-nginx-ingress-controller"
    assert timeline.after_created("requested", "gpu-flower-ingress-http", controller)
    assert timeline.after_created("requested", "gpu-flower-ingress-grpc", controller)
    # (the Deployment waits for ack-ai-installer, prod's MIG add-on, which is held too)
    assert {"gpu-flower-service", "gpu-flower-hpa", "gpu-flower-pdb"} <= timeline.requested_before_created(controller)
