"""Pinned Helm charts and add-ons, with the Kubernetes versions upstream supports for each pinned chart version.

Bump versions here only; the components, the config validation, the policies, the docs and the tests read this
module. A stack gets, per chart, the newest pinned version whose supported range holds the cluster's Kubernetes
minor (:func:`Chart.for_kubernetes`); a stack no pinned version supports is rejected before anything is
registered. Ranges are upstream's own statements (docs/helm.md lists the sources):

* kube-prometheus-stack 88.5.3: ``Chart.yaml`` ``kubeVersion: >=1.25.0-0`` (no tested matrix).
* prometheus-adapter 5.3.0: chart README, "Kubernetes 1.21+".
* dcgm-exporter 4.8.2: ``Chart.yaml`` ``kubeVersion: >= 1.19.0-0``.
* GPU Operator: NVIDIA's platform-support page (cloud-native-docs ``gpu-operator/platform-support.rst``):
  v25.10 validated on 1.30-1.34, v26.7 on 1.33-1.36.
* KEDA: the keda.sh cluster compatibility matrix (keda-docs ``content/docs/2.20/operate/cluster.md``): 2.18 tested
  on 1.31-1.33, 2.20 on 1.33-1.35.
* cert-manager: cert-manager.io "Supported Releases" (website ``content/docs/releases/README.md``): 1.16 supported
  on 1.25-1.32 and end of life since 2025-06-10; 1.21 supported and tested on 1.33-1.36.
* fake-gpu-operator 0.2.0 and the ACK metrics adapter state no range.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

KubeMinor = tuple[int, int]


def minor_text(version: KubeMinor) -> str:
    return f"{version[0]}.{version[1]}"


@dataclass(frozen=True)
class ChartVersion:
    version: str
    """The chart version as upstream publishes it (``helm pull --version``)."""
    min_kubernetes: Optional[KubeMinor] = None
    """Oldest Kubernetes minor upstream supports. None: upstream states no lower bound."""
    max_kubernetes: Optional[KubeMinor] = None
    """Newest Kubernetes minor upstream supports or tested. None: upstream states no upper bound."""
    end_of_life: Optional[str] = None
    """Date upstream stopped supporting this release (ISO). An end-of-life version is never chosen; it stays listed
    so the error names it."""

    def covers(self, version: KubeMinor) -> bool:
        """Whether the Kubernetes minor is inside the range upstream states, supported still or not."""
        return ((self.min_kubernetes is None or version >= self.min_kubernetes)
                and (self.max_kubernetes is None or version <= self.max_kubernetes))

    def supports(self, version: KubeMinor, allow_end_of_life: bool = False) -> bool:
        """Chosen for a cluster of ``version``: inside the range, and supported upstream unless the stack opts in to
        an end-of-life release (``settings.allowEndOfLifeCharts``)."""
        return (self.end_of_life is None or allow_end_of_life) and self.covers(version)

    def why_not(self, version: KubeMinor) -> str:
        """Why this version is not chosen for a cluster of ``version`` (empty when it would be)."""
        if not self.covers(version):
            return f"{self.describe()}: not {minor_text(version)}"
        if self.end_of_life is not None:
            return f"{self.describe()}: covers {minor_text(version)} but gets no fixes since {self.end_of_life}"
        return ""

    def describe(self) -> str:
        lo = minor_text(self.min_kubernetes) if self.min_kubernetes else None
        hi = minor_text(self.max_kubernetes) if self.max_kubernetes else None
        span = (f"Kubernetes {lo}-{hi}" if lo and hi else f"Kubernetes {lo}+" if lo
                else f"Kubernetes up to {hi}" if hi else "any Kubernetes")
        return f"{self.version} ({span}{f', end of life {self.end_of_life}' if self.end_of_life else ''})"


@dataclass(frozen=True)
class Chart:
    name: str
    repository: str
    namespace: str
    release: str
    versions: tuple[ChartVersion, ...]
    """Pinned versions, newest first."""

    @property
    def version(self) -> str:
        """The newest pinned version."""
        return self.versions[0].version

    def for_kubernetes(self, version: KubeMinor, allow_end_of_life: bool = False) -> Optional[ChartVersion]:
        """The newest pinned version that supports the Kubernetes minor ``version``; None when none does.
        ``allow_end_of_life``: an end-of-life pin counts as supporting the range it covers."""
        return next((v for v in self.versions if v.supports(version, allow_end_of_life)), None)

    @property
    def has_end_of_life_pin(self) -> bool:
        return any(v.end_of_life for v in self.versions)

    def supported_text(self) -> str:
        return ", ".join(v.describe() for v in self.versions)


_PROMETHEUS_COMMUNITY = "https://prometheus-community.github.io/helm-charts"
CHARTS: dict[str, Chart] = {
    c.release: c
    for c in (
        Chart("kube-prometheus-stack", _PROMETHEUS_COMMUNITY, "monitoring", "kube-prometheus-stack",
              (ChartVersion("88.5.3", min_kubernetes=(1, 25)),)),
        Chart("prometheus-adapter", _PROMETHEUS_COMMUNITY, "monitoring", "prometheus-adapter",
              (ChartVersion("5.3.0", min_kubernetes=(1, 21)),)),
        Chart("ack-alibaba-cloud-metrics-adapter",
              "https://aliacs-app-catalog.oss-cn-hangzhou.aliyuncs.com/charts-incubator/",
              "kube-system", "ack-alibaba-cloud-metrics-adapter", (ChartVersion("1.3.3"),)),
        # the chart version, not the git tag (4.5.3-4.8.2) it is released from: the repository index knows 4.8.2
        Chart("dcgm-exporter", "https://nvidia.github.io/dcgm-exporter/helm-charts", "monitoring", "dcgm-exporter",
              (ChartVersion("4.8.2", min_kubernetes=(1, 19)),)),
        Chart("gpu-operator", "https://helm.ngc.nvidia.com/nvidia", "gpu-operator", "gpu-operator",
              (ChartVersion("v26.7.0", (1, 33), (1, 36)), ChartVersion("v25.10.1", (1, 30), (1, 34)))),
        Chart("fake-gpu-operator", "oci://ghcr.io/run-ai/fake-gpu-operator", "gpu-operator", "fake-gpu-operator",
              (ChartVersion("0.2.0"),)),
        Chart("keda", "https://kedacore.github.io/charts", "keda", "keda",
              (ChartVersion("2.20.2", (1, 33), (1, 35)), ChartVersion("2.18.1", (1, 31), (1, 33)))),
        Chart("cert-manager", "https://charts.jetstack.io", "cert-manager", "cert-manager",
              (ChartVersion("v1.21.1", (1, 33), (1, 36)),
               ChartVersion("v1.16.2", (1, 25), (1, 32), end_of_life="2025-06-10"))),
    )
}

KUBERNETES_SUPPORTED: tuple[KubeMinor, KubeMinor] = ((1, 20), (1, 36))
"""Kubernetes minors the package supports: from the oldest whose HPA API it writes (autoscaling/v2beta1 below 1.23)
to the newest that the pinned charts' upstreams state support for (GPU Operator v26.7, cert-manager v1.21) and
whose schemas the tests validate against. Each chart a stack installs narrows this further (``CHARTS``)."""

ACK_ADDONS: dict[str, str | None] = {
    # ACK add-on name -> pinned version (None: let ACK pick the version it supports for the cluster).
    # What each add-on is for and whether it is installed at creation: catalogs/ack.py.
    "flannel": None,
    "terway-eniip": None,
    "csi-plugin": None,
    "managed-csiprovisioner": None,
    "csi-provisioner": None,
    "nginx-ingress-controller": None,
    "arms-prometheus": None,
    "ack-ai-installer": None,
    "ack-node-problem-detector": None,
    "node-lifecycle-controller": None,
}

_KPS = CHARTS["kube-prometheus-stack"]
PROMETHEUS_HOST = f"{_KPS.release}-prometheus.{_KPS.namespace}.svc"
"""The chart names its Prometheus Service ``<fullname>-prometheus``; fullname is the release name here."""
PROMETHEUS_PORT = 9090
MONITOR_LABELS = {"release": _KPS.release}
"""The label kube-prometheus-stack's default selectors look for; our monitors carry it even though our values
open the selectors, so they also work with a Prometheus installed elsewhere."""


def in_cluster_prometheus_url() -> str:
    return f"http://{PROMETHEUS_HOST}:{PROMETHEUS_PORT}"


IMAGES: dict[str, str] = {
    # kube-prometheus-stack's CRD upgrade Job unpacks the CRDs with busybox, whose chart default tag is "latest"
    "crd-upgrade-busybox": "1.37.0",
}
"""Image tags we set where a chart's default is a moving tag; every other image is the chart's own pin."""

ARMS_GPU_EXPORTER = ("arms-prom", "ack-prometheus-gpu-exporter")
"""Namespace and DaemonSet of the GPU exporter ACK managed Prometheus runs; it needs tolerations for tainted
GPU pools (ACK FAQ "Why can't I deploy GPU monitoring?")."""

def chart(release: str) -> Chart:
    return CHARTS[release]


PROMETHEUS_VERSION = {
    # kube-prometheus-stack 88.5.3 values: prometheus.prometheusSpec.image.tag v3.14.0-distroless
    "self-hosted": "3.14.0",
    # ACK managed Prometheus (ARMS) does not publish the Prometheus release its query engine follows
    "arms": None,
}
"""Prometheus release each monitoring backend runs (None: not published)."""

PrometheusVersion = tuple[int, int, int]


def prometheus_version(backend: str) -> PrometheusVersion:
    """The Prometheus release whose query semantics a stack's metrics are evaluated with.

    A backend that does not publish its release (ARMS) is evaluated as the release we pin for the self-hosted
    backend: an assumption, not a fact (docs/simulate.md says so). ARMS documents PromQL compatibility but no
    release, so the newest semantics is assumed; were its engine older than 3.0 (or 2.51), rates at aligned scrapes
    (or at a series' start) would differ as ``gpuplatform.simulate.promql.Semantics`` lists."""
    text = PROMETHEUS_VERSION.get(backend) or PROMETHEUS_VERSION["self-hosted"]
    major, minor, patch = (int(part) for part in text.split("."))
    return major, minor, patch


def prometheus_major(backend: str) -> int:
    """The Prometheus major version whose query semantics a stack's metrics are evaluated with."""
    return prometheus_version(backend)[0]
