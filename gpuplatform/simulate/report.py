"""``gpuplatform simulate``: resolve the trace, run, and print a table or JSON; optionally plot a PNG."""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Optional, TextIO

from gpuplatform.components.config import PlatformConfig, duration_seconds
from gpuplatform.components.errors import ConfigError
from gpuplatform.simulate.bursty import NAME as BURSTY, bursty
from gpuplatform.simulate.engine import Result, Simulation, find_workload, progress_bar, service_plan, setup
from gpuplatform.simulate.sweep import EDGE_RESOLUTION, SweepResult, WakeUpResult, sweep_of, wake_up_of
from gpuplatform.simulate.reasons import capacity_never, first_scale_up_never
from gpuplatform.simulate.startup import path_text
from gpuplatform.simulate.traces import SHAPES, ArgumentIssue, Trace, built_in, from_csv, from_prometheus_json


def resolve_trace(cfg: PlatformConfig, workload: str, trace: str, duration: str | None,
                  slo: float | None = None) -> Trace:
    """The trace ``--trace`` names. Built-in shapes are sized from what the settings a run compares do not change:
    *base* is the load one replica serves at the target (at ``slo`` when given, so a tuning run's trace stays the
    same whatever target it adopts), and the peak is capped by what the workload's pool holds at that load
    (replicas per node x its nodes). Neither ``minReplicas``, ``maxReplicas`` nor ``warmReplicas`` moves the load,
    so two runs that differ in them run the same trace."""
    seconds = None
    if duration:
        try:
            seconds = duration_seconds(duration)
        except ValueError as exc:
            raise ConfigError([ArgumentIssue("--duration", str(exc))]) from None
        if seconds <= 0:
            raise ConfigError([ArgumentIssue("--duration", f"'{duration}' must be longer than 0s")])
    w = find_workload(cfg, workload)
    plan = service_plan(cfg, w)
    if trace in SHAPES or trace == BURSTY:
        per_replica = plan.rps_at_target if slo is None else plan.served_at_level(slo)
        if trace == BURSTY:  # around what one replica serves, bursting to several
            return bursty(per_replica, seconds)
        return built_in(trace, per_replica, per_replica * pool_replicas(cfg, w), seconds)
    if trace.endswith(".json"):
        return from_prometheus_json(trace, seconds)
    if not trace.endswith(".csv") and not Path(trace).exists():
        raise ConfigError([ArgumentIssue("--trace", f"{trace!r} is neither a CSV or JSON file nor a built-in shape; "
                                                  f"shapes: {', '.join((*SHAPES, BURSTY))}")])
    return from_csv(trace, seconds)


def pool_replicas(cfg: PlatformConfig, w) -> int:
    """The most replicas of workload ``w`` its pool holds: replicas per node x the pool's nodes (``maxNodes``, or
    ``desiredNodes`` for a fixed pool: components/pools.py)."""
    from gpuplatform.components.pools import all_pool_facts

    facts = all_pool_facts(cfg)[w.node_pool]
    return facts.max_nodes * facts.replicas_per_node(w.gpu)


