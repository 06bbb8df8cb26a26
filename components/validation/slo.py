"""Rules of a workload's ``slo``: each objective is on a metric this workload's server (at its image version) or
GPU exporter serves per pod, in that metric's unit, with a threshold a replica can meet; the compliance is a
percentage strictly between 0 and 100. The metric rule is the one ``autoscaling.metrics[].metric`` goes through
(:func:`check_metric_exported`): an SLO is judged on the same query the HPA would read."""
import math
from typing import Optional

from gpuplatform.catalogs.kubernetes import HPA_TOLERANCE
from gpuplatform.components.config import PlatformConfig, Workload
from gpuplatform.components.errors import fmt
from gpuplatform.components.pools import PoolFacts
from gpuplatform.components.validation.autoscaling import check_metric_exported, idle_reading
from gpuplatform.components.validation.common import _Issues


def check_slo(cfg: PlatformConfig, p: str, w: Workload, f: Optional[PoolFacts], out: _Issues) -> None:
    slo = w.slo
    if slo is None:
        return
    ps = f"{p}.slo"
    if not 0 < slo.compliance < 100:
        out.add(f"{ps}.compliance", f"{slo.compliance:g} is out of range; allowed: a percentage of minutes "
                "strictly between 0 and 100 (e.g. 99, 99.9): 100 leaves no error budget")
    elif slo.compliance < 1:
        out.add(f"{ps}.compliance", f"{slo.compliance:g} reads as {slo.compliance:g} % of minutes (an error budget "
                f"of {100 - slo.compliance:g} %): compliance is a percentage, and this looks like a fraction; "
                f"allowed: {slo.compliance * 100:g} for {slo.compliance:g} of minutes, or a percentage of at least 1")
    seen: set[str] = set()
    for k, o in enumerate(slo.objectives):
        po = f"{ps}.objectives[{k}]"
        if o.metric in seen:
            out.add(f"{po}.metric", f"{fmt(o.metric)} is listed twice")
        seen.add(o.metric)
        if o.below <= 0:
            out.add(f"{po}.below", f"{o.below:g} is not a positive threshold; allowed: > 0")
        _check_reachable(po, w, o, out)
        found = check_metric_exported(cfg, po, w, f, o.metric, out)
        if found is None or o.below <= 0:
            continue
        metric, src = found
        unit = metric.unit_info
        if unit.maximum is not None and o.below >= unit.maximum:
            out.add(f"{po}.below", f"{o.below:g} can never be exceeded: {fmt(o.metric)} is {unit.description} and "
                    f"never passes {unit.maximum:g}, so the objective would judge nothing; allowed: > 0 and "
                    f"< {unit.maximum:g}")
        idle = idle_reading(w, o.metric, metric, src)
        if idle is not None and o.below <= idle[0]:
            out.add(f"{po}.below", f"{o.below:g} {metric.unit} can never be met: {idle[1]}, so every minute would "
                    f"be out of SLO; allowed: > {math.floor(idle[0] * 1000) / 1000:g} ({unit.description})")


def _check_reachable(po: str, w: Workload, o, out: _Issues) -> None:
    """An objective on a metric the HPA scales on must sit above the HPA's target: under load the HPA holds each
    replica's reading at its target (it acts only once the reading leaves the target by its tolerance,
    catalogs/kubernetes.py ``HPA_TOLERANCE``), so a threshold at or below the target is missed by design."""
    for j, t in enumerate(w.autoscaling.metrics):
        if t.metric != o.metric or t.target is None or getattr(t, "_derived", False) or o.below <= 0:
            continue
        if o.below <= t.target:
            low, high = t.target / (1 + HPA_TOLERANCE), t.target * (1 + HPA_TOLERANCE)
            out.add(f"{po}.below", f"{o.below:g} is unreachable with autoscaling.metrics[{j}].target {t.target:g}: "
                    f"under load the HPA holds {fmt(o.metric)} at its target (it acts only outside {low:.3g} to "
                    f"{high:.3g}), so loaded minutes are out of SLO; allowed: below above {high:.3g}, or a target "
                    f"below {o.below / (1 + HPA_TOLERANCE):.3g}")
