"""The autoscaling chain: exporter -> Prometheus scrape -> adapter rule -> custom metrics API -> HPA -> Deployment.

Each link is a different resource, so most checks here are stack policies: an HPA is only correct if some other
resource of the stack serves its metric, scrapes its pods and is the thing it scales. The failures these catch
are silent at apply time (the HPA shows ``<unknown>`` and never scales).
"""
from __future__ import annotations

import threading
from typing import Any

from gpuplatform.catalogs.gpus import close_matches
from gpuplatform.catalogs.metrics import METRICS, metric_range
from gpuplatform.catalogs.kubernetes import hpa_replica_bounds as hpa_replica_bounds_of
from gpuplatform.catalogs.kubernetes import (NOT_SCALABLE_KINDS, REMOVED_APIS, SCALE_SUBRESOURCE_KINDS, api_group)
from gpuplatform.policies import k8s
from gpuplatform.policies.registry import ADVISORY, HIGH, LOW, MEDIUM, prop, resource_policy, stack_policy
from gpuplatform.policies.stack import adapter_config_error, hpa_metrics, lookup_metric

CATEGORY = "autoscaling"
CUSTOM_METRIC_TYPES = ("Pods", "Object")


@stack_policy(
    "hpa-metric-served",
    "Every Pods/Object metric an HPA asks for must be served by an adapter rule of the stack (prometheus-adapter "
    "or ack-alibaba-cloud-metrics-adapter values, or an adapter config in a ConfigMap); otherwise the HPA reports "
    "FailedGetPodsMetric and never scales (the NVIDIA article's HPA asked for avg_time_queue_ms while its adapter "
    "served avg_time_queue_us).",
    category=CATEGORY, severity=HIGH,
    refs=("prometheus-adapter#644", "helm-charts#4574"),
    config={"externalMetrics": prop("array", "Metric names served by an adapter outside the checked resources.",
                                    [], items={"type": "string"})},
    remediation="Name the metric as the rule's name.as renames it, or add a rule for it.")
def hpa_metric_served(view, config, report):
    served = view.served_metrics | set(config["externalMetrics"])
    for s in view.scalers:
        for m in s.metrics:
            if m.type not in CUSTOM_METRIC_TYPES or m.name in served:
                continue
            if not view.adapter_rule_sets:
                broken = view.adapter_config_errors
                if not broken:
                    continue  # nothing to compare with: context-cannot-verify says so, as an advisory
                cm, key, error = broken[0]
                why = f"the adapter config in {cm.label} ({key}) is not valid YAML: {error}"
            else:
                near = close_matches(m.name, served)
                why = "no adapter rule serves it" + (f" (did you mean {', '.join(near)}?)" if near else
                                                     f"; served: {', '.join(sorted(served)) or 'none'}")
            report(f"{s.resource.label} asks for {m.type} metric '{m.name}', but {why}", s.resource)


@resource_policy(
    "adapter-config-valid",
    "A prometheus-adapter configuration held in a ConfigMap must be valid YAML with a list of rules: the adapter "
    "refuses to start on a config it cannot parse, and every HPA on custom metrics stops.",
    category=CATEGORY, severity=HIGH, kinds=("ConfigMap",),
    refs=("prometheus-adapter docs/config.md", "prometheus-adapter cmd/adapter/adapter.go (config load)"),
    remediation="Fix the YAML at the line the message names.")
def adapter_config_valid(r, config, report):
    for key, value in k8s.as_map(k8s.get(r.props, "data")).items():
        error = adapter_config_error(value)
        if error:
            report(f"{r.label} data '{key}' is an adapter config that does not parse: {error}")


def _monitor_namespaces(monitor) -> tuple[bool, set[str]]:
    sel = k8s.as_map(k8s.get(monitor.props, "spec", "namespaceSelector"))
    if sel.get("any") is True:
        return True, set()
    names = {str(n) for n in k8s.as_list(sel.get("matchNames"))}
    return False, names or {monitor.namespace}


