"""Every Kubernetes object the program authors, checked against real schemas.

Built-in kinds go through kubernetes-validate's strict OpenAPI schemas, for the cluster's own Kubernetes version
and for every bundled version from 1.28 on, so an object that an upgrade would reject shows up before the
upgrade. CRD objects (prometheus-operator, KEDA) go through the pydantic models generated from the upstream CRDs;
those models drop unknown fields silently, so a field only counts as accepted if the model keeps it.

Objects are synthesized at collection time (once per case, cached) so that each object is its own test id:
a failure, or an expected failure, names exactly one object.
"""
import copy
import functools
import json
import re

import jsonschema
import kubernetes_validate
import pydantic
import pytest
import referencing
import referencing.jsonschema
from kubernetes_validate import utils as kv_utils

from gpuplatform.catalogs.kubernetes import served_by
from gpuplatform.components.stack_config import namespace_from_stack_file
from gpuplatform.components.validation import kubernetes_version, load
from gpuplatform.plan import manifest_files
from gpuplatform.synth import stack_config_from_namespace, synthesize
from support import REPO

STACKS = ("dev", "staging", "prod", "local")
OLDEST_CHECKED = (1, 28)

CRD_KINDS = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"): ("prometheus_operator.v1", "ServiceMonitor"),
    ("monitoring.coreos.com/v1", "PodMonitor"): ("prometheus_operator.v1", "PodMonitor"),
    ("monitoring.coreos.com/v1", "PrometheusRule"): ("prometheus_operator.v1", "PrometheusRule"),
    ("keda.sh/v1alpha1", "ScaledObject"): ("keda.v1alpha1", "ScaledObject"),
}
"""The generated model of each CRD kind, imported on first use (seconds of pydantic model building that every
worker would otherwise pay while collecting)."""
CRD_GROUPS = {api.split("/")[0] for api, _ in CRD_KINDS}


def crd_model(api_version, kind):
    """The cloudcoil model of a CRD kind we author, or None."""
    import importlib

    where = CRD_KINDS.get((api_version, kind))
    if where is None:
        return None
    return getattr(importlib.import_module(f"cloudcoil.models.{where[0]}"), where[1])


