"""The real autoscaling chain of one scenario, on the local control plane (gpuplatform/rehearse/controlplane.py):

kwok pods of the workload's Deployment (the package's own manifest builders) starting with the simulator's start-up
delays (kwok stages: the image pull, then the model load rounded up to the startup probe's period) -> one emulated
server per pod (:mod:`gpuplatform.realloop.emulator`, with the load generator) -> Prometheus (the release the
stack deploys, built by engines/build) scraping them at the stack's interval -> the real prometheus-adapter with the
package's generated rules and RBAC, registered as an APIService served at the control plane's own address -> the
real HPA controller in kube-controller-manager, syncing the package's HPA every 15 s -> the Deployment's replicas; for a
KEDA workload, the package's ScaledObject on KEDA's operator (which polls its triggers in Prometheus, scales 0 <-> 1
and owns the HPA) and metrics API server (the external metrics APIService that HPA reads), the load generator also
playing the ingress controller's request counter that wakes it (:meth:`Chain._keda`); with a scenario's node
autoscaling, Karpenter with its kwok cloud provider adding nodes of the pool's shape for the pods the
scheduler could not place (:func:`karpenter_objects`).

What it records, every half second: the Deployment's replicas, its Ready pods, the HPA's status and the pool's
nodes (requested: the standing nodes and Karpenter's NodeClaims; Ready and schedulable); afterwards,
from Prometheus, when each HPA sync asked for the metric (the adapter's instant queries, from Prometheus' query log;
with KEDA, its scaler's, told apart into its polls and its HPA's syncs) and when each pod's target was scraped (the
timestamps of its ``up`` samples).
"""
from __future__ import annotations

import base64
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import yaml

from gpuplatform.rehearse.controlplane import LocalControlPlane

ADAPTER_PORT = 6444
"""The adapter's port at the control plane's address (the API server holds 6443 there)."""
PROMETHEUS_PORT = 9090
MONITORING_NS = "monitoring"
ADAPTER_NAME = "prometheus-adapter"
SAMPLE_S = 0.5
KARPENTER_METRICS_PORT, KARPENTER_PROBE_PORT = 18080, 18081
"""Karpenter's own metrics and health ports inside the control plane's namespace (its defaults, 8080 and 8081, are
left to the emulated servers)."""
KEDA_NS = "keda"
KEDA_METRICS_SERVER = "keda-operator-metrics-apiserver"
"""The Service name of KEDA's metrics API server (its chart's), behind the external metrics APIService."""
KEDA_API_PORT = 6445
"""KEDA's metrics API server at the control plane's address (the adapter holds 6444)."""
KEDA_GRPC_PORT = 9666
"""The operator's metrics service (gRPC, mutual TLS), which the metrics API server asks for each metric (KEDA's
default, ``--metrics-service-bind-address``)."""
KEDA_OPERATOR_METRICS_PORT, KEDA_OPERATOR_PROBE_PORT, KEDA_SERVER_METRICS_PORT = 18082, 18083, 18084
"""KEDA's own metrics and health ports (their defaults, 8080 and 8081, are left to the emulated servers)."""
INGRESS_TARGET = {"namespace": "ingress-nginx", "pod": "ingress-nginx-controller"}
"""The emulated ingress controller's target (its series carry the Ingress's own labels)."""
KWOK_NODE_CLASS = "gpu-pool"
UNREGISTERED_TAINT = "karpenter.sh/unregistered"
"""The taint Karpenter's kwok provider creates a node with and its registration removes (karpenter
``pkg/apis/v1`` ``UnregisteredNoExecuteTaint``)."""
KWOK_INSTANCE_OVERHEAD = {"cpu": 0.1, "memory": 10 * 2 ** 20}
"""What Karpenter's kwok provider reserves of every instance type (karpenter v1.14.1 ``kwok/cloudprovider/helpers.go``
``newInstanceType``: KubeReserved 100m CPU, 10Mi memory): added to the pool's allocatable so the node it creates
offers what the pool's nodes offer."""


class RealLoopError(RuntimeError):
    """A part of the real chain did not come up, or a tool it needs is missing."""


def prometheus_binary(engines: Path) -> Path:
    """The Prometheus the stack deploys (engines/versions.env ``PROMETHEUS_VERSION``, the release of
    catalogs/versions.py ``PROMETHEUS_VERSION["self-hosted"]``), from the engines' directory."""
    binary = engines / "prometheus"
    if not binary.exists():
        raise RealLoopError(f"prometheus is not in {engines}: run `make engines` (the real loop scrapes its emulated "
                            "servers with the Prometheus release the stack deploys)")
    return binary


