"""Rules of a workload's ``slo``: each objective is on a metric this workload's server (at its image version) or
GPU exporter serves per pod, in that metric's unit, with a threshold a replica can meet; the compliance is a
percentage strictly between 0 and 100. The metric rule is the one ``autoscaling.metrics[].metric`` goes through
(:func:`check_metric_exported`): an SLO is judged on the same query the HPA would read."""
import math
from typing import Optional

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
    seen: set[str] = set()
    for k, o in enumerate(slo.objectives):
        po = f"{ps}.objectives[{k}]"
        if o.metric in seen:
            out.add(f"{po}.metric", f"{fmt(o.metric)} is listed twice")
        seen.add(o.metric)
        if o.below <= 0:
            out.add(f"{po}.below", f"{o.below:g} is not a positive threshold; allowed: > 0")
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
