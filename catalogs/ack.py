"""ACK cluster facts: the add-ons a cluster gets and when, network plugins, cluster specs and names.

Every fact here is listed with its upstream source in ``docs/ack.md``. Version pins of add-ons live in
:data:`catalogs.versions.ACK_ADDONS`; this module says what each add-on is for and how it is installed.

Two ways to install an ACK add-on, and the difference decides where each one goes:

* ``ManagedKubernetes.addons`` is sent only by the provider's create call (``CreateCluster``); its read and update
  never look at it, so a later change to the list does nothing. Only what the cluster cannot be created
  without belongs there: the network plugin and the disk CSI driver.
* ``cs.KubernetesAddon`` installs, upgrades or adopts one add-on on a running cluster. Everything else goes
  there, so it can be added later and other resources can wait for it.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Optional

from gpuplatform.catalogs.network import TERWAY_POLICY_CONFIG
from gpuplatform.catalogs.sharing import ACK_LEGACY_SHARING_ADDON, ACK_SHARING_ADDON, AUTOSCALED_POOL_LABEL

PRO_SPECS = ("ack.pro.small",)
"""Cluster specs of ACK Pro (managed node pools, cGPU through ack-ai-installer)."""
CLUSTER_SPECS = ("ack.pro.small", "ack.standard")
"""Cluster specs the package creates (a subset of the provider's list, which adds the Pro XL/2XL/4XL tiers)."""
PRO_ONLY_FEATURES = ("managed-node-pools", "cgpu", "mig", "fluid")
"""What ACK offers on Pro clusters only: managed node pools (auto repair), cGPU and MIG through ack-ai-installer,
and ack-fluid (the weights caches). A dedicated cluster runs cGPU through its legacy ack-cgpu component instead."""
FEATURES = ("arms", "ack-alibaba-cloud-metrics-adapter", "InternalLoadBalancer", "cgpu", "ingress-addon")
"""What an ACK cluster offers beyond plain Kubernetes, by the config value that asks for it: managed Prometheus
(``monitoring.backend: arms``), ACK's metrics adapter, the intranet SLB Service type, cGPU sharing, and the
nginx-ingress-controller add-on."""
CLUSTER_CHECKS = ("credential", "csi-driver", "pod-network")
"""``gpuplatform verify`` checks that only an ACK cluster answers: the kubeconfig's credential lifetime, the disk CSI
driver and the pod network of the network plugin."""

CLUSTER_NAME = re.compile(r"^[A-Za-z0-9][-_A-Za-z0-9]{0,62}$")
"""The provider accepts 1..63 characters; we also keep to ASCII letters, digits, '-' and '_', not leading with a
symbol (a subset every ACK name rule accepts)."""
CLUSTER_NAME_RULE = "1 to 63 characters: letters, digits, '-' and '_', starting with a letter or digit"

NETWORK_PLUGINS = ("flannel", "terway")
DEFAULT_POD_CIDR = "172.20.0.0/16"
"""Flannel pod CIDR when the stack sets none."""


@dataclass(frozen=True)
class AckAddon:
    name: str
    """ACK add-on name (``cs.KubernetesAddon.name``; ``ManagedKubernetes.addons[].name``)."""
    purpose: str
    at_creation: bool = False
    """Sent with the cluster's create call (only what the cluster cannot start without)."""
    config: dict = field(default_factory=dict)
    """Add-on configuration (JSON-encoded for the provider). Default none."""
    disabled_at_creation: bool = False
    """Listed at creation with ``disabled: true``: ACK installs it by default otherwise."""
    required: dict = field(default_factory=dict)
    """Config keys the stack relies on, with the values it accepts: an add-on found installed on an adopted cluster
    is adopted as it is unless one of these differs (then the stack refuses, rather than rewrite it). Default
    none: any installed config serves."""

    def creation_entry(self, version: str | None) -> dict:
        """One item of ``ManagedKubernetes.addons``."""
        entry: dict = {"name": self.name}
        if self.config and not self.disabled_at_creation:
            entry["config"] = go_json(self.config)
        if version:
            entry["version"] = version
        if self.disabled_at_creation:
            entry["disabled"] = True
        return entry


ADDONS: dict[str, AckAddon] = {
    a.name: a
    for a in (
        AckAddon("flannel", "network plugin (flannel; pods get addresses from the cluster's pod CIDR)", True),
        # with network policy support, or the workloads' NetworkPolicies would be accepted and ignored
        AckAddon("terway-eniip", "network plugin (Terway; pods get addresses from the pod vSwitches; enforces "
                 "NetworkPolicy)", True, config=dict(TERWAY_POLICY_CONFIG)),
        AckAddon("csi-plugin", "disk, NAS and OSS CSI node plugin", True),
        AckAddon("managed-csiprovisioner", "CSI provisioner run by ACK (Pro clusters)", True),
        AckAddon("csi-provisioner", "CSI provisioner in the cluster (ACK Basic)", True),
        # ACK's default install has an Internet SLB: off at creation; a stack with an nginx Ingress installs it
        # later with an intranet SLB (IngressSlbNetworkType: pulumi-alicloud cs/_inputs.py addon example)
        AckAddon("nginx-ingress-controller", "ingress-nginx, for Ingresses of class nginx", True,
                 config={"IngressSlbNetworkType": "intranet"}, disabled_at_creation=True,
                 required={"IngressSlbNetworkType": ("intranet",)}),
        AckAddon("arms-prometheus", "ACK managed Prometheus (ARMS) and its GPU exporter",
                 config={"prometheusMode": "default"}),
        AckAddon("ack-node-problem-detector", "node problem detection, needed by node pool auto repair"),
        AckAddon("node-lifecycle-controller", "node lifecycle controller, needed by node pool auto repair"),
        AckAddon(ACK_SHARING_ADDON, "GPU sharing (cGPU) and MIG partitioning on Pro clusters"),
    )
}

FLUID_COMPONENT = "ack-fluid"
"""The cloud-native AI suite's dataset acceleration (Fluid), which serves ``volumes[].fluid``."""
PREREQUISITES: dict[str, str] = {
    ACK_LEGACY_SHARING_ADDON: (
        "legacy cGPU of a dedicated cluster: install ack-cgpu from the ACK console (Marketplace > App Catalog > "
        "ack-cgpu; Helm release 'cgpu' in kube-system). ACK installs it there only ('You can install the ack-cgpu "
        "component only on ACK dedicated clusters from the Marketplace page in the console': ack-cgpu release "
        "notes); it is not a cluster add-on (the provider's and the SDK's add-on lists do not name it) and its "
        "chart is not published elsewhere. gpuplatform verify (sharing.cgpu-component) checks it runs"),
    FLUID_COMPONENT: (
        "Fluid, for the weights caches of volumes[].fluid: on ACK Pro the ack-fluid component of the cloud-native AI "
        "suite (ACK console > Cloud-native AI Suite > deploy ack-fluid, or enable Fluid acceleration when deploying "
        "the suite; ACK 'ack-fluid' overview: ACK Pro, Serverless Pro and Edge Pro clusters only, not on "
        "ContainerOS nodes; uninstall an open-source Fluid first). ACK documents it as a component of the suite, "
        "not as a cluster add-on. On another cluster, open-source Fluid (Helm chart fluid/fluid from "
        "fluid-cloudnative.github.io/charts, namespace fluid-system)"),
}
"""Components a stack needs that ACK documents installing only by hand: named by the plan, checked by verify."""

NETWORK_ADDON = {"flannel": "flannel", "terway": "terway-eniip"}
"""The network plugin add-on per CNI choice."""
AUTO_REPAIR_ADDONS = ("ack-node-problem-detector", "node-lifecycle-controller")
"""What node pool auto repair needs (pulumi-alicloud ``cs.NodePool`` ``management.auto_repair`` docstring)."""
ARMS_ADDON = "arms-prometheus"
"""ACK managed Prometheus: creates the cluster's ARMS instance and the ``arms-prom`` exporters."""
INGRESS_ADDON = "nginx-ingress-controller"
"""ACK's NGINX Ingress controller (ingressClassName ``nginx``)."""


def creation_addon_names(network_plugin: str, cluster_spec: str) -> list[str]:
    """What a new cluster is created with: its network plugin, the disk CSI driver and provisioner, and the
    default Internet ingress switched off."""
    provisioner = "managed-csiprovisioner" if cluster_spec in PRO_SPECS else "csi-provisioner"
    return [NETWORK_ADDON[network_plugin], "csi-plugin", provisioner, "nginx-ingress-controller"]


def creation_addons(network_plugin: str, cluster_spec: str, versions: dict[str, str | None]) -> list[dict]:
    """``ManagedKubernetes.addons`` for a new cluster."""
    return [ADDONS[n].creation_entry(versions.get(n)) for n in creation_addon_names(network_plugin, cluster_spec)]


def go_json(value) -> str:
    """JSON as Go's ``json.Marshal`` writes a decoded object: keys sorted, no spaces, ``<``, ``>`` and ``&``
    escaped (Go ``encoding/json``). The provider's Read stores an add-on's ``config`` in this form
    (resource_alicloud_cs_kubernetes_addon.go: ``json.Marshal(mergeConfigValues(local, remote))``) and has no diff
    suppression, so a config sent in any other spelling differs from the state on every later ``pulumi up``."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


# ------------------------------------------------------------------------------------------------ versions
ACK_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)-aliyun\.(\d+)$")
"""The form of every ACK Kubernetes version (``1.35.2-aliyun.1``): what CreateCluster takes and what the provider's
Read stores as ``version`` (DescribeClusterDetail ``current_version``)."""
ACK_VERSION_RULE = "an ACK version 'X.Y.Z-aliyun.N', e.g. '1.35.2-aliyun.1'"


def parse_ack_version(text: str) -> tuple[int, int, int, int] | None:
    m = ACK_VERSION.match(text or "")
    return tuple(int(g) for g in m.groups()) if m else None  # type: ignore[return-value]


STACK_TAG = "gpuplatform.io/stack"
"""Tag of a cluster the package creates: ``<project>/<stack>``. The next ``pulumi up`` finds its own cluster by name
and this tag (``cs.get_clusters``) to read the version ACK runs. User tags round-trip: the provider's Read drops
only ACK's own (``aliyun*``, ``acs:*``: resource_alicloud_cs_kubernetes.go ``flattenTags``, tags.go
``tagIgnored``)."""

ENDPOINT_TAG = "gpuplatform.io/public-api-endpoint"
"""Tag a created cluster carries: whether it was created with an Internet API endpoint (``slb_internet_enabled``
reaches ACK only in the create call), so a later run can refuse a stack that states the other."""


def endpoint_tag_value(public: bool) -> str:
    return "true" if public else "false"


CLUSTER_FIXED_INPUTS = {"ipStack": "ipv4", "clusterDomain": "cluster.local"}
"""ForceNew inputs of ``ManagedKubernetes`` the stack does not expose, sent with the value a cluster is created
with and then never compared again (``ignore_changes``): the provider's Read writes back whatever ACK reports
(``ip_stack``, ``cluster_domain``), and a different spelling would replace the cluster."""
CLUSTER_FIXED_INPUTS_SNAKE = {"ip_stack": "ipv4", "cluster_domain": "cluster.local"}
"""The same, as ``ManagedKubernetes`` keyword arguments."""

PROXY_MODES = ("ipvs", "iptables")
IPVS_DEPRECATED_MINOR = 35
"""Kubernetes deprecates kube-proxy's IPVS mode in 1.35 (Kubernetes v1.35 release notes, KEP-5495 "Deprecate
ipvs mode in kube-proxy")."""


