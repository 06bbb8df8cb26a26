"""The real chain against ``simulate`` on the same arrivals, and the agreement gate.

The simulator runs with the loop phases the real chain had: the HPA's sync (from the adapter's queries in
Prometheus' query log), the first pod's scrape (from its ``up`` samples) and the emulator's collection. Both sides
are then read the same way, second by second (the simulator's own per-second record; the real chain's samples):

* the load increase: the first second after 0 whose demand (the scenario's intensity) exceeds what the ready
  replicas serve at the target (``requestsPerSecondAtTarget`` as the service model resolves it);
* first scale-up: seconds from the increase until the Deployment's replicas first rise;
* time to capacity: seconds from the increase until the ready replicas serve the demand at the target;
* first scale-down (a load that falls): seconds from the fall until the replicas first fall, and until they reach
  the count they end the run at;
* replicas per sync: the Deployment's replicas 2 s after each real HPA sync, on both sides.

The gate (issue 44, "replica count per time in the simulator within one HPA sync period of the real chain"): every
time within one HPA sync period (a time neither side has agrees), and at every sync the simulated replica count is
within what the real chain had from the sync before to the one after. How many syncs are exactly equal is reported too:
under random arrivals one scrape of a queue gauge can fall on either side of the target, and the two sides then
decide one sync apart.

With node autoscaling (the scenario's ``node_provision_s``), the node half of the gate ("node count per time
within one autoscaler scan"): the seconds from the load increase until the pool's requested nodes first rise and
until its ready nodes first rise, each within one scan of the real chain's; and at every second the simulated
requested and ready node counts within what the real chain had from one scan before to one scan after. The scan is
the simulator's ``scan_s`` (the cluster autoscaler's ``--scan-interval``, 10 s by default); Karpenter has no scan but
batches the pending pods it sees, up to ``BATCH_MAX_DURATION`` (10 s by default, karpenter
``pkg/operator/options/options.go``), which is the same figure.

A load that falls with nodes autoscaled (node scale-down): the seconds from the load's fall until the pool's
requested nodes first fall and until they reach the count they end the run at, each within a sync and a scan of
the real chain's, where the real chain may be later by Karpenter's validation of an empty node
(:data:`KARPENTER_EMPTINESS_VALIDATION_S`), an engine difference the simulator does not model (it models
cluster-autoscaler, which removes an empty node at the scan that finds it unneeded long enough); the nodes per
second after the fall are held to the same allowance.

From zero (KEDA, ``minReplicas: 0``): the seconds from the load increase until KEDA's poll scales the workload to one
replica (``activation_s``) and from the load's end until it is back at zero (``to_zero_s``), each within a polling
interval (KEDA decides both at its polls); the first scale-up is then the HPA's, the first rise above one replica;
and the replicas 2 s after each of KEDA's polls, held as those after each sync.
"""
from __future__ import annotations

import json
import math
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

from gpuplatform.realloop.scenarios import Scenario

KARPENTER_EMPTINESS_VALIDATION_S = 15
"""Karpenter removes an empty node 15 s after it decided to: its emptiness method validates the command after
``commandValidationDelay`` (karpenter v1.14.1 ``pkg/controllers/disruption/consolidation.go``: 15 s;
``emptiness.go`` ``ComputeCommands`` calls ``validator.Validate(ctx, cmd, commandValidationDelay)``, and
``validation.go`` ``EmptinessValidator.Validate`` waits that long before it checks the nodes again), and only then
deletes the NodeClaim. cluster-autoscaler, which the simulator models, has no such wait."""

SETTLE_S = 2.0
"""A sync's decision is on the Deployment well within this (the controller writes the scale right after its
query); both sides are read this long after each real sync."""