# ------------------------------------------------------------------------------------------------ kwok stages
def kwok_stages(pull_s: float, load_s: float) -> str:
    """Node Ready at once; a scheduled pod's containers start ``pull_s`` after kwok sees it bound (the image pull)
    and it turns Ready ``load_s`` later (the model load up to the startup probe that passes); a pod being deleted
    goes at once."""
    base = (Path(__file__).resolve().parents[1] / "rehearse" / "kwok-stages.yaml").read_text()
    docs = [d for d in yaml.safe_load_all(base) if d]
    node_ready = next(d for d in docs if d["metadata"]["name"] == "rehearsal-node-ready")
    deleted = next(d for d in docs if d["metadata"]["name"] == "rehearsal-pod-deleted")
    running = {
        "apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Stage", "metadata": {"name": "real-loop-pod-started"},
        "spec": {
            "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
            "selector": {"matchExpressions": [
                {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"},
                {"key": ".status.phase", "operator": "In", "values": ["Pending"]}]},
            "delay": {"durationMilliseconds": int(pull_s * 1000)},
            "next": {"statusTemplate": _status_template(ready=False)},
        },
    }
    ready = {
        "apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Stage", "metadata": {"name": "real-loop-pod-ready"},
        "spec": {
            "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
            "selector": {"matchExpressions": [
                {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"},
                {"key": ".status.phase", "operator": "In", "values": ["Running"]},
                {"key": '.status.conditions.[] | select( .type == "Ready" ) | .status', "operator": "In",
                 "values": ["False"]}]},
            "delay": {"durationMilliseconds": int(load_s * 1000)},
            "next": {"statusTemplate": _status_template(ready=True)},
        },
    }
    return yaml.safe_dump_all([node_ready, running, ready, deleted], sort_keys=False)


def _status_template(ready: bool) -> str:
    flag = "true" if ready else "false"
    status = '"True"' if ready else '"False"'
    return f"""{{{{ $now := Now }}}}
phase: Running
startTime: {{{{ $now | Quote }}}}
conditions:
- {{type: PodScheduled, status: "True", lastTransitionTime: {{{{ $now | Quote }}}}}}
- {{type: Initialized, status: "True", lastTransitionTime: {{{{ $now | Quote }}}}}}
- {{type: ContainersReady, status: {status}, lastTransitionTime: {{{{ $now | Quote }}}}}}
- {{type: Ready, status: {status}, lastTransitionTime: {{{{ $now | Quote }}}}}}
containerStatuses:
{{{{ range .spec.containers }}}}
- name: {{{{ .name | Quote }}}}
  image: {{{{ .image | Quote }}}}
  ready: {flag}
  started: true
  restartCount: 0
  state: {{running: {{startedAt: {{{{ $now | Quote }}}}}}}}
{{{{ end }}}}
{{{{ with NodeIPsWith .spec.nodeName }}}}
hostIP: {{{{ index . 0 | Quote }}}}
{{{{ end }}}}
{{{{ with PodIPsWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) }}}}
podIP: {{{{ index . 0 | Quote }}}}
{{{{ end }}}}
"""


# ------------------------------------------------------------------------------------------------ Karpenter
def karpenter_objects(group, instance_type: str, added_nodes: int, gpus_per_node: int, registration_delay_s: int,
                      consolidate_after_s: int) -> tuple[list, dict, dict]:
    """Karpenter's kwok provider set up for one GPU pool (``group``: components/placement.py ``gpu_pool_groups``):
    the instance types file (``INSTANCE_TYPES_FILE_PATH``, read by karpenter v1.14.1
    ``kwok/cloudprovider/helpers.go`` ``ConstructInstanceTypes``), the KWOKNodeClass and the NodePool.

    - One instance type offering what one of the pool's nodes offers (its allocatable plus the provider's own
      reserve, :data:`KWOK_INSTANCE_OVERHEAD`), its GPUs included.
    - The node class delays each node's registration by ``registration_delay_s``: the kwok provider creates the
      Node that long after it launched the NodeClaim (``cloudprovider.go`` ``Create``: ``time.Sleep(
      nodeClass.Spec.NodeRegistrationDelay)``), which plays the node provisioning the simulator models.
    - The NodePool carries the pool's labels (those Karpenter lets a template set; the well-known ones are
      requirements) and taints; its limit is ``added_nodes`` nodes' GPUs: a NodePool has no minimum (its spec has
      ``limits`` only), so the pool's ``minNodes`` are standing nodes outside it and Karpenter adds at most
      ``maxNodes - minNodes``. An empty node goes after ``consolidate_after_s`` (``WhenEmpty``), the nearest to the
      cluster autoscaler's scale-down unneeded time."""
    from gpuplatform.rehearse.nodes import ASSUMED_NODE, _quantity, node_resources

    resources, _assumed = node_resources(group)
    for name, extra in KWOK_INSTANCE_OVERHEAD.items():
        base = (group.allocatable or {}).get(name)
        resources[name] = _quantity(name, (ASSUMED_NODE[name] if base is None else base) + extra)
    well_known = {"kubernetes.io/os", "kubernetes.io/arch", "topology.kubernetes.io/zone"}
    instance_types = [{
        "name": instance_type, "architecture": group.labels.get("kubernetes.io/arch", "amd64"),
        "operatingSystems": [group.labels.get("kubernetes.io/os", "linux")], "resources": resources,
        "offerings": [{"Price": 1.0, "Available": True, "Requirements": [
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["local-a"]}]}],
    }]
    node_class = {"apiVersion": "karpenter.kwok.sh/v1alpha1", "kind": "KWOKNodeClass",
                  "metadata": {"name": KWOK_NODE_CLASS},
                  "spec": {"nodeRegistrationDelay": f"{registration_delay_s}s"}}
    requirements = [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [instance_type]}]
    requirements += [{"key": k, "operator": "In", "values": [v]} for k, v in sorted(group.labels.items())
                     if k in well_known]
    gpu = next((k for k in resources if k not in ("cpu", "memory", "pods", "ephemeral-storage")), None)
    node_pool = {
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": _pool_slug(group.name)},
        "spec": {
            "template": {
                "metadata": {"labels": {k: v for k, v in group.labels.items() if k not in well_known}},
                "spec": {"nodeClassRef": {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass",
                                          "name": KWOK_NODE_CLASS},
                         "requirements": requirements,
                         "taints": [dict(t) for t in group.taints],
                         "expireAfter": "Never"},
            },
            "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": f"{consolidate_after_s}s"},
            "limits": {gpu: str(added_nodes * gpus_per_node)} if gpu else {},
        },
    }
    return instance_types, node_class, node_pool


def _pool_slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")


def karpenter_crds(engines: Path) -> list[Path]:
    """The CustomResourceDefinitions Karpenter's kwok build serves, from the module as the engine build downloaded it
    (engines/build links them into the engines' directory as ``karpenter-crds``)."""
    folder = engines / "karpenter-crds"
    files = sorted(folder.glob("*.yaml")) if folder.is_dir() else []
    missing = [f for f in files if not f.exists()]
    if not files or missing:
        raise RealLoopError(f"Karpenter's CRDs are not in {folder} (the Go module cache was cleaned?): run "
                            "`make engines`")
    return files