def default_proxy_mode(kubernetes_version: str) -> str:
    """kube-proxy mode a new cluster is created with (``proxy_mode``; ForceNew, so sent at creation only and
    ignored afterwards: :func:`cluster_ignored_inputs`). ``ipvs`` is ACK's documented default (CreateCluster
    ``proxy_mode``; the provider's schema ``Default: "ipvs"``, which it sends when the input is left out); from
    Kubernetes 1.35, where upstream deprecates IPVS, ``iptables``. Which mode ACK's console picks for 1.35 is not
    documented (UNVERIFIED, docs/ack.md); ``cluster.proxyMode`` overrides it."""
    parsed = parse_ack_version(kubernetes_version)
    minor = parsed[1] if parsed else None
    if minor is None:
        m = re.match(r"^1\.(\d+)", kubernetes_version or "")
        minor = int(m.group(1)) if m else None
    return "iptables" if minor is not None and minor >= IPVS_DEPRECATED_MINOR else "ipvs"


FLANNEL_NODE_CIDR_MASK = 24
"""``node_cidr_mask`` of a flannel cluster: the provider's default (schema ``Default: 24``), sent explicitly; every
cluster the package created before sent it implicitly, and it is ForceNew."""


def cluster_ignored_inputs(network_plugin: str) -> list[str]:
    """ForceNew and read-back inputs of a cluster the stack never changes after creation, so a value ACK reports
    differently can neither replace the cluster nor show a change on every run:

    * ``profile``, ``ipStack``, ``clusterDomain``, ``proxyMode``, ``nodeCidrMask`` (ForceNew; Read writes what ACK
      reports, e.g. a Terway cluster's node CIDR mask);
    * ``podCidr`` on Terway (ForceNew; not the stack's: Terway takes pod addresses from vSwitches);
    * ``timezone`` (Read writes ACK's value; Optional, not Computed, so an unset timezone differs from it);
    * ``addons`` and ``podVswitchIds`` are create-only (Read and Update never look at them)."""
    ignored = ["profile", "ipStack", "clusterDomain", "proxyMode", "nodeCidrMask", "timezone"]
    if network_plugin == "terway":
        ignored.append("podCidr")
    return ignored


