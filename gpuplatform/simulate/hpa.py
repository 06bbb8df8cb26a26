"""The HorizontalPodAutoscaler controller's decision, as kube-controller-manager makes it, and KEDA's activation.

Written from the Kubernetes sources (our own code, not a port):

* ``pkg/controller/podautoscaler/replica_calculator.go``: ``calcPlainMetricReplicas`` (``Pods`` metrics),
  ``groupPods``, ``GetExternalPerPodMetricReplicas`` (``External`` metrics with ``AverageValue``, what KEDA's
  HPA uses);
* ``pkg/controller/podautoscaler/metrics/utilization.go``: ``GetMetricUsageRatio`` averages milli-values with
  integer division;
* ``pkg/controller/podautoscaler/horizontal.go``: ``reconcileAutoscaler`` (min/max clamping, replicas 0 disables
  scaling), ``computeReplicasForMetrics`` (largest proposal; invalid metrics block a scale-down),
  ``stabilizeRecommendationWithBehaviors``, ``convertDesiredReplicasWithBehaviorRate``,
  ``calculateScaleUpLimitWithScalingRules``/``calculateScaleDownLimitWithBehaviors`` (periods counted from the
  scale events strictly newer than ``now - periodSeconds``), and the legacy path without ``behavior``;
* the Kubernetes docs "Horizontal Pod Autoscaling" (algorithm details, scaling policies, default behavior).

Metric values travel as milli-units: prometheus-adapter turns a sample into ``NewMilliQuantity(int64(v*1000))``
and the controller compares ``MilliValue()`` of the value and of the target.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

TOLERANCE = 0.1
"""``--horizontal-pod-autoscaler-tolerance`` default."""
DOWNSCALE_STABILIZATION_S = 300
"""``--horizontal-pod-autoscaler-downscale-stabilization`` default (legacy path without ``behavior``)."""


class MetricUnavailable(Exception):
    """The metric cannot be turned into a replica count this sync (no pods, no values)."""


@dataclass(frozen=True)
class PodView:
    """What the controller reads of a pod: its phase, readiness and whether it is being deleted."""
    name: str
    phase: str = "Running"
    """``Pending`` (not started: scheduling, image pull), ``Running``, ``Failed``."""
    ready: bool = True
    deleting: bool = False


def to_milli(value: float) -> int:
    """prometheus-adapter's conversion of a sample to a quantity (truncates toward zero)."""
    return int(value * 1000.0)


LATEST_MINOR = 34
"""Kubernetes 1.x the controller follows when the stack does not say."""


def within(ratio: float, tolerance: float = TOLERANCE, minor: int = LATEST_MINOR) -> bool:
    """Is the usage ratio within tolerance (no change)? Up to Kubernetes 1.32 the controller tests
    ``math.Abs(1.0-usageRatio) <= tolerance``, where a ratio of exactly 1.1 is 0.10000000000000009 away and scales;
    from 1.33 (configurable tolerance, KEP-4951) it tests ``1-down <= ratio <= 1+up``, where 1.1 is within."""
    if minor <= 32:
        return abs(1.0 - ratio) <= tolerance
    return (1.0 - tolerance) <= ratio <= (1.0 + tolerance)


def pods_metric_replicas(current_replicas: int, target_milli: int, metrics: dict[str, int], pods: list[PodView],
                         tolerance: float = TOLERANCE, minor: int = LATEST_MINOR) -> tuple[int, int]:
    """Proposal for one ``Pods`` metric with an ``AverageValue`` target: (replicas, average usage in milli)."""
    if not pods:
        raise MetricUnavailable("no pods returned by selector while calculating replica count")
    metrics = dict(metrics)
    ready_count, unready, missing, ignored = 0, set(), set(), set()
    for pod in pods:
        if pod.deleting or pod.phase == "Failed":
            ignored.add(pod.name)
        elif pod.phase == "Pending":
            unready.add(pod.name)
        elif pod.name not in metrics:
            missing.add(pod.name)
        else:
            # readiness only sets CPU samples aside; a running pod with a custom metric counts as it is
            ready_count += 1
    for name in ignored | unready:
        metrics.pop(name, None)
    if not metrics:
        raise MetricUnavailable("did not receive metrics for targeted pods (pods might be unready)")

    usage_ratio, usage = usage_ratio_of(metrics, target_milli)
    scale_up_with_unready = bool(unready) and usage_ratio > 1.0
    if not scale_up_with_unready and not missing:
        if within(usage_ratio, tolerance, minor):
            return current_replicas, usage
        return math.ceil(usage_ratio * ready_count), usage

    if missing:
        fill = target_milli if usage_ratio < 1.0 else 0
        if usage_ratio != 1.0:
            for name in missing:
                metrics[name] = fill
    if scale_up_with_unready:
        for name in unready:
            metrics[name] = 0
    new_ratio, _ = usage_ratio_of(metrics, target_milli)
    if within(new_ratio, tolerance, minor) or (usage_ratio < 1.0 < new_ratio) or (usage_ratio > 1.0 > new_ratio):
        return current_replicas, usage
    new_replicas = math.ceil(new_ratio * len(metrics))
    if (new_ratio < 1.0 and new_replicas > current_replicas) or (new_ratio > 1.0 and new_replicas < current_replicas):
        return current_replicas, usage
    return new_replicas, usage


