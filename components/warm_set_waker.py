"""The program a pool's waker runs (components/warm_set_objects.py ships it in the waker's ConfigMap and runs it on
catalogs/images.py ``PYTHON_IMAGE`` unless ``warmSet.waker.image`` overrides it): it wakes a sleeping replica in a
holder when its model needs capacity and puts it back to sleep once the model's own replicas serve, as
docs/model-startup.md, "Who wakes a sleeping replica", states.

Standard library only, Python 3.8 or later. It reads ``$WARM_SET_CONFIG`` (``waker.json``) and talks to the API
server with the pod's service-account token, verifying the server against the service account's CA (never without
verification). It asks for nothing beyond the Role rendered beside it: ``list`` and ``patch`` on pods (the holders,
by their selector), ``get`` on the models' Deployments and HPAs by name, ``create`` on EndpointSlices and ``get``,
``update`` and ``delete`` on its own slices by name. The Role grants ``get`` only on Deployments and HPAs, not
``watch``, so it reads them every ``WARM_SET_POLL_SECONDS`` (default 2 s). It writes no file (the container's root
file system is read-only) and logs to standard error.

Each pass, per model: ``missing`` = the HPA's ``status.desiredReplicas`` - the Deployment's
``status.readyReplicas``; holders labelled ``<awakeLabel>: <model>`` count as awake for it. While fewer are awake
than are missing, it wakes the model in a Ready holder without the label (``POST /wake_up``, polls
``GET /is_sleeping`` until false, labels the pod); while more are awake than are missing, it takes one out of the
model's EndpointSlice, waits the model's drain (``drainSeconds``), puts it to sleep (``POST /sleep?level=N``,
confirmed by ``GET /is_sleeping``) and removes the label. The slice it writes lists every holder awake for the model
and is deleted when none is. ``GET /healthz`` on ``WARM_SET_HEALTH_PORT`` (default 8080) answers 200 while its last
pass over the API succeeded recently, 503 otherwise.
"""
import json
import os
import socket
import ssl
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
WAKE_TIMEOUT_SECONDS = 300.0
"""How long a wake-up may take before the holder is given up (a level-2 wake reads the weights again)."""
STATE_POLL_SECONDS = 0.2
HEALTHY_PASSES = 5
"""/healthz fails once this many polls' time has passed without a successful pass."""


def log(message):
    sys.stderr.write("%s %s\n" % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), message))
    sys.stderr.flush()


class ApiError(Exception):
    def __init__(self, status, message):
        super().__init__("%s: %s" % (status, message))
        self.status = status


class Api:
    """The API server as the pod's service account reaches it: host and port from the variables the kubelet sets,
    the token read again for each request (bound tokens are rotated), the server verified against ``ca.crt``."""

    def __init__(self, account_dir):
        host = os.environ["KUBERNETES_SERVICE_HOST"]
        if ":" in host:
            host = "[%s]" % host
        self.base = "https://%s:%s" % (host, os.environ.get("KUBERNETES_SERVICE_PORT", "443"))
        self.token_file = os.path.join(account_dir, "token")
        self.tls = ssl.create_default_context(cafile=os.path.join(account_dir, "ca.crt"))

    def call(self, method, path, body=None, content_type="application/json"):
        with open(self.token_file) as f:
            token = f.read().strip()
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Authorization", "Bearer " + token)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=10, context=self.tls) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")
            try:
                detail = json.loads(detail).get("message", detail)
            except ValueError:
                pass
            raise ApiError(exc.code, "%s %s: %s" % (method, path, detail))
        return json.loads(raw) if raw else {}


