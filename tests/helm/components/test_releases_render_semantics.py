"""What the rendered releases do once installed: the checks a reviewer would make on `helm template` output,
made on every stack and extra configuration."""
import base64
import bz2
import functools
import re

import pytest
import yaml

from gpuplatform.catalogs import sharing

import helm_engine
from gpuplatform.catalogs.kubernetes import MANAGED_CONTROL_PLANE_COMPONENTS
from gpuplatform.catalogs.mig import fits_one_gpu, max_instances
from gpuplatform.catalogs.versions import CHARTS, IMAGES
from gpuplatform.components.monitoring import managed_control_plane
from gpuplatform.components.pools import all_pool_facts
from gpuplatform.components.releases import chart_releases, chart_version
from gpuplatform.components.validation import load
from rendered import CONFIGS, PIN_VARIANTS

BUILTIN_CLUSTER_SCOPED = {
    "Namespace", "Node", "PersistentVolume", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition",
    "APIService", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding", "PriorityClass", "StorageClass", "CSIDriver", "RuntimeClass",
    "IngressClass", "VolumeAttachment", "DeviceClass", "CertificateSigningRequest", "FlowSchema",
    "PriorityLevelConfiguration"}


def _configs_with(*release_keys: str) -> list[str]:
    """Configurations that install all of ``release_keys`` (decided from the config, before rendering)."""
    return [n for n, make in CONFIGS.items() if set(release_keys) <= set(chart_releases(load(make())))]


def _meta(doc: dict) -> dict:
    return doc.get("metadata") or {}


def _of_kind(stack, kind: str) -> list[tuple[str, dict]]:
    return [(o, d) for o, d in stack.all_objects() if d.get("kind") == kind]