def scrapes(view, monitor, workload, pod_labels, ports) -> bool:
    """Whether the PodMonitor or ServiceMonitor ``monitor`` scrapes the pods (``pod_labels``, port names ``ports``)
    of ``workload``."""
    any_ns, namespaces = _monitor_namespaces(monitor)
    if not any_ns and workload.namespace not in namespaces:
        return False
    selector = k8s.get(monitor.props, "spec", "selector")
    if monitor.kind == "PodMonitor":
        if not k8s.selects(selector, pod_labels):
            return False
        endpoints = k8s.as_list(k8s.get(monitor.props, "spec", "podMetricsEndpoints"))
        return any(k8s.get(e, "port") in ports or k8s.get(e, "targetPort") is not None for e in endpoints)
    for svc in view.objects("Service"):
        if svc.namespace != workload.namespace:
            continue
        if not k8s.selects(selector, k8s.as_map(k8s.get(svc.props, "metadata", "labels"))):
            continue
        if k8s.selects(k8s.get(svc.props, "spec", "selector"), pod_labels):
            return True
    return False


@stack_policy(
    "hpa-app-metric-scraped",
    "An HPA on an inference-server metric (catalog category 'app') needs a PodMonitor or ServiceMonitor that "
    "selects the target's pods, in their namespace, on a port the pods expose; without the scrape the adapter has "
    "no series to serve.",
    category=CATEGORY, severity=HIGH,
    refs=("kube-linter dangling-servicemonitor",),
    remediation="Give the workload a port with protocol 'metrics', or set 'metricsPath' on the serving port that "
                "exposes the metrics (vLLM: 8000, /metrics), so the component creates the PodMonitor.")
def hpa_app_metric_scraped(view, config, report):
    monitors = view.objects("PodMonitor", "ServiceMonitor")
    if not monitors:
        return  # scrape configuration elsewhere (Helm values, a managed Prometheus): context-cannot-verify
    for s, target in view.scaled_targets():
        app = [m for m in s.metrics if (found := lookup_metric(m.name)) and found[0].category == "app"]
        if not app:
            continue
        spec = k8s.workload_pod_spec(target.kind, target.props)
        if spec is None:
            continue  # a custom kind (LeaderWorkerSet, Rollout) whose pod template we do not read
        labels = k8s.pod_labels(target.kind, target.props)
        ports = {k8s.get(p, "name") for c in k8s.containers(spec, init=False)
                 for p in k8s.as_list(k8s.get(c, "ports"))}
        if not any(scrapes(view, mon, target, labels, ports) for mon in monitors):
            report(f"{s.resource.label} scales on '{app[0].name}', scraped from the pods of {target.label}, but no "
                   f"PodMonitor/ServiceMonitor selects those pods in namespace {target.namespace}", s.resource)


@stack_policy(
    "hpa-target-exists",
    "An autoscaler's scaleTargetRef must name a kind with a scale subresource (Deployment, StatefulSet, "
    "ReplicaSet, LeaderWorkerSet, Argo Rollout, ...) by an API version that is still served, and, when the target "
    "is among the checked resources, one in the autoscaler's namespace (the NVIDIA article's HPA points at "
    "apps/v1beta1, which no current cluster serves).",
    category=CATEGORY, severity=HIGH,
    refs=("kube-score horizontalpodautoscaler-has-target", "kube-linter dangling-horizontalpodautoscaler",
          "Gatekeeper K8sHorizontalPodAutoscaler", "HPA docs: any resource with a scale subresource"),
    remediation="Point scaleTargetRef at the workload with its current apiVersion (apps/v1 for Deployments).")
def hpa_target_exists(view, config, report):
    for s in view.scalers:
        if s.target_kind in NOT_SCALABLE_KINDS:
            report(f"{s.resource.label} targets kind '{s.target_kind}', which has no scale subresource; "
                   f"scalable kinds: {', '.join(SCALE_SUBRESOURCE_KINDS)}", s.resource)
            continue
        av = s.target_api_version
        if av and av in REMOVED_APIS:
            (major, minor), replacement = REMOVED_APIS[av]
            report(f"{s.resource.label} targets {s.target_kind} {s.target_name} by {av}, removed in Kubernetes "
                   f"{major}.{minor}; use {replacement}", s.resource)
        elif av and s.target_kind in SCALE_SUBRESOURCE_KINDS and \
                api_group(av) not in SCALE_SUBRESOURCE_KINDS[s.target_kind]:
            groups = " or ".join(g or "core" for g in SCALE_SUBRESOURCE_KINDS[s.target_kind])
            report(f"{s.resource.label} targets {s.target_kind} {s.target_name} by {av}; {s.target_kind} is "
                   f"served by the {groups} API group", s.resource)


