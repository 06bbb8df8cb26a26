"""Wake-ups from zero on a run: each time load meets a scale-to-zero workload with no ready replica, the seconds to
KEDA's activation, to the first ready replica and to capacity for the load, and the requests that fail or wait.

Requests that arrive while no replica is ready fail: the Service has no ready endpoint (a pod is an endpoint only
once its readiness probe passes), ingress-nginx answers them 503 (kubernetes/ingress-nginx: a backend without
endpoints is answered 503, ``rootfs/etc/nginx/lua/balancer.lua``, e2e "should return 503 when there are no
endpoints", issues #3070 and #3335; its request counter counts them, ``docs/user-guide/monitoring.md``) and an
in-cluster client's connection is refused. Nothing holds them: there is no activator or interceptor in front of
the pods (the KEDA HTTP add-on would be one; the generated objects have none).

Requests that wait are those completed after the first replica is ready and before the ready replicas cover the
load at target (``ready x rpsAtTarget >= demand``): they queue behind a wake that is still short of capacity. The
longest queue time among them is reported with them (the queue's first-in-first-out times, service.Queue).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass
class WakeEpisode:
    start_s: float
    """The second load met no ready replica."""
    activated_s: Optional[float] = None
    """Seconds from the start to a Deployment scale above zero (KEDA's activation), None if it never came."""
    ready_s: Optional[float] = None
    """Seconds from the start to the first ready replica."""
    capacity_s: Optional[float] = None
    """Seconds from the start to ready replicas covering the load at target."""
    failed: float = 0.0
    """Requests that found no ready replica (503 at the ingress)."""
    waited: float = 0.0
    """Requests completed between the first ready replica and capacity (queued behind the wake)."""
    longest_wait_s: float = 0.0
    """The longest queue time of those."""

    @property
    def done(self) -> bool:
        return self.capacity_s is not None

    def to_json(self) -> dict:
        return {"start": self.start_s, "activatedSeconds": self.activated_s, "readySeconds": self.ready_s,
                "capacitySeconds": self.capacity_s, "failedRequests": round(self.failed, 3),
                "waitedRequests": round(self.waited, 3), "longestWaitSeconds": round(self.longest_wait_s, 3)}


class WakeTracker:
    """Follows a run second by second (engine.Simulation.record) and keeps its wake episodes."""

    def __init__(self, rps_at_target: float):
        self.rps_at_target = rps_at_target
        self.episodes: list[WakeEpisode] = []

    @property
    def current(self) -> Optional[WakeEpisode]:
        return self.episodes[-1] if self.episodes and not self.episodes[-1].done else None

    def record(self, t: float, demand: float, served, ready: int, spec: int) -> None:
        ep = self.current
        if ep is None:
            if ready > 0 or demand <= 0:
                return
            ep = WakeEpisode(t)
            self.episodes.append(ep)
        since = t - ep.start_s
        if ep.activated_s is None and spec > 0:
            ep.activated_s = since
        if ready == 0:
            ep.failed += served.dropped
            return
        if ep.ready_s is None:
            ep.ready_s = since
        if ready * self.rps_at_target >= demand - 1e-9:
            ep.capacity_s = since
            return
        ep.waited += served.served
        ep.longest_wait_s = max([ep.longest_wait_s, *(wait for _, wait in served.queued)])

    def to_json(self) -> dict:
        eps = self.episodes
        return {"count": len(eps), "failedRequests": round(sum(e.failed for e in eps), 3),
                "waitedRequests": round(sum(e.waited for e in eps), 3),
                "longestWaitSeconds": round(max((e.longest_wait_s for e in eps), default=0.0), 3),
                "episodes": [e.to_json() for e in eps]}

    def text(self, limit: int = 5) -> list[str]:
        """Report lines (none when the run had no wake-up)."""
        eps = self.episodes
        if not eps:
            return []
        doc = self.to_json()
        lines = [f"  wake-ups from zero                        {len(eps)}: {doc['failedRequests']:g} requests failed "
                 f"(503, no ready endpoint), {doc['waitedRequests']:g} waited behind the wake (longest "
                 f"{doc['longestWaitSeconds']:g}s)"]
        for e in eps[:limit]:
            lines.append(f"    at {e.start_s:g}s: activated {_s(e.activated_s)}, first ready {_s(e.ready_s)}, "
                         f"capacity {_s(e.capacity_s)}; failed {e.failed:.4g}, waited {e.waited:.4g}")
        if len(eps) > limit:
            lines.append(f"    ... {len(eps) - limit} more in the JSON (wakeUps)")
        return lines


def _s(value: Optional[float]) -> str:
    return "never" if value is None else f"+{value:g}s"
