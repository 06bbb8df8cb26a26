"""``gpuplatform simulate``: resolve the trace, run, and print a table or JSON; optionally plot a PNG."""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import TextIO

from gpuplatform.components.config import PlatformConfig, duration_seconds
from gpuplatform.components.errors import ConfigError
from gpuplatform.simulate.engine import Result, find_workload, progress_bar, service_plan, simulate
from gpuplatform.simulate.traces import SHAPES, ArgumentIssue, Trace, built_in, from_csv


def resolve_trace(cfg: PlatformConfig, workload: str, trace: str, duration: str | None) -> Trace:
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
        return built_in(trace, plan.rps_at_target * max(a.min_replicas, 1), plan.rps_at_target * a.max_replicas,
                        seconds)
    if not trace.endswith(".csv") and not Path(trace).exists():
        raise ConfigError([ArgumentIssue("--trace", f"{trace!r} is neither a CSV file nor a built-in shape; "
                                                  f"shapes: {', '.join(SHAPES)}")])
    return from_csv(trace, seconds)


def run(cfg: PlatformConfig, stack: str, workload: str, trace: str, duration: str | None, fmt: str,
        plot: str | None, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    tr = resolve_trace(cfg, workload, trace, duration)
    result = simulate(cfg, stack, workload, tr, progress=progress_bar())
    if plot:
        write_plot(result, plot)
    if fmt == "json":
        json.dump(result.to_json(), out, indent=1)
        out.write("\n")
    else:
        out.write(table_text(result))
        if plot:
            out.write(f"\nWrote {plot}\n")
    return 0


def _s(value) -> str:
    return "never" if value is None else f"{value:g}s"


def table_text(r: Result, every_s: int = 60) -> str:
    lines = [f"Stack {r.stack}, workload {r.workload} ({r.autoscaler} on {r.metric} = {r.api_name}, target "
             f"{r.target:g} {r.unit}), trace {r.trace}",
             f"Adapter query: {r.query}",
             f"Service model: {r.plan.rps_at_target:.4g} req/s per ready replica at target, saturates at "
             f"{r.plan.capacity_rps:.4g}; image pull {r.plan.image_pull_s}s, model load {r.plan.model_load_s}s",
             "",
             f"  load increase -> first scale-up decision  {_s(r.first_scale_up_s)}",
             f"  load increase -> ready capacity covers it {_s(r.capacity_ready_s)}",
             f"  metric above target                       {r.over_target_s:g}s",
             f"  GPU-hours used / clairvoyant lower bound  {r.gpu_hours:g} / {r.oracle_gpu_hours:g}",
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


def write_plot(r: Result, path: str) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        raise ConfigError([ArgumentIssue("--plot", PLOT_HINT)]) from None
    t = [e["t"] / 60 for e in r.timeline]
    fig, (ax1, ax2, ax3) = plt.subplots(3, 1, figsize=(12, 8.5), sharex=True, constrained_layout=True)
    fig.suptitle(f"{r.stack} / {r.workload}: {r.trace} trace, {r.autoscaler} on {r.api_name}", fontsize=13)
    ax1.plot(t, [e["demand"] for e in r.timeline], color="tab:blue", label="demand (req/s)")
    ax1.step(t, [e["ready"] * r.plan.rps_at_target for e in r.timeline], where="post", color="tab:green",
             label="ready replicas x req/s at target")
    ax1.set_ylabel("requests / s")
    metric = [math.nan if e["metric"] is None else e["metric"] for e in r.timeline]
    ax2.step(t, metric, where="post", color="tab:orange", label=f"metric the HPA read ({r.unit})")
    ax2.axhline(r.target, color="tab:red", linestyle="--", label=f"target {r.target:g} {r.unit}")
    ax2.set_ylabel(f"metric ({r.unit})")
    # drawn widest first, so lines that coincide (replicas = ready in steady state) stay visible
    for key, color, style, width in (("nodes", "0.55", "-", 5.0), ("replicas", "tab:blue", "-", 3.0),
                                     ("ready", "tab:green", "-", 1.6), ("desired", "tab:purple", ":", 1.6)):
        label = "nodes (ready)" if key == "nodes" else key
        ax3.step(t, [e[key] for e in r.timeline], where="post", color=color, linestyle=style, linewidth=width,
                 label=label)
    ax3.set_ylabel("count")
    ax3.set_xlabel("minutes")
    ax3.yaxis.set_major_locator(MaxNLocator(integer=True))
    for ax in (ax1, ax2, ax3):
        ax.grid(True, alpha=0.3)
        ax.set_ylim(bottom=0)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
    summary = (f"first scale-up {_s(r.first_scale_up_s)}, capacity ready {_s(r.capacity_ready_s)}, "
               f"above target {r.over_target_s:g}s, GPU-h {r.gpu_hours:g} (lower bound {r.oracle_gpu_hours:g})")
    ax1.set_title(summary, fontsize=10)
    fig.savefig(path, dpi=110)
    plt.close(fig)