def keda_crds(engines: Path) -> list[Path]:
    """The CustomResourceDefinitions KEDA's operator serves (keda.sh ScaledObject, ScaledJob, the trigger
    authentications; eventing.keda.sh CloudEventSources, which its manager watches too), from the module as the
    engine build downloaded it (engines/build links them as ``keda-crds``)."""
    folder = engines / "keda-crds"
    files = sorted(folder.glob("*.yaml")) if folder.is_dir() else []
    if not files or not all(f.exists() for f in files):
        raise RealLoopError(f"KEDA's CRDs are not in {folder} (the Go module cache was cleaned?): run `make engines`")
    return files


# ------------------------------------------------------------------------------------------------ the run
@dataclass
class Sample:
    t: float
    """Seconds since the scenario's start."""
    replicas: int
    ready: int
    desired: Optional[int]
    metric: Optional[float]
    nodes: Optional[int] = None
    """The pool's nodes requested: the standing ones and Karpenter's NodeClaims (None: node count not recorded)."""
    nodes_ready: Optional[int] = None
    """The pool's nodes Ready and registered (the scheduler can bind to them)."""


@dataclass
class RealRun:
    start: float
    """Wall-clock start of the scenario (its second 0)."""
    samples: list = field(default_factory=list)
    syncs: list = field(default_factory=list)
    """Seconds (since the start) at which an HPA sync asked Prometheus for the metric, through the adapter."""
    scrapes: dict = field(default_factory=dict)
    """Pod -> seconds (since the start) of its target's scrapes."""
    events: list = field(default_factory=list)
    """The emulator's log: pods seen running and ready, failed arrivals."""
    logs: dict = field(default_factory=dict)
    polls: list = field(default_factory=list)
    """KEDA: seconds at which its scale loop polled the triggers (``syncs`` are then the HPA's own)."""
    ingress_scrapes: list = field(default_factory=list)
    """Seconds of the scrapes of the ingress controller's request counter (a workload woken by its requests)."""

    def at(self, t: float, what: str = "replicas") -> int:
        """The value recorded last at or before ``t``."""
        value = None
        for s in self.samples:
            if s.t > t:
                break
            value = getattr(s, what)
        if value is None:
            return getattr(self.samples[0], what)
        return value

    def failed(self) -> int:
        return sum(1 for e in self.events if e["event"] == "failed")


class Process:
    def __init__(self, name: str, command: list, log: Path, env: Optional[dict] = None):
        self.name, self.log = name, log
        with log.open("wb") as handle:
            self.popen = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          start_new_session=True, env=env)

    def check(self) -> None:
        if self.popen.poll() is not None:
            tail = "\n".join(self.log.read_text(errors="replace").splitlines()[-15:])
            raise RealLoopError(f"{self.name} exited ({self.popen.returncode}):\n{tail}")

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout=5)


