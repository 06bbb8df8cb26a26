"""Time `gpuplatform check --manifests FILE` on one small manifest, end to end as CI runs it (a fresh process
each time, imports included), and print one JSON line:
{"file", "runs", "min_s", "median_s", "max_s", "cpu_median_s", "heavy_modules"}, then the verdicts.

Target: median under 1 s on two cores, and none of the modules the check path must not import
(pulumi_kubernetes, pydantic, the components). On a shared machine the wall clock includes waiting for a core, so
the verdict on time reads the CPU time of the child process (user + system, which load does not inflate); the
wall-clock figures are printed beside it. Exit code 1 when a target is missed.
"""
import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from targets import exit_code, verdict

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FILE = ROOT / "tests" / "fixtures" / "corpus" / "06_triton_autoscaled.yaml"
HEAVY = ("pulumi_kubernetes", "pulumi_alicloud", "pydantic", "gpuplatform.components.platform",
         "gpuplatform.components.config")
TARGET_SECONDS = 1.0
PROBE = """
import sys
from gpuplatform.cli import main
code = main(sys.argv[1:])
print("\\n".join(m for m in sys.modules), file=sys.stderr)
"""


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("file", nargs="?", default=str(DEFAULT_FILE))
    p.add_argument("--runs", type=int, default=7)
    args = p.parse_args()
    exe = Path(sys.executable).with_name("gpuplatform")
    cmd = [str(exe), "check", "--manifests", args.file] if exe.exists() else \
        [sys.executable, "-m", "gpuplatform", "check", "--manifests", args.file]
    times, cpu = [], []
    for _ in range(args.runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        run = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             check=False)
        times.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if "Traceback" in run.stderr:  # a policy result (exit 1) is fine; a crash is not a timing
            sys.stderr.write(run.stderr)
            raise SystemExit("the check crashed")
    probe = subprocess.run([sys.executable, "-c", PROBE, "check", "--manifests", args.file], cwd=ROOT,
                           capture_output=True, text=True, check=False)
    loaded = set(probe.stderr.split())
    heavy = sorted(m for m in HEAVY if m in loaded)
    cpu_median = round(statistics.median(cpu), 3)
    print(json.dumps({"file": str(Path(args.file).relative_to(ROOT)) if Path(args.file).is_relative_to(ROOT)
                      else args.file, "runs": args.runs, "min_s": round(min(times), 3),
                      "median_s": round(statistics.median(times), 3), "max_s": round(max(times), 3),
                      "cpu_median_s": cpu_median, "heavy_modules": heavy}), flush=True)
    return exit_code([verdict(f"CPU time median under {TARGET_SECONDS:g} s", cpu_median < TARGET_SECONDS),
                      verdict("no heavy module imported", not heavy)])


if __name__ == "__main__":
    sys.exit(main())