@dataclass
class Side:
    first_scale_up_s: Optional[float]
    capacity_s: Optional[float]
    replicas_at_syncs: list
    metric_at_syncs: list
    peak_replicas: int
    first_scale_down_s: Optional[float] = None
    """Seconds from the load's first fall until the replicas first fall (None: no fall, or no scale-down)."""
    settled_s: Optional[float] = None
    """Seconds from the load's first fall until the replicas reach the count they end the run at (when lower)."""
    nodes: list = field(default_factory=list)
    """The pool's nodes requested at each second 0..duration (empty: nodes not autoscaled)."""
    nodes_ready: list = field(default_factory=list)
    """The pool's nodes ready (schedulable) at each second."""
    first_node_s: Optional[float] = None
    """Seconds from the load increase until the requested nodes first rise."""
    node_ready_s: Optional[float] = None
    """Seconds from the load increase until the ready nodes first rise."""
    load_fall_s: Optional[int] = None
    """The second of the load's first fall (None: it never falls)."""
    first_node_removed_s: Optional[float] = None
    """Seconds from the load's first fall until the requested nodes first fall (None: no node removed)."""
    last_node_removed_s: Optional[float] = None
    """Seconds from the load's first fall until the requested nodes reach the count they end the run at."""
    activation_s: Optional[float] = None
    """From zero (KEDA): seconds from the load increase until the replicas first rise above 0 (KEDA's poll)."""
    to_zero_s: Optional[float] = None
    """Back to zero (KEDA): seconds from the load's end (its last fall to no load) until the replicas are 0."""
    replicas_at_polls: list = field(default_factory=list)
    """KEDA: the Deployment's replicas 2 s after each of its polls."""
    failed: Optional[float] = None
    """Requests that found no ready replica (a wake from zero: the ingress answers 503 until one is ready)."""

    def times(self) -> tuple:
        return (self.first_scale_up_s, self.capacity_s, self.first_scale_down_s, self.settled_s, self.activation_s,
                self.to_zero_s)


@dataclass
class Agreement:
    scenario: str
    title: str
    sync_s: int
    real: Side
    sim: Side
    syncs: list
    phases: dict
    failed_real: int
    mismatched_syncs: list = field(default_factory=list)
    metric_error_median: Optional[float] = None
    metric_error_p95: Optional[float] = None
    one_phase: Optional[Side] = None
    """``simulate`` with every pod's target scraped at one offset (the simulator before per-pod offsets)."""
    one_phase_mismatched: list = field(default_factory=list)
    scan_s: int = 10
    """The node autoscaler's scan (the bound of the node half of the gate)."""
    polls: list = field(default_factory=list)
    """KEDA: the seconds of its polls (its activation and its return to zero are decided there)."""
    poll_s: int = 0
    """KEDA's ``pollingInterval`` (0: no KEDA); a time decided at a poll is held within it."""

    @property
    def nodes_beyond_a_scan(self) -> list:
        """Seconds whose simulated node count (requested or ready) is outside what the real chain had from one sync
        and one scan before to one sync and one scan after: a node follows the HPA's decision (within a sync) and
        the node autoscaler's reaction to it (within a scan)."""
        out = []
        window = self.scan_s + self.sync_s
        fall = self.real.load_fall_s
        for what in ("nodes", "nodes_ready"):
            real, sim = getattr(self.real, what), getattr(self.sim, what)
            for t in range(min(len(real), len(sim))):
                around = real[max(0, t - window):t + window + 1]
                # after the load's fall, a node the simulator removed may go on the real chain up to Karpenter's
                # validation later: the real count may reach the simulator's lower one that much later
                lag = KARPENTER_EMPTINESS_VALIDATION_S if fall is not None and t >= fall else 0
                later = real[max(0, t - window):t + window + lag + 1]
                if not min(later) <= sim[t] <= max(around):
                    out.append({"t": t, "what": what, "real": real[t], "sim": sim[t]})
        return out

    @property
    def removals_agree(self) -> bool:
        """The first and the last node removal after the load's fall within a sync and a scan of the real chain's,
        the real chain allowed Karpenter's validation of an empty node later."""
        bound = self.sync_s + self.scan_s
        for real, sim in ((self.real.first_node_removed_s, self.sim.first_node_removed_s),
                          (self.real.last_node_removed_s, self.sim.last_node_removed_s)):
            if real is None or sim is None:
                if not (real is None and sim is None):
                    return False
                continue
            if not -bound <= real - sim <= bound + KARPENTER_EMPTINESS_VALIDATION_S:
                return False
        return True

    @property
    def nodes_agree(self) -> bool:
        return (_within(self.real.first_node_s, self.sim.first_node_s, self.scan_s)
                and _within(self.real.node_ready_s, self.sim.node_ready_s, self.scan_s)
                and self.removals_agree and not self.nodes_beyond_a_scan)

    @property
    def times_bound_s(self) -> int:
        """How far apart the two sides' times may be: one HPA sync period, and one node autoscaler scan more when
        nodes are added on the way (the issue's gate: within one sync period and one scan). Karpenter asks for a
        node as soon as a pod is unschedulable, the simulator's cluster-autoscaler at its next scan
        (docs/real-loop.md, "The node autoscaler"), so a replica that waited for a node can turn ready across a
        sync on one side and not on the other."""
        return max(self.sync_s, self.poll_s) + (self.scan_s if self.nodes_added else 0)

    @property
    def nodes_added(self) -> bool:
        """Whether the real chain added a node during the run (a scale-down from nodes already there adds none)."""
        nodes = self.real.nodes
        return any(b > a for a, b in zip(nodes, nodes[1:]))

    @property
    def times_agree(self) -> bool:
        return all(_within(a, b, self.times_bound_s) for a, b in zip(self.real.times(), self.sim.times()))

    @property
    def beyond_a_sync(self) -> list:
        """Syncs whose simulated replica count is outside what the real chain had from the sync before to the one
        after: the replica count per time not within one HPA sync period (a count between the real chain's at
        neighbouring syncs is on its path, a sync early or late)."""
        return _beyond(self.syncs, self.real.replicas_at_syncs, self.sim.replicas_at_syncs) + _beyond(
            self.polls, self.real.replicas_at_polls, self.sim.replicas_at_polls, "poll")

    @property
    def agrees(self) -> bool:
        return self.times_agree and not self.beyond_a_sync and self.nodes_agree

    def to_json(self) -> dict:
        return {**asdict(self), "times_agree": self.times_agree, "beyond_a_sync": self.beyond_a_sync,
                "nodes_beyond_a_scan": self.nodes_beyond_a_scan, "removals_agree": self.removals_agree,
                "nodes_agree": self.nodes_agree,
                "agrees": self.agrees}