def run(cfg: PlatformConfig, stack: str, workload: str, trace: str, duration: str | None, fmt: str,
        plot: str | None, out: TextIO | None = None, *, sweep: bool = False, tune: bool = False,
        budget: str | None = None, slo: float | None = None, compare_pools: str | None = None,
        no_drain: bool = False) -> int:
    out = out or sys.stdout
    if "," in workload:
        if compare_pools or sweep or plot or no_drain:
            raise ConfigError([ArgumentIssue("--workload", f"{workload!r} names several workloads: they run "
                                             "together in their pool, plain or with --tune; not with "
                                             "--compare-pools, --sweep, --plot or --no-drain")])
        return _run_pool(cfg, stack, workload, trace, duration, fmt, out, tune=tune, slo=slo)
    if no_drain:
        cfg = without_drain(cfg, workload)
    if slo is not None and slo <= 0:
        raise ConfigError([ArgumentIssue("--slo", f"{slo:g} must be > 0")])
    if tune:  # the built-in shapes at the SLO judged, so the load is the same whatever target the stack adopted
        from gpuplatform.simulate.tune import slo_level
        tr = resolve_trace(cfg, workload, trace, duration, slo_level(cfg, workload, slo))
    else:
        tr = resolve_trace(cfg, workload, trace, duration)
    for note in tr.notes:
        print(f"trace {tr.name}: {note}", file=sys.stderr)
    if compare_pools:
        if tune or plot or sweep:
            raise ConfigError([ArgumentIssue("--compare-pools", "runs alone: not with --tune, --plot or --sweep")])
        from gpuplatform.simulate.compare import run_compare

        return run_compare(cfg, stack, workload, tr, compare_pools, fmt, out, slo)
    if tune:
        return _run_tune(cfg, stack, workload, tr, budget, fmt, out, slo)
    s = setup(cfg, workload)  # the run and the sweeps read the stack through it
    result = Simulation(s, tr, None, slo).run(progress_bar()).result(stack)
    swept = sweep_of(s) if (sweep or trace == "step") else None
    woken = wake_up_of(s) if swept is not None else None
    if plot:
        write_plot(result, plot)
    if fmt == "json":
        doc = result.to_json()
        doc["neverReasons"] = never_reasons(result)
        if swept is not None:
            doc["first_scale_up_sweep"] = swept.to_json()
        if woken is not None:
            doc["wake_up_sweep"] = woken.to_json()
        json.dump(doc, out, indent=1)
        out.write("\n")
    else:
        out.write(table_text(result, swept=swept, woken=woken))
        if plot:
            out.write(f"\nWrote {plot}\n")
    return 0


def without_drain(cfg: PlatformConfig, workload: str) -> PlatformConfig:
    """``cfg`` with the workload's pods left without a drain chain (``drain.enabled: false``: Kubernetes' 30 s
    grace, no preStop, no drain flag): what ``--no-drain`` runs, to show what the chain saves."""
    find_workload(cfg, workload)
    workloads = [w.model_copy(update={"drain": w.drain.model_copy(update={"enabled": False})})
                 if w.name == workload else w for w in cfg.workloads]
    return cfg.model_copy(update={"workloads": workloads})


def trace_scaling(cfg: PlatformConfig, workload: str, tr: Trace, level: float) -> Optional[dict]:
    """For a built-in shape: the per-replica load a tuning run scaled it at (what a replica serves at the SLO level
    judged, so the trace is the same whatever target is adopted) and the one a plain run scales it at (at the
    target). None for a trace from a file, which both use as it is."""
    if tr.name not in SHAPES and tr.name != BURSTY:
        return None
    plan = service_plan(cfg, find_workload(cfg, workload))
    return {"level": level, "perReplicaRps": round(plan.served_at_level(level), 6),
            "atTargetRps": round(plan.rps_at_target, 6)}


