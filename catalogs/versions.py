"""Pinned Helm charts, add-ons and images. Bump versions here only; everything else reads this module."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Chart:
    name: str
    version: str
    repository: str
    namespace: str
    release: str


CHARTS: dict[str, Chart] = {
    c.release: c
    for c in (
        Chart("kube-prometheus-stack", "88.5.3", "https://prometheus-community.github.io/helm-charts",
              "monitoring", "kube-prometheus-stack"),
        Chart("prometheus-adapter", "5.3.0", "https://prometheus-community.github.io/helm-charts",
              "monitoring", "prometheus-adapter"),
        Chart("ack-alibaba-cloud-metrics-adapter", "1.3.3",
              "https://aliacs-app-catalog.oss-cn-hangzhou.aliyuncs.com/charts-incubator/",
              "kube-system", "ack-alibaba-cloud-metrics-adapter"),
        Chart("dcgm-exporter", "4.5.3-4.8.2", "https://nvidia.github.io/dcgm-exporter/helm-charts",
              "monitoring", "dcgm-exporter"),
        Chart("gpu-operator", "v25.10.1", "https://helm.ngc.nvidia.com/nvidia", "gpu-operator", "gpu-operator"),
        Chart("fake-gpu-operator", "0.2.0", "oci://ghcr.io/run-ai/fake-gpu-operator", "gpu-operator",
              "fake-gpu-operator"),
        Chart("keda", "2.18.1", "https://kedacore.github.io/charts", "keda", "keda"),
        Chart("cert-manager", "v1.16.2", "https://charts.jetstack.io", "cert-manager", "cert-manager"),
    )
}

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
    "ack-cgpu": None,
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


ARMS_GPU_EXPORTER = ("arms-prom", "ack-prometheus-gpu-exporter")
"""Namespace and DaemonSet of the GPU exporter ACK managed Prometheus runs; it needs tolerations for tainted
GPU pools (ACK FAQ "Why can't I deploy GPU monitoring?")."""

IMAGES: dict[str, str] = {
    "ack-metrics-adapter": "registry-{region}-vpc.ack.aliyuncs.com/acs/alibaba-cloud-metrics-adapter-amd64:"
                           "v0.2.7-f1ee5c3-aliyun",
    "dcgm-exporter": "nvcr.io/nvidia/k8s/dcgm-exporter:4.4.2-4.7.0-ubuntu22.04",
}

KUBERNETES_VERSIONS_VALIDATED = ("1.28", "1.29", "1.30", "1.31", "1.32", "1.33")
"""Kubernetes versions whose OpenAPI schemas the authored manifests are validated against in the tests."""


def chart(release: str) -> Chart:
    return CHARTS[release]
