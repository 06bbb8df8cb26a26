"""The serving side of the real loop, run as one process inside the control plane's network namespace: an emulated
server for each pod of the workload that kwok runs, the Prometheus targets that name those pods, and the load
generator that sends the scenario's arrivals to the Ready ones.

Each emulated server listens on a loopback port of its own and serves real requests: ``POST /infer`` waits for one
of its ``concurrency`` slots (first in, first out) and holds it for a service time, as an inference server holds a
GPU for a request. The queue runs on the arrival time the load generator stamps on each request (``X-Arrival``), so
what the server reports does not depend on how promptly a loaded machine runs this process. ``GET /metrics`` answers in the Prometheus text format with what the server's exporter reports:

* ``dcgm``: ``DCGM_FI_DEV_GPU_UTIL``, the share of the second before the exporter's last collection in which the
  slot was busy, in integer percent (DCGM reports the field as an integer), collected every ``collect_s``; the
  target exists from the pod's container start (the exporter labels a GPU with the pod the kubelet assigned it to)
  and reads 0 while the model loads;
* ``vllm``: ``vllm:num_requests_waiting`` and ``vllm:num_requests_running`` at the instant of the scrape; the
  target exists once the pod is Ready (vLLM's API server, which serves /metrics, starts after the model loaded).

The process watches the pods through the API server every half second: a pod's target is written to a file that
Prometheus' file service discovery reads (labels ``namespace`` and ``pod``, as the PodMonitor and dcgm-exporter
with ``honorLabels`` give them); a pod being deleted or gone leaves the file and the routing at once.

The load generator sends each arrival (seconds after the scenario's start) to the next Ready pod in turn (the
ingress balances per request); an arrival that finds no Ready pod fails. Every event goes to a JSON-lines log that
the harness reads afterwards.

With ``ingress`` in the spec (a workload woken from zero by its requests), the process also plays the ingress
controller's request counter: ``nginx_ingress_controller_requests`` per Ingress host, every arrival counted at its
scheduled instant whether a pod served it or not (ingress-nginx counts the 503s it answers while no pod is ready),
on a target of its own. One series per host that exists from the start, as the simulator keeps it; ingress-nginx
labels each response status in its own series, created at the first response with that status.

Run: ``python -m gpuplatform.realloop.emulator SPEC.json`` (the harness writes the spec).
"""
from __future__ import annotations

import asyncio
import json
import os
import random
import ssl
import sys
import time
import urllib.request
from collections import deque
from dataclasses import dataclass, field
from typing import Optional

POLL_S = 0.5
ARRIVAL_HEADER = "x-arrival"
"""The request's arrival as the scenario schedules it (wall-clock seconds), stamped by the load generator."""


