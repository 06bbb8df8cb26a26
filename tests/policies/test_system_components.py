"""GPU system components are recognised by their role, with evidence, and get only what their upstream manifests
grant (catalogs/system_components.py, policies/system.py).

The fixtures (tests/fixtures/system_components) are written in the shapes upstream publishes: GKE's container
toolkit installer (a plain ubuntu image, privileged, exempted only with its evidence), dcgm-exporter run
privileged (upstream adds SYS_ADMIN and never runs it privileged), an ubuntu DaemonSet that is nothing of the
kind, and dcgm-exporter installed into a team's namespace with extra host paths."""
import copy
import re

import pytest
import yaml

from gpuplatform.catalogs.system_components import (ANY_PATH, BASE_IMAGES, HOST_ROOT, SYSTEM_COMPONENTS,
                                                    docs_table, matches, path_within)
from gpuplatform.check import read_manifests, run_policies
from gpuplatform.policies import system
from gpuplatform.policies.registry import resource_from
from gpuplatform.records import RegisteredResource
from support import FIXTURES_DIR, REPO

FIXTURES = FIXTURES_DIR / "system_components"
CORPUS = FIXTURES_DIR / "corpus"
HOST_ACCESS = {"pod-no-privileged", "pod-no-host-namespaces", "pod-restricted-volumes"}


def _doc(name: str) -> dict:
    return next(d for d in yaml.safe_load_all((FIXTURES / name).read_text()) if d)


def _resource(doc: dict) -> RegisteredResource:
    kind = doc["kind"]
    api = doc["apiVersion"]
    group, _, version = api.rpartition("/")
    token = f"kubernetes:{group or 'core'}/{version}:{kind}"
    return RegisteredResource(token, f"{doc['metadata'].get('namespace', 'default')}/{doc['metadata']['name']}", doc)


def _component(doc: dict):
    r = _resource(doc)
    return system.component_of(resource_from(r.type, r.name, r.name, r.inputs, False))


def _findings(doc: dict) -> list:
    return run_policies([_resource(doc)])


def _ids(found, level=None) -> set[str]:
    return {v.policy_id for v in found if level is None or v.level == level}


def _spec(doc: dict) -> dict:
    return doc["spec"]["template"]["spec"]


# ---------------------------------------------------------------------------------------------- GKE's installer
def test_gke_container_toolkit_installer_passes_with_its_evidence():
    doc = _doc("gke_container_toolkit_installer.yaml")
    assert _component(doc).name == "gke-gpu-node-installer"
    found = run_policies(read_manifests([FIXTURES / "gke_container_toolkit_installer.yaml"]).resources)
    assert not [v for v in found if v.mandatory]
    assert not _ids(found) & HOST_ACCESS  # privileged, host network and PID, the install directory: upstream's


def _elsewhere(doc):
    doc["metadata"]["namespace"] = "tools"


def _any_node(doc):
    del _spec(doc)["affinity"]


def _preferred_only(doc):
    aff = _spec(doc)["affinity"]["nodeAffinity"]
    aff["preferredDuringSchedulingIgnoredDuringExecution"] = [
        {"weight": 1, "preference": aff.pop("requiredDuringSchedulingIgnoredDuringExecution")["nodeSelectorTerms"][0]}]


def _other_install_dir(doc):
    _spec(doc)["volumes"][0]["hostPath"]["path"] = "/opt/nvidia"


def _as_deployment(doc):
    doc["kind"] = "Deployment"


@pytest.mark.parametrize("lose, lacks", [
    (_elsewhere, "is not in namespace kube-system"),
    (_any_node, "does not run only on nodes labelled cloud.google.com/gke-accelerator"),
    (_preferred_only, "does not run only on nodes labelled cloud.google.com/gke-accelerator"),
    (_other_install_dir, "does not mount /home/kubernetes/bin/nvidia"),
    (_as_deployment, None),
], ids=["namespace", "node-selection", "preferred-affinity", "host-path", "kind"])
def test_each_piece_of_the_installers_evidence_is_needed(lose, lacks):
    doc = _doc("gke_container_toolkit_installer.yaml")
    lose(doc)
    assert _component(doc) is None
    found = _findings(doc)
    privileged = [v.message for v in found if v.policy_id == "pod-no-privileged"]
    assert privileged and all(v.mandatory for v in found if v.policy_id in ("pod-no-privileged",
                                                                           "pod-no-host-namespaces"))
    if lacks:  # the message names the role and what this workload does not show of it
        assert "gke-gpu-node-installer" in privileged[0] and f"(this one: it {lacks})" in privileged[0]


