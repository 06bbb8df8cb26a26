"""The real Helm engine, offline: render a chart package as an install on a cluster of a given Kubernetes version.

``helm-python-sdk`` embeds Helm's Go SDK as a C library. Its documented ``Chart.render()`` renders with Helm's
offline default capabilities (Kubernetes v1.36 and a built-in API set without ``apiregistration.k8s.io/v1`` or any
CRD group), which silently changes what charts emit: prometheus-adapter's APIService comes out as the removed
``apiregistration.k8s.io/v1beta1``. The library's ``helm_render`` function also takes ``kube_version`` and
``api_versions`` (extra ``group/version`` and ``group/version/Kind`` entries, added to Helm's defaults), but the
wrapper reaches it only through its private ``helm_python._native.call_string``. This module is the one place that
calls it, so the exact pin below (requirements.txt) is the only thing to re-check on an upgrade.

Values go to Helm as JSON with their nulls: during coalescing a null deletes the chart's default for that key
(helm.sh/docs/chart_template_guide/values_files, "Deleting a default key").
"""
from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable, Optional

import yaml

HELM_PYTHON_SDK = "0.2.2"
"""The only version whose private render entry point this module is written against."""

CHARTS_ENV = "GPUPLATFORM_CHARTS_DIR"
"""Directory holding the upstream chart packages (``<name>-<version>.tgz``); CI points it at ``../shared/charts``."""

# Helm splits a template's output on this separator (helm.sh/helm pkg/releaseutil/manifest.go, SplitManifests)
_SEPARATOR = re.compile(r"(?:^|\s*\n)---\s*")



class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """YAML as Kubernetes reads it: a bare ``=`` is a string (PyYAML's YAML 1.1 ``value`` tag has no constructor;
    CRD schemas list ``=`` among selector operators)."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:value"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_YAML_LOADER = _Loader


class EngineVersionError(RuntimeError):
    pass


def _native():
    """helm_python's private native call table, after checking the installed wrapper is the pinned one."""
    installed = metadata.version("helm-python-sdk")
    if installed != HELM_PYTHON_SDK:
        raise EngineVersionError(f"helm-python-sdk {installed} is installed; the render helper is written against "
                                 f"{HELM_PYTHON_SDK} (a private API): pin it in requirements.txt or re-check "
                                 "helm_python._native.call_string('helm_render', ...)")
    from helm_python import _native as native

    return native


@functools.lru_cache(maxsize=None)
def load_chart(path: str):
    """A loaded chart package (kept for the session: charts are immutable and loading kube-prometheus-stack takes
    longer than rendering it)."""
    import helm_python

    return helm_python.Chart.load(path)


def render(chart_path: Path, values: dict, *, release: str, namespace: str, kube_version: str,
           api_versions: Iterable[str]) -> dict[str, str]:
    """Template path -> rendered text, as ``helm install`` would produce for a cluster at ``kube_version``
    (e.g. ``v1.35.0``) serving ``api_versions``. Hooks are included; ``crds/`` directories are not (read
    :func:`chart_crds`); ``lookup`` finds nothing."""
    chart = load_chart(str(chart_path))
    options = {"name": release, "namespace": namespace, "is_install": True, "kube_version": kube_version,
               "api_versions": sorted(set(api_versions))}
    out = _native().call_string("helm_render", chart._raw(), json.dumps(values), json.dumps(options))
    return json.loads(out)


def chart_crds(chart_path: Path) -> list[dict]:
    """The CustomResourceDefinitions in the chart's (and its subcharts') ``crds/`` directories, which Helm installs
    before the templates on first install and never upgrades. Shared: do not modify."""
    return list(_chart_crds(str(chart_path)))


@functools.lru_cache(maxsize=None)
def _chart_crds(chart_path: str) -> tuple[dict, ...]:
    # kube-prometheus-stack's are 4.5 MB of YAML: parse them once per session
    docs = []
    for crd in load_chart(chart_path).crds:
        docs += split_manifest(crd["data"])
    return tuple(docs)


