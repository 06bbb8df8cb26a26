"""Which catalog source serves a workload's metric on this stack (GPU exporter or inference server)."""
from typing import Optional

from gpuplatform.catalogs.metrics import METRICS, MetricDef, MetricSource, image_version
from gpuplatform.components.config import PlatformConfig, Workload


def provider_for(cfg: PlatformConfig, workload: Workload, metric: MetricDef) -> Optional[str]:
    """Exporter key the metric comes from: the stack's GPU exporter, or the workload's inference server."""
    return cfg.monitoring.exporter if metric.category == "gpu" else workload.server


def source_for(cfg: PlatformConfig, workload: Workload, name: str) -> Optional[MetricSource]:
    """The source as the workload's server exports it: for a renamed series, ``series`` is the name its image's
    version uses (an unpinned tag is assumed current); the adapter rule reads every name either way."""
    metric = METRICS.get(name)
    if metric is None:
        return None
    provider = provider_for(cfg, workload, metric)
    src = metric.source(provider) if provider else None
    if src is None or metric.category != "app":
        return src
    return src.for_version(image_version(workload.image))


def used_sources(cfg: PlatformConfig) -> list[MetricSource]:
    """Distinct sources the adapter serves: ``monitoring.metrics`` where given, else those the stack's HPA-scaled
    workloads use, in first-use order (KEDA queries Prometheus itself)."""
    seen: dict[tuple, MetricSource] = {}
    if cfg.monitoring.metrics is not None:
        for name in cfg.monitoring.metrics:
            src = served_source(cfg.monitoring.exporter, name)
            if src is not None:
                seen.setdefault((src.exporter, src.api_name), src)
        return list(seen.values())
    for workload in cfg.workloads:
        if workload.autoscaling.autoscaler != "hpa":
            continue
        for target in workload.autoscaling.metrics:
            src = source_for(cfg, workload, target.metric)
            if src is not None:
                seen.setdefault((src.exporter, src.api_name), src)
    return list(seen.values())


def served_source(exporter: str, name: str) -> Optional[MetricSource]:
    """The source the adapter serves ``name`` from: the GPU exporter's for GPU metrics, the one server that exports
    an app metric (each app metric of the catalog has one)."""
    metric = METRICS.get(name)
    if metric is None:
        return None
    if metric.category == "gpu":
        return metric.source(exporter)
    return metric.sources[0] if len(metric.sources) == 1 else None


def default_served_metrics(exporter: str) -> list[str]:
    """What a GpuMonitoring serves when its args name no metrics: every GPU metric its exporter exports."""
    return [name for name, m in METRICS.items() if m.category == "gpu" and m.source(exporter) is not None]
