"""The stack-file view of what components were given, and what one program's components found wrong.

Every rule, builder and tool of the package reads a :class:`PlatformConfig`. A stack file gives the whole of it
at once; a consumer's components each get a part (the cluster, one pool, the monitoring, one workload) and the
objects they are composed with. This module parses each part with the stack file's own models and puts the
parts a component knows into one config, so a reused component is checked and built by exactly the rules and
builders a stack is.

A program is checked as a compiler checks a source file: each component checks its args and its contracts with
the objects it is given when it is constructed, and a mistake does not stop the program there. The component is
left out (it registers nothing), its problems are kept in the program's :class:`ProgramCheck`, and the program
goes on so the next component is checked too; from the first mistake on no component registers anything. Once
the program has run to its end the SDK awaits every output it created (pulumi/pulumi
``sdk/python/lib/pulumi/runtime/stack.py``, ``wait_for_rpcs``), and one of them fails with every problem found:
the language host prints a ``pulumi.RunError`` as a message, without a traceback
(``sdk/python/cmd/pulumi-language-python-exec``), and ``gpuplatform plan|check --project`` exit 2 with it.
"""
from typing import Any, Iterable, Optional

import pulumi
from pydantic import PrivateAttr, TypeAdapter, ValidationError

from gpuplatform.components.config import Monitoring, NodePool, PlatformConfig, Settings, Workload
from gpuplatform.components.errors import ConfigError


def parse_section(model: Any, raw: Any, path: str):
    """``raw`` (stack-file format) as ``model``, or ConfigError with stack-file paths under ``path``
    (``workloads[2]``, ``monitoring.intervals``)."""
    from gpuplatform.components.validation.parsing import issues_of

    try:
        return TypeAdapter(model).validate_python(raw)
    except ValidationError as exc:
        # located from the namespace's root, as a stack file's errors are: the messages find the keys allowed
        # there (and a secret key is named by its first part)
        root = section_location(path)
        raise ConfigError(issues_of([{**e, "loc": (*root, *e["loc"])} for e in exc.errors()])) from None


def section_location(path: str) -> tuple:
    """``workloads[2]`` -> ``("workloads", 2)``: a stack-file path as a pydantic error location."""
    return tuple(int(part) if part.isdigit() else part
                 for part in path.replace("[", ".").replace("]", "").split(".") if part)


def settings(environment: str = "dev", protect: Optional[bool] = None, allow_public_endpoints: bool = False,
             namespace: str = "inference", root_namespace: Optional[str] = None,
             allow_end_of_life_charts: Optional[list[str]] = None, chart_packages: Optional[str] = None) -> Settings:
    return Settings(environment=environment, protect=protect, allow_public_endpoints=allow_public_endpoints,
                    namespace=namespace, root_namespace=root_namespace, create_namespace=False,
                    allow_end_of_life_charts=allow_end_of_life_charts or [], chart_packages=chart_packages)


class ComposedConfig(PlatformConfig):
    """The config of composed components: each service keeps the namespace its args gave it."""

    _namespaces: dict = PrivateAttr(default_factory=dict)

    def workload_namespace(self, workload: Workload) -> str:
        return self._namespaces.get(workload.name) or super().workload_namespace(workload)


BUILT: list = []
"""Every public component built in this process, in order: what ``gpuplatform plan|check|simulate|verify --project``
read a consumer's program by (its clusters, their pools, monitoring and services)."""


def view(cluster_settings: Settings, cluster, node_pools: Iterable[NodePool] = (),
         monitoring: Optional[Monitoring] = None, workloads: Iterable[Workload] = (), namespace: Optional[str] = None,
         **extra) -> PlatformConfig:
    """A config of already-validated parts (pydantic's ``model_construct`` validates nothing again)."""
    if namespace is not None:
        cluster_settings = cluster_settings.model_copy(update={"namespace": namespace, "root_namespace": namespace})
    return PlatformConfig.model_construct(settings=cluster_settings, cluster=cluster, node_pools=list(node_pools),
                                          monitoring=monitoring or Monitoring(), workloads=list(workloads),
                                          kubeconfig=extra.get("kubeconfig"),
                                          grafana_admin_password=extra.get("grafana_admin_password"))


class ProgramProblems(pulumi.RunError):
    """Every problem the components of a program found. Rendered when printed, so that it names every problem
    found by then, whichever output or component use raised it first."""

    def __init__(self, program: "ProgramCheck"):
        super().__init__()
        self.program = program

    def __str__(self) -> str:
        return self.program.render()


