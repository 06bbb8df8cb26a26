"""Simulate a diurnal trace (two hours unless --duration) for every autoscaled workload of every stack and print
one JSON line per workload: {"stack", "workload", "simulated_s", "seconds", "replicas_max", "nodes_max",
"gpu_hours", "unit_hours", "lower_bound_unit_hours", "sweep_seconds", "sweep_runs"}, then one line per stack with its
total and its verdicts.

Targets: a two-hour trace under 10 s per stack on two cores, and the first scale-up sweep (every loop alignment
and step size, what ``plan`` prints) under 15 s per workload. Exit code 1 when a stack misses one; shorter traces
(the tests' smoke run) print the figures and "not measured", and ``--no-sweep`` leaves the sweep out.
"""
import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the checkout's gpuplatform, not an installed copy

from targets import exit_code, verdict  # noqa: E402

TARGET_S = 10.0
SWEEP_TARGET_S = 15.0
TARGET_DURATION = "2h"


def main() -> int:
    from gpuplatform.components.stack_config import load_stack_file
    from gpuplatform.simulate.engine import simulate
    from gpuplatform.simulate.report import resolve_trace
    from gpuplatform.simulate.sweep import first_scale_up_sweep

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--duration", default=TARGET_DURATION, help=f"trace length (default {TARGET_DURATION})")
    p.add_argument("--stacks", help="comma-separated stack names (default: every stacks/Pulumi.*.yaml)")
    p.add_argument("--no-sweep", action="store_true", help="leave the first scale-up sweep out")
    args = p.parse_args()
    wanted = set(args.stacks.split(",")) if args.stacks else None
    results = []
    for path in sorted((ROOT / "stacks").glob("Pulumi.*.yaml")):
        stack = path.stem.removeprefix("Pulumi.")
        if wanted is not None and stack not in wanted:
            continue
        cfg = load_stack_file(path)
        total, slowest_sweep = 0.0, 0.0
        for w in (x for x in cfg.workloads if not x.fixed):
            trace = resolve_trace(cfg, w.name, "diurnal", args.duration)
            start = time.perf_counter()
            r = simulate(cfg, stack, w.name, trace)
            seconds = time.perf_counter() - start
            total += seconds
            sweep_seconds, runs = None, None
            if not args.no_sweep:
                start = time.perf_counter()
                runs = first_scale_up_sweep(cfg, w.name).runs
                sweep_seconds = time.perf_counter() - start
                slowest_sweep = max(slowest_sweep, sweep_seconds)
            print(json.dumps({"stack": stack, "workload": w.name, "simulated_s": trace.duration_s,
                              "seconds": round(seconds, 3), "replicas_max": r.replicas_max,
                              "nodes_max": r.nodes_max, "gpu_hours": r.gpu_hours, "unit_hours": r.unit_hours,
                              "lower_bound_unit_hours": r.bound.to_json(r.setup)["unit_hours"],
                              "sweep_seconds": None if sweep_seconds is None else round(sweep_seconds, 3),
                              "sweep_runs": runs}), flush=True)
        results.append(verdict(f"{stack}: a {TARGET_DURATION} trace under {TARGET_S:g} s",
                               total < TARGET_S if args.duration == TARGET_DURATION else None,
                               stack=stack, total_seconds=round(total, 3)))
        if not args.no_sweep:
            results.append(verdict(f"{stack}: each workload's sweep under {SWEEP_TARGET_S:g} s",
                                   slowest_sweep < SWEEP_TARGET_S if args.duration == TARGET_DURATION else None,
                                   stack=stack, slowest_sweep_seconds=round(slowest_sweep, 3)))
    if wanted is not None and not results:
        raise SystemExit(f"no stack named {args.stacks}")
    return exit_code(results)


if __name__ == "__main__":
    sys.exit(main())