@stack_policy(
    "context-cannot-verify",
    "Cross-object checks whose other half is not among the checked inputs: an autoscaler's target, the adapter "
    "configuration serving its custom metrics (Helm values, a managed adapter), the monitor scraping its "
    "inference-server metric, a scale target of a custom kind. Reported as advisory 'cannot verify', never as a "
    "violation: check the objects together to verify them.",
    category=CATEGORY, severity=LOW, level=ADVISORY,
    refs=("kube-score horizontalpodautoscaler-has-target (skips external targets)",),
    config={"allowExternalTargets": prop("boolean", "Do not mention targets that are not among the checked "
                                         "resources.", False),
            "externalMetrics": prop("array", "Metric names served by an adapter outside the checked resources.",
                                    [], items={"type": "string"})},
    remediation="Check the autoscaler together with its target, the adapter config and the monitors, or list "
                "externally served metrics in hpa-metric-served's externalMetrics.")
def context_cannot_verify(view, config, report):
    no_adapter = not view.adapter_rule_sets and not view.adapter_config_errors
    no_monitors = not view.objects("PodMonitor", "ServiceMonitor")
    for s in view.scalers:
        target = view.target_of(s)
        if target is None and s.target_kind not in NOT_SCALABLE_KINDS and not config["allowExternalTargets"]:
            why = ("" if s.target_kind in SCALE_SUBRESOURCE_KINDS else
                   f"; nor that kind {s.target_kind} has a scale subresource")
            report(f"cannot verify {s.resource.label}: its target {s.target_kind} {s.resource.namespace}/"
                   f"{s.target_name} is not among the checked resources{why}", s.resource)
        custom = [m.name for m in s.metrics if m.type in CUSTOM_METRIC_TYPES and m.name not in config[
            "externalMetrics"]]
        if custom and no_adapter:
            report(f"cannot verify that {', '.join(repr(n) for n in custom)} of {s.resource.label} "
                   f"{'is' if len(custom) == 1 else 'are'} served: no adapter configuration is among the checked "
                   f"resources", s.resource)
        app = [m.name for m in s.metrics if (found := lookup_metric(m.name)) and found[0].category == "app"]
        if app and target is not None and no_monitors:
            report(f"cannot verify that '{app[0]}' of {s.resource.label} is scraped from {target.label}: no "
                   f"PodMonitor or ServiceMonitor is among the checked resources", s.resource)


@resource_policy(
    "hpa-pods-metric-average-value",
    "Pods metrics are averaged over the pods, so their target must be type AverageValue; 'Utilization' is only "
    "defined for Resource metrics (the ACK guide's HPA pairs type Utilization with averageValue).",
    category=CATEGORY, severity=LOW, level=ADVISORY, hardening=True, kinds=("HorizontalPodAutoscaler",),
    refs=("kubernetes validation.go (Pods metric requires averageValue)",),
    remediation="target: {type: AverageValue, averageValue: <per-pod value>}.")
def pods_metric_average_value(r, config, report):
    for m in hpa_metrics(k8s.as_map(k8s.get(r.props, "spec"))):
        if m.type != "Pods":
            continue
        ttype = m.target.get("type")
        # a Pods metric without averageValue is no advisory matter: the API server refuses it
        # (gpuplatform/apiserver.py, kubernetes validatePodsSource), and check and plan report it as that refusal
        if ttype is not None and ttype != "AverageValue":
            report(f"{r.label}: Pods metric '{m.name}' has target type {ttype}; use AverageValue")


