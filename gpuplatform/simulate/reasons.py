"""Why a figure reads "never": the first scale-up, ready capacity or a wake-up that did not come, with its cause
as the run shows it (the load, maxReplicas, the pool, the HPA's tolerance, KEDA's activation or its scaler)."""
from __future__ import annotations

from typing import Optional

from gpuplatform.simulate import hpa as hpa_mod


def first_scale_up_never(sim) -> Optional[str]:
    """Why a run has no first scale-up after its load increase (None when it has one)."""
    s, tally = sim.s, sim.tally
    if tally.first_scale_up_s is not None:
        return None
    if tally.increase_at is None:
        return _no_increase(sim)
    after = [e for e in tally.timeline if e["t"] >= tally.increase_at]
    if after and all(e["replicas"] >= s.max_replicas for e in after):
        return f"maxReplicas ({s.max_replicas}) reached before the load rose"
    keda = getattr(sim.loop, "keda_reason", None)
    if keda is not None:
        why = keda(sim.spec)
        if why:
            return why
    threshold = s.first.target * (1 + hpa_mod.TOLERANCE)
    seen = [e["metric"] for e in after if e["metric"] is not None]
    if not seen:
        return "the HPA never read the metric (no ready pod reported it)"
    highest = max(seen)
    if highest <= threshold:
        return (f"the metric never exceeds target x (1 + tolerance) = {threshold:g} (highest the HPA read: "
                f"{highest:g})")
    return "the HPA's behavior held the replicas (scaleUp policies or stabilization window)"


def capacity_never(sim) -> Optional[str]:
    """Why ready capacity never covered the load after its increase (None when it did, or no increase came)."""
    s, tally = sim.s, sim.tally
    if tally.capacity_ready_s is not None or tally.increase_at is None:
        return None
    if tally.receded_at is not None:
        return (f"the load fell back to what the {tally.ready_at_increase} replicas ready at the increase serve "
                f"{tally.receded_at - tally.increase_at:g}s after it, before any replica added for it was ready: "
                "capacity was never reached")
    why = first_scale_up_never(sim)
    if why:
        return why
    last = tally.timeline[-1] if tally.timeline else None
    peak = max((e["demand"] for e in tally.timeline if e["t"] >= tally.increase_at), default=0.0)
    at_target = s.plan.rps_at_target
    if s.max_replicas * at_target < peak:
        return (f"maxReplicas reached: {s.max_replicas} replicas serve {s.max_replicas * at_target:.4g} req/s at "
                f"target, the load reaches {peak:.4g}")
    unbound = [p for p in sim.pods.pods if p.node is None]
    if unbound and len(sim.nodes.nodes) >= s.max_nodes:
        return (f"pool full: its {s.max_nodes} nodes hold {s.max_nodes * s.slots} replicas; {len(unbound)} stay "
                "Pending")
    if last is not None and last["replicas"] > last["ready"]:
        return (f"replicas still starting when the trace ends (image pull {s.plan.image_pull_s}s, model load "
                f"{s.plan.model_load_s}s)")
    return "the HPA did not ask for enough replicas (its metric stayed within the tolerance of its target)"


def wake_up_never(sim) -> Optional[str]:
    """Why a workload at zero did not get a ready replica."""
    if not sim.spec:
        keda = getattr(sim.loop, "keda_reason", None)
        return (keda(0) if keda else None) or "KEDA never scaled it from zero"
    unbound = [p for p in sim.pods.pods if p.node is None]
    if unbound and len(sim.nodes.nodes) >= sim.s.max_nodes:
        return f"pool full: its {sim.s.max_nodes} nodes have no room for the first replica"
    return (f"the first replica is still starting (image pull {sim.s.plan.image_pull_s}s, model load "
            f"{sim.s.plan.model_load_s}s)")


def _no_increase(sim) -> str:
    s, timeline = sim.s, sim.tally.timeline
    peak = max((e["demand"] for e in timeline), default=0.0)
    ready = max((e["ready"] for e in timeline), default=0)
    text = (f"the load (at most {peak:.4g} req/s) never rises above what the {ready} ready replicas serve at target "
            f"({ready * s.plan.rps_at_target:.4g} req/s)")
    return text + (f"; maxReplicas ({s.max_replicas}) already run" if ready >= s.max_replicas else "")
