"""Render every Helm release a stack registers, as the cluster would install it.

The values are the ones the program registered (nulls included, as the engine sends them), the chart package is
the pinned version the release names, and the render runs at the stack's Kubernetes minor with the API versions
such a cluster serves: the GA built-ins of that minor plus every CRD group/version the stack's charts install.
"""
from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from typing import Callable

import pytest

import helm_engine
from gpuplatform.chart_render import RELEASE_TYPE, RenderedRelease, render_release
from gpuplatform.catalogs.versions import CHARTS, KUBERNETES_SUPPORTED, Chart, KubeMinor
from gpuplatform.components.config import PlatformConfig
from gpuplatform.components.stack_config import namespace_from_stack_file
from gpuplatform.components.validation import kubernetes_version, load
from gpuplatform.records import RegisteredResource
from support import REPO, scaled_on, stack_raw, synth

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
        scaled_on(w, "gpu_engine_active", 0.5)
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
    scaled_on(raw["workloads"][0], "gpu_util", 40)
    return raw


def triton_mig() -> dict:
    """Example 003: a node with two A100s, one partitioned into seven 1g.5gb instances next to a whole one (a
    per-GPU MIG layout, so the GPU Operator gets a mig-parted config of ours)."""
    return copy.deepcopy(namespace_from_stack_file(REPO / "examples" / "003-triton-mig" / "Pulumi.003-triton-mig.yaml"))


# Examples 005 and 006 as shipped read their weights from a Fluid cache, whose Dataset and JindoRuntime kinds come
# from ack-fluid, a prerequisite whose CRDs no chart of the stack installs (tests/components/test_fluid_cache.py pins their fields
# to the shapes of Fluid's api/v1alpha1 types): the charts are rendered here for their plain variants.
def vllm_queue() -> dict:
    """Example 005 (plain): vLLM on A10s, metrics from its API port, an HPA on requests waiting, a streaming
    ingress."""
    return copy.deepcopy(namespace_from_stack_file(REPO / "examples" / "005-vllm-queue" / "plain" /
                                                   "Pulumi.005-vllm-queue-plain.yaml"))


def sglang_queue() -> dict:
    """Example 006 (plain): SGLang on L20s, metrics from its API port, an HPA on its waiting queue, a streaming
    ingress."""
    return copy.deepcopy(namespace_from_stack_file(REPO / "examples" / "006-sglang-queue" / "plain" /
                                                   "Pulumi.006-sglang-queue-plain.yaml"))


def gpu_operator_mig_layouts() -> dict:
    """Example 003 plus a second layout pool (two GPUs alike, a GPU of two profiles, a whole GPU) and a uniform
    pool: one mig-parted config must carry both layouts and the uniform pool's ``all-<profile>``."""
    raw = triton_mig()
    raw["nodePools"] += [
        {"name": "h100-split", "gpuModel": "H100-80GB", "gpusPerNode": 4, "autoscaling": False, "desiredNodes": 2,
         "sharing": {"mode": "mig", "layout": [{"devices": [0, 1], "profiles": {"3g.40gb": 2}},
                                               {"devices": [2], "profiles": {"2g.20gb": 2, "1g.10gb": 3}},
                                               {"devices": [3]}]}},
        {"name": "a30-mig", "gpuModel": "A30", "gpusPerNode": 2, "autoscaling": False, "desiredNodes": 1,
         "sharing": {"mode": "mig", "profile": "2g.12gb", "strategy": "mixed"}},
    ]
    return raw


CONFIGS: dict[str, Callable[[], dict]] = {
    **{s: functools.partial(stack_raw, s) for s in ("dev", "staging", "prod", "local")},
    "gpu-operator-mig": gpu_operator_mig,
    "triton-mig": triton_mig,
    "vllm-queue": vllm_queue,
    "sglang-queue": sglang_queue,
    "gpu-operator-mig-layouts": gpu_operator_mig_layouts,
    "arms-prometheus-adapter": arms_prometheus_adapter,
    "legacy-exporter": legacy_exporter,
}


