"""Plan a generated config with N workloads and print one JSON line per N:
{"workloads", "resources", "seconds", "cpu_seconds", "peak_rss_mb"}, then the verdict against the target.

Each N runs in a fresh process so peak RSS is that run's own. Target: N=500 under 20 s and 1 GiB on two cores,
and seconds per workload at N=500 within 1.5x of N=10's. On a shared machine the wall clock includes waiting for
a core, so the verdicts read the process's CPU time (user + system, all its threads: never less than the wall
clock of an idle machine); the wall clock is printed beside it. Exit code 1 when a measured target is missed; sizes
without N=500 (the tests' smoke run) print the figures and "not measured".
"""
import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the checkout's gpuplatform, not an installed copy

from targets import exit_code, verdict  # noqa: E402

TARGET_WORKLOADS = 500
TARGET_SECONDS = 20.0
TARGET_RSS_MB = 1024.0
BASELINE_WORKLOADS = 10
MAX_PER_WORKLOAD_RATIO = 1.5
REPLICAS_PER_WORKLOAD = 4


def generated_config(n: int) -> dict:
    """A prod-like stack: one MIG pool with just enough nodes for n Triton services of up to 4 replicas each,
    each with its own ingress hosts."""
    from gpuplatform.components.stack_config import namespace_from_stack_file

    raw = namespace_from_stack_file(ROOT / "stacks" / "Pulumi.prod.yaml")
    base = raw["workloads"][0]
    routes = base["exposure"]["ingress"]["routes"]
    raw["workloads"] = [
        dict(base, name=f"svc-{i}", autoscaling=dict(base["autoscaling"], maxReplicas=REPLICAS_PER_WORKLOAD),
             exposure=dict(base["exposure"], ingress=dict(
                 base["exposure"]["ingress"], routes=[dict(r, host=f"svc-{i}.{r['host']}") for r in routes])))
        for i in range(n)]
    raw["nodePools"][0]["maxNodes"] = -(-n * REPLICAS_PER_WORKLOAD // replicas_per_node(raw))
    return raw


def replicas_per_node(raw: dict) -> int:
    """Replicas of the generated workload one node of the pool holds: its GPU units, vCPUs and memory, as the
    capacity rule counts them (so a change to that rule or to the stack resizes the pool instead of breaking the
    benchmark)."""
    from gpuplatform.components.pools import _amount, all_pool_facts
    from gpuplatform.components.validation import load

    one = load(dict(raw, workloads=raw["workloads"][:1]))
    w = one.workloads[0]
    f = all_pool_facts(one)[w.node_pool]
    fits = [f.replicas_per_node(w.gpu)]
    # what a node offers pods once ACK's reservations are taken, as the capacity rule counts it
    if f.allocatable_cpu:
        fits.append(int(f.allocatable_cpu // _amount(w.resources.cpu)))
    if f.allocatable_memory_bytes:
        fits.append(int(f.allocatable_memory_bytes // _amount(w.resources.memory)))
    return max(min(fits), 1)


def run_once(n: int) -> dict:
    from gpuplatform.authored import raise_for_refusals
    from gpuplatform.components.validation import load
    from gpuplatform.plan import manifest_files
    from gpuplatform.synth import collector_paused, stack_config_from_namespace, synthesize

    raw = generated_config(n)
    # as `gpuplatform plan` runs: one plan per process, the collector paused for all of it
    with collector_paused():
        start, cpu_start = time.perf_counter(), time.process_time()
        cfg = load(raw)
        records = synthesize(stack_config_from_namespace(raw))
        raise_for_refusals(records, cfg)
        manifest_files(records)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"workloads": n, "resources": len(records), "seconds": round(seconds, 3), "cpu_seconds": round(cpu, 3),
            "peak_rss_mb": round(peak, 1)}


def judge(rows: dict[int, dict]) -> list[str]:
    """Verdicts on the sizes the targets name; the others are not measured."""
    big = rows.get(TARGET_WORKLOADS)
    results = [verdict(f"N={TARGET_WORKLOADS} under {TARGET_SECONDS:g} s and {TARGET_RSS_MB:g} MB peak RSS",
                       None if big is None else
                       big["cpu_seconds"] < TARGET_SECONDS and big["peak_rss_mb"] < TARGET_RSS_MB)]
    small = rows.get(BASELINE_WORKLOADS)
    ratio = None
    if big and small:
        ratio = round((big["cpu_seconds"] / big["workloads"]) / (small["cpu_seconds"] / small["workloads"]), 2)
    results.append(verdict(f"seconds per workload at N={TARGET_WORKLOADS} within {MAX_PER_WORKLOAD_RATIO}x of "
                           f"N={BASELINE_WORKLOADS}'s", None if ratio is None else ratio <= MAX_PER_WORKLOAD_RATIO,
                           ratio=ratio))
    return results


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default=f"{BASELINE_WORKLOADS},100,{TARGET_WORKLOADS}")
    p.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one is not None:
        print(json.dumps(run_once(args.one)))
        return 0
    rows = {}
    for n in (int(x) for x in args.sizes.split(",")):
        out = subprocess.run([sys.executable, __file__, "--one", str(n)], capture_output=True, text=True)
        if out.returncode:
            sys.stderr.write(out.stderr)
            raise SystemExit(f"N={n}: the plan failed (exit {out.returncode})")
        line = out.stdout.strip().splitlines()[-1]
        rows[n] = json.loads(line)
        print(line, flush=True)
    return exit_code(judge(rows))


if __name__ == "__main__":
    sys.exit(main())
