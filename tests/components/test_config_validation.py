"""The bad-input corpus: each case breaks one thing in a valid stack and must be rejected with a message that
names the config path, the bad value and what is allowed, before any resource is registered."""
import copy

import pytest

from gpuplatform.components.errors import ConfigError
from gpuplatform.components.stack_config import namespace_from_stack_file
from gpuplatform.components.validation import load
from support import REPO, stack_raw


def _pool(raw, i=0):
    return raw["nodePools"][i]


def _wl(raw, i=0):
    return raw["workloads"][i]


def set_in(path, value):
    """Mutation setting raw[path...] = value."""
    def mutate(raw):
        node = raw
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return mutate


def compose(*fns):
    def mutate(raw):
        for fn in fns:
            fn(raw)
    return mutate


def dup_pool(raw):
    raw["nodePools"].append(copy.deepcopy(raw["nodePools"][0]))


def dup_workload(raw):
    raw["workloads"].append(copy.deepcopy(raw["workloads"][0]))


def second_workload_on_pool(raw):
    w = copy.deepcopy(raw["workloads"][0])
    w["name"] = "bert-canary"
    raw["workloads"].append(w)


def add_metric(metric, target=1):
    def mutate(raw):
        _wl(raw)["autoscaling"]["metrics"].append({"metric": metric, "target": target})
    return mutate


