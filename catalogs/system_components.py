"""GPU system components: what each one is, how its upstream deployments show themselves, and the host access
those upstream manifests grant it.

A device plugin has to reach the kubelet's device-plugin socket directory, a GPU exporter the kubelet's
pod-resources socket, the GPU Operator's operands the host's driver root and PID namespace. Those accesses are
what Pod Security forbids to an application, so the policies let a recognised component use what its upstream
manifests grant and nothing more.

A workload is taken for a component by its **role**, with evidence:

* its images: every container runs one of the component's images, one of its helper images or ``pause``, and at
  least one runs one of its own images (repository path, any registry or mirror prefix, any tag or digest);
* where the same images are deployed in more than one way, what the broader deployment shows besides them
  (:class:`Evidence`): the GPU Operator's operands select their nodes by ``nvidia.com/gpu.deploy.<operand>`` or
  wait for the operator's validator in an init container; GKE's installers run in ``kube-system`` on nodes
  labelled ``cloud.google.com/gke-accelerator``;
* images that say nothing on their own (``ubuntu``, ``alpine``) count only with all of their role's evidence.

Each entry is one upstream deployment and lists what its upstream manifests grant (the union over the options
they document), with the files that show it. Release and namespace names the user picks play no part, except
where upstream fixes the namespace (GKE's ``kube-system``).
"""
from __future__ import annotations

from dataclasses import dataclass

ANY_PATH = "*"
"""Every host path: for deployments whose upstream mounts the host root and paths that vary with the node (the
GPU Operator mounts the container runtime's config and socket directories it finds)."""
HOST_ROOT = "/"
"""The host root mounted as such; it does not stand for the paths below it."""

GKE_ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
"""The label GKE puts on every GPU node (its installers' required node affinity)."""
GPU_OPERATOR_DEPLOY_LABELS = "nvidia.com/gpu.deploy."
"""Prefix of the per-operand node labels the GPU Operator sets and each operand DaemonSet selects
(``nvidia.com/gpu.deploy.dcgm-exporter: "true"``)."""


@dataclass(frozen=True)
class Evidence:
    """What a workload shows besides its images. Every field that is set must hold; within a field one listed
    value is enough."""

    namespaces: tuple[str, ...] = ()
    """It states one of these namespaces (``metadata.namespace``): upstream's manifests fix it."""
    node_labels: tuple[str, ...] = ()
    """It runs only on nodes with one of these labels (a ``nodeSelector`` key, or a key every required node
    affinity term asks for with ``In`` or ``Exists``); a value ending in ``.`` or ``/`` is a prefix."""
    host_paths: tuple[str, ...] = ()
    """It mounts one of these host paths (or a path below one)."""
    init_images: tuple[str, ...] = ()
    """One of its init containers runs one of these images."""
    daemonset: bool = False
    """It is a DaemonSet, or a Pod a DaemonSet owns."""

    def describe(self) -> str:
        parts = []
        if self.daemonset:
            parts.append("is a DaemonSet")
        if self.namespaces:
            parts.append(f"runs in namespace {' or '.join(self.namespaces)}")
        if self.node_labels:
            labels = " or ".join(f"{k}*" if k.endswith((".", "/")) else k for k in self.node_labels)
            parts.append(f"runs only on nodes labelled {labels}")
        if self.host_paths:
            parts.append(f"mounts {' or '.join(self.host_paths)}")
        if self.init_images:
            parts.append(f"runs {' or '.join(self.init_images)} as an init container")
        return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else "".join(parts)


