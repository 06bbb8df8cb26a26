"""The waker program (components/warm_set_waker.py) run as the waker's container runs it, against a loopback stand-in
for the API server (HTTPS with its own CA, a bearer token, the few paths the waker's Role allows) and holders whose
replicas are stand-in servers with sleep mode (tests/fixtures/warm_set/sleepy_server.py): two holders, at 127.0.0.1
and 127.0.0.2, each with a sleeping replica of ``chat`` and ``code`` on the models' holder ports."""
from __future__ import annotations

import json
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest
from support import REPO

WAKER = REPO / "components" / "warm_set_waker.py"
SLEEPY = REPO / "tests" / "fixtures" / "warm_set" / "sleepy_server.py"
NS, TOKEN, AWAKE = "models", "waker-token", "gpuplatform.io/awake-model"
HOLDER_IPS = ("127.0.0.1", "127.0.0.2")
MANAGER = "warm-set-waker.gpuplatform.io"


def _free_port() -> int:
    """A port free on both holder addresses."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.2", port))
            return port
        except OSError:
            continue
    raise RuntimeError("no port free on both loopback addresses")


class FakeApi:
    """Holder pods, one HPA and one Deployment per model, and the EndpointSlices written to it; every request is
    recorded as (method, path) and refused without the token."""

    def __init__(self):
        self.lock = threading.Lock()
        self.requests: list[tuple[str, str]] = []
        self.pods = {f"warm-set-l20-{i}": {
            "metadata": {"name": f"warm-set-l20-{i}", "namespace": NS, "uid": f"uid-{i}",
                         "labels": {"app.kubernetes.io/name": "warm-set-l20"}},
            "spec": {"nodeName": f"node-{i}"},
            "status": {"podIP": ip, "conditions": [{"type": "Ready", "status": "True"}]}}
            for i, ip in enumerate(HOLDER_IPS)}
        self.desired = {"chat": 1, "code": 1}
        self.ready = {"chat": 1, "code": 1}
        self.slices: dict[str, dict] = {}

    def set(self, model, desired, ready):
        with self.lock:
            self.desired[model], self.ready[model] = desired, ready

    def labelled(self, model):
        with self.lock:
            return sorted(p["metadata"]["name"] for p in self.pods.values()
                          if p["metadata"]["labels"].get(AWAKE) == model)

    def handle(self, method, url, body):
        parts = urlsplit(url)
        seg = parts.path.strip("/").split("/")
        with self.lock:
            self.requests.append((method, parts.path))
            if seg[:5] == ["api", "v1", "namespaces", NS, "pods"]:
                if len(seg) == 5 and method == "GET":
                    selector = parse_qs(parts.query).get("labelSelector", [""])[0]
                    k, _, v = selector.partition("=")
                    return 200, {"kind": "PodList", "items": [p for p in self.pods.values()
                                                              if p["metadata"]["labels"].get(k) == v]}
                if len(seg) == 6 and method == "PATCH" and seg[5] in self.pods:
                    labels = self.pods[seg[5]]["metadata"]["labels"]
                    for k, v in body["metadata"]["labels"].items():
                        if v is None:
                            labels.pop(k, None)
                        else:
                            labels[k] = v
                    return 200, self.pods[seg[5]]
            if seg[:4] == ["apis", "autoscaling", "v2", "namespaces"] and seg[5] == "horizontalpodautoscalers" \
                    and method == "GET" and seg[6] in self.desired:
                return 200, {"status": {"desiredReplicas": self.desired[seg[6]]}}
            if seg[:4] == ["apis", "apps", "v1", "namespaces"] and seg[5] == "deployments" and method == "GET" \
                    and seg[6] in self.ready:
                return 200, {"status": {"readyReplicas": self.ready[seg[6]]}}
            if seg[:4] == ["apis", "discovery.k8s.io", "v1", "namespaces"] and seg[5] == "endpointslices":
                if len(seg) == 6 and method == "POST":
                    if body["metadata"]["name"] in self.slices:
                        return 409, {"kind": "Status", "code": 409, "message": "already exists"}
                    self.slices[body["metadata"]["name"]] = {**body, "metadata": {**body["metadata"],
                                                                                  "resourceVersion": "1"}}
                    return 201, body
                name = seg[6] if len(seg) == 7 else None
                if name in self.slices:
                    if method == "GET":
                        return 200, self.slices[name]
                    if method == "PUT":
                        self.slices[name] = body
                        return 200, body
                    if method == "DELETE":
                        del self.slices[name]
                        return 200, {"kind": "Status", "code": 200}
            return 404, {"kind": "Status", "code": 404, "message": f"{method} {parts.path} not found"}


def _serve_api(api: FakeApi, tmp) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _do(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                status, out = 401, {"kind": "Status", "code": 401, "message": "Unauthorized"}
            else:
                status, out = api.handle(self.command, self.path, body)
            raw = json.dumps(out).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _do

    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-days", "1", "-subj", "/CN=kubernetes", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(tmp / "key.pem"), "-out", str(tmp / "ca.crt")],
                   check=True, capture_output=True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(tmp / "ca.crt", tmp / "key.pem")
    server.socket = tls.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _http(ip, port, method, path):
    req = urllib.request.Request(f"http://{ip}:{port}{path}", method=method, data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(req, timeout=2) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, ""
    except OSError:
        return None, ""


def _until(check, timeout=8.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False


def _sleeping(ip, port):
    status, body = _http(ip, port, "GET", "/is_sleeping")
    return json.loads(body)["is_sleeping"] if status == 200 else None


@pytest.fixture
def warm_set(tmp_path):
    """(api, ports, health port, waker process, its environment): the fake API, two holders with both models
    asleep, and the waker running."""
    api = FakeApi()
    server = _serve_api(api, tmp_path)
    ports = {"chat": _free_port(), "code": _free_port()}
    procs = []
    for i, ip in enumerate(HOLDER_IPS):
        for model, port in ports.items():
            env = {**os.environ, "FAKE_GPU_FILE": str(tmp_path / f"gpu-{i}"), "FAKE_NAME": model,
                   "FAKE_LOG": str(tmp_path / "servers.log"), "FAKE_HOST": ip, "FAKE_START_SECONDS": "0"}
            procs.append(subprocess.Popen([sys.executable, str(SLEEPY), f"--port={port}"], env=env))
            assert _until(lambda: _http(ip, port, "GET", "/health")[0] == 200)
            assert _http(ip, port, "POST", "/sleep?level=1")[0] == 200  # as the holder program leaves it
    config = {"namespace": NS, "pool": "l20",
              "holders": {"selector": {"app.kubernetes.io/name": "warm-set-l20"}, "awakeLabel": AWAKE},
              "endpointSliceManagedBy": MANAGER, "sleepLevel": 1,
              "models": [{"model": m, "deployment": m, "horizontalPodAutoscaler": m, "service": m,
                          "holderPort": port, "endpointSlice": {"name": f"{m}-warm-set-l20", "ports": [
                              {"name": "http", "port": port, "protocol": "TCP", "appProtocol": "http"}]},
                          "wake": "POST /wake_up", "sleep": "POST /sleep?level=1", "isSleeping": "GET /is_sleeping",
                          "drainSeconds": 0} for m, port in ports.items()]}
    (tmp_path / "waker.json").write_text(json.dumps(config))
    (tmp_path / "token").write_text(TOKEN)
    health = _free_port()
    env = {**os.environ, "WARM_SET_CONFIG": str(tmp_path / "waker.json"), "WARM_SET_POLL_SECONDS": "0.1",
           "WARM_SET_SERVICE_ACCOUNT_DIR": str(tmp_path), "WARM_SET_HEALTH_PORT": str(health),
           "KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(server.server_address[1])}
    waker = subprocess.Popen([sys.executable, "-B", str(WAKER)], env=env, cwd=tmp_path,
                             stderr=open(tmp_path / "waker.log", "w"))
    procs.append(waker)
    try:
        yield api, ports, health, waker, env
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=5)
        server.shutdown()


def test_it_wakes_what_is_missing_routes_to_it_and_puts_it_back_to_sleep(warm_set):
    api, ports, health, _, _ = warm_set
    chat = ports["chat"]
    assert _until(lambda: _http("127.0.0.1", health, "GET", "/healthz")[0] == 200)
    assert api.slices == {} and api.labelled("chat") == []  # nothing missing: nothing woken

    api.set("chat", desired=2, ready=1)
    assert _until(lambda: "chat-warm-set-l20" in api.slices)
    woken = api.labelled("chat")
    assert woken == ["warm-set-l20-0"]  # one missing, one woken, though two holders are free
    assert _sleeping("127.0.0.1", chat) is False and _sleeping("127.0.0.2", chat) is True
    assert _sleeping("127.0.0.1", ports["code"]) is True and api.labelled("code") == []
    piece = api.slices["chat-warm-set-l20"]
    assert piece["metadata"]["labels"] == {"kubernetes.io/service-name": "chat",
                                           "endpointslice.kubernetes.io/managed-by": MANAGER}
    assert piece["addressType"] == "IPv4"
    assert piece["ports"] == [{"name": "http", "port": chat, "protocol": "TCP", "appProtocol": "http"}]
    assert [(e["addresses"], e["targetRef"]["name"], e["conditions"]["ready"]) for e in piece["endpoints"]] == [
        (["127.0.0.1"], "warm-set-l20-0", True)]
    time.sleep(0.5)
    assert api.labelled("chat") == ["warm-set-l20-0"] and _sleeping("127.0.0.2", chat) is True  # still one

    api.set("chat", desired=2, ready=2)  # the model's own replica is ready: the woken one goes back to sleep
    assert _until(lambda: api.labelled("chat") == [])
    assert "chat-warm-set-l20" not in api.slices
    assert _sleeping("127.0.0.1", chat) is True
    # the slice went before the label: the Service stopped sending before the replica slept
    calls = api.requests
    deleted = calls.index(("DELETE", f"/apis/discovery.k8s.io/v1/namespaces/{NS}/endpointslices/chat-warm-set-l20"))
    unlabelled = max(i for i, c in enumerate(calls) if c == ("PATCH", f"/api/v1/namespaces/{NS}/pods/warm-set-l20-0"))
    assert deleted < unlabelled
    # only what the Role grants: list and patch pods, get Deployments and HPAs, write its own slices
    assert {m for m, p in calls if "/pods" in p} <= {"GET", "PATCH"}
    assert {m for m, p in calls if "/deployments/" in p or "/horizontalpodautoscalers/" in p} == {"GET"}
    assert _http("127.0.0.1", health, "GET", "/healthz") == (200, "ok\n")


def test_one_model_at_a_time_per_holder_and_no_more_than_missing(warm_set):
    api, ports, _, _, _ = warm_set
    api.set("chat", desired=5, ready=1)  # four missing, two holders
    api.set("code", desired=2, ready=1)  # one missing, but both holders are taken by chat
    assert _until(lambda: len(api.labelled("chat")) == 2)
    time.sleep(0.5)
    assert api.labelled("code") == [] and "code-warm-set-l20" not in api.slices
    assert [e["addresses"] for e in api.slices["chat-warm-set-l20"]["endpoints"]] == [["127.0.0.1"], ["127.0.0.2"]]
    assert all(_sleeping(ip, ports["code"]) is True for ip in HOLDER_IPS)

    api.set("chat", desired=5, ready=4)  # one missing now: one holder goes back to sleep and code gets it
    assert _until(lambda: len(api.labelled("chat")) == 1 and len(api.labelled("code")) == 1)
    assert _until(lambda: len(api.slices.get("chat-warm-set-l20", {}).get("endpoints", [])) == 1)
    chat_ip = api.pods[api.labelled("chat")[0]]["status"]["podIP"]
    code_ip = api.pods[api.labelled("code")[0]]["status"]["podIP"]
    assert chat_ip != code_ip
    assert _sleeping(code_ip, ports["chat"]) is True and _sleeping(code_ip, ports["code"]) is False


def test_an_api_server_it_cannot_verify_is_not_trusted_and_healthz_says_so(warm_set, tmp_path):
    api, _, health, waker, env = warm_set
    # a CA that did not sign the server's certificate: every pass fails, nothing is woken
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-days", "1", "-subj", "/CN=other", "-keyout", str(tmp_path / "other.pem"),
                    "-out", str(tmp_path / "ca.crt")], check=True, capture_output=True)
    waker.terminate()
    waker.wait(timeout=5)
    api.set("chat", desired=2, ready=1)
    untrusting = subprocess.Popen([sys.executable, "-B", str(WAKER)], env=env, cwd=tmp_path,
                                  stderr=subprocess.PIPE, text=True)
    try:
        assert _until(lambda: _http("127.0.0.1", health, "GET", "/healthz")[0] == 503)
        time.sleep(0.5)
        assert api.labelled("chat") == [] and api.slices == {}
    finally:
        untrusting.terminate()
        _, err = untrusting.communicate(timeout=5)
    assert "CERTIFICATE_VERIFY_FAILED" in err