# (case id, base stack, mutation, expected path, fragments the message must contain)
CASES = [
    ("unknown-top-level-key", "staging", set_in(["nodepools"], []), "nodepools", ["unknown key"]),
    ("wrong-type", "staging", set_in(["nodePools", 0, "maxNodes"], "many"), "nodePools[0].maxNodes",
     ["'many'", "integer"]),
    ("unknown-instance-type", "staging", set_in(["nodePools", 0, "instanceTypes"], ["ecs.gn7i-c8g1.2xlarg"]),
     "nodePools[0].instanceTypes[0]", ["'ecs.gn7i-c8g1.2xlarg'", "Did you mean", "ecs.gn7i-c8g1.2xlarge"]),
    ("mixed-gpu-models", "staging", set_in(["nodePools", 0, "instanceTypes"], ["ecs.gn7i-c8g1.2xlarge",
                                                                               "ecs.gn6i-c4g1.xlarge"]),
     "nodePools[0].instanceTypes", ["A10", "T4", "same GPU model"]),
    ("mig-on-gpu-without-mig", "staging", set_in(["nodePools", 0, "sharing"], {"mode": "mig", "profile": "1g.5gb"}),
     "nodePools[0].sharing.mode", ["A10", "no MIG", "A100-40GB"]),
    ("mig-on-passthrough-family", "prod", set_in(["nodePools", 0, "instanceTypes"], ["ecs.gn7-c13g1.26xlarge"]),
     "nodePools[0].sharing.mode", ["ecs.gn7-c13g1.26xlarge", "passthrough", "ecs.ebmgn7"]),
    ("mig-profile-not-for-model", "prod", set_in(["nodePools", 0, "sharing", "profile"], "1g.10gb+me"),
     "nodePools[0].sharing.profile", ["'1g.10gb+me'", "A100-40GB", "1g.5gb"]),
    ("cgpu-memory-above-card", "dev", set_in(["workloads", 0, "gpu", "memoryGib"], 16),
     "workloads[0].gpu.memoryGib", ["16 GiB", "T4", "14 GiB", "1..14"]),
    ("pool-min-above-max", "staging", set_in(["nodePools", 0, "minNodes"], 12), "nodePools[0].minNodes",
     ["'minNodes' (12) must be <= 'maxNodes' (10)"]),
    ("hpa-min-above-max", "staging", set_in(["workloads", 0, "autoscaling", "minReplicas"], 11),
     "workloads[0].autoscaling.minReplicas", ["'minReplicas' (11) must be <= 'maxReplicas' (10)"]),
    ("target-not-positive", "staging", set_in(["workloads", 0, "autoscaling", "metrics", 0, "target"], 0),
     "workloads[0].autoscaling.metrics[0].target", ["0", "positive"]),
    ("percent-target-above-reach", "staging", set_in(["workloads", 0, "autoscaling", "metrics", 0, "target"], 95),
     "workloads[0].autoscaling.metrics[0].target", ["95", "'gpu_sm_util'", "percent", "10%", "tolerance", "<= 90.909"]),
    ("percent-target-above-100", "staging", set_in(["workloads", 0, "autoscaling", "metrics", 0, "target"], 150),
     "workloads[0].autoscaling.metrics[0].target", ["150", "never passes 100", "<= 90.909"]),
    ("ratio-target-written-as-percent", "prod", set_in(["workloads", 0, "autoscaling", "metrics", 0],
                                                       {"metric": "gpu_engine_active", "target": 80}),
     "workloads[0].autoscaling.metrics[0].target", ["80", "ratio, 0-1", "<= 0.909", "did you mean 0.8?"]),
    ("target-below-quantity-precision", "staging", set_in(["workloads", 0, "autoscaling", "metrics", 0, "target"],
                                                         20.0005),
     "workloads[0].autoscaling.metrics[0].target", ["20.0005", "multiple of 0.001"]),
    ("unknown-metric", "staging", set_in(["workloads", 0, "autoscaling", "metrics", 0, "metric"], "gpu_sm_utl"),
     "workloads[0].autoscaling.metrics[0].metric", ["'gpu_sm_utl'", "Did you mean", "gpu_sm_util"]),
    ("gpu-util-on-mig", "prod", add_metric("gpu_util", 80), "workloads[0].autoscaling.metrics[1].metric",
     ["'gpu_util'", "sharing mig", "gpu_engine_active"]),
    ("device-metric-on-cgpu", "dev", add_metric("gpu_fb_used", 4000), "workloads[0].autoscaling.metrics[1].metric",
     ["'gpu_fb_used'", "sharing cgpu", "whole shared card"]),
    ("node-scoped-metric-for-hpa", "staging", set_in(["workloads", 0, "autoscaling", "metrics", 0, "metric"],
                                                     "gpu_util"),
     "workloads[0].autoscaling.metrics[0].metric", ["per node", "DCGM_FI_DEV_GPU_UTIL", "gpu_sm_util"]),
    ("metric-not-from-exporter", "local", set_in(["workloads", 0, "autoscaling", "metrics", 0, "metric"],
                                                 "gpu_sm_util"),
     "workloads[0].autoscaling.metrics[0].metric", ["'gpu_sm_util'", "'dcgm'", "ack"]),
    ("missing-pool", "staging", set_in(["workloads", 0, "nodePool"], "a100"), "workloads[0].nodePool",
     ["'a100'", "allowed: a10"]),
    ("duplicate-pool", "staging", dup_pool, "nodePools[1].name", ["'a10'", "already used"]),
    ("duplicate-workload", "staging", dup_workload, "workloads[1].name", ["already used"]),
    ("bad-pool-name", "staging", compose(set_in(["nodePools", 0, "name"], "A10_Pool"),
                                         set_in(["workloads", 0, "nodePool"], "A10_Pool")),
     "nodePools[0].name", ["'A10_Pool'", "lowercase"]),
    ("bad-workload-name", "staging", set_in(["workloads", 0, "name"], "1bert"), "workloads[0].name",
     ["'1bert'", "starting with a letter"]),
    ("hpa-api-version-not-served", "staging", set_in(["workloads", 0, "autoscaling", "hpaApiVersion"],
                                                     "autoscaling/v2beta1"),
     "workloads[0].autoscaling.hpaApiVersion", ["'autoscaling/v2beta1'", "1.35", "allowed: autoscaling/v2"]),
    ("behavior-on-v2beta1", "staging", compose(
        set_in(["cluster", "kubernetesVersion"], "1.22"),
        set_in(["workloads", 0, "autoscaling", "hpaApiVersion"], "autoscaling/v2beta1"),
        set_in(["workloads", 0, "autoscaling", "behavior"], {"scaleDown": {"stabilizationWindowSeconds": 600}})),
     "workloads[0].autoscaling.behavior", ["v2beta1 has no behavior", "autoscaling/v2beta2"]),
    ("max-replicas-beyond-capacity", "staging", set_in(["workloads", 0, "autoscaling", "maxReplicas"], 11),
     "workloads[0].autoscaling.maxReplicas", ["11", "at most 10", "1 per node x 10 nodes"]),
    ("replica-never-fits", "staging", set_in(["workloads", 0, "gpu", "count"], 2), "workloads[0].gpu.count",
     ["2: one replica needs more than a node", "1 GPU per node", "Pending", "allowed: 1..1"]),
    ("gpu-request-wrong-mode", "staging", set_in(["workloads", 0, "gpu"], {"memoryGib": 4}), "workloads[0].gpu",
     ["memoryGib", "sharing exclusive", "nvidia.com/gpu"]),
    ("count-on-cgpu", "dev", set_in(["workloads", 0, "gpu"], {"count": 1}), "workloads[0].gpu.count",
     ["cGPU", "memoryGib", "aliyun.com/gpu-mem"]),
    ("public-lb-not-allowed", "staging", set_in(["workloads", 0, "exposure", "serviceType"], "PublicLoadBalancer"),
     "workloads[0].exposure.serviceType", ["Internet", "allowPublicEndpoints", "InternalLoadBalancer"]),
    ("app-metric-without-scrape-port", "prod", set_in(["workloads", 0, "ports"], [
        {"name": "http", "containerPort": 8000, "protocol": "http"}]),
     "workloads[0].autoscaling.metrics[0].metric", ["no port with protocol 'metrics'", "8002", "metricsPath"]),
    ("app-metric-without-server", "prod", set_in(["workloads", 0, "server"], None),
     "workloads[0].autoscaling.metrics[0].metric", ["inference-server metric", "triton"]),
    ("relist-shorter-than-scrape", "prod", set_in(["monitoring", "intervals", "adapterRelist"], "5s"),
     "monitoring.intervals.adapterRelist", ["'5s'", "scrape interval", ">= 10s"]),
    ("window-shorter-than-two-scrapes", "prod", set_in(["monitoring", "intervals", "ruleWindow"], "15s"),
     "monitoring.intervals.ruleWindow", ["'15s'", "two scrapes", ">= 20s"]),
    ("keda-zero-without-activation", "local", lambda raw: _wl(raw, 1)["autoscaling"].pop("activation"),
     "workloads[1].autoscaling.minReplicas", ["0 would never wake up", "'gpu_util'", "own pods", "activation"]),
    ("activation-ingress-without-ingress", "local", lambda raw: _wl(raw, 1)["exposure"].pop("ingress"),
     "workloads[1].autoscaling.activation.source", ["'ingress'", "no nginx ingress", "'prometheus'"]),
    ("activation-query-on-own-pods", "local", set_in(["workloads", 1, "autoscaling", "activation"], {
        "source": "prometheus", "target": 5, "query": 'sum(DCGM_FI_DEV_GPU_UTIL{pod=~"batch-embedder-.*"})'}),
     "workloads[1].autoscaling.activation.query", ["DCGM_FI_DEV_GPU_UTIL", "does not exist at zero replicas"]),
    ("activation-without-scale-to-zero", "local", set_in(["workloads", 1, "autoscaling", "minReplicas"], 1),
     "workloads[1].autoscaling.activation", ["only used", "minReplicas 0"]),
    ("zero-interval", "prod", set_in(["monitoring", "intervals", "scrape"], "0s"),
     "monitoring.intervals.scrape", ["'0s'", "zero", "positive duration"]),
    ("negative-interval", "prod", set_in(["monitoring", "intervals", "ruleWindow"], "-30s"),
     "monitoring.intervals.ruleWindow", ["'-30s'", "negative", "positive duration"]),
    ("zero-hpa-sync", "prod", set_in(["monitoring", "intervals", "hpaSync"], "0s"),
     "monitoring.intervals.hpaSync", ["'0s'", "zero"]),
    ("memory-only-autoscaling", "staging", set_in(["workloads", 0, "autoscaling", "metrics"],
                                                  [{"metric": "gpu_mem_used", "target": 4000}]),
     "workloads[0].autoscaling.metrics", ["'gpu_mem_used'", "GPU memory", "never scale down", "gpu_sm_util"]),
    ("bad-duration", "prod", set_in(["monitoring", "intervals", "scrape"], "10 seconds"),
     "monitoring.intervals.scrape", ["'10 seconds'", "not a duration"]),
    ("bad-kubernetes-version", "staging", set_in(["cluster", "kubernetesVersion"], "v1.30"),
     "cluster.kubernetesVersion", ["'v1.30'", "not a Kubernetes version"]),
    ("ack-managed-needs-full-version", "dev", set_in(["cluster", "kubernetesVersion"], "1.31"),
     "cluster.kubernetesVersion", ["'1.31'", "ACK's version form", "'X.Y.Z-aliyun.N'"]),
    ("ack-managed-needs-aliyun-suffix", "dev", set_in(["cluster", "kubernetesVersion"], "1.35.2"),
     "cluster.kubernetesVersion", ["'1.35.2'", "ACK's version form", "a change on every pulumi up"]),
    ("arms-on-plain-cluster", "local", set_in(["monitoring", "backend"], "arms"), "monitoring.backend",
     ["'arms'", "needs an ACK cluster"]),
    ("cgpu-on-plain-cluster", "local", compose(
        set_in(["nodePools", 0, "sharing"], {"mode": "cgpu"}),
        set_in(["workloads", 0, "gpu"], {"memoryGib": 4})),
     "nodePools[0].sharing.mode", ["'cgpu'", "needs an ACK cluster"]),
    ("unknown-cluster-kind", "staging", set_in(["cluster", "kind"], "eks"), "cluster", ["'eks'", "ack-managed"]),
    ("unknown-sharing-mode", "staging", set_in(["nodePools", 0, "sharing"], {"mode": "timeslice"}),
     "nodePools[0].sharing", ["'timeslice'", "exclusive", "cgpu", "mig"]),
    ("secret-in-plain-env", "staging", set_in(["workloads", 0, "env"], {"PASSWORD": "mypassw0rd"}),
     "workloads[0].env.PASSWORD", ["secret in plain text", "secretEnv"]),
    ("latest-image", "staging", set_in(["workloads", 0, "image"], "registry.example.com/bert:latest"),
     "workloads[0].image", ["'latest'", "explicit version tag"]),
    ("probe-on-unknown-port", "staging", set_in(["workloads", 0, "probes", "port"], "web"), "workloads[0].probes.port",
     ["'web'", "allowed: http"]),
    ("hand-set-sharing-label", "staging", set_in(["nodePools", 0, "labels"], {"ack.node.gpu.schedule": "cgpu"}),
     "nodePools[0].labels.ack.node.gpu.schedule", ["'cgpu'", "one GPU scheduling mode"]),
    ("hpa-min-zero", "staging", set_in(["workloads", 0, "autoscaling", "minReplicas"], 0),
     "workloads[0].autoscaling.minReplicas", ["0", "keda"]),
    ("core-percent-without-core-mem", "dev", set_in(["workloads", 0, "gpu", "corePercent"], 30),
     "workloads[0].gpu.corePercent", ["core_mem", "cgpu"]),
    ("pool-shared-beyond-capacity", "staging", compose(
        second_workload_on_pool, set_in(["workloads", 0, "autoscaling", "maxReplicas"], 6),
        set_in(["workloads", 1, "autoscaling", "maxReplicas"], 6)),
     "nodePools[0].maxNodes", ["bert-intent-detection (6)", "bert-canary (6)", "2 of bert-canary", ">= 12"]),
    ("behavior-window-out-of-range", "staging", set_in(
        ["workloads", 0, "autoscaling", "behavior"], {"scaleDown": {"stabilizationWindowSeconds": 7200}}),
     "workloads[0].autoscaling.behavior.scaleDown.stabilizationWindowSeconds", ["7200", "0..3600"]),
    ("fixed-pool-without-size", "staging", set_in(["nodePools", 0, "autoscaling"], False),
     "nodePools[0].desiredNodes", ["required when 'autoscaling' is false"]),
    ("metrics-port-on-the-serving-port-number", "prod", lambda raw: _wl(raw)["ports"].__setitem__(
        2, {"name": "metrics", "containerPort": 8000, "protocol": "metrics"}),
     "workloads[0].ports[2].containerPort", ["8000 is used twice", "'http'", "metricsPath"]),
    ("serving-ports-collide", "prod", set_in(["workloads", 0, "ports", 1, "containerPort"], 8000),
     "workloads[0].ports[1].containerPort", ["8000 is used twice", "'http'"]),
    ("metrics-path-on-grpc-port", "prod", set_in(["workloads", 0, "ports", 1, "metricsPath"], "/metrics"),
     "workloads[0].ports[1].metricsPath", ["'/metrics'", "gRPC port 'grpc'", "http or metrics port"]),
    ("metrics-path-not-a-path", "prod", set_in(["workloads", 0, "ports", 2, "metricsPath"], "metrics?x=1"),
     "workloads[0].ports[2].metricsPath", ["'metrics?x=1'", "not an HTTP path", "/metrics"]),
    ("metrics-served-on-two-ports", "prod", set_in(["workloads", 0, "ports", 0, "metricsPath"], "/metrics"),
     "workloads[0].ports[2]", ["'metrics' also serves metrics", "ports[0]", "one port"]),
    ("only-a-metrics-port", "prod", set_in(["workloads", 0, "ports"], [
        {"name": "http", "containerPort": 8000, "protocol": "metrics"}]),
     "workloads[0].ports", ["no serving port", "metricsPath"]),
    ("keda-on-arms", "staging", set_in(["workloads", 0, "autoscaling", "autoscaler"], "keda"),
     "workloads[0].autoscaling.autoscaler", ["'keda'", "self-hosted"]),
    # prod's flower: probes.startupTimeoutSeconds 900 is its scale-in floor
    ("scale-down-window-below-startup", "prod", set_in(["workloads", 0, "autoscaling", "behavior", "scaleDown",
                                                        "stabilizationWindowSeconds"], 120),
     "workloads[0].autoscaling.behavior.scaleDown.stabilizationWindowSeconds",
     ["120s", "scale-in floor", "startup budget, 900s", "probes.startupTimeoutSeconds", "not-ready (loading) pods "
      "first", "allowed: >= 900"]),
    # local's batch-embedder scales to zero; no model nor startup timeout: the 600 s default budget
    ("keda-cooldown-below-startup", "local", set_in(["workloads", 1, "autoscaling", "cooldownPeriodSeconds"], 300),
     "workloads[1].autoscaling.cooldownPeriodSeconds",
     ["300s", "scale-in floor", "startup budget, 600s", "scales to zero", "allowed: >= 600", "default 600s"]),
    ("keda-cooldown-on-an-hpa", "staging", set_in(["workloads", 0, "autoscaling", "cooldownPeriodSeconds"], 900),
     "workloads[0].autoscaling.cooldownPeriodSeconds", ["only used with autoscaler 'keda'"]),
]


