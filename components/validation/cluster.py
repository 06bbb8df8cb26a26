"""Rules of the cluster target: the Kubernetes version, the charts pinned for it, and what ACK and the VPC API
would refuse."""
import ipaddress
from typing import Any

from gpuplatform.catalogs import ack
from gpuplatform.catalogs.versions import CHARTS, KUBERNETES_SUPPORTED, chart, minor_text
from gpuplatform.components.config import PlatformConfig
from gpuplatform.components.errors import fmt, one_of
from gpuplatform.components.pools import PoolFacts
from gpuplatform.components.releases import WHY, allowed_minors, chart_releases, spans_text
from gpuplatform.components.validation.common import _Issues, kubernetes_version


def check_cluster(cfg: PlatformConfig, facts: dict[str, PoolFacts], out: _Issues) -> None:
    version = kubernetes_version(cfg)
    if version is None:
        out.add("cluster.kubernetesVersion", f"{fmt(cfg.cluster.kubernetes_version)} is not a Kubernetes version; "
                "use major.minor such as '1.31' or an ACK version such as '1.31.1-aliyun.1'")
    elif not KUBERNETES_SUPPORTED[0] <= version <= KUBERNETES_SUPPORTED[1]:
        lo, hi = KUBERNETES_SUPPORTED
        out.add("cluster.kubernetesVersion", f"{fmt(cfg.cluster.kubernetes_version)} is not supported; "
                f"allowed: {minor_text(lo)}-{minor_text(hi)}")
    if cfg.cluster.kind == "ack-managed" and version is not None and not ack.parse_ack_version(
            cfg.cluster.kubernetes_version):
        out.add("cluster.kubernetesVersion", f"{fmt(cfg.cluster.kubernetes_version)} is not in ACK's version form; "
                f"allowed: {ack.ACK_VERSION_RULE} (ACK creates the cluster at an exact version and the provider "
                "reads that form back, so any other spelling shows a change on every pulumi up)")


def check_chart_versions(cfg: PlatformConfig, facts: dict[str, PoolFacts], out: _Issues) -> None:
    """Every chart the stack installs needs a pinned version whose upstream supports the cluster's minor; the
    error says, per pin, why it was not chosen, and names the opt-in when an end-of-life pin would do."""
    eol = cfg.settings.allow_end_of_life_charts
    with_eol_pins = [c.name for c in CHARTS.values() if c.has_end_of_life_pin]
    for j, name in enumerate(eol):
        if name not in with_eol_pins:
            out.add(f"settings.allowEndOfLifeCharts[{j}]", f"{fmt(name)} has no end-of-life pinned version to "
                    f"allow; allowed: {one_of(with_eol_pins)}")
    version = kubernetes_version(cfg)
    if version is None or not KUBERNETES_SUPPORTED[0] <= version <= KUBERNETES_SUPPORTED[1]:
        return  # check_cluster reports it
    unsupported = [key for key in chart_releases(cfg) if chart(key).for_kubernetes(version, chart(key).name in eol)
                   is None]
    if not unsupported:
        return
    allowed = spans_text(allowed_minors(cfg))
    for key in unsupported:
        c = chart(key)
        reasons = "; ".join(v.why_not(version) for v in c.versions)
        way_out = ""
        if any(v.covers(version) and v.end_of_life for v in c.versions):
            way_out = (f", or opt in to the end-of-life pin with settings.allowEndOfLifeCharts: [{c.name}] "
                       "(no upstream fixes: docs/helm.md)")
        out.add("cluster.kubernetesVersion", f"{fmt(cfg.cluster.kubernetes_version)}: no pinned {c.name} chart "
                f"(installed for {WHY[key]}) is chosen for {minor_text(version)}: {reasons}; allowed for this "
                f"stack: {allowed}{way_out}")


def _network(value: str):
    try:
        return ipaddress.ip_network(value)
    except ValueError:
        return None