def _run_tune(cfg: PlatformConfig, stack: str, workload: str, tr: Trace, budget: str | None, fmt: str,
              out: TextIO, slo: float | None = None) -> int:
    from gpuplatform.simulate.tune import default_budget_s, pool_ceiling, snippet, tune

    if budget is None:
        budget_s = default_budget_s(cfg, workload, tr)
        budget_basis = "the workload's error budget on this trace" if find_workload(cfg, workload).slo else "none"
    else:
        try:
            budget_s = duration_seconds(budget)
        except ValueError as exc:
            raise ConfigError([ArgumentIssue("--budget", str(exc))]) from None
        budget_basis = "--budget"
    tuned = tune(cfg, stack, workload, tr, budget_s, slo)
    own, best, growth = tuned.own, tuned.best, tuned.growth
    chosen = growth.outcome if growth is not None else best
    # nothing within the budget, in the pool as it is or grown: no setting is recommended (the least over the SLO
    # is shown as that, never as a change to make)
    recommended = growth is not None or tuned.feasible
    text = snippet(cfg, workload, chosen.candidate)
    if fmt == "json":
        doc = {"trace": tr.name, "budgetSeconds": budget_s, "budgetBasis": budget_basis,
               "candidates": tuned.tried, "refused": tuned.refused,
               "slo": own.slo, "traceScaling": trace_scaling(cfg, workload, tr, own.slo),
               "own": {"label": own.candidate.label(), **own.result.summary()},
               "best": {"label": best.candidate.label(), **best.result.summary()},
               "feasible": tuned.feasible, "recommended": recommended,
               "snippet": text if recommended and chosen.candidate != own.candidate else None,
               "poolGrowth": None}
        if growth is not None:
            doc["poolGrowth"] = {**growth.to_json(), "label": growth.outcome.candidate.label(),
                                 **growth.outcome.result.summary()}
        json.dump(doc, out, indent=1)
        out.write("\n")
        return 0
    unit = own.result.setup.unit

    def line(name, o):
        r = o.result
        warm = (f", {r.warm_unit_hours:g} {unit}-hours held by placeholders ({r.tally.warm_s / 3600:.4g} "
                "placeholder-hours)" if r.tally.warm_s else "")
        return (f"  {name:<11} {o.candidate.label()}: {r.tally.node_s / 3600:.4g} node-hours (ranked on; "
                f"{r.gpu_hours:g} GPU-hours of nodes), {r.unit_hours:g} {unit}-hours held by replicas "
                f"({r.tally.ready_replica_s / 3600:.4g} ready replica-hours){warm}, {r.tally.bad_minutes} bad minutes "
                f"({r.over_target_s:g}s over the level beyond the tolerance), "
                f"peak {r.replicas_max} replicas")

    out.write(f"Tuned {workload} on trace {tr.name} ({tuned.tried} settings simulated, {tuned.refused} refused by "
              f"the stack's validation), budget {budget_s / 60:g} bad minutes ({budget_basis}) of the SLO judged "
              f"({_judged_text(own.result)})\n{line('stack', own)}\n"
              f"{line('best' if tuned.feasible else 'least over', best)}\n")
    scaling = trace_scaling(cfg, workload, tr, own.slo)
    if scaling is not None:
        out.write(f"  (trace {tr.name} scaled at {scaling['perReplicaRps']:.4g} req/s per replica, what one serves at "
                  f"the SLO level {own.slo:g}; plain simulate scales it at the target, {scaling['atTargetRps']:.4g} "
                  "req/s, so its figures for the same settings differ)\n")
    if growth is not None:
        out.write(f"Nothing the pool holds keeps within the budget (at most {pool_ceiling(cfg, workload)} "
                  f"replicas; the best shown is the least over the SLO). With {growth.extra} more "
                  f"node{'s' if growth.extra > 1 else ''} (pool {growth.pool!r} {growth.field} {growth.nodes_from} "
                  f"-> {growth.nodes_to}) it does:\n{line('grown pool', growth.outcome)}\n  cost: "
                  f"{growth.cost_text()}\n")
        if growth.fixed_at is not None:
            now = "As the pool is" if growth.fixed_at == 0 else f"With {growth.fixed_at} more"
            out.write(f"  {now} only a fixed count would (every replica the pool then holds, "
                      "warm all the time: autoscaler none); an HPA's minReplicas must be below its maxReplicas.\n")
    elif not tuned.feasible:
        out.write("No setting keeps within the budget, nor does a pool grown by up to "
                  "16 nodes; the best shown is the least over the SLO. Raise the budget or the SLO level.\n")
        return 0
    if chosen.candidate == own.candidate:
        out.write("The stack's own settings are already the cheapest within the budget.\n")
    else:
        out.write("\nSet in the stack file (merge into the named pool and workload; validated with the stack):\n\n"
                  + text)
    return 0