def usage_ratio_of(metrics: dict[str, int], target_milli: int) -> tuple[float, int]:
    """``GetMetricUsageRatio``: integer average of milli-values over the target."""
    total = sum(metrics.values())
    # Go's integer division truncates toward zero
    average = int(total / len(metrics)) if total < 0 else total // len(metrics)
    return average / target_milli, average


def external_per_pod_replicas(status_replicas: int, target_milli: int, values_milli: list[int],
                              tolerance: float = TOLERANCE, minor: int = LATEST_MINOR) -> tuple[int, int]:
    """``GetExternalPerPodMetricReplicas``: the sum of the returned values over (target x pods)."""
    usage = sum(values_milli)
    replicas = status_replicas
    ratio = usage / (target_milli * replicas) if replicas else math.inf
    if not within(ratio, tolerance, minor):
        replicas = math.ceil(usage / target_milli)
    return replicas, math.ceil(usage / status_replicas) if status_replicas else usage


# ------------------------------------------------------------------------------------------------ behavior
@dataclass(frozen=True)
class Policy:
    type: str
    value: int
    period_seconds: int


@dataclass(frozen=True)
class Rules:
    stabilization_window_seconds: int
    select_policy: str
    policies: tuple

    @staticmethod
    def from_dict(d: dict | None, direction: str) -> "Rules":
        """The rules as the API server stores them: a field left out takes its default
        (``pkg/apis/autoscaling/v2/defaults.go``, ``GenerateHPAScaleUpRules``/``GenerateHPAScaleDownRules``): scale-up
        no window and +100 % or +4 pods per 15 s (Max); scale-down a 300 s window and -100 % per 15 s."""
        d = d or {}
        default = DEFAULT_RULES[direction]
        window = d.get("stabilizationWindowSeconds")
        policies = d.get("policies")
        return Rules(default.stabilization_window_seconds if window is None else int(window),
                     d.get("selectPolicy") or default.select_policy,
                     default.policies if not policies else
                     tuple(Policy(p["type"], int(p["value"]), int(p["periodSeconds"])) for p in policies))


DEFAULT_RULES = {
    "scaleUp": Rules(0, "Max", (Policy("Percent", 100, 15), Policy("Pods", 4, 15))),
    "scaleDown": Rules(300, "Max", (Policy("Percent", 100, 15),)),
}


