"""The cloud profiles (components/clouds): each answers the whole interface from its catalog, the stack's cluster
kind picks one, the flags they replace keep working (deprecated), and a cloud is added as a profile plus its
catalog without touching the code that asks."""
import inspect
import typing
import warnings
from dataclasses import dataclass
from types import SimpleNamespace
from typing import ClassVar, Optional

import pytest

from gpuplatform.catalogs import ack, network, sharing
from gpuplatform.catalogs.gpus import gpu_model
from gpuplatform.components import addons, clouds
from gpuplatform.components.clouds import AckProfile, CloudProfile, ExistingClusterProfile, cloud_for
from gpuplatform.components.config import Cluster
from gpuplatform.components.pools import PoolFacts

from support import cfg_of

QUESTIONS = sorted(name for name, member in inspect.getmembers(CloudProfile)
                   if getattr(member, "__isabstractmethod__", False))
ANSWERS = sorted(name for name, hint in typing.get_type_hints(CloudProfile, include_extras=True).items()
                 if typing.get_origin(hint) is ClassVar)


def _facts(cloud, mode="exclusive", **extra) -> PoolFacts:
    return PoolFacts(name="a10", mode=mode, model=gpu_model("A10"), gpus_per_node=1, max_nodes=2, cloud=cloud,
                     simulated=False, vcpus=8, memory_gib=32, max_pods=cloud.max_pods_per_node(), **extra)


def test_the_interface_asks_the_questions_the_code_used_to_branch_on():
    assert {"offers", "tier_lacks", "pool_managed", "addons", "sharing_addons", "gpu_software_kind",
            "gpu_node_labels", "allocatable_cpu", "max_pods_per_node"} <= set(QUESTIONS)
    assert {"cluster_kinds", "uses_cloud_provider", "creates_node_pools", "partitions_mig", "cluster_checks"} <= \
        set(ANSWERS)


@pytest.mark.parametrize("profile", sorted(set(clouds.PROFILES.values()), key=lambda p: p.name),
                         ids=lambda p: p.name)
def test_each_profile_answers_every_question(profile):
    assert not inspect.isabstract(profile), profile.__abstractmethods__
    for name in ANSWERS:
        assert hasattr(profile, name), f"{profile.name} does not say {name}"
    for name in QUESTIONS:
        assert getattr(profile, name) is not getattr(CloudProfile, name), f"{profile.name} inherits {name}"
    cloud = profile(kind=profile.cluster_kinds[0])
    facts = _facts(cloud)
    assert isinstance(cloud.offers("cgpu"), bool) and isinstance(cloud.tier_lacks("cgpu"), bool)
    assert cloud.allocatable_cpu(8, 32, facts.max_pods) <= 8
    assert cloud.allocatable_memory_bytes(8, 32, facts.max_pods) <= 32 * 2 ** 30
    assert cloud.default_ingress_controller("nginx") in ("addon", "external")
    assert isinstance(cloud.gpu_node_labels(facts), dict) and isinstance(cloud.autoscaled_node_labels(), dict)
    assert hash(facts)  # the pool facts stay hashable with the profile in them


def test_every_cluster_kind_of_the_config_schema_has_exactly_one_profile():
    union = typing.get_args(typing.get_args(Cluster)[0])
    kinds = {typing.get_args(m.model_fields["kind"].annotation)[0] for m in union}
    assert kinds == set(clouds.PROFILES)
    assert clouds.PROFILES["ack-managed"] is AckProfile and clouds.PROFILES["ack-existing"] is AckProfile
    assert clouds.PROFILES["kubeconfig"] is ExistingClusterProfile


@pytest.mark.parametrize("stack, profile, professional", [
    ("dev", AckProfile, True), ("prod", AckProfile, True), ("staging", AckProfile, True),
    ("local", ExistingClusterProfile, False)])
def test_the_stack_cluster_kind_picks_the_profile(stack, profile, professional):
    cfg = cfg_of(stack)
    assert type(cfg.cloud) is profile and cfg.cloud.kind == cfg.cluster.kind
    assert cfg.cloud.professional is professional


def test_a_kind_without_a_profile_is_refused_naming_the_kinds_that_have_one():
    with pytest.raises(ValueError, match=r"cluster.kind: 'gke' has no cloud profile; allowed: ack-existing, "
                                         r"ack-managed, kubeconfig"):
        cloud_for(SimpleNamespace(kind="gke"))