def check_ack_cluster(cfg: PlatformConfig, facts: dict[str, PoolFacts], out: _Issues) -> None:
    """What ACK and the VPC API would refuse, or a cluster that would start broken: zones of another region,
    vSwitches outside the VPC or overlapping, service/pod ranges inside the VPC, names ACK rejects, a network
    plugin without its address source."""
    c = cfg.cluster
    if c.kind != "ack-managed":
        return
    check_system_pool(cfg, out)
    check_node_autoscaling(cfg, out)
    if c.name is not None and not ack.CLUSTER_NAME.match(c.name):
        out.add("cluster.name", f"{fmt(c.name)} is not a valid ACK cluster name; allowed: {ack.CLUSTER_NAME_RULE}")
    vpc = _network(c.vpc_cidr)
    if vpc is None:
        out.add("cluster.vpcCidr", f"{fmt(c.vpc_cidr)} is not a CIDR block; allowed: e.g. 192.168.0.0/16")
    switches: list[tuple[str, Any]] = []
    for key, items in (("vswitches", c.vswitches), ("podVswitches", c.pod_vswitches)):
        for j, v in enumerate(items):
            p = f"cluster.{key}[{j}]"
            if not ack.zone_in_region(v.zone_id, c.region):
                out.add(f"{p}.zoneId", f"{fmt(v.zone_id)} is not a zone of region {fmt(c.region)}; allowed: "
                        f"{c.region}-<zone letter>, e.g. {c.region}-a")
            net = _network(v.cidr)
            if net is None:
                out.add(f"{p}.cidr", f"{fmt(v.cidr)} is not a CIDR block; allowed: a block inside the VPC "
                        f"{c.vpc_cidr}")
                continue
            if vpc is not None and (net.version != vpc.version or not net.subnet_of(vpc)):
                out.add(f"{p}.cidr", f"{fmt(v.cidr)} is outside the VPC CIDR {fmt(c.vpc_cidr)}; allowed: a block "
                        "inside it")
            for other_path, other in switches:
                if net.overlaps(other):
                    out.add(f"{p}.cidr", f"{fmt(v.cidr)} overlaps {other_path} ({other}); vSwitch CIDRs must not "
                            "overlap")
            switches.append((p, net))
    if c.network_plugin == "terway":
        if c.pod_cidr is not None:
            out.add("cluster.podCidr", f"{fmt(c.pod_cidr)}: Terway takes pod addresses from 'podVswitches', not "
                    "a pod CIDR; allowed: remove it, or networkPlugin flannel")
        missing = sorted({v.zone_id for v in c.vswitches} - {v.zone_id for v in c.pod_vswitches})
        if missing:
            out.add("cluster.podVswitches", f"no pod vSwitch in zone(s) {one_of(missing)}; Terway needs one in "
                    "each zone of 'vswitches'")
    elif c.pod_vswitches:
        out.add("cluster.podVswitches", "is for Terway; with networkPlugin 'flannel' pods get addresses from "
                "'podCidr'; allowed: remove it, or networkPlugin terway")
    service = _network(c.service_cidr)
    if service is None:
        out.add("cluster.serviceCidr", f"{fmt(c.service_cidr)} is not a CIDR block; allowed: e.g. 172.21.0.0/20")
    pod = _network(c.effective_pod_cidr) if c.effective_pod_cidr else None
    if c.effective_pod_cidr and pod is None:
        out.add("cluster.podCidr", f"{fmt(c.pod_cidr)} is not a CIDR block; allowed: e.g. {ack.DEFAULT_POD_CIDR}")
    for path, value, net in (("cluster.serviceCidr", c.service_cidr, service),
                             ("cluster.podCidr", c.effective_pod_cidr, pod)):
        if net is not None and vpc is not None and net.overlaps(vpc):
            out.add(path, f"{fmt(value)} overlaps the VPC CIDR {fmt(c.vpc_cidr)}; allowed: a range outside it")
    if service is not None and pod is not None and service.overlaps(pod):
        out.add("cluster.serviceCidr", f"{fmt(c.service_cidr)} overlaps the pod CIDR {fmt(c.effective_pod_cidr)}; "
                "allowed: a range outside it")


