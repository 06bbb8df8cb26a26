"""``gpuplatform``: offline plan, config schema, policy checks, autoscaling simulation and post-deploy verification."""
import argparse
import gc
import json
import sys
from pathlib import Path
from typing import Optional

STACKS_DIR = Path(__file__).resolve().parent.parent / "stacks"
DEFAULT_STACK = "dev"
EXIT_CONFIG = 2


class UsageError(Exception):
    """A problem with the command line itself (a flag, or a file a flag names), not with a stack's settings."""

    def __init__(self, flag: str, message: str):
        self.flag, self.message = flag, message
        super().__init__(self.render())

    def render(self) -> str:
        return f"invalid command line: {self.flag}: {self.message}"


def stack_file(args) -> tuple[Path, str]:
    if args.config:
        path = Path(args.config)
        return path, path.stem.removeprefix("Pulumi.")
    stack = args.stack or DEFAULT_STACK
    return STACKS_DIR / f"Pulumi.{stack}.yaml", stack


def _add_source(p: argparse.ArgumentParser) -> None:
    p.add_argument("--stack", help=f"stack name: stacks/Pulumi.<NAME>.yaml, or with --project the project's "
                   f"Pulumi.<NAME>.yaml (default {DEFAULT_STACK})")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--config", help="any file in the stack-file format")
    group.add_argument("--project", metavar="DIR", help="your own Pulumi project (DIR/Pulumi.yaml) that composes "
                       "the components, with the config of its Pulumi.<--stack>.yaml")


def _project_config(args):
    """The composed config of a consumer project's one cluster (simulate, verify)."""
    from gpuplatform.project_plan import one_view, synthesize_project

    _name, _records, views = synthesize_project(args.project, args.stack or DEFAULT_STACK)
    return one_view(views, args.project)


def _load_raw(args) -> tuple[dict, str]:
    from gpuplatform.components.stack_config import namespace_from_stack_file

    path, stack = stack_file(args)
    if not path.exists():
        if args.config:
            raise UsageError("--config", f"{str(path)!r} does not exist; allowed: a stack file (Pulumi.<stack>.yaml)")
        known = sorted(p.stem.removeprefix("Pulumi.") for p in STACKS_DIR.glob("Pulumi.*.yaml"))
        if known:
            raise UsageError("--stack", f"{stack!r}: {str(path)!r} does not exist; stacks: {', '.join(known)}")
        # an installed package has no stacks/ of its own: only a checkout of the repository does
        raise UsageError("--stack", f"{stack!r}: no stack files here ({str(STACKS_DIR)!r} does not exist or holds "
                         "no Pulumi.<stack>.yaml: --stack names the stacks of a gpu-platform checkout); allowed: "
                         "--config FILE for a stack file, or --project DIR with --stack for your own Pulumi project")
    return namespace_from_stack_file(path), stack


def cmd_plan(args) -> int:
    if args.project:
        from gpuplatform.project_plan import run_project_plan

        return run_project_plan(args.project, args.stack or DEFAULT_STACK, args.out, sweep=args.sweep)
    if args.config and args.stack:
        raise UsageError("--stack", "given with --config, which names the stack file itself; allowed: one of them")
    from gpuplatform.plan import run_plan

    from gpuplatform.components.stack_config import provider_settings_from_stack_file

    raw, stack = _load_raw(args)
    return run_plan(raw, stack, args.out, args.format,
                    provider_settings=provider_settings_from_stack_file(stack_file(args)[0]), sweep=args.sweep)


def cmd_schema(args) -> int:
    from gpuplatform.schema import stack_file_schema

    text = json.dumps(stack_file_schema(), indent=2, sort_keys=True) + "\n"
    if args.out:
        Path(args.out).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


def cmd_check(args) -> int:
    """``check``, with its report written to ``--output`` whatever the exit code: a CI step that uploads it ``if:
    always()`` finds a complete file also when the check fails for a config error (a result at the stack file), a
    bad flag or unreadable input (tool notifications)."""
    try:
        return _check(args)
    except Exception as exc:
        if args.output:
            _write_failed_report(args, exc)
        raise