def _beyond(at: list, real: list, sim: list, what: str = "sync") -> list:
    out = []
    for k in range(len(sim)):
        around = real[max(0, k - 1):k + 2]
        if not min(around) <= sim[k] <= max(around):
            out.append({"t": at[k], "real": real[k], "sim": sim[k], **({"at": what} if what != "sync" else {})})
    return out


def _within(a: Optional[float], b: Optional[float], bound: float) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= bound


def read_side(rate, replicas, ready, rps_at_target: float, duration_s: int, syncs: list, metric,
              nodes=None, nodes_ready=None, polls=()) -> Side:
    """``replicas(t)``, ``ready(t)``, ``metric(t)`` (and ``nodes(t)``, ``nodes_ready(t)`` when the pool's nodes are
    autoscaled): the side's record at second ``t``. From zero replicas, the first scale-up is the first rise above
    one replica (the HPA's, after KEDA's activation: ``activation_s``)."""
    increase = next((t for t in range(1, duration_s + 1)
                     if rate(t) > ready(t) * rps_at_target * (1 + 1e-9) and rate(t) > rate(0)), None)
    first = capacity = activation = to_zero = None
    if increase is not None:
        before = replicas(increase - 1)
        if before == 0:
            activation = next((t - increase for t in range(increase, duration_s + 1) if replicas(t) > 0), None)
            before = 1
        first = next((t - increase for t in range(increase, duration_s + 1) if replicas(t) > before), None)
        capacity = next((t - increase for t in range(increase, duration_s + 1)
                         if ready(t) * rps_at_target >= rate(t) - 1e-9), None)
    down = settled = None
    decrease = next((t for t in range(1, duration_s + 1) if rate(t) < rate(0)), None)
    if decrease is not None:
        before, final = replicas(decrease - 1), replicas(duration_s)
        down = next((t - decrease for t in range(decrease, duration_s + 1) if replicas(t) < before), None)
        if final < before:
            settled = next(t - decrease for t in range(decrease, duration_s + 1)
                           if all(replicas(u) == final for u in range(t, duration_s + 1)))
    if activation is not None:
        # the load's end: its last fall to no load, after the increase
        end = next((t for t in range(duration_s, increase, -1) if rate(t) <= 0 < rate(t - 1)), None)
        if end is not None:
            to_zero = next((t - end for t in range(end, duration_s + 1) if replicas(t) == 0), None)
    side = Side(first, capacity, [replicas(s + SETTLE_S) for s in syncs], [metric(s + SETTLE_S) for s in syncs],
                max(replicas(t) for t in range(duration_s + 1)), down, settled, activation_s=activation,
                to_zero_s=to_zero, replicas_at_polls=[replicas(p + SETTLE_S) for p in polls])
    if nodes is not None:
        side.nodes = [nodes(t) for t in range(duration_s + 1)]
        side.nodes_ready = [nodes_ready(t) for t in range(duration_s + 1)]
        if increase is not None:
            side.first_node_s = next((t - increase for t in range(increase, duration_s + 1)
                                      if side.nodes[t] > side.nodes[increase - 1]), None)
            side.node_ready_s = next((t - increase for t in range(increase, duration_s + 1)
                                      if side.nodes_ready[t] > side.nodes_ready[increase - 1]), None)
        if decrease is not None:
            side.load_fall_s = decrease
            before, final = side.nodes[decrease - 1], side.nodes[duration_s]
            side.first_node_removed_s = next((t - decrease for t in range(decrease, duration_s + 1)
                                              if side.nodes[t] < before), None)
            if final < before:
                side.last_node_removed_s = next(t - decrease for t in range(decrease, duration_s + 1)
                                                if all(side.nodes[u] == final for u in range(t, duration_s + 1)))
    return side


