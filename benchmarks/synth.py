"""Plan a generated config with N workloads and print one JSON line per N:
{"workloads", "resources", "seconds", "peak_rss_mb"}.

Each N runs in a fresh process so peak RSS is that run's own. Targets: N=500 under 15 s and 1 GiB on two cores,
and seconds per workload at N=500 within 1.5x of N=10's.
"""
import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # a checkout: gpuplatform resolves its subpackages from here


def generated_config(n: int) -> dict:
    """A prod-like stack: one MIG pool large enough for n Triton services of up to 4 replicas each."""
    from gpuplatform.components.stack_config import namespace_from_stack_file

    raw = namespace_from_stack_file(ROOT / "stacks" / "Pulumi.prod.yaml")
    base = raw["workloads"][0]
    nodes = -(-n * 4 // 56)
    raw["nodePools"][0].update({"maxNodes": max(nodes, 1)})
    ingress = base["exposure"]["ingress"]
    raw["workloads"] = [dict(base, name=f"svc-{i}", autoscaling=dict(base["autoscaling"], maxReplicas=4),
                             exposure=dict(base["exposure"], ingress=dict(ingress, host=f"svc-{i}.{ingress['host']}")))
                        for i in range(n)]
    return raw


def run_once(n: int) -> dict:
    from gpuplatform.components.validation import load
    from gpuplatform.plan import manifest_files
    from gpuplatform.synth import collector_paused, stack_config_from_namespace, synthesize

    raw = generated_config(n)
    # as `gpuplatform plan` runs: one plan per process, the collector paused for all of it
    with collector_paused():
        start = time.perf_counter()
        load(raw)
        records = synthesize(stack_config_from_namespace(raw))
        manifest_files(records)
        seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"workloads": n, "resources": len(records), "seconds": round(seconds, 3), "peak_rss_mb": round(peak, 1)}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="10,100,500")
    p.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one is not None:
        print(json.dumps(run_once(args.one)))
        return
    for n in (int(x) for x in args.sizes.split(",")):
        out = subprocess.run([sys.executable, __file__, "--one", str(n)], capture_output=True, text=True, check=True)
        print(out.stdout.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