def split_manifest(text: str, containing: str = "") -> list[dict]:
    """Documents of one template's output, split as Helm splits them (not as YAML does: cert-manager's RBAC
    template has ``---# comment`` lines PyYAML rejects); with ``containing``, only the documents whose text has it
    (parsing is most of the cost of a render)."""
    docs = []
    for piece in _SEPARATOR.split(text.strip()):
        piece = piece.strip()
        if not piece or containing not in piece:
            continue
        doc = yaml.load(piece, Loader=_YAML_LOADER)
        if doc is not None:  # a piece that is only comments
            docs.append(doc)
    return docs


def objects(rendered: dict[str, str], containing: str = "") -> list[tuple[str, dict]]:
    """(template path, object) for every rendered object (with ``containing``: every one whose text has it),
    ``NOTES.txt`` left out as Helm does."""
    out = []
    for template, text in sorted(rendered.items()):
        if template.endswith("NOTES.txt") or containing not in text:
            continue
        out += [(template, doc) for doc in split_manifest(text, containing)]
    return out


# ---------------------------------------------------------------------------------------------- capabilities
def _kv_schema_dir(minor: tuple[int, int]) -> Path:
    import kubernetes_validate

    return (Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
            / f"v{minor[0]}.{minor[1]}.0-local-strict")


@functools.lru_cache(maxsize=None)
def builtin_api_versions(minor: tuple[int, int]) -> frozenset[str]:
    """``group/version`` and ``group/version/Kind`` of the GA built-in kinds a cluster of ``minor`` serves, read
    from the OpenAPI definitions kubernetes-validate bundles for that release."""
    path = _kv_schema_dir(minor) / "_definitions.json"
    if not path.exists():
        raise LookupError(f"kubernetes-validate bundles no schemas for Kubernetes {minor[0]}.{minor[1]}")
    defs = json.loads(path.read_text())["$defs"]
    out: set[str] = set()
    for name, definition in defs.items():
        if name.startswith("io.k8s.apimachinery."):
            continue  # DeleteOptions, WatchEvent, Status: listed under every group, served by none as a kind
        for gvk in definition.get("x-kubernetes-group-version-kind") or []:
            group, version, kind = gvk["group"], gvk["version"], gvk["kind"]
            if "alpha" in version or "beta" in version or not name.endswith(f".{version}.{kind}"):
                continue
            gv = f"{group}/{version}" if group else version
            out |= {gv, f"{gv}/{kind}"}
    return frozenset(out)


def crd_api_versions(crds: Iterable[dict]) -> set[str]:
    """``group/version`` and ``group/version/Kind`` of every served version of the given CRDs."""
    out: set[str] = set()
    for crd in crds:
        spec = crd["spec"]
        for version in spec["versions"]:
            if version.get("served", True):
                gv = f"{spec['group']}/{version['name']}"
                out |= {gv, f"{gv}/{spec['names']['kind']}"}
    return out


# ---------------------------------------------------------------------------------------------- chart packages
@dataclass(frozen=True)
class ChartsDir:
    path: Optional[Path]
    reason: str = ""

    def archive(self, name: str, version: str) -> Path:
        assert self.path is not None
        return self.path / f"{name}-{version}.tgz"


def charts_dir() -> ChartsDir:
    """The directory ``GPUPLATFORM_CHARTS_DIR`` names, or why there is none."""
    value = os.environ.get(CHARTS_ENV)
    if not value:
        return ChartsDir(None, f"{CHARTS_ENV} is not set")
    path = Path(value)
    if not path.is_dir():
        return ChartsDir(None, f"{CHARTS_ENV}={value} is not a directory")
    return ChartsDir(path)


def pull_hint(pins: Iterable[tuple[str, str, str]]) -> str:
    """How to fetch the pinned packages: ``(name, version, repository)`` -> ``helm pull`` commands."""
    lines = []
    for name, version, repo in pins:
        if repo.startswith("oci://"):
            lines.append(f"helm pull {repo}/{name} --version {version}")
        else:
            lines.append(f"helm pull {name} --repo {repo} --version {version}")
    return "\n".join(lines)


def to_json(value: Any) -> Any:
    """Values as Helm receives them from the engine: JSON, nulls included."""
    return json.loads(json.dumps(value))