def _run_pool(cfg: PlatformConfig, stack: str, workload: str, trace: str, duration: str | None, fmt: str,
              out: TextIO, *, tune: bool, slo: float | None) -> int:
    """Several workloads of one pool on their traces (``--trace`` one per workload, comma-separated, or one for
    all): one run with their own settings, or with ``--tune`` the cheapest minReplicas and shared placeholders
    within every workload's SLO (simulate.pool)."""
    from gpuplatform.simulate.pool import outcome_text, setting_text, simulate_pool, tune_pool
    from gpuplatform.simulate.startup import path_text
    from gpuplatform.simulate.tune import slo_level

    names = [n.strip() for n in workload.split(",")]
    if len(set(names)) != len(names) or "" in names:
        raise ConfigError([ArgumentIssue("--workload", f"{workload!r}: allowed: distinct workload names, "
                                                       "comma-separated")])
    specs = [x.strip() for x in trace.split(",")]
    if len(specs) not in (1, len(names)):
        raise ConfigError([ArgumentIssue("--trace", f"{len(specs)} traces for {len(names)} workloads; allowed: one "
                                                    "per workload, in the order of --workload, or one for all")])
    levels = {n: slo_level(cfg, n, slo) for n in names} if tune else {n: slo for n in names}
    traces = {n: resolve_trace(cfg, n, specs[k if len(specs) > 1 else 0], duration, levels[n])
              for k, n in enumerate(names)}
    targets = {n: v for n, v in levels.items() if v is not None} if slo is not None else None
    if not tune:
        result = simulate_pool(cfg, stack, traces, slo_target=targets)
        if fmt == "json":
            json.dump(result.to_json(), out, indent=1)
            out.write("\n")
        else:
            out.write(f"Pool of {', '.join(names)} (traces {', '.join(t.name for t in traces.values())}): "
                      f"{outcome_text(result)}\n")
            for r in result.workloads:
                if r.tally.increase_at is not None:
                    got = ("never" if r.capacity_ready_s is None else
                           f"{r.capacity_ready_s:g}s: {path_text(r.tally.capacity_path)}")
                    out.write(f"  {r.workload}: capacity after its load rose at {r.tally.increase_at:g}s: {got}\n")
        return 0
    tuned = tune_pool(cfg, stack, traces, slo_target=targets)
    floor, held, best = tuned.best_floor, tuned.best_placeholders, tuned.best
    if tuned.placeholders_win is None:
        verdict = "No setting tried keeps every workload's SLO: nothing is recommended."
    elif floor is None:
        verdict = "Only settings with placeholders keep every workload's SLO."
    elif held is None:
        verdict = "No setting with placeholders keeps every workload's SLO: headroom as minReplicas does."
    elif tuned.placeholders_win:
        verdict = (f"Placeholders beat minReplicas here: {floor[1].node_hours - held[1].node_hours:.4g} node-hours "
                   "less at the same SLOs.")
    else:
        verdict = (f"Placeholders do not beat minReplicas here: the cheapest with them costs "
                   f"{held[1].node_hours - floor[1].node_hours:.4g} node-hours more at the same SLOs.")
    if fmt == "json":
        def one(x):
            return None if x is None else {"setting": x[0], **x[1].to_json()}
        json.dump({"workloads": names, "traces": [t.name for t in traces.values()], "tried": len(tuned.tried),
                   "refused": tuned.refused, "withoutPlaceholders": one(floor), "withPlaceholders": one(held),
                   "withWarmSet": one(tuned.best_warm_set), "best": one(best),
                   "placeholdersWin": tuned.placeholders_win, "warmSetWins": tuned.warm_set_wins}, out, indent=1)
        out.write("\n")
        return 0
    lines = [f"Tuned the pool of {', '.join(names)} (traces {', '.join(t.name for t in traces.values())}): "
             f"{len(tuned.tried)} settings simulated, {tuned.refused} refused by the stack's validation; each judged "
             "by every workload's SLO (its bad minutes within its error budget), costed in the pool's node-hours"]
    slept = tuned.best_warm_set
    with_warm_set = any(x[0]["warmSetGpus"] for x in tuned.tried)
    for label, x in (("without placeholders", floor), ("with placeholders", held),
                     *((("with the warm set", slept),) if with_warm_set else ())):
        lines.append(f"  {label:<21} " + ("none keeps every SLO" if x is None else
                                          f"{setting_text(x[0])}: {outcome_text(x[1])}"))
    lines.append(verdict)
    if with_warm_set:
        if tuned.warm_set_wins is None:
            lines.append("The warm set and minReplicas cannot be weighed here: "
                         + ("no setting with the warm set" if slept is None else "no setting without placeholders")
                         + " keeps every workload's SLO.")
        else:
            diff = abs(floor[1].node_hours - slept[1].node_hours)
            lines.append(f"The warm set {'beats' if tuned.warm_set_wins else 'does not beat'} minReplicas here: "
                         f"{diff:.4g} node-hours {'less' if tuned.warm_set_wins else 'more or the same'} at the "
                         "same SLOs.")
    if best is not None:
        lines.append("Placeholders are stated as the warmReplicas of one workload of the pool: each is a pause pod "
                     "of one replica's size that a replica of any workload there preempts.")
    out.write("\n".join(lines) + "\n")
    return 0


