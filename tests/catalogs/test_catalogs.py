"""Catalog lookups and the capacity model, with the numbers from the source documents."""
import pytest

from gpuplatform.catalogs import capacity, sharing
from gpuplatform.catalogs.gpus import GPU_MODELS, INSTANCE_TYPES, close_matches, instance_type, mig_instance_families
from gpuplatform.catalogs.metrics import EXPORTERS, METRICS, UNITS, convert_query, series_query
from gpuplatform.catalogs.mig import MIG_PROFILES, max_instances, mig_config_label_value
from gpuplatform.catalogs.versions import CHARTS


def test_instance_types_from_the_ack_reference():
    t4 = instance_type("ecs.gn6i-c4g1.xlarge")
    assert (t4.gpu_model, t4.gpus, t4.family) == ("T4", 1, "ecs.gn6i")
    a100 = instance_type("ecs.ebmgn7.26xlarge")
    assert (a100.gpu_model, a100.gpus, a100.bare_metal, a100.mig_supported) == ("A100-40GB", 8, True, True)
    passthrough = instance_type("ecs.gn7-c13g1.26xlarge")
    assert passthrough.gpu.mig_capable and not passthrough.mig_supported
    assert instance_type("ecs.gn7i-4x.16xlarge").gpus == 4
    assert mig_instance_families() == ["ecs.ebmgn7", "ecs.gn7s"]


def test_close_matches_suggest_the_intended_type():
    assert close_matches("ecs.gn6i-c4g1.xlarg", INSTANCE_TYPES)[0] == "ecs.gn6i-c4g1.xlarge"


def test_no_mig_on_t4_v100_a10_l20_l4():
    assert {m for m, g in GPU_MODELS.items() if not g.mig_capable} == {"T4", "V100-16GB", "V100-32GB", "A10", "L20",
                                                                       "L4"}


@pytest.mark.parametrize("model,profile,count", [
    ("A100-40GB", "1g.5gb", 7), ("A100-40GB", "3g.20gb", 2), ("A100-80GB", "1g.10gb", 7),
    ("H100-80GB", "2g.20gb", 3), ("A30", "1g.6gb", 4), ("H200", "1g.18gb", 7), ("A100-40GB", "1g.10gb+me", 0),
    ("H20", "1g.12gb", 7), ("H20", "1g.12gb+me", 1), ("H20", "1g.24gb", 4), ("H20", "2g.24gb", 3),
    ("H20", "3g.48gb", 2), ("H20", "4g.48gb", 1), ("H20", "7g.96gb", 1), ("H20", "1g.10gb", 0),
    ("H800-80GB", "1g.10gb", 7), ("H800-80GB", "3g.40gb", 2), ("H800-80GB", "7g.80gb", 1),
    ("A800-80GB", "1g.20gb", 4), ("A800-80GB", "4g.40gb", 1), ("A800-40GB", "1g.5gb", 7),
    ("A800-40GB", "2g.10gb", 3), ("L4", "1g.6gb", 0)])
def test_mig_profiles(model, profile, count):
    assert max_instances(model, profile) == count


def test_every_mig_capable_model_has_profiles():
    assert {m for m, g in GPU_MODELS.items() if g.mig_capable} == set(MIG_PROFILES)
    assert mig_config_label_value("1g.5gb") == "all-1g.5gb"


def test_t4_reports_14_gib_so_three_4_gib_pods_share_a_card():
    # the cGPU article: a T4 node shows 14 GiB of aliyun.com/gpu-mem; three 4 GiB notebooks use 12 of them
    t4 = GPU_MODELS["T4"]
    assert t4.reported_gib == 14
    request = capacity.GpuRequest(memory_gib=4)
    assert capacity.replicas_per_gpu("cgpu", t4, request) == 3
    assert capacity.replicas_per_node("cgpu", t4, 1, request) == 3
    assert capacity.pool_replicas("cgpu", t4, 1, 3, request) == 9


