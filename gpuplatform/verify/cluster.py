"""Checks of the cluster itself: the kubeconfig credential, and on ACK the disk CSI driver and the pod network
(the ACK behaviours docs/ack.md lists as unverified)."""
from __future__ import annotations

import datetime as dt
import ipaddress
import ssl
from typing import Optional

from kubernetes import client as k8s

from gpuplatform.components.config import PlatformConfig
from gpuplatform.components.pools import all_pool_facts
from gpuplatform.verify.kube import REQUEST_TIMEOUT, _api_error, _selector_string
from gpuplatform.verify.results import CheckResult, _fail, _pass

ACK_DISK_CSI_DRIVER = "diskplugin.csi.alibabacloud.com"
"""CSIDriver the ACK disk CSI add-ons (csi-plugin + managed-csiprovisioner) register
(kubernetes-sigs/alibaba-cloud-csi-driver)."""
CREDENTIAL_MIN_DAYS = 30
"""A kubeconfig credential closer to its end than this is treated as temporary: ``destroy``/``refresh`` read the
credential stored in the state, and would fail once it expires."""


def certificate_not_after(cert_file: str) -> Optional[dt.datetime]:
    """Expiry of a PEM client certificate, read with the standard library's certificate decoder."""
    try:
        decoded = ssl._ssl._test_decode_cert(cert_file)  # type: ignore[attr-defined]
    except (AttributeError, OSError, ssl.SSLError, ValueError):
        return None
    return dt.datetime.strptime(decoded["notAfter"], "%b %d %H:%M:%S %Y %Z").replace(tzinfo=dt.timezone.utc)


def check_credential(api_client: k8s.ApiClient, now: Optional[dt.datetime] = None) -> CheckResult:
    """The kubeconfig credential is not a temporary one (docs/ack.md, Kubeconfig)."""
    now = now or dt.datetime.now(dt.timezone.utc)
    cert_file = getattr(api_client.configuration, "cert_file", None)
    if not cert_file:
        return _pass("credential.lifetime", "kubeconfig", "no client certificate (token or exec credential plugin)")
    not_after = certificate_not_after(cert_file)
    if not_after is None:
        return _fail("credential.lifetime", "kubeconfig", "the client certificate cannot be read",
                     "the kubeconfig's client-certificate-data is not a PEM certificate")
    left = not_after - now
    if left < dt.timedelta(days=CREDENTIAL_MIN_DAYS):
        return _fail("credential.lifetime", "kubeconfig",
                     f"the client certificate expires {not_after:%Y-%m-%d %H:%M} UTC ({left.days} days left)",
                     "a temporary ACK credential (temporary_duration_minutes): pulumi destroy/refresh fail once "
                     "it expires; use the long-lived ACK kubeconfig (renew it in the ACK console if it is old)")
    return _pass("credential.lifetime", "kubeconfig", f"the client certificate is valid until {not_after:%Y-%m-%d}")


def check_csi_driver(storage: k8s.StorageV1Api) -> CheckResult:
    subject = f"csidriver/{ACK_DISK_CSI_DRIVER}"
    try:
        storage.read_csi_driver(ACK_DISK_CSI_DRIVER, _request_timeout=REQUEST_TIMEOUT)
    except Exception as exc:  # noqa: BLE001
        return _fail("cluster.csi-driver", subject, f"not registered ({_api_error(exc)})",
                     "the cluster was created without the csi-plugin/managed-csiprovisioner add-ons, or ACK "
                     "registers its disk driver under another name (see docs/ack.md)")
    return _pass("cluster.csi-driver", subject, "the ACK disk CSI driver is registered")


def check_pod_network(cfg: PlatformConfig, core: k8s.CoreV1Api) -> Optional[CheckResult]:
    """Nodes of a new flannel cluster get their pod ranges from ``cluster.podCidr``."""
    cluster = cfg.cluster
    pod_cidr = getattr(cluster, "effective_pod_cidr", None)
    if cluster.kind != "ack-managed" or not pod_cidr:
        return None
    subject = f"podcidr/{pod_cidr}"
    try:
        nodes = [n for pool in all_pool_facts(cfg).values()
                 for n in core.list_node(label_selector=_selector_string(pool.node_selector),
                                         _request_timeout=REQUEST_TIMEOUT).items]
    except Exception as exc:  # noqa: BLE001
        return _fail("cluster.pod-network", subject, f"cannot list nodes ({_api_error(exc)})",
                     "the credentials lack 'list nodes' or the API server is unhealthy")
    if not nodes:
        return _pass("cluster.pod-network", subject, "no GPU node yet to check")
    network = ipaddress.ip_network(pod_cidr)
    wrong = sorted(f"{n.metadata.name} ({n.spec.pod_cidr or 'none'})" for n in nodes
                   if not n.spec.pod_cidr or not ipaddress.ip_network(n.spec.pod_cidr).subnet_of(network))
    if wrong:
        return _fail("cluster.pod-network", subject, f"pod ranges outside {pod_cidr}: {', '.join(wrong)}",
                     "the cluster was not created with the flannel add-on and this pod CIDR (both are fixed at "
                     "creation), or ACK allocates node pod ranges differently (see docs/ack.md)")
    return _pass("cluster.pod-network", subject, f"{len(nodes)} GPU node(s) have pod ranges inside {pod_cidr}")