def test_an_ubuntu_daemonset_with_no_gpu_node_selection_is_blocked():
    doc = _doc("ubuntu_privileged_daemonset.yaml")
    assert _component(doc) is None
    found = _findings(doc)
    assert _ids(found, "mandatory") == {"pod-no-privileged", "pod-no-host-namespaces"}
    # it shows nothing of any role: no talk of GKE or of upstream grants
    assert [v.message for v in found if v.policy_id == "pod-no-privileged"] == [
        "DaemonSet tools/node-fixer container fixer is privileged "
        "at spec.template.spec.containers[0].securityContext.privileged"]


def test_the_same_ubuntu_daemonset_in_kube_system_on_gke_gpu_nodes_still_needs_the_install_directory():
    doc = _doc("ubuntu_privileged_daemonset.yaml")
    doc["metadata"]["namespace"] = "kube-system"
    _spec(doc)["nodeSelector"] = {"cloud.google.com/gke-accelerator": "nvidia-l4"}
    assert _component(doc) is None
    assert "pod-no-privileged" in _ids(_findings(doc), "mandatory")
    # and with it, only the install directory is granted: the host root it also mounts is not GKE's installer's
    _spec(doc)["volumes"].append({"name": "nvidia", "hostPath": {"path": "/home/kubernetes/bin/nvidia"}})
    assert _component(doc).name == "gke-gpu-node-installer"
    found = _findings(doc)
    assert not _ids(found, "mandatory")
    assert [v.message for v in found if v.policy_id == "pod-restricted-volumes"] == [
        "DaemonSet kube-system/node-fixer volume host is of type hostPath (/); gke-gpu-node-installer's upstream "
        "manifests mount /home/kubernetes/bin/nvidia, /home/kubernetes/bin/gib "
        "(GoogleCloudPlatform/container-engine-accelerators@c7f8e8701430 gpudirect-rdma/nccl-rdma-installer-a4x.yaml) "
        "at spec.template.spec.volumes[0].hostPath"]


def test_gke_driver_installer_needs_its_namespace_and_gpu_nodes_too():
    doc = next(d for d in yaml.safe_load_all((CORPUS / "43_gke_driver_installer.yaml").read_text()) if d)
    assert _component(doc).name == "gke-nvidia-driver-installer"
    moved = copy.deepcopy(doc)
    moved["metadata"]["namespace"] = "default"
    assert _component(moved) is None
    assert {"pod-no-privileged", "pod-no-host-namespaces"} <= _ids(_findings(moved), "mandatory")


# ---------------------------------------------------------------------------------------------- dcgm-exporter
def test_dcgm_exporter_run_privileged_is_blocked_saying_upstream_adds_only_sys_admin():
    doc = _doc("dcgm_exporter_privileged.yaml")
    assert _component(doc).name == "dcgm-exporter"
    found = _findings(doc)
    assert _ids(found, "mandatory") == {"pod-no-privileged"}
    (message,) = [v.message for v in found if v.policy_id == "pod-no-privileged"]
    assert message.startswith("DaemonSet monitoring/dcgm-exporter container exporter is privileged; dcgm-exporter's "
                              "upstream manifests do not run it privileged: they add only SYS_ADMIN "
                              "(NVIDIA/dcgm-exporter@4.5.3-4.8.2 deployment/values.yaml)")
    # and says which deployment of the image may run privileged, and how it shows itself
    assert "a GPU Operator operand (gpu-operator-operand) may, as a workload that runs only on nodes labelled " \
           "nvidia.com/gpu.deploy.*" in message