def _matches(selector: dict | None, labels: dict) -> bool:
    """A Kubernetes label selector (matchLabels and matchExpressions); an empty selector matches everything."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        if (op == "In" and labels.get(key) not in values) or (op == "NotIn" and labels.get(key) in values) or \
                (op == "Exists" and key not in labels) or (op == "DoesNotExist" and key in labels):
            return False
    return True


# ---------------------------------------------------------------------------------------------- adapter rules
def served_custom_metrics(config_yaml: str) -> set[str]:
    """Metric names prometheus-adapter serves under custom.metrics.k8s.io for its rules: ``name.as`` with the
    ``name.matches`` groups substituted into the series name (prometheus-adapter docs/config.md, "Naming")."""
    served = set()
    for rule in yaml.safe_load(config_yaml).get("rules") or []:
        series = re.match(r"[A-Za-z_:][A-Za-z0-9_:]*", rule["seriesQuery"]).group(0)
        name = rule.get("name") or {}
        pattern, template = name.get("matches", "(.*)"), name.get("as", "")
        served.add(re.sub(pattern, template.replace("$", "\\"), series) if template else series)
    return served


@pytest.mark.parametrize("name", _configs_with("prometheus-adapter"))
def test_adapter_rules_serve_every_hpa_metric(rendered, name):
    stack = rendered(name)
    config_maps = [d for _, d in stack.releases["prometheus-adapter"].objects
                   if d["kind"] == "ConfigMap" and "config.yaml" in (d.get("data") or {})]
    assert len(config_maps) == 1
    served = served_custom_metrics(config_maps[0]["data"]["config.yaml"])
    wanted = {(d["metadata"]["name"], m[m["type"].lower()]["metric"]["name"])
              for _, d in _of_kind(stack, "HorizontalPodAutoscaler")
              for m in d["spec"]["metrics"] if m["type"] in ("Pods", "Object")}
    assert wanted, "the configuration has no HPA on a custom metric"
    assert not {w for w in wanted if w[1] not in served}, (sorted(wanted), sorted(served))


# ---------------------------------------------------------------------------------------------- API services
@pytest.mark.parametrize("name", list(CONFIGS))
def test_every_apiservice_is_tls_verified(rendered, name):
    """An aggregated API the HPA controller trusts must be verified: no insecureSkipTLSVerify, and a CA the API
    server checks the serving certificate against (inline, or injected by cert-manager from a Certificate the
    stack installs; KEDA's operator writes its generated CA into its own APIService)."""
    stack = rendered(name)
    certificates = {f"{_meta(d).get('namespace') or rel.namespace}/{_meta(d)['name']}"
                    for rel in stack.releases.values() for _, d in rel.objects if d["kind"] == "Certificate"}
    services = _of_kind(stack, "APIService")
    if "prometheus-adapter" in stack.releases:
        assert any(d["spec"]["group"] == "custom.metrics.k8s.io" for _, d in services)
    for origin, doc in services:
        spec, annotations = doc["spec"], _meta(doc).get("annotations") or {}
        assert not spec.get("insecureSkipTLSVerify"), f"{origin}: {_meta(doc)['name']} skips TLS verification"
        inject = annotations.get("cert-manager.io/inject-ca-from")
        keda = origin.startswith(f"{CHARTS['keda'].release}:")
        assert spec.get("caBundle") or (inject in certificates and "cert-manager" in stack.releases) or keda, \
            f"{origin}: {_meta(doc)['name']} has no CA to verify its server with ({inject!r})"
        if keda:
            values = stack.releases[CHARTS["keda"].release].values
            assert (values.get("certificates") or {}).get("autoGenerated", True)


# ---------------------------------------------------------------------------------------------- Prometheus
@pytest.mark.parametrize("name", _configs_with("kube-prometheus-stack"))
def test_prometheus_selects_our_monitors_and_rules(rendered, name):
    """prometheus-operator: a nil selector selects nothing, an empty one everything; a nil namespace selector
    means the Prometheus object's own namespace only (prometheus-operator API reference, PrometheusSpec)."""
    stack = rendered(name)
    (_, prom), = _of_kind(stack, "Prometheus")
    prom_ns = _meta(prom).get("namespace") or stack.releases["kube-prometheus-stack"].namespace
    spec = prom["spec"]
    kinds = {"ServiceMonitor": "serviceMonitor", "PodMonitor": "podMonitor", "PrometheusRule": "rule"}
    ours = [d for d in stack.authored() if d["kind"] in kinds]
    ours += [d for r in stack.releases.values() if r.chart.name != "kube-prometheus-stack"
             for d in r.installed() if d["kind"] in kinds]
    assert ours
    for doc in ours:
        field = kinds[doc["kind"]]
        ns = _meta(doc).get("namespace")
        ns_selector = spec.get(f"{field}NamespaceSelector")
        assert _matches(spec.get(f"{field}Selector"), _meta(doc).get("labels") or {}), (doc["kind"], _meta(doc))
        assert (ns_selector is not None and _matches(ns_selector, {})) or ns == prom_ns, (doc["kind"], _meta(doc))


def exporter_monitors(stack) -> list[tuple[str, dict]]:
    """(origin, endpoint settings) of every GPU exporter monitor the stack declares."""
    out = []
    for origin, doc in _of_kind(stack, "ServiceMonitor"):
        if "dcgm" in _meta(doc)["name"]:
            out += [(origin, ep) for ep in doc["spec"]["endpoints"]]
    for origin, doc in _of_kind(stack, "ClusterPolicy"):  # the GPU Operator creates its ServiceMonitor itself
        out.append((origin, doc["spec"]["dcgmExporter"]["serviceMonitor"]))
    return out


@pytest.mark.parametrize("name", [n for n in _configs_with("kube-prometheus-stack") if n != "legacy-exporter"])
def test_exporter_monitor_honours_labels_at_the_interval_the_latency_model_assumes(rendered, name):
    stack = rendered(name)
    found = exporter_monitors(stack)
    assert found, "no GPU exporter monitor"
    for origin, ep in found:
        assert ep.get("honorLabels") is True, origin
        assert ep.get("interval") == stack.cfg.monitoring.intervals.scrape, origin


# ---------------------------------------------------------------------------------------------- GPU software
_MIG_PROFILE_FORMAT = re.compile(r"(\d+c\.)?\d+g\.\d+gb(\+[a-z]+)*")
"""A MIG profile name as mig-parted accepts it in ``mig-devices`` (``[<C>c.]<G>g.<M>gb[+<attribute>]``;
NVIDIA/go-nvlib ``AssertValidMigProfileFormat``, called by mig-parted ``pkg/types/mig_config.go``)."""


def mig_parted_spec_errors(spec) -> list[str]:
    """Why mig-parted would refuse a config file, by the rules of NVIDIA/mig-parted ``api/spec/v1/spec.go``
    (``Spec.UnmarshalJSON``, ``MigConfigSpec.UnmarshalJSON``) and ``pkg/types/mig_config.go``
    (``MigConfig.AssertValidFormat``): ``version`` must be ``v1``; only ``version`` and ``mig-configs`` at the top;
    ``mig-configs`` a non-empty map of non-empty lists; each entry needs ``devices`` (``all`` or a list of ints)
    and ``mig-enabled`` (a bool), may also have ``device-filter`` and ``mig-devices`` and nothing else;
    ``mig-devices`` is required when enabled and must be empty when disabled; counts are ints >= 0, not all 0."""
    if not isinstance(spec, dict):
        return [f"not a map: {spec!r}"]
    errors = []
    if spec.get("version") != "v1":
        errors.append(f"version {spec.get('version')!r}, want 'v1'")
    errors += [f"unexpected field {k!r}" for k in spec if k not in ("version", "mig-configs")]
    configs = spec.get("mig-configs")
    if not isinstance(configs, dict) or not configs:
        return errors + ["mig-configs: at least one entry is required"]
    for name, entries in configs.items():
        if not isinstance(entries, list) or not entries:
            errors.append(f"{name}: at least one entry is required")
            continue
        for i, e in enumerate(entries):
            where = f"{name}[{i}]"
            if not isinstance(e, dict):
                errors.append(f"{where}: not a map")
                continue
            errors += [f"{where}: missing required field {k}" for k in ("devices", "mig-enabled") if k not in e]
            errors += [f"{where}: unexpected field {k!r}" for k in e
                       if k not in ("device-filter", "devices", "mig-enabled", "mig-devices")]
            devices = e.get("devices")
            if not (devices == "all" or (isinstance(devices, list)
                                         and all(isinstance(d, int) and not isinstance(d, bool) for d in devices))):
                errors.append(f"{where}: devices {devices!r}, want 'all' or a list of ints")
            enabled, mig_devices = e.get("mig-enabled"), e.get("mig-devices")
            if not isinstance(enabled, bool):
                errors.append(f"{where}: mig-enabled {enabled!r} is not a bool")
            if enabled is True and mig_devices is None:
                errors.append(f"{where}: missing required field 'mig-devices' when 'mig-enabled' is true")
            if enabled is False and mig_devices:
                errors.append(f"{where}: MIG devices included when 'mig-enabled' is false")
            if mig_devices is not None and not isinstance(mig_devices, dict):
                errors.append(f"{where}: mig-devices {mig_devices!r} is not a map")
            elif mig_devices:
                for profile, count in mig_devices.items():
                    if not _MIG_PROFILE_FORMAT.fullmatch(str(profile)):
                        errors.append(f"{where}: invalid format for {profile!r}")
                    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                        errors.append(f"{where}: invalid count {count!r} for {profile!r}")
                if not any(isinstance(c, int) and c > 0 for c in mig_devices.values()):
                    errors.append(f"{where}: all counts for all MigProfiles are 0")
    return errors


def test_mig_parted_checker_refuses_what_mig_parted_refuses():
    good = {"version": "v1", "mig-configs": {
        "all-disabled": [{"devices": "all", "mig-enabled": False}],
        "split": [{"devices": [0], "mig-enabled": True, "mig-devices": {"1g.5gb": 7}},
                  {"devices": [1], "mig-enabled": False}]}}
    assert mig_parted_spec_errors(good) == []
    bad = [
        {"mig-configs": good["mig-configs"]},
        {**good, "default": "all-disabled"},
        {"version": "v1", "mig-configs": {}},
        {"version": "v1", "mig-configs": {"empty": []}},
        {"version": "v1", "mig-configs": {"x": [{"devices": "all"}]}},
        {"version": "v1", "mig-configs": {"x": [{"devices": "some", "mig-enabled": False}]}},
        {"version": "v1", "mig-configs": {"x": [{"devices": [0], "mig-enabled": True}]}},
        {"version": "v1", "mig-configs": {"x": [{"devices": [0], "mig-enabled": False, "mig-devices": {"1g.5gb": 1}}]}},
        {"version": "v1", "mig-configs": {"x": [{"devices": [0], "mig-enabled": True, "mig-devices": {"1g.5gb": 0}}]}},
        {"version": "v1", "mig-configs": {"x": [{"devices": [0], "mig-enabled": True, "mig-devices": {"big": 1}}]}},
        {"version": "v1", "mig-configs": {"x": [{"devices": [0], "mig-enabled": False, "profiles": {}}]}},
    ]
    for spec in bad:
        assert mig_parted_spec_errors(spec), spec


def _mig_parted_config_maps(rel) -> list[dict]:
    """ConfigMaps of the release holding a mig-parted config, whatever their key."""
    return [d for d in rel.installed() if d["kind"] == "ConfigMap"
            and any("mig-configs" in str(v) for v in (d.get("data") or {}).values())]


@pytest.mark.parametrize("name", _configs_with("gpu-operator") + list(PIN_VARIANTS))
def test_gpu_operator_mig_config_is_what_the_pools_ask(rendered, name):
    """mig-manager applies, per node, the mig-parted config its ``nvidia.com/mig.config`` label names, from the
    ConfigMap ClusterPolicy ``spec.migManager.config.name`` points at, or from the operator's own built-in configs
    when no name is set. A named config replaces the built-ins (gpu-operator ``values.yaml`` ``migManager.config``;
    the chart creates the ConfigMap with ``templates/mig_config.yaml``), so with a per-GPU layout ours must hold
    every config the pools' labels name."""
    stack = rendered(name)
    rel = stack.releases[CHARTS["gpu-operator"].release]
    (_, policy), = _of_kind(stack, "ClusterPolicy")
    pools = [f for f in all_pool_facts(stack.cfg).values() if f.mode == "mig"]
    assert pools
    layout_pools = [f for f in pools if f.mig_layout]
    strategies = {f.mig_strategy for f in pools}
    mig_manager = policy["spec"]["migManager"]
    assert mig_manager["enabled"] is True
    assert mig_manager["config"]["default"] == "all-disabled"
    config_maps = _mig_parted_config_maps(rel)

    if not layout_pools:
        # the operator's built-in configs hold every all-<profile>: no ConfigMap of ours, no name
        assert policy["spec"]["mig"]["strategy"] == (strategies.pop() if len(strategies) == 1 else "mixed")
        assert not mig_manager["config"].get("name"), mig_manager["config"]
        assert config_maps == []
        for f in pools:
            assert f.node_labels["nvidia.com/mig.config"] == f"all-{f.mig_profile}", f.node_labels
        return

    # MIG-disabled GPUs next to MIG devices (and several profiles) need the mixed strategy
    # (NVIDIA/k8s-device-plugin internal/rm/device_map.go: single needs one MIG type and migEnabled on all GPUs)
    assert policy["spec"]["mig"]["strategy"] == "mixed"
    name = mig_manager["config"].get("name")
    named = [d for d in rel.installed() if d["kind"] == "ConfigMap" and _meta(d).get("name") == name]
    assert name and len(named) == 1, (name, [_meta(d).get("name") for d in config_maps])
    (cm,) = named
    assert config_maps == [cm], "a second mig-parted config in the release"
    # the operator reads it from its own namespace (the release's, where its Deployment runs)
    (operator,) = [d for d in rel.installed() if d["kind"] == "Deployment" and _meta(d)["name"] == "gpu-operator"]
    assert (_meta(cm).get("namespace") or rel.namespace) == (_meta(operator).get("namespace") or rel.namespace) \
        == rel.namespace
    assert set(cm["data"]) == {"config.yaml"}
    spec = yaml.safe_load(cm["data"]["config.yaml"])
    assert mig_parted_spec_errors(spec) == []
    configs = spec["mig-configs"]
    # the default of unlabelled nodes must exist in ours, since ours replaces the built-ins
    assert configs.get("all-disabled") == [{"devices": "all", "mig-enabled": False}], sorted(configs)
    for f in pools:
        label = f.node_labels["nvidia.com/mig.config"]
        assert label in configs, (f.name, label, sorted(configs))
        entries = configs[label]
        if not f.mig_layout:
            assert entries == [{"devices": "all", "mig-enabled": True,
                                "mig-devices": {f.mig_profile: max_instances(f.model.name, f.mig_profile)}}]
            continue
        indices = [i for e in entries for i in e["devices"]]
        assert sorted(indices) == list(range(f.gpus_per_node)), (f.name, indices)
        found = sorted((tuple(e["devices"]), tuple(sorted((e.get("mig-devices") or {}).items()))) for e in entries)
        (declared,) = [p["sharing"]["layout"] for p in stack.raw["nodePools"] if p["name"] == f.name]
        wanted = sorted((tuple(e["devices"]), tuple(sorted((e.get("profiles") or {}).items()))) for e in declared)
        assert found == wanted, (f.name, found, wanted)
        for e in entries:
            assert e["mig-enabled"] is bool(e.get("mig-devices")), e
            assert not e["mig-enabled"] or fits_one_gpu(f.model.name, e["mig-devices"]), (f.name, e)


def test_older_gpu_operator_pins_render_the_values_at_a_minor_that_picks_them(rendered):
    assert PIN_VARIANTS, "one GPU Operator pin only: nothing older to render"
    for name, (_, key, version) in PIN_VARIANTS.items():
        stack = rendered(name)
        (rel,) = stack.releases.values()
        assert rel.version == version and chart_version(key, stack.minor) == version, (name, stack.minor)
        assert version != chart_version(key, rendered(name.split("@")[0]).minor)


@pytest.mark.parametrize("name", _configs_with("fake-gpu-operator"))
def test_simulated_topology_has_exactly_the_stacks_pools(rendered, name):
    stack = rendered(name)
    topologies = [yaml.safe_load(d["data"]["topology.yml"]) for _, d in stack.releases["fake-gpu-operator"].objects
                  if d["kind"] == "ConfigMap" and "topology.yml" in (d.get("data") or {})]
    assert len(topologies) == 1
    # the stack's pools, and the chart's own default pool, inert: it takes only nodes labelled with the pool label
    # =default, which no pool of the stack's carries (a pool named default would replace it)
    assert set(topologies[0]["nodePools"]) == {p.name for p in stack.cfg.node_pools} | {"default"}
    assert topologies[0]["nodePoolLabelKey"] == sharing.SIMULATED_POOL_LABEL


# ---------------------------------------------------------------------------------------------- whole stack
def _identity(stack, rel_namespace: str | None, doc: dict) -> tuple:
    group = doc["apiVersion"].rpartition("/")[0]
    cluster_scoped = doc["kind"] in BUILTIN_CLUSTER_SCOPED or any(
        c["spec"]["names"]["kind"] == doc["kind"] and c["spec"].get("scope") == "Cluster" for c in stack.crds())
    ns = None if cluster_scoped else (_meta(doc).get("namespace") or rel_namespace)
    return group, doc["kind"], ns, _meta(doc)["name"]


@pytest.mark.parametrize("name", list(CONFIGS))
def test_no_two_releases_create_the_same_object(rendered, name):
    stack = rendered(name)
    owners: dict[tuple, list[str]] = {}
    for rel in stack.releases.values():
        for doc in rel.installed():
            owners.setdefault(_identity(stack, rel.namespace, doc), []).append(rel.name)
    for doc in stack.authored():
        owners.setdefault(_identity(stack, None, doc), []).append("program")
    twice = {k: v for k, v in owners.items() if len(v) > 1}
    assert not twice, twice


@pytest.mark.parametrize("name", _configs_with("kube-prometheus-stack"))
def test_no_alert_or_monitor_watches_a_component_the_cluster_does_not_expose(rendered, name):
    stack = rendered(name)
    if not managed_control_plane(stack.cfg):
        pytest.skip("the cluster runs its own control plane")
    hidden = set(MANAGED_CONTROL_PLANE_COMPONENTS.values())
    job = re.compile(r'job\s*=~?\s*"([^"]*)"')
    offending = []
    for origin, doc in _of_kind(stack, "PrometheusRule"):
        for group in doc["spec"]["groups"]:
            for rule in group["rules"]:
                for pattern in job.findall(str(rule.get("expr", ""))):
                    if any(re.fullmatch(pattern, component) for component in hidden):
                        offending.append(f"{origin}: {rule.get('alert') or rule.get('record')} ({pattern})")
    for origin, doc in _of_kind(stack, "ServiceMonitor"):
        if any(_meta(doc)["name"].endswith(component) for component in hidden):
            offending.append(f"{origin}: ServiceMonitor {_meta(doc)['name']}")
    assert not offending, "\n".join(offending)


# ---------------------------------------------------------------------------------------------- CRDs, nulls
@pytest.mark.parametrize("name", _configs_with("kube-prometheus-stack"))
def test_monitoring_crds_are_reapplied_on_every_upgrade(rendered, name):
    """Helm installs crds/ once and skips them on upgrade (helm.sh/docs/chart_best_practices/custom_resource_
    definitions); the chart's own hook Job re-applies, before each install and upgrade, the CRDs of the chart
    version being installed."""
    rel = rendered(name).releases["kube-prometheus-stack"]
    jobs = [d for d in rel.installed() if d["kind"] == "Job" and "crds-upgrade" in _meta(d)["name"]]
    assert len(jobs) == 1
    assert {"pre-install", "pre-upgrade"} <= set(rel.hook(jobs[0]).split(","))
    pod = jobs[0]["spec"]["template"]["spec"]
    images = [c["image"] for c in pod.get("initContainers", []) + pod["containers"]]
    assert f"busybox:{IMAGES['crd-upgrade-busybox']}" in " ".join(images) and not any(
        i.endswith(":latest") for i in images), images
    (cm,) = [d for d in rel.installed() if d["kind"] == "ConfigMap" and _meta(d)["name"] == _meta(jobs[0])["name"]]
    assert _crd_versions(cm["binaryData"]["crds.bz2"]) == {_crd_version(c) for c in rel.crds}


def _crd_version(crd: dict) -> tuple:
    return crd["metadata"]["name"], crd["metadata"].get("annotations", {}).get("operator.prometheus.io/version")


@functools.lru_cache(maxsize=None)
def _crd_versions(bundle: str) -> frozenset:
    """(name, operator version) of every CRD in the ConfigMap's bz2 bundle: megabytes of YAML, the same bundle in
    every configuration that installs one chart version, so parsed once per bundle."""
    applied = helm_engine.split_manifest(bz2.decompress(base64.b64decode(bundle)).decode())
    return frozenset(_crd_version(c) for c in applied if c)


@pytest.mark.parametrize("name", _configs_with("prometheus-adapter"))
def test_adapter_disruption_budget_keeps_only_min_available(rendered, name):
    """The null we send deletes the chart's maxUnavailable; with it left out both would render, which the API
    server rejects."""
    stack = rendered(name)
    budgets = [d for d in stack.releases["prometheus-adapter"].installed() if d["kind"] == "PodDisruptionBudget"]
    if not budgets:
        assert stack.cfg.monitoring.adapter_replicas in (None, 1)
        return
    (pdb,) = budgets
    assert pdb["spec"] == {**pdb["spec"], "minAvailable": 1} and "maxUnavailable" not in pdb["spec"]
