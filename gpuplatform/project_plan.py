"""``gpuplatform plan --project DIR``: plan any Pulumi Python project offline, the way ``plan --stack`` plans
ours, so a team that reuses the components can review what its own program registers without a cloud account
or the Pulumi CLI.

It follows the CLI's conventions (pulumi/pulumi docs "Project file" and "Configuration"): the project's name and
``main`` folder come from ``Pulumi.yaml``, the stack's config from ``Pulumi.<stack>.yaml`` in ``stackConfigDir``
(default the project folder), a key without a namespace belongs to the project, and the program runs with its
own folder as the working directory and first on ``sys.path``. Encrypted values become placeholders, marked
secret.
"""
import os
import runpy
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

import yaml

from gpuplatform.components.errors import CommandLineIssue, ConfigError, ConfigIssue
from gpuplatform.components.stack_config import SECRET_PLACEHOLDER, is_secure


def _read_yaml(path: Path, what: str) -> dict:
    try:
        doc = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError([CommandLineIssue("--project", f"cannot read {what} {path}: {exc}")]) from None
    if not isinstance(doc, dict):
        raise ConfigError([CommandLineIssue("--project", f"{path} is not a {what}: expected a mapping")])
    return doc


def project_config(project_dir: Path, stack: str) -> tuple[str, Path, dict[str, Any], tuple[str, ...]]:
    """(project name, program folder, config with full keys, secret keys) of a Pulumi project and stack.

    A stack the project has no ``Pulumi.<stack>.yaml`` for is refused, naming the stacks it has, when it has any:
    a misspelt ``--stack`` would otherwise run the program on no config and report every key it reads as
    missing. A project with no stack file at all runs on no config (``pulumi stack init`` writes none; the first
    ``pulumi config set`` does), and a program that stops says so (:func:`synthesize_project`)."""
    manifest = project_dir / "Pulumi.yaml"
    if not manifest.is_file():
        raise ConfigError([CommandLineIssue("--project", f"{str(project_dir)!r} has no Pulumi.yaml; allowed: the "
                                                         "folder of a Pulumi project")])
    project = _read_yaml(manifest, "project file")
    name = str(project.get("name") or project_dir.name)
    main = project_dir / str(project.get("main") or ".")
    stack_file = stack_file_of(project_dir, project, stack)
    if not stack_file.is_file():
        known = project_stacks(project_dir, project)
        if known:
            raise ConfigError([CommandLineIssue("--stack", f"{stack!r}: the stack file {str(stack_file)!r} does not "
                                                f"exist; stacks of project {name!r} (a Pulumi.<stack>.yaml each): "
                                                f"{', '.join(known)}")])
    raw = (_read_yaml(stack_file, "stack file").get("config") or {}) if stack_file.is_file() else {}
    config, secret = {}, []
    for key, value in raw.items():
        full = key if ":" in str(key) else f"{name}:{key}"
        if is_secure(value):
            value = SECRET_PLACEHOLDER
            secret.append(full)
        config[full] = value
    return name, main, config, tuple(secret)


def stack_file_of(project_dir: Path, project: dict, stack: str) -> Path:
    """``Pulumi.<stack>.yaml`` in the project's ``stackConfigDir`` (default the project folder)."""
    return project_dir / str(project.get("stackConfigDir") or ".") / f"Pulumi.{stack}.yaml"


def project_stacks(project_dir: Path, project: dict) -> list[str]:
    """The stacks a project has a stack file for."""
    folder = stack_file_of(project_dir, project, "x").parent
    return sorted(p.name[len("Pulumi."):-len(".yaml")] for p in folder.glob("Pulumi.*.yaml"))


@contextmanager
def _program_environment(main: Path):
    """The program's folder as the working directory and first on sys.path, as the language host runs it."""
    cwd, path = os.getcwd(), list(sys.path)
    os.chdir(main)
    sys.path.insert(0, str(main))
    try:
        yield
    finally:
        os.chdir(cwd)
        sys.path[:] = path