class Chain:
    """One scenario's chain: :meth:`up` brings it up to the workload's first Ready pod, :meth:`play` runs the
    arrivals and records, :meth:`down` stops everything it started."""

    def __init__(self, engines: Path, workdir: Path, cfg, workload, setup, node_provision_s: Optional[int] = None):
        """``workload``: a workload's name, or several names of workloads sharing one pool (each gets its own
        emulator and load; the pool's placeholders are the workloads' ``warmReplicas``). ``node_provision_s``: run
        Karpenter for the pool, each node registering that long after Karpenter launched it (None: the pool's nodes
        are fixed at its most)."""
        self.engines, self.workdir, self.cfg, self.s = engines, workdir, cfg, setup
        self.node_provision_s = node_provision_s
        self.names = [workload] if isinstance(workload, str) else list(workload)
        self.all = [next(w for w in cfg.workloads if w.name == n) for n in self.names]
        self.workload = self.all[0]
        self.processes: list[Process] = []
        self.cp: Optional[LocalControlPlane] = None
        self.namespace = cfg.workload_namespace(self.workload)
        self.deployments, self.hpas, self.selectors = {}, {}, {}
        self.prometheus_version: Optional[str] = None
        """The release of the Prometheus that scraped (its ``--version``), once :meth:`up` started it."""
        self.scaled_objects: dict = {}
        self.keda = any(w.autoscaling.autoscaler == "keda" for w in self.all)
        """The workloads are KEDA's: its operator and metrics API server run, and their ScaledObjects."""

    # -------------------------------------------------------------------------------------------- start-up
    def start_delays(self) -> tuple[float, float]:
        """The simulator's start-up of a replica on a node without its image: the pull, then the load rounded up
        to the startup probe's period (simulate.cluster.Pods.schedule)."""
        from gpuplatform.components.model_startup import STARTUP_PROBE_PERIOD_SECONDS as period

        plan = self.s.plan
        return float(plan.image_pull_s), float(period * math.ceil(plan.model_load_s / period))

    def up(self, replicas: int = 1) -> None:
        from gpuplatform.rehearse.apply import Discovery

        self.workdir.mkdir(parents=True, exist_ok=True)
        stages = self.workdir / "kwok-stages.yaml"
        stages.write_text(kwok_stages(*self.start_delays()))
        adapter = self.engines / "prometheus-adapter"
        if not adapter.exists():
            raise RealLoopError(f"prometheus-adapter is not in {self.engines}: run `make engines`")
        prometheus = prometheus_binary(self.engines)
        self.cp = LocalControlPlane(self.engines, self.workdir / "control-plane", kwok_stages=stages)
        self.cp.start()
        self.discovery = Discovery(self.cp)
        self._nodes()
        self._prometheus(prometheus)
        if any(w.autoscaling.autoscaler == "hpa" for w in self.all):
            self._adapter(adapter)
        if self.keda:
            self._keda()
        self._workload(replicas)

    def _apply(self, obj: dict) -> None:
        from gpuplatform.rehearse.apply import apply

        verdict = apply(self.cp, self.discovery, obj)
        if not verdict.accepted:
            raise RealLoopError(f"{obj['kind']} {obj['metadata'].get('name')}: {verdict.message}")

    def _nodes(self) -> None:
        from gpuplatform.components.placement import gpu_pool_groups

        groups = [g for g in gpu_pool_groups(self.cfg) if g.name == f"pool {self.workload.node_pool}"]
        self.pool_label = ("gpuplatform.io/pool", self.workload.node_pool)
        standing = groups
        if self.node_provision_s is not None:
            # the pool's standing nodes (none at minNodes 0: every node is Karpenter's); Karpenter adds the rest
            from dataclasses import replace

            standing = [replace(g, nodes=self.s.min_nodes) for g in groups if self.s.min_nodes > 0]
        if standing:
            self._standing_nodes(standing)
        if self.node_provision_s is not None:
            self._karpenter(groups[0])

    def _standing_nodes(self, groups) -> None:
        from gpuplatform.rehearse.placement import create_nodes

        create_nodes(self.cp, self.discovery, groups)

        def ready() -> bool:
            nodes = self.cp.get("/api/v1/nodes")["items"]
            return bool(nodes) and all(
                any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions", []))
                and not any(t["key"].startswith("node.kubernetes.io/") for t in n["spec"].get("taints", []))
                for n in nodes)
        self.cp.wait_for(ready, "the pool's kwok nodes to be Ready", timeout=90)

    def _karpenter(self, group) -> None:
        """Karpenter's kwok build, its CRDs, node class and NodePool (:func:`karpenter_objects`), as an identity of
        the control plane's own like kwok's: it creates and deletes Nodes, which no namespaced role grants."""
        binary = self.engines / "karpenter-kwok"
        if not binary.exists():
            raise RealLoopError(f"karpenter-kwok is not in {self.engines}: run `make engines`")
        for crd in karpenter_crds(self.engines):
            self._apply(yaml.safe_load(crd.read_text()))

        def served() -> bool:
            return all(self.cp.request("GET", path)[0] == 200 for path in (
                "/apis/karpenter.sh/v1/nodepools", "/apis/karpenter.sh/v1/nodeclaims",
                "/apis/karpenter.kwok.sh/v1alpha1/kwoknodeclasses"))
        self._wait(served, "Karpenter's CRDs to be served")
        pool = next(p for p in self.cfg.node_pools if p.name == self.workload.node_pool)
        instance_type = pool.instance_types[0] if pool.instance_types else f"{pool.name}-node"
        types, node_class, node_pool = karpenter_objects(
            group, instance_type, self.s.max_nodes - self.s.min_nodes, self.s.gpus_per_node, self.node_provision_s,
            self.s.node_scaler.unneeded_s)
        self.node_pool_name = node_pool["metadata"]["name"]
        types_file = self.workdir / "karpenter-instance-types.json"
        types_file.write_text(json.dumps(types, indent=1))
        pki = self.cp.pki
        pki.cert("karpenter", "ca", "/O=system:masters/CN=karpenter")
        kubeconfig = self.workdir / "karpenter.kubeconfig"
        from gpuplatform.rehearse.controlplane import kubeconfig as kubeconfig_of

        kubeconfig.write_text(yaml.safe_dump(kubeconfig_of(self.cp.server, pki, "karpenter")))
        kubeconfig.chmod(0o600)
        env = {**os.environ, "KUBECONFIG": str(kubeconfig), "DISABLE_LEADER_ELECTION": "true",
               "INSTANCE_TYPES_FILE_PATH": str(types_file), "METRICS_PORT": str(KARPENTER_METRICS_PORT),
               "HEALTH_PROBE_PORT": str(KARPENTER_PROBE_PORT), "LOG_LEVEL": "debug"}
        self.processes.append(Process("karpenter", self.cp.network.inside([str(binary)]),
                                      self.workdir / "karpenter.log", env=env))
        for path, body in (("/apis/karpenter.kwok.sh/v1alpha1/kwoknodeclasses", node_class),
                           ("/apis/karpenter.sh/v1/nodepools", node_pool)):
            status, answer = self.cp.request("POST", path, body)
            if status != 201:
                raise RealLoopError(f"{body['kind']} {body['metadata']['name']}: {status} {answer}")

        def pool_ready() -> bool:
            body = self.cp.get(f"/apis/karpenter.sh/v1/nodepools/{self.node_pool_name}")
            return any(c["type"] == "Ready" and c["status"] == "True"
                       for c in body.get("status", {}).get("conditions", []))
        self._wait(pool_ready, "Karpenter to take up the NodePool")

    def _prometheus(self, binary: Path) -> None:
        iv = self.cfg.monitoring.intervals
        self.targets = {n: self.workdir / ("targets.json" if len(self.names) == 1 else f"targets-{n}.json")
                        for n in self.names}
        for path in self.targets.values():
            path.write_text("[]")
        self.query_log = self.workdir / "queries.log"
        config = {
            "global": {"scrape_interval": iv.scrape, "scrape_timeout": "5s",
                       "query_log_file": str(self.query_log)},
            "scrape_configs": [{"job_name": "emulated-servers", "honor_labels": True,
                                "file_sd_configs": [{"files": [str(p) for p in self.targets.values()],
                                                     "refresh_interval": "1s"}]}],
        }
        path = self.workdir / "prometheus.yml"
        path.write_text(yaml.safe_dump(config))
        # the release that ran, for the record (``prometheus, version 3.14.0 (branch: ...)``)
        banner = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=30).stdout
        self.prometheus_version = banner.split("version", 1)[-1].split()[0] if "version" in banner else "unknown"
        self.processes.append(Process("prometheus", self.cp.network.inside([
            str(binary), f"--config.file={path}", f"--storage.tsdb.path={self.workdir / 'tsdb'}",
            f"--web.listen-address=0.0.0.0:{PROMETHEUS_PORT}", "--log.level=warn"]), self.workdir / "prometheus.log"))
        self.prometheus_url = f"http://{self.cp.network.ip}:{PROMETHEUS_PORT}"
        self._wait(lambda: self._http(f"{self.prometheus_url}/-/ready").startswith("Prometheus"),
                   "Prometheus to be ready")

    def _http(self, url: str) -> str:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.read().decode()

    def _wait(self, condition, what: str, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            for p in self.processes:
                p.check()
            self.cp.check_running()
            try:
                if condition():
                    return
            except (OSError, ValueError, KeyError) as exc:
                last = exc
            time.sleep(0.5)
        raise RealLoopError(f"timed out after {timeout:.0f} s waiting for {what}" + (f" ({last})" if last else ""))

    def _adapter(self, binary: Path) -> None:
        """The adapter as the stack deploys it: its service account with the package's RBAC
        (components/monitoring.py ``adapter_rbac_objects``), the package's generated rules and relist interval, a
        serving certificate the API server verifies (no insecureSkipTLSVerify), an APIService."""
        from gpuplatform.components import monitoring

        self._apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": MONITORING_NS}})
        self._apply({"apiVersion": "v1", "kind": "ServiceAccount",
                     "metadata": {"name": monitoring.ADAPTER_SA, "namespace": MONITORING_NS}})
        for obj in monitoring.adapter_rbac_objects():
            self._apply(obj)
        status, token = self.cp.request(
            "POST", f"/api/v1/namespaces/{MONITORING_NS}/serviceaccounts/{monitoring.ADAPTER_SA}/token",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 7200}})
        if status != 201:
            raise RealLoopError(f"the adapter's token: {status} {token}")
        pki = self.cp.pki
        service_dns = f"{ADAPTER_NAME}.{MONITORING_NS}.svc"
        pki.cert("adapter-serving", "ca", f"/CN={service_dns}", client=False,
                 server_names=(f"DNS:{service_dns}", f"IP:{self.cp.network.ip}"))
        kubeconfig = self.workdir / "adapter.kubeconfig"
        kubeconfig.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "adapter",
            "clusters": [{"name": "c", "cluster": {"server": self.cp.server, "certificate-authority": pki.path("ca.crt")}}],
            "users": [{"name": "adapter", "user": {"token": token["status"]["token"]}}],
            "contexts": [{"name": "adapter", "context": {"cluster": "c", "user": "adapter"}}]}))
        kubeconfig.chmod(0o600)
        rules = self.workdir / "adapter-rules.yaml"
        rules.write_text(yaml.safe_dump({"rules": monitoring.generated_rules(self.cfg)}))
        self.processes.append(Process(ADAPTER_NAME, self.cp.network.inside([
            str(binary), f"--prometheus-url=http://127.0.0.1:{PROMETHEUS_PORT}",
            f"--metrics-relist-interval={self.cfg.monitoring.intervals.adapter_relist}",
            f"--config={rules}", f"--secure-port={ADAPTER_PORT}", "--bind-address=0.0.0.0",
            f"--tls-cert-file={pki.path('adapter-serving.crt')}",
            f"--tls-private-key-file={pki.path('adapter-serving.key')}",
            f"--lister-kubeconfig={kubeconfig}", f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}", "--v=2"]), self.workdir / "adapter.log"))
        self._api_service("v1beta1.custom.metrics.k8s.io", "custom.metrics.k8s.io", ADAPTER_NAME, MONITORING_NS,
                          ADAPTER_PORT, "the adapter")

    def _keda(self) -> None:
        """KEDA's operator and metrics API server, as the chart the stack installs runs them: the operator polls
        the ScaledObjects' triggers and owns their HPAs; the metrics API server serves those HPAs' External metrics,
        asking the operator over gRPC with mutual TLS (``pkg/metricsservice``: both read ``ca.crt``, ``tls.crt`` and
        ``tls.key`` from their certificate directory, the server requiring a client certificate of that CA), and is
        registered as the ``v1beta1.external.metrics.k8s.io`` APIService. The certificates are the control plane's
        CA's (the operator's own rotation, ``--enable-cert-rotation``, is off, as when certificates are supplied).
        Both run with a client certificate of the control plane's masters group, as kwok and Karpenter do here; the
        chart's RBAC is not what runs them."""
        operator, server = self.engines / "keda-operator", self.engines / "keda-metrics-apiserver"
        for binary in (operator, server):
            if not binary.exists():
                raise RealLoopError(f"{binary.name} is not in {self.engines}: run `make engines`")
        for crd in keda_crds(self.engines):
            self._apply(yaml.safe_load(crd.read_text()))

        def served() -> bool:
            return self.cp.request("GET", "/apis/keda.sh/v1alpha1/scaledobjects")[0] == 200
        self._wait(served, "KEDA's CRDs to be served")
        self._apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": KEDA_NS}})
        pki = self.cp.pki
        from gpuplatform.rehearse.controlplane import kubeconfig as kubeconfig_of

        pki.cert("keda", "ca", "/O=system:masters/CN=keda")
        kubeconfig = self.workdir / "keda.kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(kubeconfig_of(self.cp.server, pki, "keda")))
        kubeconfig.chmod(0o600)
        service_dns = f"{KEDA_METRICS_SERVER}.{KEDA_NS}.svc"
        pki.cert("keda-operator", "ca", f"/CN=keda-operator.{KEDA_NS}.svc",
                 server_names=(f"DNS:keda-operator.{KEDA_NS}.svc", "IP:127.0.0.1"))
        pki.cert("keda-metrics-apiserver", "ca", f"/CN={service_dns}",
                 server_names=(f"DNS:{service_dns}", f"IP:{self.cp.network.ip}"))
        dirs = {}
        for name in ("keda-operator", "keda-metrics-apiserver"):
            folder = self.workdir / f"{name}-certs"
            folder.mkdir(exist_ok=True)
            for source, target in (("ca.crt", "ca.crt"), (f"{name}.crt", "tls.crt"), (f"{name}.key", "tls.key")):
                shutil.copyfile(pki.path(source), folder / target)
            (folder / "tls.key").chmod(0o600)
            dirs[name] = folder
        env = {**os.environ, "KUBECONFIG": str(kubeconfig), "WATCH_NAMESPACE": "", "POD_NAMESPACE": KEDA_NS,
               "KEDA_CLUSTER_OBJECT_NAMESPACE": KEDA_NS}
        self.processes.append(Process("keda-operator", self.cp.network.inside([
            str(operator), f"--metrics-bind-address=:{KEDA_OPERATOR_METRICS_PORT}",
            f"--health-probe-bind-address=:{KEDA_OPERATOR_PROBE_PORT}",
            f"--metrics-service-bind-address=127.0.0.1:{KEDA_GRPC_PORT}", f"--cert-dir={dirs['keda-operator']}",
            "--enable-cert-rotation=false", "--leader-elect=false", "--zap-log-level=debug"]),
            self.workdir / "keda-operator.log", env=env))
        self.processes.append(Process("keda-metrics-apiserver", self.cp.network.inside([
            str(server), f"--secure-port={KEDA_API_PORT}", "--bind-address=0.0.0.0",
            f"--cert-dir={dirs['keda-metrics-apiserver']}",
            f"--tls-cert-file={dirs['keda-metrics-apiserver'] / 'tls.crt'}",
            f"--tls-private-key-file={dirs['keda-metrics-apiserver'] / 'tls.key'}",
            f"--metrics-service-address=127.0.0.1:{KEDA_GRPC_PORT}", f"--port={KEDA_SERVER_METRICS_PORT}",
            f"--lister-kubeconfig={kubeconfig}", f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}", "--zap-log-level=info"]),
            self.workdir / "keda-metrics-apiserver.log", env=env))
        self._api_service("v1beta1.external.metrics.k8s.io", "external.metrics.k8s.io", KEDA_METRICS_SERVER,
                          KEDA_NS, KEDA_API_PORT, "KEDA's metrics API server")

    def _api_service(self, name: str, group: str, service: str, namespace: str, port: int, what: str) -> None:
        """An aggregated API served by a process at the control plane's own address: its Service, the endpoint
        written by hand (no kube-proxy and no kubelet; an endpoint on loopback is refused by validation;
        --enable-aggregator-routing dials it) and the APIService, whose serving certificate the API server verifies
        with the control plane's CA."""
        https = {"name": "https", "port": port, "protocol": "TCP"}
        self._apply({"apiVersion": "v1", "kind": "Service", "metadata": {"name": service, "namespace": namespace},
                     "spec": {"ports": [{"name": "https", "port": 443, "targetPort": port, "protocol": "TCP"}]}})
        self._apply({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                     "metadata": {"name": service, "namespace": namespace,
                                  "labels": {"kubernetes.io/service-name": service}},
                     "addressType": "IPv4",
                     "endpoints": [{"addresses": [self.cp.network.ip], "conditions": {"ready": True}}],
                     "ports": [https]})
        self._apply({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": service, "namespace": namespace},
                     "subsets": [{"addresses": [{"ip": self.cp.network.ip}], "ports": [https]}]})
        self._apply({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": name},
                     "spec": {"group": group, "version": "v1beta1",
                              "service": {"name": service, "namespace": namespace, "port": 443},
                              "caBundle": base64.b64encode(Path(self.cp.pki.path("ca.crt")).read_bytes()).decode(),
                              "groupPriorityMinimum": 100, "versionPriority": 100}})

        def available() -> bool:
            body = self.cp.get(f"/apis/apiregistration.k8s.io/v1/apiservices/{name}")
            return any(c["type"] == "Available" and c["status"] == "True"
                       for c in body.get("status", {}).get("conditions", []))
        self._wait(available, f"{what}'s APIService to be Available")

    def _workload(self, replicas) -> None:
        """Each workload's Deployment (``replicas``: a count, or one per workload name) and HPA from the package's
        builders, and the pool's placeholders (components/warm_capacity.py: their PriorityClass first, which
        Priority admission requires of the pods that name it)."""
        from gpuplatform.components import warm_capacity
        from gpuplatform.components import workload_manifests as wm
        from gpuplatform.components.inference_service import workload_context
        from gpuplatform.components.pools import all_pool_facts

        counts = replicas if isinstance(replicas, dict) else {self.names[0]: replicas}
        facts = all_pool_facts(self.cfg)[self.workload.node_pool]
        placeholders = []
        for w in self.all:
            ctx = workload_context(self.cfg, w, facts, prometheus_url=f"http://127.0.0.1:{PROMETHEUS_PORT}")
            namespace = self.cfg.workload_namespace(w)
            self._apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
            deployment, hpa, scaled = wm.deployment(w, ctx), wm.hpa(w, ctx), wm.scaled_object(w, ctx)
            if hpa is None and scaled is None:
                raise RealLoopError(f"workload {w.name!r} has no autoscaler (the real loop runs the HPA and KEDA "
                                    "paths)")
            if scaled is not None:
                # KEDA creates and owns the HPA, named after the ScaledObject (KEDA's horizontalPodAutoscalerConfig
                # name, unset in the package's ScaledObject)
                self.scaled_objects[w.name] = scaled
                hpa = {"metadata": {"name": f"keda-hpa-{scaled['metadata']['name']}"}}
            # the manifest leaves spec.replicas to the HPA; the scenario starts where the simulator does, with the
            # replicas that serve its first rate at the target
            self._apply({**deployment, "spec": {**deployment["spec"], "replicas": counts[w.name]}})
            self.deployments[w.name], self.hpas[w.name] = deployment, hpa
            self.selectors[w.name] = ",".join(f"{k}={v}" for k, v in
                                              deployment["spec"]["selector"]["matchLabels"].items())
            placeholder = warm_capacity.placeholder_deployment(w, ctx)
            if placeholder is not None:
                placeholders.append(placeholder)
        if placeholders:
            self._apply(warm_capacity.priority_class())
            for body in placeholders:
                self._apply(body)
        # the first pods may wait for Karpenter's nodes (a pool whose standing nodes do not hold them)
        first_timeout = 120 + (self.node_provision_s or 0)
        for w in self.all:
            self._wait(lambda: self.ready_pods(workload=w.name) >= counts[w.name],
                       f"{w.name}'s first pods to be Ready", timeout=first_timeout)
        if placeholders:
            want = sum(b["spec"]["replicas"] for b in placeholders)
            timeout = 90 + (self.node_provision_s or 0)
            self._wait(lambda: self.placeholders_bound() >= want, "the placeholders to be bound to nodes",
                       timeout=timeout)
        for w in self.all:
            if w.name in self.scaled_objects:
                self._scaled_object(w.name)
            else:
                self._apply(self.hpas[w.name])
        self.deployment, self.hpa, self.selector = (self.deployments[self.names[0]], self.hpas[self.names[0]],
                                                    self.selectors[self.names[0]])

    def _scaled_object(self, name: str) -> None:
        """The package's ScaledObject (components/workload_manifests.py ``scaled_object``), then KEDA's HPA for it
        and the ScaledObject Ready: its scalers were built and its scale loop polls."""
        body = self.scaled_objects[name]
        namespace = body["metadata"]["namespace"]
        path = f"/apis/keda.sh/v1alpha1/namespaces/{namespace}/scaledobjects"
        status, answer = self.cp.request("POST", path, body)
        if status != 201:
            raise RealLoopError(f"ScaledObject {body['metadata']['name']}: {status} {answer}")

        def ready() -> bool:
            so = self.cp.get(f"{path}/{body['metadata']['name']}")
            hpa = self.cp.request("GET", f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers/"
                                         f"{self.hpas[name]['metadata']['name']}")[0]
            return hpa == 200 and any(c["type"] == "Ready" and c["status"] == "True"
                                      for c in so.get("status", {}).get("conditions", []))
        self._wait(ready, f"KEDA to take up the ScaledObject {body['metadata']['name']} (its HPA, Ready)")

    def placeholders_bound(self) -> int:
        from gpuplatform.components.warm_capacity import COMPONENT_LABEL

        query = urllib.parse.urlencode({"labelSelector": f"app.kubernetes.io/component={COMPONENT_LABEL}"})
        pods = self.cp.get(f"/api/v1/namespaces/{self.namespace}/pods?{query}")["items"]
        return sum(1 for p in pods if p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp"))

    # -------------------------------------------------------------------------------------------- reading
    def pods(self, workload: Optional[str] = None) -> list:
        name = workload or self.names[0]
        query = urllib.parse.urlencode({"labelSelector": self.selectors[name]})
        namespace = self.cfg.workload_namespace(self.all[self.names.index(name)])
        return self.cp.get(f"/api/v1/namespaces/{namespace}/pods?{query}")["items"]

    def ready_pods(self, pods: Optional[list] = None, workload: Optional[str] = None) -> int:
        pods = self.pods(workload) if pods is None else pods
        return sum(1 for p in pods if not p["metadata"].get("deletionTimestamp") and any(
            c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", [])))

    def sample(self, start: float, workload: Optional[str] = None, nodes: Optional[tuple] = None) -> Sample:
        name = workload or self.names[0]
        namespace = self.cfg.workload_namespace(self.all[self.names.index(name)])
        dep = self.cp.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/"
                          f"{self.deployments[name]['metadata']['name']}")
        hpa = self.cp.get(f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers/"
                          f"{self.hpas[name]['metadata']['name']}")
        metric = None
        for m in hpa.get("status", {}).get("currentMetrics") or []:
            # the adapter's Pods metric, or the first External metric of KEDA's HPA (the ScaledObject's first
            # trigger)
            value = (m.get("pods") or m.get("external") or {}).get("current", {}).get("averageValue")
            if value is not None:
                metric = _quantity(value)
                break
        if nodes is None and self.node_provision_s is not None:
            nodes = self.pool_nodes()
        nodes = nodes or (None, None)
        return Sample(time.time() - start, int(dep["spec"].get("replicas", 0)), self.ready_pods(workload=name),
                      hpa.get("status", {}).get("desiredReplicas"), metric, *nodes)

    def pool_nodes(self) -> tuple[int, int]:
        """The pool's nodes requested (the standing ones and Karpenter's NodeClaims not being deleted) and those
        Ready without Karpenter's unregistered taint."""
        query = urllib.parse.urlencode({"labelSelector": "=".join(self.pool_label)})
        nodes = self.cp.get(f"/api/v1/nodes?{query}")["items"]
        claims = self.cp.get("/apis/karpenter.sh/v1/nodeclaims")["items"]
        standing = sum(1 for n in nodes if not n["spec"].get("providerID", "").startswith("kwok://"))
        requested = standing + sum(1 for c in claims if not c["metadata"].get("deletionTimestamp"))
        ready = sum(1 for n in nodes if not n["metadata"].get("deletionTimestamp")
                    and any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions", []))
                    and not any(t["key"] == UNREGISTERED_TAINT for t in n["spec"].get("taints", [])))
        return requested, ready

    # -------------------------------------------------------------------------------------------- the play
    def play(self, arrivals, duration_s: float, lead_s: float, service_s: float, concurrency: int,
             deterministic: bool, collect_phase: int, seed: int, kind: str):
        """Start the emulators and the load ``lead_s`` before second 0 (``arrivals`` may start before it: the
        warm-up at the first rate), record until ``duration_s``. ``arrivals``: a list (one workload: the
        :class:`RealRun` is returned) or one list per workload name (a dict of runs is returned)."""
        per = arrivals if isinstance(arrivals, dict) else {self.names[0]: arrivals}
        start = time.time() + lead_s
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
        agents, runs = [], {}
        for name, times in per.items():
            single = len(self.names) == 1
            w = self.all[self.names.index(name)]
            events = self.workdir / ("emulator-events.jsonl" if single else f"emulator-events-{name}.jsonl")
            spec = {"server": self.cp.server, "ca": self.cp.pki.path("ca.crt"),
                    "cert": self.cp.pki.path("admin.crt"), "key": self.cp.pki.path("admin.key"),
                    "namespace": self.cfg.workload_namespace(w), "selector": self.selectors[name],
                    "kind": kind, "service_s": service_s, "concurrency": concurrency, "deterministic": deterministic,
                    "collect_s": self.s.collect_s, "collect_phase": collect_phase, "start": start,
                    "arrivals": times, "seed": seed, "targets": str(self.targets[name]),
                    "events": str(events), "linger_s": 5, "until": duration_s + 1}
            act = w.autoscaling.activation
            if w.autoscaling.autoscaler == "keda" and act is not None and act.source == "ingress":
                spec["ingress"] = {"target": INGRESS_TARGET, "series": [
                    {**dict(labels), "namespace": self.cfg.workload_namespace(w)} for labels in self.s.ingress_labels]}
            spec_path = self.workdir / ("emulator.json" if single else f"emulator-{name}.json")
            spec_path.write_text(json.dumps(spec))
            agent = Process(f"emulator {name}", self.cp.network.inside(
                [sys.executable, "-m", "gpuplatform.realloop.emulator", str(spec_path)]),
                self.workdir / ("emulator.log" if single else f"emulator-{name}.log"), env=env)
            self.processes.append(agent)
            agents.append(agent)
            runs[name] = (RealRun(start), events)
        while time.time() < start + duration_s + 1:
            for p in self.processes:
                p.check()
            self.cp.check_running()
            if time.time() >= start - 1:
                nodes = self.pool_nodes() if self.node_provision_s is not None else None
                for name, (run, _events) in runs.items():
                    run.samples.append(self.sample(start, name, nodes))
            time.sleep(SAMPLE_S)
        for agent in agents:
            agent.stop()
            self.processes.remove(agent)
        scrapes = self._scrapes(start, duration_s + lead_s + 60)
        for name, (run, events) in runs.items():
            deployment = self.deployments[name]["metadata"]["name"]
            if self.keda:
                run.polls, run.syncs = keda_polls_and_syncs(self._queries(start, deployment, at_log=True),
                                                            self.s.scrape_s)
                run.ingress_scrapes = scrapes.get(INGRESS_TARGET["pod"], [])
            else:
                run.syncs = self._queries(start, deployment)
            run.scrapes = {pod: at for pod, at in scrapes.items() if pod and pod.startswith(f"{deployment}-")}
            run.events = [json.loads(line) for line in events.read_text().splitlines()] if events.exists() else []
        if not isinstance(arrivals, dict):
            return runs[self.names[0]][0]
        return {name: run for name, (run, _events) in runs.items()}

    def _queries(self, start: float, deployment: str, at_log: bool = False) -> list:
        """When each HPA sync read the metric: the adapter's instant query for the workload's pods (the pods of
        ``deployment``, which the query names). With KEDA, its scaler's queries of the first trigger (each poll's
        and each HPA sync's), at the instant Prometheus logged them (``at_log``): KEDA's query asks for the current
        time truncated to the second (``pkg/scalers/prometheus_scaler.go`` ``ExecutePromQuery``:
        ``time.Now().UTC().Format(time.RFC3339)``), which does not say when it ran."""
        out = []
        if not self.query_log.exists():
            return out
        for line in self.query_log.read_text().splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            params = entry.get("params", {})
            query = params.get("query", "")
            if (self.namespace in query and "pod" in query and params.get("step", 0) == 0
                    and f'"{deployment}-' in query.replace("|", '"')):
                # an instant query's evaluation time; the line's own stamp is "ts" up to 2.x (go-kit's logger),
                # "time" from 3.0 (log/slog; prometheus docs/migration.md, "Log message format")
                logged = entry.get("time") or entry.get("ts")
                at = logged if at_log else (params.get("start") or logged)
                out.append(_seconds(at) - start)
        return sorted(out)

    def _scrapes(self, start: float, span_s: float) -> dict:
        url = (f"{self.prometheus_url}/api/v1/query?"
               + urllib.parse.urlencode({"query": f"up[{int(span_s)}s]", "time": f"{time.time():.3f}"}))
        body = json.loads(self._http(url))
        out = {}
        for series in body["data"]["result"]:
            pod = series["metric"].get("pod")
            out[pod] = [float(ts) - start for ts, _ in series["values"]]
        return out

    def down(self) -> None:
        for p in reversed(self.processes):
            p.stop()
        self.processes.clear()
        if self.cp is not None:
            self.cp.stop()


def keda_polls_and_syncs(queries: list, polling_s: int, within_s: float = 0.3) -> tuple[list, list]:
    """KEDA's polls and its HPA's syncs among the queries of a trigger (seconds since the start): both ask the
    operator's scaler, which queries Prometheus the same way. The first query is a poll (the workload starts at zero
    replicas, where the HPA controller computes no metric); from it a poll comes every ``pollingInterval`` to within
    milliseconds (``pkg/scaling/scale_handler.go`` ``startScaleLoop``: the timer starts before each
    ``checkScalers``), where the HPA's period is 15 s plus its reconcile and drifts away from it: the query nearest
    each poll's time, within ``within_s``, is the poll's; the others are the HPA's."""
    rest = sorted(queries)
    if not rest:
        return [], []
    polls = [rest.pop(0)]
    due = polls[0] + polling_s
    while rest and due <= rest[-1] + within_s:
        near = min(rest, key=lambda q: abs(q - due))
        if abs(near - due) <= within_s:
            polls.append(near)
            rest.remove(near)
            due = near + polling_s
        else:
            due += polling_s
    return polls, rest


def _quantity(text: str) -> float:
    if text.endswith("m"):
        return float(text[:-1]) / 1000
    if text.endswith("k"):
        return float(text[:-1]) * 1000
    return float(text)


def _seconds(stamp) -> float:
    if isinstance(stamp, (int, float)):
        return float(stamp)
    from datetime import datetime

    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
