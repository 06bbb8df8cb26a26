"""``gpuplatform simulate``: resolve the trace, run, and print a table or JSON; optionally plot a PNG."""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Optional, TextIO

from gpuplatform.components.config import PlatformConfig, duration_seconds
from gpuplatform.components.errors import ConfigError
from gpuplatform.simulate.engine import Result, find_workload, progress_bar, service_plan, simulate
from gpuplatform.simulate.sweep import SweepResult, first_scale_up_sweep
from gpuplatform.simulate.traces import SHAPES, ArgumentIssue, Trace, built_in, from_csv, from_prometheus_json


def resolve_trace(cfg: PlatformConfig, workload: str, trace: str, duration: str | None,
                  slo: float | None = None) -> Trace:
    """The trace ``--trace`` names. Built-in shapes scale with the load ``minReplicas`` serve at the target, or at
    ``slo`` when given, so a tuning run's trace stays the same whatever target the stack has adopted."""
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
    if trace in SHAPES:
        a = w.autoscaling
        per_replica = plan.rps_at_target if slo is None else plan.served_at_level(slo)
        return built_in(trace, per_replica * max(a.min_replicas, 1), per_replica * a.max_replicas, seconds)
    if trace.endswith(".json"):
        return from_prometheus_json(trace, seconds)
    if not trace.endswith(".csv") and not Path(trace).exists():
        raise ConfigError([ArgumentIssue("--trace", f"{trace!r} is neither a CSV or JSON file nor a built-in shape; "
                                                  f"shapes: {', '.join(SHAPES)}")])
    return from_csv(trace, seconds)


def run(cfg: PlatformConfig, stack: str, workload: str, trace: str, duration: str | None, fmt: str,
        plot: str | None, out: TextIO | None = None, *, sweep: bool = False, tune: bool = False,
        budget: str = "0s", slo: float | None = None) -> int:
    out = out or sys.stdout
    tr = resolve_trace(cfg, workload, trace, duration, slo if tune else None)
    for note in tr.notes:
        print(f"trace {tr.name}: {note}", file=sys.stderr)
    if tune:
        return _run_tune(cfg, stack, workload, tr, budget, fmt, out, slo)
    result = simulate(cfg, stack, workload, tr, progress=progress_bar())
    swept = first_scale_up_sweep(cfg, workload) if (sweep or trace == "step") else None
    if plot:
        write_plot(result, plot)
    if fmt == "json":
        doc = result.to_json()
        if swept is not None:
            doc["first_scale_up_sweep"] = swept.to_json()
        json.dump(doc, out, indent=1)
        out.write("\n")
    else:
        out.write(table_text(result, swept=swept))
        if plot:
            out.write(f"\nWrote {plot}\n")
    return 0


def _run_tune(cfg: PlatformConfig, stack: str, workload: str, tr: Trace, budget: str, fmt: str,
              out: TextIO, slo: float | None = None) -> int:
    from gpuplatform.simulate.tune import snippet, tune

    try:
        budget_s = duration_seconds(budget)
    except ValueError as exc:
        raise ConfigError([ArgumentIssue("--budget", str(exc))]) from None
    if slo is not None and slo <= 0:
        raise ConfigError([ArgumentIssue("--slo", f"{slo:g} must be > 0")])
    own, best, tried = tune(cfg, stack, workload, tr, budget_s, slo)
    text = snippet(cfg, workload, best.candidate)
    if fmt == "json":
        json.dump({"trace": tr.name, "budgetSeconds": budget_s, "candidates": tried, "slo": own.slo,
                   "own": {"label": own.candidate.label(), **own.result.summary()},
                   "best": {"label": best.candidate.label(), **best.result.summary()},
                   "feasible": best.violation_s <= budget_s, "snippet": text}, out, indent=1)
        out.write("\n")
        return 0
    unit = own.result.setup.unit

    def line(name, o):
        r = o.result
        return (f"  {name:<11} {o.candidate.label()}: {r.unit_hours:g} {unit}-hours, {r.gpu_hours:g} GPU-hours of "
                f"nodes, {r.over_target_s:g}s over target, peak {r.replicas_max} replicas")

    out.write(f"Tuned {workload} on trace {tr.name} ({tried} settings simulated), budget {budget_s:g}s over "
              f"the SLO {own.slo:g} {own.result.unit} beyond the tolerance\n{line('stack', own)}\n"
              f"{line('best', best)}\n")
    if best.violation_s > budget_s:
        out.write("No setting keeps within the budget; the best shown is the least over target. Raise maxReplicas "
                  "or the budget.\n")
    elif best.candidate == own.candidate:
        out.write("The stack's own settings are already the cheapest within the budget.\n")
    else:
        out.write("\nSet in the stack file (merge into the workload's autoscaling block):\n\n" + text)
    return 0


def _s(value) -> str:
    return "never" if value is None else f"{value:g}s"