@pytest.mark.parametrize("evidence", ["node-selector", "validator-init-container"])
def test_the_gpu_operators_dcgm_exporter_operand_may_run_privileged(evidence):
    doc = _doc("dcgm_exporter_privileged.yaml")
    spec = _spec(doc)
    if evidence == "node-selector":
        spec["nodeSelector"] = {"nvidia.com/gpu.deploy.dcgm-exporter": "true"}
    else:
        spec["initContainers"] = [{"name": "toolkit-validation", "securityContext": {"privileged": True},
                                   "image": "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v25.10.1"}]
    assert _component(doc).name == "gpu-operator-operand"
    assert not _ids(_findings(doc), "mandatory")


def test_sys_admin_as_upstream_adds_it_passes_but_not_another_capability():
    doc = _doc("dcgm_exporter_privileged.yaml")
    container = _spec(doc)["containers"][0]
    container["securityContext"] = {"runAsUser": 0, "capabilities": {"add": ["SYS_ADMIN"], "drop": ["ALL"]}}
    assert not _findings(doc)
    container["securityContext"]["capabilities"]["add"].append("NET_ADMIN")
    assert [v.message for v in _findings(doc) if v.policy_id == "pod-drop-all-capabilities"] == [
        "DaemonSet monitoring/dcgm-exporter container exporter: adds capabilities NET_ADMIN; dcgm-exporter's upstream "
        "manifests add capabilities SYS_ADMIN (NVIDIA/dcgm-exporter@4.5.3-4.8.2 deployment/values.yaml) "
        "at spec.template.spec.containers[0].securityContext.capabilities.add"]


def test_the_right_image_in_a_team_namespace_is_exempted_only_for_what_upstream_grants():
    doc = _doc("dcgm_exporter_team_namespace.yaml")
    assert _component(doc).name == "dcgm-exporter"  # a mirror and a namespace of the team's own
    found = _findings(doc)
    # root, SYS_ADMIN and the pod-resources socket are upstream's; the kubelet config and the logs are not
    assert not _ids(found, "mandatory")
    volumes = sorted(v.message.split(";")[0] for v in found if v.policy_id == "pod-restricted-volumes")
    assert volumes == ["DaemonSet team-a/gpu-metrics volume kubelet-config is of type hostPath (/etc/kubernetes)",
                       "DaemonSet team-a/gpu-metrics volume logs is of type hostPath (/var/log)"]
    assert _ids(found) == {"pod-restricted-volumes"}
    # privileged and host PID on top: hostPID is among dcgm-exporter's chart options, privileged is not
    _spec(doc)["hostPID"] = True
    _spec(doc)["containers"][0]["securityContext"]["privileged"] = True
    assert _ids(_findings(doc), "mandatory") == {"pod-no-privileged"}


def test_a_foreign_init_container_makes_an_ordinary_workload():
    doc = _doc("dcgm_exporter_privileged.yaml")
    _spec(doc)["nodeSelector"] = {"nvidia.com/gpu.deploy.dcgm-exporter": "true"}
    assert _component(doc).name == "gpu-operator-operand"
    _spec(doc)["initContainers"] = [{"name": "setup", "image": "docker.io/someone/node-tool:1",
                                     "securityContext": {"privileged": True}}]
    assert _component(doc) is None
    assert "pod-no-privileged" in _ids(_findings(doc), "mandatory")


def test_components_are_recognised_by_image_not_by_name():
    doc = _doc("dcgm_exporter_team_namespace.yaml")
    assert _component(doc).name == "dcgm-exporter"
    sidecar = copy.deepcopy(doc)
    _spec(sidecar)["containers"].append({"name": "shipper", "image": "docker.io/someone/sidecar:1"})
    assert _component(sidecar) is None
    lookalike = copy.deepcopy(doc)
    _spec(lookalike)["containers"][0]["image"] = "docker.io/someone/dcgm-exporter:1"
    lookalike["metadata"]["name"] = "dcgm-exporter"
    assert _component(lookalike) is None


# ---------------------------------------------------------------------------------------------- the catalog
def test_every_entry_cites_the_upstream_files_that_show_its_grants():
    cited = re.compile(r"^[\w.-]+/[\w.-]+(@[\w.-]+)? \S+/?\S*")
    for comp in SYSTEM_COMPONENTS:
        assert comp.sources and all(cited.match(s) for s in comp.sources), comp.name
        assert comp.grants(), comp.name