def compare(scenario: Scenario, run, setup, collect_phase: int) -> Agreement:
    from gpuplatform.simulate.engine import Phases

    sync_s, scrape_s = setup.sync_s, setup.scrape_s
    syncs = [s for s in run.syncs if 0 <= s <= scenario.duration_s - SETTLE_S]
    if not syncs:
        raise ValueError(f"{scenario.name}: no HPA sync was seen in the query log")
    polls = [p for p in run.polls if 0 <= p <= scenario.duration_s - SETTLE_S] if setup.keda else []
    if setup.keda and not polls:
        raise ValueError(f"{scenario.name}: no KEDA poll was seen in the query log")
    # KEDA's scaler queries at the second it runs in, truncated (chain.Chain._queries): a scrape later in that
    # second is not seen, so every scrape is rounded up, as every query is
    collect = (setup.collect_s, collect_phase) if setup.reads_gpu_metrics and not setup.keda else None
    offsets = pod_scrape_offsets(run, scrape_s, collect)
    # the ingress controller's counter, where it wakes the workload, is the target scraped at the run's own phase
    scrape = math.ceil(run.ingress_scrapes[0]) % scrape_s if run.ingress_scrapes else offsets[0]
    poll = math.ceil(polls[0]) % scrape_s if polls else None
    phases = Phases(collect_phase % max(setup.collect_s, 1), scrape, math.ceil(syncs[0]) % sync_s, poll,
                    pod_scrapes=tuple(offsets))
    simulated = _read_sim(scenario, setup, phases, syncs, polls)
    # as the simulator stood before: every pod's target scraped at the first pod's offset
    one_phase = _read_sim(scenario, setup, Phases(phases.collect, offsets[0] if offsets else scrape, phases.sync,
                                                  poll), syncs, polls)
    rps = setup.plan.rps_at_target
    autoscaled = scenario.node_provision_s is not None
    real = read_side(scenario.rate, lambda t: run.at(t), lambda t: run.at(t, "ready"), rps, scenario.duration_s,
                     syncs, lambda t: run.at(t, "metric"), *((lambda t: run.at(t, "nodes"),
                                                              lambda t: run.at(t, "nodes_ready")) if autoscaled
                                                             else (None, None)), polls=polls)
    real.failed = run.failed()
    mismatched = _mismatches(syncs, real, simulated, polls)
    errors = [abs(m - r) / abs(r) for r, m in zip(real.metric_at_syncs, simulated.metric_at_syncs)
              if r is not None and m is not None and abs(r) > 1e-9]
    return Agreement(scenario.name, scenario.title, sync_s, real, simulated, [round(s, 2) for s in syncs],
                     {"collect": phases.collect, "scrape": phases.scrape, "sync": phases.sync,
                      "pod_scrapes": list(offsets), **({"poll": poll} if setup.keda else {})}, run.failed(),
                     mismatched, statistics.median(errors) if errors else None,
                     sorted(errors)[min(len(errors) - 1, int(0.95 * len(errors)))] if errors else None,
                     one_phase, _mismatches(syncs, real, one_phase, polls), setup.node_scaler.scan_s,
                     [round(p, 2) for p in polls], scrape_s if setup.keda else 0)


