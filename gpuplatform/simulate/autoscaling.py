"""The autoscalers' loops: the HPA's sync on the adapter's custom metrics, and KEDA's polling plus the HPA it owns.

KEDA (docs "Scaling Deployments", ScaledObject specification, ``pkg/scaling/scale_handler.go`` and
``pkg/scaling/executor/scale_scaledobjects.go``): every ``pollingInterval`` KEDA asks each trigger whether it is
active (its value above ``activationThreshold``, 0 by default); when any is and the target is at zero it scales to
``max(minReplicaCount, 1)``; when none has been for ``cooldownPeriod`` and ``minReplicaCount`` is 0, to zero. From
one replica up, the HPA KEDA creates holds one ``External`` metric per trigger (``AverageValue`` = the trigger's
``threshold``) and follows the largest proposal, so a wake-up trigger also scales on its value. With
``ignoreNullValues`` an empty result reads 0.

A query that returns more than one series is an error, not a sum: KEDA's Prometheus scaler
(``pkg/scalers/prometheus_scaler.go``, ``ExecutePromQuery``) fails with "prometheus query ... returned multiple
elements", so that trigger is not active and its ``External`` metric is unavailable to the HPA (which then keeps
the replicas where that metric would decide, as for any invalid metric). The executor
(``pkg/scaling/executor/scale_scaledobjects.go``, ``RequestScale``) then changes nothing unless another trigger is
active: with no fallback configured (the generated ScaledObject has none) an inactive object with an erroring
scaler stays where it is, neither cooling down to zero nor waking.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from gpuplatform.components.adapter_rules import render_for_pods
from gpuplatform.simulate import hpa as hpa_mod
from gpuplatform.simulate import promql
from gpuplatform.simulate.cluster import Pods


EARLY_S = 0.5
"""Within a second the autoscalers run before Prometheus' scrape (engine.Simulation.step), so they query half a
second before this second's samples: a sample written a whole window earlier is then inside a left-open
``(t - window, t]`` range, as it is on a cluster where the two never fall on the same instant."""


@dataclass(frozen=True)
class Trigger:
    """One metric the autoscaler reads: an adapter source (HPA) or a KEDA trigger's query."""
    metric: str
    target: float
    source: object = None
    query: Optional[str] = None
    activation_threshold: float = 0.0


@dataclass
class Decision:
    """What a sync decided: the replicas set, the proposals (None: metric unavailable) and the value shown."""
    replicas: int
    proposals: list
    shown: Optional[float]


MULTIPLE = "prometheus query returned multiple elements"


def scaler_value(vec) -> tuple[Optional[float], Optional[str]]:
    """What KEDA's Prometheus scaler makes of a query result, with ``ignoreNullValues`` (as generated): (value,
    None), or (None, error) when the result holds more than one series."""
    if isinstance(vec, float):
        return (0.0 if math.isnan(vec) or math.isinf(vec) else vec), None
    if len(vec) > 1:
        return None, f"{MULTIPLE} ({len(vec)} series)"
    if not vec:
        return 0.0, None
    v = vec[0][1]
    return (0.0 if math.isnan(v) or math.isinf(v) else float(v)), None


class HpaLoop:
    """kube-controller-manager's sync of one HPA on ``Pods`` metrics served by the adapter."""

    def __init__(self, controller: hpa_mod.Controller, triggers: list, namespace: str, window: str,
                 prometheus: tuple, minor: int):
        self.controller, self.triggers = controller, triggers
        self.namespace, self.window, self.prometheus, self.minor = namespace, window, prometheus, minor

    def proposals(self, t: float, pods: Pods, spec: int, storage: promql.Storage) -> tuple[list, Optional[float]]:
        names = [p.name for p in pods.pods]
        views = [hpa_mod.PodView(p.name, p.phase(t), p.is_ready(t)) for p in pods.pods]
        out, shown = [], None
        for trig in self.triggers:
            if not names:
                out.append(None)
                continue
            src = trig.source
            vec = promql.evaluate(render_for_pods(src, self.namespace, names, self.window), storage, t - EARLY_S,
                                   self.prometheus)
            values = {}
            for labels, v in vec if isinstance(vec, list) else []:
                pod = labels.get(src.labels.pod)
                if pod is not None and not math.isnan(v):
                    values[pod] = hpa_mod.to_milli(v)
            try:
                rep, usage = hpa_mod.pods_metric_replicas(spec, hpa_mod.to_milli(trig.target), values, views,
                                                          minor=self.minor)
            except hpa_mod.MetricUnavailable:
                out.append(None)
                continue
            out.append(rep)
            shown = usage / 1000 if shown is None else shown
        return out, shown

    def sync(self, t: float, pods: Pods, spec: int, storage: promql.Storage) -> Decision:
        proposals, shown = self.proposals(t, pods, spec, storage)
        return Decision(self.controller.reconcile(t, spec, proposals), proposals, shown)