def test_a_base_image_identifies_nothing_without_its_whole_role():
    for comp in SYSTEM_COMPONENTS:
        if any(matches(i, BASE_IMAGES) for i in comp.images):
            (e,) = comp.evidence
            assert e.daemonset and e.namespaces and e.node_labels and e.host_paths, comp.name
            assert ANY_PATH not in comp.host_paths and HOST_ROOT not in comp.host_paths, comp.name


def test_a_deployment_needing_evidence_comes_before_the_ones_its_images_alone_identify():
    """Recognition takes the first entry whose images and evidence hold: an entry that asks no evidence must not
    hide a later one sharing its images."""
    for i, first in enumerate(SYSTEM_COMPONENTS):
        for later in SYSTEM_COMPONENTS[i + 1:]:
            shared = [p for p in later.images if matches(p.rstrip("/"), first.images)]
            assert not shared or first.evidence, (first.name, later.name, shared)


def test_host_root_is_the_root_alone_and_any_path_is_any():
    assert path_within("/", (HOST_ROOT,)) and not path_within("/etc/kubernetes", (HOST_ROOT,))
    assert path_within("/run/nvidia/mps/shm", ("/run/nvidia/mps",))
    assert not path_within("/run/nvidia-x", ("/run/nvidia",))
    assert path_within("/etc/kubernetes/pki", (ANY_PATH,))
    assert path_within("/etc/kubernetes/node-feature-discovery/features.d/",
                       ("/etc/kubernetes/node-feature-discovery",))


def test_the_docs_list_every_recognised_deployment():
    doc = (REPO / "docs" / "policies.md").read_text()
    assert docs_table() in doc
    assert docs_table().count("\n") == len(SYSTEM_COMPONENTS) + 1


def test_user_exemptions_skip_one_policy_for_one_object():
    doc = _doc("ubuntu_privileged_daemonset.yaml")
    config = {"pod-no-privileged": {"exemptions": [{"namespace": "tools", "name": "node-fixer"}]}}
    found = run_policies([_resource(doc)], config)
    assert _ids(found, "mandatory") == {"pod-no-host-namespaces"}


# ---------------------------------------------------------------------------------------------- GKE's DCGM pair
def _gke_dcgm():
    return [d for d in yaml.safe_load_all((CORPUS / "57_gke_managed_prometheus_dcgm.yaml").read_text()) if d]


def test_gkes_documented_dcgm_pair_runs_privileged_as_upstream_publishes_it():
    """GKE's Managed Prometheus (and ai-on-gke) run nv-hostengine and dcgm-exporter privileged on GKE GPU nodes with
    GKE's NVIDIA install directory: that deployment is its own role, with its own evidence and grants."""
    for doc in _gke_dcgm():
        assert _component(doc).name == "gke-dcgm"
        assert not _ids(_findings(doc), "mandatory")


@pytest.mark.parametrize("lose", ["gpu-nodes", "install-dir"])
def test_without_gkes_evidence_dcgm_exporter_privileged_is_blocked_again(lose):
    exporter = _gke_dcgm()[1]
    if lose == "gpu-nodes":
        _spec(exporter).pop("affinity")
    else:
        _spec(exporter)["volumes"] = [v for v in _spec(exporter)["volumes"] if "hostPath" not in v or
                                      v["hostPath"]["path"] != "/home/kubernetes/bin/nvidia"]
        _spec(exporter)["containers"][0]["volumeMounts"] = [
            m for m in _spec(exporter)["containers"][0]["volumeMounts"] if m["name"] != "nvidia-install-dir-host"]
    assert _component(exporter).name == "dcgm-exporter"  # the chart's deployment: SYS_ADMIN, never privileged
    assert "pod-no-privileged" in _ids(_findings(exporter), "mandatory")


def test_gkes_dcgm_grants_no_host_root_or_host_namespaces():
    hostengine = _gke_dcgm()[0]
    _spec(hostengine)["hostPID"] = True
    _spec(hostengine)["volumes"].append({"name": "root", "hostPath": {"path": "/"}})
    found = _findings(hostengine)
    assert "pod-no-host-namespaces" in _ids(found, "mandatory")
    assert any("volume root is of type hostPath (/)" in v.message for v in found)
