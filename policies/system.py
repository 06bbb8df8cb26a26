"""The one exemption rule every policy applies: a GPU system component, recognised by its role with evidence
(:mod:`gpuplatform.catalogs.system_components`), may use the host access its upstream manifests grant, and
nothing more.

A policy asks :func:`component_of` for the component a workload is, and then whether the specific access it is
judging (privileged, host PID, a host path, a capability, root, every GPU visible) is one the component's upstream
grants; :func:`upstream_note` says in a finding what upstream grants instead, and which deployment of the same
images would have been granted the access, with the evidence this workload lacks. An unrecognised workload gets
no allowance at all. Users add their own exemptions per policy (``exemptions``: namespace and name) in the pack
config (:func:`user_exempt`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from gpuplatform.catalogs.system_components import (BASE_IMAGES, PAUSE_IMAGES, SYSTEM_COMPONENT_KINDS,
                                                    SYSTEM_COMPONENTS, Evidence, SystemComponent, matches,
                                                    path_within)
from gpuplatform.policies import k8s

@dataclass(frozen=True)
class Workload:
    """What the recognition reads of a workload."""

    kind: str
    namespace: Optional[str]
    """As the object states it (None when it does not)."""
    images: tuple[str, ...]
    init_images: tuple[str, ...]
    node_labels: frozenset[str]
    """Node label keys every node it may run on must carry."""
    host_paths: tuple[str, ...]
    owned_by_daemonset: bool


def required_node_labels(spec) -> frozenset[str]:
    """The node label keys a pod cannot run without: its nodeSelector's, and those every required node affinity
    term asks for (``In`` or ``Exists``; the terms are alternatives)."""
    keys = {str(k) for k in k8s.as_map(k8s.get(spec, "nodeSelector"))}
    terms = k8s.as_list(k8s.get(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                                "nodeSelectorTerms"))
    per_term = [{str(k8s.get(e, "key")) for e in k8s.as_list(k8s.get(t, "matchExpressions"))
                 if k8s.get(e, "operator") in ("In", "Exists")} for t in terms]
    if per_term:
        keys |= set.intersection(*per_term)
    return frozenset(keys)


def workload_of(r) -> Optional[Workload]:
    """The facts of a node-agent workload (DaemonSet or Pod) whose containers all name an image, else None."""
    if r.kind not in SYSTEM_COMPONENT_KINDS:
        return None
    spec = k8s.pod_spec(r.kind, r.props)
    containers = list(k8s.containers(spec))
    if not containers or not all(isinstance(k8s.get(c, "image"), str) for c in containers):
        return None
    owners = k8s.as_list(k8s.get(r.props, "metadata", "ownerReferences"))
    return Workload(
        kind=r.kind, namespace=k8s.get(r.props, "metadata", "namespace"),
        images=tuple(str(c["image"]) for c in containers),
        init_images=tuple(str(k8s.get(c, "image")) for c in k8s.as_list(k8s.get(spec, "initContainers"))
                          if isinstance(k8s.get(c, "image"), str)),
        node_labels=required_node_labels(spec),
        host_paths=tuple(str(k8s.get(v, "hostPath", "path")) for v in k8s.as_list(k8s.get(spec, "volumes"))
                         if k8s.get(v, "hostPath", "path") is not None),
        owned_by_daemonset=r.kind == "DaemonSet" or any(k8s.get(o, "kind") == "DaemonSet" for o in owners))


def _label_matches(key: str, wanted: str) -> bool:
    return key == wanted or (wanted.endswith((".", "/")) and key.startswith(wanted))


def shortfall(e: Evidence, w: Workload) -> dict[str, str]:
    """What of ``e`` the workload does not show: evidence field -> in words (empty: the evidence holds)."""
    out = {}
    if e.daemonset and not w.owned_by_daemonset:
        out["daemonset"] = f"it is a {w.kind}, not a DaemonSet"
    if e.namespaces and w.namespace not in e.namespaces:
        out["namespaces"] = f"it is not in namespace {' or '.join(e.namespaces)}"
    if e.node_labels and not any(_label_matches(k, want) for k in w.node_labels for want in e.node_labels):
        labels = " or ".join(f"{k}*" if k.endswith((".", "/")) else k for k in e.node_labels)
        out["node_labels"] = f"it does not run only on nodes labelled {labels}"
    if e.host_paths and not any(path_within(p, e.host_paths) for p in w.host_paths):
        out["host_paths"] = f"it does not mount {' or '.join(e.host_paths)}"
    if e.init_images and not any(matches(i, e.init_images) for i in w.init_images):
        out["init_images"] = f"it runs none of {', '.join(e.init_images)} as an init container"
    return out


def _shows_some(e: Evidence, gaps: dict[str, str]) -> bool:
    """Whether the workload shows part of the role evidence (namespace, node selection, host path, init image)."""
    return any(getattr(e, f) and f not in gaps for f in ("namespaces", "node_labels", "host_paths", "init_images"))


def _images_match(comp: SystemComponent, w: Workload) -> bool:
    """Every container runs the component's image, a helper or pause, and one runs the component's own."""
    known = comp.images + comp.helper_images + PAUSE_IMAGES
    return all(matches(i, known) for i in w.images) and any(matches(i, comp.images) for i in w.images)


@dataclass(frozen=True)
class Recognition:
    component: Optional[SystemComponent]
    missed: tuple[tuple[SystemComponent, tuple[str, ...], bool], ...] = ()
    """Deployments the images match whose evidence the workload does not show: each with what it lacks (of the
    alternative it comes closest to) and whether it shows part of that evidence."""


def recognise(r) -> Recognition:
    w = workload_of(r)
    if w is None:
        return Recognition(None)
    missed = []
    for comp in SYSTEM_COMPONENTS:
        if not _images_match(comp, w):
            continue
        found = [(e, shortfall(e, w)) for e in comp.evidence]
        if not found or any(not gaps for _, gaps in found):
            return Recognition(comp, tuple(missed))
        e, gaps = min(found, key=lambda f: len(f[1]))
        missed.append((comp, tuple(gaps.values()), _shows_some(e, gaps)))
    return Recognition(None, tuple(missed))


def component_of(r) -> Optional[SystemComponent]:
    """The system component a workload resource is, or None."""
    return recognise(r).component


def path_allowed(comp: Optional[SystemComponent], path: str) -> bool:
    return comp is not None and path_within(path, comp.host_paths)


def escalates(comp: Optional[SystemComponent]) -> bool:
    """Whether the component's upstream grants let it gain privileges whatever ``allowPrivilegeEscalation`` says,
    so the field is not asked of it: "AllowPrivilegeEscalation is true always when the container is: 1) run as
    Privileged 2) has CAP_SYS_ADMIN" (Kubernetes API reference, SecurityContext)."""
    return comp is not None and (comp.privileged or "SYS_ADMIN" in comp.capabilities)


