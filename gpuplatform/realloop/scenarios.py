"""The real-loop scenarios: a stack file under ``scenarios/``, a workload of it, the emulator its metric needs and
the load, as the intensity of the arrivals over time (piecewise constant), either evenly spaced or a seeded
Poisson process. The same arrivals go to the real chain and, counted per second, to ``simulate``."""
from __future__ import annotations

import random
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional

SCENARIOS_DIR = Path(__file__).with_name("scenarios")


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    config: Path
    workload: str
    emulator: str
    """``dcgm`` (GPU utilization) or ``vllm`` (the scheduler's queue gauges)."""
    rates: tuple
    """(from second, requests per second), ascending, the first from 0."""
    duration_s: int
    poisson: bool
    deterministic_service: bool
    """Service times: fixed (the GPU step, so a second's busy share reads the load exactly) or exponential."""
    seed: int = 44
    warmup_s: int = 45
    """Seconds of the first rate before second 0: the target is scraped, the adapter has listed the metric and the
    HPA has read it (the simulator starts in that steady state)."""
    node_provision_s: Optional[int] = None
    """Nodes autoscaled: Karpenter adds the pool's nodes from ``minNodes`` up to ``maxNodes``, each registering this
    long after it was launched, and ``simulate`` provisions a node in as long (None: the pool's nodes are fixed)."""
    others: tuple = ()
    """Further workloads of the same pool, each ``(name, rates)``: the real chain runs them beside ``workload``
    (one emulator and load each) and ``simulate`` runs the pool (``simulate --workload a,b``)."""

    @property
    def from_zero(self) -> bool:
        """No load at first: the workload starts at zero replicas (KEDA, ``minReplicas: 0``) and is woken."""
        return self.rates[0][1] == 0

    @property
    def workloads(self) -> list:
        return [self.workload] + [name for name, _ in self.others]

    def for_workload(self, name: str) -> "Scenario":
        """The scenario as one of its workloads sees it: its own rates."""
        if name == self.workload:
            return replace(self, others=())
        rates = dict(self.others)[name]
        return replace(self, workload=name, rates=rates, others=())

    def initial_replicas(self, setup) -> int:
        """The replicas serving the first rate at the target, as the simulator starts them (engine.Simulation): a
        KEDA workload with no load and ``minReplicas`` 0 starts at zero."""
        import math

        needed = min(math.ceil(self.rates[0][1] / setup.plan.rps_at_target - 1e-9), setup.max_replicas)
        if setup.keda:
            return max(needed, setup.min_replicas, 1 if self.rates[0][1] > 0 else 0)
        return max(needed, setup.min_replicas, 1)

    def rate(self, t: float) -> float:
        current = self.rates[0][1]
        for start, r in self.rates:
            if t >= start:
                current = r
        return current

    def arrivals(self) -> list:
        """Arrival times, seconds from second 0 (the warm-up's are negative)."""
        segments = [(-self.warmup_s, self.rates[0][1])] + [(s, r) for s, r in self.rates[1:]]
        ends = [s for s, _ in segments[1:]] + [self.duration_s]
        rng = random.Random(self.seed)
        out = []
        for (start, r), end in zip(segments, ends):
            if r <= 0:
                continue
            if self.poisson:
                t = start + rng.expovariate(r)
                while t < end:
                    out.append(round(t, 4))
                    t += rng.expovariate(r)
            else:
                n = int(round((end - start) * r))
                out.extend(round(start + (k + 0.5) / r, 4) for k in range(n))
        return out

    def trace(self):
        """What ``simulate`` replays: the rates for evenly spaced arrivals; the per-second count of the same
        arrivals for a Poisson load, except second 0, which is the first rate (the simulator starts its replicas
        and its queue in the steady state of second 0's demand, where the real chain warmed up at that rate)."""
        from gpuplatform.simulate.traces import Trace

        if not self.poisson:
            return Trace(self.name, tuple(float(s) for s, _ in self.rates), tuple(float(r) for _, r in self.rates),
                         self.duration_s)
        counts = [0] * (self.duration_s + 1)
        for a in self.arrivals():
            if 0 <= a < self.duration_s + 1:
                counts[int(a)] += 1
        counts[0] = self.rates[0][1]
        return Trace(self.name, tuple(float(t) for t in range(len(counts))), tuple(float(c) for c in counts),
                     self.duration_s)


SCENARIOS = {s.name: s for s in (
    Scenario("gpu-util-step", "GPU utilization step (DCGM), 3 -> 15 req/s", SCENARIOS_DIR / "gpu-util-step.yaml",
             "echo-gpu", "dcgm", ((0, 3.0), (45, 15.0)), 195, poisson=False, deterministic_service=True),
    Scenario("vllm-queue-poisson", "vLLM queue step, Poisson arrivals 1 -> 4 req/s",
             SCENARIOS_DIR / "vllm-queue-poisson.yaml", "chat", "vllm", ((0, 1.0), (45, 4.0)), 150, poisson=True,
             deterministic_service=False),
    Scenario("gpu-util-scale-down", "GPU utilization fall (DCGM) under a 60 s window, -1 pod per 30 s, 15 -> 3 req/s",
             SCENARIOS_DIR / "gpu-util-scale-down.yaml", "echo-gpu", "dcgm", ((0, 15.0), (30, 3.0)), 165,
             poisson=False, deterministic_service=True),
    Scenario("nodes-scale-up", "GPU utilization step (DCGM) on a pool of 1 node of at most 4, Karpenter adding "
             "nodes in 60 s, 3 -> 15 req/s", SCENARIOS_DIR / "nodes-scale-up.yaml", "echo-gpu", "dcgm",
             ((0, 3.0), (45, 15.0)), 300, poisson=False, deterministic_service=True, node_provision_s=60),
    Scenario("nodes-scale-down", "GPU utilization fall (DCGM) from 3 replicas on 3 added nodes, window 60 s, -1 pod "
             "per 30 s, each emptied node removed after a 1 min unneeded time, 15 -> 3 req/s",
             SCENARIOS_DIR / "nodes-scale-down.yaml", "echo-gpu", "dcgm", ((0, 15.0), (30, 3.0)), 240,
             poisson=False, deterministic_service=True, node_provision_s=60),
    Scenario("two-workloads-placeholders", "Two workloads on one pool with a placeholder, bursts 2 min apart "
             "(DCGM, 3 -> 6 req/s each), Karpenter adding nodes in 60 s",
             SCENARIOS_DIR / "two-workloads-placeholders.yaml", "burst-a", "dcgm", ((0, 3.0), (45, 6.0)), 300,
             poisson=False, deterministic_service=True, node_provision_s=60,
             others=(("burst-b", ((0, 3.0), (165, 6.0))),)),
    Scenario("keda-from-zero", "KEDA from zero and back: no load, 6 req/s from 30 s to 150 s, none again (DCGM "
             "utilization and the ingress's requests, cooldown 40 s)", SCENARIOS_DIR / "keda-from-zero.yaml",
             "echo-gpu", "dcgm", ((0, 0.0), (30, 6.0), (150, 0.0)), 270, poisson=False,
             deterministic_service=True, warmup_s=0),
)}
"""Run in this order: the simplest first."""