def test_cgpu_core_percent_and_pod_cap_limit_packing():
    a10 = GPU_MODELS["A10"]
    assert capacity.replicas_per_gpu("cgpu", a10, capacity.GpuRequest(memory_gib=2, core_percent=30)) == 3
    assert capacity.replicas_per_gpu("cgpu", GPU_MODELS["H200"], capacity.GpuRequest(memory_gib=1)) == 20


def test_a100_1g5gb_is_seven_per_gpu_and_56_per_machine():
    a100 = GPU_MODELS["A100-40GB"]
    one = capacity.GpuRequest(count=1)
    assert capacity.units_per_gpu("mig", a100, "1g.5gb") == 7
    assert capacity.units_per_node("mig", a100, 8, "1g.5gb") == 56
    assert capacity.replicas_per_node("mig", a100, 8, one, "1g.5gb") == 56


def test_exclusive_is_gpus_per_node():
    a10 = GPU_MODELS["A10"]
    assert capacity.replicas_per_node("exclusive", a10, 4, capacity.GpuRequest(count=1)) == 4
    assert capacity.replicas_per_node("exclusive", a10, 4, capacity.GpuRequest(count=2)) == 2
    assert capacity.replicas_per_node("exclusive", a10, 1, capacity.GpuRequest(count=2)) == 0


def test_metric_catalog_validity_by_sharing_mode():
    assert METRICS["gpu_util"].sharing_modes == {"exclusive"}
    assert "mig" not in METRICS["gpu_util"].sharing_modes
    assert "mig" in METRICS["gpu_engine_active"].sharing_modes
    sm = METRICS["gpu_sm_util"].source("ack")
    assert (sm.series, sm.scope, sm.labels.pod) == ("DCGM_CUSTOM_PROCESS_SM_UTIL", "pod", "PodName")
    assert METRICS["triton_queue_time_us"].source("triton").api_name == "avg_time_queue_us"
    assert METRICS["gpu_util"].source("ack-legacy").api_name == "duty_cycle_current"
    assert METRICS["gpu_fb_used"].source("ack-legacy").api_name == "memory_used_mib_current"


def test_every_source_has_a_unit_and_serves_its_metric_unit():
    for metric in METRICS.values():
        assert metric.unit in UNITS, metric.name
        for src in metric.sources:
            assert src.unit in UNITS, (metric.name, src.exporter)
            assert UNITS[src.unit].dimension == UNITS[metric.unit].dimension, (metric.name, src.exporter)
            assert src.served_unit == metric.unit
            if src.unit == metric.unit:
                assert src.metrics_query == src.query
            else:
                assert src.metrics_query != src.query


def test_legacy_memory_in_bytes_is_served_in_mib():
    src = METRICS["gpu_fb_used"].source("ack-legacy")
    assert (src.unit, src.served_unit) == ("bytes", "MiB")
    assert src.metrics_query == f"({src.query}) / 1048576"


@pytest.mark.parametrize("from_unit, to_unit, expected", [
    ("bytes", "MiB", "(q) / 1048576"), ("MiB", "bytes", "(q) * 1048576"), ("us", "ms", "(q) / 1000"),
    ("ratio", "percent", "(q) * 100"), ("percent", "percent", "q")])
def test_convert_query(from_unit, to_unit, expected):
    assert convert_query("q", from_unit, to_unit) == expected


def test_convert_query_refuses_other_dimensions():
    with pytest.raises(ValueError, match="cannot convert MiB to us"):
        convert_query("q", "MiB", "us")


def test_every_source_names_a_known_exporter_and_lowercase_api_names_off_ack():
    for metric in METRICS.values():
        for src in metric.sources:
            assert src.exporter in EXPORTERS
            assert src.scope in ("pod", "node")
            if src.exporter not in ("ack",):
                assert src.api_name == src.api_name.lower() and ":" not in src.api_name, src.api_name
            if len(src.names) == 1:
                assert series_query(src).startswith(src.series + "{")
            else:  # a renamed series is discovered under every name it had
                assert series_query(src).startswith('{__name__=~"' + "|".join(src.names) + '",')


def test_sharing_resources():
    assert sharing.mig_resource("1g.5gb", "mixed") == "nvidia.com/mig-1g.5gb"
    assert sharing.mig_resource("1g.5gb", "single") == sharing.RESOURCE_GPU


