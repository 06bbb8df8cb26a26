"""Run the program with registrations that take time, and record what reached the engine before what.

Why not read the recorded ``dependencies`` of each request: the engine's ordering is the *SDK's* waiting, not that
list. The Python SDK sends a registration only after the URNs of its explicit dependencies, of every resource its
input Outputs came from, of its parent and of its provider have resolved (pulumi/pulumi
``sdk/python/lib/pulumi/runtime/resource.py`` ``prepare_resource``, and ``_create_provider_ref``), and an invoke
with ``depends_on`` only after those URNs (``runtime/invoke.py``). A custom resource's URN resolves when the
engine answers its ``RegisterResource`` call, which it does once the resource's step has run
(``pkg/resource/deploy/source_eval.go``: the monitor waits for the step's completion event before replying).
A component registers in no time, but only after its own dependencies. So a resource that "takes time" is a
resource whose ``RegisterResource`` call has not returned yet; everything that really waits for it is held back,
and everything else reaches the engine meanwhile.

The mock monitor here holds chosen types' ``RegisterResource`` calls until the rest of the program has nothing
left to do (the event loop idle, no other call in flight), then lets them complete one by one. The test then
reads the event log: what was requested before a slow resource was created, and what only after.
"""
import asyncio
import json
import threading
import time
from dataclasses import dataclass, field

import pulumi

from gpuplatform.synth import OfflineMocks, RecordingMonitor


@dataclass
class Timeline:
    events: list = field(default_factory=list)
    """("requested" | "created" | "read" | "invoked", resource name or invoke token), in the order the engine saw
    them."""

    def index(self, kind: str, name: str) -> int:
        hits = [i for i, e in enumerate(self.events) if e == (kind, name)]
        assert len(hits) == 1, f"expected one {kind} {name}, got {len(hits)} in {self.names(kind)}"
        return hits[0]

    def names(self, kind: str) -> list[str]:
        return [n for k, n in self.events if k == kind]

    def requested_before_created(self, slow: str) -> set[str]:
        """Names whose registration reached the engine while ``slow`` was still being created."""
        created = self.index("created", slow)
        return {n for k, n in self.events[:created] if k == "requested"}

    def after_created(self, kind: str, name: str, slow: str) -> bool:
        """``name`` ("requested" resource or "invoked" token) reached the engine only once ``slow`` was created."""
        return self.index(kind, name) > self.index("created", slow)


class SlowMonitor(RecordingMonitor):
    IDLE_POLL_SECONDS = 0.001
    GIVE_UP_SECONDS = 30.0

    def __init__(self, mocks, slow_types: set[str]):
        super().__init__(mocks)
        self.slow_types = set(slow_types)
        self.timeline = Timeline()
        self.loop = None
        self.in_flight = 0  # executor calls the program awaits (only changed on the loop thread)
        self.held = 0
        self._log_lock = threading.Lock()
        self._release_lock = threading.Lock()

    def _log(self, kind: str, name: str) -> None:
        with self._log_lock:
            self.timeline.events.append((kind, name))

    # ---------------------------------------------------------------- event-loop bookkeeping
    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Count the executor calls the SDK makes (every RPC goes through ``loop.run_in_executor``). The count
        drops in a done-callback of the asyncio future, so on the loop thread, after the awaiting task was woken:
        zero calls in flight and an empty ready queue mean the program cannot progress without a held call."""
        self.loop = loop
        original = loop.run_in_executor

        def counted(executor, fn, *args):
            fut = original(executor, fn, *args)
            self.in_flight += 1

            def done(_):
                self.in_flight -= 1
            fut.add_done_callback(done)
            return fut
        loop.run_in_executor = counted

    async def _idle(self) -> bool:
        await asyncio.sleep(0)
        return self.in_flight == self.held and not self.loop._ready and not self.loop._scheduled

    def _wait_until_idle(self) -> None:
        deadline = time.monotonic() + self.GIVE_UP_SECONDS
        while time.monotonic() < deadline:
            with self._release_lock:
                if asyncio.run_coroutine_threadsafe(self._idle(), self.loop).result():
                    self.held -= 1
                    return
            time.sleep(self.IDLE_POLL_SECONDS)
        raise TimeoutError("the program never went idle while a slow registration was held")

    # ---------------------------------------------------------------- monitor RPCs
    def RegisterResource(self, request):
        if request.type == "pulumi:pulumi:Stack":
            return super().RegisterResource(request)
        self._log("requested", request.name)
        if request.custom and request.type in self.slow_types:
            with self._release_lock:
                self.held += 1
            self._wait_until_idle()
        response = super().RegisterResource(request)
        self._log("created", request.name)
        return response

    def Invoke(self, request):
        self._log("invoked", request.tok)
        return super().Invoke(request)

    def ReadResource(self, request):
        self._log("read", request.name)
        return super().ReadResource(request)


def run_with_slow(config: dict, slow_types: set[str], program=None) -> Timeline:
    """Run ``program`` (default the gpu-platform program) with ``config`` (full keys) while every resource of
    ``slow_types`` takes until the rest of the program is stuck to be created."""
    from concurrent.futures import ThreadPoolExecutor

    if program is None:
        from gpuplatform.program import main as program
    mocks = OfflineMocks()
    monitor = SlowMonitor(mocks, slow_types)
    pulumi.runtime.reset_options()
    pulumi.runtime.set_mocks(mocks, project="gpu-platform", stack="timing", preview=True, monitor=monitor)
    pulumi.runtime.set_all_config({k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items()}, [])

    def run() -> None:
        loop = asyncio.get_event_loop()
        # held calls occupy executor threads; leave room for everything else
        loop.set_default_executor(ThreadPoolExecutor(max_workers=32))
        monitor.attach(loop)
        program()

    pulumi.runtime.test(run)()
    return monitor.timeline