def _exporters(view) -> set[str]:
    """Which GPU exporters the checked resources run: the ACK adapter release implies ACK's exporter; a
    dcgm-exporter release or DaemonSet (by image) dcgm-exporter."""
    from gpuplatform.catalogs.system_components import matches
    from gpuplatform.policies.stack import ACK_ADAPTER_CHART

    found = set()
    if view.releases(ACK_ADAPTER_CHART):
        found.add("ack")
    if view.releases("dcgm-exporter") or any(
            matches(str(k8s.get(c, "image", default="")), ("nvidia/k8s/dcgm-exporter",))
            for d in view.objects("DaemonSet") for c in k8s.containers(k8s.workload_pod_spec(d.kind, d.props))):
        found.add("dcgm")
    return found


@stack_policy(
    "hpa-metric-per-pod",
    "A Pods metric must be one the exporter reports per pod: node-level series (e.g. the ACK exporter's device "
    "utilization) cannot be averaged over an HPA's pods. A name two exporters share (DCGM_FI_DEV_GPU_UTIL: "
    "per node from ACK's exporter, per pod from dcgm-exporter with Kubernetes attribution) is judged by the "
    "exporter among the checked resources, and not at all when none is.",
    category=CATEGORY, severity=MEDIUM,
    refs=("ACK GPU-metric HPA guide (node-only metrics)", "dcgm-exporter#138 (pod attribution)"),
    remediation="Use a per-pod metric of the catalog (scope 'pod') for the stack's exporter.")
def metric_per_pod(view, config, report):
    exporters = _exporters(view)
    for s in view.scalers:
        for m in s.metrics:
            if m.type != "Pods":
                continue
            sources = [src for metric in METRICS.values() for src in metric.sources
                       if m.name == src.api_name or m.name in src.names]
            if exporters:
                sources = [src for src in sources if src.exporter in exporters]
            if sources and all(src.scope != "pod" for src in sources):
                report(f"{s.resource.label}: '{m.name}' is reported per node by the {sources[0].exporter} exporter, "
                       f"not per pod", s.resource)


@resource_policy(
    "hpa-metric-scales-down",
    "Metrics that never fall when load falls (GPU memory: servers pre-allocate and keep it) keep an HPA at its "
    "peak replica count.",
    category=CATEGORY, severity=LOW, level=ADVISORY, hardening=True, kinds=("HorizontalPodAutoscaler",),
    refs=("prometheus-adapter#644",),
    remediation="Scale on utilization or queue metrics; keep memory metrics for alerts.")
def metric_scales_down(r, config, report):
    for m in hpa_metrics(k8s.as_map(k8s.get(r.props, "spec"))):
        found = lookup_metric(m.name)
        if found and not found[0].scale_down_reliable:
            report(f"{r.label}: '{m.name}' ({found[0].name}) does not fall when load falls, so the HPA "
                   f"will not scale down")


@resource_policy(
    "hpa-replica-bounds",
    "An HPA must be able to scale: minReplicas >= the configured floor and maxReplicas > minReplicas.",
    category=CATEGORY, severity=MEDIUM, kinds=("HorizontalPodAutoscaler",),
    refs=("Polaris hpaMaxAvailability", "Polaris hpaMinAvailability", "kube-score horizontalpodautoscaler-replicas"),
    config={"minReplicas": prop("integer", "Lowest allowed minReplicas.", 1, minimum=1)},
    remediation="Raise maxReplicas above minReplicas.")
def hpa_replica_bounds(r, config, report):
    spec = k8s.as_map(k8s.get(r.props, "spec"))
    for _kind, _field, reason in hpa_replica_bounds_of(k8s.quantity(spec.get("minReplicas")),
                                                k8s.quantity(spec.get("maxReplicas")), config["minReplicas"]):
        report(f"{r.label}: {reason}")


