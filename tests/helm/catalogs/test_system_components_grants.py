"""What the upstream charts grant their node agents, rendered with the real Helm engine, against the system
component catalog (catalogs/system_components.py): every DaemonSet these charts render is recognised, everything
it uses (privileged, capabilities, host namespaces, host paths) is within its entry's grants, so the pod policies
find no host-access violation on it, and dcgm-exporter's entry grants exactly what its chart renders.

Each chart is rendered with its defaults and with the options its values document turned on (dcgm-exporter's
hostPID, hostNetwork and debug dump; the fake-gpu-operator's DRA plugins and pod-resources faker; NFD's host
network; node-exporter's kube-rbac-proxy), for a cluster of the Kubernetes minor the stacks run."""
from __future__ import annotations

import pytest

import helm_engine
from gpuplatform.catalogs.system_components import SYSTEM_COMPONENTS, path_within
from gpuplatform.check import run_policies
from gpuplatform.policies import system
from gpuplatform.policies.registry import by_id, resource_from
from gpuplatform.records import RegisteredResource

RENDERS = {
    # chart package: (component its DaemonSets are, [values...])
    "dcgm-exporter-4.8.2": ("dcgm-exporter", [{}, {"hostPID": True, "hostNetwork": True,
                                                   "debugDump": {"enabled": True}}]),
    "fake-gpu-operator-0.2.0": ("fake-gpu-operator", [{}, {
        "draPlugin": {"enabled": True}, "computeDomainDraPlugin": {"enabled": True},
        "statusExporter": {"podResources": {"enabled": True}}}]),
    "gpu-operator-v26.7.0": ("node-feature-discovery", [
        {}, {"node-feature-discovery": {"worker": {"hostNetwork": True}}}]),
    "gpu-operator-v25.10.1": ("node-feature-discovery", [{}]),
    "kube-prometheus-stack-88.5.3": ("node-exporter", [{}, {"prometheus-node-exporter": {
        "kubeRBACProxy": {"enabled": True}}}]),
}
KUBE_MINOR = (1, 31)
HOST_ACCESS_POLICIES = [by_id(p) for p in ("pod-no-privileged", "pod-no-host-namespaces", "pod-restricted-volumes",
                                           "pod-drop-all-capabilities")]


def _daemonsets(charts, package: str, values: dict) -> list[dict]:
    major, minor = KUBE_MINOR
    rendered = helm_engine.render(charts.archive(*package.rsplit("-", 1)), values, release="gpu", namespace="infra",
                                  kube_version=f"v{major}.{minor}.0",
                                  api_versions=helm_engine.builtin_api_versions((major, minor)))
    return [doc for _, doc in helm_engine.objects(rendered) if doc.get("kind") == "DaemonSet"]


def _access(doc: dict) -> dict:
    """What a rendered DaemonSet's pods use of the host."""
    spec = doc["spec"]["template"]["spec"]
    containers = (spec.get("initContainers") or []) + spec["containers"]
    contexts = [c.get("securityContext") or {} for c in containers]
    return {"privileged": any(sc.get("privileged") is True for sc in contexts),
            "capabilities": {str(x) for sc in contexts for x in ((sc.get("capabilities") or {}).get("add") or [])},
            "namespaces": {k for k in ("hostNetwork", "hostPID", "hostIPC") if spec.get(k) is True},
            "paths": {v["hostPath"]["path"] for v in spec.get("volumes") or [] if "hostPath" in v}}


def _component(name: str):
    return next(c for c in SYSTEM_COMPONENTS if c.name == name)


def _within(comp, used: dict) -> list[str]:
    granted_ns = {k for k, on in (("hostNetwork", comp.host_network), ("hostPID", comp.host_pid),
                                  ("hostIPC", comp.host_ipc)) if on}
    out = []
    if used["privileged"] and not comp.privileged:
        out.append("privileged")
    if not comp.privileged:
        out += [f"capability {c}" for c in sorted(used["capabilities"] - set(comp.capabilities))]
    out += [f"{n}" for n in sorted(used["namespaces"] - granted_ns)]
    out += [f"host path {p}" for p in sorted(used["paths"]) if not path_within(p, comp.host_paths)]
    return out


@pytest.mark.parametrize("package", sorted(RENDERS))
def test_each_chart_renders_only_what_its_catalog_entry_grants(charts, package):
    name, value_sets = RENDERS[package]
    comp = _component(name)
    seen = 0
    for values in value_sets:
        for doc in _daemonsets(charts, package, values):
            where = f"{package} {values}: DaemonSet {doc['metadata']['name']}"
            r = RegisteredResource("kubernetes:apps/v1:DaemonSet", doc["metadata"]["name"], doc)
            recognised = system.component_of(resource_from(r.type, r.name, r.name, r.inputs, False))
            assert recognised is comp, where
            assert not _within(comp, _access(doc)), f"{where} uses {_within(comp, _access(doc))}"
            findings = [v.message for v in run_policies([r], policies=HOST_ACCESS_POLICIES)
                        if v.policy_id != "pod-drop-all-capabilities" or "adds capabilities" in v.message]
            assert not findings, f"{where}: {findings}"
            seen += 1
    assert seen >= len(value_sets), f"{package} renders no DaemonSet"


def test_dcgm_exporters_entry_is_exactly_what_its_chart_grants(charts):
    """Not privileged, SYS_ADMIN only, the pod-resources socket and the debug dump directory, host PID and network
    as options: the fact that makes a privileged dcgm-exporter a finding."""
    used = {"privileged": False, "capabilities": set(), "namespaces": set(), "paths": set()}
    for values in RENDERS["dcgm-exporter-4.8.2"][1]:
        for doc in _daemonsets(charts, "dcgm-exporter-4.8.2", values):
            a = _access(doc)
            used = {k: (used[k] or a[k]) if k == "privileged" else used[k] | a[k] for k in used}
    comp = _component("dcgm-exporter")
    assert used == {"privileged": comp.privileged, "capabilities": set(comp.capabilities),
                    "namespaces": {"hostNetwork", "hostPID"} if comp.host_network and comp.host_pid else set(),
                    "paths": set(comp.host_paths)}
    assert used["privileged"] is False and used["capabilities"] == {"SYS_ADMIN"}
