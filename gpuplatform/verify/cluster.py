"""Checks of the cluster itself: the kubeconfig credential, and on ACK the disk CSI driver and the pod network
(the ACK behaviours docs/ack.md lists as unverified); on every cluster, that the system components' and the
charts' pods are scheduled; on a dedicated ACK cluster with cGPU pools, the legacy cGPU component."""
from __future__ import annotations

import datetime as dt
import ipaddress
import ssl
from typing import Optional

from kubernetes import client as k8s

from gpuplatform.catalogs import sharing
from gpuplatform.catalogs.versions import ARMS_GPU_EXPORTER, chart
from gpuplatform.components.config import PlatformConfig
from gpuplatform.components.pools import all_pool_facts
from gpuplatform.components.releases import chart_releases
from gpuplatform.verify.kube import REQUEST_TIMEOUT, _api_error, _not_found, _selector_string
from gpuplatform.verify.results import CheckResult, _fail, _pass

ACK_DISK_CSI_DRIVER = "diskplugin.csi.alibabacloud.com"
"""CSIDriver the ACK disk CSI add-ons (csi-plugin + managed-csiprovisioner) register
(kubernetes-sigs/alibaba-cloud-csi-driver)."""
CREDENTIAL_MIN_DAYS = 30
"""A kubeconfig credential closer to its end than this is treated as temporary: ``destroy``/``refresh`` read the
credential stored in the state, and would fail once it expires."""
SYSTEM_NAMESPACE = "kube-system"
"""Where the cluster's own components run (CoreDNS, metrics-server, ACK's add-ons)."""
UNSCHEDULABLE_SHOWN = 3
"""Unschedulable pods a failed ``cluster.system-pods`` names; the rest are counted."""

# The legacy cGPU component of a dedicated ACK cluster. ACK documents installing it only from the console: "You can
# install the ack-cgpu component only on ACK dedicated clusters from the Marketplace page in the console" (ack-cgpu
# release notes). The seed article (examples/004-cgpu-notebooks) installs it from Marketplace > App Catalog >
# ack-cgpu as Helm release 'cgpu' in kube-system, and its `helm get manifest cgpu -n kube-system | kubectl get -f -`
# lists `daemonset.apps/gpushare-device-plugin-ds` with NODE SELECTOR cgpu=true. That DaemonSet is what advertises
# aliyun.com/gpu-mem on the cGPU nodes, so sharing.cgpu-component reads it.
CGPU_COMPONENT = sharing.ACK_LEGACY_SHARING_ADDON
CGPU_RELEASE = ("kube-system", "cgpu")
"""Namespace and Helm release ack-cgpu installs (the seed article)."""
CGPU_DEVICE_PLUGIN_DS = ("kube-system", "gpushare-device-plugin-ds")
"""Namespace and name of ack-cgpu's device plugin DaemonSet, which selects nodes labelled cgpu=true (the seed
article)."""


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


def system_namespaces(cfg: PlatformConfig) -> list[str]:
    """Namespaces whose pods must find a node: kube-system, ARMS's arms-prom, and every chart's namespace."""
    names = [SYSTEM_NAMESPACE]
    if cfg.monitoring.backend == "arms":
        names.append(ARMS_GPU_EXPORTER[0])
    names += [chart(key).namespace for key in chart_releases(cfg)]
    return list(dict.fromkeys(names))


def _unschedulable(pod: k8s.V1Pod) -> Optional[str]:
    """The scheduler's message when the pod is Pending because no node admits it, else None."""
    st = pod.status
    if st is None or st.phase != "Pending":
        return None
    cond = next((c for c in st.conditions or [] if c.type == "PodScheduled"), None)
    if cond is None or cond.status != "False" or cond.reason != "Unschedulable":
        return None
    return cond.message or "no message"


def _system_pods_cause(cfg: PlatformConfig) -> str:
    autoscaled = "=".join(sharing.AUTOSCALED_POOL_LABEL)
    if cfg.cluster.kind == "ack-managed":
        pool = getattr(cfg.cluster, "system_pool", None)
        where = ("cluster.systemPool.enabled is false, so nodes of your own must take these pods"
                 if pool is not None and not pool.enabled else "the system pool (cluster.systemPool) is missing "
                 "(its node pool failed or was deleted) or too small (raise cluster.systemPool.nodes or pick "
                 "larger instanceTypes)")
        return (f"no node admits them: {where}; GPU pools are tainted and ACK keeps its system pods off "
                f"autoscaled nodes ({autoscaled}), so only the system pool can run them")
    cloud = cfg.cloud
    ack = (f"; {cloud.title} keeps its system pods off autoscaled nodes ({autoscaled})"
           if cloud.autoscaled_node_labels() else "")
    return (f"no node admits them: the cluster has no untainted node with room for them (GPU pools are tainted{ack}); "
            "add CPU nodes that are neither tainted nor autoscaled, or free room on the existing ones")


