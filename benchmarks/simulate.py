"""Simulate a two-hour diurnal trace for every autoscaled workload of every stack and print one JSON line per
workload: {"stack", "workload", "simulated_s", "seconds", "replicas_max", "nodes_max", "gpu_hours",
"oracle_gpu_hours"}, then one line per stack with its total. Target: under 10 s per stack on two cores.
"""
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # a checkout: gpuplatform resolves its subpackages from here

TARGET_S = 10.0


def main() -> int:
    from gpuplatform.components.stack_config import load_stack_file
    from gpuplatform.simulate.engine import simulate
    from gpuplatform.simulate.report import resolve_trace

    worst = 0.0
    for path in sorted((ROOT / "stacks").glob("Pulumi.*.yaml")):
        stack = path.stem.removeprefix("Pulumi.")
        cfg = load_stack_file(path)
        total = 0.0
        for w in (x for x in cfg.workloads if not x.fixed):
            trace = resolve_trace(cfg, w.name, "diurnal", "2h")
            start = time.perf_counter()
            r = simulate(cfg, stack, w.name, trace)
            seconds = time.perf_counter() - start
            total += seconds
            print(json.dumps({"stack": stack, "workload": w.name, "simulated_s": trace.duration_s,
                              "seconds": round(seconds, 3), "replicas_max": r.replicas_max,
                              "nodes_max": r.nodes_max, "gpu_hours": r.gpu_hours,
                              "oracle_gpu_hours": r.oracle_gpu_hours}))
        print(json.dumps({"stack": stack, "total_seconds": round(total, 3), "target_seconds": TARGET_S,
                          "within_target": total < TARGET_S}))
        worst = max(worst, total)
    return 0 if worst < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