def compare_pool(scenario: Scenario, runs: dict, cfg, setup, collect_phase: int) -> list:
    """A pool's scenario: every workload's real run against one ``simulate`` run of the pool (``simulate --workload
    a,b``: simulate/pool.py ``simulate_pool``, the workloads' placeholders shared), each workload with the loop
    phases its real chain had. One :class:`Agreement` per workload; the pool's nodes are in each."""
    from gpuplatform.simulate.engine import Phases
    from gpuplatform.simulate.pool import simulate_pool

    sync_s, scrape_s = setup.sync_s, setup.scrape_s
    per, phases = {}, {}
    for name in scenario.workloads:
        seen = scenario.for_workload(name)
        syncs = [s for s in runs[name].syncs if 0 <= s <= scenario.duration_s - SETTLE_S]
        if not syncs:
            raise ValueError(f"{scenario.name}: no HPA sync of {name} was seen in the query log")
        offsets = pod_scrape_offsets(runs[name], scrape_s,
                                     (setup.collect_s, collect_phase) if setup.reads_gpu_metrics else None)
        phases[name] = Phases(collect_phase % max(setup.collect_s, 1), offsets[0], math.ceil(syncs[0]) % sync_s,
                              pod_scrapes=tuple(offsets))
        per[name] = (seen, syncs)
    nodes, nodes_ready = [], []

    def count(t, pool) -> None:
        nodes.append(len(pool.nodes))
        nodes_ready.append(pool.ready_count(t))
    result = simulate_pool(cfg, "real-loop", {n: per[n][0].trace() for n in scenario.workloads}, phases=phases,
                           provision_s=scenario.node_provision_s, on_second=count)
    rps = setup.plan.rps_at_target
    out = []
    for r in result.workloads:
        seen, syncs = per[r.workload]
        run = runs[r.workload]
        sec = r.tally.seconds
        last = len(sec.replicas) - 1
        shown = {e["t"]: e["metric"] for e in r.tally.timeline}

        def at(arr, t, last=last):
            return arr[max(0, min(last, int(t)))]

        def sim_metric(t, shown=shown):
            best = None
            for k in sorted(shown):
                if k <= t:
                    best = shown[k]
            return best
        real = read_side(seen.rate, lambda t, run=run: run.at(t), lambda t, run=run: run.at(t, "ready"), rps,
                         scenario.duration_s, syncs, lambda t, run=run: run.at(t, "metric"),
                         lambda t, run=run: run.at(t, "nodes"), lambda t, run=run: run.at(t, "nodes_ready"))
        sim = read_side(seen.rate, lambda t, sec=sec: at(sec.replicas, t), lambda t, sec=sec: at(sec.ready, t),
                        rps, scenario.duration_s, syncs, sim_metric, lambda t: at(nodes, t),
                        lambda t: at(nodes_ready, t))
        errors = [abs(m - x) / abs(x) for x, m in zip(real.metric_at_syncs, sim.metric_at_syncs)
                  if x is not None and m is not None and abs(x) > 1e-9]
        p = phases[r.workload]
        out.append(Agreement(
            f"{scenario.name}/{r.workload}", seen.title, sync_s, real, sim, [round(x, 2) for x in syncs],
            {"collect": p.collect, "scrape": p.scrape, "sync": p.sync, "pod_scrapes": list(p.pod_scrapes)},
            run.failed(), _mismatches(syncs, real, sim), statistics.median(errors) if errors else None,
            sorted(errors)[min(len(errors) - 1, int(0.95 * len(errors)))] if errors else None,
            None, [], setup.node_scaler.scan_s))
    return out