class KedaLoop:
    """KEDA's polling (activation, 0 <-> 1) and the HPA it owns (``External`` metrics, one per trigger)."""

    def __init__(self, controller: hpa_mod.Controller, triggers: list, activation: hpa_mod.KedaActivation,
                 prometheus: tuple, minor: int):
        self.controller, self.triggers, self.activation = controller, triggers, activation
        self.prometheus, self.minor = prometheus, minor
        self.highest: list[Optional[float]] = [None] * len(triggers)
        """Per trigger, the highest value a poll read (for the reason of a wake-up that never comes)."""
        self.errors: dict[str, str] = {}
        """Trigger metric -> the first error its scaler returned."""

    def values(self, t: float, storage: promql.Storage) -> list[Optional[float]]:
        """Per trigger, the value KEDA reads (None where its scaler errors)."""
        out = []
        for trig in self.triggers:
            value, error = scaler_value(promql.evaluate(trig.query, storage, t - EARLY_S, self.prometheus))
            if error:
                self.errors.setdefault(trig.metric, error)
            out.append(value)
        return out

    def proposals(self, t: float, pods: Pods, spec: int, storage: promql.Storage) -> tuple[list, Optional[float]]:
        if spec == 0:
            return [], None
        out, shown = [], None
        for trig, value in zip(self.triggers, self.values(t, storage)):
            if value is None:
                out.append(None)  # the External metric is unavailable: the HPA's invalid-metric rules apply
                continue
            rep, usage = hpa_mod.external_per_pod_replicas(len(pods.pods), hpa_mod.to_milli(trig.target),
                                                           [hpa_mod.to_milli(value)], minor=self.minor)
            out.append(rep)
            shown = usage / 1000 if shown is None else shown
        return out, shown

    def sync(self, t: float, pods: Pods, spec: int, storage: promql.Storage) -> Decision:
        proposals, shown = self.proposals(t, pods, spec, storage)
        if spec == 0:
            return Decision(0, proposals, shown)
        return Decision(self.controller.reconcile(t, spec, proposals), proposals, shown)

    def poll(self, t: float, spec: int, storage: promql.Storage) -> int:
        values = self.values(t, storage)
        for k, v in enumerate(values):
            if v is not None and (self.highest[k] is None or v > self.highest[k]):
                self.highest[k] = v
        # each trigger is active above its own activationThreshold; an erroring one is not active
        active = [v - trig.activation_threshold for trig, v in zip(self.triggers, values) if v is not None]
        return self.activation.poll(t, spec, active, error=any(v is None for v in values))

    def keda_reason(self, spec: int) -> Optional[str]:
        """Why KEDA kept a workload where it was: its scaler's error, or (at zero) an activation never reached."""
        if self.errors:
            metric, error = next(iter(self.errors.items()))
            return f"KEDA's scaler for {metric!r} errors ({error}), so KEDA keeps the replicas"
        if spec == 0:
            parts = [f"{trig.metric} highest {'no value' if h is None else f'{h:g}'}, threshold "
                     f"{trig.activation_threshold:g}" for trig, h in zip(self.triggers, self.highest)]
            return ("KEDA never activates: no trigger's value exceeds its activationThreshold ("
                    + "; ".join(parts) + ")")
        return None