def synthesize_project(project_dir: str, stack: str):
    """Run a consumer's program offline: (project name, records, the composed configs of its clusters)."""
    import pulumi

    from gpuplatform.authored import raise_for_refusals
    from gpuplatform.components.program_views import composed_views
    from gpuplatform.synth import synthesize

    name, main, config, secret_keys = project_config(Path(project_dir).resolve(), stack)
    entry = main / "__main__.py"
    if not entry.is_file():
        raise ConfigError([CommandLineIssue("--project", f"{str(entry)!r} does not exist; a Python project's program "
                                       "is the __main__.py of its main folder")])

    def program() -> None:
        with _program_environment(main):
            runpy.run_path(str(entry), run_name="__main__")

    try:
        records = synthesize(config, program, stack=stack, project=name, secret_keys=secret_keys)
    except pulumi.RunError as exc:
        message = str(exc)
        root = Path(project_dir).resolve()
        if not stack_file_of(root, _read_yaml(root / "Pulumi.yaml", "project file"), stack).is_file():
            message += (f"\n  (project {name!r} has no stack file Pulumi.{stack}.yaml: the program ran with no "
                        "config; `pulumi config set` writes it)")
        raise ProgramError(message) from None
    raise_for_refusals(records)  # what the API server would refuse, named by the args that made it
    return name, records, composed_views()


class ProgramError(ConfigError):
    """The consumer's program stopped with ``pulumi.RunError`` (a component's args, a contract): its message as
    the Pulumi CLI would print it, without a traceback."""

    def __init__(self, message: str):
        self.message = message
        super().__init__([ConfigIssue("(program)", message)])

    def render(self) -> str:
        return self.message


def one_view(views: list, project_dir: str):
    """The composed config a per-cluster tool works on: the program's only GpuCluster."""
    if len(views) == 1:
        return views[0]
    what = "no GpuCluster" if not views else f"{len(views)} GpuClusters"
    raise ConfigError([CommandLineIssue("--project", f"{project_dir}: the program builds {what}; allowed: exactly one "
                                   "(simulate and verify work on one cluster)")])


def unmanaged_namespaces(records, views) -> list[str]:
    """Namespaces services live in that the program does not create: they must exist before ``pulumi up``."""
    created = {(r.inputs.get("metadata") or {}).get("name") for r in records
               if r.type == "kubernetes:core/v1:Namespace"}
    used = {cfg.workload_namespace(w) for cfg in views for w in cfg.workloads}
    return sorted(used - created)


def run_project_plan(project_dir: str, stack: str, out_dir: str | None, out: TextIO | None = None,
                     sweep: bool = True) -> int:
    from gpuplatform.plan import (LATENCY_TITLE, SLO_TITLE, STARTUP_TITLE, capacity_rows, capacity_text,
                                  latency_rows, latency_text, pool_rows, pools_text, slo_rows, slo_text,
                                  startup_rows, startup_text, tree_text, write_records)
    from gpuplatform.synth import OFFLINE_SECRETS

    out = out or sys.stdout
    name, records, views = synthesize_project(project_dir, stack)
    pools = [row for cfg in views for row in pool_rows(cfg)]
    capacity = [row for cfg in views for row in capacity_rows(cfg)]
    startup = [row for cfg in views for row in startup_rows(cfg)]
    latency = [row for cfg in views for row in latency_rows(cfg, sweep)]
    if out_dir:
        write_records(Path(out_dir), stack, records, {SECRET_PLACEHOLDER} | OFFLINE_SECRETS, pools=pools,
                      capacity=capacity, startup=startup, metricLatency=latency)
    out.write(f"Project {name}, stack {stack}: {len(records)} resources\n\n{tree_text(records)}\n")
    if pools:
        out.write(f"\nNode pools\n{pools_text(pools)}\n")
    if capacity:
        out.write(f"\nGPU capacity\n{capacity_text(capacity)}\n")
    if startup:
        out.write(f"\n{STARTUP_TITLE}\n{startup_text(startup)}\n")
    if capacity:
        out.write(f"\n{LATENCY_TITLE}\n{latency_text(latency)}\n")
    slos = [row for cfg in views for row in slo_rows(cfg)]
    if slos:
        out.write(f"\n{SLO_TITLE}\n{slo_text(slos)}\n")
    missing = unmanaged_namespaces(records, views)
    if missing:
        out.write(f"\nNamespaces this program does not create (they must exist before pulumi up): "
                  f"{', '.join(missing)}\n")
    if out_dir:
        out.write(f"\nWrote {Path(out_dir) / 'plan.json'} and {Path(out_dir) / 'manifests'}/\n")
    return 0
