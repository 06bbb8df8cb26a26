"""A read-only index over all resources of a stack, for the cross-resource policies.

It answers the questions several policies share: which pool a Deployment runs on, which Deployment an HPA
scales, which metric names the stack's adapter rules serve, what the platform component says about the
environment. Sources are our components' props when present and the Kubernetes objects otherwise, so the same
policies work on a synthesized stack and on plain YAML.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Iterable, Iterator, Mapping, Optional

import yaml

from gpuplatform.catalogs import sharing
from gpuplatform.catalogs.metrics import METRICS, MetricDef, MetricSource, served_names
from gpuplatform.catalogs.versions import CHARTS
from gpuplatform.policies import k8s
from gpuplatform.policies.resource import Resource, resource_from

PLATFORM_TYPE = "gpuplatform:index:GpuPlatform"
POOL_TYPE = "gpuplatform:index:GpuNodePool"
CLUSTER_TYPE = "gpuplatform:index:GpuCluster"
RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
ACK_NODE_POOL_TYPE = "alicloud:cs/nodePool:NodePool"
ACK_CLUSTER_TYPES = ("alicloud:cs/managedKubernetes:ManagedKubernetes", "alicloud:cs/kubernetes:Kubernetes")

PROMETHEUS_ADAPTER_CHART = CHARTS["prometheus-adapter"].name
ACK_ADAPTER_CHART = CHARTS["ack-alibaba-cloud-metrics-adapter"].name
ADAPTER_RULE_PATHS = {
    PROMETHEUS_ADAPTER_CHART: ("rules", "custom"),
    ACK_ADAPTER_CHART: ("AlibabaCloudMetricsAdapter", "prometheus", "adapter", "rules", "custom"),
}


def chart_name(props: Any) -> str:
    """Chart of a Release: ``prometheus-community/prometheus-adapter`` and OCI URLs reduce to the last segment."""
    chart = k8s.get(props, "chart", default="")
    return str(chart).rstrip("/").rsplit("/", 1)[-1] if isinstance(chart, str) else ""


def parse_k8s_version(value: Any) -> Optional[tuple[int, int]]:
    m = re.match(r"^v?(\d+)\.(\d+)", str(value or ""))
    return (int(m.group(1)), int(m.group(2))) if m else None


@dataclass(frozen=True)
class MetricRef:
    type: str
    """HPA metric source type: ``Pods``, ``Object``, ``External``, ``Resource``, ``ContainerResource``."""
    name: str
    target: Mapping


@dataclass(frozen=True)
class Scaler:
    """An HPA or KEDA ScaledObject, reduced to what the policies compare."""

    resource: Resource
    target_api_version: Optional[str]
    target_kind: str
    target_name: str
    min_replicas: int
    max_replicas: Optional[int]
    metrics: tuple[MetricRef, ...]


def hpa_metrics(spec: Mapping) -> list[MetricRef]:
    out = []
    for m in k8s.as_list(k8s.get(spec, "metrics")):
        mtype = str(k8s.get(m, "type", default=""))
        key = mtype[:1].lower() + mtype[1:]
        body = k8s.as_map(k8s.get(m, key))
        # autoscaling/v2 nests metric.name/target; v2beta1 has metricName/targetAverageValue at the top
        name = k8s.get(body, "metric", "name") or k8s.get(body, "metricName") or k8s.get(body, "name")
        target = k8s.get(body, "target")
        if target is None:
            target = {k: v for k, v in body.items() if k.startswith("target")}
        if name:
            out.append(MetricRef(mtype, str(name), k8s.as_map(target)))
    return out


def lookup_metric(api_name: str) -> Optional[tuple[MetricDef, MetricSource]]:
    """The catalog metric and exporter source an API (or series) name comes from."""
    for metric in METRICS.values():
        for src in metric.sources:
            if api_name == src.api_name:
                return metric, src
    for metric in METRICS.values():
        for src in metric.sources:
            if api_name in src.names:
                return metric, src
    return None


class StackView:
    def __init__(self, resources: Iterable[Resource]):
        self.resources = list(resources)

    @classmethod
    def from_policy_resources(cls, policy_resources) -> "StackView":
        return cls(resource_from(p.resource_type, p.name, p.urn, p.props,
                                 getattr(p.opts, "protect", False) if p.opts else False)
                   for p in policy_resources)

    # -------------------------------------------------------------------------------------------- selection
    def of_type(self, *types: str) -> list[Resource]:
        return [r for r in self.resources if r.type in types]

    def objects(self, *kinds: str) -> list[Resource]:
        """Kubernetes objects (not patches, not Helm releases) of the given kinds."""
        return [r for r in self.resources
                if r.type.startswith("kubernetes:") and not k8s.is_patch(r.type) and r.kind in kinds
                and "helm.sh" not in r.type]

    def object(self, kind: str, namespace: str, name: str) -> Optional[Resource]:
        return next((r for r in self.objects(kind) if r.namespace == namespace and r.obj_name == name), None)

    # -------------------------------------------------------------------------------------------- platform
    @cached_property
    def platform(self) -> Mapping:
        """The environment, cluster version and exposure setting of the stack: a GpuPlatform's, or in a program that
        composes the components itself, its GpuCluster's (both register them)."""
        found = self.of_type(PLATFORM_TYPE) or self.of_type(CLUSTER_TYPE)
        return found[0].props if found else {}

    def environment(self, config: Mapping) -> Optional[str]:
        return config.get("environment") or k8s.get(self.platform, "environment")

    def kubernetes_version(self, config: Mapping) -> Optional[tuple[int, int]]:
        return parse_k8s_version(config.get("kubernetesVersion") or k8s.get(self.platform, "kubernetesVersion"))

    # -------------------------------------------------------------------------------------------- pools
    @cached_property
    def pools(self) -> dict[str, Mapping]:
        out = {}
        for r in self.of_type(POOL_TYPE):
            name = k8s.get(r.props, "poolName") or r.name
            out[str(name)] = r.props
        return out

    def pool_of(self, workload: Resource) -> Optional[Mapping]:
        """The GpuNodePool a workload selects by its nodeSelector."""
        spec = k8s.workload_pod_spec(workload.kind, workload.props)
        selector = k8s.as_map(k8s.get(spec, "nodeSelector"))
        name = selector.get(sharing.POOL_LABEL)
        if name is not None and str(name) in self.pools:
            return self.pools[str(name)]
        for pool in self.pools.values():
            pool_sel = k8s.as_map(k8s.get(pool, "nodeSelector"))
            if pool_sel and all(selector.get(k) == v for k, v in pool_sel.items()):
                return pool
        return None

    def pool_mode(self, workload: Resource) -> Optional[str]:
        pool = self.pool_of(workload)
        spec = k8s.workload_pod_spec(workload.kind, workload.props)
        if pool is not None and k8s.get(pool, "sharingMode"):
            if k8s.as_list(k8s.get(pool, "migLayout")):
                # a per-GPU layout (always the mixed strategy) serves MIG instances and whole GPUs: the pod's own
                # resource tells which it holds, and a whole GPU is the pod's alone
                asked = k8s.pod_gpu_resources(spec)
                whole = sharing.RESOURCE_GPU in asked and k8s.mode_of_resources(asked) is None
                return "exclusive" if whole else "mig"
            return str(k8s.get(pool, "sharingMode"))
        return k8s.mode_of_resources(k8s.pod_gpu_resources(spec))

    # -------------------------------------------------------------------------------------------- adapters
    def releases(self, chart: str) -> list[Resource]:
        return [r for r in self.of_type(RELEASE_TYPE) if chart_name(r.props) == chart]

    @cached_property
    def adapter_rule_sets(self) -> list[tuple[Resource, list]]:
        """(source, rules) for every adapter configuration in the stack: Helm values or a ConfigMap."""
        out = []
        for chart, path in ADAPTER_RULE_PATHS.items():
            for rel in self.releases(chart):
                rules = k8s.get(rel.props, "values", *path)
                out.append((rel, [r for r in k8s.as_list(rules) if k8s.is_map(r)]))
        for cm in self.objects("ConfigMap"):
            for value in k8s.as_map(k8s.get(cm.props, "data")).values():
                rules = _adapter_rules_in(value)
                if rules is not None:
                    out.append((cm, rules))
        return out

    @cached_property
    def adapter_config_errors(self) -> list[tuple[Resource, str, str]]:
        """(ConfigMap, key, parse error) of every adapter config that cannot be read."""
        out = []
        for cm in self.objects("ConfigMap"):
            for key, value in k8s.as_map(k8s.get(cm.props, "data")).items():
                error = adapter_config_error(value)
                if error:
                    out.append((cm, str(key), error))
        return out

    @cached_property
    def served_metrics(self) -> set[str]:
        names: set[str] = set()
        for _, rules in self.adapter_rule_sets:
            names |= served_names([_expand_as(k8s.plain(r)) for r in rules])
        return names

    # -------------------------------------------------------------------------------------------- scaling
    @cached_property
    def scalers(self) -> list[Scaler]:
        out = []
        for r in self.objects("HorizontalPodAutoscaler"):
            spec = k8s.as_map(k8s.get(r.props, "spec"))
            ref = k8s.as_map(spec.get("scaleTargetRef"))
            mx = k8s.quantity(spec.get("maxReplicas"))
            mn = k8s.quantity(spec.get("minReplicas"))
            out.append(Scaler(r, ref.get("apiVersion"), str(ref.get("kind") or ""), str(ref.get("name") or ""),
                              int(mn) if mn is not None else 1, int(mx) if mx is not None else None,
                              tuple(hpa_metrics(spec))))
        for r in self.objects("ScaledObject"):
            spec = k8s.as_map(k8s.get(r.props, "spec"))
            ref = k8s.as_map(spec.get("scaleTargetRef"))
            mx = k8s.quantity(spec.get("maxReplicaCount"))
            mn = k8s.quantity(spec.get("minReplicaCount"))
            out.append(Scaler(r, ref.get("apiVersion"), str(ref.get("kind") or "Deployment"),
                              str(ref.get("name") or ""), int(mn) if mn is not None else 0,
                              int(mx) if mx is not None else 100, ()))
        return out

    def target_of(self, scaler: Scaler) -> Optional[Resource]:
        return self.object(scaler.target_kind, scaler.resource.namespace, scaler.target_name)

    def scaled_targets(self) -> Iterator[tuple[Scaler, Resource]]:
        """Each autoscaler with the workload it scales; those whose target is not in the stack are left out."""
        for scaler in self.scalers:
            target = self.target_of(scaler)
            if target is not None:
                yield scaler, target

    def scalers_of(self, workload: Resource) -> list[Scaler]:
        return [s for s in self.scalers if s.target_kind == workload.kind and s.target_name == workload.obj_name
                and s.resource.namespace == workload.namespace]


