"""Run real-loop scenarios: the real chain (:mod:`gpuplatform.realloop.chain`), then ``simulate`` on the same
arrivals with the phases the chain had, and the agreement (:mod:`gpuplatform.realloop.agreement`)."""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Optional

from gpuplatform.realloop.agreement import Agreement, compare, table, write
from gpuplatform.realloop.scenarios import SCENARIOS, Scenario

LEAD_S = 3.0
"""Seconds between starting the emulator process and the first warm-up arrival."""


def load_scenario(scenario: Scenario):
    from gpuplatform.components.stack_config import namespace_from_stack_file
    from gpuplatform.components.validation import load
    from gpuplatform.simulate.engine import default_phases, setup

    cfg = load(namespace_from_stack_file(scenario.config))
    s = setup(cfg, scenario.workload)
    # the collection's alignment the plan's formula assumes: 1 s before the load changes
    collect_phase = default_phases(scenario.rates[1][0] if len(scenario.rates) > 1 else 0, s.collect_s,
                                   s.scrape_s, s.sync_s).collect
    return cfg, s, collect_phase


def run_scenario(scenario: Scenario, engines: Path, workdir: Path) -> Agreement:
    from gpuplatform.realloop.chain import Chain

    cfg, s, collect_phase = load_scenario(scenario)
    chain = Chain(engines, workdir, cfg, scenario.workload, s)
    try:
        chain.up(scenario.initial_replicas(s))
        run = chain.play(scenario.arrivals(), scenario.duration_s, LEAD_S + scenario.warmup_s,
                         s.plan.concurrency / s.plan.capacity_rps, s.plan.concurrency, scenario.deterministic_service,
                         collect_phase,
                         scenario.seed, scenario.emulator)
    finally:
        chain.down()
    (workdir / "real-run.json").write_text(json.dumps({
        "start": run.start, "syncs": run.syncs, "scrapes": run.scrapes,
        "samples": [s.__dict__ for s in run.samples]}, indent=1))
    return compare(scenario, run, s, collect_phase)


def load_run(workdir: Path):
    """A recorded real run (``real-run.json`` and the emulator's events in ``workdir``), to compare again."""
    from gpuplatform.realloop.chain import RealRun, Sample

    doc = json.loads((workdir / "real-run.json").read_text())
    events = workdir / "emulator-events.jsonl"
    return RealRun(doc["start"], [Sample(**s) for s in doc["samples"]], doc["syncs"], doc["scrapes"],
                   [json.loads(line) for line in events.read_text().splitlines()] if events.exists() else [])


def recompare(scenario: Scenario, workdir: Path) -> Agreement:
    _cfg, s, collect_phase = load_scenario(scenario)
    return compare(scenario, load_run(workdir), s, collect_phase)


def main(argv: Optional[list] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpuplatform.realloop",
                                     description="Run the real autoscaling chain and simulate on the same arrivals.")
    parser.add_argument("scenarios", nargs="*", help=f"scenario names (default: all): {', '.join(SCENARIOS)}")
    parser.add_argument("--workdir", help="keep every log and record here (default: a temporary directory)")
    parser.add_argument("--json", help="write the agreement of every scenario to this file")
    parser.add_argument("--recorded", metavar="DIR",
                        help="compare the runs recorded in DIR/<scenario> (an earlier --workdir) instead of running "
                             "the chain again")
    args = parser.parse_args(argv)
    unknown = [n for n in args.scenarios if n not in SCENARIOS]
    if unknown:
        print(f"unknown scenario {', '.join(unknown)}; allowed: {', '.join(SCENARIOS)}", file=sys.stderr)
        return 2
    if args.recorded:
        names = [n for n in args.scenarios or SCENARIOS if (Path(args.recorded) / n / "real-run.json").exists()]
        if not names:
            print(f"--recorded: {args.recorded!r} holds no recorded run (<scenario>/real-run.json, written by an "
                  f"earlier --workdir); scenarios: {', '.join(SCENARIOS)}", file=sys.stderr)
            return 2
        return _report([recompare(SCENARIOS[n], Path(args.recorded) / n) for n in names], args.json)
    from gpuplatform.rehearse.engines import EnginesMissing, engines_dir

    try:
        engines = engines_dir()
    except EnginesMissing as exc:
        print(str(exc), file=sys.stderr)
        return 2
    base = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="real-loop-"))
    from gpuplatform.realloop.chain import RealLoopError
    from gpuplatform.rehearse.controlplane import ControlPlaneError

    results = []
    for name in args.scenarios or list(SCENARIOS):
        print(f"real loop: {name} (a few minutes of real time; logs in {base / name})", file=sys.stderr)
        try:
            results.append(run_scenario(SCENARIOS[name], engines, base / name))
        except (RealLoopError, ControlPlaneError) as exc:
            print(f"real loop: {name}: {exc}", file=sys.stderr)
            return 1
        print(table(results[-1:]), file=sys.stderr)
    return _report(results, args.json)


def _report(results: list, json_path: Optional[str]) -> int:
    print(table(results))
    for a in results:
        for m in a.mismatched_syncs:
            beyond = " (beyond a sync)" if m["t"] in [b["t"] for b in a.beyond_a_sync] else ""
            print(f"  {a.scenario}: at {m['t']} s the real chain had {m['real']} replicas, simulate "
                  f"{m['sim']}{beyond}")
    if json_path:
        write(results, Path(json_path))
    return 0 if all(a.agrees for a in results) else 1
