"""Pinned chart versions exist upstream, are the packages we render, and fit the stacks' Kubernetes versions."""
import json

import pytest

import helm_engine
from gpuplatform.catalogs.versions import CHARTS, KUBERNETES_SUPPORTED, ChartVersion
from gpuplatform.components.errors import ConfigError
from gpuplatform.components.releases import chart_releases, chart_version
from gpuplatform.components.validation import kubernetes_version, load
from rendered import NOT_PUBLIC, RELEASE_TYPE
from support import STACKS, stack_raw, synth

PINS = [(key, v.version) for key, c in CHARTS.items() for v in c.versions]


@pytest.fixture(scope="module")
def upstream(charts) -> dict:
    return json.loads((charts.path / "upstream-versions.json").read_text())


@pytest.mark.parametrize("key,version", PINS, ids=[f"{k}-{v}" for k, v in PINS])
def test_pin_is_a_published_chart_version(upstream, charts, key, version):
    c = CHARTS[key]
    listed = upstream[c.name]["versions"]
    if listed is None:
        assert c.name in NOT_PUBLIC, f"{c.name}: upstream lists no versions but the chart is rendered"
        pytest.skip(f"{c.name}: {upstream[c.name]['source']}")
    assert version in listed, (f"{c.name} {version} is not a version its repository publishes "
                               f"(newest: {listed[-5:]})")
    assert charts.archive(c.name, version).exists(), (
        f"{c.name}-{version}.tgz is missing; " + helm_engine.pull_hint([(c.name, version, c.repository)]))


@pytest.mark.parametrize("key", list(CHARTS))
def test_pinned_versions_are_newest_first_with_ranges_inside_the_package_range(key):
    versions = CHARTS[key].versions
    parsed = [tuple(int(x) for x in v.version.lstrip("v").split(".")) for v in versions]
    assert parsed == sorted(parsed, reverse=True)
    lo, hi = KUBERNETES_SUPPORTED
    for v in versions:
        assert v.max_kubernetes is None or v.max_kubernetes >= lo
        assert v.min_kubernetes is None or v.min_kubernetes <= hi


@pytest.mark.parametrize("stack", STACKS)
def test_each_release_gets_the_newest_pin_that_supports_the_cluster(stack):
    raw = stack_raw(stack)
    cfg = load(raw)
    minor = kubernetes_version(cfg)
    releases = {r.inputs["name"]: r.inputs["version"] for r in synth(raw) if r.type == RELEASE_TYPE}
    assert sorted(releases) == sorted(CHARTS[k].release for k in chart_releases(cfg))
    for key, version in releases.items():
        supporting = [v.version for v in CHARTS[key].versions if v.supports(minor)]
        assert version == supporting[0], (key, version, supporting)


def test_selection_by_kubernetes_minor():
    assert chart_version("keda", (1, 35)) == "2.20.2"
    assert chart_version("keda", (1, 32)) == "2.18.1"
    assert chart_version("gpu-operator", (1, 31)) == "v25.10.1"
    assert chart_version("gpu-operator", (1, 36)) == "v26.7.0"
    assert chart_version("cert-manager", (1, 33)) == "v1.21.1"
    with pytest.raises(ValueError, match="end of life"):
        chart_version("cert-manager", (1, 31))  # v1.16 covers 1.31 but is out of support


def test_end_of_life_version_is_never_chosen():
    assert not ChartVersion("v1", (1, 20), (1, 40), end_of_life="2025-06-10").supports((1, 30))
    assert ChartVersion("v1", (1, 20), None).supports((1, 99))


@pytest.mark.parametrize("stack", STACKS)
def test_stacks_run_a_kubernetes_version_ack_supports(stack):
    """ACK's release table (docs/helm.md): 1.35 is released and supported until 2027-02-28; 1.33 and 1.34 reach
    end of support in 2026."""
    assert kubernetes_version(load(stack_raw(stack))) == (1, 35)


def _errors(raw) -> list[str]:
    with pytest.raises(ConfigError) as exc:
        load(raw)
    return [f"{i.path}: {i.message}" for i in exc.value.issues]


def test_kubernetes_outside_the_package_range_is_rejected_with_the_range():
    raw = stack_raw("staging")
    raw["cluster"]["kubernetesVersion"] = "1.40"
    errors = _errors(raw)
    assert errors == ["cluster.kubernetesVersion: '1.40' is not supported; allowed: 1.20-1.36"]


def test_chart_without_a_supporting_pin_is_rejected_naming_chart_versions_and_allowed_range():
    raw = stack_raw("prod")  # self-hosted prod installs cert-manager: v1.16 (EOL) or v1.21 (1.33-1.36)
    raw["cluster"]["kubernetesVersion"] = "1.31.1-aliyun.1"
    errors = _errors(raw)
    assert len(errors) == 1, errors
    msg = errors[0]
    assert msg.startswith("cluster.kubernetesVersion: '1.31.1-aliyun.1': no pinned cert-manager chart")
    # each pin with the reason it was not chosen
    assert "v1.21.1 (Kubernetes 1.33-1.36): not 1.31" in msg
    assert "v1.16.2 (Kubernetes 1.25-1.32, end of life 2025-06-10): covers 1.31 but gets no fixes since 2025-06-10" \
        in msg
    assert "allowed for this stack: 1.33-1.36, or opt in to the end-of-life pin with " \
        "settings.allowEndOfLifeCharts: [cert-manager]" in msg


