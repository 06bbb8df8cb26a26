"""``model.wake-time`` against vLLM-shaped fakes on loopback: the sleep-mode endpoints (``/is_sleeping``,
``/wake_up``, ``/sleep?level=N``) of each replica, a wake-up that takes a known time, and the check's verdicts: the
measured wake against the warm set's estimate, the replica put back to sleep, no replica asleep, a refused wake."""
from __future__ import annotations

import copy
import json
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest
from kubernetes import client as k8s

from gpuplatform.components.stack_config import namespace_from_stack_file
from gpuplatform.components.validation import load
from gpuplatform.verify import check_wake_time
from gpuplatform.verify.wake import sleep_mode_served
from k8s_fixture_server import REPO

EXAMPLE = REPO / "examples" / "007-warm-set" / "Pulumi.007-warm-set.yaml"


class FakeVllm:
    """One replica's sleep-mode endpoints on a loopback port, as vLLM 0.9.2 serves them in dev mode."""

    def __init__(self, asleep: bool, wake_s: float = 0.0, wake_status: int = 200, sleeps: bool = True):
        self.asleep, self.wake_s, self.wake_status, self.sleeps = asleep, wake_s, wake_status, sleeps
        self.calls: list[str] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self, status: int, doc: dict | None = None) -> None:
                body = json.dumps(doc).encode() if doc is not None else b""
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):  # noqa: N802
                fake.calls.append(f"GET {self.path}")
                if self.path == "/is_sleeping":
                    self._answer(200, {"is_sleeping": fake.asleep})
                else:
                    self._answer(404, {"detail": "Not Found"})

            def do_POST(self):  # noqa: N802
                fake.calls.append(f"POST {self.path}")
                if self.path == "/wake_up":
                    if fake.wake_status != 200:
                        self._answer(fake.wake_status, {"error": "sleep mode is not enabled"})
                        return
                    time.sleep(fake.wake_s)  # vLLM answers once the engine has woken
                    fake.asleep = False
                    self._answer(200)
                elif self.path.startswith("/sleep?level="):
                    if fake.sleeps:
                        fake.asleep = True
                    self._answer(200)
                else:
                    self._answer(404, {"detail": "Not Found"})

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def loopback(fakes: dict[str, FakeVllm], expected_port: int = 8000):
    """The check's transport: each pod's requests to its loopback fake (the API server's pod proxy on a cluster)."""
    def request(method: str, namespace: str, pod: str, port: int, path: str) -> tuple[int, str]:
        assert (namespace, port) == ("inference", expected_port)
        req = urllib.request.Request(f"http://127.0.0.1:{fakes[pod].port}{path}", method=method,
                                     data=b"" if method == "POST" else None)
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()
    return request


def core_with(names: list[str]):
    """A CoreV1Api stand-in listing running pods of those names."""
    pods = [k8s.V1Pod(metadata=k8s.V1ObjectMeta(name=n), status=k8s.V1PodStatus(phase="Running")) for n in names]
    return SimpleNamespace(list_namespaced_pod=lambda ns, **kw: SimpleNamespace(items=pods))


def sleep_mode(level: int = 1):
    raw = copy.deepcopy(namespace_from_stack_file(EXAMPLE))
    raw["nodePools"][0]["warmSet"]["sleepLevel"] = level
    # chat's own replicas sleep (outside the set, whose holders keep the others' replicas)
    raw["nodePools"][0]["warmSet"]["models"] = ["code", "summarize"]
    w = raw["workloads"][0]
    w["args"] = [*w["args"], "--enable-sleep-mode"]
    w["env"] = {**w["env"], "VLLM_SERVER_DEV_MODE": "1"}
    cfg = load(raw)
    return cfg, cfg.workloads[0]


@pytest.fixture
def fakes():
    made: dict[str, FakeVllm] = {}
    yield made
    for f in made.values():
        f.close()


def test_a_sleeping_replica_is_woken_measured_and_put_back_to_sleep(fakes):
    cfg, w = sleep_mode()
    fakes["chat-a"] = FakeVllm(asleep=False)
    fakes["chat-b"] = FakeVllm(asleep=True, wake_s=0.3)
    result = check_wake_time(cfg, w, core_with(["chat-a", "chat-b"]), loopback(fakes))
    assert result.ok and not result.warning, result.message
    seconds = float(result.message.split(" woke in ")[1].split("s", 1)[0])
    assert 0.3 <= seconds < 2.0
    assert "went back to sleep (level 1)" in result.message
    assert "expected 1.8s (15 GiB copied from host memory at 20 GiB/s + 1s, an estimate)" in result.message
    # the serving replica was only asked; the sleeping one woken, then put back at the warm set's level
    assert fakes["chat-a"].calls == ["GET /is_sleeping"]
    assert fakes["chat-b"].calls[:2] == ["GET /is_sleeping", "POST /wake_up"]
    assert "POST /sleep?level=1" in fakes["chat-b"].calls and fakes["chat-b"].asleep


