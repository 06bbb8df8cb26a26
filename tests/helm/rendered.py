"""Render every Helm release a stack registers, as the cluster would install it.

The values are the ones the program registered (nulls included, as the engine sends them), the chart package is
the pinned version the release names, and the render runs at the stack's Kubernetes minor with the API versions
such a cluster serves: the GA built-ins of that minor plus every CRD group/version the stack's charts install.
"""
from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, field
from typing import Callable

import pytest

import helm_engine
from gpuplatform.catalogs.versions import CHARTS, Chart
from gpuplatform.components.config import PlatformConfig
from gpuplatform.components.validation import kubernetes_version, load
from gpuplatform.records import RegisteredResource
from support import stack_raw, synth

RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
NOT_PUBLIC = {"ack-alibaba-cloud-metrics-adapter"}
"""Charts no public source publishes (only ACK's OSS app catalog): they cannot be rendered offline."""


# ---------------------------------------------------------------------------------------------- configurations
def gpu_operator_mig() -> dict:
    """GPU Operator for MIG on a plain (non-ACK, real GPU) cluster: no stack takes this path."""
    raw = stack_raw("local")
    raw["cluster"].pop("simulateGpus", None)
    raw["nodePools"] = [{"name": "a100-mig", "gpuModel": "A100-40GB", "gpusPerNode": 8, "maxNodes": 1,
                         "sharing": {"mode": "mig", "profile": "1g.5gb", "strategy": "mixed"}}]
    for w in raw["workloads"]:
        w["nodePool"] = "a100-mig"
        w["autoscaling"]["metrics"] = [{"metric": "gpu_engine_active", "target": 0.5}]
    return raw


def arms_prometheus_adapter() -> dict:
    """ACK managed Prometheus (ARMS) read by prometheus-adapter instead of ACK's adapter."""
    raw = stack_raw("staging")
    raw["monitoring"] = {"backend": "arms", "adapter": "prometheus-adapter"}
    return raw


def legacy_exporter() -> dict:
    """Self-hosted monitoring on ACK reading the legacy ACK GPU exporter's series."""
    raw = stack_raw("staging")
    raw["monitoring"] = {"backend": "self-hosted", "gpuExporter": "ack-legacy"}
    raw["workloads"][0]["autoscaling"]["metrics"] = [{"metric": "gpu_util", "target": 40}]
    return raw


CONFIGS: dict[str, Callable[[], dict]] = {
    **{s: functools.partial(stack_raw, s) for s in ("dev", "staging", "prod", "local")},
    "gpu-operator-mig": gpu_operator_mig,
    "arms-prometheus-adapter": arms_prometheus_adapter,
    "legacy-exporter": legacy_exporter,
}


# ---------------------------------------------------------------------------------------------- rendering
@dataclass
class RenderedRelease:
    record: RegisteredResource
    chart: Chart
    version: str
    values: dict
    objects: list[tuple[str, dict]] = field(default_factory=list)
    crds: list[dict] = field(default_factory=list)
    """CRDs the release installs: its charts' ``crds/`` directories and CRD objects among its templates."""

    @property
    def name(self) -> str:
        return self.record.inputs["name"]

    @property
    def namespace(self) -> str:
        return self.record.inputs["namespace"]

    def installed(self) -> list[dict]:
        """Objects an install creates, hooks included."""
        return [doc for _, doc in self.objects]

    def hook(self, doc: dict) -> str:
        return ((doc.get("metadata") or {}).get("annotations") or {}).get("helm.sh/hook", "")


@dataclass
class RenderedStack:
    name: str
    raw: dict
    cfg: PlatformConfig
    minor: tuple[int, int]
    records: list[RegisteredResource]
    releases: dict[str, RenderedRelease]
    """Release name -> rendered release (every release whose chart has a public package)."""
    unrendered: list[str]
    api_versions: frozenset[str]

    @property
    def kube_version(self) -> str:
        return f"v{self.minor[0]}.{self.minor[1]}.0"

    def crds(self) -> list[dict]:
        return [crd for r in self.releases.values() for crd in r.crds]

    def authored(self) -> list[dict]:
        """Kubernetes objects the program registers itself (not patches of objects others own, which name only the
        fields they set and are checked as patches by the schema tests)."""
        return [r.inputs for r in self.records if r.is_kubernetes_object and not r.type.endswith("Patch")]

    def all_objects(self) -> list[tuple[str, dict]]:
        """(origin, object): every rendered object of every release, then the objects we author."""
        out = [(f"{rel.name}: {tpl}", doc) for rel in self.releases.values() for tpl, doc in rel.objects]
        return out + [("authored", doc) for doc in self.authored()]


def _chart_of(record: RegisteredResource) -> Chart:
    return CHARTS[record.inputs["name"]]


def _render_release(rel: RenderedRelease, charts: helm_engine.ChartsDir, minor: tuple[int, int],
                    api_versions: frozenset[str]) -> None:
    path = charts.archive(rel.chart.name, rel.version)
    if not path.exists():
        pytest.fail(f"{path.name} is not in {charts.path}; fetch it with:\n"
                    + helm_engine.pull_hint([(rel.chart.name, rel.version, rel.chart.repository)]), pytrace=False)
    rendered = helm_engine.render(path, rel.values, release=rel.name, namespace=rel.namespace,
                                  kube_version=f"v{minor[0]}.{minor[1]}.0", api_versions=api_versions)
    rel.objects = helm_engine.objects(rendered)
    rel.crds = helm_engine.chart_crds(path) + [d for _, d in rel.objects if d.get("kind") == "CustomResourceDefinition"]


def render_stack(name: str, charts: helm_engine.ChartsDir) -> RenderedStack:
    raw = CONFIGS[name]()
    cfg = load(raw)
    minor = kubernetes_version(cfg)
    records = synth(copy.deepcopy(raw))
    releases, unrendered = {}, []
    for r in records:
        if r.type != RELEASE_TYPE:
            continue
        chart = _chart_of(r)
        if chart.name in NOT_PUBLIC:
            unrendered.append(r.inputs["name"])
            continue
        releases[r.inputs["name"]] = RenderedRelease(r, chart, r.inputs["version"],
                                                     helm_engine.to_json(r.inputs.get("values") or {}))
    # the CRDs a release installs change what the others render (charts test .Capabilities.APIVersions for
    # monitoring.coreos.com/v1), so render once to find them, then again as the cluster would serve them
    api = helm_engine.builtin_api_versions(minor)
    for rel in releases.values():
        _render_release(rel, charts, minor, api)
    api = api | helm_engine.crd_api_versions([c for rel in releases.values() for c in rel.crds])
    for rel in releases.values():
        _render_release(rel, charts, minor, api)
    return RenderedStack(name, raw, cfg, minor, records, releases, unrendered, frozenset(api))
