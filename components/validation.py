"""Whole-config validation, run before any resource is registered.

``parse`` turns pydantic errors into :class:`ConfigIssue` s with camelCase paths; ``validate`` applies the
cross-field rules (hardware, sharing, capacity, metrics, exposure, intervals). Each rule is a small function
that appends issues, so every problem of a config is reported at once.
"""
import ipaddress
import math
import re
from dataclasses import replace
from typing import Any, Callable, Optional

from pydantic import ValidationError

from gpuplatform.catalogs import ack, sharing
from gpuplatform.catalogs.kubernetes import HPA_TOLERANCE, INTRODUCED_APIS, SECRET_ENV_PATTERN, served_by
from gpuplatform.catalogs.gpus import GPU_MODELS, INSTANCE_TYPES, close_matches, instance_type, mig_instance_families
from gpuplatform.catalogs.metrics import METRICS
from gpuplatform.catalogs.mig import WHOLE_GPU, fits_one_gpu, max_instances, profiles_for
from gpuplatform.catalogs.versions import KUBERNETES_SUPPORTED, chart, minor_text

MIN_KUBERNETES = KUBERNETES_SUPPORTED[0]
from gpuplatform.components.config import SECRET_KEYS, PlatformConfig, Workload, duration_seconds
from gpuplatform.components.contracts import check_metrics_served, check_served_metrics
from gpuplatform.components.errors import ConfigError, ConfigIssue, fmt, one_of
from gpuplatform.components.k8s_validity import DNS_LABEL, check_kubernetes_validity, label_value
from gpuplatform.components.metric_sources import provider_for
from gpuplatform.components.pools import PoolFacts, all_pool_facts, mig_layout_config_name
from gpuplatform.components.releases import WHY, allowed_minors, chart_releases, spans_text

DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
PORT_NAME = re.compile(r"^(?=.*[a-z])[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
K8S_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?(?:-aliyun\.\d+)?$")
SECRET_ENV = re.compile(SECRET_ENV_PATTERN)
HPA_V2_MIN = INTRODUCED_APIS["autoscaling/v2"]
HPA_API_VERSIONS = ("autoscaling/v2", "autoscaling/v2beta2", "autoscaling/v2beta1")
MAX_POOL_NAME = 40
MAX_WORKLOAD_NAME = 50

_UNION_FIELDS = {"cluster", "sharing"}


# ---------------------------------------------------------------------------------------------- parsing
def _path(loc: tuple) -> str:
    parts: list[str] = []
    for i, item in enumerate(loc):
        if i > 0 and isinstance(item, str) and loc[i - 1] in _UNION_FIELDS:
            continue  # pydantic inserts the discriminator value of tagged unions
        if isinstance(item, int):
            parts[-1] = f"{parts[-1]}[{item}]" if parts else f"[{item}]"
        else:
            parts.append(str(item))
    return ".".join(parts) or "(root)"


def _pydantic_message(err: dict) -> str:
    msg = err["msg"].removeprefix("Value error, ")
    if err["loc"][:1] and err["loc"][0] in SECRET_KEYS:
        return f"{msg} (value not shown: it is a secret)"
    if err["type"] == "extra_forbidden":
        return "unknown key (not a gpu-platform setting; check the spelling against `gpuplatform schema`)"
    if err["type"] == "missing":
        return "required key is missing"
    if err["type"] in ("union_tag_invalid", "union_tag_not_found"):
        return msg
    value = err.get("input")
    if isinstance(value, (dict, list)):
        return msg
    return f"{fmt(value)}: {msg}"


def parse(raw: dict[str, Any]) -> PlatformConfig:
    """Raw ``gpu-platform`` namespace (camelCase keys, YAML values) -> typed config, or ConfigError."""
    try:
        return PlatformConfig.model_validate(raw)
    except ValidationError as exc:
        issues = [ConfigIssue(_path(e["loc"]), _pydantic_message(e)) for e in exc.errors()]
        raise ConfigError(issues) from None


def load(raw: dict[str, Any]) -> PlatformConfig:
    cfg = parse(raw)
    issues = validate(cfg)
    if issues:
        raise ConfigError(issues)
    return cfg


# ---------------------------------------------------------------------------------------------- helpers
def kubernetes_version(cfg: PlatformConfig) -> tuple[int, int] | None:
    m = K8S_VERSION.match(cfg.cluster.kubernetes_version)
    return (int(m.group(1)), int(m.group(2))) if m else None


def hpa_api_version(cfg: PlatformConfig, workload: Workload | None = None) -> str:
    """The workload's ``autoscaling.hpaApiVersion`` if set; else ``autoscaling/v2`` from 1.23 on and
    ``autoscaling/v2beta2`` before: v2beta2 is served from 1.12 to 1.25 and has ``behavior``, which v2beta1 lacks
    (kubernetes.io deprecation guide, "HorizontalPodAutoscaler" v1.25/v1.26 removals)."""
    if workload is not None and workload.autoscaling.hpa_api_version:
        return workload.autoscaling.hpa_api_version
    version = kubernetes_version(cfg)
    return "autoscaling/v2" if version is None or version >= HPA_V2_MIN else "autoscaling/v2beta2"


def _suggest(value: str, choices) -> str:
    near = close_matches(value, choices)
    return f" Did you mean {one_of(near)}?" if near else ""


class _Issues(list):
    def add(self, path: str, message: str) -> None:
        self.append(ConfigIssue(path, message))


Rule = Callable[[PlatformConfig, dict[str, PoolFacts], _Issues], None]


# ---------------------------------------------------------------------------------------------- rules
def check_chart_versions(cfg: PlatformConfig, facts: dict[str, PoolFacts], out: _Issues) -> None:
    """Every chart the stack installs needs a pinned version whose upstream supports the cluster's minor."""
    version = kubernetes_version(cfg)
    if version is None or not KUBERNETES_SUPPORTED[0] <= version <= KUBERNETES_SUPPORTED[1]:
        return  # check_cluster reports it
    unsupported = [key for key in chart_releases(cfg) if chart(key).for_kubernetes(version) is None]
    if not unsupported:
        return
    allowed = spans_text(allowed_minors(cfg))
    for key in unsupported:
        c = chart(key)
        out.add("cluster.kubernetesVersion", f"{fmt(cfg.cluster.kubernetes_version)} is not supported by any pinned "
                f"{c.name} chart (installed for {WHY[key]}): pinned {c.supported_text()}; allowed for this stack: "
                f"{allowed}")


def check_cluster(cfg: PlatformConfig, facts: dict[str, PoolFacts], out: _Issues) -> None:
    version = kubernetes_version(cfg)
    if version is None:
        out.add("cluster.kubernetesVersion", f"{fmt(cfg.cluster.kubernetes_version)} is not a Kubernetes version; "
                "use major.minor such as '1.31' or an ACK version such as '1.31.1-aliyun.1'")
    elif not KUBERNETES_SUPPORTED[0] <= version <= KUBERNETES_SUPPORTED[1]:
        lo, hi = KUBERNETES_SUPPORTED
        out.add("cluster.kubernetesVersion", f"{fmt(cfg.cluster.kubernetes_version)} is not supported; "
                f"allowed: {minor_text(lo)}-{minor_text(hi)}")
    if cfg.cluster.kind == "ack-managed" and version is not None and cfg.cluster.kubernetes_version.count(".") < 2:
        out.add("cluster.kubernetesVersion", f"{fmt(cfg.cluster.kubernetes_version)} is not a full ACK version; "
                "ACK creates clusters at an exact version, e.g. '1.31.1-aliyun.1'")
    mon = cfg.monitoring
    if not cfg.is_ack:
        if mon.backend == "arms":
            out.add("monitoring.backend", "'arms' (ACK managed Prometheus) needs an ACK cluster; "
                    "allowed for cluster kind 'kubeconfig': self-hosted")
        if mon.adapter_kind == "ack-alibaba-cloud-metrics-adapter":
            out.add("monitoring.adapter", "'ack-alibaba-cloud-metrics-adapter' needs an ACK cluster; "
                    "allowed for cluster kind 'kubeconfig': prometheus-adapter")
    if mon.prometheus_url is not None and not re.match(r"^https?://[^/\s:]+(:\d+)?(/\S*)?$", mon.prometheus_url):
        out.add("monitoring.prometheusUrl", f"{fmt(mon.prometheus_url)} is not a Prometheus URL; allowed: "
                "http(s)://host[:port][/path], e.g. http://ack-prometheus-operator-prometheus.monitoring.svc:9090")
    if mon.ack_guide_rules and mon.exporter != "ack":
        out.add("monitoring.ackGuideRules", f"true, but the guide's rules read the ACK GPU exporter and this stack "
                f"uses {fmt(mon.exporter)}; allowed: true only with gpuExporter 'ack' (backend arms)")
    if mon.exporter == "ack" and mon.backend != "arms":
        out.add("monitoring.gpuExporter", "'ack' (the ACK GPU exporter) is collected by ACK managed Prometheus; "
                "allowed with backend 'self-hosted': dcgm, ack-legacy")
    if mon.exporter == "dcgm" and mon.backend == "arms":
        out.add("monitoring.gpuExporter", "'dcgm' is not scraped by ACK managed Prometheus; "
                "allowed with backend 'arms': ack")
    if getattr(cfg.cluster, "simulate_gpus", False) and mon.exporter != "dcgm":
        out.add("monitoring.gpuExporter", f"{fmt(mon.exporter)} does not run with simulated GPUs; "
                "allowed with simulateGpus: dcgm (fake-gpu-operator emits DCGM series)")


def check_adapter_adoption(cfg: PlatformConfig, facts: dict[str, PoolFacts], out: _Issues) -> None:
    mon = cfg.monitoring
    if mon.adopt_adapter_release and mon.adapter_kind != "ack-alibaba-cloud-metrics-adapter":
        out.add("monitoring.adoptAdapterRelease", f"true, but the adapter is {fmt(mon.adapter_kind)}; only an "
                "installed ack-alibaba-cloud-metrics-adapter release can be adopted; allowed: false")


def _network(value: str):
    try:
        return ipaddress.ip_network(value)
    except ValueError:
        return None


def check_ack_cluster(cfg: PlatformConfig, facts: dict[str, PoolFacts], out: _Issues) -> None:
    """What ACK and the VPC API would refuse, or a cluster that would start broken: zones of another region,
    vSwitches outside the VPC or overlapping, service/pod ranges inside the VPC, names ACK rejects, a network
    plugin without its address source, Pro-only features on a Basic or dedicated cluster."""
    c = cfg.cluster
    if c.kind == "kubeconfig":
        return
    for i, pool in enumerate(cfg.node_pools):
        if cfg.pool_managed(pool) and not cfg.is_ack_pro:
            out.add(f"nodePools[{i}].autoRepair", f"{pool.auto_repair}: managed node pools (auto repair) need an "
                    f"ACK Pro cluster, and {_cluster_tier(cfg)}; allowed: false")
        if pool.sharing.mode == "cgpu" and c.kind == "ack-managed" and not cfg.is_ack_pro:
            out.add(f"nodePools[{i}].sharing.mode", f"'cgpu' needs ack-ai-installer on an ACK Pro cluster, and "
                    f"{_cluster_tier(cfg)}; allowed: cluster.clusterSpec {one_of(ack.PRO_SPECS)}, or sharing "
                    "exclusive")
    if c.kind != "ack-managed":
        return
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


def _cluster_tier(cfg: PlatformConfig) -> str:
    c = cfg.cluster
    if c.kind == "ack-managed":
        return f"cluster.clusterSpec is {fmt(c.cluster_spec)}"
    return "cluster.professional is false (a dedicated cluster)"


def check_intervals(cfg: PlatformConfig, facts: dict[str, PoolFacts], out: _Issues) -> None:
    iv = cfg.monitoring.intervals
    collect, scrape = duration_seconds(iv.exporter_collect), duration_seconds(iv.scrape)
    window, relist = duration_seconds(iv.rule_window), duration_seconds(iv.adapter_relist)
    if relist < scrape:
        out.add("monitoring.intervals.adapterRelist", f"{fmt(iv.adapter_relist)} is shorter than the scrape interval "
                f"{fmt(iv.scrape)}; allowed: >= {iv.scrape} (series would appear and disappear)")
    if window < 2 * scrape:
        out.add("monitoring.intervals.ruleWindow", f"{fmt(iv.rule_window)} holds fewer than two scrapes of "
                f"{fmt(iv.scrape)}; allowed: >= {2 * scrape}s (increase()/rate() need two samples in the window, "
                "or the query returns nothing for the pod)")
    if collect > window:
        out.add("monitoring.intervals.exporterCollect", f"{fmt(iv.exporter_collect)} is longer than the rule "
                f"window {fmt(iv.rule_window)}; allowed: <= {window}s")


def check_pools(cfg: PlatformConfig, facts: dict[str, PoolFacts], out: _Issues) -> None:
    seen: dict[str, int] = {}
    for i, pool in enumerate(cfg.node_pools):
        p = f"nodePools[{i}]"
        if not DNS_LABEL.match(pool.name) or len(pool.name) > MAX_POOL_NAME:
            out.add(f"{p}.name", f"{fmt(pool.name)} is not a valid pool name; allowed: lowercase letters, digits "
                    f"and '-', starting and ending alphanumeric, at most {MAX_POOL_NAME} characters")
        if pool.name in seen:
            out.add(f"{p}.name", f"{fmt(pool.name)} is already used by nodePools[{seen[pool.name]}]; "
                    "pool names must be unique")
        seen.setdefault(pool.name, i)
        _check_pool_hardware(cfg, i, pool, out)
        if pool.min_nodes > pool.max_nodes:
            out.add(f"{p}.minNodes", f"'minNodes' ({pool.min_nodes}) must be <= 'maxNodes' ({pool.max_nodes})")
        if pool.autoscaling and pool.desired_nodes is not None:
            out.add(f"{p}.desiredNodes", f"{pool.desired_nodes}: only used when 'autoscaling' is false; "
                    "remove it or set autoscaling: false")
        if not pool.autoscaling and pool.desired_nodes is None:
            out.add(f"{p}.desiredNodes", "required when 'autoscaling' is false (the fixed pool size)")
        owned = {sharing.ACK_SCHEDULE_LABEL, sharing.ACK_PLACEMENT_LABEL, sharing.NVIDIA_MIG_CONFIG_LABEL,
                 sharing.POOL_LABEL, sharing.LEGACY_CGPU_LABEL[0]}
        for key in sorted(owned & set(pool.labels)):
            out.add(f"{p}.labels.{key}", f"{fmt(pool.labels[key])}: this label is set from 'sharing' "
                    f"(mode {pool.sharing.mode}); a node runs one GPU scheduling mode, so it cannot be set by hand")


def _check_pool_hardware(cfg: PlatformConfig, i: int, pool, out: _Issues) -> None:
    p = f"nodePools[{i}]"
    models = set()
    if cfg.is_ack and not pool.instance_types:
        out.add(f"{p}.instanceTypes", "required on ACK: at least one ECS GPU instance type, e.g. "
                "ecs.gn7i-c8g1.2xlarge")
    for j, name in enumerate(pool.instance_types):
        itype = instance_type(name)
        if itype is None:
            out.add(f"{p}.instanceTypes[{j}]", f"{fmt(name)} is not a known ACK GPU instance type."
                    f"{_suggest(name, INSTANCE_TYPES)} See catalogs/gpus.py for the catalog.")
        else:
            models.add(itype.gpu_model)
    if len(models) > 1:
        out.add(f"{p}.instanceTypes", f"mixes GPU models {one_of(sorted(models))}; all instance types of a pool "
                "must carry the same GPU model so capacity and sharing are well defined")
    known = [t for t in map(instance_type, pool.instance_types) if t is not None]
    if known and pool.gpus_per_node is not None and {t.gpus for t in known} != {pool.gpus_per_node}:
        counts = ", ".join(f"{t.name} has {t.gpus}" for t in known)
        out.add(f"{p}.gpusPerNode", f"{pool.gpus_per_node} contradicts the instance types ({counts}); allowed: "
                "leave it out (the instance type decides), or the instance types' own count")
    if known and pool.gpu_model is not None and {t.gpu_model for t in known} != {pool.gpu_model}:
        out.add(f"{p}.gpuModel", f"{fmt(pool.gpu_model)} contradicts the instance types, which carry "
                f"{one_of(sorted({t.gpu_model for t in known}))}; allowed: leave it out, or the same model")
    if not pool.instance_types:
        if pool.gpu_model is None or pool.gpus_per_node is None:
            out.add(f"{p}.gpuModel", "required with 'gpusPerNode' when no instance types are given; "
                    f"allowed models: {one_of(GPU_MODELS)}")
        elif pool.gpu_model not in GPU_MODELS:
            out.add(f"{p}.gpuModel", f"{fmt(pool.gpu_model)} is not a known GPU model; allowed: "
                    f"{one_of(GPU_MODELS)}.{_suggest(pool.gpu_model, GPU_MODELS)}")
    s = pool.sharing
    first = instance_type(pool.instance_types[0]) if pool.instance_types else None
    model = first.gpu if first else GPU_MODELS.get(pool.gpu_model or "")
    if s.mode == "mig" and model is not None:
        if not model.mig_capable:
            capable = [m.name for m in GPU_MODELS.values() if m.mig_capable]
            out.add(f"{p}.sharing.mode", f"'mig' on {model.name}, which has no MIG; MIG GPUs: {one_of(capable)}")
        elif first is not None and not first.mig_supported:
            out.add(f"{p}.sharing.mode", f"'mig' on {fmt(first.name)}: family {first.family} ({model.name}, GPU "
                    "passthrough) cannot run MIG on ACK; MIG-capable families: "
                    f"{one_of(mig_instance_families())} (e.g. ecs.ebmgn7.26xlarge bare metal)")
        elif s.profile is not None and s.profile not in profiles_for(model.name):
            out.add(f"{p}.sharing.profile", f"{fmt(s.profile)} is not a MIG profile of {model.name}; allowed: "
                    f"{one_of(profiles_for(model.name))}")
        elif s.layout:
            _check_mig_layout(p, s, model.name, (first.gpus if first else pool.gpus_per_node) or 0, out)
    if s.mode == "mig":
        _check_mig_choice(cfg, p, pool, out)
    if s.mode == "mig" and cfg.is_ack:
        _check_ack_mig(cfg, p, s, out)
    if s.mode == "cgpu":
        if not cfg.is_ack:
            out.add(f"{p}.sharing.mode", "'cgpu' is Alibaba cGPU and needs an ACK cluster; allowed for cluster kind "
                    "'kubeconfig': exclusive, mig")
        elif cfg.cluster.kind == "ack-existing" and not cfg.cluster.professional and not s.legacy_label:
            out.add(f"{p}.sharing.legacyLabel", "false on a dedicated (non-Pro) cluster, whose ack-cgpu component "
                    "selects nodes by cgpu=true; allowed: true")


def _check_mig_choice(cfg: PlatformConfig, p: str, pool, out: _Issues) -> None:
    """A MIG pool takes one profile for every GPU, or a per-GPU layout; a layout runs where mig-manager does."""
    s = pool.sharing
    if s.profile is None and not s.layout:
        out.add(f"{p}.sharing.profile", "required: the MIG profile of every GPU (e.g. 1g.5gb), or a per-GPU "
                "'layout' instead")
    if s.profile is not None and s.layout:
        out.add(f"{p}.sharing.layout", f"set with 'profile' ({fmt(s.profile)}); allowed: one of them (profile: "
                "every GPU alike; layout: per GPU)")
    if s.config_name is not None and not s.layout:
        out.add(f"{p}.sharing.configName", f"{fmt(s.config_name)}: names the mig-parted config of a per-GPU "
                "'layout', which this pool does not have; allowed: remove it, or add a layout")
    if not s.layout:
        return
    if s.strategy != "mixed":
        # k8s-device-plugin internal/rm/device_map.go: with the single strategy "all devices on the node must be
        # configured with the same migEnabled value" and carry one MIG device type, or the plugin serves nothing
        out.add(f"{p}.sharing.strategy", f"{fmt(s.strategy)} with a per-GPU layout: NVIDIA's device plugin serves "
                "nothing under the single strategy unless every GPU of the node has MIG on with one profile; "
                "allowed with a layout: mixed")
    if cfg.is_ack:
        out.add(f"{p}.sharing.layout", "ACK partitions MIG GPUs itself (ack.node.gpu.schedule=mig) and takes one "
                "profile per node pool; a per-GPU layout needs the GPU Operator's mig-manager, which runs on "
                "clusters of kind 'kubeconfig'; allowed on ACK: profile")
    elif getattr(cfg.cluster, "simulate_gpus", False):
        # run-ai/fake-gpu-operator internal/migfaker/app.go partitions from its own run.ai/mig.config annotation
        out.add(f"{p}.sharing.layout", "simulated GPUs (simulateGpus) do not run mig-manager: fake-gpu-operator "
                "partitions from its own annotation, not a mig-parted config; allowed with simulateGpus: profile")
    name = mig_layout_config_name(pool)
    problem = label_value(name)
    if problem or name.startswith("all-"):
        where = f"{p}.sharing.configName" if s.config_name else f"{p}.name"
        out.add(where, f"{fmt(name)} cannot name the pool's mig-parted config: "
                f"{problem or 'names starting with all- are the GPU Operator own configs'}; allowed: a label value "
                "of at most 63 letters, digits, '-', '_' or '.', not starting with 'all-'")


def check_mig_strategy(cfg: PlatformConfig, facts: dict[str, PoolFacts], out: _Issues) -> None:
    """The GPU Operator sets one MIG strategy for the whole cluster (ClusterPolicy ``spec.mig.strategy``, from the
    chart's ``mig.strategy``), so the device plugin of every MIG pool runs it: a pool asking for another strategy
    would get resources its workloads do not request (mixed serves nvidia.com/mig-<profile>, single
    nvidia.com/gpu)."""
    if cfg.is_ack or getattr(cfg.cluster, "simulate_gpus", False):
        return
    index = {pool.name: i for i, pool in enumerate(cfg.node_pools)}
    mig = [f for f in facts.values() if f.mode == "mig"]
    if len({f.mig_strategy for f in mig}) < 2:
        return
    first = mig[0]
    for f in mig[1:]:
        if f.mig_strategy != first.mig_strategy:
            out.add(f"nodePools[{index[f.name]}].sharing.strategy", f"{fmt(f.mig_strategy)} differs from pool "
                    f"{fmt(first.name)} ({first.mig_strategy}); the GPU Operator runs one MIG strategy for the "
                    f"whole cluster; allowed: {first.mig_strategy}")


def check_mig_configs(cfg: PlatformConfig, facts: dict[str, PoolFacts], out: _Issues) -> None:
    """With a per-GPU layout the GPU Operator reads our mig-parted config instead of its own (gpu-operator
    values.yaml, ``migManager.config.name``), so that one file carries every pool's config: an ``all-<profile>``
    must mean one thing for every model that uses it, and a config name one layout."""
    layouts = {n: f for n, f in facts.items() if f.mig_layout}
    if not layouts:
        return
    index = {pool.name: i for i, pool in enumerate(cfg.node_pools)}
    uniform: dict[str, dict[int, str]] = {}
    for f in facts.values():
        if f.mode == "mig" and not f.mig_layout and f.mig_profile:
            uniform.setdefault(f.mig_profile, {})[max_instances(f.model.name, f.mig_profile)] = f.name
    for profile, counts in sorted(uniform.items()):
        if len(counts) > 1:
            pools = ", ".join(f"{name} ({n} per GPU)" for n, name in sorted(counts.items()))
            out.add(f"nodePools[{index[max(counts.items())[1]]}].sharing.profile",
                    f"{fmt(profile)} holds a different number of instances on the GPUs of pools {pools}, so one "
                    f"all-{profile} config cannot serve both next to a per-GPU layout; allowed: a layout for one "
                    "of these pools")
    owner: dict[str, PoolFacts] = {}
    for name, f in layouts.items():
        first = owner.setdefault(f.mig_config_name, f)
        if first is not f and (first.mig_layout, first.model) != (f.mig_layout, f.model):
            out.add(f"nodePools[{index[name]}].sharing.configName", f"{fmt(f.mig_config_name)} is already the "
                    f"layout of pool {fmt(first.name)}, which differs; allowed: another name")


def _check_mig_layout(p: str, s, model: str, gpus: int, out: _Issues) -> None:
    """Each GPU of a node in exactly one entry, and each GPU's instances placeable at once (NVML placements)."""
    seen: dict[int, int] = {}
    for j, entry in enumerate(s.layout):
        pe = f"{p}.sharing.layout[{j}]"
        if not entry.devices:
            out.add(f"{pe}.devices", "empty; allowed: GPU indices of the node, e.g. [0]")
        for index in entry.devices:
            if gpus and not 0 <= index < gpus:
                out.add(f"{pe}.devices", f"{index} is not a GPU of a node of this pool ({gpus} GPUs per node); "
                        f"allowed: 0..{gpus - 1}")
            elif index in seen:
                out.add(f"{pe}.devices", f"GPU {index} is already laid out by layout[{seen[index]}]; each GPU "
                        "belongs to one entry")
            seen.setdefault(index, j)
        known = profiles_for(model)
        for name, count in entry.profiles.items():
            if name not in known:
                out.add(f"{pe}.profiles.{name}", f"{fmt(name)} is not a MIG profile of {model}; allowed: "
                        f"{one_of(known)}")
            elif count < 1:
                out.add(f"{pe}.profiles.{name}", f"{count}: allowed: 1..{max_instances(model, name)} (leave the "
                        "profile out for none)")
        if all(n in known and c >= 1 for n, c in entry.profiles.items()) and not fits_one_gpu(model, entry.profiles):
            asked = " + ".join(f"{c} x {n}" for n, c in entry.profiles.items())
            alone = ", ".join(f"{n} up to {max_instances(model, n)}" for n in entry.profiles)
            out.add(f"{pe}.profiles", f"{asked} do not fit on one {model}: MIG instances take fixed slots of the "
                    f"GPU's memory slices and may not overlap ({alone} alone); allowed: a combination NVIDIA lists "
                    "for the GPU, e.g. 1g.5gb x 7, 2g.10gb x 3 + 1g.5gb x 1, or 3g.20gb x 1 + 4g.20gb x 1 on an "
                    "A100-40GB")
    missing = [i for i in range(gpus) if i not in seen]  # gpus 0: unknown, reported with gpusPerNode
    if gpus and missing:
        out.add(f"{p}.sharing.layout", f"leaves GPU {', '.join(map(str, missing))} of each node out; every GPU "
                f"0..{gpus - 1} needs an entry (one without profiles keeps it whole)")


def _check_ack_mig(cfg: PlatformConfig, p: str, s, out: _Issues) -> None:
    """ACK partitions GPUs itself (``ack.node.gpu.schedule=mig`` through ack-ai-installer, a Pro-cluster add-on);
    the GPU Operator's mig-manager and its single-strategy device plugin do not run there."""
    if s.strategy == "single":
        out.add(f"{p}.sharing.strategy", "'single' is a strategy of NVIDIA's device plugin, which ACK does not run: "
                "ACK exposes each MIG instance as nvidia.com/mig-<profile>; allowed on ACK: mixed")
    if not cfg.is_ack_pro:
        out.add(f"{p}.sharing.mode", f"'mig' needs ACK's MIG partitioning, which comes with the ack-ai-installer "
                f"add-on of ACK Pro clusters, and {_cluster_tier(cfg)}; allowed: exclusive, or an ACK Pro cluster")


def check_workloads(cfg: PlatformConfig, facts: dict[str, PoolFacts], out: _Issues) -> None:
    seen: dict[str, int] = {}
    version = kubernetes_version(cfg)
    for i, w in enumerate(cfg.workloads):
        p = f"workloads[{i}]"
        if not DNS_1035.match(w.name) or len(w.name) > MAX_WORKLOAD_NAME:
            out.add(f"{p}.name", f"{fmt(w.name)} is not a valid workload name; allowed: lowercase letters, digits "
                    f"and '-', starting with a letter, at most {MAX_WORKLOAD_NAME} characters")
        if w.name in seen:
            out.add(f"{p}.name", f"{fmt(w.name)} is already used by workloads[{seen[w.name]}]; "
                    "workload names must be unique")
        seen.setdefault(w.name, i)
        _check_image(p, w, out)
        _check_ports_and_probes(p, w, out)
        _check_env_and_volumes(p, w, out)
        pool = cfg.pool(w.node_pool)
        if pool is None:
            out.add(f"{p}.nodePool", f"{fmt(w.node_pool)} is not a node pool of this stack; allowed: "
                    f"{one_of(q.name for q in cfg.node_pools)}.{_suggest(w.node_pool, [q.name for q in cfg.node_pools])}")
        f = facts.get(w.node_pool)
        if f is not None:
            _check_gpu_request(p, w, f, out)
        if f is not None:
            _check_node_fit(p, w, f, out)
        _check_replicas(cfg, p, w, f, out)
        if not w.fixed:
            _check_autoscaling(cfg, p, w, f, version, out)
        _check_exposure(cfg, p, w, out)


def _check_image(p: str, w: Workload, out: _Issues) -> None:
    name = w.image.rsplit("/", 1)[-1]
    if "@sha256:" in w.image:
        return
    if ":" not in name:
        out.add(f"{p}.image", f"{fmt(w.image)} has no tag; allowed: an explicit version tag or a digest")
    elif name.rsplit(":", 1)[1] == "latest":
        out.add(f"{p}.image", f"{fmt(w.image)} uses 'latest'; allowed: an explicit version tag or a digest")


def _check_ports_and_probes(p: str, w: Workload, out: _Issues) -> None:
    names, numbers = set(), set()
    for j, port in enumerate(w.ports):
        if not PORT_NAME.match(port.name) or len(port.name) > 15:
            out.add(f"{p}.ports[{j}].name", f"{fmt(port.name)} is not a valid port name; allowed: lowercase letters, "
                    "digits and '-', at least one letter, at most 15 characters")
        if port.name in names:
            out.add(f"{p}.ports[{j}].name", f"{fmt(port.name)} is used twice; port names must be unique")
        if port.container_port in numbers:
            out.add(f"{p}.ports[{j}].containerPort", f"{port.container_port} is used twice")
        names.add(port.name)
        numbers.add(port.container_port)
    if not any(port.protocol in ("http", "grpc") for port in w.ports):
        out.add(f"{p}.ports", "no serving port; allowed: at least one port with protocol http or grpc")
    if w.probes is not None and w.probes.port not in names:
        out.add(f"{p}.probes.port", f"{fmt(w.probes.port)} is not a port of this workload; allowed: "
                f"{one_of(sorted(names))}")


def _check_env_and_volumes(p: str, w: Workload, out: _Issues) -> None:
    for key in w.env:
        if SECRET_ENV.search(key):
            out.add(f"{p}.env.{key}", "looks like a secret in plain text; allowed: move it to 'secretEnv' "
                    "(a reference to a Kubernetes Secret)")
    for key in set(w.env) & set(w.secret_env):
        out.add(f"{p}.secretEnv.{key}", "is also set in 'env'; set each variable once")
    vnames = set()
    for j, vol in enumerate(w.volumes):
        if (vol.nfs is None) == (vol.pvc is None):
            out.add(f"{p}.volumes[{j}]", f"{fmt(vol.name)} needs exactly one source; allowed: nfs or pvc")
        if vol.name in vnames or vol.name == "tmp":
            out.add(f"{p}.volumes[{j}].name", f"{fmt(vol.name)} is used twice or reserved ('tmp')")
        vnames.add(vol.name)


def _check_mig_profile_request(p: str, w: Workload, f: PoolFacts, out: _Issues) -> None:
    asked = w.gpu.mig_profile
    if f.mode != "mig":
        if asked is not None:
            out.add(f"{p}.gpu.migProfile", f"{fmt(asked)}: pool {fmt(f.name)} uses sharing {f.mode}, not MIG; "
                    "allowed: leave it out")
    elif not f.mig_layout:
        if asked is not None and asked != f.mig_profile:
            out.add(f"{p}.gpu.migProfile", f"{fmt(asked)}: pool {fmt(f.name)} partitions every GPU into "
                    f"{f.mig_profile}; allowed: {f.mig_profile}, or leave it out")
    elif asked is None and len(f.mig_choices) > 1:
        out.add(f"{p}.gpu.migProfile", f"required on pool {fmt(f.name)}, whose per-GPU layout offers several "
                f"kinds of device; allowed: {one_of(f.mig_choices)} ({WHOLE_GPU}: a MIG-disabled GPU)")
    elif asked is not None and asked not in f.mig_choices:
        out.add(f"{p}.gpu.migProfile", f"{fmt(asked)} is not in the layout of pool {fmt(f.name)}; allowed: "
                f"{one_of(f.mig_choices)}")


def _check_gpu_request(p: str, w: Workload, f: PoolFacts, out: _Issues) -> None:
    g = w.gpu
    _check_mig_profile_request(p, w, f, out)
    if f.mode in ("exclusive", "mig"):
        resource = f.resource_for(g) or "a MIG resource"
        unit = "whole GPUs" if f.mode == "exclusive" else f"devices ({resource})"
        if g.count is None:
            out.add(f"{p}.gpu.count", f"required on pool {fmt(f.name)} (sharing {f.mode}): the number of {unit}")
        if g.memory_gib is not None or g.core_percent is not None:
            out.add(f"{p}.gpu", f"memoryGib/corePercent request cGPU, but pool {fmt(f.name)} uses sharing "
                    f"{f.mode}; allowed: count ({resource})")
    else:
        if g.count is not None:
            out.add(f"{p}.gpu.count", f"{g.count}: pool {fmt(f.name)} shares GPUs with cGPU; allowed: "
                    f"memoryGib ({f.resource_name}, GiB per replica)")
        if g.memory_gib is None:
            out.add(f"{p}.gpu.memoryGib", f"required on cGPU pool {fmt(f.name)}: GiB of GPU memory per replica")
        elif g.memory_gib > f.model.reported_gib:
            out.add(f"{p}.gpu.memoryGib", f"{g.memory_gib} GiB is more than one {f.model.name} card offers "
                    f"({f.model.reported_gib} GiB as the device plugin reports it); allowed: 1..{f.model.reported_gib}")
        if f.cgpu_policy == "core_mem" and g.core_percent is None:
            out.add(f"{p}.gpu.corePercent", f"required on pool {fmt(f.name)} (cGPU policy core_mem isolates compute)")
        if f.cgpu_policy != "core_mem" and g.core_percent is not None:
            out.add(f"{p}.gpu.corePercent", f"{g.core_percent}: only enforced with cGPU policy core_mem; pool "
                    f"{fmt(f.name)} uses {f.cgpu_policy}")
    if not any(issue.path.startswith(f"{p}.gpu") for issue in out) and f.replicas_per_node(g) < 1:
        field, value = ("memoryGib", g.memory_gib) if f.mode == "cgpu" else ("count", g.count)
        have = f.units_for(g)
        unit = f.resource_for(g) if f.mig_layout else f.unit
        out.add(f"{p}.gpu.{field}", f"{value}: one replica needs more than a node of pool {fmt(f.name)} has "
                f"({have} {unit} per node), so the pod would stay Pending; allowed: "
                f"1..{have}, or a pool with larger nodes")


def _check_autoscaling(cfg: PlatformConfig, p: str, w: Workload, f: PoolFacts | None, version, out: _Issues) -> None:
    a = w.autoscaling
    pa = f"{p}.autoscaling"
    if a.min_replicas > a.max_replicas:
        out.add(f"{pa}.minReplicas", f"'minReplicas' ({a.min_replicas}) must be <= 'maxReplicas' ({a.max_replicas})")
    if a.min_replicas == 0 and a.autoscaler == "hpa":
        out.add(f"{pa}.minReplicas", "0 needs scale to zero; allowed with autoscaler 'hpa': >= 1 "
                "(use autoscaler: keda to scale GPU workloads to zero)")
    _check_activation(cfg, pa, w, out)
    if a.autoscaler == "keda" and cfg.monitoring.backend != "self-hosted":
        out.add(f"{pa}.autoscaler", "'keda' queries Prometheus directly and needs the self-hosted backend; "
                "allowed with backend 'arms': hpa")
    api = hpa_api_version(cfg, w)
    if a.autoscaler == "hpa" and version is not None and not served_by(api, version):
        out.add(f"{pa}.hpaApiVersion", f"{fmt(api)} is not served by Kubernetes {version[0]}.{version[1]}; allowed: "
                f"{one_of(v for v in HPA_API_VERSIONS if served_by(v, version))}")
    if a.autoscaler == "keda" and a.hpa_api_version:
        out.add(f"{pa}.hpaApiVersion", f"{fmt(a.hpa_api_version)}: KEDA creates the HPA of a ScaledObject itself; "
                "remove it")
    if a.behavior is not None:
        if a.autoscaler == "hpa" and api == "autoscaling/v2beta1":
            out.add(f"{pa}.behavior", "autoscaling/v2beta1 has no behavior; allowed: remove it, or hpaApiVersion "
                    "autoscaling/v2beta2 (Kubernetes 1.12-1.25) or autoscaling/v2 (1.23+)")
        for side in ("scale_up", "scale_down"):
            rules = getattr(a.behavior, side)
            if rules is None:
                continue
            ps = f"{pa}.behavior.{'scaleUp' if side == 'scale_up' else 'scaleDown'}"
            win = rules.stabilization_window_seconds
            if win is not None and not 0 <= win <= 3600:
                out.add(f"{ps}.stabilizationWindowSeconds", f"{win} is out of range; allowed: 0..3600")
            for k, pol in enumerate(rules.policies):
                if not 1 <= pol.period_seconds <= 1800:
                    out.add(f"{ps}.policies[{k}].periodSeconds", f"{pol.period_seconds} is out of range; "
                            "allowed: 1..1800")
    if f is not None and not any(issue.path.startswith(f"{p}.gpu") for issue in out):
        cap = f.max_replicas(w.gpu)
        if a.max_replicas > cap:
            out.add(f"{pa}.maxReplicas", f"{a.max_replicas} replicas never fit pool {fmt(f.name)}: at most {cap} "
                    f"({f.replicas_per_node(w.gpu)} per node x {f.max_nodes} nodes); allowed: <= {cap}, or raise "
                    "the pool's maxNodes")
    _check_scales_down(pa, a.metrics, out)
    seen = set()
    for k, t in enumerate(a.metrics):
        pm = f"{pa}.metrics[{k}]"
        if t.target <= 0:
            out.add(f"{pm}.target", f"{t.target} is not a positive target; allowed: > 0")
        if t.metric in seen:
            out.add(f"{pm}.metric", f"{fmt(t.metric)} is listed twice")
        seen.add(t.metric)
        metric = METRICS.get(t.metric)
        if metric is None:
            out.add(f"{pm}.metric", f"{fmt(t.metric)} is not a catalog metric; allowed: {one_of(METRICS)}."
                    f"{_suggest(t.metric, METRICS)}")
            continue
        _check_target_range(pm, t.metric, t.target, metric, out)
        mode = f.mode_for(w.gpu) if f is not None else None
        if f is not None and mode not in metric.sharing_modes:
            valid = [m.name for m in METRICS.values() if mode in m.sharing_modes]
            out.add(f"{pm}.metric", f"{fmt(t.metric)} is not meaningful on pool {fmt(f.name)} (sharing {mode}): "
                    f"{_mode_reason(t.metric, mode)}; allowed there: {one_of(valid)}")
            continue
        provider = provider_for(cfg, w, metric)
        if metric.category == "app" and provider is None:
            out.add(f"{pm}.metric", f"{fmt(t.metric)} is an inference-server metric; set 'server' to one of "
                    f"{one_of(metric.exporters)}")
            continue
        src = metric.source(provider)
        if src is None:
            out.add(f"{pm}.metric", f"{fmt(t.metric)} is not available from {fmt(provider)}; it comes from "
                    f"{one_of(metric.exporters)}")
            continue
        if src.scope != "pod":
            pod_metrics = [m.name for m in METRICS.values()
                           if (s := m.source(provider)) and s.scope == "pod" and (f is None or f.mode in m.sharing_modes)]
            out.add(f"{pm}.metric", f"{fmt(t.metric)} is served per node by the {provider} exporter "
                    f"({src.api_name}), not per pod, so an HPA cannot average it over its pods; allowed: "
                    f"{one_of(pod_metrics)}")
        if metric.category == "app" and not any(port.protocol == "metrics" for port in w.ports):
            out.add(f"{pm}.metric", f"{fmt(t.metric)} is scraped from the pods, but the workload has no port with "
                    "protocol 'metrics' (e.g. Triton's 8002); allowed: add one")


def _check_activation(cfg: PlatformConfig, pa: str, w: Workload, out: _Issues) -> None:
    """At zero replicas KEDA decides 0 -> 1 from its triggers' activation alone (KEDA docs, "Scaling Deployments":
    activation phase). A trigger on the workload's own pods returns nothing then (ignoreNullValues reads it as 0),
    so scale to zero needs a trigger whose series exists without the pods."""
    a = w.autoscaling
    act = a.activation
    if a.autoscaler == "keda" and a.min_replicas == 0 and act is None:
        own = ", ".join(fmt(t.metric) for t in a.metrics)
        out.add(f"{pa}.minReplicas", f"0 would never wake up: {own} come from the workload's own pods, which do not "
                "exist at zero replicas, so KEDA never activates; allowed: >= 1, or add 'activation' (source "
                "'ingress': requests at the ingress controller, or 'prometheus': a series of another job such as a "
                "queue length)")
    if act is None:
        return
    if a.autoscaler != "keda" or a.min_replicas != 0:
        out.add(f"{pa}.activation", "only used to wake a KEDA workload from zero; allowed with autoscaler 'keda' "
                "and minReplicas 0")
    if act.source == "ingress":
        ing = w.exposure.ingress
        if ing is None or ing.class_name != "nginx":
            out.add(f"{pa}.activation.source", "'ingress' counts requests at the ingress-nginx controller, but the "
                    "workload has no nginx ingress; allowed: add exposure.ingress (className nginx), or source "
                    "'prometheus'")
        if act.query is not None:
            out.add(f"{pa}.activation.query", "only used with source 'prometheus'; the ingress query is generated")
    else:
        if not act.query:
            out.add(f"{pa}.activation.query", "required with source 'prometheus': PromQL over series of another "
                    "job, e.g. a queue length")
            return
        own = sorted({s.series for m in METRICS.values() for s in m.sources} & set(re.findall(r"[A-Za-z_:][\w:]*",
                                                                                          act.query)))
        if own:
            out.add(f"{pa}.activation.query", f"{fmt(act.query)} reads {one_of(own)}, which the workload's pods "
                    "or their GPUs report and which does not exist at zero replicas; allowed: a series of another "
                    "job (ingress controller, queue exporter)")


def _check_scales_down(pa: str, targets, out: _Issues) -> None:
    """GPU memory does not fall when load falls (servers pre-allocate it and keep it: GKE's inference autoscaling
    guidance names TGI and vLLM), so an autoscaler on memory alone never scales down; next to a metric that does
    fall, the HPA takes the larger recommendation and memory only adds replicas (kubernetes.io, "Horizontal Pod
    Autoscaling", scaling on multiple metrics)."""
    metrics = [METRICS.get(t.metric) for t in targets]
    if not metrics or any(m is None for m in metrics) or any(m.scale_down_reliable for m in metrics):
        return
    falls = [name for name, m in METRICS.items() if m.scale_down_reliable]
    names = ", ".join(fmt(t.metric) for t in targets)
    out.add(f"{pa}.metrics", f"{names} only measure GPU memory, which inference servers pre-allocate and keep, so "
            f"the workload would never scale down; allowed: add a metric that falls with load ({one_of(falls)}) "
            "and keep memory as a scale-up signal")


def _check_target_range(pm: str, name: str, target: float, metric, out: _Issues) -> None:
    """A target is in the metric's unit; it must be a value the metric can exceed by more than the HPA's
    tolerance, and a quantity Kubernetes can hold (milli precision)."""
    if target <= 0:
        return
    unit = metric.unit_info
    if unit.maximum is not None:
        ceiling = math.floor(unit.maximum / (1 + HPA_TOLERANCE) * 1000) / 1000
        if target > ceiling:
            hint = f"; a ratio is 0-1: did you mean {target / 100:g}?" if metric.unit == "ratio" and target <= 100 else ""
            out.add(f"{pm}.target", f"{target:g} can never be exceeded enough to scale up: {fmt(name)} is "
                    f"{unit.description} and never passes {unit.maximum:g}, and the HPA acts only when the value is "
                    f"more than {HPA_TOLERANCE:.0%} above its target (kube-controller-manager "
                    f"--horizontal-pod-autoscaler-tolerance); allowed: > 0 and <= {ceiling:g}{hint}")
            return
    if abs(target * 1000 - round(target * 1000)) > 1e-6:
        out.add(f"{pm}.target", f"{target:g} has more precision than a Kubernetes quantity keeps; allowed: a "
                f"multiple of 0.001 (in {unit.description})")


def _mode_reason(metric: str, mode: str) -> str:
    if mode == "mig" and metric in ("gpu_util", "gpu_fb_used", "gpu_mem_used_ratio"):
        return "DCGM does not report whole-GPU utilization/memory for MIG instances (use gpu_engine_active)"
    if mode == "cgpu":
        return "device-level values describe the whole shared card, not one pod"
    return "the exporter reports no per-pod value in this mode"


def _check_exposure(cfg: PlatformConfig, p: str, w: Workload, out: _Issues) -> None:
    e = w.exposure
    if e.service_type == "PublicLoadBalancer" and not cfg.settings.allow_public_endpoints:
        allowed = "ClusterIP, InternalLoadBalancer" if cfg.is_ack else "ClusterIP"
        out.add(f"{p}.exposure.serviceType", "'PublicLoadBalancer' exposes the service to the Internet, which this "
                f"stack does not allow (settings.allowPublicEndpoints is false); allowed: {allowed}")
    if e.service_type == "InternalLoadBalancer" and not cfg.is_ack:
        out.add(f"{p}.exposure.serviceType", "'InternalLoadBalancer' uses the ACK intranet SLB annotation; allowed "
                "on cluster kind 'kubeconfig': ClusterIP (with an ingress)")
    if e.ingress is not None:
        _check_ingress(p, w, e.ingress, out)
        _check_ingress_controller(cfg, p, e.ingress, out)


# ingress-nginx proxies gRPC only on its TLS (HTTP/2 via ALPN) listener and asks for a TLS secret in the
# workload's namespace (kubernetes/ingress-nginx docs/examples/grpc/README.md, prerequisites; ACK "Configure
# gRPC services for NGINX Ingress": TLS must be enabled). ALB Ingress forwards gRPC only from HTTPS listeners
# (ACK "ALB Ingress configuration dictionary", backend-protocol grpc). So a gRPC route without TLS plans cleanly
# and never answers a gRPC client.
GRPC_NEEDS_TLS = ("nginx", "alb")


def _check_ingress(p: str, w: Workload, ing, out: _Issues) -> None:
    pi = f"{p}.exposure.ingress"
    one_port = (ing.host is not None, ing.port is not None)
    if one_port == (True, False) or one_port == (False, True):
        missing = "port" if ing.port is None else "host"
        out.add(f"{pi}.{missing}", f"required with {fmt(ing.host if ing.host is not None else ing.port)}: the "
                "one-port form needs both 'host' and 'port'")
    if not ing.routes and one_port == (False, False):
        out.add(pi, "routes nothing; allowed: 'host' + 'port', or 'routes' (one {port, host} per serving port)")
    serving = [q.name for q in w.ports if q.protocol in ("http", "grpc")]
    keys = ([("port", ing.port)] if ing.port is not None else []) + \
        [(f"routes[{k}].port", r.port) for k, r in enumerate(ing.routes)]
    seen: set[str] = set()
    for key, name in keys:
        port = next((q for q in w.ports if q.name == name), None)
        if port is None or port.protocol == "metrics":
            out.add(f"{pi}.{key}", f"{fmt(name)} is not a serving port; allowed: {one_of(serving)}")
            continue
        if name in seen:
            out.add(f"{pi}.{key}", f"{fmt(name)} is routed twice; give each serving port one route")
        seen.add(name)
        if port.protocol == "grpc" and ing.class_name in GRPC_NEEDS_TLS and not ing.tls_secret:
            out.add(f"{pi}.tlsSecret", f"required: port {fmt(name)} speaks gRPC, and ingress class "
                    f"{fmt(ing.class_name)} serves gRPC (HTTP/2) only on its TLS listener; allowed: the name of a "
                    "kubernetes.io/tls Secret in the workload namespace covering every host")


def _check_ingress_controller(cfg: PlatformConfig, p: str, ing, out: _Issues) -> None:
    """The stack installs only ACK's nginx add-on; anything else runs a controller it does not manage."""
    if ing.controller != "addon":
        return
    if not cfg.is_ack:
        out.add(f"{p}.exposure.ingress.controller", "'addon' installs ACK's nginx-ingress-controller add-on and needs "
                "an ACK cluster; allowed on cluster kind 'kubeconfig': external (install a controller yourself)")
    elif ing.class_name == "alb":
        out.add(f"{p}.exposure.ingress.controller", "'addon' with className 'alb': an ALB Ingress also needs an "
                "AlbConfig and IngressClass this stack does not create; allowed: external (create them in the "
                "ACK console or another stack), or className nginx")


def check_pool_totals(cfg: PlatformConfig, facts: dict[str, PoolFacts], out: _Issues) -> None:
    """Workloads of a pool must fit together at their most replicas, or the last ones stay Pending: cGPU memory
    bin-packed per card (an 8 GiB and a 4 GiB replica share one 14 GiB T4), whole GPUs and MIG instances per
    node, and CPU and memory per node from the instance type."""
    for i, pool in enumerate(cfg.node_pools):
        f = facts.get(pool.name)
        users = [(k, w) for k, w in enumerate(cfg.workloads) if w.node_pool == pool.name]
        if f is None or not users or any(f.replicas_per_node(w.gpu) < 1 for _, w in users):
            continue
        reported = (".gpu", ".resources", ".autoscaling.maxReplicas", ".replicas")
        if any(issue.path.startswith(f"workloads[{k}]{suffix}") for k, _ in users for suffix in reported
               for issue in out):
            continue  # one replica or one workload alone already does not fit: reported there
        ws = [w for _, w in users]
        missing = {name: n for name, n in f.unplaced(ws).items() if n}
        if not missing:
            continue
        enough = next((n for n in range(f.max_nodes + 1, f.max_nodes + sum(w.replica_ceiling for w in ws) + 1)
                       if not any(replace(f, max_nodes=n).unplaced(ws).values())), None)
        names = ", ".join(f"{w.name} ({w.replica_ceiling})" for w in ws)
        pending = ", ".join(f"{n} of {name}" for name, n in missing.items())
        out.add(f"nodePools[{i}].maxNodes", f"{f.max_nodes} nodes cannot hold {names} at their most replicas "
                f"together: {pending} would stay Pending ({_packing(f)}); allowed: "
                f"{f'>= {enough}' if enough else 'more nodes'}, or lower the workloads' replicas")


def _packing(f: PoolFacts) -> str:
    per_node = f"{f.vcpus} vCPUs and {f.memory_gib} GiB per node" if f.vcpus else "CPU and memory not known"
    if f.mode == "cgpu":
        return f"{f.model.reported_gib} GiB per {f.model.name} card, a replica's memory on one card; {per_node}"
    if f.mig_layout:
        return f"{', '.join(f'{n} {r}' for r, n in sorted(f.node_resources.items()))} per node; {per_node}"
    return f"{f.units_per_node} {f.unit} per node; {per_node}"


def _check_node_fit(p: str, w: Workload, f: PoolFacts, out: _Issues) -> None:
    """One replica's CPU and memory must fit a node of the pool (the smallest of its instance types)."""
    from gpuplatform.components.pools import _amount

    if f.vcpus is not None:
        cpu = _amount(w.resources.cpu)
        if cpu > f.vcpus:
            out.add(f"{p}.resources.cpu", f"{fmt(w.resources.cpu)}: one replica asks more CPU than a node of pool "
                    f"{fmt(f.name)} has ({f.vcpus} vCPUs), so the pod would stay Pending; allowed: <= {f.vcpus}, or "
                    "a larger instance type")
    if f.memory_gib is not None:
        memory = _amount(w.resources.memory)
        if memory > f.memory_gib * 2 ** 30:
            out.add(f"{p}.resources.memory", f"{fmt(w.resources.memory)}: one replica asks more memory than a node "
                    f"of pool {fmt(f.name)} has ({f.memory_gib} GiB), so the pod would stay Pending; allowed: <= "
                    f"{f.memory_gib}Gi, or a larger instance type")


def _check_replicas(cfg: PlatformConfig, p: str, w: Workload, f: Optional[PoolFacts], out: _Issues) -> None:
    """A workload has either a fixed replica count or an autoscaler with metrics."""
    a = w.autoscaling
    if w.fixed:
        if w.replicas is None:
            out.add(f"{p}.replicas", "required: the workload has no autoscaler; allowed: replicas: N (a fixed "
                    "count), or an 'autoscaling' block with autoscaler hpa or keda and its metrics")
        if a.metrics:
            out.add(f"{p}.autoscaling.metrics", "set, but autoscaler 'none' reads no metric; allowed: remove them, "
                    "or autoscaler hpa or keda")
        if f is not None and w.replicas and not any(i.path.startswith(f"{p}.gpu") for i in out):
            cap = f.max_replicas(w.gpu)
            if w.replicas > cap:
                out.add(f"{p}.replicas", f"{w.replicas} replicas never fit pool {fmt(f.name)}: at most {cap} "
                        f"({f.replicas_per_node(w.gpu)} per node x {f.max_nodes} nodes); allowed: <= {cap}, or "
                        "raise the pool's maxNodes")
        return
    if w.replicas is not None:
        out.add(f"{p}.replicas", f"{w.replicas}: a fixed count, but autoscaler {fmt(a.autoscaler)} owns the "
                "replica count; allowed: 'replicas' without 'autoscaling', or 'autoscaling' without 'replicas'")
    if not a.metrics:
        out.add(f"{p}.autoscaling.metrics", f"required with autoscaler {fmt(a.autoscaler)}: at least one metric "
                "(a workload without an autoscaler sets 'replicas' instead)")


RULES: tuple[Rule, ...] = (check_cluster, check_chart_versions, check_ack_cluster, check_adapter_adoption, check_intervals, check_pools,
                           check_mig_strategy, check_mig_configs,
                           check_workloads, check_pool_totals,
                           check_kubernetes_validity, check_served_metrics, check_metrics_served)


def validate(cfg: PlatformConfig, *, installs_charts: bool = True) -> list[ConfigIssue]:
    """Every issue of ``cfg``. ``installs_charts=False`` for a config that stands for a single reused service,
    which installs none of the platform's charts, so their Kubernetes ranges do not limit it."""
    out = _Issues()
    facts = all_pool_facts(cfg)
    for rule in RULES:
        if rule is check_chart_versions and not installs_charts:
            continue
        rule(cfg, facts, out)
    return list(out)


__all__ = ["parse", "validate", "load", "hpa_api_version", "kubernetes_version"]