def test_a_kind_is_served_by_one_profile_only(monkeypatch):
    monkeypatch.setattr(clouds, "PROFILES", dict(clouds.PROFILES))

    @dataclass(frozen=True)
    class Rival(ExistingClusterProfile):
        name: ClassVar[str] = "rival"

    with pytest.raises(ValueError, match="'kubeconfig' is served by the existing profile already"):
        clouds.register(Rival)


def test_ack_reads_its_catalog():
    pro = AckProfile("ack-managed", professional=True, network_plugin="flannel")
    basic = AckProfile("ack-existing", professional=False)
    assert all(pro.offers(f) for f in ack.FEATURES) and not pro.offers("gpu-operator")
    assert [f for f in ack.PRO_ONLY_FEATURES if basic.tier_lacks(f)] == list(ack.PRO_ONLY_FEATURES)
    assert not any(pro.tier_lacks(f) for f in ack.PRO_ONLY_FEATURES)
    assert pro.sharing_addons("cgpu") == [sharing.ACK_SHARING_ADDON] and pro.sharing_addons("exclusive") == []
    assert basic.sharing_addons("cgpu") == [] and basic.sharing_prerequisites(["cgpu"]) == ["ack-cgpu"]
    assert pro.max_pods_per_node() == ack.flannel_max_pods()
    assert AckProfile("ack-managed", network_plugin="terway").max_pods_per_node() is None
    cpu_mcores, memory_mib = ack.reserved_resources(8, 32, 255)
    assert pro.allocatable_cpu(8, 32, 255) == 8 - cpu_mcores / 1000
    assert pro.allocatable_memory_bytes(8, 32, 255) == (32 * 1024 - memory_mib) * 2 ** 20
    assert pro.autoscaled_node_labels() == dict([sharing.AUTOSCALED_POOL_LABEL])
    assert pro.ingress_peers() == (network.ACK_NGINX_ADDON,)
    assert pro.gpu_software_kind(False, ["mig"]) is None and pro.partitions_mig
    assert pro.pool_managed(SimpleNamespace(auto_repair=None)) and not basic.pool_managed(
        SimpleNamespace(auto_repair=None))
    assert pro.cluster_checks == ack.CLUSTER_CHECKS
    assert pro.managed_control_plane() and AckProfile("ack-existing", professional=True).managed_control_plane()
    assert not basic.managed_control_plane() and basic.legacy_sharing_component()
    assert not AckProfile("ack-managed", professional=False).legacy_sharing_component()


def test_ack_labels_the_nodes_its_gpu_stack_reads():
    pro = AckProfile("ack-managed", professional=True)
    assert pro.gpu_node_labels(_facts(pro)) == {sharing.ACK_SCHEDULE_LABEL: sharing.ACK_EXCLUSIVE}
    cgpu = _facts(pro, "cgpu", cgpu_policy="binpack", cgpu_placement="spread", legacy_cgpu_label=True)
    assert pro.gpu_node_labels(cgpu) == {sharing.ACK_SCHEDULE_LABEL: "binpack", sharing.ACK_PLACEMENT_LABEL: "spread",
                                         sharing.LEGACY_CGPU_LABEL[0]: sharing.LEGACY_CGPU_LABEL[1]}
    assert cgpu.node_labels[sharing.ACK_SCHEDULE_LABEL] == "binpack"


def test_an_existing_cluster_has_nothing_of_a_cloud():
    plain = ExistingClusterProfile("kubeconfig")
    assert not plain.uses_cloud_provider and not plain.creates_node_pools and not plain.has_account
    assert not plain.managed_control_plane() and not plain.legacy_sharing_component()
    assert not any(plain.offers(f) for f in ack.FEATURES) and not plain.tier_lacks("cgpu")
    assert plain.gpu_software_kind(True, ["exclusive"]) == "fake-gpu-operator"
    assert plain.gpu_software_kind(False, ["mig"]) == "gpu-operator"
    assert plain.gpu_software_kind(False, ["exclusive"]) is None
    assert plain.allocatable_cpu(8, 32, None) == 8.0 and plain.allocatable_memory_bytes(8, 32, None) == 32 * 2 ** 30
    facts = _facts(plain)
    assert sharing.ACK_SCHEDULE_LABEL not in facts.node_labels and facts.node_labels[sharing.POOL_LABEL] == "a10"
    assert plain.default_ingress_controller("nginx") == "external" and plain.ingress_peers() == ()