@dataclass(frozen=True)
class SystemComponent:
    name: str
    role: str
    """What it is, as messages and docs name it."""
    images: tuple[str, ...]
    """Repository paths of its own images (``nvidia/k8s-device-plugin``); a trailing ``/`` matches every
    repository under that path."""
    helper_images: tuple[str, ...] = ()
    """Further repositories its init containers and sidecars come from, which do not identify it alone."""
    evidence: tuple[Evidence, ...] = ()
    """Alternatives, one of which must hold besides the images (none: the images suffice)."""
    # what its upstream manifests grant
    privileged: bool = False
    host_network: bool = False
    host_pid: bool = False
    host_ipc: bool = False
    host_ports: bool = False
    host_paths: tuple[str, ...] = ()
    """Host paths it mounts, each with the paths below it; :data:`HOST_ROOT` is the root alone, :data:`ANY_PATH`
    any path."""
    capabilities: tuple[str, ...] = ()
    runs_as_root: bool = False
    sees_all_gpus: bool = False
    """It monitors or manages every GPU of the node (``NVIDIA_VISIBLE_DEVICES=all``) without requesting one."""
    sources: tuple[str, ...] = ()
    """The upstream files that show the grants: ``owner/repo@ref path``."""

    def evidence_text(self) -> str:
        return " or ".join(e.describe() for e in self.evidence)

    def grants(self) -> list[str]:
        """What its upstream manifests grant, in words."""
        out = []
        if self.privileged:
            out.append("privileged")
        if self.capabilities:
            out.append(f"capabilities {', '.join(self.capabilities)}")
        out += [name for name, on in (("hostNetwork", self.host_network), ("hostPID", self.host_pid),
                                      ("hostIPC", self.host_ipc), ("hostPort", self.host_ports)) if on]
        if ANY_PATH in self.host_paths:
            out.append("any host path")
        elif self.host_paths:
            out.append("host paths " + ", ".join(self.host_paths))
        if self.runs_as_root:
            out.append("root")
        return out


PAUSE_IMAGES = ("pause",)
"""Images that only hold a pod open (registry.k8s.io/pause, gke.gcr.io/pause): they grant nothing and may run
beside any component (GKE's installers do their work in init containers and then hold the pod with pause)."""

BASE_IMAGES = ("ubuntu", "alpine", "debian", "busybox")
"""General-purpose images that identify nothing alone: a component listing one needs every piece of its role's
evidence (namespace, node selection, host path)."""

_OPERATOR_INIT_IMAGES = ("nvidia/cloud-native/gpu-operator-validator", "nvidia/gpu-operator",
                         "nvidia/cloud-native/k8s-driver-manager")
"""The GPU Operator's validator (its own image since v26) and driver manager: the init containers its operands
wait in."""

_OPERAND_IMAGES = (
    "nvidia/driver", "nvidia/k8s/container-toolkit", "nvidia/k8s-device-plugin", "nvidia/gpu-feature-discovery",
    "nvidia/cloud-native/dcgm", "nvidia/k8s/dcgm-exporter", "nvidia/cloud-native/k8s-mig-manager",
    "nvidia/cloud-native/nvidia-fs", "nvidia/cloud-native/gdrdrv", "nvidia/cloud-native/vgpu-device-manager",
    "nvidia/cloud-native/k8s-kata-manager", "nvidia/cloud-native/k8s-cc-manager", "nvidia/kubevirt-gpu-device-plugin",
    "nvidia/cloud-native/nvidia-sandbox-device-plugin", *_OPERATOR_INIT_IMAGES)
"""The operand images of the GPU Operator chart's ``values.yaml`` (ClusterPolicy defaults)."""

_GKE_EVIDENCE = Evidence(namespaces=("kube-system",), node_labels=(GKE_ACCELERATOR_LABEL,))
_CEA = "GoogleCloudPlatform/container-engine-accelerators"