class ProgramCheck:
    """What the public components of one program found wrong, in the order they were constructed."""

    def __init__(self, key: tuple):
        self.key = key
        self.issues: list = []
        self.unchecked: list[str] = []
        """Components left unchecked because an object they were given has problems of its own."""
        self.stopped_at = ""
        """What of a component that is not built the program read, where it stopped."""
        self.checking = 0
        """Components being checked now (what they read of one that is not built leaves them unchecked)."""

    @property
    def failed(self) -> bool:
        return bool(self.issues or self.unchecked)

    def record(self, issues: list, unchecked: str = "") -> None:
        self.issues.extend(issues)
        if unchecked:
            self.unchecked.append(unchecked)
        # An output whose value is the program's failure: the SDK awaits every output once the program has run
        # (``wait_for_rpcs``) and raises what one of them raised, also after the program stopped on an exception
        # of its own. One per recording, so that a test runner that drops the outputs of an earlier run between
        # tests (``pulumi.runtime.test``) still fails each run that has problems.
        pulumi.Output.from_input(self._fail())

    async def _fail(self):
        raise ProgramProblems(self)

    def render(self) -> str:
        from gpuplatform.components.args import ArgsError

        lines = [ArgsError(list(self.issues)).render()] if self.issues else ["invalid component args:"]
        if self.unchecked:
            lines.append(f"  not checked, as what they were given has problems: {', '.join(self.unchecked)}")
        if self.stopped_at:
            lines.append(f"  the program stopped at {self.stopped_at}, which is not built because of these problems")
        lines.append("  nothing was registered from the first problem on; fix these and run again")
        return "\n".join(lines)


_PROGRAM: list[ProgramCheck] = []


def current_program() -> ProgramCheck:
    """The check of the program running now: a new one for each program run (a new root stack resource or a new
    runtime configuration: the language host, each ``gpuplatform plan``, each Automation API run)."""
    from pulumi.runtime import settings

    key = (settings.get_root_resource(), settings.SETTINGS.rpc_manager)
    if not _PROGRAM or any(a is not b for a, b in zip(_PROGRAM[0].key, key)):
        _PROGRAM[:] = [ProgramCheck(key)]
    return _PROGRAM[0]


class NotBuilt(ProgramProblems):
    """The program used something of a component that its problems (or the program's) kept from being built."""

    def __init__(self, program: ProgramCheck, label: str, attribute: str):
        super().__init__(program)
        self.label, self.attribute = label, attribute


class ComposedComponent:
    """What every public component shares: a component that is not built (it has problems, or the program had
    some before it) stops the program where the program reads what it did not get, with every problem found so
    far, instead of an ``AttributeError`` traceback."""

    def __getattr__(self, name: str):
        state = self.__dict__.get("_composed")
        if state is None or not state.done or state.build or name.startswith("__"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        if not state.program.checking:
            state.program.stopped_at = state.program.stopped_at or f"{state.label}.{name}"
        raise NotBuilt(state.program, state.label, name)


class Checking:
    """The outcome of :func:`checking` one component: whether it may register its resources."""

    def __init__(self, component, label: str):
        self.component, self.label = component, label
        self.program = current_program()
        self.build = False
        """Checked without problems, in a program without any so far: the component registers its resources."""
        self.checked = False
        """Checked without problems: later components are checked against it, built or not."""
        self.done = False

    def __enter__(self) -> "Checking":
        self.component.__dict__["_composed"] = self
        self.program.checking += 1
        return self

    def __exit__(self, typ, exc, tb) -> bool:
        from gpuplatform.components.args import ArgsError

        self.program.checking -= 1
        self.done = True
        if exc is None:
            self.checked = True
            self.build = not self.program.failed
            self.attributes = {k: v for k, v in self.component.__dict__.items() if k != "_composed"}
            return False
        if isinstance(exc, ArgsError):
            given = getattr(exc, "unchecked_given", None)
            self.program.record(exc.issues, f"{self.label} (given {given})" if given else "")
            return True
        if isinstance(exc, NotBuilt) and exc.program is self.program and exc.label != self.label:
            # (a component whose own args can be judged without that object raises them with
            # ``unchecked_given`` set instead: :func:`own_issues_against_unchecked`)
            # given an object that is not checked: whatever depends on it is checked once that one is
            self.program.record([], f"{self.label} (given {exc.label})")
            return True
        return False

    def restore(self) -> None:
        """Put back what the check set, once the component is registered: ``ComponentResource.__init__`` sets an
        output attribute for each of the props it registers (pulumi/pulumi ``sdk/python/lib/pulumi/runtime/rpc.py``,
        ``transfer_properties``), over a checked attribute of the same name (a namespace's ``name``)."""
        self.component.__dict__.update(self.attributes)


def checking(component, label: str) -> Checking:
    """Check ``component`` in the ``with`` block: :func:`args.raise_for` (or a problem of an object it was given)
    ends the block with its problems recorded for the program; after the block, ``build`` says whether to
    register anything::

        with checking(self, label) as outcome:
            ...  # check the args and contracts; set what later components read
        if not outcome.build:
            return
        super().__init__(...)
        outcome.restore()
    """
    return Checking(component, label)


def own_issues_against_unchecked(issues: list, given_label: str) -> None:
    """Stop checking a component that was given an object with problems of its own, after checking what it can
    of its own args without that object: its own ``issues`` are recorded with the program's, and the component is
    listed as not checked against ``given_label`` (``GpuMonitoring 'monitoring'``) until that one is fixed."""
    from gpuplatform.components.args import ArgsError

    exc = ArgsError(list(issues))
    exc.unchecked_given = given_label
    raise exc


def label_of(component) -> str:
    """How messages name a component, also one that is not built (``GpuMonitoring 'monitoring'``)."""
    state = getattr(component, "__dict__", {}).get("_composed")
    return state.label if state is not None else component.label


def is_checked(component) -> bool:
    """Whether ``component`` was checked without problems (so others are checked against it)."""
    state = getattr(component, "__dict__", {}).get("_composed")
    return state is None or state.checked