def test_every_chart_is_pinned():
    for c in CHARTS.values():
        assert c.version and c.version != "latest" and c.repository


@pytest.mark.parametrize("api_version, group", [("apps/v1", "apps"), ("v1", ""), ("monitoring.coreos.com/v1",
                                                 "monitoring.coreos.com"), ("keda.sh/v1alpha1", "keda.sh")])
def test_api_group(api_version, group):
    from gpuplatform.catalogs.kubernetes import api_group

    assert api_group(api_version) == group


# --------------------------------------------------------------------------------- models added from NVIDIA sources
@pytest.mark.parametrize("name,memory_gb,reported_mib,mig,architecture,label", [
    ("L4", 24, 23034, False, "ada", "NVIDIA-L4"),
    ("H20", 96, 97871, True, "hopper", "NVIDIA-H20"),
    ("H800-80GB", 80, None, True, "hopper", "H800-80GB"),
    ("A800-80GB", 80, 81251, True, "ampere", "NVIDIA-A800-SXM4-80GB"),
    ("A800-40GB", 40, None, True, "ampere", "A800-40GB")])
def test_new_models_carry_their_sourced_facts(name, memory_gb, reported_mib, mig, architecture, label):
    from gpuplatform.catalogs.gpus import gpu_product_label

    m = GPU_MODELS[name]
    assert (m.memory_gb, m.reported_mib, m.mig_capable, m.architecture) == (memory_gb, reported_mib, mig, architecture)
    assert gpu_product_label(m) == label
    assert (name in MIG_PROFILES) == mig


def test_the_product_label_is_the_nvml_name_as_gpu_feature_discovery_writes_it():
    from gpuplatform.catalogs.gpus import GpuModel, gpu_product_label

    # k8s-device-plugin internal/lm/resource.go: characters outside [A-Za-z0-9-_. ] dropped, blanks joined by '-'
    assert gpu_product_label(GPU_MODELS["H100-80GB"]) == "NVIDIA-H100-80GB-HBM3"
    assert gpu_product_label(GPU_MODELS["T4"]) == "Tesla-T4"
    assert gpu_product_label(GpuModel("x", 1, 1, False, "y", "NVIDIA  RTX (PRO)  6000")) == "NVIDIA-RTX-PRO-6000"


def test_a_model_without_a_sourced_reported_memory_is_refused_where_it_is_needed():
    from gpuplatform.catalogs.gpus import ReportedMemoryUnknown, sourced_reported_memory

    h800 = GPU_MODELS["H800-80GB"]
    with pytest.raises(ReportedMemoryUnknown, match="'H800-80GB' has no sourced per-card memory"):
        capacity.units_per_gpu("cgpu", h800)
    with pytest.raises(ReportedMemoryUnknown, match="cGPU"):
        capacity.replicas_per_gpu("cgpu", h800, capacity.GpuRequest(memory_gib=4))
    # whole GPUs and MIG instances do not need it
    assert capacity.units_per_node("exclusive", h800, 8) == 8
    assert capacity.units_per_node("mig", h800, 8, "1g.10gb") == 56
    # the offline simulator alone lets the datasheet size stand in
    assert h800.simulated_mib() == 80 * 1024 and GPU_MODELS["H20"].simulated_mib() == 97871
    assert "H800-80GB" not in sourced_reported_memory() and "L4" in sourced_reported_memory()


def test_the_h20_has_the_eight_slice_geometry_of_its_96_gb_profiles():
    from gpuplatform.catalogs.mig import fits_one_gpu

    assert fits_one_gpu("H20", {"4g.48gb": 1, "3g.48gb": 1})
    assert fits_one_gpu("H20", {"3g.48gb": 1, "2g.24gb": 1, "1g.12gb": 2})
    assert fits_one_gpu("H20", {"1g.12gb+me": 1, "1g.12gb": 6})
    assert not fits_one_gpu("H20", {"4g.48gb": 2})
    assert not fits_one_gpu("H20", {"2g.24gb": 3, "1g.12gb": 2})
    assert not fits_one_gpu("H20", {"1g.5gb": 1})