def _write_failed_report(args, exc: Exception) -> None:
    from gpuplatform import check

    violations, notes = [], []
    errors = sys.modules.get("gpuplatform.components.errors")
    if errors is not None and isinstance(exc, errors.ConfigError):
        from gpuplatform.components.config import PROJECT

        where = str(Path(args.project) / "__main__.py") if args.project else str(stack_file(args)[0])
        violations = check.config_violations([i for i in exc.issues if not i.of_command_line], where, PROJECT)
        notes = [check.InputError("", None, str(i)) for i in exc.issues if i.of_command_line]
        if violations:
            notes.append(check.InputError(where, None, f"no policy ran: the configuration has {len(violations)} "
                                                       f"problem(s), reported as {check.CONFIG_RULE_ID} results"))
    elif isinstance(exc, UsageError):
        notes = [check.InputError("", None, exc.render())]
    else:
        notes = [check.InputError("", None, f"internal error: {type(exc).__name__}: {exc}")]
    try:
        _write_report(args, violations, notes)
    except UsageError:
        pass  # the error being raised is the one to report


def _write_report(args, violations, errors, locations=None, default_location=None, checked=None) -> None:
    """The report in ``--format``, to ``--output`` or stdout; ``checked`` is None when the policies did not run."""
    from gpuplatform import check

    if args.format == "json":
        text = check.format_json(violations)
    elif args.format == "sarif":
        text = check.format_sarif(violations, locations, default_location, errors)
    elif checked is None:
        # not "No policy violations.": none ran; the file says why, as stderr does
        text = "\n".join(([check.format_table(violations)] if violations else [])
                         + [f"error: {e.render() if e.path else e.message}" for e in errors])
    else:
        text = check.format_table(violations, checked)
    if not args.output:
        sys.stdout.write(text + "\n")
        return
    try:
        Path(args.output).write_text(text + "\n")
    except OSError as exc:
        raise UsageError("--output", f"{args.output!r}: {exc.strerror or exc}") from None


def _check(args) -> int:
    from gpuplatform import check

    # the same format as `pulumi preview --policy-pack-config`; the environment and exposure settings of a stack
    # are read from its GpuPlatform component, so stacks need none
    policy_config = _policy_config(args.policy_config)
    if args.kube_version:
        policy_config = check.with_kubernetes_version(policy_config, args.kube_version)
    if args.strict:
        policy_config = check.with_strict(policy_config)
    errors: list = []
    locations: dict = {}
    default_location = None
    read = None
    if args.manifests:
        read = check.read_manifests(args.manifests)
        resources, errors, locations = read.resources, read.errors, read.locations
        if not resources and not errors:
            nothing = (f"nothing to check: no Kubernetes objects (documents with apiVersion and kind) in "
                       f"{', '.join(args.manifests)}" + ("" if read.files else " (no .yaml, .yml or .json files)"))
            if args.output:
                _write_report(args, [], [check.InputError("", None, nothing)])
            sys.stderr.write(nothing + "\n")
            return EXIT_CONFIG
    elif args.project:
        from gpuplatform.project_plan import synthesize_project

        _name, resources, _views = synthesize_project(args.project, args.stack or DEFAULT_STACK)
        default_location = (str(Path(args.project) / "__main__.py"), None)
    else:
        from gpuplatform.authored import raise_for_refusals
        from gpuplatform.components.validation import load
        from gpuplatform.synth import stack_config_from_namespace, synthesize

        from gpuplatform.components.stack_config import provider_settings_from_stack_file

        raw, stack = _load_raw(args)
        settings = provider_settings_from_stack_file(stack_file(args)[0])
        cfg = load(raw, settings)
        resources = synthesize({**stack_config_from_namespace(raw), **settings}, stack=stack)
        raise_for_refusals(resources, cfg)
        default_location = (str(stack_file(args)[0]), None)
        locations = check.stack_file_locations(default_location[0], raw, resources)
        rendered = _render_charts(args, cfg, resources, locations)
        if rendered is not None:
            resources, read = rendered
    violations = check.located(check.run_policies(resources, policy_config), locations, default_location,
                               read.nodes if read is not None else None)
    if args.manifests or read is not None:
        # the API server's own judgement comes first: a policy reading a misspelt field sees nothing to judge
        violations = check.api_server_violations(read, args.kube_version or (None if args.manifests else
                                                                             cfg.cluster.kubernetes_version),
                                                 check.api_server_level(policy_config)) + violations
    if args.manifests and check.api_server_level(policy_config) != "disabled":
        from gpuplatform import apiserver

        if apiserver.schema_version(None) is None:
            sys.stderr.write("note: the API server's schema checks did not run: kubernetes-validate, which bundles "
                             "its schemas, is not installed (pip install 'gpu-platform[stack]'); the policies ran\n")
    files = len(read.files) if args.manifests else 1
    # a stack's or program's objects went through the API server's checks before the policies (a refusal stops
    # the run); plain manifests and rendered charts, unless the policy config disables them
    api_server = not args.manifests or check.api_server_level(policy_config) != "disabled"
    checked = check.Checked(check.active_policies(policy_config), len(resources), files, api_server)
    _write_report(args, violations, errors, locations, default_location, checked)
    for e in errors:
        sys.stderr.write(f"error: {e.render()}\n")
    if errors:
        sys.stderr.write(f"{len(errors)} input error(s); the other files were checked\n")
        return EXIT_CONFIG
    return check.exit_code(violations)


