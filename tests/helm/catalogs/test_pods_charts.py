"""The chart pod catalog (``catalogs/pods.py``: ``CHART_WORKLOADS`` read through ``chart_pods``) is what the real Helm
engine renders, for every pinned chart version and the values the program sends.

The placement check reasons about the pods the charts run without running Helm; a pod the catalog misses, names
wrongly or gives the wrong node selector, tolerations, required node affinity or requests makes it pass a stack
whose charts cannot schedule (or fail one that can). So:

* every configuration (and every older-pin variant) is rendered with the values it registers, and for each release
  the pod owners the chart renders (every kind that makes pods other than DaemonSets, and kube-prometheus-stack's
  Prometheus and Alertmanager, whose specs the operator copies onto their StatefulSets' pods; Helm hooks that run
  on install or upgrade included, delete, rollback-only and test hooks not; a controller of zero replicas makes no
  pod) are exactly the catalog's, each with the same scheduling view;
* the values we register set almost no scheduling field, so they prove the chart defaults and names but not the
  values paths: every pinned version of every chart is also rendered with distinct scheduling values added at every
  path the catalog names (a node selector key, a toleration, a required node affinity term, a CPU request), which
  proves each path, the keys each template reads, and Helm's coalescing (maps merged over the chart's defaults,
  lists replaced); pins no configuration reaches are rendered here too, with the values a configuration registers;
* the comparison catches a catalog entry dropped or a default changed (not vacuous).
"""
import copy
import dataclasses

import pytest

import helm_engine
from gpuplatform.catalogs import pods
from gpuplatform.catalogs.pods import CHART_WORKLOADS, chart_pods
from gpuplatform.catalogs.versions import CHARTS, KUBERNETES_SUPPORTED
from gpuplatform.components.placement import pod_requests
from gpuplatform.components.releases import chart_releases
from gpuplatform.components.validation import load
from rendered import CONFIGS, NOT_PUBLIC, PIN_VARIANTS, RenderedRelease, _render_release

RUN_ON_INSTALL_OR_UPGRADE = {"pre-install", "post-install", "pre-upgrade", "post-upgrade"}
POD_TEMPLATE = {
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
    "Pod": ("spec",),
}
OPERATED = {"Prometheus", "Alertmanager"}
"""Custom resources the Prometheus operator turns into a StatefulSet with their nodeSelector, tolerations and
affinity; ``spec.resources`` is its main container's."""
PROBE = "gpuplatform.test/probe"


def _configs_with(*release_keys: str) -> list[str]:
    return [n for n, make in CONFIGS.items() if set(release_keys) <= set(chart_releases(load(make())))]


def _public_release_keys(name: str) -> list[str]:
    return [k for k in chart_releases(load(CONFIGS[name]())) if CHARTS[k].name not in NOT_PUBLIC]


RENDERING_CONFIGS = [n for n in CONFIGS if _public_release_keys(n)]
"""Configurations with at least one release whose chart can be rendered offline (dev and staging install only ACK's
metrics adapter)."""

PINS = [(key, v.version) for key, c in CHARTS.items() if c.name not in NOT_PUBLIC for v in c.versions]


# ---------------------------------------------------------------------------------------------- the comparison
def _hook(doc: dict) -> str:
    return ((doc.get("metadata") or {}).get("annotations") or {}).get("helm.sh/hook", "")


def _at(doc: dict, path: tuple[str, ...]) -> dict:
    for key in path:
        doc = doc.get(key) or {}
    return doc