def _judged_text(r: Result) -> str:
    """The objectives a run's bad minutes are judged on (simulate.slo)."""
    objectives = r.sim.objectives if r.sim is not None and r.sim.objectives else ((r.metric, r.slo_target),)
    return " and ".join(f"{m} < {b:g}" for m, b in objectives) + " on the worst pod over each minute"


def _slo_text(r: Result) -> str:
    return "" if r.slo_target in (None, r.target) else f", time over target judged against --slo {r.slo_target:g}"


def _s(value, why: Optional[str] = None) -> str:
    if value is None:
        return f"never ({why})" if why else "never"
    return f"{value:g}s"


def never_reasons(r: Result) -> dict:
    """Why each figure that reads "never" does (only those that do)."""
    out = {}
    if r.first_scale_up_s is None and r.sim is not None:
        out["first_scale_up_s"] = first_scale_up_never(r.sim)
    if r.capacity_ready_s is None and r.sim is not None:
        out["capacity_ready_s"] = capacity_never(r.sim) or first_scale_up_never(r.sim)
    return {k: v for k, v in out.items() if v}


def sweep_text(swept: SweepResult) -> str:
    """The first scale-up over all phases and steps, in one line (the plan's table shares it)."""
    if not swept.runs:
        return f"never ({swept.below_edge})" if swept.below_edge else "no step outgrows the running replicas"
    text = (f"worst {_s(swept.worst_s, swept.never_reason)}, median {_s(swept.median_s)} ({swept.runs} "
            f"alignments; worst at {_where(swept.worst_at)})")
    if swept.edge is not None:
        ladder = ", ".join(f"+{d:g}: {_s(v)}" for d, v in swept.edge_ladder.items())
        text += (f"; steps from {swept.edge * (1 + EDGE_RESOLUTION):.6g}x (the HPA's tolerance edge "
                 f"{swept.edge:.6g}x + {EDGE_RESOLUTION:g}); closer to the edge {ladder}")
    return text


def wake_text(woken: WakeUpResult) -> list[str]:
    """The wake-up of a scale-to-zero workload: activation, first ready replica and failed requests."""
    lines = [f"  wake-up from zero at {woken.load_rps:.4g} req/s ({woken.runs} alignments of scrape and poll): KEDA "
             f"activates after worst {_s(woken.activation_worst_s)}, median {_s(woken.activation_median_s)}, best "
             f"{_s(woken.activation_best_s)}; requests fail (503, no ready endpoint) until a replica is ready"]
    for c in woken.cases:
        lines.append(f"    {c.nodes}: first ready replica worst {_s(c.ready_worst_s, c.never_reason)}, median "
                     f"{_s(c.ready_median_s)}; failed requests worst "
                     f"{'-' if c.failed_worst is None else f'{c.failed_worst:g}'}, median "
                     f"{'-' if c.failed_median is None else f'{c.failed_median:g}'}; waited behind the wake worst "
                     f"{'-' if c.waited_worst is None else f'{c.waited_worst:g}'}")
    lines.append(f"    it is at zero {_s(woken.zero_after_s)} after the last request (rule window, cooldownPeriod, "
                 "then a poll)")
    return lines