def _mm(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


# kubernetes-validate lists each version twice (plain and -strict directories)
BUNDLED = sorted({v for v in kv_utils.all_versions()}, key=_mm)
CHECKED_VERSIONS = [v for v in BUNDLED if _mm(v) >= OLDEST_CHECKED]


# ---------------------------------------------------------------------------------------------- cases
def stack_namespace(stack: str) -> dict:
    return copy.deepcopy(namespace_from_stack_file(REPO / "stacks" / f"Pulumi.{stack}.yaml"))


def local_mig(strategy: str) -> dict:
    """A real (not simulated) kubeconfig cluster with A100 MIG nodes: the device plugin's resource name and the
    node selector differ between the two strategies, and neither appears in the checked-in stacks' local form."""
    raw = stack_namespace("local")
    raw["cluster"].pop("simulateGpus", None)
    raw["nodePools"] = [{"name": "a100-mig", "gpuModel": "A100-40GB", "gpusPerNode": 8, "maxNodes": 1,
                         "sharing": {"mode": "mig", "profile": "1g.5gb", "strategy": strategy}}]
    for w in raw["workloads"]:
        w["nodePool"] = "a100-mig"
        w["autoscaling"]["metrics"] = [{"metric": "gpu_engine_active", "target": 0.5}]
        w["slo"] = {"objectives": [{"metric": "gpu_engine_active", "below": 0.55}]}  # gpu_util has no MIG value
    return raw


def staging_k8s_122() -> dict:
    """Below 1.23 the HPA is autoscaling/v2beta2 (v2's shape, with behavior), validated by the bundled versions
    that still serve it."""
    raw = stack_namespace("staging")
    raw["cluster"]["kubernetesVersion"] = "1.22"
    return raw


def staging_k8s_122_v2beta1() -> dict:
    """autoscaling/v2beta1 only when the stack asks for it: a different object shape."""
    raw = staging_k8s_122()
    raw["workloads"][0]["autoscaling"]["hpaApiVersion"] = "autoscaling/v2beta1"
    return raw


def staging_public_lb() -> dict:
    raw = stack_namespace("staging")
    raw["settings"]["allowPublicEndpoints"] = True
    raw["workloads"][0]["exposure"] = {"serviceType": "PublicLoadBalancer"}
    return raw


def dev_core_mem() -> dict:
    """cGPU core_mem adds the compute-share resource to requests and limits."""
    raw = stack_namespace("dev")
    raw["nodePools"][0]["sharing"]["policy"] = "core_mem"
    raw["workloads"][0]["gpu"]["corePercent"] = 30
    return raw


CASES = {
    **{s: functools.partial(stack_namespace, s) for s in STACKS},
    "local-mig-single": functools.partial(local_mig, "single"),
    "local-mig-mixed": functools.partial(local_mig, "mixed"),
    "staging-k8s-1.22": staging_k8s_122,
    "staging-k8s-1.22-v2beta1": staging_k8s_122_v2beta1,
    "staging-public-lb": staging_public_lb,
    "dev-cgpu-core-mem": dev_core_mem,
}


class Case:
    def __init__(self, name: str):
        raw = CASES[name]()
        self.name = name
        self.version = kubernetes_version(load(raw))  # also proves the variant is a valid config
        records = synthesize(stack_config_from_namespace(raw), stack=name)
        files = manifest_files(records)
        patches = {id(r.inputs) for r in records if r.is_kubernetes_object and r.type.endswith("Patch")}
        self.objects = {f: doc for f, doc in files.items() if not f.startswith("helmrelease-")}
        self.patches = {f for f, doc in self.objects.items() if id(doc) in patches}


@functools.cache
def case(name: str) -> Case:
    return Case(name)


def _group(doc: dict) -> str:
    api = doc["apiVersion"]
    return api.split("/")[0] if "/" in api else ""


def _params(crd: bool):
    out = []
    for name in CASES:
        for f, doc in sorted(case(name).objects.items()):
            if (_group(doc) in CRD_GROUPS) == crd:
                out.append(pytest.param(name, f, id=f"{name}/{f.removesuffix('.yaml')}"))
    return out


def _label(doc: dict) -> str:
    meta = doc.get("metadata") or {}
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{doc.get('apiVersion')} {doc.get('kind')} {where}{meta.get('name')}"


# ---------------------------------------------------------------------------------------------- built-in kinds
@pytest.fixture(scope="module", autouse=True)
def cached_schema_files():
    """kubernetes-validate re-reads and re-parses the 1.3 MB definitions file on every call; reading each file
    once keeps hundreds of validations to a second. The schemas themselves are untouched."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(kv_utils, "schema_contents", functools.lru_cache(maxsize=None)(kv_utils.schema_contents))
        yield


def _strip_required(node):
    if isinstance(node, dict):
        return {k: _strip_required(v) for k, v in node.items() if k != "required"}
    if isinstance(node, list):
        return [_strip_required(v) for v in node]
    return node


@functools.cache
def _patch_validator(kind: str, api_version: str, version: str) -> jsonschema.protocols.Validator:
    """The strict schema of a kind with every ``required`` removed: a server-side-apply patch names only the
    fields it owns, but each field it does name must still exist and have the right type."""
    api = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    base = f"kubernetes-json-schema/v{version}-local-strict"
    try:
        schema = kv_utils.schema_contents(f"{base}/{kind.lower()}-{api}.json", version)
    except FileNotFoundError:
        raise kubernetes_validate.SchemaNotFoundError(kind=kind, version=version, api_version=api_version) from None
    schema = _strip_required(schema)
    defs = _strip_required(kv_utils.schema_contents(f"{base}/_definitions.json", version))
    registry = referencing.Resource.from_contents(defs) @ (
        referencing.Resource.from_contents(schema) @ referencing.Registry())
    return jsonschema.validators.Draft202012Validator(schema, registry=registry)


def _error_text(err: jsonschema.ValidationError) -> str:
    path = ".".join(str(p) for p in err.absolute_path) or "(root)"
    return f"{path}: {err.message}"


class MissingSchema(str):
    """The version has no schema for the object's apiVersion/kind (as opposed to a schema that rejects it)."""


_RESULTS: dict[tuple[str, bool, str], str | None] = {}


def schema_error(doc: dict, version: str, patch: bool = False) -> str | None:
    """None when ``doc`` is valid for ``version``; else the error. Identical objects of different cases are
    validated once per version."""
    key = (json.dumps(doc, sort_keys=True), patch, version)
    if key not in _RESULTS:
        try:
            if patch:
                errors = sorted(_patch_validator(doc["kind"], doc["apiVersion"], version).iter_errors(doc),
                                key=lambda e: list(map(str, e.absolute_path)))
                _RESULTS[key] = "; ".join(_error_text(e) for e in errors) or None
            else:
                kubernetes_validate.validate(doc, version, strict=True)
                _RESULTS[key] = None
        except kubernetes_validate.ValidationError as exc:
            _RESULTS[key] = _error_text(exc)
        except kubernetes_validate.SchemaNotFoundError as exc:
            _RESULTS[key] = MissingSchema(exc.message)
    return _RESULTS[key]


def versions_for(c: Case, doc: dict | None = None) -> list[str]:
    """The cluster's own minor (when kubernetes-validate bundles a schema set that old) and 1.28 onwards. An
    apiVersion removed before 1.28 (catalogs.kubernetes) is checked against every bundled version that serves it
    (autoscaling/v2beta2 for clusters below 1.23: 1.25)."""
    out = list(CHECKED_VERSIONS)
    if c.version is not None and _mm(BUNDLED[0]) <= c.version <= _mm(BUNDLED[-1]):
        own = f"{c.version[0]}.{c.version[1]}.0"
        if own not in out:
            out.insert(0, own)
    if doc is not None and not any(served_by(doc["apiVersion"], _mm(v)) for v in out):
        return [v for v in BUNDLED if served_by(doc["apiVersion"], _mm(v))] or out
    return out


def serving_versions(doc: dict) -> list[str]:
    """Bundled versions that have a schema for the object's apiVersion and kind at all."""
    return [v for v in BUNDLED if not isinstance(schema_error(doc, v), MissingSchema)]


def assert_hpa_v2beta1_shape(doc: dict) -> None:
    """autoscaling/v2beta1 as Kubernetes 1.22 serves it (k8s.io/api autoscaling/v2beta1 types.go): Pods metrics
    carry metricName/targetAverageValue, and there is no behavior block."""
    assert doc["apiVersion"] == "autoscaling/v2beta1"
    assert set(doc) <= {"apiVersion", "kind", "metadata", "spec"}
    spec = doc["spec"]
    assert set(spec) <= {"scaleTargetRef", "minReplicas", "maxReplicas", "metrics"}, sorted(spec)
    assert set(spec["scaleTargetRef"]) <= {"apiVersion", "kind", "name"} and spec["scaleTargetRef"]["name"]
    assert isinstance(spec["maxReplicas"], int) and 1 <= spec.get("minReplicas", 1) <= spec["maxReplicas"]
    allowed = {"Pods": {"metricName", "targetAverageValue", "selector"},
               "Object": {"target", "metricName", "targetValue", "selector", "averageValue"},
               "Resource": {"name", "targetAverageUtilization", "targetAverageValue"},
               "External": {"metricName", "metricSelector", "targetValue", "targetAverageValue"}}
    for m in spec["metrics"]:
        field = m["type"][0].lower() + m["type"][1:]
        assert set(m) == {"type", field}, m
        assert set(m[field]) <= allowed[m["type"]], m
        if m["type"] == "Pods":
            assert m[field]["metricName"] and isinstance(m[field]["targetAverageValue"], str), m


def as_rendered_for(doc: dict, version: str) -> dict:
    """``doc`` as the package renders it for a cluster of ``version``: the fields it renders only where the
    cluster's API has them take their older form (the preStop wait: the ``sleep`` action from 1.30, an exec of
    ``sleep`` before, catalogs/drain.py)."""
    from gpuplatform.catalogs.drain import PRESTOP_SLEEP_ACTION_SINCE, pre_stop_hook

    if _mm(version) >= PRESTOP_SLEEP_ACTION_SINCE or doc.get("kind") != "Deployment":
        return doc
    out = copy.deepcopy(doc)
    for c in out["spec"]["template"]["spec"]["containers"]:
        seconds = c.get("lifecycle", {}).get("preStop", {}).get("sleep", {}).get("seconds")
        if seconds is not None:
            c["lifecycle"] = pre_stop_hook(seconds, _mm(version))
    return out


@pytest.mark.parametrize("case_name,filename", _params(crd=False))
def test_builtin_object_matches_kubernetes_schema(case_name, filename):
    c = case(case_name)
    doc = c.objects[filename]
    patch = filename in c.patches
    errors = {v: err for v in versions_for(c, doc) if (err := schema_error(as_rendered_for(doc, v), v, patch))}
    if errors and all(isinstance(e, MissingSchema) for e in errors.values()) and not serving_versions(doc):
        if (doc["apiVersion"], doc["kind"]) == ("autoscaling/v2beta1", "HorizontalPodAutoscaler"):
            assert_hpa_v2beta1_shape(doc)
            pytest.skip(f"kubernetes-validate {kubernetes_validate.__version__} bundles schemas from "
                        f"{BUNDLED[0]} on; autoscaling/v2beta1 was removed in 1.25, so no bundled version serves "
                        "it (shape checked by hand instead)")
        pytest.fail(f"{_label(doc)}: no bundled Kubernetes version ({BUNDLED[0]}..{BUNDLED[-1]}) has this "
                    "apiVersion/kind")
    assert not errors, (f"{_label(doc)} ({filename}, case {case_name}{', as a patch' if patch else ''}) is "
                        "rejected by the schema of:\n" + "\n".join(f"  {v}: {e}" for v, e in errors.items()))


@pytest.mark.parametrize("case_name", list(CASES))
def test_cluster_version_has_bundled_schemas(case_name):
    c = case(case_name)
    assert c.version is not None
    if c.version < _mm(BUNDLED[0]):
        pytest.skip(f"the cluster runs {c.version[0]}.{c.version[1]}; kubernetes-validate "
                    f"{kubernetes_validate.__version__} bundles schemas from {BUNDLED[0]} on, so its objects are "
                    f"checked against {CHECKED_VERSIONS[0]}..{CHECKED_VERSIONS[-1]} only")
    if c.version > _mm(BUNDLED[-1]):
        pytest.skip(f"the cluster runs {c.version[0]}.{c.version[1]}, newer than kubernetes-validate "
                    f"{kubernetes_validate.__version__} knows; checked against {BUNDLED[-1]} as the nearest")
    assert f"{c.version[0]}.{c.version[1]}.0" in versions_for(c)


def test_variants_exercise_what_they_claim():
    """Guards the variant builders: if the package stopped honouring a setting, the variant would silently
    duplicate a stack and its schema check would prove nothing new."""
    def doc(case_name, kind, name):
        found = [d for d in case(case_name).objects.values() if d["kind"] == kind and d["metadata"]["name"] == name]
        assert len(found) == 1, (case_name, kind, name)
        return found[0]

    def requests(case_name, name):
        return doc(case_name, "Deployment", name)["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]

    assert "nvidia.com/mig-1g.5gb" in requests("local-mig-mixed", "echo-gpu")
    assert "nvidia.com/gpu" in requests("local-mig-single", "echo-gpu")
    assert not any(k.startswith("nvidia.com/mig-") for k in requests("local-mig-single", "echo-gpu"))
    v2beta2 = doc("staging-k8s-1.22", "HorizontalPodAutoscaler", "bert-intent-detection")
    assert v2beta2["apiVersion"] == "autoscaling/v2beta2" and "behavior" in v2beta2["spec"]
    assert versions_for(case("staging-k8s-1.22"), v2beta2) == ["1.25.0"]
    assert doc("staging-k8s-1.22-v2beta1", "HorizontalPodAutoscaler", "bert-intent-detection")["apiVersion"] == \
        "autoscaling/v2beta1"
    svc = doc("staging-public-lb", "Service", "bert-intent-detection")
    assert svc["spec"]["type"] == "LoadBalancer"
    assert "intranet" not in json.dumps(svc.get("metadata", {}).get("annotations", {}))
    assert any(k.startswith("aliyun.com/gpu-core") for k in requests("dev-cgpu-core-mem", "bert-intent-detection"))


def test_patch_validation_is_still_strict():
    """Dropping ``required`` must not let misspelled or mistyped fields through."""
    good = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "x", "namespace": "y"},
            "spec": {"template": {"spec": {"tolerations": [{"key": "k", "operator": "Exists"}]}}}}
    version = CHECKED_VERSIONS[-1]
    assert schema_error(good, version, patch=True) is None
    assert schema_error(good, version) is not None  # a full DaemonSet does need selector and containers
    typo = copy.deepcopy(good)
    typo["spec"]["template"]["spec"]["toleration"] = typo["spec"]["template"]["spec"].pop("tolerations")
    assert "toleration" in schema_error(typo, version, patch=True)
    wrong_type = copy.deepcopy(good)
    wrong_type["spec"]["template"]["spec"]["tolerations"] = {"key": "k"}
    assert "tolerations" in schema_error(wrong_type, version, patch=True)