def test_every_unsupported_chart_is_reported_at_once():
    raw = stack_raw("local")  # fake-gpu-operator, kube-prometheus-stack, keda, cert-manager, prometheus-adapter
    raw["cluster"]["kubernetesVersion"] = "1.24"
    errors = _errors(raw)
    assert [e.split(": no pinned ")[1].split(" ")[0] for e in errors] == \
        ["kube-prometheus-stack", "keda", "cert-manager"], errors
    assert all("allowed for this stack: 1.33-1.35" in e for e in errors), errors
    # only a range an end-of-life pin covers offers the opt-in: cert-manager v1.16 covers 1.25-1.32, not 1.24
    assert not any("allowEndOfLifeCharts" in e for e in errors), errors


def test_a_composed_service_without_monitoring_installs_no_chart_so_no_chart_limits_it():
    """Chart ranges limit the components that install charts: a fixed-replica service on 1.30 composes, a
    GpuMonitoring there is refused with the chart that does not support it."""
    import pulumi

    from gpuplatform.components import GpuCluster, GpuMonitoring, GpuNodePool, InferenceService
    from gpuplatform.synth import synthesize

    def program(with_monitoring: bool):
        cluster = GpuCluster("c", {"cluster": {"kind": "kubeconfig", "kubernetesVersion": "1.30"}})
        pool = GpuNodePool("p", {"cluster": cluster, "pool": {"name": "p", "gpuModel": "T4", "gpusPerNode": 1}})
        if with_monitoring:
            GpuMonitoring("m", {"cluster": cluster})
        InferenceService("s", {"node_pool": pool, "namespace": "team", "workload": {
            "name": "s", "image": "x:1", "replicas": 1, "gpu": {"count": 1},
            "ports": [{"name": "http", "containerPort": 80}]}})

    records = synthesize({}, lambda: program(False))
    assert any(r.type == "kubernetes:apps/v1:Deployment" for r in records)
    with pytest.raises(pulumi.RunError) as info:
        synthesize({}, lambda: program(True))
    assert "GpuCluster 'c' args.cluster.kubernetesVersion" in str(info.value)
    assert "cert-manager" in str(info.value)


def test_arms_stack_installs_no_ranged_chart_and_keeps_old_versions():
    raw = stack_raw("staging")
    raw["cluster"]["kubernetesVersion"] = "1.22"
    assert kubernetes_version(load(raw)) == (1, 22)


def test_kubernetes_1_31_with_prometheus_adapter_plans_with_the_end_of_life_opt_in(tmp_path):
    from gpuplatform.components.releases import chart_releases
    from gpuplatform.synth import stack_config_from_namespace, synthesize

    raw = stack_raw("prod")
    raw["cluster"]["kubernetesVersion"] = "1.31.1-aliyun.1"
    raw["settings"]["allowEndOfLifeCharts"] = ["cert-manager"]
    cfg = load(raw)
    assert "prometheus-adapter" in chart_releases(cfg)
    records = synthesize(stack_config_from_namespace(raw))
    releases = {r.inputs["name"]: r.inputs["version"] for r in records if r.type == "kubernetes:helm.sh/v3:Release"}
    end_of_life = next(v for v in CHARTS["cert-manager"].versions if v.end_of_life)
    assert releases["cert-manager"] == end_of_life.version
    assert releases["prometheus-adapter"] == CHARTS["prometheus-adapter"].version


def test_the_opt_in_never_replaces_a_supported_pin():
    raw = stack_raw("prod")  # 1.35: the supported cert-manager pin covers it
    raw["settings"]["allowEndOfLifeCharts"] = ["cert-manager"]
    assert chart_version("cert-manager", (1, 35), ("cert-manager",)) == CHARTS["cert-manager"].version
    load(raw)


def test_the_opt_in_names_only_charts_with_an_end_of_life_pin():
    raw = stack_raw("prod")
    raw["settings"]["allowEndOfLifeCharts"] = ["keda"]
    assert _errors(raw) == ["settings.allowEndOfLifeCharts[0]: 'keda' has no end-of-life pinned version to allow; "
                            "allowed: cert-manager"]


def test_a_composed_cluster_passes_the_opt_in_to_its_monitoring():
    from gpuplatform.components import GpuCluster, GpuMonitoring
    from gpuplatform.synth import synthesize

    def program():
        cluster = GpuCluster("c", {"cluster": {"kind": "kubeconfig", "kubernetesVersion": "1.30"},
                                   "allow_end_of_life_charts": ["cert-manager"]})
        GpuMonitoring("m", {"cluster": cluster})

    records = synthesize({}, program)
    versions = {r.inputs["name"]: r.inputs["version"] for r in records if r.type == "kubernetes:helm.sh/v3:Release"}
    assert versions["cert-manager"] == next(v for v in CHARTS["cert-manager"].versions if v.end_of_life).version


def test_a_plan_on_an_end_of_life_pin_says_so(capsys):
    from gpuplatform.plan import run_plan

    raw = stack_raw("prod")
    raw["cluster"]["kubernetesVersion"] = "1.31.1-aliyun.1"
    raw["settings"]["allowEndOfLifeCharts"] = ["cert-manager"]
    assert run_plan(raw, "prod", None, "table", sweep=False) == 0
    err = capsys.readouterr().err
    assert err.startswith("WARNING: cert-manager v1.16.2 is end of life upstream since 2025-06-10")
    raw = stack_raw("prod")  # 1.35: the supported pin, no warning even with the opt-in
    raw["settings"]["allowEndOfLifeCharts"] = ["cert-manager"]
    assert run_plan(raw, "prod", None, "table", sweep=False) == 0
    assert "end of life" not in capsys.readouterr().err
