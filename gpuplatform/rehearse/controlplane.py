"""A local Kubernetes control plane on loopback from the real engines: etcd, kube-apiserver,
kube-controller-manager, kube-scheduler and kwok (nodes and pod lifecycles without a kubelet).

Shaped like a real cluster where it matters to what the package applies: TLS everywhere, client certificates,
``--authorization-mode=Node,RBAC``, no anonymous access, service-account tokens signed by the API server, the
aggregation layer's front-proxy credentials (an APIService such as the metrics adapter's registers as on a real
cluster). What this machine cannot have is left out and said: no kube-proxy (Service IPs are allocated, not routed), no
admission webhooks (their servers are kwok pods that serve nothing), and the API server's own endpoint is not
reconciled (``--endpoint-reconciler-type=none``).

Every component runs in a network namespace of its own (``ip netns``), reached from the host through a veth pair of
a /30 of its own: the only routes inside are that link and loopback, so nothing the control plane dials (a
webhook, an aggregated API, a pod address kwok made up) can leave the machine; it fails at once instead.

Every wait has a bound; a process that exits early is reported with the last lines of its log.
"""
from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

SERVICE_CIDR = "10.96.0.0/16"
POD_CIDR = "10.244.0.0/16"
KWOK_STAGES = Path(__file__).with_name("kwok-stages.yaml")
KWOK_NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
"""The annotation kwok selects the nodes it manages by (kwok ``--manage-nodes-with-annotation-selector``)."""


class ControlPlaneError(RuntimeError):
    """The control plane did not come up, or a component stopped."""


ETCD_PORT, ETCD_PEER_PORT, APISERVER_PORT = 2379, 2380, 6443
"""Inside the control plane's own network namespace every port is free."""


@dataclass
class Isolation:
    """A network namespace and a veth pair: the host side ``host_ip``, the namespace side ``ip`` (a /30 in
    10.213.0.0/16 that no interface of the machine uses)."""

    name: str = ""
    host_ip: str = ""
    ip: str = ""

    def up(self) -> None:
        import ipaddress
        import random

        used = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True, timeout=10).stdout
        for _ in range(50):
            net = ipaddress.ip_network(f"10.213.{random.randrange(256)}.{4 * random.randrange(64)}/30")
            hosts = [str(h) for h in net.hosts()]
            if hosts[0] not in used and hosts[1] not in used:
                break
        else:
            raise ControlPlaneError("no free /30 in 10.213.0.0/16 for the control plane's network")
        self.host_ip, self.ip = hosts
        tag = f"{os.getpid() % 100000}{random.randrange(100)}"
        self.name = f"gpuplatform-cp-{tag}"
        host_end, ns_end = f"gpcp{tag}h", f"gpcp{tag}n"
        steps = [["ip", "netns", "add", self.name],
                 ["ip", "link", "add", host_end, "type", "veth", "peer", "name", ns_end],
                 ["ip", "link", "set", ns_end, "netns", self.name],
                 ["ip", "addr", "add", f"{self.host_ip}/30", "dev", host_end],
                 ["ip", "link", "set", host_end, "up"],
                 self.inside(["ip", "addr", "add", f"{self.ip}/30", "dev", ns_end]),
                 self.inside(["ip", "link", "set", ns_end, "up"]),
                 self.inside(["ip", "link", "set", "lo", "up"])]
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True, timeout=20)
            if done.returncode:
                self.down()
                raise ControlPlaneError(f"the control plane's network namespace could not be made ({' '.join(step)}:"
                                        f" {done.stderr.strip()}); it needs root or CAP_NET_ADMIN and iproute2")

    def inside(self, command: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.name, *command]

    def down(self) -> None:
        if self.name:  # deleting the namespace deletes its end of the veth pair, and so the pair
            subprocess.run(["ip", "netns", "del", self.name], capture_output=True, timeout=20)


def _run(cmd: list[str], cwd: Path) -> None:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=60)
    if done.returncode:
        raise ControlPlaneError(f"{' '.join(cmd[:3])}… failed: {done.stderr.strip()[-400:]}")


