"""GPU system components: what they are (their images) and the host access their upstream manifests document.

A device plugin has to reach the kubelet's device-plugin socket directory, a GPU exporter the kubelet's
pod-resources socket, the GPU Operator's operands the host's driver root and PID namespace. Those accesses are
what the restricted Pod Security rules forbid to an application, so the policies let a recognised component use
exactly the access listed here and nothing more. A component is recognised by its container images (repository
path, any registry or mirror prefix, any tag), never by the name of its release or namespace, which every user
picks differently.

Sources, read for the access each component declares:

* NVIDIA k8s-device-plugin: ``deployments/static/nvidia-device-plugin.yml`` (no privilege; hostPath
  ``/var/lib/kubelet/device-plugins``); Helm ``templates/_helpers.tpl`` (``SYS_ADMIN`` with MIG or volume-mounts
  device lists, ``privileged`` with ``compatWithCPUManager``, optional ``hostNetwork``, MPS and CDI host paths).
* NVIDIA dcgm-exporter: Helm ``deployment/values.yaml`` (``runAsUser: 0``, ``SYS_ADMIN`` "required for profiling
  metrics", read-only ``/var/lib/kubelet/pod-resources``, optional ``hostPID``/``hostNetwork``).
* NVIDIA GPU Operator: ``assets/state-*/…_daemonset.yaml`` (device plugin, dcgm-exporter, MIG manager, container
  toolkit, driver, validator: ``privileged``, host root ``/``, ``/run/nvidia``; MIG manager ``hostPID``/``hostIPC``).
* node-feature-discovery (a GPU Operator dependency): worker DaemonSet, read-only ``/sys``, ``/usr/lib``,
  ``/etc/os-release``, ``/boot`` and the features directory.
* Alibaba gpushare device plugin: ``device-plugin-ds.yaml`` (``hostNetwork``, device-plugin directory).
* run-ai fake-gpu-operator: ``deploy/fake-gpu-operator/templates`` (privileged device plugin and status exporter,
  ``/var/lib/runai``, ``/var/lib/fake-gpu-operator``).
* prometheus node-exporter (kube-prometheus-stack): chart ``values.yaml`` ``hostNetwork: true``, ``hostPID: true``,
  read-only host root, ``/proc`` and ``/sys``.
* GKE's NVIDIA driver installer: GoogleCloudPlatform/container-engine-accelerators
  ``nvidia-driver-installer/{cos,ubuntu}/daemonset*.yaml`` (the installer and the MIG partitioner run as privileged
  init containers with ``hostNetwork``, ``hostPID``, the host root and ``/dev``; the only long-running container is
  ``pause``, so the component is recognised by its init container).
"""
from __future__ import annotations

from dataclasses import dataclass

ANY_PATH = "/"


@dataclass(frozen=True)
class SystemComponent:
    name: str
    images: tuple[str, ...]
    """Repository paths of the component's main containers (``nvidia/k8s-device-plugin``); a trailing ``/`` matches
    every repository under that path."""
    helper_images: tuple[str, ...] = ()
    """Further repositories its init containers and sidecars come from."""
    privileged: bool = False
    host_network: bool = False
    host_pid: bool = False
    host_ipc: bool = False
    host_ports: bool = False
    host_paths: tuple[str, ...] = ()
    """Host path prefixes it mounts (``/`` for the host root, which covers every path)."""
    capabilities: tuple[str, ...] = ()
    runs_as_root: bool = False
    sees_all_gpus: bool = False
    """It monitors or manages every GPU of the node (``NVIDIA_VISIBLE_DEVICES=all``) without requesting one."""
    source: str = ""


_NVIDIA_HELPERS = ("nvidia/cloud-native/gpu-operator-validator", "nvidia/cloud-native/k8s-driver-manager",
                   "nvidia/k8s/container-toolkit", "nvidia/gpu-operator")