# warm_set_holder.py has its own request and state reading: each program ships alone in its own ConfigMap and
# runs in a different image, so neither can import the other or the package.
def server_call(ip, port, endpoint, timeout=10.0):
    """(status, body) of ``METHOD /path`` on a holder's replica; (None, '') when it does not answer."""
    method, path = endpoint.split(None, 1)
    host = "[%s]" % ip if ":" in ip else ip
    req = urllib.request.Request("http://%s:%d%s" % (host, port, path), method=method,
                                 data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, ""
    except (OSError, ValueError):
        return None, ""


def is_sleeping(ip, model):
    """True or False as the replica's state endpoint answers, None when it does not."""
    status, body = server_call(ip, model["holderPort"], model["isSleeping"])
    if status != 200:
        return None
    try:
        return bool(json.loads(body)["is_sleeping"])
    except (ValueError, KeyError, TypeError):
        return None


def wait_state(ip, model, sleeping, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if is_sleeping(ip, model) is sleeping:
            return True
        time.sleep(STATE_POLL_SECONDS)
    return False


def pod_ready(pod):
    if pod.get("metadata", {}).get("deletionTimestamp") or not pod.get("status", {}).get("podIP"):
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in pod.get("status", {}).get("conditions", []))


class Waker:
    def __init__(self, config, api):
        self.config = config
        self.api = api
        self.ns = urllib.parse.quote(config["namespace"])
        self.awake_label = config["holders"]["awakeLabel"]
        self.selector = ",".join("%s=%s" % kv for kv in sorted(config["holders"]["selector"].items()))
        self.last_pass = None
        """time.monotonic() of the last pass that read and acted without an API error."""

    # --- the API reads and writes the Role allows ---

    def holders(self):
        path = "/api/v1/namespaces/%s/pods?labelSelector=%s" % (self.ns, urllib.parse.quote(self.selector))
        return self.api.call("GET", path).get("items", [])

    def missing(self, model):
        hpa = self.api.call("GET", "/apis/autoscaling/v2/namespaces/%s/horizontalpodautoscalers/%s" % (
            self.ns, urllib.parse.quote(model["horizontalPodAutoscaler"])))
        deployment = self.api.call("GET", "/apis/apps/v1/namespaces/%s/deployments/%s" % (
            self.ns, urllib.parse.quote(model["deployment"])))
        desired = hpa.get("status", {}).get("desiredReplicas") or 0
        ready = deployment.get("status", {}).get("readyReplicas") or 0
        return desired - ready

    def label(self, pod, model_name):
        """Sets (or, with None, removes) the awake label: a JSON merge patch of the pod's labels only."""
        path = "/api/v1/namespaces/%s/pods/%s" % (self.ns, urllib.parse.quote(pod["metadata"]["name"]))
        self.api.call("PATCH", path, {"metadata": {"labels": {self.awake_label: model_name}}},
                      content_type="application/merge-patch+json")

    def write_slice(self, model, pods):
        """The model's EndpointSlice listing ``pods`` (its awake holders); deleted when there are none."""
        spec = model["endpointSlice"]
        path = "/apis/discovery.k8s.io/v1/namespaces/%s/endpointslices" % self.ns
        named = "%s/%s" % (path, urllib.parse.quote(spec["name"]))
        try:
            current = self.api.call("GET", named)
        except ApiError as exc:
            if exc.status != 404:
                raise
            current = None
        if not pods:
            if current is not None:
                self.api.call("DELETE", named)
            return
        ips = [p["status"]["podIP"] for p in pods]
        body = {
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": spec["name"], "namespace": self.config["namespace"], "labels": {
                "kubernetes.io/service-name": model["service"],
                "endpointslice.kubernetes.io/managed-by": self.config["endpointSliceManagedBy"]}},
            "addressType": "IPv6" if ":" in ips[0] else "IPv4",
            "ports": spec["ports"],
            "endpoints": [dict({"addresses": [p["status"]["podIP"]],
                                "conditions": {"ready": True, "serving": True, "terminating": False},
                                "targetRef": {"kind": "Pod", "namespace": self.config["namespace"],
                                              "name": p["metadata"]["name"], "uid": p["metadata"].get("uid", "")}},
                               **({"nodeName": p["spec"]["nodeName"]} if p.get("spec", {}).get("nodeName") else {}))
                          for p in pods],
        }
        if current is None:
            self.api.call("POST", path, body)
            return
        if [e.get("addresses") for e in current.get("endpoints") or []] == [[ip] for ip in ips]:
            return
        body["metadata"]["resourceVersion"] = current["metadata"].get("resourceVersion", "")
        self.api.call("PUT", named, body)

    # --- waking and putting back to sleep ---

    def wake(self, pod, model):
        ip, name = pod["status"]["podIP"], pod["metadata"]["name"]
        log("waking %s in %s" % (model["model"], name))
        status, _ = server_call(ip, model["holderPort"], model["wake"])
        if status != 200 or not wait_state(ip, model, False, WAKE_TIMEOUT_SECONDS):
            log("%s in %s did not wake (wake answered %s)" % (model["model"], name, status))
            return False
        self.label(pod, model["model"])
        pod["metadata"].setdefault("labels", {})[self.awake_label] = model["model"]
        return True

    def put_to_sleep(self, pod, model, still_awake):
        ip, name = pod["status"]["podIP"], pod["metadata"]["name"]
        log("putting %s in %s back to sleep" % (model["model"], name))
        self.write_slice(model, still_awake)
        time.sleep(model.get("drainSeconds", 0))
        status, _ = server_call(ip, model["holderPort"], model["sleep"], timeout=60.0)
        if status != 200 or not wait_state(ip, model, True, WAKE_TIMEOUT_SECONDS):
            # left labelled: its GPU memory may still be taken, so no other model is woken in it
            log("%s in %s did not go to sleep (sleep answered %s)" % (model["model"], name, status))
            return
        self.label(pod, None)

    def reconcile(self):
        pods = self.holders()
        for model in self.config["models"]:
            mine = [p for p in pods if p["metadata"].get("labels", {}).get(self.awake_label) == model["model"]]
            awake = [p for p in mine if pod_ready(p)]
            missing = max(self.missing(model), 0)
            free = [p for p in pods if pod_ready(p) and self.awake_label not in p["metadata"].get("labels", {})]
            while len(awake) < missing and free:
                pod = free.pop(0)
                if self.wake(pod, model):
                    awake.append(pod)
            while len(awake) > missing:
                pod = awake.pop()
                self.put_to_sleep(pod, model, awake)
            self.write_slice(model, awake)

    def run(self, poll_seconds):
        while True:
            try:
                self.reconcile()
                self.last_pass = time.monotonic()
            except (ApiError, OSError, ValueError, KeyError) as exc:
                log("pass failed: %s" % exc)
            time.sleep(poll_seconds)