class AuthoredScaling:
    """Authored inputs of workloads and autoscalers, as the engine's ``Analyze`` calls hand them over.

    Whether a workload's ``spec.replicas`` was *authored* only its inputs tell: its outputs, which are all
    ``AnalyzeStack`` sees, carry ``spec.replicas`` after every deployment (the API server defaults it to 1, the HPA
    controller writes its choice through the scale subresource). The engine calls ``Analyze`` with the inputs of
    every resource it registers, unchanged ones included (pulumi ``pkg/resource/deploy/step_generator.go``,
    ``analyzeAll``), one resource per call, in one analyzer process per update. So the policy remembers, per
    stack, which workloads authored a replica count and which workloads an autoscaler targets, and reports on
    whichever of a pair arrives second: every pair once, in any order. The engine may analyze in parallel, hence
    the lock; a re-analyzed resource replaces what was remembered of it."""

    def __init__(self):
        self._lock = threading.Lock()
        self._replicas: dict[tuple, dict[str, tuple[str, Any]]] = {}
        self._scalers: dict[tuple, dict[str, str]] = {}

    def reset(self) -> None:
        with self._lock:
            self._replicas.clear()
            self._scalers.clear()

    @staticmethod
    def _stack(urn: str) -> str:
        return "::".join(urn.split("::")[:2])

    def workload(self, r, replicas) -> list[str]:
        """Record a workload; the labels of the autoscalers already known to target it if it sets replicas."""
        key = (self._stack(r.urn), r.namespace, r.kind, r.obj_name)
        with self._lock:
            for entries in self._replicas.values():
                entries.pop(r.urn, None)
            if replicas is None:
                return []
            self._replicas.setdefault(key, {})[r.urn] = (r.label, replicas)
            # two objects may share a label (the same manifest applied from two files): one finding each way
            return sorted(set(self._scalers.get(key, {}).values()))

    def scaler(self, r, target_kind: str, target_name: str) -> list[tuple[str, Any]]:
        """Record an autoscaler; the (label, replicas) of known workloads it targets that set replicas."""
        key = (self._stack(r.urn), r.namespace, target_kind, target_name)
        with self._lock:
            for entries in self._scalers.values():
                entries.pop(r.urn, None)
            self._scalers.setdefault(key, {})[r.urn] = r.label
            return sorted(set(self._replicas.get(key, {}).values()), key=str)


AUTHORED_SCALING = AuthoredScaling()


@resource_policy(
    "deployment-no-replicas-with-autoscaler",
    "A workload scaled by an HPA or ScaledObject must not author spec.replicas: every update resets the replica "
    "count the autoscaler chose (and server-side apply conflicts with the controller manager). Judged on inputs: "
    "the live object always has spec.replicas, set by the API server or the autoscaler.",
    category=CATEGORY, severity=MEDIUM, level=ADVISORY, hardening=True,
    kinds=("Deployment", "StatefulSet", "HorizontalPodAutoscaler", "ScaledObject"),
    refs=("kube-score deployment-targeted-by-hpa-does-not-have-replicas-configured", "pulumi-kubernetes#2491"),
    remediation="Remove spec.replicas from the Deployment.", reset=AUTHORED_SCALING.reset)
def no_replicas_with_autoscaler(r, config, report):
    spec = k8s.as_map(k8s.get(r.props, "spec"))
    if r.kind in ("Deployment", "StatefulSet"):
        replicas = spec.get("replicas")
        for scaler in AUTHORED_SCALING.workload(r, replicas):
            report(f"{r.label} sets spec.replicas={_number(replicas)} but is scaled by {scaler}")
        return
    ref = k8s.as_map(spec.get("scaleTargetRef"))
    kind = str(ref.get("kind") or ("Deployment" if r.kind == "ScaledObject" else ""))
    for workload, replicas in AUTHORED_SCALING.scaler(r, kind, str(ref.get("name") or "")):
        report(f"{r.label} scales {workload}, which sets spec.replicas={_number(replicas)}")


def _number(value) -> str:
    q = k8s.quantity(value)
    return k8s.fmt_number(q) if q is not None else str(value)


def _series_in(query: str) -> list[str]:
    """Metric names a PromQL query reads (identifiers followed by ``{`` or ``[`` or standing alone), in order."""
    import re

    return re.findall(r"(?<![\w:.\"'])([A-Za-z_:][A-Za-z0-9_:]*)\s*(?=[{\[)]|$|\s)", query)


