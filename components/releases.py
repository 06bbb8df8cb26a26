"""Which pinned Helm charts a stack installs, and at which version: one answer for the components that install
them, the config validation that rejects a Kubernetes version no pinned version supports, and the tests that
render them."""
from gpuplatform.catalogs.versions import KUBERNETES_SUPPORTED, KubeMinor, chart, minor_text
from gpuplatform.components.config import PlatformConfig


def uses_gpu_operator(cfg: PlatformConfig) -> bool:
    """MIG pools on a cluster whose cloud does not partition them (a kubeconfig cluster) with real GPUs get the
    NVIDIA GPU Operator (mig-manager, dcgm-exporter)."""
    return _gpu_software(cfg) == "gpu-operator"


def _gpu_software(cfg: PlatformConfig):
    return cfg.cloud.gpu_software_kind(getattr(cfg.cluster, "simulate_gpus", False),
                                       [p.sharing.mode for p in cfg.node_pools])


def uses_cert_manager(cfg: PlatformConfig) -> bool:
    """cert-manager issues the serving certificate prometheus-adapter's APIService is verified with, in every
    environment (the chart's default is an unverified APIService)."""
    return uses_prometheus_adapter(cfg)


def uses_prometheus_adapter(cfg: PlatformConfig) -> bool:
    return cfg.monitoring.backend == "self-hosted" or cfg.monitoring.adapter_kind == "prometheus-adapter"


def chart_releases(cfg: PlatformConfig) -> list[str]:
    """Release keys (``catalogs.versions.CHARTS``) of every chart the stack installs."""
    mon, out = cfg.monitoring, []
    simulated = getattr(cfg.cluster, "simulate_gpus", False)
    if _gpu_software(cfg) == "fake-gpu-operator":
        out.append("fake-gpu-operator")
    elif uses_gpu_operator(cfg):
        out.append("gpu-operator")
    if mon.backend == "self-hosted":
        if not mon.prometheus_url:  # otherwise an existing Prometheus is used and none is installed
            out.append("kube-prometheus-stack")
        if mon.exporter == "dcgm" and not simulated and not uses_gpu_operator(cfg):
            out.append("dcgm-exporter")
        if mon.installs_keda(cfg.workloads):
            out.append("keda")
    if uses_cert_manager(cfg):
        out.append("cert-manager")
    out.append("prometheus-adapter" if uses_prometheus_adapter(cfg) else mon.adapter_kind)
    return out


WHY: dict[str, str] = {
    "fake-gpu-operator": "simulated GPUs (cluster.simulateGpus)",
    "gpu-operator": "MIG pools on a kubeconfig cluster",
    "kube-prometheus-stack": "monitoring.backend 'self-hosted'",
    "dcgm-exporter": "monitoring.gpuExporter 'dcgm'",
    "cert-manager": "the metrics adapter's serving certificate",
    "prometheus-adapter": "the custom metrics API",
    "ack-alibaba-cloud-metrics-adapter": "the custom metrics API",
    "keda": "workloads with autoscaler 'keda'",
}
"""Why a stack installs each chart, for error messages."""


def chart_version(release_key: str, kubernetes: KubeMinor, allow_end_of_life: tuple[str, ...] = ()) -> str:
    """The pinned version a cluster of ``kubernetes`` gets: the newest that supports it (an end-of-life pin only
    for the charts named in ``allow_end_of_life``). Config validation rejects a stack no pinned version supports
    before anything is registered."""
    c = chart(release_key)
    chosen = c.for_kubernetes(kubernetes, c.name in allow_end_of_life)
    if chosen is None:
        raise ValueError(f"no pinned {c.name} version supports Kubernetes {kubernetes[0]}.{kubernetes[1]}; "
                         f"pinned: {c.supported_text()}")
    return chosen.version


def allowed_minors(cfg: PlatformConfig) -> list[KubeMinor]:
    """Kubernetes minors the package and every chart the stack installs support."""
    lo, hi = KUBERNETES_SUPPORTED
    charts = [chart(key) for key in chart_releases(cfg)]
    eol = cfg.settings.allow_end_of_life_charts
    return [(lo[0], m) for m in range(lo[1], hi[1] + 1)
            if all(c.for_kubernetes((lo[0], m), c.name in eol) for c in charts)]


def spans_text(minors: list[KubeMinor]) -> str:
    """[(1, 30), (1, 31), (1, 33)] -> '1.30-1.31, 1.33'."""
    spans: list[list[KubeMinor]] = []
    for m in minors:
        if spans and spans[-1][-1] == (m[0], m[1] - 1):
            spans[-1].append(m)
        else:
            spans.append([m])
    return ", ".join(minor_text(s[0]) + (f"-{minor_text(s[-1])}" if len(s) > 1 else "") for s in spans) or "none"