# ------------------------------------------------------------------------------------------------ system pool
@dataclass(frozen=True)
class CpuInstanceType:
    name: str
    vcpus: int
    memory_gib: int
    source: str


SYSTEM_INSTANCE_TYPES: dict[str, CpuInstanceType] = {
    t.name: t for t in (
        CpuInstanceType("ecs.g7.xlarge", 4, 16, "ECS general purpose instance families (g7)"),
        CpuInstanceType("ecs.g6.xlarge", 4, 16, "ECS general purpose instance families (g6)"),
        CpuInstanceType("ecs.g7.2xlarge", 8, 32, "ECS general purpose instance families (g7)"),
        CpuInstanceType("ecs.g7.4xlarge", 16, 64, "ECS general purpose instance families (g7)"),
    )
}
"""CPU instance types a system pool may use. ACK lists types with fewer than 4 vCPUs as unsupported for nodes
("Select ECS instances to create the master and worker nodes of an ACK cluster"); the default is general purpose
(1 vCPU : 4 GiB), since Prometheus and Grafana are memory-bound."""
SYSTEM_POOL_INSTANCE_TYPES = ("ecs.g7.xlarge", "ecs.g6.xlarge")
"""Default: 4 vCPU / 16 GiB, tried in order (the second where the first is out of stock in a zone)."""
SYSTEM_POOL_NODES = 2
"""Default size, and the least: ACK's CoreDNS keeps its replicas on different nodes (required anti-affinity by
hostname since v1.8.4.3) and ACK recommends at least 2 CoreDNS pods ("Configure CoreDNS for high availability"),
so one node leaves a replica Pending."""
SYSTEM_POOL_NAME = "system"
AUTOSCALED_LABEL = AUTOSCALED_POOL_LABEL


