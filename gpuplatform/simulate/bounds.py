"""A lower bound on what any autoscaling policy must spend to meet the SLO on a trace.

The SLO: no second with the replicas' metric above target by more than the HPA's tolerance, and no failed
request. Under the service model (:mod:`gpuplatform.simulate.service`) a replica whose metric stays at or below
that band completes at most ``r_band`` requests per second, and it holds at most ``x_band`` requests
(:func:`most_held_at_or_below`). Over any stretch of seconds ``[a, b)`` the requests completed equal the arrivals plus
what was queued at ``a`` minus what is queued at ``b`` (nothing fails under the SLO), so the ready replicas of a
policy meeting the SLO satisfy

    sum over [a, b) of ready(t)  >=  (arrivals in [a, b) - maxReplicas * x_band) / r_band

and ``ready(t) >=`` the fewest replicas the autoscaler allows every second (0 with KEDA, 1 with an HPA, whatever
``minReplicas`` the stack states: :func:`lowest_replicas`). Summing over any partition of the run gives a bound; the
best of several partitions is still one. Nodes hold at most ``slots`` replicas and never drop below ``minNodes``, which
bounds node-seconds the same way. A clairvoyant scaler that provisions ahead by the start-up time is *not* a
bound under a transient queue: a burst shorter than the queue's time constant can be absorbed without a replica
it would add, so this bound is derived from throughput instead, and it holds for every policy.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from gpuplatform.simulate import hpa as hpa_mod

SEGMENTS_S = (1, 5, 15, 60, 300, 1800)
_MAX_DOUBLINGS = 200


def most_held_at_or_below(plan, band: float) -> float:
    """The most requests a replica holds while its metric reads at most ``band`` (inf: no load reads above it).

    ``ServicePlan.x_at_level`` is where the metric first *reaches* a level. A latency quantile is read through
    histogram buckets: histogram_quantile reports one value for every latency inside a bucket (9/10 of the way
    through it, ``catalogs.metrics.histogram_p90``), so the metric is a staircase, and a band equal to one of its
    steps (an SLO set to what histogram_quantile reports for a bucket) is met along the whole step. The replica
    may hold load up to the step's end, not only up to its start: taking the start understated ``r_band`` and
    overstated the bound, without limit when the band is what an idle replica reads (its step starts at 0)."""
    x = plan.x_at_level(band)
    if math.isinf(x) or plan.level(x) > band:
        return x
    lo, hi = x, max(2 * x, 1.0)
    for _ in range(_MAX_DOUBLINGS):
        if plan.level(hi) > band:
            break
        lo, hi = hi, 2 * hi
    else:
        return math.inf  # the metric never reads above the band
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if plan.level(mid) <= band else (lo, mid)
    return lo


@dataclass(frozen=True)
class LowerBound:
    ready_replica_s: float
    node_s: float

    def to_json(self, s) -> dict:
        return {"ready_replica_hours": round(self.ready_replica_s / 3600, 3),
                "unit_hours": round(self.ready_replica_s * s.units_per_replica / 3600, 3), "unit": s.unit,
                "node_hours": round(self.node_s / 3600, 3),
                "gpu_hours": round(self.node_s * s.gpus_per_node / 3600, 3)}


def lowest_replicas(workload) -> int:
    """The fewest replicas the workload's autoscaler may ever run, whatever ``minReplicas`` it states: 0 with KEDA
    (it scales to zero), 1 with an HPA (which never goes below 1). The bound must not depend on the settings being
    judged: one taken at the workload's own ``minReplicas`` made a candidate that raises it look efficient."""
    return 0 if workload.autoscaling.autoscaler == "keda" else 1


def lower_bound(s, trace, slo_target: float, band: Optional[float] = None) -> LowerBound:
    """At ``band``, the level no second may exceed (an SLO's threshold), or else ``slo_target`` plus the HPA's
    tolerance."""
    band = slo_target * (1 + hpa_mod.TOLERANCE) if band is None else band
    x_band = most_held_at_or_below(s.plan, band)
    r_band = s.plan.capacity_rps * (1.0 if math.isinf(x_band) else s.plan.rho(x_band))
    duration = int(trace.duration_s) + 1
    arrivals = [trace.demand(float(t)) for t in range(duration)]
    min_r = s.lowest_replicas
    slack = s.max_replicas * x_band
    # a pool without autoscaling keeps its nodes: min_nodes is then its node count, the only schedule there is
    best_ready, best_nodes = float(min_r * duration), float(s.min_nodes * duration)
    for length in SEGMENTS_S:
        ready_total = node_total = 0.0
        for a in range(0, duration, length):
            seg = arrivals[a:a + length]
            need = (sum(seg) - slack) / r_band if not math.isinf(slack) else 0.0
            ready = max(min_r * len(seg), need)
            ready_total += ready
            node_total += max(s.min_nodes * len(seg), ready / s.slots)
        best_ready = max(best_ready, ready_total)
        if s.autoscaled_pool:
            best_nodes = max(best_nodes, node_total)
    return LowerBound(best_ready, best_nodes)