def table_text(r: Result, every_s: int = 60, swept: Optional[SweepResult] = None) -> str:
    s = r.summary()
    lb = s["lower_bound"]
    unit = s["unit"]
    lines = [f"Stack {r.stack}, workload {r.workload} ({r.autoscaler} on {r.metric} = {r.api_name}, target "
             f"{r.target:g} {r.unit}), trace {r.trace}; Prometheus {r.setup.major} semantics",
             f"Adapter query: {r.query}",
             f"Service model: {r.plan.rps_at_target:.4g} req/s per ready replica at target, serves at most "
             f"{r.plan.capacity_rps:.4g}; image pull {r.plan.image_pull_s}s, model load {r.plan.model_load_s}s",
             f"Start-up figures: {r.plan.startup_basis}",
             "",
             f"  load increase -> first scale-up decision   {_s(r.first_scale_up_s)} (phases: collect "
             f"{r.phases.collect}, scrape {r.phases.scrape}, sync {r.phases.sync})"]
    if swept is not None:
        lines.append(f"  first scale-up over all phases and steps  worst {_s(swept.worst_s)}, median "
                     f"{_s(swept.median_s)} ({swept.runs} alignments; worst at {_where(swept.worst_at)})")
    lines += [f"  load increase -> ready capacity covers it  {_s(r.capacity_ready_s)}",
              f"  over target beyond the 10% tolerance       {r.over_target_s:g}s (above target at all "
              f"{s['above_target_s']:g}s, failed requests {s['failed_requests']:g})",
              f"  replicas: peak / maxReplicas / at max     {s['peak_replicas']} / {s['max_replicas']} / "
              f"{s['time_at_max_s']:g}s",
              f"  cost used / lower bound for the SLO       {s['unit_hours']:g} / {lb['unit_hours']:g} {unit}-hours, "
              f"{s['node_hours']:g} / {lb['node_hours']:g} node-hours, {s['gpu_hours']:g} / {lb['gpu_hours']:g} "
              f"GPU-hours of nodes",
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


def write_plot(r: Result, path: str) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        raise ConfigError([ArgumentIssue("--plot", PLOT_HINT)]) from None
    t = [e["t"] / 60 for e in r.timeline]
    summ = r.summary()
    fig, (ax1, ax2, ax3) = plt.subplots(3, 1, figsize=(12, 8.5), sharex=True, constrained_layout=True)
    fig.suptitle(f"{r.stack} / {r.workload}: {r.trace} trace, {r.autoscaler} on {r.api_name}; peak "
                 f"{summ['peak_replicas']} of {summ['max_replicas']} replicas, {summ['time_at_max_s']:g}s at max",
                 fontsize=13)
    ax1.plot(t, [e["demand"] for e in r.timeline], color="tab:blue", label="demand (req/s)")
    ax1.step(t, [e["ready"] * r.plan.rps_at_target for e in r.timeline], where="post", color="tab:green",
             label="ready replicas x req/s at target")
    ax1.set_ylabel("requests / s")
    ax1.set_ylim(bottom=0)
    # a queue metric spans orders of magnitude after a step: a log axis keeps the target line readable
    floor = r.target / 100
    metric = [math.nan if e["metric"] is None else max(e["metric"], floor) for e in r.timeline]
    ax2.step(t, metric, where="post", color="tab:orange", label=f"metric the HPA read ({r.unit})")
    ax2.axhline(r.target, color="tab:red", linestyle="--", label=f"target {r.target:g} {r.unit}")
    ax2.axhline(r.target * 1.1, color="tab:red", linestyle=":", linewidth=1, label="target + 10% tolerance")
    ax2.set_yscale("log")
    seen = [m for m in metric if not math.isnan(m)]
    ax2.set_ylim(floor, max(seen + [r.target * 2]) * 1.5)
    ax2.set_ylabel(f"metric ({r.unit}, log)")
    # drawn widest first, so lines that coincide (replicas = ready in steady state) stay visible; desired is
    # clamped to [minReplicas, maxReplicas] as the HPA applies it (the raw recommendation is in the JSON)
    for key, color, style, width in (("nodes", "0.55", "-", 5.0), ("replicas", "tab:blue", "-", 3.0),
                                     ("ready", "tab:green", "-", 1.6), ("desired", "tab:purple", ":", 1.6)):
        label = "nodes (ready)" if key == "nodes" else key
        ax3.step(t, [e[key] for e in r.timeline], where="post", color=color, linestyle=style, linewidth=width,
                 label=label)
    ax3.axhline(summ["max_replicas"], color="tab:red", linestyle="--", linewidth=1, label="maxReplicas")
    ax3.set_ylabel("count")
    ax3.set_xlabel("minutes")
    ax3.set_ylim(0, summ["max_replicas"] + 1)
    ax3.yaxis.set_major_locator(MaxNLocator(integer=True))
    for ax in (ax1, ax2, ax3):
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
    lb = summ["lower_bound"]
    summary = (f"first scale-up {_s(r.first_scale_up_s)}, capacity ready {_s(r.capacity_ready_s)}, over target "
               f"{r.over_target_s:g}s, {summ['unit_hours']:g} {summ['unit']}-h (lower bound {lb['unit_hours']:g})")
    ax1.set_title(summary, fontsize=10)
    fig.savefig(path, dpi=110)
    plt.close(fig)
