"""Time `gpuplatform check --manifests FILE` on one small manifest, end to end as CI runs it (a fresh process
each time, imports included), and print one JSON line:
{"file", "runs", "min_s", "median_s", "max_s", "cpu_median_s", "interpreter_median_s", "import_median_s",
"schema_import_median_s", "heavy_modules"}, then the verdicts.

Target: a wall-clock median under 0.2 s, and none of the modules the check path must not import (the components,
pulumi_kubernetes, pydantic, and the Pulumi SDK: pulumi, pulumi_policy, gRPC, protobuf). ``median_s`` is what a
user waits for; beside it, ``cpu_median_s`` is the child's CPU time (user + system), which a busy machine does not
inflate, ``interpreter_median_s`` a bare ``python -c pass`` (the floor no change of ours lowers),
``import_median_s`` the import of ``gpuplatform.cli`` and ``gpuplatform.check`` and ``schema_import_median_s`` that
of jsonschema and referencing, which the API-server check loads. Each process finds the bytecode of the modules
it imports cached, as every run after the first does (one untimed run writes it where Python keeps it, also when
the environment sets PYTHONDONTWRITEBYTECODE: compiling the package at every start is no cost of the check).
Fewer than 5 runs print the figures but judge no time. Exit code 1 when a target is missed.
"""
import argparse
import json
import os
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
         "gpuplatform.components.config", "pulumi", "pulumi_policy", "grpc", "google.protobuf")
TARGET_SECONDS = 0.2
MIN_RUNS = 5
PROBE = """
import sys
from gpuplatform.cli import entrypoint
try:
    entrypoint()
except SystemExit:
    pass
print("\\n".join(m for m in sys.modules), file=sys.stderr)
"""
IMPORTS = """
import time
start = time.perf_counter()
import gpuplatform.cli, gpuplatform.check
middle = time.perf_counter()
import jsonschema, referencing
print(middle - start, time.perf_counter() - middle)
"""




def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("file", nargs="?", default=str(DEFAULT_FILE))
    p.add_argument("--runs", type=int, default=11)
    args = p.parse_args()
    exe = Path(sys.executable).with_name("gpuplatform")
    cmd = [str(exe), "check", "--manifests", args.file] if exe.exists() else \
        [sys.executable, "-m", "gpuplatform", "check", "--manifests", args.file]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, check=False)  # writes the bytecode
    times, cpu, bare, imports, schema_imports = [], [], [], [], []
    for _ in range(args.runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        run = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True, check=False)
        times.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if "Traceback" in run.stderr:  # a policy result (exit 1) is fine; a crash is not a timing
            sys.stderr.write(run.stderr)
            raise SystemExit("the check crashed")
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], cwd=ROOT, env=env, check=True)
        bare.append(time.perf_counter() - start)
        probe = subprocess.run([sys.executable, "-c", IMPORTS], cwd=ROOT, env=env, capture_output=True,
                               text=True, check=True)
        ours, schema = (float(x) for x in probe.stdout.split())
        imports.append(ours)
        schema_imports.append(schema)
    probe = subprocess.run([sys.executable, "-c", PROBE, "check", "--manifests", args.file], cwd=ROOT, env=env,
                           capture_output=True, text=True, check=False)
    loaded = set(probe.stderr.split())
    heavy = sorted(m for m in HEAVY if m in loaded)
    median = round(statistics.median(times), 3)
    print(json.dumps({"file": str(Path(args.file).relative_to(ROOT)) if Path(args.file).is_relative_to(ROOT)
                      else args.file, "runs": args.runs, "min_s": round(min(times), 3), "median_s": median,
                      "max_s": round(max(times), 3), "cpu_median_s": round(statistics.median(cpu), 3),
                      "interpreter_median_s": round(statistics.median(bare), 3),
                      "import_median_s": round(statistics.median(imports), 3),
                      "schema_import_median_s": round(statistics.median(schema_imports), 3),
                      "heavy_modules": heavy}), flush=True)
    return exit_code([verdict(f"wall-clock median under {TARGET_SECONDS:g} s",
                              median < TARGET_SECONDS if args.runs >= MIN_RUNS else None),
                      verdict("no heavy module imported", not heavy)])


if __name__ == "__main__":
    sys.exit(main())