def _mismatches(syncs: list, real: Side, sim: Side, polls=()) -> list:
    return [{"t": round(s, 1), "real": r, "sim": m}
            for s, r, m in zip(syncs, real.replicas_at_syncs, sim.replicas_at_syncs) if r != m] + [
        {"t": round(p, 1), "real": r, "sim": m, "at": "poll"}
        for p, r, m in zip(polls, real.replicas_at_polls, sim.replicas_at_polls) if r != m]


def pod_scrape_offsets(run, scrape_s: int, collect=None) -> list:
    """Each pod's target's scrape offset (second 0 of the scenario as the origin), the pods in the order the
    emulator saw them start (ties by name: the order the ReplicaSet created them cannot be told apart there).

    A real instant becomes the simulator's second by rounding up: the simulator's step ``k`` scrapes what its
    targets held at the start of second ``k`` (after a collection at ``k - 1`` or before, not one at ``k``), and
    its sync at ``k`` queries at ``k - 0.5`` (autoscaling.EARLY_S), seeing the scrapes of seconds before ``k``."""
    order = [e["pod"] for e in sorted(run.events, key=lambda e: (e["t"], e.get("pod", "")))
             if e["event"] == "running"]
    order += sorted(p for p in run.scrapes if p not in order)
    return [_second(run.scrapes[p][0], collect) % scrape_s for p in order if run.scrapes.get(p)]


def _second(at: float, collect) -> int:
    """The simulator's second of a real scrape at ``at``: rounded up when a collection came at the second it
    rounds down to (the scrape read it; the simulator's scrape at ``k`` reads collections up to ``k - 1``), else
    rounded down, which keeps it before a sync later in the same real second (the simulator's sync at ``k`` sees
    the scrapes of the seconds before ``k``). ``collect``: ``(period, phase)`` of the exporter's collection, or None
    for gauges read at the scrape (rounded up, as every real instant)."""
    if collect is None:
        return math.ceil(at)
    period, phase = collect
    down = math.floor(at)
    return down + 1 if (down - phase) % period == 0 else down


def _read_sim(scenario: Scenario, setup, phases, syncs: list, polls=()) -> Side:
    from gpuplatform.simulate.engine import Simulation

    nodes, nodes_ready = [], []

    def count_nodes(sim) -> bool:
        t = len(nodes)
        nodes.append(len(sim.nodes.nodes))
        nodes_ready.append(sim.nodes.ready_count(t))
        return False
    sim = Simulation(setup, scenario.trace(), phases).run(until=count_nodes)
    failed = sim.tally.failed_requests
    sec = sim.tally.seconds
    last = len(sec.replicas) - 1

    def at(arr, t):
        return arr[max(0, min(last, int(t)))]

    shown = {}
    for entry in sim.tally.timeline:
        shown[entry["t"]] = entry["metric"]

    def sim_metric(t):
        # the value the simulated HPA read at its last sync at or before t
        best = None
        for k in sorted(shown):
            if k <= t:
                best = shown[k]
        return best

    autoscaled = scenario.node_provision_s is not None
    side = read_side(scenario.rate, lambda t: at(sec.replicas, t), lambda t: at(sec.ready, t),
                     setup.plan.rps_at_target, scenario.duration_s, syncs, sim_metric,
                     *((lambda t: at(nodes, t), lambda t: at(nodes_ready, t)) if autoscaled else (None, None)),
                     polls=polls)
    side.failed = failed
    return side


