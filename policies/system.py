"""The one exemption rule every policy applies: GPU system components may use the host access their upstream
manifests document (:mod:`gpuplatform.catalogs.system_components`), recognised by their images, and nothing more.

A policy asks :func:`component_of` for the component a workload is, and then whether the specific access it is
judging (privileged, host PID, a host path, a capability, root, every GPU visible) is one the component declares.
An unrecognised workload gets no allowance at all. Users add their own exemptions per policy (``exemptions``:
namespace and name) in the pack config.
"""
from __future__ import annotations

from typing import Optional

from gpuplatform.catalogs.system_components import (ANY_PATH, PAUSE_IMAGES, SYSTEM_COMPONENT_KINDS,
                                                    SystemComponent, identify, matches)
from gpuplatform.policies import k8s


def component_of(r) -> Optional[SystemComponent]:
    """The system component a workload resource is, or None."""
    if r.kind not in SYSTEM_COMPONENT_KINDS:
        return None
    spec = k8s.pod_spec(r.kind, r.props)
    main = list(k8s.as_list(k8s.get(spec, "containers")))
    if not main or not isinstance(k8s.get(main[0], "image"), str):
        return None
    images = [str(k8s.get(c, "image", default="")) for c in k8s.containers(spec)]
    init = [str(k8s.get(c, "image", default="")) for c in k8s.as_list(k8s.get(spec, "initContainers"))]
    if init and all(matches(str(k8s.get(c, "image", default="")), PAUSE_IMAGES) for c in main):
        # the work is done by init containers (a driver installer): the first one says what the pod is
        return identify(init[0], images[1:])
    return identify(str(main[0]["image"]), images[1:])


def path_allowed(comp: Optional[SystemComponent], path: str) -> bool:
    if comp is None:
        return False
    path = "/" + str(path).strip("/")
    return any(p == ANY_PATH or path == p or path.startswith(p.rstrip("/") + "/") for p in comp.host_paths)


def user_exempt(r, config) -> bool:
    """The pack config's per-policy ``exemptions`` (namespace and name)."""
    return any(k8s.get(e, "namespace") == r.namespace and k8s.get(e, "name") == r.obj_name
               for e in config.get("exemptions") or [])