def check_system_pods(cfg: PlatformConfig, core: k8s.CoreV1Api) -> CheckResult:
    """The pods of the cluster's system components and of the stack's charts are not stuck unscheduled."""
    namespaces = system_namespaces(cfg)
    subject = f"namespaces/{','.join(namespaces)}"
    listed: dict[str, int] = {}
    stuck: dict[str, list[tuple[str, str]]] = {}
    for ns in namespaces:
        try:
            pods = core.list_namespaced_pod(ns, _request_timeout=REQUEST_TIMEOUT).items
        except Exception as exc:  # noqa: BLE001
            if _not_found(exc):  # a namespace that does not exist: its list is empty, or a 404
                continue
            return _fail("cluster.system-pods", subject, f"cannot list pods in {ns} ({_api_error(exc)})",
                         f"the credentials lack 'list pods' in {ns} or the API server is unhealthy")
        if pods:
            listed[ns] = len(pods)
        pending = [(f"{ns}/{p.metadata.name}", msg) for p in sorted(pods, key=lambda p: p.metadata.name)
                   if (msg := _unschedulable(p)) is not None]
        if pending:
            stuck[ns] = pending
    if stuck:
        total = sum(map(len, stuck.values()))
        # the first pod of each namespace, then the second of each...: the names shown cover as many namespaces
        # as fit, and pods the scheduler turns away for the same reason share its message
        ranked = sorted((i, n, pod) for n, pods in enumerate(stuck.values()) for i, pod in enumerate(pods))
        by_message: dict[str, list[str]] = {}
        for _, _, (name, msg) in ranked[:UNSCHEDULABLE_SHOWN]:
            by_message.setdefault(msg, []).append(name)
        shown = "; ".join(f"{', '.join(names)} ({msg})" for msg, names in by_message.items())
        more = f" (+{total - UNSCHEDULABLE_SHOWN} more)" if total > UNSCHEDULABLE_SHOWN else ""
        counts = ", ".join(f"{ns} {len(pods)}" for ns, pods in stuck.items())
        return _fail("cluster.system-pods", subject, f"{total} pod(s) unschedulable ({counts}): {shown}{more}",
                     _system_pods_cause(cfg))
    empty = [ns for ns in namespaces if ns not in listed]
    if not listed:
        return _pass("cluster.system-pods", subject, f"no pods in {', '.join(empty)}")
    none = f"; no pods in {', '.join(empty)}" if empty else ""
    return _pass("cluster.system-pods", subject,
                 f"{sum(listed.values())} pod(s) in {len(listed)} namespace(s) scheduled{none}")


def uses_cgpu_component(cfg: PlatformConfig) -> bool:
    """A dedicated ACK cluster (adopted, not Pro) with cGPU pools: its cGPU is the legacy ack-cgpu component."""
    return (cfg.cloud.legacy_sharing_component()
            and any(p.sharing.mode == "cgpu" for p in cfg.node_pools))


def check_cgpu_component(cfg: PlatformConfig, apps: k8s.AppsV1Api, cgpu_nodes: int) -> Optional[CheckResult]:
    """ack-cgpu, which the stack cannot install, runs its device plugin on the cGPU pools' nodes."""
    if not uses_cgpu_component(cfg):
        return None
    ns, name = CGPU_DEVICE_PLUGIN_DS
    subject = f"daemonset/{ns}/{name}"
    selector = "=".join(sharing.LEGACY_CGPU_LABEL)
    try:
        ds = apps.read_namespaced_daemon_set(name, ns, _request_timeout=REQUEST_TIMEOUT)
    except Exception as exc:  # noqa: BLE001
        if _not_found(exc):
            return _fail("sharing.cgpu-component", subject,
                         f"not found: the {CGPU_COMPONENT} component's device plugin is not running, so cGPU pods "
                         "get no aliyun.com/gpu-mem",
                         f"{CGPU_COMPONENT} is not installed: install it from the ACK console (Marketplace > App "
                         f"Catalog > {CGPU_COMPONENT}) as ACK documents; the stack does not install it")
        return _fail("sharing.cgpu-component", subject, f"cannot read it ({_api_error(exc)})",
                     f"the credentials lack 'get daemonsets' in {ns}")
    st = ds.status
    desired, ready = ((st.desired_number_scheduled or 0), (st.number_ready or 0)) if st else (0, 0)
    if desired == 0 and cgpu_nodes:
        return _fail("sharing.cgpu-component", subject,
                     f"scheduled on 0 nodes while the cGPU pools have {cgpu_nodes}",
                     f"the cGPU pools' nodes are not labelled {selector}, the only nodes {CGPU_COMPONENT} serves "
                     "(the stack labels the pools' nodes with it, sharing.legacyLabel: nodes created or relabelled "
                     "outside the pool lack it), or the DaemonSet does not tolerate the pools' taints")
    if ready < desired:
        return _fail("sharing.cgpu-component", subject, f"{ready}/{desired} device plugin pods ready",
                     "gpushare device plugin pods crash-looping or pending (GPU driver not ready on the node, "
                     "image pull); until they run, the node advertises no aliyun.com/gpu-mem")
    return _pass("sharing.cgpu-component", subject,
                 f"{CGPU_COMPONENT} (Helm release {CGPU_RELEASE[1]}): {ready}/{desired} device plugin pods ready")
