"""The real Helm engine, offline: render a chart package as an install on a cluster of a given Kubernetes version,
and render every Helm release a stack registers, so ``gpuplatform check --stack --charts DIR`` judges what each
release installs rather than the release object alone.

``helm-python-sdk`` (the optional extra ``gpu-platform[charts]``) embeds Helm's Go SDK as a C library; ``check``
works without it and says which releases it did not render. Its documented ``Chart.render()`` renders with Helm's
offline default capabilities (Kubernetes v1.36 and a built-in API set without ``apiregistration.k8s.io/v1`` or any
CRD group), which silently changes what charts emit: prometheus-adapter's APIService comes out as the removed
``apiregistration.k8s.io/v1beta1``. The library's ``helm_render`` function also takes ``kube_version`` and
``api_versions`` (extra ``group/version`` and ``group/version/Kind`` entries, added to Helm's defaults), but the
wrapper reaches it only through its private ``helm_python._native.call_string``. This module is the one place that
calls it, so the exact pin below (pyproject ``charts`` extra, requirements.txt) is the only thing to re-check on an
upgrade.

Values go to Helm as JSON with their nulls: during coalescing a null deletes the chart's default for that key
(helm.sh/docs/chart_template_guide/values_files, "Deleting a default key").
"""
from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable, Optional

import yaml

HELM_PYTHON_SDK = "0.2.2"
"""The only version whose private render entry point this module is written against."""

CHARTS_ENV = "GPUPLATFORM_CHARTS_DIR"
"""Directory holding the upstream chart packages (``<name>-<version>.tgz``, as ``helm pull`` saves them): the default
of ``check --charts``; CI points it at ``../shared/charts``."""

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


class EngineMissing(RuntimeError):
    """helm-python-sdk is not installed: nothing can be rendered."""


def engine_problem() -> Optional[str]:
    """Why no chart can be rendered here (the engine is missing or not the pinned version), or None."""
    try:
        installed = metadata.version("helm-python-sdk")
    except metadata.PackageNotFoundError:
        return (f"helm-python-sdk is not installed (pip install 'gpu-platform[charts]', which pins "
                f"helm-python-sdk=={HELM_PYTHON_SDK})")
    if installed != HELM_PYTHON_SDK:
        return f"helm-python-sdk {installed} is installed; the renderer is written against {HELM_PYTHON_SDK}"
    return None


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


# ---------------------------------------------------------------------------------------------- a stack's releases
RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"


@dataclass
class RenderedRelease:
    """One Helm release a program registers, with what the engine renders for it."""

    record: Any
    """The release as registered (:class:`gpuplatform.records.RegisteredResource`)."""
    chart: Any
    """Its chart in catalogs/versions.py (:class:`gpuplatform.catalogs.versions.Chart`)."""
    version: str
    values: dict
    objects: list = field(default_factory=list)
    """(template path, object) of every object an install creates, hooks included."""
    crds: list = field(default_factory=list)
    """CRDs the release installs: its charts' ``crds/`` directories and CRD objects among its templates."""

    @property
    def name(self) -> str:
        return self.record.inputs["name"]

    @property
    def namespace(self) -> str:
        return self.record.inputs["namespace"]

    def installed(self) -> list[dict]:
        """Objects an install creates, hooks included."""
        return [doc for _, doc in self.objects]

    def hook(self, doc: dict) -> str:
        return ((doc.get("metadata") or {}).get("annotations") or {}).get("helm.sh/hook", "")


CRD = "CustomResourceDefinition"


def render_release(rel: RenderedRelease, path: Path, minor: tuple[int, int], api_versions: Iterable[str],
                   crds_only: bool = False) -> None:
    """Render ``rel`` from the package at ``path`` for a cluster of ``minor`` serving ``api_versions``; with
    ``crds_only``, keep only the CRDs it installs (the first of the two renders of :func:`render_together`, whose
    other documents are never read, are then not parsed)."""
    rendered = render(path, rel.values, release=rel.name, namespace=rel.namespace,
                      kube_version=f"v{minor[0]}.{minor[1]}.0", api_versions=api_versions)
    found = objects(rendered, CRD if crds_only else "")
    rel.objects = [] if crds_only else found
    rel.crds = chart_crds(path) + [d for _, d in found if d.get("kind") == CRD]


def render_together(releases: list[tuple[RenderedRelease, Path]], minor: tuple[int, int]) -> frozenset[str]:
    """Render the releases of one cluster as it would serve them: the CRDs a release installs change what the
    others render (charts test ``.Capabilities.APIVersions`` for ``monitoring.coreos.com/v1``), so render once to
    find them, then again with the GA built-ins of ``minor`` plus every CRD group/version installed. Returns the API
    versions of the second pass."""
    api = builtin_api_versions(minor)
    for rel, path in releases:
        render_release(rel, path, minor, api, crds_only=True)
    api = api | crd_api_versions([c for rel, _ in releases for c in rel.crds])
    for rel, path in releases:
        render_release(rel, path, minor, api)
    return frozenset(api)