def _looks_like_adapter_config(value: Any) -> bool:
    return isinstance(value, str) and "seriesQuery" in value


def adapter_config_error(value: Any) -> Optional[str]:
    """Why a ConfigMap value that is meant as a prometheus-adapter config cannot be read (the YAML parser's
    message with its line and column), or None when it parses to a mapping or is no adapter config at all."""
    if not _looks_like_adapter_config(value):
        return None
    try:
        doc = yaml.safe_load(value)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        return where + str(getattr(exc, "problem", None) or exc)
    if not isinstance(doc, dict):
        return f"a {type(doc).__name__} instead of a mapping with 'rules'"
    return None


def _adapter_rules_in(value: Any) -> Optional[list]:
    """Rules of a prometheus-adapter config file held in a ConfigMap value, or None if it is not one."""
    if not _looks_like_adapter_config(value) or adapter_config_error(value):
        return None
    doc = yaml.safe_load(value)
    rules = doc.get("rules") if isinstance(doc, dict) else None
    if not isinstance(rules, list):
        return None
    return [r for r in rules if isinstance(r, dict)]


def _expand_as(rule: dict) -> dict:
    """Resolve capture references in ``name.as`` (``${1}_GPU_MEM_USED_RATIO``) against the discovered series,
    as the adapter does, so the served name is the one the API lists."""
    name = rule.get("name") if isinstance(rule.get("name"), dict) else None
    as_ = name.get("as") if name else None
    if not as_ or "$" not in str(as_):
        return rule
    m = re.match(r"^\s*([a-zA-Z_:][a-zA-Z0-9_:]*)", str(rule.get("seriesQuery", "")))
    matches = str(name.get("matches") or "")
    if not m or not matches:
        return rule
    try:
        expanded = re.sub(matches, re.sub(r"\$\{?(\d+)\}?", r"\\g<\1>", str(as_)), m.group(1))
    except re.error:
        return rule
    return {**rule, "name": {**name, "as": expanded}}