@pytest.mark.parametrize("stack", ["dev", "staging", "local"])
def test_the_deprecated_flags_still_answer_and_warn(stack):
    cfg = cfg_of(stack)
    with pytest.warns(DeprecationWarning, match="is_ack is deprecated"):
        assert cfg.is_ack is (cfg.cluster.kind != "kubeconfig")
    with pytest.warns(DeprecationWarning, match="is_ack_pro is deprecated"):
        assert cfg.is_ack_pro is (cfg.cluster.kind != "kubeconfig" and bool(cfg.cluster.professional))


# ---------------------------------------------------------------------------------------------- a third cloud
TOY_CATALOG = {"features": ("InternalLoadBalancer",), "reserved_mcores": 500, "reserved_mib": 1024,
               "gpu_label": ("toy.example/gpu-mode", {"exclusive": "whole", "mig": "split"}),
               "addons": {"monitoring": "toy-metrics"}}
"""What a third cloud's catalog would hold (catalogs/<cloud>.py), here as a dict."""


@dataclass(frozen=True)
class ToyProfile(CloudProfile):
    name: ClassVar[str] = "toy"
    title: ClassVar[str] = "Toy Cloud"
    cluster_kinds: ClassVar[tuple[str, ...]] = ("toy-managed",)
    uses_cloud_provider: ClassVar[bool] = True
    creates_node_pools: ClassVar[bool] = True
    partitions_mig: ClassVar[bool] = False
    runs_system_components: ClassVar[bool] = False
    has_account: ClassVar[bool] = False
    cluster_checks: ClassVar[tuple[str, ...]] = ()

    def managed_control_plane(self):
        return True

    def legacy_sharing_component(self):
        return False

    def offers(self, feature):
        return feature in TOY_CATALOG["features"]

    def tier_lacks(self, feature):
        return False

    def pool_managed(self, pool):
        return False

    def addons(self, cfg):
        return [TOY_CATALOG["addons"]["monitoring"]] if cfg.monitoring.backend == "self-hosted" else []

    def sharing_addons(self, mode):
        return []

    def sharing_prerequisites(self, modes):
        return []

    def repair_addons(self, pool):
        return []

    def default_ingress_controller(self, class_name):
        return "external"

    def ingress_addons(self, workload):
        return []

    def ingress_peers(self):
        return ()

    def gpu_software_kind(self, simulated, pool_modes):
        return "gpu-operator" if "mig" in set(pool_modes) else None

    def gpu_node_labels(self, facts):
        key, values = TOY_CATALOG["gpu_label"]
        return {key: values[facts.mode]}

    def autoscaled_node_labels(self):
        return {}

    def allocatable_cpu(self, vcpus, memory_gib, max_pods):
        return vcpus - TOY_CATALOG["reserved_mcores"] / 1000

    def allocatable_memory_bytes(self, vcpus, memory_gib, max_pods):
        return (memory_gib * 1024 - TOY_CATALOG["reserved_mib"]) * 2 ** 20

    def max_pods_per_node(self) -> Optional[int]:
        return 110

    def sharing_component(self):
        return "toy-sharing"

    def device_plugin_hint(self):
        return "the toy device plugin is not running"

    def mig_partition_cause(self, pool):
        return None


def test_a_third_cloud_is_a_profile_and_its_catalog(monkeypatch):
    """Registering the toy profile is all it takes for the code that asks to get the toy cloud's answers: the pool
    facts (labels, what a node offers), the add-ons a stack installs, the GPU software."""
    monkeypatch.setattr(clouds, "PROFILES", dict(clouds.PROFILES))
    clouds.register(ToyProfile)
    toy = cloud_for(SimpleNamespace(kind="toy-managed"))
    assert type(toy) is ToyProfile
    facts = _facts(toy)
    assert facts.node_labels["toy.example/gpu-mode"] == "whole" and facts.max_pods == 110
    assert facts.allocatable_cpu == 7.5 and facts.allocatable_memory_bytes == 31 * 2 ** 30
    cfg = SimpleNamespace(cloud=toy, monitoring=SimpleNamespace(backend="self-hosted"), node_pools=[], workloads=[])
    assert addons.required_addons(cfg) == ["toy-metrics"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert toy.gpu_software_kind(False, ["mig"]) == "gpu-operator"