def _render_charts(args, cfg, resources: list, locations: dict):
    """``check --stack`` with chart packages: (resources with each rendered release replaced by its objects, those
    objects as read manifests), and one line on stderr naming the releases not rendered; None without packages."""
    from gpuplatform import chart_render
    from gpuplatform.components.validation import kubernetes_version

    charts = chart_render.charts_for(args.charts)
    if charts.path is None and not args.charts:
        releases = [r.inputs.get("name", r.name) for r in resources if r.type == chart_render.RELEASE_TYPE]
        if releases:
            sys.stderr.write(f"note: not rendered, checked as release objects only: {', '.join(releases)} "
                             f"({charts.reason})\n")
        return None
    if charts.path is None:
        raise UsageError("--charts", f"{args.charts!r} is not a directory; allowed: a directory of chart packages "
                         "(<chart>-<version>.tgz, as `helm pull` saves them)")
    resources, read, note = chart_render.with_rendered(resources, charts, kubernetes_version(cfg))
    if note:
        sys.stderr.write(note + "\n")
    locations.update(read.locations)
    return resources, read


def _policy_config(path: Optional[str]) -> Optional[dict]:
    if not path:
        return None
    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        raise UsageError("--policy-config", f"{path!r}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise UsageError("--policy-config", f"{path!r} line {exc.lineno}: {exc.msg}") from None
    if not isinstance(data, dict):
        raise UsageError("--policy-config", f"{path!r} must hold a JSON object")
    return data


def cmd_policy_pack(args) -> int:
    from gpuplatform.policy_pack import PackInitError, main as init_main

    try:
        return init_main(args.dir, args.force, args.source, args.index_url)
    except PackInitError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return EXIT_CONFIG


def cmd_verify(args) -> int:
    from gpuplatform.components.validation import load
    from gpuplatform.verify import verify_main

    if getattr(args, "preflight", False):
        from gpuplatform.verify.preflight import preflight_main

        cfg = _project_config(args) if args.project else load(_load_raw(args)[0])
        return preflight_main(cfg, args.format)
    if args.project:
        return verify_main(_project_config(args), args.kubeconfig, args.context, args.format, args.wait)
    raw, _stack = _load_raw(args)
    return verify_main(load(raw), args.kubeconfig, args.context, args.format, args.wait)


def cmd_simulate(args) -> int:
    from gpuplatform.components.validation import load
    from gpuplatform.simulate.report import run

    options = {"sweep": args.sweep, "tune": args.tune, "budget": args.budget, "slo": args.slo,
               "compare_pools": args.compare_pools, "no_drain": args.no_drain}
    if args.project:
        return run(_project_config(args), args.stack or DEFAULT_STACK, args.workload, args.trace, args.duration,
                   args.format, args.plot, **options)
    raw, stack = _load_raw(args)
    return run(load(raw), stack, args.workload, args.trace, args.duration, args.format, args.plot, **options)


def cmd_rehearse(args) -> int:
    from gpuplatform.components.validation import load
    from gpuplatform.rehearse.engines import EnginesMissing
    from gpuplatform.rehearse.run import rehearse

    if args.config and args.stack:
        raise UsageError("--stack", "given with --config, which names the stack file itself; allowed: one of them")
    raw, stack = _load_raw(args)
    cfg = load(raw)  # a stack the package refuses is said before any engine starts
    try:
        report = rehearse(raw, stack, cfg, keep=Path(args.keep) if args.keep else None)
    except EnginesMissing as exc:
        raise UsageError("rehearse", str(exc)) from None
    print(report.as_json() if args.format == "json" else report.text())
    return 0 if report.ok else 1


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gpuplatform", description="GPU inference platform on Kubernetes / ACK")
    sub = p.add_subparsers(dest="command", required=True)
    plan = sub.add_parser("plan", help="synthesize a stack offline (no cloud, no Pulumi CLI)")
    _add_source(plan)
    plan.add_argument("--out", help="write DIR/plan.json and DIR/manifests/")
    plan.add_argument("--format", choices=["table", "json"], default="table")
    plan.add_argument("--no-sweep", dest="sweep", action="store_false",
                      help="skip the first scale-up sweep over every loop alignment (seconds per GPU-metric workload "
                           "on a stack's first plan, e.g. in a CI job that only renders); the simulated step stays")
    plan.set_defaults(func=cmd_plan)
    schema = sub.add_parser("schema", help="JSON Schema of the stack file, for editors")
    schema.add_argument("--out", help="write to FILE instead of stdout")
    schema.set_defaults(func=cmd_schema)
    check = sub.add_parser("check", help="run the policy pack offline on a stack or on plain manifests")
    _add_source(check)
    check.add_argument("--manifests", nargs="+", metavar="PATH",
                       help="YAML/JSON files or directories to check ('-' reads standard input)")
    check.add_argument("--policy-config", metavar="FILE", help="policy config JSON (as --policy-pack-config)")
    check.add_argument("--strict", action="store_true",
                       help="raise the hardening policies (Pod Security, probes, resources, ...) to mandatory")
    check.add_argument("--format", choices=["table", "json", "sarif"], default="table",
                       help="sarif: SARIF 2.1.0 for code scanning")
    check.add_argument("--output", metavar="FILE", help="write the report to FILE instead of stdout")
    check.add_argument("--charts", metavar="DIR", help="with --stack: render each Helm release from its pinned "
                       "package in DIR (<chart>-<version>.tgz) and check what it installs (default: "
                       "$GPUPLATFORM_CHARTS_DIR; needs gpu-platform[charts])")
    check.add_argument("--kube-version", metavar="MAJOR.MINOR", help="target cluster version for the API-version "
                       "policies (default: the stack's cluster version; plain YAML: any removed API is reported)")
    check.set_defaults(func=cmd_check)
    pack = sub.add_parser("policy-pack", help="the policy pack for your own project's Pulumi CLI")
    pack_sub = pack.add_subparsers(dest="pack_command", required=True)
    init = pack_sub.add_parser("init", help="write a ready pack folder (PulumiPolicy.yaml, requirements pinned to "
                               "where this release comes from, strict.json) to DIR")
    init.add_argument("dir", metavar="DIR")
    init.add_argument("--force", action="store_true", help="overwrite files DIR already has with other content")
    origin = init.add_mutually_exclusive_group()
    origin.add_argument("--source", metavar="FILE|URL", help="where CI installs gpu-platform from: a wheel or sdist "
                        "(copied into DIR), https://...#sha256=HASH, or git+https://...@COMMIT (default: where this "
                        "environment installed it from)")
    origin.add_argument("--index-url", metavar="URL", help="the package index your organisation publishes "
                        "gpu-platform to; every requirement of the pack then comes from it")
    init.set_defaults(func=cmd_policy_pack)
    verify = sub.add_parser("verify", help="check a live cluster against what the stack declares")
    _add_source(verify)
    verify.add_argument("--kubeconfig", help="kubeconfig path (default: $KUBECONFIG or ~/.kube/config)")
    verify.add_argument("--context", help="kubeconfig context (default: current)")
    verify.add_argument("--format", choices=["table", "json"], default="table")
    verify.add_argument("--wait", type=int, default=0, metavar="SECONDS", help="poll until all checks pass")
    verify.add_argument("--preflight", action="store_true",
                        help="before the first pulumi up: check the Alibaba Cloud account (service roles, vCPU "
                             "quota, instance stock in the stack's zones) instead of a cluster")
    verify.set_defaults(func=cmd_verify)
    rehearse = sub.add_parser("rehearse", help="the stack's real `pulumi up` against a local control plane shaped "
                              "like its pools (the engines of `make engines`): applied, scheduled, second up a "
                              "no-op, destroy leaves nothing")
    rehearse.add_argument("--stack", help=f"stack name: stacks/Pulumi.<NAME>.yaml (default {DEFAULT_STACK})")
    rehearse.add_argument("--config", help="any file in the stack-file format")
    rehearse.add_argument("--format", choices=["table", "json"], default="table")
    rehearse.add_argument("--keep", metavar="DIR", help="keep the control plane's logs, the Pulumi state and the "
                          "engine's event logs in DIR")
    rehearse.set_defaults(func=cmd_rehearse, project=None)
    sim = sub.add_parser("simulate", help="replay a load trace through the metric pipeline, the HPA and GPU capacity")
    _add_source(sim)
    sim.add_argument("--workload", required=True, metavar="NAME", help="an autoscaled workload of the stack")
    sim.add_argument("--trace", required=True, metavar="FILE.csv|FILE.json|step|spike|ramp|diurnal|bursty",
                     help="CSV of seconds,requests_per_second, a Prometheus query_range JSON export, or a built-in "
                          "shape")
    sim.add_argument("--duration", metavar="DURATION", help="e.g. 2h, 30m (default: per shape, or the CSV's end)")
    sim.add_argument("--format", choices=["table", "json"], default="table")
    sim.add_argument("--plot", metavar="OUT.png", help="write demand, metric, replicas and nodes over time")
    sim.add_argument("--sweep", action="store_true",
                     help="also the first scale-up over every loop phase and step size (always with --trace step)")
    sim.add_argument("--tune", action="store_true",
                     help="search target, replica range, scale-up and scale-down rules (and KEDA activation) for the "
                          "least GPU cost that keeps the time out of the SLO within --budget on this trace, growing "
                          "the "
                          "pool if it must; prints the stack-file snippet, validated")
    sim.add_argument("--slo", metavar="VALUE", type=float,
                     help="the level (in the first metric's unit) time over target is judged against, drawn on "
                          "the plot; with --tune, also what the candidates are judged against (default: the "
                          "workload's own target)")
    sim.add_argument("--compare-pools", metavar="POOL,POOL,...|CANDIDATES.yaml",
                     help="run the workload on each candidate pool (pools of the stack, or a YAML file giving each "
                          "candidate its pool, serviceModel and gpu request) and rank them by cost per day with the "
                          "SLO met on this trace (docs/simulate.md)")
    sim.add_argument("--budget", metavar="DURATION",
                     help="with --tune: time out of the SLO allowed, in whole bad minutes, e.g. 2m (default: the "
                          "workload's error budget on the trace, what its slo.compliance allows; 0s without an slo)")
    sim.add_argument("--no-drain", action="store_true",
                     help="run the workload's pods without their drain chain (Kubernetes' 30 s grace, no preStop, no "
                          "server drain flag): the requests a scale-in then drops, to compare (docs/drain.md)")
    sim.set_defaults(func=cmd_simulate)
    return p


def main(argv: Optional[list[str]] = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except UsageError as exc:
        sys.stderr.write(exc.render() + "\n")
        return EXIT_CONFIG
    except Exception as exc:
        # the check path must not import the components (pulumi_kubernetes, pydantic: most of a second), so the
        # error class is looked up only once one is raised
        errors = sys.modules.get("gpuplatform.components.errors")
        if errors is not None and isinstance(exc, errors.ConfigError):
            sys.stderr.write(exc.render() + "\n")
            return EXIT_CONFIG
        from gpuplatform.extras import missing_extra

        missing = missing_extra(exc)
        if missing:
            sys.stderr.write(f"error: gpuplatform {args.command}: {missing}\n")
            return EXIT_CONFIG
        raise


ONE_SHOT_COMMANDS = ("plan", "check")


def entrypoint() -> None:
    argv = sys.argv[1:]
    if argv[:1] and argv[0] in ONE_SHOT_COMMANDS:
        from gpuplatform.collector import collector_paused

        # one synthesis and the process ends: keep the collector paused throughout (see
        # gpuplatform.collector.collector_paused) and freeze what is left, so that exiting does not scan a million
        # objects the operating system reclaims anyway
        with collector_paused():
            code = main(argv)
            gc.freeze()
    else:
        code = main(argv)
    sys.exit(code)


__all__ = ["main", "entrypoint"]