# ------------------------------------------------------------------------------------------------ certificates
@dataclass
class Pki:
    """A cluster CA, a front-proxy CA and the certificates of every component, made with openssl (EC P-256)."""

    dir: Path

    def _key(self, name: str) -> None:
        _run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
              "-out", f"{name}.key"], self.dir)

    def ca(self, name: str, subject: str) -> None:
        self._key(name)
        _run(["openssl", "req", "-x509", "-new", "-key", f"{name}.key", "-subj", subject, "-days", "2",
              "-out", f"{name}.crt", "-addext", "basicConstraints=critical,CA:TRUE",
              "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"], self.dir)

    def cert(self, name: str, ca: str, subject: str, *, server_names: tuple = (), client: bool = True) -> None:
        self._key(name)
        _run(["openssl", "req", "-new", "-key", f"{name}.key", "-subj", subject, "-out", f"{name}.csr"], self.dir)
        usage = ",".join((["clientAuth"] if client else []) + (["serverAuth"] if server_names else []))
        ext = [f"extendedKeyUsage={usage}", "keyUsage=critical,digitalSignature,keyEncipherment",
               "basicConstraints=critical,CA:FALSE"]
        if server_names:
            ext.append("subjectAltName=" + ",".join(server_names))
        (self.dir / f"{name}.ext").write_text("\n".join(ext) + "\n")
        _run(["openssl", "x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
              "-CAcreateserial", "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.crt"], self.dir)

    def path(self, name: str) -> str:
        return str(self.dir / name)


def make_pki(directory: Path, address: str = "127.0.0.1") -> Pki:
    directory.mkdir(parents=True, exist_ok=True)
    pki = Pki(directory)
    pki.ca("ca", "/CN=gpuplatform-rehearsal-ca")
    pki.ca("front-proxy-ca", "/CN=gpuplatform-rehearsal-front-proxy-ca")
    pki.cert("apiserver", "ca", "/CN=kube-apiserver", client=False,
             server_names=(f"IP:{address}", "IP:127.0.0.1", "DNS:localhost", "DNS:kubernetes", "DNS:kubernetes.default",
                           "DNS:kubernetes.default.svc", "IP:10.96.0.1"))
    pki.cert("front-proxy-client", "front-proxy-ca", "/CN=front-proxy-client")
    # The deployer: the kubeconfig a platform engineer runs `pulumi up` with (ACK's admin kubeconfig is the same)
    pki.cert("admin", "ca", "/O=system:masters/CN=gpuplatform-rehearsal-admin")
    pki.cert("controller-manager", "ca", "/CN=system:kube-controller-manager")
    pki.cert("scheduler", "ca", "/CN=system:kube-scheduler")
    # kwok stands in for every kubelet: it writes node and pod status, which the Node authorizer grants only to
    # each node's own identity, so it runs as an administrator of the test cluster
    pki.cert("kwok", "ca", "/O=system:masters/CN=kwok-controller")
    _run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "sa.key"],
         directory)
    _run(["openssl", "pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub"], directory)
    return pki


def kubeconfig(server: str, pki: Pki, user: str) -> dict:
    return {
        "apiVersion": "v1", "kind": "Config", "current-context": "rehearsal",
        "clusters": [{"name": "rehearsal", "cluster": {"server": server, "certificate-authority": pki.path("ca.crt")}}],
        "users": [{"name": user, "user": {"client-certificate": pki.path(f"{user}.crt"),
                                          "client-key": pki.path(f"{user}.key")}}],
        "contexts": [{"name": "rehearsal", "context": {"cluster": "rehearsal", "user": user}}],
    }


# ------------------------------------------------------------------------------------------------ processes
@dataclass
class Component:
    name: str
    process: subprocess.Popen
    log: Path

    def tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