def test_builtin_validation_is_strict():
    deployment = next(d for d in case("prod").objects.values() if d["kind"] == "Deployment")
    typo = copy.deepcopy(deployment)
    typo["spec"]["template"]["spec"]["nodeSelectors"] = typo["spec"]["template"]["spec"].pop("nodeSelector", {})
    err = schema_error(typo, CHECKED_VERSIONS[-1])
    assert err is not None and "nodeSelectors" in err


# ---------------------------------------------------------------------------------------------- CRD kinds
def dropped_fields(written, kept, path: str = "") -> list[str]:
    """Fields of ``written`` the model did not keep, or kept with another value or type."""
    if isinstance(written, dict):
        if not isinstance(kept, dict):
            return [f"{path or '(root)'}: wrote an object, model kept {kept!r}"]
        out = []
        for key, value in written.items():
            sub = f"{path}.{key}" if path else key
            if key not in kept:
                out.append(f"{sub}: not a field of the CRD schema (dropped by the model)")
            else:
                out += dropped_fields(value, kept[key], sub)
        return out
    if isinstance(written, list):
        if not isinstance(kept, list) or len(kept) != len(written):
            return [f"{path}: wrote {len(written)} items, model kept {kept!r}"]
        return [e for i, (w, k) in enumerate(zip(written, kept)) for e in dropped_fields(w, k, f"{path}[{i}]")]
    if type(written) is not type(kept) or written != kept:
        return [f"{path}: wrote {written!r}, model kept {kept!r}"]
    return []


