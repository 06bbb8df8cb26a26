"""Objects through a real API server: discovery, server-side apply (for real or as a dry run), and the server's own
verdict on an object, to set beside the package's offline one (gpuplatform/apiserver.py).

Server-side apply with ``fieldValidation=Strict`` is what ``kubectl apply --server-side`` sends and what the
Pulumi kubernetes provider sends with server-side apply on: an unknown or duplicated field is refused, not dropped.
A dry run (``dryRun=All``) runs every admission and validation step and persists nothing.
"""
from __future__ import annotations

import time
import urllib.parse
from dataclasses import dataclass
from typing import Optional

from gpuplatform.rehearse.controlplane import ControlPlaneError, LocalControlPlane

FIELD_MANAGER = "gpuplatform-rehearsal"


@dataclass(frozen=True)
class ApiResource:
    group_version: str
    plural: str
    namespaced: bool

    def path(self, namespace: Optional[str], name: Optional[str] = None) -> str:
        base = f"/api/{self.group_version}" if "/" not in self.group_version else f"/apis/{self.group_version}"
        if self.namespaced and namespace:  # no namespace: the list across every namespace
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        return base + (f"/{name}" if name else "")


class Discovery:
    """(apiVersion, kind) -> how the server serves it; refreshed when a kind is not found (a CRD just made)."""

    def __init__(self, cp: LocalControlPlane):
        self.cp = cp
        self.resources: dict[tuple[str, str], ApiResource] = {}

    def refresh(self) -> None:
        found = {}
        group_versions = ["v1"]
        for group in self.cp.get("/apis").get("groups", []):
            group_versions += [v["groupVersion"] for v in group.get("versions", [])]
        for gv in group_versions:
            path = f"/api/{gv}" if gv == "v1" else f"/apis/{gv}"
            status, body = self.cp.request("GET", path)
            if status != 200 or not isinstance(body, dict):
                continue  # an aggregated API whose backend is not up yet
            for res in body.get("resources", []):
                if "/" not in res["name"]:
                    found[(gv, res["kind"])] = ApiResource(gv, res["name"], res["namespaced"])
        self.resources = found

    def find(self, api_version: str, kind: str) -> Optional[ApiResource]:
        key = (api_version, kind)
        if key not in self.resources:
            self.refresh()
        return self.resources.get(key)


def _message(body) -> str:
    if isinstance(body, dict):
        return str(body.get("message") or body)
    return str(body)


@dataclass(frozen=True)
class Verdict:
    accepted: bool
    message: str = ""


def apply(cp: LocalControlPlane, discovery: Discovery, obj: dict, *, dry_run: bool = False,
          namespace: Optional[str] = None) -> Verdict:
    """Server-side apply ``obj``; the server's verdict (its own message when it refuses)."""
    api_version, kind = obj.get("apiVersion", ""), obj.get("kind", "")
    resource = discovery.find(api_version, kind)
    if resource is None:
        return Verdict(False, f"the server does not serve {kind} in {api_version}")
    meta = obj.get("metadata") or {}
    ns = (meta.get("namespace") or namespace or "default") if resource.namespaced else None
    if resource.namespaced and not meta.get("namespace"):
        obj = {**obj, "metadata": {**meta, "namespace": ns}}
    query = {"fieldManager": FIELD_MANAGER, "fieldValidation": "Strict", "force": "true"}
    if dry_run:
        query["dryRun"] = "All"
    path = resource.path(ns, meta.get("name")) + "?" + urllib.parse.urlencode(query)
    status, body = cp.request("PATCH", path, obj, content_type="application/apply-patch+yaml")
    if 200 <= status < 300:
        return Verdict(True)
    return Verdict(False, f"{status}: {_message(body)}")


def wait_established(cp: LocalControlPlane, crd_names: list[str], timeout: float = 60) -> None:
    """Every CRD named is Established (its kind is served), or a bounded-wait error."""
    deadline = time.monotonic() + timeout
    pending = list(crd_names)
    while pending and time.monotonic() < deadline:
        still = []
        for name in pending:
            status, body = cp.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
            conditions = (body.get("status") or {}).get("conditions", []) if status == 200 else []
            if not any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                still.append(name)
        pending = still
        if pending:
            time.sleep(0.3)
    if pending:
        raise ControlPlaneError(f"CRDs not Established after {timeout:.0f} s: {', '.join(pending)}")