def reserved_resources(vcpus: int, memory_gib: float, max_pods: int | None) -> tuple[int, int]:
    """ESTIMATE of what ACK withholds from a node's allocatable (millicores, MiB): Allocatable = Capacity -
    Reserved - eviction threshold (ACK "Resource reservation policy"). The per-size table is the one a third-party
    autoscaler reads off that page (cloudpilot-ai/karpenter-provider-alibabacloud
    ``pkg/providers/instancetype/types.go``): CPU 6% of the first core, 1% of the second, 0.5% of the third and
    fourth, 0.25% of each further; memory min(11 MiB x max pods + 255 MiB, 25% of memory); plus the kubelet's
    default hard eviction threshold, 100 Mi. ``max_pods`` None (Terway: it depends on the ENIs) takes the 25%
    cap. ``gpuplatform verify`` (``nodes.present``) shows the real figures."""
    shares = [60, 10, 5, 5]
    cpu = sum(shares[:vcpus]) + max(0, vcpus - 4) * 2.5
    memory_mib = memory_gib * 1024
    pod_share = 11 * max_pods + 255 if max_pods is not None else memory_mib
    return int(round(cpu)), int(min(pod_share, 0.25 * memory_mib)) + 100


def flannel_max_pods(node_cidr_mask: int = FLANNEL_NODE_CIDR_MASK) -> int:
    """Pods a flannel node runs: its pod range holds 2^(32 - mask) - 1 (TF doc ``node_cidr_mask``: "24 means
    2^(32-24)-1=255")."""
    return 2 ** (32 - node_cidr_mask) - 1


ENI_LIMITS: dict[str, tuple[int, int]] = {
    "ecs.g7.xlarge": (4, 15), "ecs.g6.xlarge": (3, 10), "ecs.g7.2xlarge": (4, 15), "ecs.g7.4xlarge": (8, 30),
}
"""Instance type -> (ENIs, private IPv4 addresses per ENI), from the ECS instance family tables (g6, g7). Types
not listed (the GPU types) have no Terway pod limit here: their max pods is not checked."""


def terway_max_pods(instance_type: str) -> Optional[int]:
    """Pods a Terway (ENIIP) node runs: (ENIs - 1) x private IPs per ENI (ACK "Work with Terway": the primary ENI
    serves the node); None where the type's ENI limits are not in :data:`ENI_LIMITS`."""
    limits = ENI_LIMITS.get(instance_type)
    return None if limits is None else (limits[0] - 1) * limits[1]


def zone_in_region(zone_id: str, region: str) -> bool:
    """Alibaba zone ids are the region id plus a zone letter: ``cn-hangzhou-k``, ``ap-southeast-1a``."""
    return re.fullmatch(re.escape(region) + r"-?[a-z]", zone_id) is not None