@dataclass
class Controller:
    """One HPA's controller state: recommendations and scale events, as kube-controller-manager keeps them."""

    min_replicas: int
    max_replicas: int
    scale_up: Rules | None = None
    scale_down: Rules | None = None
    tolerance: float = TOLERANCE
    recommendations: list = field(default_factory=list)
    up_events: list = field(default_factory=list)
    down_events: list = field(default_factory=list)

    @staticmethod
    def from_spec(spec: dict, tolerance: float = TOLERANCE) -> "Controller":
        """An HPA spec as applied: with ``behavior`` (even a partial one) the defaulted rules of both directions;
        without, the legacy path (``autoscaling/v2beta1`` objects)."""
        b = spec.get("behavior")
        if b is None:
            return Controller(int(spec.get("minReplicas", 1)), int(spec["maxReplicas"]), None, None, tolerance)
        return Controller(int(spec.get("minReplicas", 1)), int(spec["maxReplicas"]),
                          Rules.from_dict(b.get("scaleUp"), "scaleUp"), Rules.from_dict(b.get("scaleDown"), "scaleDown"),
                          tolerance)

    def clone(self) -> "Controller":
        """An independent copy with the same history."""
        return Controller(self.min_replicas, self.max_replicas, self.scale_up, self.scale_down, self.tolerance,
                          list(self.recommendations), list(self.up_events), list(self.down_events))

    @property
    def has_behavior(self) -> bool:
        return self.scale_up is not None

    def reconcile(self, now: float, current: int, proposals: list) -> int:
        """One sync: ``proposals`` holds, per metric, a replica count or ``None`` when it could not be computed.
        Returns the replicas the scale subresource is set to (``current`` when nothing changes)."""
        if not self.recommendations:
            self.recommendations.append((now, current))
        if current == 0 and self.min_replicas != 0:
            return 0  # "scaling is disabled since the replica count of the target is zero"
        if current > self.max_replicas:
            desired = self.max_replicas
        elif current < self.min_replicas:
            desired = self.min_replicas
        else:
            valid = [p for p in proposals if p is not None]
            invalid = len(proposals) - len(valid)
            metric_desired = max(valid, default=0)
            if invalid >= len(proposals) or (invalid and metric_desired < current):
                return current  # the controller returns an error and does not rescale
            if self.has_behavior:
                desired = self._normalize_with_behaviors(now, current, metric_desired)
            else:
                desired = self._normalize_legacy(now, current, metric_desired)
        if desired != current:
            self._store_event(now, current, desired)
        return desired

    # -- behavior path
    def _normalize_with_behaviors(self, now: float, current: int, desired: int) -> int:
        stabilized = self._stabilize(now, current, desired, self.scale_up.stabilization_window_seconds,
                                     self.scale_down.stabilization_window_seconds)
        if stabilized > current:
            limit = max(self._up_limit(now, current), current)
            return min(stabilized, limit, self.max_replicas)
        if stabilized < current:
            limit = min(self._down_limit(now, current), current)
            return max(stabilized, limit, self.min_replicas)
        return stabilized

    def _stabilize(self, now: float, current: int, desired: int, up_window: int, down_window: int) -> int:
        up_cutoff, down_cutoff = now - up_window, now - down_window
        up_rec = down_rec = desired
        for ts, rec in self.recommendations:
            if ts > up_cutoff:
                up_rec = min(rec, up_rec)
            if ts > down_cutoff:
                down_rec = max(rec, down_rec)
        recommendation = max(current, up_rec)
        recommendation = min(recommendation, down_rec)
        keep = now - max(up_window, down_window, 0)
        self.recommendations = [(ts, r) for ts, r in self.recommendations if ts >= keep]
        self.recommendations.append((now, desired))
        return recommendation

    @staticmethod
    def _changed_in(period: int, events: list, now: float) -> int:
        cutoff = now - period
        return sum(change for ts, change in events if ts > cutoff)

    def _up_limit(self, now: float, current: int) -> int:
        rules = self.scale_up
        if rules.select_policy == "Disabled":
            return current
        pick, result = (min, math.inf) if rules.select_policy == "Min" else (max, -math.inf)
        for p in rules.policies:
            start = (current - self._changed_in(p.period_seconds, self.up_events, now)
                     + self._changed_in(p.period_seconds, self.down_events, now))
            proposed = start + p.value if p.type == "Pods" else math.ceil(start * (1 + p.value / 100))
            result = pick(result, proposed)
        return int(result)

    def _down_limit(self, now: float, current: int) -> int:
        rules = self.scale_down
        if rules.select_policy == "Disabled":
            return current
        pick, result = (max, -math.inf) if rules.select_policy == "Min" else (min, math.inf)
        for p in rules.policies:
            start = (current - self._changed_in(p.period_seconds, self.up_events, now)
                     + self._changed_in(p.period_seconds, self.down_events, now))
            proposed = start - p.value if p.type == "Pods" else int(start * (1 - p.value / 100))
            result = pick(result, proposed)
        return int(result)

    def _store_event(self, now: float, current: int, desired: int) -> None:
        if not self.has_behavior:
            return
        longest = 1800
        if desired > current:
            self.up_events = [(ts, c) for ts, c in self.up_events if ts > now - longest] + [(now, desired - current)]
        else:
            self.down_events = [(ts, c) for ts, c in self.down_events if ts > now - longest] + [(now, current - desired)]

    # -- legacy path (no behavior: autoscaling/v2beta1 objects)
    def _normalize_legacy(self, now: float, current: int, desired: int) -> int:
        # stabilizeRecommendation: only samples strictly before the cutoff are too old (``rec.timestamp.Before``),
        # so one exactly at ``now - 300 s`` still counts
        cutoff = now - DOWNSCALE_STABILIZATION_S
        stabilized = desired
        for ts, rec in self.recommendations:
            if ts >= cutoff:
                stabilized = max(stabilized, rec)
        self.recommendations = [(ts, r) for ts, r in self.recommendations if ts >= cutoff] + [(now, desired)]
        up_limit = max(2 * current, 4)
        maximum = min(self.max_replicas, up_limit)
        return max(self.min_replicas, min(stabilized, maximum))


# ------------------------------------------------------------------------------------------------ KEDA
@dataclass
class KedaActivation:
    """KEDA's own 0 <-> 1 decision (kedacore/keda ``pkg/scaling/executor/scale_scaledobjects.go``,
    ``RequestScale``): active when a trigger's value exceeds its ``activationThreshold``; from zero it scales to
    ``max(1, minReplicaCount)``; back to zero only after no trigger was active for ``cooldownPeriod`` (and only
    when ``minReplicaCount`` is 0). ``scaleToZeroOrIdle`` tests ``LastActiveTime.Add(cooldownPeriod).Before(now)``:
    strictly later, so a poll exactly ``cooldownPeriod`` after the last active one still waits and the next poll
    scales to zero. ``LastActiveTime`` is set by an active poll without a scaler error (and by the wake-up itself);
    an inactive poll with an erroring scaler and no fallback changes nothing."""

    polling_interval: int
    cooldown_period: int = 300
    min_replica_count: int = 0
    activation_threshold: float = 0.0
    last_active: float | None = None

    def poll(self, now: float, replicas: int, values: list[float], error: bool = False) -> int:
        active = any(v > self.activation_threshold for v in values)
        if active:
            if replicas == 0:
                self.last_active = now
                return max(1, self.min_replica_count)
            if not error:
                self.last_active = now
            return replicas
        if error:
            return replicas
        if replicas > 0 and self.min_replica_count == 0:
            since = self.last_active if self.last_active is not None else -math.inf
            if since + self.cooldown_period < now:
                return 0
        return replicas
