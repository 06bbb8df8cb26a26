"""The simulator's HPA against the worked examples of the Kubernetes documentation and the controller's edge cases.

Figures come from kubernetes/website "Horizontal Pod Autoscaling" (algorithm details, scaling policies, default
behavior), the HPA walkthrough, the ACK guide (seed 002) and kubernetes/kubernetes
pkg/controller/podautoscaler/replica_calculator_test.go; the code under test is our own.
"""
import pytest

from gpuplatform.simulate.hpa import (Controller, KedaActivation, MetricUnavailable, PodView, Rules,
                                      external_per_pod_replicas, pods_metric_replicas, to_milli)

K8S_DEFAULT_BEHAVIOR = {
    "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15},
                             {"type": "Pods", "value": 4, "periodSeconds": 15}]},
    "scaleDown": {"stabilizationWindowSeconds": 300, "selectPolicy": "Max",
                  "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]},
}


def pods(*names, **phase):
    return [PodView(n, phase.get(n, "Running")) for n in names]


def propose(current, target, values, pod_list=None):
    pod_list = pod_list or pods(*values)
    return pods_metric_replicas(current, to_milli(target), {k: to_milli(v) for k, v in values.items()}, pod_list)[0]


# ----------------------------------------------------------------------------------------- replica calculation
def test_docs_ratio_doubles_and_halves() -> None:
    # "current metric value is 200m, and the desired value is 100m, the number of replicas will be doubled";
    # "If the current value is instead 50m, you'll halve the number of replicas"
    assert propose(2, 0.1, {"a": 0.2, "b": 0.2}) == 4
    assert propose(2, 0.1, {"a": 0.05, "b": 0.05}) == 1


def test_seed_002_one_replica_at_23_of_20_becomes_two() -> None:
    assert propose(1, 20, {"bert-0": 23}) == 2


def test_walkthrough_305_percent_of_50_gives_7() -> None:
    assert propose(1, 50, {"php-apache-0": 305}) == 7


def test_within_tolerance_keeps_replicas() -> None:
    assert propose(3, 100, {"a": 109, "b": 110, "c": 108}) == 3
    assert propose(3, 100, {"a": 112, "b": 112, "c": 112}) == 4


def test_upstream_figures_custom_metric_scale_up() -> None:
    # TestReplicaCalcScaleUpCM: levels 20000/10000/30000 milli, target 15000 milli -> 4
    assert propose(3, 15, {"a": 20, "b": 10, "c": 30}) == 4


def test_unready_running_pods_count_for_custom_metrics() -> None:
    # TestReplicaCalcScaleUpCMUnreadyHotCpuNoLessScale: readiness only matters for CPU -> 6
    views = [PodView("a"), PodView("b"), PodView("c", ready=False)]
    assert propose(3, 15, {"a": 50, "b": 10, "c": 30}, views) == 6


def test_integer_average_of_milli_values() -> None:
    # TestReplicaCalcScaleUpCMUnreadyHotCpuScaleWouldScaleDown: (50000+15000+30000)/3 = 31666 milli -> 7
    views = [PodView("a", ready=False), PodView("b"), PodView("c", ready=False)]
    replicas, usage = pods_metric_replicas(3, 15000, {"a": 50000, "b": 15000, "c": 30000}, views)
    assert (replicas, usage) == (7, 31666)


def test_pending_pods_count_as_zero_on_scale_up() -> None:
    # a = 30 of target 10 alone would ask for ceil(3 x 1) = 3; the Pending pod counts 0: (30 + 0) / 2 -> 3
    views = pods("a", "b", b="Pending")
    assert propose(2, 10, {"a": 30}, views) == 3
    assert propose(1, 10, {"a": 30}, pods("a")) == 3


def test_pending_pods_are_ignored_on_scale_down() -> None:
    views = pods("a", "b", "c", c="Pending")
    assert propose(3, 10, {"a": 2, "b": 2}, views) == 1


def test_missing_metrics_count_as_zero_on_scale_up() -> None:
    assert propose(2, 15, {"a": 60}, pods("a", "b")) == 4   # (60 + 0) / 2 = 30 -> ceil(2 x 2)


def test_missing_metrics_count_as_target_on_scale_down() -> None:
    assert propose(3, 10, {"a": 2, "b": 2}, pods("a", "b", "c")) == 2   # (2 + 2 + 10) / 3 -> ceil(0.466 x 3)


def test_missing_metric_that_flips_direction_keeps_replicas() -> None:
    # 12 of 10 says scale up; with the missing pod at 0 the average (6) says scale down: no change
    assert propose(2, 10, {"a": 12}, pods("a", "b")) == 2


def test_deleting_and_failed_pods_are_ignored() -> None:
    views = [PodView("a"), PodView("b", deleting=True), PodView("c", phase="Failed")]
    assert propose(1, 10, {"a": 20, "b": 100, "c": 100}, views) == 2


def test_no_metrics_at_all_is_unavailable() -> None:
    with pytest.raises(MetricUnavailable):
        pods_metric_replicas(1, 10000, {}, pods("a", "b", a="Pending", b="Pending"))


def test_external_average_value_divides_by_pods() -> None:
    assert external_per_pod_replicas(2, to_milli(10), [to_milli(50)])[0] == 5
    assert external_per_pod_replicas(5, to_milli(10), [to_milli(52)])[0] == 5   # within tolerance