def table_text(r: Result, every_s: int = 60, swept: Optional[SweepResult] = None,
               woken: Optional[WakeUpResult] = None) -> str:
    s = r.summary()
    why = never_reasons(r)
    lb = s["lower_bound"]
    unit = s["unit"]
    lines = [f"Stack {r.stack}, workload {r.workload} ({r.autoscaler} on {r.metric} = {r.api_name}, target "
             f"{r.target:g} {r.unit}{_slo_text(r)}), trace {r.trace}; Prometheus {r.setup.major} semantics",
             f"Adapter query: {r.query}",
             f"Service model: {r.plan.rps_at_target:.4g} req/s per ready replica at target, serves at most "
             f"{r.plan.capacity_rps:.4g}; image pull {r.plan.image_pull_s}s, model load {r.plan.model_load_s}s",
             f"Start-up figures: {r.plan.startup_basis}",
             "",
             f"  load increase -> first scale-up decision   {_s(r.first_scale_up_s, why.get('first_scale_up_s'))} "
             f"(phases: collect {r.phases.collect}, scrape {r.phases.scrape}, sync {r.phases.sync})"]
    if swept is not None:
        lines.append(f"  first scale-up over all phases and steps  {sweep_text(swept)}")
    if woken is not None:
        lines += wake_text(woken)
    lines += [f"  load increase -> ready capacity covers it  {_s(r.capacity_ready_s, why.get('capacity_ready_s'))}",
              *([f"    where it went (last replica it needed)  {path_text(s['capacity_path'])}"]
                if r.capacity_ready_s is not None else []),
              f"  over target beyond the 10% tolerance       {r.over_target_s:g}s (above target at all "
              f"{s['above_target_s']:g}s, failed requests {s['failed_requests']:g})",
              f"  scale-in: replicas removed / in flight    {s['scale_in']['removed']} / "
              f"{s['scale_in']['in_flight']:g} requests, dropped {s['scale_in']['dropped']:g}; drain: "
              f"{s['scale_in']['drain']}",
              f"  replicas: peak / maxReplicas / at max     {s['peak_replicas']} / {s['max_replicas']} / "
              f"{s['time_at_max_s']:g}s",
              *([f"  SLO                                       {r.slo.text()}"] if r.slo is not None else []),
              *(r.sim.wake.text() if r.sim is not None and r.sim.wake is not None else []),
              f"  cost used / lower bound for the SLO       {s['unit_hours']:g} / {lb['unit_hours']:g} {unit}-hours "
              f"held by replicas, {s['node_hours']:g} / {lb['node_hours']:g} node-hours, {s['gpu_hours']:g} / "
              f"{lb['gpu_hours']:g} GPU-hours of nodes",
              *([f"  warm capacity: placeholders / preempted    {s['warm_replicas']} / {s['warm_preemptions']}, idle "
                 f"cost {s['warm_unit_hours']:g} {unit}-hours"] if s["warm_replicas"] else []),
              ""]
    rows = [["T", "DEMAND", "METRIC", "DESIRED", "REPLICAS", "READY", "NODES"]]
    last = -every_s
    for e in r.timeline:
        if e["t"] - last >= every_s or e is r.timeline[-1]:
            last = e["t"]
            rows.append([f"{e['t']}s", f"{e['demand']:g}", "-" if e["metric"] is None else f"{e['metric']:g}",
                         e["desired"], e["replicas"], e["ready"], e["nodes"]])
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    lines += ["  ".join(str(c).rjust(wd) for c, wd in zip(row, widths)) for row in rows]
    return "\n".join(lines) + "\n"

PLOT_HINT = "needs matplotlib, which the plot extra installs: pip install 'gpu-platform[plot]'"


def _where(at: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in at.items()) if at else "-"


OFF_SCALE = 4.0
"""The metric panel shows up to this many times the over-target line: a queue metric reads orders of magnitude
above target after a step, and a linear axis tall enough for that would flatten the target and the tolerance band
into one line. Values above are cut off and the peak is written on the panel."""