@dataclass
class EmulatedServer:
    """One server's queue, kept on the requests' arrival stamps: a request that arrived at ``a`` takes the slot that
    frees first, starts at ``max(a, that slot's end)`` and holds it for its service time (first in, first out over
    ``concurrency`` slots). The gauges and the busy share are read from those spans at the instant asked, so a
    late event loop (a loaded machine) delays the answers, never the queue the exporter reports."""

    pod: str
    kind: str
    service_s: float
    concurrency: int
    deterministic: bool
    rng: random.Random
    port: int = 0
    server: Optional[asyncio.AbstractServer] = None
    free_at: list = field(default_factory=list)
    """Per slot, when it frees."""
    spans: deque = field(default_factory=deque)
    """(arrival, start, end) of every request, in arrival order."""
    ready: bool = False
    collected_util: int = 0

    def service_time(self) -> float:
        return self.service_s if self.deterministic else self.rng.expovariate(1.0 / self.service_s)

    def admit(self, arrival: float) -> float:
        """Queue a request that arrived at ``arrival``; when it completes."""
        if not self.free_at:
            self.free_at = [0.0] * self.concurrency
        slot = min(range(self.concurrency), key=lambda k: self.free_at[k])
        start = max(arrival, self.free_at[slot])
        end = start + self.service_time()
        self.free_at[slot] = end
        self.spans.append((arrival, start, end))
        while self.spans and self.spans[0][2] < arrival - 120:
            self.spans.popleft()
        return end

    async def serve_one(self, arrival: Optional[float] = None) -> None:
        end = self.admit(time.time() if arrival is None else arrival)
        await asyncio.sleep(max(0.0, end - time.time()))

    def waiting(self, now: float) -> int:
        return sum(1 for a, start, _ in self.spans if a <= now < start)

    def running(self, now: float) -> int:
        return sum(1 for _, start, end in self.spans if start <= now < end)

    def busy_fraction(self, since: float, until: float) -> float:
        """Share of [since, until) during which the slots were busy, over ``concurrency`` slots."""
        total = sum(max(0.0, min(end, until) - max(start, since)) for _, start, end in self.spans)
        return min(1.0, total / (self.concurrency * (until - since))) if until > since else 0.0

    def collect(self, now: float) -> None:
        # the GPU's activity over the second before the collection; nothing while the model loads
        self.collected_util = int(round(100 * self.busy_fraction(now - 1.0, now))) if self.ready else 0

    def metrics_text(self) -> str:
        if self.kind == "dcgm":
            return ("# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
                    f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",UUID="GPU-{self.pod}"}} {self.collected_util}\n')
        now = time.time()
        return ("# TYPE vllm:num_requests_waiting gauge\n"
                f"vllm:num_requests_waiting {self.waiting(now)}\n"
                "# TYPE vllm:num_requests_running gauge\n"
                f"vllm:num_requests_running {self.running(now)}\n")

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await reader.readline()
            arrival = None
            while True:  # headers
                header = await reader.readline()
                if header in (b"\r\n", b"\n", b""):
                    break
                name, _, value = header.decode("latin-1").partition(":")
                if name.strip().lower() == ARRIVAL_HEADER:
                    arrival = float(value.strip())
            if line.startswith(b"GET /metrics"):
                body = self.metrics_text().encode()
                status = b"200 OK"
            elif line.startswith(b"POST /infer"):
                await self.serve_one(arrival)
                body, status = b"ok\n", b"200 OK"
            else:
                body, status = b"not found\n", b"404 Not Found"
            await respond(writer, status, body)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


async def respond(writer: asyncio.StreamWriter, status: bytes, body: bytes) -> None:
    """One HTTP/1.1 answer in the text exposition format, with the Content-Type Prometheus 3 requires of a scrape
    (a scrape without a known one fails unless the job sets ``fallback_scrape_protocol``)."""
    writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Type: text/plain; version=0.0.4\r\n"
                 b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
    await writer.drain()


class Agent:
    def __init__(self, spec: dict):
        self.spec = spec
        self.kind = spec["kind"]
        self.servers: dict[str, EmulatedServer] = {}
        self.rng = random.Random(spec.get("seed", 0))
        self.log = open(spec["events"], "a", buffering=1)
        self.rotation = 0
        self.ingress_port = 0
        self.ctx = ssl.create_default_context(cafile=spec["ca"])
        self.ctx.load_cert_chain(spec["cert"], spec["key"])

    def event(self, kind: str, **fields) -> None:
        self.log.write(json.dumps({"t": time.time(), "event": kind, **fields}) + "\n")

    # -- the pods
    def list_pods(self) -> list:
        url = (f"{self.spec['server']}/api/v1/namespaces/{self.spec['namespace']}/pods"
               f"?labelSelector={self.spec['selector']}")
        with urllib.request.urlopen(url, context=self.ctx, timeout=10) as resp:
            return json.load(resp)["items"]

    async def watch_pods(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                pods = await loop.run_in_executor(None, self.list_pods)
            except OSError as exc:
                self.event("list-error", error=str(exc))
                await asyncio.sleep(POLL_S)
                continue
            seen = set()
            for pod in pods:
                name = pod["metadata"]["name"]
                if pod["metadata"].get("deletionTimestamp") or pod["status"].get("phase") != "Running":
                    continue
                seen.add(name)
                ready = any(c["type"] == "Ready" and c["status"] == "True"
                            for c in pod["status"].get("conditions", []))
                server = self.servers.get(name)
                if server is None:
                    server = EmulatedServer(name, self.kind, self.spec["service_s"], self.spec["concurrency"],
                                            self.spec["deterministic"], random.Random(f"{self.spec.get('seed', 0)}"
                                                                                      f"-{name}"))
                    server.server = await asyncio.start_server(server.handle, "127.0.0.1", 0)
                    server.port = server.server.sockets[0].getsockname()[1]
                    self.servers[name] = server
                    self.event("running", pod=name, port=server.port)
                if ready and not server.ready:
                    server.ready = True
                    self.event("ready", pod=name)
            for name in list(self.servers):
                if name not in seen:
                    server = self.servers.pop(name)
                    server.server.close()
                    self.event("gone", pod=name)
            self.write_targets()
            await asyncio.sleep(POLL_S)

    def write_targets(self) -> None:
        targets = [{"targets": [f"127.0.0.1:{s.port}"],
                    "labels": {"namespace": self.spec["namespace"], "pod": s.pod}}
                   for s in self.servers.values() if s.ready or self.kind == "dcgm"]
        if self.ingress_port:
            targets.append({"targets": [f"127.0.0.1:{self.ingress_port}"], "labels": self.spec["ingress"]["target"]})
        path = self.spec["targets"]
        text = json.dumps(sorted(targets, key=lambda x: x["labels"]["pod"]))
        try:
            with open(path) as f:
                if f.read() == text:
                    return
        except OSError:
            pass
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)

    # -- the ingress controller's request counter
    def ingress_text(self) -> str:
        now = time.time() - self.spec["start"]
        count = sum(1 for a in self.spec["arrivals"] if a <= now)
        series = self.spec["ingress"]["series"]
        lines = ["# TYPE nginx_ingress_controller_requests counter"]
        for labels in series:
            text = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
            lines.append(f"nginx_ingress_controller_requests{{{text}}} {count / len(series):g}")
        return "\n".join(lines) + "\n"

    async def serve_ingress(self) -> None:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                await reader.readline()
                while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                    pass
                await respond(writer, b"200 OK", self.ingress_text().encode())
            except (ConnectionError, asyncio.IncompleteReadError):
                pass
            finally:
                writer.close()
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        self.ingress_port = server.sockets[0].getsockname()[1]
        self.event("ingress", port=self.ingress_port)
        self.write_targets()

    # -- the exporter's collection
    async def collect(self) -> None:
        period, start = self.spec["collect_s"], self.spec["start"] + self.spec["collect_phase"]
        k = -int((start - time.time()) // period)  # the warm-up is collected too, on the same grid
        while True:
            at = start + k * period
            delay = at - time.time()
            if delay > 0:
                await asyncio.sleep(delay)
            k += 1
            if time.time() - at > period:
                continue
            now = time.time()
            for server in self.servers.values():
                server.collect(now)

    # -- the load
    async def send(self, arrival: float) -> None:
        ready = [s for _, s in sorted(self.servers.items()) if s.ready]
        if not ready:
            self.event("failed", arrival=arrival)
            return
        server = ready[self.rotation % len(ready)]
        self.rotation += 1
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            stamp = f"{self.spec['start'] + arrival:.6f}".encode()
            writer.write(b"POST /infer HTTP/1.1\r\nHost: emulator\r\n" + ARRIVAL_HEADER.encode() + b": " + stamp
                         + b"\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()
            await reader.read()
            writer.close()
        except OSError:
            self.event("failed", arrival=arrival, pod=server.pod)

    async def generate(self) -> None:
        start = self.spec["start"]
        tasks = set()
        for arrival in self.spec["arrivals"]:
            delay = start + arrival - time.time()
            if delay > 0:
                await asyncio.sleep(delay)
            task = asyncio.create_task(self.send(arrival))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        self.event("arrivals-done", count=len(self.spec["arrivals"]))

    async def main(self) -> None:
        if self.spec.get("ingress"):
            await self.serve_ingress()
        asyncio.create_task(self.watch_pods())
        asyncio.create_task(self.collect())
        self.event("started", starts_in=self.spec["start"] - time.time())
        await self.generate()  # the warm-up's arrivals come before second 0
        # the servers and the ingress's counter stay up to the end of the recording (a load that stops before it)
        until = self.spec["start"] + self.spec.get("until", 0) - time.time()
        await asyncio.sleep(max(until, 0) + self.spec.get("linger_s", 0))


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m gpuplatform.realloop.emulator SPEC.json", file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        spec = json.load(f)
    asyncio.run(Agent(spec).main())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