# ----------------------------------------------------------------------------------------- behavior
def run(controller, start, desired_for, seconds, sync=15):
    current, history = start, [(0, start)]
    for t in range(0, seconds + 1, sync):
        new = controller.reconcile(float(t), current, [desired_for(current)])
        if new != current:
            history.append((t, new))
        current = new
    return current, history


def test_docs_scale_down_policies_pods_4_or_10_percent_per_minute() -> None:
    c = Controller(1, 100, Rules.from_dict(K8S_DEFAULT_BEHAVIOR["scaleUp"], "scaleUp"), Rules.from_dict(
        {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
         "policies": [{"type": "Pods", "value": 4, "periodSeconds": 60},
                      {"type": "Percent", "value": 10, "periodSeconds": 60}]}, "scaleDown"))
    final, history = run(c, 80, lambda cur: 10, 3600)
    steps = [(b[1], a[1] - b[1]) for a, b in zip(history, history[1:])]
    # "during the first step 8 replicas will be reduced"; at 72, "10% ... is 7.2 but the number is rounded up to 8"
    assert steps[0] == (72, 8) and steps[1] == (64, 8)
    # "When the number of replicas falls below 40 the first policy (Pods) is applied and 4 replicas will be reduced"
    below = [removed for now, removed in steps if now + removed <= 40 and now > 10]
    assert below and all(r == 4 for r in below)
    assert final == 10
    times = [t for t, _ in history[1:]]
    assert all(b - a >= 60 for a, b in zip(times, times[1:]))


def test_docs_select_policy_min_takes_the_smallest_change() -> None:
    c = Controller(1, 100, Rules.from_dict(K8S_DEFAULT_BEHAVIOR["scaleUp"], "scaleUp"), Rules.from_dict(
        {"stabilizationWindowSeconds": 0, "selectPolicy": "Min",
         "policies": [{"type": "Percent", "value": 10, "periodSeconds": 60},
                      {"type": "Pods", "value": 5, "periodSeconds": 60}]}, "scaleDown"))
    assert c.reconcile(0.0, 100, [10]) == 95   # "no more than 5 Pods are removed per minute"


def test_docs_disabled_scale_down() -> None:
    c = Controller(1, 10, Rules.from_dict(K8S_DEFAULT_BEHAVIOR["scaleUp"], "scaleUp"),
                   Rules.from_dict({"stabilizationWindowSeconds": 0, "selectPolicy": "Disabled", "policies": []},
                                   "scaleDown"))
    assert run(c, 6, lambda cur: 1, 900)[0] == 6


def test_docs_default_scale_up_100_percent_or_4_pods_per_15s() -> None:
    c = Controller.from_spec({"minReplicas": 1, "maxReplicas": 40, "behavior": K8S_DEFAULT_BEHAVIOR})
    _, history = run(c, 1, lambda cur: 30, 60)
    assert [r for _, r in history] == [1, 5, 10, 20, 30]


def test_docs_scale_down_stabilization_window_keeps_the_highest_recommendation() -> None:
    c = Controller.from_spec({"minReplicas": 1, "maxReplicas": 10, "behavior": K8S_DEFAULT_BEHAVIOR})
    assert c.reconcile(0.0, 5, [5]) == 5
    results = {t: c.reconcile(float(t), 5, [2]) for t in range(15, 300, 15)}
    assert set(results.values()) == {5}
    assert c.reconcile(300.0, 5, [2]) == 2   # the recommendation of t=0 left the window


def test_min_and_max_bound_the_result_and_zero_disables() -> None:
    c = Controller.from_spec({"minReplicas": 2, "maxReplicas": 4, "behavior": K8S_DEFAULT_BEHAVIOR})
    assert c.reconcile(0.0, 3, [50]) == 4
    assert c.reconcile(15.0, 6, [6]) == 4     # above max: set to max
    assert c.reconcile(30.0, 1, [1]) == 2     # below min: set to min
    assert c.reconcile(45.0, 0, [9]) == 0     # replicas 0 with minReplicas 2: scaling disabled


def test_invalid_metric_blocks_scale_down_but_not_scale_up() -> None:
    c = Controller.from_spec({"minReplicas": 1, "maxReplicas": 10,
                              "behavior": {**K8S_DEFAULT_BEHAVIOR, "scaleDown": {
                                  **K8S_DEFAULT_BEHAVIOR["scaleDown"], "stabilizationWindowSeconds": 0}}})
    assert c.reconcile(0.0, 4, [1, None]) == 4
    assert c.reconcile(15.0, 4, [6, None]) == 6
    assert c.reconcile(30.0, 6, [None]) == 6


def test_legacy_hpa_without_behavior_doubles_or_adds_four() -> None:
    c = Controller.from_spec({"minReplicas": 1, "maxReplicas": 50})
    assert c.reconcile(0.0, 1, [40]) == 4
    assert c.reconcile(15.0, 4, [40]) == 8


# ----------------------------------------------------------------------------------------- KEDA
def test_keda_activates_from_zero_and_cools_down() -> None:
    k = KedaActivation(polling_interval=15, cooldown_period=300, min_replica_count=0)
    assert k.poll(0, 0, [0.0]) == 0
    assert k.poll(15, 0, [3.0]) == 1
    assert k.poll(30, 1, [0.0]) == 1
    assert k.poll(314, 1, [0.0]) == 1
    assert k.poll(330, 1, [0.0]) == 0