def over_intervals(over) -> list[tuple[int, int]]:
    """The runs of seconds counted over target, as ``(first second, last second + 1)``."""
    spans, start = [], None
    for second, flag in enumerate(over):
        if flag and start is None:
            start = second
        elif not flag and start is not None:
            spans.append((start, second))
            start = None
    if start is not None:
        spans.append((start, len(over)))
    return spans


def metric_top(peak: float, line: float, maximum: Optional[float]) -> float:
    """Top of the metric axis (its bottom is 0): room for the peak, at most :data:`OFF_SCALE` x the over-target
    line, and no further than the unit's own maximum (100 %) when the values stay within it."""
    top = max(peak, line) * 1.08
    top = min(top, OFF_SCALE * line)
    if maximum is not None:
        top = min(top, maximum * 1.05)
    return max(top, line * 1.25)


def figure(r: Result):
    """The plot as a matplotlib figure, four panels on one time axis:

    1. demand and what the ready replicas serve at target (req/s);
    2. the first metric: its true value each second (what ``over_target_s`` judges), the value the HPA read at each
       sync (``kubectl get hpa``'s TARGETS column), the target, the tolerance band and the ``--slo`` level, with
       the seconds over target shaded (on every panel, so replicas can be read against them);
    3. replicas (the Deployment's scale), ready pods, and ``desired`` as the HPA's status shows it, with
       ``maxReplicas``; with ``warmReplicas``, the placeholders bound to a node;
    4. the pool's ready nodes.

    Every axis is linear from 0 (a percentage on a log axis merges the target with its tolerance line, and 0 has
    no place on it); counts have integer ticks; what changes in steps is drawn as steps."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    from gpuplatform.catalogs.metrics import UNITS
    from gpuplatform.simulate.hpa import TOLERANCE

    summ = r.summary()
    sec = r.tally.seconds
    unit = UNITS[r.unit]
    shown = unit.shown
    minutes = [i / 60 for i in range(len(sec.level))]
    synced = [e["t"] / 60 for e in r.timeline]
    slo = r.target if r.slo_target is None else r.slo_target
    line = slo * (1 + TOLERANCE)
    spans = over_intervals(sec.over)

    fig, (ax_load, ax_metric, ax_rep, ax_nodes) = plt.subplots(
        4, 1, figsize=(12, 9.5), sharex=True, constrained_layout=True,
        gridspec_kw={"height_ratios": [2, 3, 2.2, 1.3]})
    slo_text = f", SLO {slo:g} {shown}" if slo != r.target else ""
    fig.suptitle(f"{r.workload} ({r.stack}): {r.metric} target {r.target:g} {shown}{slo_text}; "
                 f"{r.autoscaler.upper()}, {r.trace} trace", fontsize=13)
    lb = summ["lower_bound"]
    ax_load.set_title(f"first scale-up {_s(r.first_scale_up_s)}, capacity ready {_s(r.capacity_ready_s)}, over "
                      f"target {r.over_target_s:g}s (shaded), peak {summ['peak_replicas']} of "
                      f"{summ['max_replicas']} replicas\n{summ['unit_hours']:g} {summ['unit']}-hours (lower bound "
                      f"{lb['unit_hours']:g}), {summ['node_hours']:g} node-hours", fontsize=10)

    ax_load.plot(minutes, sec.demand, drawstyle="steps-post", color="tab:blue", label="demand")
    ax_load.plot(minutes, [n * r.plan.rps_at_target for n in sec.ready], drawstyle="steps-post",
                 color="tab:green", label="ready replicas x req/s at target")
    ax_load.set_ylabel("requests / s")
    ax_load.set_ylim(0, max(max(sec.demand, default=0), max(sec.ready, default=0) * r.plan.rps_at_target, 1e-9)
                     * 1.1)

    peak = max(sec.level, default=0.0)
    ax_metric.plot(minutes, sec.level, color="tab:orange", linewidth=1.2,
                   label="true value each second (judged for over target)")
    ax_metric.plot(synced, [math.nan if e["metric"] is None else e["metric"] for e in r.timeline],
                   drawstyle="steps-post", color="black", linewidth=1.6, label="value the HPA read (kubectl)")
    ax_metric.axhline(r.target, color="tab:red", linestyle="--", linewidth=1.3, label=f"target {r.target:g} {shown}")
    ax_metric.axhline(r.target * (1 + TOLERANCE), color="tab:red", linestyle=":", linewidth=1.3,
                      label=f"target + {TOLERANCE:.0%} (HPA tolerance)")
    if slo != r.target:
        ax_metric.axhline(slo, color="tab:purple", linestyle="--", linewidth=1.3, label=f"SLO {slo:g} {shown}")
        ax_metric.axhline(line, color="tab:purple", linestyle=":", linewidth=1.3,
                          label=f"SLO + {TOLERANCE:.0%} (over-target line)")
    top = metric_top(peak, line, unit.maximum if peak <= (unit.maximum or math.inf) else None)
    ax_metric.set_ylim(0, top)
    if peak > top:
        at = max(range(len(sec.level)), key=sec.level.__getitem__) / 60
        ax_metric.text(0.99, 0.96, f"off scale above: peak {peak:.4g} {shown} at {at:.1f} min",
                       transform=ax_metric.transAxes, ha="right", va="top", fontsize=9,
                       bbox={"facecolor": "white", "edgecolor": "0.7", "alpha": 0.9})
    ax_metric.set_ylabel(f"{r.metric} ({shown})")

    for key, color, style, width in (("replicas", "tab:blue", "-", 3.0), ("ready", "tab:green", "-", 1.6)):
        ax_rep.plot(minutes, getattr(sec, key), drawstyle="steps-post", color=color, linestyle=style,
                    linewidth=width, label="replicas (scale)" if key == "replicas" else "ready")
    ax_rep.plot(synced, [e["desired"] for e in r.timeline], drawstyle="steps-post", color="tab:purple",
                linestyle=":", linewidth=1.8, label="desired (HPA status)")
    ax_rep.axhline(summ["max_replicas"], color="tab:red", linestyle="--", linewidth=1, label="maxReplicas")
    top = summ["max_replicas"]
    if summ["warm_replicas"]:
        # what holds the pool's room besides the replicas: placeholders bound to a node, which a replica preempts
        ax_rep.plot(minutes, sec.warm, drawstyle="steps-post", color="tab:olive", linewidth=1.6, linestyle="-.",
                    label=f"placeholders bound (warmReplicas {summ['warm_replicas']}, "
                          f"{summ['warm_preemptions']} preempted)")
        top = max(top, summ["warm_replicas"])
    ax_rep.set_ylim(0, top + 1)
    ax_rep.set_ylabel("pods")

    ax_nodes.plot(minutes, sec.nodes, drawstyle="steps-post", color="0.35", linewidth=2, label="ready nodes")
    most = max(max(sec.nodes, default=0), r.setup.min_nodes)
    if r.setup.max_nodes and r.setup.max_nodes < 10 * max(most, 1):
        ax_nodes.axhline(r.setup.max_nodes, color="tab:red", linestyle="--", linewidth=1, label="pool's max nodes")
        most = max(most, r.setup.max_nodes)
    ax_nodes.set_ylim(0, most + 1)
    ax_nodes.set_ylabel("nodes")
    ax_nodes.set_xlabel("minutes")

    for ax in (ax_rep, ax_nodes):
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    for ax in (ax_load, ax_metric, ax_rep, ax_nodes):
        for k, (a, b) in enumerate(spans):
            ax.axvspan(a / 60, b / 60, color="tab:red", alpha=0.13, linewidth=0, gid="over-target",
                       label="over target (beyond tolerance) or failing" if k == 0 and ax is ax_metric else None)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
    ax_nodes.set_xlim(0, max(minutes[-1] if minutes else 0, 1 / 60))
    return fig


def write_plot(r: Result, path: str) -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ConfigError([ArgumentIssue("--plot", PLOT_HINT)]) from None
    import matplotlib.pyplot as plt

    fig = figure(r)
    fig.savefig(path, dpi=90)
    plt.close(fig)