def _loc(loc: tuple) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".") or "(root)"


def crd_errors(doc: dict) -> list[str]:
    model = crd_model(doc.get("apiVersion"), doc.get("kind"))
    if model is None:
        return [f"no CRD model for {doc.get('apiVersion')} {doc.get('kind')}; add it to CRD_KINDS"]
    try:
        parsed = model.model_validate(doc)
    except pydantic.ValidationError as exc:
        return [f"{_loc(e['loc'])}: {e['msg']}" for e in exc.errors()]
    kept = parsed.model_dump(mode="json", by_alias=True, exclude_unset=True, exclude_none=True)
    return dropped_fields(doc, kept)


@pytest.mark.xdist_group("crd-models")  # one worker builds the models
@pytest.mark.parametrize("case_name,filename", _params(crd=True))
def test_crd_object_matches_upstream_crd(case_name, filename):
    doc = case(case_name).objects[filename]
    errors = crd_errors(doc)
    assert not errors, f"{_label(doc)} ({filename}, case {case_name}):\n  " + "\n  ".join(errors)


def test_every_crd_kind_is_covered():
    """Each CRD kind we model appears in some case, so none of the models above goes unexercised."""
    seen = {(d["apiVersion"], d["kind"]) for name in CASES for d in case(name).objects.values()}
    assert set(CRD_KINDS) <= seen, sorted(set(CRD_KINDS) - seen)