def test_corpus_has_at_least_25_kinds():
    assert len({c[0] for c in CASES}) >= 25


def assert_rejected(stack, mutate, path, fragments) -> ConfigError:
    """The stack, broken by ``mutate``, is rejected with an issue at ``path`` whose message has ``fragments``."""
    raw = stack_raw(stack)
    mutate(raw)
    with pytest.raises(ConfigError) as info:
        load(raw)
    issues = [i for i in info.value.issues if i.path == path]
    assert issues, f"no issue at {path}; got:\n{info.value.render()}"
    message = " ".join(i.message for i in issues)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    assert f"gpu-platform:{path}:" in info.value.render()
    return info.value


@pytest.mark.parametrize("case,stack,mutate,path,fragments", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_rejected_with_path_value_and_allowed(case, stack, mutate, path, fragments):
    assert_rejected(stack, mutate, path, fragments)


def test_all_problems_are_reported_at_once():
    raw = stack_raw("staging")
    raw["nodePools"][0]["minNodes"] = 12
    raw["workloads"][0]["image"] = "bert:latest"
    raw["workloads"][0]["autoscaling"]["metrics"][0]["target"] = -1
    with pytest.raises(ConfigError) as info:
        load(raw)
    paths = {i.path for i in info.value.issues}
    assert {"nodePools[0].minNodes", "workloads[0].image", "workloads[0].autoscaling.metrics[0].target"} <= paths


def test_every_shipped_stack_is_valid():
    for path in sorted((REPO / "stacks").glob("Pulumi.*.yaml")):
        load(namespace_from_stack_file(path))


def test_memory_next_to_a_metric_that_falls_is_accepted():
    raw = stack_raw("staging")
    raw["workloads"][0]["autoscaling"]["metrics"].append({"metric": "gpu_mem_used", "target": 4000})
    assert load(raw).workloads[0].autoscaling.metrics[1].metric == "gpu_mem_used"


def test_behavior_below_1_23_is_served_by_v2beta2():
    raw = stack_raw("staging")
    raw["cluster"]["kubernetesVersion"] = "1.22"
    raw["workloads"][0]["autoscaling"]["behavior"] = {"scaleDown": {"stabilizationWindowSeconds": 600}}
    assert load(raw).workloads[0].autoscaling.behavior.scale_down.stabilization_window_seconds == 600


@pytest.mark.parametrize("values, path", [
    ({"grafana": {"adminPassword": "prom-operator"}}, "kubePrometheusStack.grafana.adminPassword"),
    ({"alertmanager": {"config": {"receivers": [{"name": "pager", "pagerduty_configs": [
        {"routing_key": "abc", "auth_token": "literal"}]}]}}},
     # a PagerDuty routing key is the credential itself (Alertmanager marks it <secret>)
     ["kubePrometheusStack.alertmanager.config.receivers[0].pagerduty_configs[0].routing_key",
      "kubePrometheusStack.alertmanager.config.receivers[0].pagerduty_configs[0].auth_token"]),
])
def test_a_password_in_helm_values_is_refused_like_one_in_env(values, path):
    raw = stack_raw("staging")
    raw.setdefault("monitoring", {}).setdefault("helmValues", {})["kubePrometheusStack"] = values
    with pytest.raises(ConfigError) as err:
        load(raw)
    paths = path if isinstance(path, list) else [path]
    assert sorted(i.path for i in err.value.issues) == sorted(f"monitoring.helmValues.{p}" for p in paths)
    assert "secret in plain text" in err.value.issues[0].message


def test_references_to_secrets_in_helm_values_are_fine():
    raw = stack_raw("staging")
    raw.setdefault("monitoring", {}).setdefault("helmValues", {})["kubePrometheusStack"] = {
        "grafana": {"admin": {"existingSecret": "grafana-admin", "passwordKey": "password"},
                    "adminPasswordFile": "/etc/secrets/admin", "envFromSecret": "grafana-env"},
        "prometheus": {"prometheusSpec": {"remoteWrite": [{"url": "https://metrics.example.com",
                                                           "basicAuth": {"password": {"name": "rw", "key": "pw"}},
                                                           "bearerTokenFile": "/var/run/token"}]}}}
    load(raw)


def test_the_scale_in_floor_raises_unset_defaults_and_accepts_windows_at_it():
    """A window or cooldown left unset is the default raised to the startup budget; one stated at the floor is
    accepted and rendered as stated."""
    from gpuplatform.components.model_startup import (keda_cooldown_seconds, scale_down_window_seconds,
                                                      scale_in_floor_seconds)

    raw = stack_raw("local")
    embedder = _wl(raw, 1)
    cfg = load(raw)
    w = cfg.workloads[1]
    assert scale_in_floor_seconds(w) == 600
    assert (scale_down_window_seconds(w), keda_cooldown_seconds(w)) == (600, 600)
    embedder["probes"] = {**(embedder.get("probes") or {"port": "http"}), "startupTimeoutSeconds": 120}
    w = load(raw).workloads[1]
    assert (scale_down_window_seconds(w), keda_cooldown_seconds(w)) == (300, 300)  # defaults above the floor
    embedder["autoscaling"]["cooldownPeriodSeconds"] = 120
    embedder["autoscaling"]["behavior"] = {"scaleDown": {"stabilizationWindowSeconds": 120}}
    w = load(raw).workloads[1]
    assert (scale_down_window_seconds(w), keda_cooldown_seconds(w)) == (120, 120)


# ---------------------------------------------------------------------------------------------- node autoscaling
@pytest.mark.parametrize("settings, path, words", [
    ({"scaleUpFromZero": False}, "cluster.nodeAutoscaling.scaleUpFromZero",
     ["false cannot be sent", "d.GetOk", "allowed: true"]),
    ({"scalerType": "goatscaler", "expander": "random"}, "cluster.nodeAutoscaling.expander",
     ["'random' with scalerType 'goatscaler'", "allowed: least-waste"]),
    ({"scanInterval": "0s"}, "cluster.nodeAutoscaling.scanInterval", ["'0s' is zero"]),
    ({"scaleDownUtilizationThreshold": 1.5}, "cluster.nodeAutoscaling.scaleDownUtilizationThreshold", ["1"]),
    ({"expander": "priority"}, "cluster.nodeAutoscaling.expander", ["least-waste", "random"]),
])
def test_node_autoscaling_settings_the_provider_or_ack_would_not_take_are_refused(settings, path, words):
    raw = stack_raw("dev")
    raw["cluster"]["nodeAutoscaling"] = settings
    with pytest.raises(ConfigError) as caught:
        load(raw)
    issues = {i.path: i.message for i in caught.value.issues}
    assert path in issues, issues
    for w in words:
        assert w in issues[path], issues[path]


def test_every_node_autoscaling_mistake_is_reported_in_one_run():
    raw = stack_raw("dev")
    raw["cluster"]["nodeAutoscaling"] = {"scaleUpFromZero": False, "scalerType": "goatscaler", "expander": "random"}
    with pytest.raises(ConfigError) as caught:
        load(raw)
    paths = {i.path for i in caught.value.issues}
    assert {"cluster.nodeAutoscaling.scaleUpFromZero", "cluster.nodeAutoscaling.expander"} <= paths