def test_a_wake_slower_than_twice_the_estimate_warns(fakes):
    cfg, w = sleep_mode()
    fakes["chat-b"] = FakeVllm(asleep=True)
    ticks = iter([0.0, 5.0, 5.0, 5.0])  # the clock: the request, then the poll that finds it awake after 5 s
    result = check_wake_time(cfg, w, core_with(["chat-b"]), loopback(fakes), clock=lambda: next(ticks))
    assert result.ok and result.warning
    assert "woke in 5.0s" in result.message and "more than 2x the estimate" in result.message


def test_level_2_is_put_back_at_level_2_and_expected_as_slow_as_a_read(fakes):
    cfg, w = sleep_mode(level=2)
    fakes["chat-b"] = FakeVllm(asleep=True, wake_s=0.1)
    result = check_wake_time(cfg, w, core_with(["chat-b"]), loopback(fakes))
    assert result.ok and "POST /sleep?level=2" in fakes["chat-b"].calls
    assert "expected 103.4s (15 GiB read again at 150 MiB/s + 1s, an estimate)" in result.message


def test_no_replica_asleep_is_a_warning_and_nothing_is_woken_or_slept(fakes):
    cfg, w = sleep_mode()
    fakes["chat-a"] = FakeVllm(asleep=False)
    result = check_wake_time(cfg, w, core_with(["chat-a"]), loopback(fakes))
    assert result.ok and result.warning and "no replica asleep among 1 running" in result.message
    assert fakes["chat-a"].calls == ["GET /is_sleeping"]


def test_a_refused_wake_and_a_replica_that_stays_awake_fail(fakes):
    cfg, w = sleep_mode()
    fakes["chat-b"] = FakeVllm(asleep=True, wake_status=400)
    result = check_wake_time(cfg, w, core_with(["chat-b"]), loopback(fakes))
    assert not result.ok and "POST /wake_up to chat-b answered 400" in result.message
    fakes["chat-c"] = FakeVllm(asleep=True, sleeps=False)
    result = check_wake_time(cfg, w, core_with(["chat-c"]), loopback(fakes))
    assert not result.ok and "did not go back to sleep" in result.message and "it is awake now" in result.message


def test_a_replica_that_never_wakes_fails_after_the_timeout(fakes):
    cfg, w = sleep_mode()
    fakes["chat-b"] = FakeVllm(asleep=True)
    fakes["chat-b"].wake_status = 200
    request = loopback(fakes)

    def never_wakes(method, ns, pod, port, path):
        status, body = request(method, ns, pod, port, path)
        if path == "/is_sleeping":
            return 200, json.dumps({"is_sleeping": True})
        return status, body
    result = check_wake_time(cfg, w, core_with(["chat-b"]), never_wakes, sleep=lambda s: None, timeout_s=0.2)
    assert not result.ok and "still asleep 0s after POST /wake_up" in result.message


def test_only_workloads_whose_replicas_can_sleep_are_measured():
    raw = copy.deepcopy(namespace_from_stack_file(EXAMPLE))
    del raw["nodePools"][0]["warmSet"]
    cfg = load(raw)
    assert not sleep_mode_served(cfg.workloads[0])
    assert check_wake_time(cfg, cfg.workloads[0], core_with([]), loopback({})) is None
    _, w = sleep_mode()
    assert sleep_mode_served(w)


def test_a_warm_set_model_is_woken_in_a_holder_on_its_port_there_never_in_a_holder_already_awake(fakes):
    """Example 007 as shipped: the models' own pods do not sleep; their sleeping replicas are the holders', 'code'
    on port 8101. A holder the waker has woken a replica in (labelled with the model awake) is not touched."""
    cfg = load(namespace_from_stack_file(EXAMPLE))
    code = cfg.workloads[1]
    fakes["warm-set-l20-a"] = FakeVllm(asleep=True, wake_s=0.1)
    fakes["warm-set-l20-b"] = FakeVllm(asleep=True, wake_s=0.1)
    pods = [k8s.V1Pod(metadata=k8s.V1ObjectMeta(name="warm-set-l20-a",
                                                labels={"gpuplatform.io/awake-model": "chat"}),
                      status=k8s.V1PodStatus(phase="Running")),
            k8s.V1Pod(metadata=k8s.V1ObjectMeta(name="warm-set-l20-b"), status=k8s.V1PodStatus(phase="Running"))]
    listed = []

    def list_pods(ns, **kw):
        listed.append(kw["label_selector"])
        return SimpleNamespace(items=pods)

    def request(method, namespace, pod, port, path):
        assert port == 8101
        return loopback(fakes, expected_port=8101)(method, namespace, pod, port, path)

    result = check_wake_time(cfg, code, SimpleNamespace(list_namespaced_pod=list_pods), request)
    assert result.ok, result.message
    assert listed == ["app.kubernetes.io/name=warm-set-l20"]
    assert fakes["warm-set-l20-a"].calls == []
    assert "POST /wake_up" in fakes["warm-set-l20-b"].calls and fakes["warm-set-l20-b"].asleep
