"""A local stand-in for the Kubernetes API server that answers from recorded JSON responses.

Layout of ``tests/fixtures/k8s_api/<stack>/<variant>/``: one file per request path, each URL segment
percent-encoded (``pods/*/m`` -> ``pods/%2A/m.json``). ``healthy`` holds every response of a working cluster;
a broken variant holds only the responses that differ and is looked up first. A recorded ``Status`` object is
served with its ``code`` (404, 503), and any path without a file gets the API server's 404 ``Status``.

The server binds 127.0.0.1 on a free port, handles each request on its own thread with a socket timeout,
and is shut down by the ``fake_api`` fixture (conftest) that started it.
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote, urlsplit

from kubernetes import client as k8s
from support import REPO

FIXTURES = REPO / "tests" / "fixtures" / "k8s_api"
STACKS = REPO / "stacks"
LIST_KINDS_FILTERED = ("NodeList", "PodList")
"""Lists the API server filters by ``labelSelector``; metric lists are filtered by the adapter itself."""


def fixture_file(stack: str, variant: str, path: str) -> Path | None:
    segments = [quote(unquote(s), safe="") for s in path.strip("/").split("/")]
    for v in (variant, "healthy"):
        candidate = FIXTURES.joinpath(stack, v, *segments[:-1], segments[-1] + ".json")
        if candidate.is_file():
            return candidate
    return None


def _matches(labels: dict, selector: str) -> bool:
    for term in filter(None, selector.split(",")):
        key, _, value = term.partition("=")
        if labels.get(key) != value:
            return False
    return True


def _not_found(path: str) -> dict:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "the server could not find the requested resource", "reason": "NotFound",
            "details": {}, "code": 404}


class FakeApiServer:
    def __init__(self, stack: str, variant: str = "healthy"):
        self.stack, self.variant = stack, variant
        self.requests: list[tuple[str, dict]] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            timeout = 5

            def do_GET(self):  # noqa: N802 - http.server API
                parts = urlsplit(self.path)
                query = parse_qs(parts.query)
                with outer.lock:
                    outer.requests.append((unquote(parts.path), query))
                    stack, variant = outer.stack, outer.variant
                found = fixture_file(stack, variant, parts.path)
                doc = json.loads(found.read_text()) if found else _not_found(parts.path)
                code = doc.get("code", 200) if doc.get("kind") == "Status" else 200
                selector = (query.get("labelSelector") or [""])[0]
                if selector and doc.get("kind") in LIST_KINDS_FILTERED:
                    doc = dict(doc, items=[i for i in doc["items"]
                                           if _matches(i["metadata"].get("labels") or {}, selector)])
                body = json.dumps(doc).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def use(self, variant: str) -> None:
        with self.lock:
            self.variant = variant

    def paths(self) -> list[str]:
        with self.lock:
            return [p for p, _ in self.requests]

    def start(self) -> "FakeApiServer":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


def api_client_for(server: FakeApiServer) -> k8s.ApiClient:
    configuration = k8s.Configuration()
    configuration.host = server.url
    configuration.api_key = {"BearerToken": "test-token"}
    configuration.api_key_prefix = {"BearerToken": "Bearer"}
    configuration.retries = 0
    return k8s.ApiClient(configuration)


def write_kubeconfig(tmp_path: Path, server_url: str, context: str = "verify-test") -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": context,
        "clusters": [{"name": "fixture", "cluster": {"server": server_url}}],
        "users": [{"name": "tester", "user": {"token": "test-token"}}],
        "contexts": [{"name": context, "context": {"cluster": "fixture", "user": "tester"}}],
    }))
    return path
