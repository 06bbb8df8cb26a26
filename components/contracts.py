"""What a service needs from its monitoring, checked as one rule for a stack file and for composed components.

A stack file (``components.validation``) and an InferenceService built from a consumer's objects both call
:func:`metric_contract`, so the two can never disagree on whether an HPA's metric is served. Each finding is a
path below the workload and a message that names what the monitoring serves and the fix; callers add who is
who (stack paths, or the components' names).
"""
from gpuplatform.catalogs.metrics import METRICS, UNITS, MetricSource
from gpuplatform.components.config import Monitoring, Workload
from gpuplatform.components.errors import fmt, one_of
from gpuplatform.components.metric_sources import served_source


def served_sources(mon: Monitoring, workloads) -> dict[str, MetricSource]:
    """Metric name -> source the adapter serves: ``monitoring.metrics`` where given, else the HPAs' own."""
    names = mon.metrics if mon.metrics is not None else [
        t.metric for w in workloads if w.autoscaling.autoscaler == "hpa" for t in w.autoscaling.metrics]
    return {n: src for n in names if (src := served_source(mon.exporter, n)) is not None}


def metric_contract(w: Workload, mon: Monitoring, served: dict[str, MetricSource], monitoring_name: str,
                    keda_installed: bool) -> list[tuple[str, str]]:
    """(path below the workload, message) for each metric the workload's autoscaler needs that ``mon`` does not
    serve as asked: no source for the stack's exporter, not among the adapter's rules, another unit, or KEDA not
    installed. Unknown metric names are the workload rules' to report."""
    a = w.autoscaling
    out: list[tuple[str, str]] = []
    if a.autoscaler == "keda" and not keda_installed:
        out.append(("autoscaling.autoscaler", f"'keda', but {monitoring_name} does not install KEDA (no ScaledObject "
                    "CRD, no operator to act on it); allowed: monitoring.keda: true on it (self-hosted), or "
                    "autoscaler hpa"))
    for i, t in enumerate(a.metrics):
        metric = METRICS.get(t.metric)
        if metric is None or a.autoscaler == "none":
            continue
        path = f"autoscaling.metrics[{i}]"
        source = served_source(mon.exporter, t.metric)
        if metric.category == "gpu" and source is None:
            out.append((f"{path}.metric", f"{fmt(t.metric)} is not exported by {monitoring_name}'s GPU exporter "
                        f"{fmt(mon.exporter)}; exporters with it: {one_of(metric.exporters)}; allowed: a metric "
                        f"of {mon.exporter} (gpuplatform schema lists them), or that exporter on the monitoring"))
            continue
        if a.autoscaler == "hpa" and source is not None:
            served_as = served.get(t.metric)
            if served_as is None or (served_as.exporter, served_as.api_name) != (source.exporter, source.api_name):
                listed = one_of(f"{n} ({s.api_name})" for n, s in served.items())
                out.append((f"{path}.metric", f"{fmt(t.metric)} ({source.api_name}) is not served by "
                            f"{monitoring_name}'s metrics adapter, which serves {listed}: the HPA would show "
                            f"<unknown> for ever; allowed: add {fmt(t.metric)} to monitoring.metrics of "
                            f"{monitoring_name}, or a metric it serves"))
                continue
        if t.unit is not None and source is not None and t.unit != metric.unit:
            out.append((f"{path}.unit", _unit_message(t, metric.unit, monitoring_name)))
    return out


def _unit_message(t, served_unit: str, monitoring_name: str) -> str:
    msg = (f"{fmt(t.unit)}: {monitoring_name} serves {t.metric} in {served_unit} "
           f"({UNITS[served_unit].description}), the unit the HPA compares the target with")
    given = UNITS.get(t.unit)
    if given is None:
        return f"{msg}; allowed: {served_unit}"
    if given.dimension == UNITS[served_unit].dimension and t.target is not None:
        converted = t.target * given.scale / UNITS[served_unit].scale
        return f"{msg}; allowed: unit {served_unit}, with target {converted:g} for the same load"
    return f"{msg}; {t.unit} measures {given.dimension}, not {UNITS[served_unit].dimension}; allowed: {served_unit}"


def check_served_metrics(cfg, facts, out) -> None:
    """``monitoring.metrics`` names catalog metrics its exporter (or their server) exports."""
    mon = cfg.monitoring
    for i, name in enumerate(mon.metrics or []):
        metric = METRICS.get(name)
        path = f"monitoring.metrics[{i}]"
        if metric is None:
            from gpuplatform.catalogs.gpus import close_matches

            near = close_matches(name, METRICS)
            out.add(path, f"{fmt(name)} is not a metric of the catalog" + (f"; did you mean {one_of(near)}?" if near
                                                                            else "") + f"; allowed: {one_of(METRICS)}")
        elif served_source(mon.exporter, name) is None:
            out.add(path, f"{fmt(name)} is not exported by GPU exporter {fmt(mon.exporter)}; exporters with it: "
                    f"{one_of(metric.exporters)}; allowed: a metric of {mon.exporter}, or another gpuExporter")


def check_metrics_served(cfg, facts, out) -> None:
    """Each workload's autoscaler gets its metrics from the stack's monitoring (:func:`metric_contract`)."""
    served = served_sources(cfg.monitoring, cfg.workloads)
    keda = cfg.monitoring.backend == "self-hosted" and cfg.monitoring.installs_keda(cfg.workloads)
    for i, w in enumerate(cfg.workloads):
        for path, message in metric_contract(w, cfg.monitoring, served, "the stack's monitoring", keda):
            out.add(f"workloads[{i}].{path}", message)