def grants_access(comp: SystemComponent, access: str) -> bool:
    """Whether the component's upstream grants ``access`` at all (a host path or capability: any)."""
    return {"privileged": comp.privileged, "capabilities": comp.privileged or bool(comp.capabilities),
            "hostNetwork": comp.host_network, "hostPID": comp.host_pid, "hostIPC": comp.host_ipc,
            "hostPort": comp.host_ports or comp.host_network, "hostPath": bool(comp.host_paths)}[access]


def _what_upstream_grants(comp: SystemComponent, access: str) -> str:
    name = f"{comp.name}'s upstream manifests"
    if access == "privileged":
        caps = f": they add only {', '.join(comp.capabilities)}" if comp.capabilities else ""
        return f"{name} do not run it privileged{caps}"
    if access == "capabilities":
        return f"{name} add {'capabilities ' + ', '.join(comp.capabilities) if comp.capabilities else 'none'}"
    if access == "hostPath":
        return f"{name} mount {', '.join(comp.host_paths) if comp.host_paths else 'no host path'}"
    if access == "hostPort":
        return f"{name} bind no host port"
    shared = [n for n, on in (("hostNetwork", comp.host_network), ("hostPID", comp.host_pid),
                              ("hostIPC", comp.host_ipc)) if on]
    return f"{name} share {', '.join(shared) if shared else 'no host namespace'}"


def _base_image_role(comp: SystemComponent) -> bool:
    """Recognised through a general-purpose image (ubuntu), which says nothing of what the workload is."""
    return any(matches(i, BASE_IMAGES) for i in comp.images)


def upstream_note(r, comp: Optional[SystemComponent], access: str) -> str:
    """What a finding on ``access`` adds for a workload the rule recognises, or whose images a deployment
    granting that access uses: what its upstream grants instead (with the source), and which deployment of the
    same images would have the access, with the evidence it shows. Empty when there is nothing to say (a
    workload of a base image that shows none of a role's evidence is simply not a system component)."""
    notes = []
    if comp is not None:
        notes.append(f"{_what_upstream_grants(comp, access)} ({comp.sources[0].split(' (')[0]})")
    if comp is None or access in ("privileged", "hostNetwork", "hostPID", "hostIPC"):
        for other, gaps, partial in recognise(r).missed:
            if grants_access(other, access) and (partial or not _base_image_role(other)):
                lacks = f" (this one: {' and '.join(gaps)})" if len(other.evidence) == 1 else ""
                notes.append(f"{other.role} ({other.name}) may, as a workload that {other.evidence_text()}{lacks}")
                break
    return "; " + "; ".join(notes) if notes else ""


def user_exempt(r, config) -> bool:
    """The pack config's per-policy ``exemptions`` (namespace and name)."""
    return any(k8s.get(e, "namespace") == r.namespace and k8s.get(e, "name") == r.obj_name
               for e in config.get("exemptions") or [])