def chart_of(record) -> Any:
    """The catalog chart a registered release installs (by the chart's name), or None for a chart the catalog does
    not pin."""
    from gpuplatform.catalogs.versions import CHARTS

    chart = str(record.inputs.get("chart") or "").rstrip("/").rsplit("/", 1)[-1]
    version = str(record.inputs.get("version") or "")
    if chart.endswith(f"-{version}.tgz"):  # a package on disk (settings.chartPackages)
        chart = chart[:-len(f"-{version}.tgz")]
    return next((c for c in CHARTS.values() if c.name == chart), None)


@dataclass
class StackRender:
    """What rendering a stack's releases produced: the rendered ones and, for the others, why not."""

    rendered: list[RenderedRelease]
    unrendered: list[tuple[str, str]]
    """(release name, why it was not rendered)."""


def render_stack_releases(records: Iterable, charts: ChartsDir, minor: tuple[int, int]) -> StackRender:
    """Every Helm release among ``records`` whose pinned package is in ``charts`` (``<chart>-<version>.tgz``),
    rendered together at ``minor``; the others listed with the reason (no directory, no engine, no package)."""
    releases = [r for r in records if r.type == RELEASE_TYPE]
    if not releases:
        return StackRender([], [])
    problem = charts.reason if charts.path is None else engine_problem()
    if problem:
        return StackRender([], [(r.inputs.get("name", r.name), problem) for r in releases])
    found, missing = [], []
    for r in releases:
        chart, version = chart_of(r), str(r.inputs.get("version") or "")
        name = chart.name if chart is not None else str(r.inputs.get("chart") or "")
        path = charts.archive(name, version)
        if not version or not path.is_file():
            missing.append((r.inputs.get("name", r.name), f"no {name}-{version}.tgz in {charts.path}"))
            continue
        found.append((RenderedRelease(r, chart, version, to_json(r.inputs.get("values") or {})), path))
    render_together(found, minor)
    return StackRender([rel for rel, _ in found], missing)


# ---------------------------------------------------------------------------------------------- check --stack
def charts_for(option: Optional[str]) -> ChartsDir:
    """The chart packages ``check --charts`` names, else ``GPUPLATFORM_CHARTS_DIR``, or why there are none."""
    if option:
        path = Path(option)
        return ChartsDir(path) if path.is_dir() else ChartsDir(None, f"--charts {option} is not a directory")
    found = charts_dir()
    if found.path is None and not os.environ.get(CHARTS_ENV):
        return ChartsDir(None, f"no chart packages given (--charts DIR or {CHARTS_ENV})")
    return found


def with_rendered(resources: list, charts: ChartsDir, minor: tuple[int, int]):
    """``resources`` with each Helm release whose package is at hand replaced by the objects it installs, those
    objects as :class:`gpuplatform.check.Manifests` (each located as ``helmrelease <release>: <kind> <name>``, for
    the API server's checks), and one line naming the releases left as they are (None when every one rendered).

    The release object goes: the policies then judge what the chart installs (an APIService, the adapter's rules in
    its ConfigMap), not the values that produce it, and do not count both."""
    from gpuplatform import check
    from gpuplatform.apiserver import as_sent
    from gpuplatform.policies import k8s
    from gpuplatform.records import RegisteredResource

    result = render_stack_releases(resources, charts, minor)
    read = check.Manifests()
    done = {id(rel.record) for rel in result.rendered}
    kept = [r for r in resources if id(r) not in done]
    seen: dict[str, int] = {}
    for rel in result.rendered:
        for _template, doc in rel.objects:
            if not isinstance(doc, dict) or not doc.get("apiVersion") or not doc.get("kind"):
                continue
            obj = as_sent(doc)
            ns = k8s.get(obj, "metadata", "namespace")
            name = f"{ns}/{k8s.name_of(obj)}" if ns else (k8s.name_of(obj) or str(obj["kind"]).lower())
            token = k8s.type_token(str(obj["apiVersion"]), str(obj["kind"]))
            key = f"{token}::{name}"
            seen[key] = seen.get(key, 0) + 1
            if seen[key] > 1:
                name = f"{name}#{seen[key]}"
            read.resources.append(RegisteredResource(type=token, name=name, inputs=obj))
            read.locations[f"{token}::{name}"] = (f"helmrelease {rel.name}: {obj['kind']} {name}", None)
    read.files = [f"helmrelease {rel.name}" for rel in result.rendered]
    note = None
    if result.unrendered:
        reasons: dict[str, list[str]] = {}
        for release, why in result.unrendered:
            reasons.setdefault(why, []).append(release)
        note = "note: not rendered, checked as release objects only: " + "; ".join(
            f"{', '.join(names)} ({why})" for why, names in reasons.items())
    return kept + read.resources, read, note