def _first(kind: str) -> dict:
    return copy.deepcopy(next(d for name in CASES for d in case(name).objects.values() if d["kind"] == kind))


@pytest.mark.xdist_group("crd-models")
def test_crd_check_rejects_misspelled_field():
    pod_monitor = _first("PodMonitor")
    assert crd_errors(pod_monitor) == []
    pod_monitor["spec"]["podMetricsEndpoint"] = pod_monitor["spec"].pop("podMetricsEndpoints")
    assert crd_errors(pod_monitor) == ["spec.podMetricsEndpoint: not a field of the CRD schema (dropped by the model)"]


@pytest.mark.xdist_group("crd-models")
def test_crd_check_rejects_misspelled_nested_field():
    scaled = _first("ScaledObject")
    scaled["spec"]["triggers"][0]["metricTyp"] = scaled["spec"]["triggers"][0].pop("metricType", "AverageValue")
    assert crd_errors(scaled) == ["spec.triggers[0].metricTyp: not a field of the CRD schema (dropped by the model)"]


@pytest.mark.xdist_group("crd-models")
def test_crd_check_rejects_wrong_type():
    rule = _first("PrometheusRule")
    rule["spec"]["groups"][0]["rules"] = {"alert": "x"}
    assert crd_errors(rule)


# ---------------------------------------------------------------------------------------------- API-server rules
# stack files of the examples (examples/reuse is a project of its own, planned by the reuse tests)
EXAMPLE_STACKS = sorted(p for p in (REPO / "examples").glob("*/Pulumi.*.yaml") if p.parent.name != "reuse")


def _authored_objects(raw: dict, name: str) -> list[dict]:
    load(raw)
    files = manifest_files(synthesize(stack_config_from_namespace(raw), stack=name))
    return [doc for f, doc in files.items() if not f.startswith("helmrelease-")]


@pytest.mark.parametrize("source", sorted(CASES) + [str(p.relative_to(REPO)) for p in EXAMPLE_STACKS])
def test_the_api_server_rules_accept_every_object_we_author(source):
    """The semantic rules `check --manifests` applies (gpuplatform.apiserver: quantities, whole extended
    resources with equal limits, unique names, ports and mount paths), over every object of every stack, variant
    and example; the strict schemas are the tests above."""
    from gpuplatform.apiserver import semantic_rejections

    raw = CASES[source]() if source in CASES else copy.deepcopy(namespace_from_stack_file(REPO / source))
    objects = _authored_objects(raw, source.replace("/", "-"))
    assert objects
    found = [f"{_label(doc)}: {r.render()}" for doc in objects for r in semantic_rejections(doc)]
    assert found == []
