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

from gpuplatform.catalogs.sharing import ACK_LEGACY_SHARING_ADDON, ACK_SHARING_ADDON

PRO_SPECS = ("ack.pro.small",)
"""Cluster specs of ACK Pro (managed node pools, cGPU through ack-ai-installer)."""
CLUSTER_SPECS = ("ack.pro.small", "ack.standard")
"""Cluster specs the package creates (a subset of the provider's list, which adds the Pro XL/2XL/4XL tiers)."""

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

    def creation_entry(self, version: str | None) -> dict:
        """One item of ``ManagedKubernetes.addons``."""
        entry: dict = {"name": self.name}
        if self.config and not self.disabled_at_creation:
            entry["config"] = json.dumps(self.config, sort_keys=True)
        if version:
            entry["version"] = version
        if self.disabled_at_creation:
            entry["disabled"] = True
        return entry


ADDONS: dict[str, AckAddon] = {
    a.name: a
    for a in (
        AckAddon("flannel", "network plugin (flannel; pods get addresses from the cluster's pod CIDR)", True),
        AckAddon("terway-eniip", "network plugin (Terway; pods get addresses from the pod vSwitches)", True),
        AckAddon("csi-plugin", "disk, NAS and OSS CSI node plugin", True),
        AckAddon("managed-csiprovisioner", "CSI provisioner run by ACK (Pro clusters)", True),
        AckAddon("csi-provisioner", "CSI provisioner in the cluster (ACK Basic)", True),
        # ACK's default install has an Internet SLB: off at creation; a stack with an nginx Ingress installs it
        # later with an intranet SLB (IngressSlbNetworkType: pulumi-alicloud cs/_inputs.py addon example)
        AckAddon("nginx-ingress-controller", "ingress-nginx, for Ingresses of class nginx", True,
                 config={"IngressSlbNetworkType": "intranet"}, disabled_at_creation=True),
        AckAddon("arms-prometheus", "ACK managed Prometheus (ARMS) and its GPU exporter",
                 config={"prometheusMode": "default"}),
        AckAddon("ack-node-problem-detector", "node problem detection, needed by node pool auto repair"),
        AckAddon("node-lifecycle-controller", "node lifecycle controller, needed by node pool auto repair"),
        AckAddon(ACK_SHARING_ADDON, "GPU sharing (cGPU) and MIG partitioning on Pro clusters"),
        AckAddon(ACK_LEGACY_SHARING_ADDON, "legacy cGPU on dedicated clusters"),
    )
}

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


def zone_in_region(zone_id: str, region: str) -> bool:
    """Alibaba zone ids are the region id plus a zone letter: ``cn-hangzhou-k``, ``ap-southeast-1a``."""
    return re.fullmatch(re.escape(region) + r"-?[a-z]", zone_id) is not None