def check_system_pool(cfg: PlatformConfig, out: _Issues) -> None:
    """The system pool: catalogued CPU instance types (their size is what the home check counts), enough nodes
    for ACK's CoreDNS, and no GPU pool under its name."""
    pool = cfg.cluster.system_pool
    if not pool.enabled:
        return
    for j, name in enumerate(pool.instance_types):
        if name not in ack.SYSTEM_INSTANCE_TYPES:
            out.add(f"cluster.systemPool.instanceTypes[{j}]", f"{fmt(name)} is not a catalogued CPU instance type; "
                    f"allowed: {one_of(ack.SYSTEM_INSTANCE_TYPES)} (catalogs/ack.py; ACK refuses nodes with fewer "
                    "than 4 vCPUs)")
    if pool.nodes < ack.SYSTEM_POOL_NODES:
        out.add("cluster.systemPool.nodes", f"{pool.nodes}: ACK's CoreDNS keeps its replicas on different nodes "
                f"(required anti-affinity by hostname) and runs at least {ack.SYSTEM_POOL_NODES}, so a replica "
                f"would stay Pending; allowed: >= {ack.SYSTEM_POOL_NODES}")
    for i, p in enumerate(cfg.node_pools):
        if p.name == ack.SYSTEM_POOL_NAME:
            out.add(f"nodePools[{i}].name", f"{fmt(p.name)} is the name of the cluster's system pool "
                    "(cluster.systemPool); allowed: another name")


def check_node_autoscaling(cfg: PlatformConfig, out: _Issues) -> None:
    """What the provider cannot send or ACK does not accept in ``cluster.nodeAutoscaling`` (catalogs/
    node_autoscaling.py): a false it drops (GetOk), goatscaler's expander and version limits."""
    from gpuplatform.catalogs import node_autoscaling as na

    a = cfg.cluster.node_autoscaling
    p = "cluster.nodeAutoscaling"
    if not a.scale_up_from_zero:
        out.add(f"{p}.scaleUpFromZero", "false cannot be sent: the provider adds scale_up_from_zero to its request "
                "only when it is true (d.GetOk), so ACK would keep true and every pulumi up would show a change; "
                "allowed: true (ACK's default)")
    check_graceful_termination(cfg, out)
    if a.scaler_type == "goatscaler":
        if a.expander not in na.GOATSCALER_EXPANDERS:
            out.add(f"{p}.expander", f"{fmt(a.expander)} with scalerType 'goatscaler'; allowed: "
                    f"{one_of(na.GOATSCALER_EXPANDERS)} (goatscaler supports least-waste only)")
        version = kubernetes_version(cfg)
        if version is not None and version[1] < na.GOATSCALER_MIN_MINOR:
            out.add(f"{p}.scalerType", f"'goatscaler' on Kubernetes {version[0]}.{version[1]}; allowed there: "
                    f"'cluster-autoscaler' (goatscaler needs 1.{na.GOATSCALER_MIN_MINOR} or later)")


def check_graceful_termination(cfg: PlatformConfig, out: _Issues) -> None:
    """A node scale-down waits ``maxGracefulTerminationSec`` for the pods it evicts: at least the grace period of
    every workload on an autoscaled pool, or it kills them while they drain (components/drain.py)."""
    from gpuplatform.components.drain import autoscaler_grace_issues, pool_grace_periods

    pools = [pool.name for pool in cfg.node_pools if pool.autoscaling]
    grace = pool_grace_periods(cfg.workloads, pools, kubernetes_version(cfg))
    out.extend(autoscaler_grace_issues("cluster.nodeAutoscaling.maxGracefulTerminationSec",
                                       cfg.cluster.node_autoscaling.max_graceful_termination_sec, grace))