def placeholder_shortcut_problems(side: Side, node_provision_s: int) -> list:
    """Why a burst's run does not show a placeholder's shortcut (empty: it does). The new replica must be serving
    sooner than a replica waiting for a new node could be (its scale-up plus the node's provisioning; the scale-up
    is the base because its second moves by a sync with the loop's phase), and before the node added for the
    evicted placeholder is ready; and a node must have been added at all (the evicted placeholder asks for one)."""
    if side.first_scale_up_s is None or side.capacity_s is None:
        return [f"no scale-up reached capacity (first scale-up {_fmt(side.first_scale_up_s)}, capacity "
                f"{_fmt(side.capacity_s)})"]
    problems = []
    waiting_for_a_node_s = side.first_scale_up_s + node_provision_s
    if side.capacity_s >= waiting_for_a_node_s:
        problems.append(f"capacity {_fmt(side.capacity_s)} is no sooner than a replica waiting for a new node "
                        f"(scale-up {_fmt(side.first_scale_up_s)} + {node_provision_s} s): the placeholder was "
                        f"not preempted")
    if side.node_ready_s is not None and side.capacity_s >= side.node_ready_s:
        problems.append(f"capacity {_fmt(side.capacity_s)} is not before the added node was ready "
                        f"({_fmt(side.node_ready_s)})")
    if not side.nodes or max(side.nodes) <= side.nodes[0]:
        problems.append("no node was added for the evicted placeholder")
    return problems


def _fmt(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.0f} s"


def table(results: list) -> str:
    keda = any(a.polls for a in results)
    head = ("scenario", *(("from zero real / sim",) if keda else ()), "first scale-up real / sim",
            "capacity real / sim", "first scale-down real / sim", "settled real / sim",
            *(("to zero real / sim",) if keda else ()), "replicas per sync" + (" and poll" if keda else ""),
            "peak real / sim", "metric err med / p95", "nodes: first request / first ready (/ first and last removed) real / sim, per second",
            "gate")
    rows = [head]
    for a in results:
        n = len(a.syncs) + len(a.polls)
        rows.append((a.scenario,
                     *((f"{_fmt(a.real.activation_s)} / {_fmt(a.sim.activation_s)}",) if keda else ()),
                     f"{_fmt(a.real.first_scale_up_s)} / {_fmt(a.sim.first_scale_up_s)}",
                     f"{_fmt(a.real.capacity_s)} / {_fmt(a.sim.capacity_s)}",
                     f"{_fmt(a.real.first_scale_down_s)} / {_fmt(a.sim.first_scale_down_s)}",
                     f"{_fmt(a.real.settled_s)} / {_fmt(a.sim.settled_s)}",
                     *((f"{_fmt(a.real.to_zero_s)} / {_fmt(a.sim.to_zero_s)}",) if keda else ()),
                     f"{n - len(a.mismatched_syncs)} of {n} equal, "
                     f"{n - len(a.beyond_a_sync)} within a {'sync or poll' if a.polls else 'sync'}"
                     + ("" if a.one_phase is None else
                        f" ({n - len(a.one_phase_mismatched)} equal at one scrape offset)"),
                     f"{a.real.peak_replicas} / {a.sim.peak_replicas}",
                     "-" if a.metric_error_median is None else
                     f"{100 * a.metric_error_median:.0f} % / {100 * a.metric_error_p95:.0f} %",
                     _nodes_cell(a), "agree" if a.agrees else "DISAGREE"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = [" | ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def _nodes_cell(a: Agreement) -> str:
    if not a.real.nodes:
        return "fixed"
    seconds = len(a.real.nodes)
    equal = sum(1 for r, m, rr, mr in zip(a.real.nodes, a.sim.nodes, a.real.nodes_ready, a.sim.nodes_ready)
                if r == m and rr == mr)
    beyond = {x["t"] for x in a.nodes_beyond_a_scan}
    removed = ("" if a.real.first_node_removed_s is None and a.sim.first_node_removed_s is None else
               f"; removed first / last {_fmt(a.real.first_node_removed_s)} / {_fmt(a.sim.first_node_removed_s)}, "
               f"{_fmt(a.real.last_node_removed_s)} / {_fmt(a.sim.last_node_removed_s)}")
    return (f"{_fmt(a.real.first_node_s)} / {_fmt(a.sim.first_node_s)}, {_fmt(a.real.node_ready_s)} / "
            f"{_fmt(a.sim.node_ready_s)}{removed}; {equal} of {seconds} s equal, {seconds - len(beyond)} within a "
            f"sync and a scan; peak {max(a.real.nodes)} / {max(a.sim.nodes)}, end {a.real.nodes[-1]} / "
            f"{a.sim.nodes[-1]}")


def write(results: list, path: Path) -> None:
    path.write_text(json.dumps([a.to_json() for a in results], indent=2) + "\n")
