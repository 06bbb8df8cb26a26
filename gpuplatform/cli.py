"""``gpuplatform``: offline plan, config schema, policy checks, autoscaling simulation and post-deploy verification."""
import argparse
import gc
import json
import sys
from pathlib import Path
from typing import Optional

from gpuplatform.components.errors import ConfigError, ConfigIssue

STACKS_DIR = Path(__file__).resolve().parent.parent / "stacks"
DEFAULT_STACK = "dev"
EXIT_CONFIG = 2


def stack_file(args) -> tuple[Path, str]:
    if args.config:
        path = Path(args.config)
        return path, path.stem.removeprefix("Pulumi.")
    stack = args.stack or DEFAULT_STACK
    return STACKS_DIR / f"Pulumi.{stack}.yaml", stack


def _add_source(p: argparse.ArgumentParser) -> None:
    group = p.add_mutually_exclusive_group()
    group.add_argument("--stack", help=f"stack name: stacks/Pulumi.<NAME>.yaml (default {DEFAULT_STACK})")
    group.add_argument("--config", help="any file in the stack-file format")


def _load_raw(args) -> tuple[dict, str]:
    from gpuplatform.components.stack_config import namespace_from_stack_file

    path, stack = stack_file(args)
    if not path.exists():
        known = sorted(p.stem.removeprefix("Pulumi.") for p in STACKS_DIR.glob("Pulumi.*.yaml"))
        raise ConfigError([ConfigIssue("(stack)", f"{str(path)!r} does not exist; stacks: {', '.join(known)}")])
    return namespace_from_stack_file(path), stack


def cmd_plan(args) -> int:
    if args.project:
        from gpuplatform.project_plan import run_project_plan

        return run_project_plan(args.project, args.stack or DEFAULT_STACK, args.out)
    from gpuplatform.plan import run_plan

    raw, stack = _load_raw(args)
    return run_plan(raw, stack, args.out, args.format)


def cmd_schema(args) -> int:
    from gpuplatform.schema import stack_file_schema

    text = json.dumps(stack_file_schema(), indent=2, sort_keys=True) + "\n"
    if args.out:
        Path(args.out).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


def cmd_check(args) -> int:
    from gpuplatform import check

    # the same format as `pulumi preview --policy-pack-config`; the environment and exposure settings of a stack
    # are read from its GpuPlatform component, so stacks need none
    policy_config = json.loads(Path(args.policy_config).read_text()) if args.policy_config else None
    if args.kube_version:
        policy_config = check.with_kubernetes_version(policy_config, args.kube_version)
    if args.manifests:
        resources = check.load_manifests(args.manifests)
    else:
        from gpuplatform.components.validation import load
        from gpuplatform.synth import stack_config_from_namespace, synthesize

        raw, stack = _load_raw(args)
        load(raw)
        resources = synthesize(stack_config_from_namespace(raw), stack=stack)
    violations = check.run_policies(resources, policy_config)
    sys.stdout.write(check.format_json(violations) if args.format == "json" else check.format_table(violations))
    sys.stdout.write("\n")
    return check.exit_code(violations)


def cmd_verify(args) -> int:
    from gpuplatform.components.validation import load
    from gpuplatform.verify import verify_main

    raw, _stack = _load_raw(args)
    return verify_main(load(raw), args.kubeconfig, args.context, args.format, args.wait)


def cmd_simulate(args) -> int:
    from gpuplatform.components.validation import load
    from gpuplatform.simulate.report import run

    raw, stack = _load_raw(args)
    return run(load(raw), stack, args.workload, args.trace, args.duration, args.format, args.plot)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gpuplatform", description="GPU inference platform on Kubernetes / ACK")
    sub = p.add_subparsers(dest="command", required=True)
    plan = sub.add_parser("plan", help="synthesize a stack offline (no cloud, no Pulumi CLI)")
    _add_source(plan)
    plan.add_argument("--project", metavar="DIR", help="plan your own Pulumi project (DIR/Pulumi.yaml) that reuses "
                      "the components, with the config of DIR/Pulumi.<--stack>.yaml")
    plan.add_argument("--out", help="write DIR/plan.json and DIR/manifests/")
    plan.add_argument("--format", choices=["table", "json"], default="table")
    plan.set_defaults(func=cmd_plan)
    schema = sub.add_parser("schema", help="JSON Schema of the stack file, for editors")
    schema.add_argument("--out", help="write to FILE instead of stdout")
    schema.set_defaults(func=cmd_schema)
    check = sub.add_parser("check", help="run the policy pack offline on a stack or on plain manifests")
    _add_source(check)
    check.add_argument("--manifests", nargs="+", metavar="PATH", help="YAML files or directories to check")
    check.add_argument("--policy-config", metavar="FILE", help="policy config JSON (as --policy-pack-config)")
    check.add_argument("--format", choices=["table", "json"], default="table")
    check.add_argument("--kube-version", metavar="MAJOR.MINOR", help="target cluster version for the API-version "
                       "policies (default: the stack's cluster version; plain YAML: any removed API is reported)")
    check.set_defaults(func=cmd_check)
    verify = sub.add_parser("verify", help="check a live cluster against what the stack declares")
    _add_source(verify)
    verify.add_argument("--kubeconfig", help="kubeconfig path (default: $KUBECONFIG or ~/.kube/config)")
    verify.add_argument("--context", help="kubeconfig context (default: current)")
    verify.add_argument("--format", choices=["table", "json"], default="table")
    verify.add_argument("--wait", type=int, default=0, metavar="SECONDS", help="poll until all checks pass")
    verify.set_defaults(func=cmd_verify)
    sim = sub.add_parser("simulate", help="replay a load trace through the metric pipeline, the HPA and GPU capacity")
    _add_source(sim)
    sim.add_argument("--workload", required=True, metavar="NAME", help="an autoscaled workload of the stack")
    sim.add_argument("--trace", required=True, metavar="FILE.csv|step|spike|ramp|diurnal",
                     help="CSV of seconds,requests_per_second, or a built-in shape")
    sim.add_argument("--duration", metavar="DURATION", help="e.g. 2h, 30m (default: per shape, or the CSV's end)")
    sim.add_argument("--format", choices=["table", "json"], default="table")
    sim.add_argument("--plot", metavar="OUT.png", help="write demand, metric, replicas and nodes over time")
    sim.set_defaults(func=cmd_simulate)
    return p


def main(argv: Optional[list[str]] = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except ConfigError as exc:
        sys.stderr.write(exc.render() + "\n")
        return EXIT_CONFIG


ONE_SHOT_COMMANDS = ("plan", "check")


def entrypoint() -> None:
    argv = sys.argv[1:]
    if argv[:1] and argv[0] in ONE_SHOT_COMMANDS:
        from gpuplatform.synth import collector_paused

        # one synthesis and the process ends: keep the collector paused throughout (see
        # gpuplatform.synth.collector_paused) and freeze what is left, so that exiting does not scan a million
        # objects the operating system reclaims anyway
        with collector_paused():
            code = main(argv)
            gc.freeze()
    else:
        code = main(argv)
    sys.exit(code)


__all__ = ["main", "entrypoint"]