def _view(pod_spec: dict, hook: bool) -> dict:
    """What the scheduler sees of a pod: missing fields as their empty values, requests as placement sums them."""
    required = (((pod_spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    return {"nodeSelector": pod_spec.get("nodeSelector") or {},
            "tolerations": pod_spec.get("tolerations") or [],
            "required node affinity terms": required.get("nodeSelectorTerms") or [],
            "requests": pod_requests(pod_spec),
            "hook": hook}


def rendered_pods(rel: RenderedRelease) -> dict[str, dict]:
    """``<Kind> <namespace>/<name>`` -> scheduling view, for every pod owner the release renders."""
    out: dict[str, dict] = {}
    for _, doc in rel.objects:
        kind = doc.get("kind")
        if kind not in POD_TEMPLATE and kind not in OPERATED:
            continue  # DaemonSets among them
        hooks = {h.strip() for h in _hook(doc).split(",") if h.strip()}
        if hooks and not hooks & RUN_ON_INSTALL_OR_UPGRADE:
            continue  # runs only on delete or rollback, or under `helm test`
        if (doc.get("spec") or {}).get("replicas") == 0:
            continue
        if kind in OPERATED:
            spec = doc.get("spec") or {}
            requests = (spec.get("resources") or {}).get("requests")
            pod_spec = {**spec, "containers": [{"resources": {"requests": requests}}] if requests else []}
            pod_spec.pop("initContainers", None)
        else:
            pod_spec = _at(doc, POD_TEMPLATE[kind])
        meta = doc.get("metadata") or {}
        owner = f"{kind} {meta.get('namespace') or rel.namespace}/{meta['name']}"
        assert owner not in out, f"{rel.name} renders {owner} twice"
        out[owner] = _view(pod_spec, bool(hooks))
    return out


def differences(label: str, rel: RenderedRelease) -> list[str]:
    """Every way the catalog's pods for the release (``chart_pods`` with the values the release was rendered with)
    differ from what Helm rendered, one line each."""
    where = f"{label}: release {rel.name} ({rel.chart.name} {rel.version})"
    found = rendered_pods(rel)
    listed = chart_pods(rel.chart.name, rel.name, rel.namespace, rel.values, version=rel.version)
    modelled = {p.owner: _view(p.spec, p.hook) for p in listed}
    out = [f"{where}: {o} is listed twice in CHART_WORKLOADS"
           for o in sorted({p.owner for p in listed if [q.owner for q in listed].count(p.owner) > 1})]
    out += [f"{where}: {o} is rendered but not in CHART_WORKLOADS" for o in sorted(found.keys() - modelled.keys())]
    out += [f"{where}: {o} is in CHART_WORKLOADS but not rendered" for o in sorted(modelled.keys() - found.keys())]
    for owner in sorted(found.keys() & modelled.keys()):
        out += [f"{where}: {owner}: {key}: rendered {found[owner][key]!r}, catalog {modelled[owner][key]!r}"
                for key in found[owner] if found[owner][key] != modelled[owner][key]]
    return out


# ---------------------------------------------------------------------------------------------- every configuration
@pytest.mark.parametrize("name", RENDERING_CONFIGS + list(PIN_VARIANTS))
def test_catalog_is_every_pod_each_release_renders(rendered, name):
    stack = rendered(name)
    assert stack.releases, f"{name} renders no release"
    problems = [p for rel in stack.releases.values() for p in differences(name, rel)]
    assert not problems, "\n".join(problems)
    pods_compared = sum(len(rendered_pods(rel)) for rel in stack.releases.values())
    assert pods_compared, f"{name}: no release renders a pod owner to compare"


# ---------------------------------------------------------------------------------------------- every pin, probed
def _newest_covered_minor(key: str, version: str) -> tuple[int, int]:
    (major, lo), (_, hi) = KUBERNETES_SUPPORTED
    pin = next(v for v in CHARTS[key].versions if v.version == version)
    return max((major, m) for m in range(lo, hi + 1) if pin.covers((major, m)))


def _render(charts, base: RenderedRelease, version: str, values: dict) -> RenderedRelease:
    """The release as the program registered it, with ``version`` and ``values``, rendered alone at the newest
    minor the pin covers (an end-of-life pin included), with the API versions its own CRDs add."""
    rel = RenderedRelease(base.record, base.chart, version, values)
    minor = _newest_covered_minor(base.chart.release, version)
    api = helm_engine.builtin_api_versions(minor)
    _render_release(rel, charts, minor, api, crds_only=True)
    _render_release(rel, charts, minor, api | helm_engine.crd_api_versions(rel.crds))
    return rel


def _merged(base: dict, extra: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in extra.items():
        out[key] = _merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _nested(path: tuple[str, ...], value: dict) -> dict:
    for key in reversed(path):
        value = {key: value}
    return value


def probe_values(chart_name: str, version: str) -> dict:
    """Distinct scheduling values at every values path the catalog names for the pin: a node selector key, a
    toleration and a required node affinity term per block, a CPU request per resources block."""
    workloads = [w for w in CHART_WORKLOADS.get(chart_name, ()) if w.versions is None or version in w.versions]
    probe: dict = {}
    for i, path in enumerate(sorted({w.values for w in workloads})):
        mark = f"{PROBE}-{i}"
        probe = _merged(probe, _nested(path, {
            "nodeSelector": {PROBE: str(i)},
            "tolerations": [{"key": mark, "operator": "Exists", "effect": "NoSchedule"}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": mark, "operator": "Exists"}]}]}}}}))
    for i, path in enumerate(sorted({w.requests_at or (*w.values, "resources") for w in workloads})):
        probe = _merged(probe, _nested(path, {"requests": {"cpu": f"{i + 1}1m"}}))
    return probe


@pytest.mark.parametrize("key,version", PINS, ids=[f"{k}-{v}" for k, v in PINS])
def test_catalog_follows_the_values_of_every_pinned_version(rendered, charts, key, version):
    configs = _configs_with(key)
    assert configs, f"no configuration installs {key}"
    base = rendered(configs[0]).releases[CHARTS[key].release]
    label = f"{configs[0]}'s values"
    as_registered = _render(charts, base, version, base.values)
    problems = differences(label, as_registered)
    probe = probe_values(CHARTS[key].name, version)
    probed = _render(charts, base, version, _merged(base.values, probe))
    problems += differences(f"{label} with scheduling values at every catalogued path", probed)
    assert not problems, "\n".join(problems)
    found, before = rendered_pods(probed), rendered_pods(as_registered)
    if CHARTS[key].name not in CHART_WORKLOADS:
        assert not found and not probe, found
        return
    # every pod compared took something from the probe, so every catalogued path was exercised
    unmoved = sorted(o for o, view in found.items() if view == before.get(o))
    assert found and not unmoved, f"the scheduling values at the catalogued paths changed nothing of {unmoved}"


# ---------------------------------------------------------------------------------------------- not vacuous
def test_the_comparison_catches_a_missing_or_wrong_catalog_entry(rendered, monkeypatch):
    rel = rendered("prod").releases["cert-manager"]
    where = f"prod: release cert-manager (cert-manager {rel.version})"
    assert differences("prod", rel) == []
    entries = CHART_WORKLOADS["cert-manager"]
    job = next(w for w in entries if w.kind == "Job")
    monkeypatch.setitem(pods.CHART_WORKLOADS, "cert-manager", tuple(w for w in entries if w is not job))
    assert differences("prod", rel) == [
        f"{where}: Job cert-manager/cert-manager-startupapicheck is rendered but not in CHART_WORKLOADS"]
    webhook = next(w for w in entries if w.name.endswith("-webhook"))
    monkeypatch.setitem(pods.CHART_WORKLOADS, "cert-manager", tuple(
        dataclasses.replace(w, default={}) if w is webhook else w for w in entries))
    assert differences("prod", rel) == [
        f"{where}: Deployment cert-manager/cert-manager-webhook: nodeSelector: rendered "
        "{'kubernetes.io/os': 'linux'}, catalog {}"]


def test_every_pod_prod_renders_runs_on_its_system_pool_and_none_on_its_gpu_pool(rendered):
    """The home check on the pod specs Helm really renders for prod, not on the catalog: each has a node in the
    stack's node groups (the system pool), and none would have one in the tainted, autoscaled GPU pool alone,
    which was all the cluster had before the system pool."""
    from gpuplatform.catalogs.pods import ClusterPod
    from gpuplatform.components.placement import gpu_pool_groups, node_groups, why_not

    stack = rendered("prod")
    groups, gpu_only = node_groups(stack.cfg), gpu_pool_groups(stack.cfg)
    pods = []
    for rel in stack.releases.values():
        for _, doc in rel.objects:
            kind = doc.get("kind")
            if kind in POD_TEMPLATE:
                spec = _at(doc, POD_TEMPLATE[kind])
            elif kind in OPERATED:
                spec = doc.get("spec") or {}
            else:
                continue
            pods.append(ClusterPod(f"{kind} {doc['metadata']['name']}", rel.name, spec))
    assert len(pods) >= 10
    for pod in pods:
        assert any(not why_not(pod, g) for g in groups), f"{pod.owner}: {[why_not(pod, g) for g in groups]}"
        assert all(why_not(pod, g) for g in gpu_only), f"{pod.owner} would fit the GPU pool"
