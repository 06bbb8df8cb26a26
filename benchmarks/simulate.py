"""Simulate a diurnal trace (two hours unless --duration) for every autoscaled workload of every stack and print
one JSON line per workload: {"stack", "workload", "simulated_s", "seconds", "replicas_max", "nodes_max",
"gpu_hours", "oracle_gpu_hours"}, then one line per stack with its total and its verdict.

Target: a two-hour trace under 10 s per stack on two cores. Exit code 1 when a stack misses it; shorter traces
(the tests' smoke run) print the figures and "not measured".
"""
import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # a checkout: gpuplatform resolves its subpackages from here

from targets import exit_code, verdict  # noqa: E402

TARGET_S = 10.0
TARGET_DURATION = "2h"


def main() -> int:
    from gpuplatform.components.stack_config import load_stack_file
    from gpuplatform.simulate.engine import simulate
    from gpuplatform.simulate.report import resolve_trace

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--duration", default=TARGET_DURATION, help=f"trace length (default {TARGET_DURATION})")
    p.add_argument("--stacks", help="comma-separated stack names (default: every stacks/Pulumi.*.yaml)")
    args = p.parse_args()
    wanted = set(args.stacks.split(",")) if args.stacks else None
    results = []
    for path in sorted((ROOT / "stacks").glob("Pulumi.*.yaml")):
        stack = path.stem.removeprefix("Pulumi.")
        if wanted is not None and stack not in wanted:
            continue
        cfg = load_stack_file(path)
        total = 0.0
        for w in (x for x in cfg.workloads if not x.fixed):
            trace = resolve_trace(cfg, w.name, "diurnal", args.duration)
            start = time.perf_counter()
            r = simulate(cfg, stack, w.name, trace)
            seconds = time.perf_counter() - start
            total += seconds
            print(json.dumps({"stack": stack, "workload": w.name, "simulated_s": trace.duration_s,
                              "seconds": round(seconds, 3), "replicas_max": r.replicas_max,
                              "nodes_max": r.nodes_max, "gpu_hours": r.gpu_hours,
                              "oracle_gpu_hours": r.oracle_gpu_hours}), flush=True)
        results.append(verdict(f"{stack}: a {TARGET_DURATION} trace under {TARGET_S:g} s",
                               total < TARGET_S if args.duration == TARGET_DURATION else None,
                               stack=stack, total_seconds=round(total, 3)))
    if wanted is not None and not results:
        raise SystemExit(f"no stack named {args.stacks}")
    return exit_code(results)


if __name__ == "__main__":
    sys.exit(main())