def scaler_targets(r) -> list[tuple[str, float, str]]:
    """(metric name, per-pod target, path of the target) of the targets an autoscaler compares a per-pod average
    with: an HPA's Pods metrics and AverageValue targets of Object/External metrics, a KEDA ScaledObject's
    Prometheus triggers (metricType AverageValue, KEDA's default) on a query that reads one series without
    rescaling it, and an AIBrix PodAutoscaler's metric sources."""
    import re

    spec = k8s.as_map(k8s.get(r.props, "spec"))
    out = []
    if r.kind == "HorizontalPodAutoscaler":
        for i, m in enumerate(k8s.as_list(spec.get("metrics"))):
            mtype = str(k8s.get(m, "type", default=""))
            key = mtype[:1].lower() + mtype[1:]
            name = k8s.get(m, key, "metric", "name")
            target = k8s.as_map(k8s.get(m, key, "target"))
            value = k8s.quantity(target.get("averageValue"))
            if mtype in ("Pods", "Object", "External") and name and value is not None:
                out.append((str(name), value, f"spec.metrics[{i}].{key}.target.averageValue"))
    elif r.kind == "ScaledObject":
        for i, t in enumerate(k8s.as_list(spec.get("triggers"))):
            meta = k8s.as_map(k8s.get(t, "metadata"))
            if k8s.get(t, "type") != "prometheus" or str(k8s.get(t, "metricType") or "AverageValue") != "AverageValue":
                continue
            query, threshold = str(meta.get("query") or ""), k8s.quantity(meta.get("threshold"))
            bare = re.sub(r"\{[^{}]*\}|\[[^\[\]]*\]", "", query)  # label matchers and range selectors
            if threshold is None or re.search(r"[*/+-]|\b(?:count|scalar|vector)\b", bare):
                continue  # a rescaled or combined value: its range is not the series'
            known = [n for n in _series_in(query) if metric_range(n)]
            if len(set(known)) == 1:
                out.append((known[0], threshold, f"spec.triggers[{i}].metadata.threshold"))
    elif r.kind == "PodAutoscaler" and "aibrix" in str(r.api_version or ""):
        sources = [(f"spec.metricsSources[{i}]", s) for i, s in enumerate(k8s.as_list(spec.get("metricsSources")))]
        sources += [("spec", spec)] if spec.get("targetMetric") else []
        for where, s in sources:
            name, value = k8s.get(s, "targetMetric"), k8s.quantity(k8s.get(s, "targetValue"))
            if name and value is not None:
                out.append((str(name), value, f"{where}.targetValue"))
    return out


@resource_policy(
    "autoscaler-target-in-range",
    "An autoscaler's target must lie within the range of the metric it scales on, for the metrics the catalog "
    "knows: a per-pod average of a 0-1 ratio (vLLM's KV-cache usage, SGLang's token usage, DCGM's engine active) "
    "never reaches 50, so the workload never scales up; nor does a percent (GPU utilization, 0-100) reach 150. "
    "HPA, KEDA (Prometheus triggers) and AIBrix PodAutoscaler targets are read.",
    category=CATEGORY, severity=HIGH, kinds=("HorizontalPodAutoscaler", "ScaledObject", "PodAutoscaler"),
    refs=("catalogs/metrics.py (units and their largest values)", "vLLM metrics: kv_cache_usage_perc, 1 = 100 %",
          "KEDA prometheus scaler: threshold, metricType AverageValue"),
    remediation="Write the target in the metric's own unit: 0.8 for 80 % of a ratio.")
def autoscaler_target_in_range(r, config, report):
    for name, value, where in scaler_targets(r):
        found = metric_range(name)
        if found is None:
            continue
        metric, unit = found
        if value > unit.maximum:
            example = k8s.fmt_number(unit.maximum * 0.8)
            report(f"{r.label} targets {k8s.fmt_number(value)} on '{name}' ({metric}), which runs 0-"
                   f"{k8s.fmt_number(unit.maximum)} ({unit.description}): the average never reaches the target and "
                   f"the workload never scales up; allowed: a target within 0-{k8s.fmt_number(unit.maximum)}, "
                   f"e.g. {example} at {where}")
