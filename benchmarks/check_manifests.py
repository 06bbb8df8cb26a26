"""Time `gpuplatform check --manifests FILE` on one small manifest, end to end as CI runs it (a fresh process
each time, imports included), and print one JSON line:
{"file", "runs", "min_s", "median_s", "max_s", "cpu_median_s", "heavy_modules"}.

Target: median under 1 s on two cores. On a shared machine the wall clock includes waiting for a core, so the
CPU time of the child process (user + system, which load does not inflate) is printed too. "heavy_modules" lists modules the check path must not import
(pulumi_kubernetes, pydantic, the components): any entry there is a regression.
"""
import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FILE = ROOT / "tests" / "fixtures" / "corpus" / "06_triton_autoscaled.yaml"
HEAVY = ("pulumi_kubernetes", "pulumi_alicloud", "pydantic", "gpuplatform.components.platform",
         "gpuplatform.components.config")
PROBE = """
import sys
from gpuplatform.cli import main
code = main(sys.argv[1:])
print("\\n".join(m for m in sys.modules), file=sys.stderr)
"""


def main() -> None:
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
        subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    probe = subprocess.run([sys.executable, "-c", PROBE, "check", "--manifests", args.file], cwd=ROOT,
                           capture_output=True, text=True, check=False)
    loaded = set(probe.stderr.split())
    heavy = sorted(m for m in HEAVY if m in loaded)
    print(json.dumps({"file": str(Path(args.file).relative_to(ROOT)) if Path(args.file).is_relative_to(ROOT)
                      else args.file, "runs": args.runs, "min_s": round(min(times), 3),
                      "median_s": round(statistics.median(times), 3), "max_s": round(max(times), 3),
                      "cpu_median_s": round(statistics.median(cpu), 3), "heavy_modules": heavy}))


if __name__ == "__main__":
    main()