SYSTEM_COMPONENTS: tuple[SystemComponent, ...] = (
    SystemComponent(
        "nvidia-device-plugin", ("nvidia/k8s-device-plugin", "nvidia/gpu-feature-discovery"),
        helper_images=_NVIDIA_HELPERS, privileged=True, host_network=True,
        # static manifest: the socket directory only; operator and Helm add the driver root, CDI and MPS paths
        host_paths=(ANY_PATH,), capabilities=("SYS_ADMIN",), runs_as_root=True, sees_all_gpus=True,
        source="NVIDIA/k8s-device-plugin deployments/static, Helm _helpers.tpl; gpu-operator state-device-plugin"),
    SystemComponent(
        "dcgm-exporter", ("nvidia/k8s/dcgm-exporter", "nvidia/cloud-native/dcgm"),
        helper_images=_NVIDIA_HELPERS, privileged=True, host_network=True, host_pid=True,
        host_paths=("/var/lib/kubelet/pod-resources", "/run/nvidia", "/etc/dcgm-exporter"),
        capabilities=("SYS_ADMIN",), runs_as_root=True, sees_all_gpus=True,
        source="NVIDIA/dcgm-exporter deployment/values.yaml; gpu-operator state-dcgm-exporter"),
    SystemComponent(
        "gpu-operator-operands",
        ("nvidia/cloud-native/k8s-mig-manager", "nvidia/k8s/container-toolkit", "nvidia/driver",
         "nvidia/cloud-native/gpu-operator-validator", "nvidia/cloud-native/k8s-driver-manager",
         "nvidia/cloud-native/k8s-kata-manager", "nvidia/cloud-native/k8s-cc-manager",
         "nvidia/cloud-native/vgpu-device-manager", "nvidia/gpu-operator"),
        helper_images=_NVIDIA_HELPERS, privileged=True, host_network=True, host_pid=True, host_ipc=True,
        host_paths=(ANY_PATH,), capabilities=("SYS_ADMIN", "ALL"), runs_as_root=True, sees_all_gpus=True,
        source="NVIDIA/gpu-operator assets/state-*/*_daemonset.yaml"),
    SystemComponent(
        "node-feature-discovery", ("nfd/node-feature-discovery",), host_network=True,
        host_paths=("/etc/kubernetes/node-feature-discovery", "/sys", "/usr/lib", "/usr/src", "/lib",
                    "/etc/os-release", "/boot", "/proc/swaps"),
        source="kubernetes-sigs/node-feature-discovery worker DaemonSet (vendored by the GPU Operator chart)"),
    SystemComponent(
        "gpushare-device-plugin", ("acs/k8s-gpushare-plugin",), host_network=True,
        host_paths=("/var/lib/kubelet/device-plugins",), runs_as_root=True, sees_all_gpus=True,
        source="AliyunContainerService/gpushare-device-plugin device-plugin-ds.yaml"),
    SystemComponent(
        "fake-gpu-operator", ("run-ai/fake-gpu-operator/",), helper_images=("nvidia/nvml-mock",),
        privileged=True, host_paths=("/var/lib/kubelet/device-plugins", "/var/lib/kubelet/pod-resources",
                                     "/var/lib/runai", "/var/lib/fake-gpu-operator"),
        runs_as_root=True, sees_all_gpus=True,
        source="run-ai/fake-gpu-operator deploy/fake-gpu-operator/templates"),
    SystemComponent(
        "node-exporter", ("prometheus/node-exporter",), helper_images=("brancz/kube-rbac-proxy",),
        host_network=True, host_pid=True, host_ports=True, host_paths=(ANY_PATH,),
        source="prometheus-community/helm-charts prometheus-node-exporter values.yaml"),
    SystemComponent(
        "gke-nvidia-driver-installer", ("cos-nvidia-installer", "ubuntu-nvidia-installer"),
        helper_images=("nvidia-partition-gpu", "pause"), privileged=True, host_network=True, host_pid=True,
        host_paths=(ANY_PATH,), runs_as_root=True, sees_all_gpus=True,
        source="GoogleCloudPlatform/container-engine-accelerators nvidia-driver-installer/cos, /ubuntu"),
)
"""Recognised components, each with the host access its upstream manifests use."""

SYSTEM_COMPONENT_KINDS = ("DaemonSet", "Pod")
"""Node agents run as DaemonSets (a Pod is checked too, as ``kubectl get pod -o yaml`` shows one)."""


def image_repository(image: str) -> str:
    """``nvcr.io/nvidia/k8s-device-plugin:v0.17.1`` -> ``nvidia/k8s-device-plugin`` (registry, tag, digest off)."""
    ref = image.split("@", 1)[0]
    head, _, last = ref.rpartition("/")
    if ":" in last:
        last = last.rsplit(":", 1)[0]
    ref = f"{head}/{last}" if head else last
    first, _, rest = ref.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        ref = rest
    return ref


def matches(image: str, patterns: tuple[str, ...]) -> bool:
    repo = image_repository(image)
    for p in patterns:
        if p.endswith("/"):
            if repo.startswith(p) or f"/{p}" in f"/{repo}":
                return True
        elif repo == p or repo.endswith("/" + p):
            return True
    return False


PAUSE_IMAGES = ("pause",)
"""Images that only hold a pod open (registry.k8s.io/pause, google-containers/pause): a pod whose long-running
containers are all pause does its work in init containers, and is what its first init container is."""


def identify(main_image: str, other_images: list[str]) -> SystemComponent | None:
    """The component whose image the first container runs, provided every other container (init containers,
    sidecars) runs one of its own or its helper images: a foreign sidecar makes the pod an ordinary workload."""
    for comp in SYSTEM_COMPONENTS:
        if matches(main_image, comp.images) and all(matches(i, comp.images + comp.helper_images)
                                                    for i in other_images):
            return comp
    return None