def serve_health(waker, port, poll_seconds):
    class Health(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            fresh = (waker.last_pass is not None
                     and time.monotonic() - waker.last_pass < HEALTHY_PASSES * max(poll_seconds, 2.0))
            status = 200 if self.path == "/healthz" and fresh else (404 if self.path != "/healthz" else 503)
            body = b"ok\n" if status == 200 else b""
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    class Server(ThreadingHTTPServer):
        address_family = socket.AF_INET6 if socket.has_ipv6 else socket.AF_INET
        daemon_threads = True

        def server_bind(self):
            if self.address_family == socket.AF_INET6:
                self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            super().server_bind()

    try:
        server = Server(("::" if Server.address_family == socket.AF_INET6 else "", port), Health)
    except OSError:
        Server.address_family = socket.AF_INET
        server = Server(("", port), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()


def main():
    with open(os.environ["WARM_SET_CONFIG"]) as f:
        config = json.load(f)
    poll = float(os.environ.get("WARM_SET_POLL_SECONDS", "2"))
    waker = Waker(config, Api(os.environ.get("WARM_SET_SERVICE_ACCOUNT_DIR", SERVICE_ACCOUNT_DIR)))
    serve_health(waker, int(os.environ.get("WARM_SET_HEALTH_PORT", "8080")), poll)
    log("waking the warm set of pool %s: %s" % (config["pool"], ", ".join(m["model"] for m in config["models"])))
    waker.run(poll)


if __name__ == "__main__":
    main()