SYSTEM_COMPONENTS: tuple[SystemComponent, ...] = (
    SystemComponent(
        "gpu-operator-operand", "a GPU Operator operand", _OPERAND_IMAGES,
        evidence=(Evidence(node_labels=(GPU_OPERATOR_DEPLOY_LABELS,)), Evidence(init_images=_OPERATOR_INIT_IMAGES)),
        privileged=True, host_network=True, host_pid=True, host_ipc=True, host_paths=(ANY_PATH,),
        runs_as_root=True, sees_all_gpus=True,
        sources=("NVIDIA/gpu-operator@v26.7.0 assets/state-*/0*_daemonset.yaml (every operand privileged, the host "
                 "root mounted; hostPID for the driver, toolkit and MPS daemon, hostIPC for the MIG and vGPU managers)",
                 "NVIDIA/gpu-operator@v26.7.0 api/nvidia/v1/clusterpolicy_types.go (hostNetwork per operand)",
                 "NVIDIA/gpu-operator@v26.7.0 controllers/object_controls.go (the container runtime's config and "
                 "socket directories)")),
    SystemComponent(
        "nvidia-device-plugin", "NVIDIA's device plugin (with GPU feature discovery and the MPS control daemon)",
        ("nvidia/k8s-device-plugin", "nvidia/gpu-feature-discovery"),
        privileged=True, host_network=True, host_pid=True, capabilities=("SYS_ADMIN",),
        host_paths=("/var/lib/kubelet/device-plugins", "/var/run/cdi", "/run/nvidia/mps", "/run/nvidia/driver",
                    HOST_ROOT, "/etc/kubernetes/node-feature-discovery/features.d", "/sys"),
        runs_as_root=True, sees_all_gpus=True,
        sources=("NVIDIA/k8s-device-plugin@v0.20.0 deployments/static/nvidia-device-plugin.yml (the device-plugin "
                 "directory only), nvidia-device-plugin-compat-with-cpumanager.yml (privileged)",
                 "NVIDIA/k8s-device-plugin@v0.20.0 deployments/helm/nvidia-device-plugin/templates/_helpers.tpl "
                 "(SYS_ADMIN for MIG or volume-mounts, privileged with compatWithCPUManager), "
                 "daemonset-device-plugin.yml (hostNetwork option, MPS root, driver root, /var/run/cdi), "
                 "daemonset-gfd.yml, daemonset-mps-control-daemon.yml (privileged, hostPID), values.yaml "
                 "(nvidiaDriverRoot '/' or '/run/nvidia/driver', gfd.securityContext privileged)")),
    SystemComponent(
        "gke-dcgm", "NVIDIA DCGM and dcgm-exporter as GKE's Managed Service for Prometheus installs them",
        ("nvidia/k8s/dcgm-exporter", "nvidia/cloud-native/dcgm"),
        evidence=(Evidence(node_labels=(GKE_ACCELERATOR_LABEL,), host_paths=("/home/kubernetes/bin/nvidia",),
                           daemonset=True),),
        privileged=True, host_ports=True, host_paths=("/home/kubernetes/bin/nvidia", "/var/lib/kubelet/pod-resources"),
        runs_as_root=True, sees_all_gpus=True,
        sources=("GoogleCloudPlatform/prometheus-engine@03303ccc7e3f examples/nvidia-dcgm/exporter.yaml (the "
                 "exporter cloud.google.com/stackdriver/docs/managed-prometheus/exporters/nvidia-dcgm applies: "
                 "nv-hostengine privileged with hostPort 5555, dcgm-exporter privileged, both on "
                 "cloud.google.com/gke-accelerator nodes reading the driver from /home/kubernetes/bin/nvidia)",
                 "GoogleCloudPlatform/ai-on-gke@8676d66db221 benchmarks/infra/accelerator-cluster/stage-2/modules/"
                 "gke-setup/modules/nvidia-dcgm/manifest-templates/01-ds-dcgm.yaml, 02-ds-exporter.yaml (the same "
                 "pair)")),
    SystemComponent(
        "dcgm-exporter", "NVIDIA's dcgm-exporter (its manifest and Helm chart)", ("nvidia/k8s/dcgm-exporter",),
        host_network=True, host_pid=True, capabilities=("SYS_ADMIN",),
        host_paths=("/var/lib/kubelet/pod-resources", "/tmp/dcgm-exporter-debug"), runs_as_root=True,
        sees_all_gpus=True,
        sources=("NVIDIA/dcgm-exporter@4.5.3-4.8.2 deployment/values.yaml (runAsUser 0, SYS_ADMIN 'required for "
                 "profiling metrics', hostPID and hostNetwork options, kubeletPath, debugDump.directory)",
                 "NVIDIA/dcgm-exporter@4.5.3-4.8.2 deployment/templates/daemonset.yaml, dcgm-exporter.yaml")),
    SystemComponent(
        "mig-manager", "NVIDIA's MIG manager (its standalone DaemonSet)", ("nvidia/cloud-native/k8s-mig-manager",),
        privileged=True, host_pid=True, host_ipc=True, host_paths=(HOST_ROOT, "/sys"), runs_as_root=True,
        sees_all_gpus=True,
        sources=("NVIDIA/mig-parted@v0.15.0 deployments/container/nvidia-mig-manager-example.yaml",)),
    SystemComponent(
        "node-feature-discovery", "node-feature-discovery's worker", ("nfd/node-feature-discovery",),
        host_network=True,
        host_paths=("/etc/kubernetes/node-feature-discovery", "/boot", "/etc/os-release", "/sys", "/usr/lib", "/lib",
                    "/usr/src", "/proc/swaps"),
        sources=("kubernetes-sigs/node-feature-discovery chart v0.19.0, as NVIDIA/gpu-operator@v26.7.0 vendors it: "
                 "deployments/gpu-operator/charts/node-feature-discovery/templates/worker.yaml, values.yaml "
                 "(worker.hostNetwork)",)),
    SystemComponent(
        "gpushare-device-plugin", "Alibaba's gpushare device plugin (cGPU)", ("acs/k8s-gpushare-plugin",),
        host_network=True, host_paths=("/var/lib/kubelet/device-plugins",), runs_as_root=True, sees_all_gpus=True,
        sources=("AliyunContainerService/gpushare-device-plugin@45fb8b886922 device-plugin-ds.yaml",)),
    SystemComponent(
        "fake-gpu-operator", "run:ai's fake-gpu-operator (simulated GPUs)",
        ("run-ai/fake-gpu-operator/", "nvidia/nvml-mock"), helper_images=("ubuntu",),
        privileged=True, capabilities=("CHOWN", "FOWNER", "MKNOD"),
        host_paths=("/var/lib/kubelet/device-plugins", "/var/lib/kubelet/plugins", "/var/lib/kubelet/plugins_registry",
                    "/var/lib/runai", "/var/lib/fake-gpu-operator", "/var/lib/nvml-mock", "/var/run/cdi", "/etc/cdi",
                    "/run/nvidia"),
        runs_as_root=True, sees_all_gpus=True,
        sources=("run-ai/fake-gpu-operator@v0.2.0 deploy/fake-gpu-operator/templates (device-plugin/_helpers.tpl, "
                 "status-exporter/_helpers.tpl and daemonset.yaml with its ubuntu hostpath-init, "
                 "compute-domain-dra-plugin/_helpers.tpl, dra-device-plugin/templates/kubeletplugin.yaml)",
                 "run-ai/fake-gpu-operator@v0.2.0 internal/status-updater/controllers/mock/resources.go (nvml-mock)")),
    SystemComponent(
        "node-exporter", "prometheus node-exporter", ("prometheus/node-exporter",),
        helper_images=("brancz/kube-rbac-proxy",), host_network=True, host_pid=True, host_ports=True,
        host_paths=(HOST_ROOT, "/proc", "/sys"),
        sources=("prometheus-community/helm-charts@prometheus-node-exporter-4.56.1 charts/prometheus-node-exporter/"
                 "values.yaml (hostNetwork, hostPID, hostRootFsMount, kubeRBACProxy), templates/daemonset.yaml",)),
    SystemComponent(
        "gke-nvidia-driver-installer", "GKE's NVIDIA driver installer",
        ("cos-nvidia-installer", "gke-nvidia-installer", "ubuntu-nvidia-driver-installer", "cos-gpu-installer",
         "nvidia-partition-gpu", "nvidia-persistenced-installer"),
        evidence=(_GKE_EVIDENCE,), privileged=True, host_network=True, host_pid=True,
        host_paths=(HOST_ROOT, "/dev", "/boot", "/etc/nvidia", "/home/kubernetes/bin/nvidia", "/var/lib/cos-tools"),
        runs_as_root=True, sees_all_gpus=True,
        sources=(f"{_CEA}@992db8125755 nvidia-driver-installer/cos/daemonset-preloaded.yaml, "
                 "daemonset-nvidia-mig.yaml, daemonset-confidential.yaml",
                 f"{_CEA}@992db8125755 nvidia-driver-installer/ubuntu/daemonset-preloaded.yaml, daemonset.yaml",
                 f"{_CEA}@992db8125755 partition_gpu/partition_gpu.yaml")),
    SystemComponent(
        "gke-nvidia-gpu-device-plugin", "GKE's NVIDIA GPU device plugin", ("gke-release/nvidia-gpu-device-plugin",),
        evidence=(_GKE_EVIDENCE,), privileged=True,
        host_paths=("/var/lib/kubelet/device-plugins", "/var/lib/kubelet/pod-resources", "/dev", "/proc",
                    "/etc/nvidia", "/home/kubernetes/bin/nvidia"),
        runs_as_root=True, sees_all_gpus=True,
        sources=(f"{_CEA}@992db8125755 cmd/nvidia_gpu/device-plugin.yaml",)),
    SystemComponent(
        "gke-gpu-node-installer", "GKE's GPU node installer on a base image (the NVIDIA container toolkit installer)",
        ("ubuntu", "alpine", "gce-ai-infra/gpudirect-gib/"),
        evidence=(Evidence(namespaces=("kube-system",), node_labels=(GKE_ACCELERATOR_LABEL,),
                           host_paths=("/home/kubernetes/bin/nvidia",), daemonset=True),),
        privileged=True, host_network=True, host_pid=True,
        host_paths=("/home/kubernetes/bin/nvidia", "/home/kubernetes/bin/gib"), runs_as_root=True,
        sources=(f"{_CEA}@c7f8e8701430 gpudirect-rdma/nccl-rdma-installer-a4x.yaml (init container "
                 "nvidia-container-toolkit-installer, ubuntu:22.04, privileged, copying the toolkit into "
                 "/home/kubernetes/bin/nvidia; applied after the driver installer)",)),
)
"""Recognised deployments, the ones that need evidence before those their images alone identify."""

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


def path_within(path: str, granted: tuple[str, ...]) -> bool:
    """Whether a host path is one of ``granted`` or below one (:data:`HOST_ROOT` only itself)."""
    path = "/" + str(path).strip("/")
    for p in granted:
        if p == ANY_PATH:
            return True
        p = "/" + p.strip("/")
        if path == p or (p != HOST_ROOT and path.startswith(p + "/")):
            return True
    return False


def docs_table() -> str:
    """The recognised deployments as docs/policies.md lists them."""
    rows = ["| Component | Recognised by | Upstream grants | Source |", "|---|---|---|---|"]
    for c in SYSTEM_COMPONENTS:
        images = ", ".join(f"`{i}`" for i in c.images)
        also = f"; and it {c.evidence_text()}" if c.evidence else ""
        rows.append(f"| {c.role} (`{c.name}`) | images {images}{also} | {'; '.join(c.grants())} | "
                    f"{'<br>'.join(c.sources)} |")
    return "\n".join(rows)