def _newest_minor_picking(release_key: str, version: str) -> KubeMinor | None:
    """The newest Kubernetes minor the package supports at which ``release_key`` gets ``version``."""
    (lo_major, lo_minor), (hi_major, hi_minor) = KUBERNETES_SUPPORTED
    minors = [(lo_major, m) for m in range(lo_minor, hi_minor + 1)] if lo_major == hi_major else []
    chart = CHARTS[release_key]
    picked = [m for m in minors if (v := chart.for_kubernetes(m)) is not None and v.version == version]
    return max(picked) if picked else None


PIN_VARIANTS: dict[str, tuple[str, str, str]] = {
    f"{base}@gpu-operator-{v.version}": (base, "gpu-operator", v.version)
    for base in ("gpu-operator-mig", "triton-mig") for v in CHARTS["gpu-operator"].versions[1:]
}
"""Variant name -> (configuration, release key, older pinned version): the release as the program registers it
for the configuration, rendered alone with the older pin at the newest minor that picks that pin. No valid stack
reaches the older GPU Operator pin today (the operator runs on kubeconfig clusters, which always install
prometheus-adapter and so cert-manager, whose supported pin needs 1.33+, where the newer operator pin wins), but
the pin stays in the catalog and its templates differ (v25.10 always renders ``migManager.config.name``), so the
values we send are rendered with it too."""


# ---------------------------------------------------------------------------------------------- rendering
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
                    api_versions: frozenset[str], crds_only: bool = False) -> None:
    """Render ``rel``: its objects and the CRDs it installs; ``crds_only``, only the CRDs (the first of the two
    renders, whose other documents are never read, are not parsed)."""
    path = charts.archive(rel.chart.name, rel.version)
    if not path.exists():
        pytest.fail(f"{path.name} is not in {charts.path}; fetch it with:\n"
                    + helm_engine.pull_hint([(rel.chart.name, rel.version, rel.chart.repository)]), pytrace=False)
    render_release(rel, path, minor, api_versions, crds_only)


def render_stack(name: str, charts: helm_engine.ChartsDir) -> RenderedStack:
    if name in PIN_VARIANTS:
        return render_pin_variant(name, charts)
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
        _render_release(rel, charts, minor, api, crds_only=True)
    api = api | helm_engine.crd_api_versions([c for rel in releases.values() for c in rel.crds])
    for rel in releases.values():
        _render_release(rel, charts, minor, api)
    return RenderedStack(name, raw, cfg, minor, records, releases, unrendered, frozenset(api))


def render_pin_variant(name: str, charts: helm_engine.ChartsDir) -> RenderedStack:
    """One release of a configuration, with the values the program registered, rendered with an older pin at the
    newest Kubernetes minor that picks it (``PIN_VARIANTS``)."""
    base, release_key, version = PIN_VARIANTS[name]
    raw = CONFIGS[base]()
    cfg = load(raw)
    minor = _newest_minor_picking(release_key, version)
    if minor is None:
        pytest.fail(f"no Kubernetes minor in {KUBERNETES_SUPPORTED} picks {release_key} {version}", pytrace=False)
    chart = CHARTS[release_key]
    (record,) = [r for r in synth(copy.deepcopy(raw)) if r.type == RELEASE_TYPE and r.inputs["name"] == chart.release]
    rel = RenderedRelease(record, chart, version, helm_engine.to_json(record.inputs.get("values") or {}))
    api = helm_engine.builtin_api_versions(minor)
    _render_release(rel, charts, minor, api, crds_only=True)
    api = api | helm_engine.crd_api_versions(rel.crds)
    _render_release(rel, charts, minor, api)
    return RenderedStack(name, raw, cfg, minor, [record], {rel.name: rel}, [], frozenset(api))