@dataclass
class LocalControlPlane:
    """Start with :meth:`start`, stop with :meth:`stop` (or use as a context manager)."""

    engines: Path
    workdir: Path
    startup_timeout: float = 90.0
    components: list[Component] = field(default_factory=list)
    server: str = ""
    network: Isolation = field(default_factory=Isolation)
    pki: Optional[Pki] = None
    admin_kubeconfig: Optional[Path] = None
    kwok_stages: Path = KWOK_STAGES
    """The pod and node lifecycles kwok plays (the real loop plays the simulator's start-up delays)."""

    def __enter__(self) -> "LocalControlPlane":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    # -------------------------------------------------------------------------------------------- lifecycle
    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        for binary in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"):
            if not (self.engines / binary).exists():
                raise ControlPlaneError(f"{binary} is not in {self.engines}: run `make engines`")
        try:
            self.network.up()
            self.pki = make_pki(self.workdir / "pki", self.network.ip)
            self._start_etcd()
            self._start_apiserver()
            self._write_kubeconfigs()
            self._start("kube-controller-manager", [
                "--kubeconfig", str(self.workdir / "controller-manager.kubeconfig"),
                "--authentication-kubeconfig", str(self.workdir / "controller-manager.kubeconfig"),
                "--authorization-kubeconfig", str(self.workdir / "controller-manager.kubeconfig"),
                "--bind-address", "127.0.0.1", "--secure-port", "10257",
                "--leader-elect=false", "--use-service-account-credentials=true",
                "--service-account-private-key-file", self.pki.path("sa.key"),
                "--root-ca-file", self.pki.path("ca.crt"),
                "--cluster-signing-cert-file", self.pki.path("ca.crt"),
                "--cluster-signing-key-file", self.pki.path("ca.key"),
                "--service-cluster-ip-range", SERVICE_CIDR,
                # the HPA controller syncs every 15 s, its default (kube-controller-manager reference)
                "--horizontal-pod-autoscaler-sync-period=15s",
            ])
            self._start("kube-scheduler", [
                "--kubeconfig", str(self.workdir / "scheduler.kubeconfig"),
                "--authentication-kubeconfig", str(self.workdir / "scheduler.kubeconfig"),
                "--authorization-kubeconfig", str(self.workdir / "scheduler.kubeconfig"),
                "--bind-address", "127.0.0.1", "--secure-port", "10259", "--leader-elect=false",
            ])
            self._start("kwok", [
                "--kubeconfig", str(self.workdir / "kwok.kubeconfig"),
                "--config", str(self.kwok_stages),
                # the node's heartbeat is its lease, renewed as a kubelet renews it
                "--node-lease-duration-seconds", "40",
                "--manage-all-nodes=false",
                "--manage-nodes-with-annotation-selector", "=".join(KWOK_NODE_ANNOTATION),
                "--cidr", POD_CIDR, "--node-ip", "10.0.0.1",
                "--server-address", "127.0.0.1:10247",
            ])
            self.wait_for(lambda: self._ready_controllers(), "the controllers and the scheduler to start")
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for component in reversed(self.components):
            if component.process.poll() is None:
                component.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for component in reversed(self.components):
            try:
                component.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                component.process.kill()
                component.process.wait(timeout=5)
        self.components.clear()
        self.network.down()

    def check_running(self) -> None:
        for component in self.components:
            if component.process.poll() is not None:
                raise ControlPlaneError(f"{component.name} exited ({component.process.returncode}):\n"
                                        f"{component.tail()}")

    def wait_for(self, condition, what: str, timeout: Optional[float] = None) -> None:
        deadline = time.monotonic() + (timeout or self.startup_timeout)
        last = None
        while time.monotonic() < deadline:
            self.check_running()
            try:
                if condition():
                    return
            except (OSError, urllib.error.URLError, ssl.SSLError, ValueError) as exc:
                last = exc
            time.sleep(0.5)
        raise ControlPlaneError(f"timed out after {timeout or self.startup_timeout:.0f} s waiting for {what}"
                                + (f" (last error: {last})" if last else ""))

    # -------------------------------------------------------------------------------------------- components
    def _start(self, name: str, args: list[str]) -> Component:
        log = self.workdir / f"{name}.log"
        handle = log.open("wb")
        process = subprocess.Popen(self.network.inside([str(self.engines / name), *args]), stdout=handle,
                                   stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, cwd=self.workdir, start_new_session=True)
        handle.close()
        component = Component(name, process, log)
        self.components.append(component)
        return component

    def _start_etcd(self) -> None:
        self.etcd_url = f"http://127.0.0.1:{ETCD_PORT}"
        peer = f"http://127.0.0.1:{ETCD_PEER_PORT}"
        self._start("etcd", [
            "--name", "rehearsal", "--data-dir", str(self.workdir / "etcd"),
            "--listen-client-urls", self.etcd_url, "--advertise-client-urls", self.etcd_url,
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"rehearsal={peer}",
            # a throwaway store: durability buys nothing and costs seconds per write burst
            "--unsafe-no-fsync", "--log-level", "warn",
        ])  # its health is part of the API server's /readyz

    def _start_apiserver(self) -> None:
        self.server = f"https://{self.network.ip}:{APISERVER_PORT}"
        p = self.pki.path
        self._start("kube-apiserver", [
            "--etcd-servers", self.etcd_url,
            "--bind-address", "0.0.0.0", "--secure-port", str(APISERVER_PORT),
            "--advertise-address", self.network.ip,
            "--endpoint-reconciler-type", "none",
            "--tls-cert-file", p("apiserver.crt"), "--tls-private-key-file", p("apiserver.key"),
            "--client-ca-file", p("ca.crt"),
            "--anonymous-auth=false", "--authorization-mode", "Node,RBAC",
            "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
            "--service-account-key-file", p("sa.pub"), "--service-account-signing-key-file", p("sa.key"),
            "--service-cluster-ip-range", SERVICE_CIDR,
            # the admission plugins on by default, and NodeRestriction as every production cluster has it; not the
            # webhooks, whose servers are kwok pods that serve nothing
            "--enable-admission-plugins", "NodeRestriction",
            "--disable-admission-plugins", "MutatingAdmissionWebhook,ValidatingAdmissionWebhook",
            # GPU agents (dcgm-exporter, device plugins) are privileged DaemonSets; Pod Security admission
            # still applies each namespace's level
            "--allow-privileged=true",
            "--requestheader-client-ca-file", p("front-proxy-ca.crt"),
            "--requestheader-allowed-names", "front-proxy-client",
            "--requestheader-username-headers", "X-Remote-User",
            "--requestheader-group-headers", "X-Remote-Group",
            "--requestheader-extra-headers-prefix", "X-Remote-Extra-",
            "--proxy-client-cert-file", p("front-proxy-client.crt"),
            "--proxy-client-key-file", p("front-proxy-client.key"),
            "--enable-aggregator-routing=true",
        ])
        self.wait_for(lambda: self.get("/readyz") == "ok", "kube-apiserver to be ready (/readyz)")

    def _write_kubeconfigs(self) -> None:
        import yaml

        for user in ("admin", "controller-manager", "scheduler", "kwok"):
            path = self.workdir / f"{user}.kubeconfig"
            path.write_text(yaml.safe_dump(kubeconfig(self.server, self.pki, user)))
            path.chmod(0o600)
        self.admin_kubeconfig = self.workdir / "admin.kubeconfig"

    # -------------------------------------------------------------------------------------------- API access
    def _context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=self.pki.path("ca.crt"))
        ctx.load_cert_chain(self.pki.path("admin.crt"), self.pki.path("admin.key"))
        return ctx

    def request(self, method: str, path: str, body: Optional[dict] = None, content_type: str = "application/json",
                timeout: float = 10) -> tuple[int, dict | str]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server + path, data=data, method=method,
                                     headers={"Content-Type": content_type, "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, context=self._context(), timeout=timeout) as resp:
                raw = resp.read().decode()
                status = resp.status
        except urllib.error.HTTPError as err:
            raw, status = err.read().decode(), err.code
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, raw

    def get(self, path: str):
        status, body = self.request("GET", path)
        if status != 200:
            raise ValueError(f"GET {path}: {status} {body}")
        return body

    def _ready_controllers(self) -> bool:
        # the controller manager's service-account controller makes `default` in every namespace it sees
        status, _ = self.request("GET", "/api/v1/namespaces/default/serviceaccounts/default")
        return status == 200

    def environment(self) -> dict:
        """Environment for a client of this control plane (kubectl, the Pulumi kubernetes provider)."""
        return {"KUBECONFIG": str(self.admin_kubeconfig)}
