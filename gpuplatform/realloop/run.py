"""Run real-loop scenarios: the real chain (:mod:`gpuplatform.realloop.chain`), then ``simulate`` on the same
arrivals with the phases the chain had, and the agreement (:mod:`gpuplatform.realloop.agreement`)."""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Optional

from gpuplatform.realloop.agreement import compare, compare_pool, table, write
from gpuplatform.realloop.scenarios import SCENARIOS, Scenario

LEAD_S = 3.0
"""Seconds between starting the emulator process and the first warm-up arrival."""


def load_scenario(scenario: Scenario):
    from gpuplatform.components.stack_config import namespace_from_stack_file
    from gpuplatform.components.validation import load
    from gpuplatform.simulate.engine import default_phases, setup

    cfg = load(namespace_from_stack_file(scenario.config))
    s = setup(cfg, scenario.workload)
    if scenario.node_provision_s is not None:
        from dataclasses import replace

        s = replace(s, provision_s=scenario.node_provision_s)
    # the collection's alignment the plan's formula assumes: 1 s before the load changes
    collect_phase = default_phases(scenario.rates[1][0] if len(scenario.rates) > 1 else 0, s.collect_s,
                                   s.scrape_s, s.sync_s).collect
    return cfg, s, collect_phase


def run_scenario(scenario: Scenario, engines: Path, workdir: Path):
    """The agreement of a one-workload scenario; a list of agreements (one per workload) for a pool's."""
    from gpuplatform.realloop.chain import Chain

    cfg, s, collect_phase = load_scenario(scenario)
    chain = Chain(engines, workdir, cfg, scenario.workloads if scenario.others else scenario.workload, s,
                  scenario.node_provision_s)
    service = (s.plan.concurrency / s.plan.capacity_rps, s.plan.concurrency)
    try:
        if scenario.others:
            chain.up({name: scenario.for_workload(name).initial_replicas(s) for name in scenario.workloads})
            runs = chain.play({name: scenario.for_workload(name).arrivals() for name in scenario.workloads},
                              scenario.duration_s, LEAD_S + scenario.warmup_s, *service,
                              scenario.deterministic_service, collect_phase, scenario.seed, scenario.emulator)
        else:
            chain.up(scenario.initial_replicas(s))
            runs = {scenario.workload: chain.play(
                scenario.arrivals(), scenario.duration_s, LEAD_S + scenario.warmup_s, *service,
                scenario.deterministic_service, collect_phase, scenario.seed, scenario.emulator)}
    finally:
        chain.down()
    for name, run in runs.items():
        record = workdir / ("real-run.json" if not scenario.others else f"real-run-{name}.json")
        keda = {"polls": run.polls, "ingress_scrapes": run.ingress_scrapes} if run.polls else {}
        record.write_text(json.dumps({
            "prometheus": chain.prometheus_version,
            "start": run.start, "syncs": run.syncs, **keda, "scrapes": run.scrapes,
            "samples": [x.__dict__ for x in run.samples]}, indent=1))
    if scenario.others:
        return compare_pool(scenario, runs, cfg, s, collect_phase)
    return compare(scenario, runs[scenario.workload], s, collect_phase)


def load_run(workdir: Path, name: str = ""):
    """A recorded real run (``real-run.json`` and the emulator's events in ``workdir``; ``real-run-NAME.json`` and
    ``emulator-events-NAME.jsonl`` for a workload of a pool's scenario), to compare again."""
    from gpuplatform.realloop.chain import RealRun, Sample

    suffix = f"-{name}" if name else ""
    doc = json.loads((workdir / f"real-run{suffix}.json").read_text())
    events = workdir / f"emulator-events{suffix}.jsonl"
    return RealRun(doc["start"], [Sample(**s) for s in doc["samples"]], doc["syncs"], doc["scrapes"],
                   [json.loads(line) for line in events.read_text().splitlines()] if events.exists() else [],
                   polls=doc.get("polls", []), ingress_scrapes=doc.get("ingress_scrapes", []))


def recompare(scenario: Scenario, workdir: Path):
    cfg, s, collect_phase = load_scenario(scenario)
    if scenario.others:
        return compare_pool(scenario, {n: load_run(workdir, n) for n in scenario.workloads}, cfg, s, collect_phase)
    return compare(scenario, load_run(workdir), s, collect_phase)


def _recorded(directory: Path, scenario: Scenario) -> bool:
    name = "real-run.json" if not scenario.others else f"real-run-{scenario.workload}.json"
    return (directory / scenario.name / name).exists()


def _flat(results: list) -> list:
    return [a for r in results for a in (r if isinstance(r, list) else [r])]


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
        names = [n for n in args.scenarios or SCENARIOS if _recorded(Path(args.recorded), SCENARIOS[n])]
        if not names:
            print(f"--recorded: {args.recorded!r} holds no recorded run (<scenario>/real-run.json, written by an "
                  f"earlier --workdir); scenarios: {', '.join(SCENARIOS)}", file=sys.stderr)
            return 2
        return _report(_flat([recompare(SCENARIOS[n], Path(args.recorded) / n) for n in names]), args.json)
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
        print(table(_flat(results[-1:])), file=sys.stderr)
    for name in args.scenarios or list(SCENARIOS):
        if SCENARIOS[name].others:
            print(tuning_text(SCENARIOS[name], pool_tuning(SCENARIOS[name])))
    return _report(_flat(results), args.json)


def pool_tuning(scenario: Scenario):
    """``simulate --workload a,b --tune`` on a pool scenario's traces, with the harness's node provisioning: the
    cheapest setting within every workload's SLO with placeholders and without (simulate/pool.py ``tune_pool``)."""
    from gpuplatform.simulate.pool import tune_pool

    cfg, _s, _ = load_scenario(scenario)
    return tune_pool(cfg, "real-loop", {n: scenario.for_workload(n).trace() for n in scenario.workloads},
                     provision_s=scenario.node_provision_s)


def tuning_text(scenario: Scenario, tuned) -> str:
    from gpuplatform.simulate.pool import outcome_text, setting_text

    lines = [f"{scenario.name}: simulate --tune on the same traces, every setting judged by each workload's SLO and "
             "costed in the pool's node-hours:"]
    for setting, result in tuned.tried:
        lines.append(f"  {setting_text(setting)}: {outcome_text(result)}"
                     + ("  (within every SLO)" if result.within_budget else ""))
    win = tuned.placeholders_win
    lines.append("  placeholders beat minReplicas at the same SLO: "
                 + {None: "no setting keeps every SLO", True: "yes", False: "no"}[win])
    return "\n".join(lines)


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
