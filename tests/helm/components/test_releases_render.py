"""Every Helm release of every stack (and of the configurations no stack takes), rendered by the real Helm engine
at the stack's Kubernetes version, must be what that cluster accepts."""
import copy
import functools
import json
from dataclasses import dataclass

import jsonschema
import kubernetes_validate
import pytest
from kubernetes_validate import utils as kv_utils

import helm_engine
from gpuplatform.catalogs.versions import CHARTS
from gpuplatform.components.releases import chart_releases
from rendered import CONFIGS, NOT_PUBLIC, PIN_VARIANTS

CONFIG_NAMES = list(CONFIGS)


@pytest.fixture(scope="module", autouse=True)
def cached_schema_files():
    """kubernetes-validate re-reads its 1.3 MB definitions file on every call; read each file once."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(kv_utils, "schema_contents", functools.lru_cache(maxsize=None)(kv_utils.schema_contents))
        yield


@pytest.mark.parametrize("name", CONFIG_NAMES)
def test_every_release_renders_with_its_pinned_chart(rendered, name):
    stack = rendered(name)
    expected = {CHARTS[k].release for k in chart_releases(stack.cfg)}
    assert set(stack.releases) | set(stack.unrendered) == expected
    assert all(CHARTS[r].name in NOT_PUBLIC for r in stack.unrendered), stack.unrendered
    for rel in stack.releases.values():
        assert rel.objects, f"{rel.name} rendered nothing"
        assert all(isinstance(doc, dict) and doc.get("kind") for _, doc in rel.objects), rel.name


# ---------------------------------------------------------------------------------------------- validity
def _strict(schema):
    """A CRD's structural schema as the API server applies it with strict field validation (kubectl's default,
    and server-side apply): fields the schema does not declare are errors unless it preserves unknown fields."""
    if isinstance(schema, list):
        return [_strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _strict(v) for k, v in schema.items()}
    if (out.get("type") == "object" and "properties" in out and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")):
        out["additionalProperties"] = False
    if out.get("nullable"):
        out.pop("nullable")
        if isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]
    if out.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    return out


def as_stored(schema: dict | None, value):
    """A custom resource as the API server validates it: nulls of fields the schema does not mark ``nullable``
    pruned, then the schema's defaults applied (kubernetes.io, "Versions in CustomResourceDefinitions" /
    "Defaulting and Nullable"; apiextensions-apiserver ``pkg/apiserver/schema/defaulting``, ``prunenulls.go`` and
    ``algorithm.go``). A required field with a default is then present: the GPU Operator v25.10 CRD requires
    ``spec.operator.defaultRuntime`` and defaults it to ``docker``, and the chart does not render it."""
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties") if isinstance(schema.get("additionalProperties"), dict) else None
        out = {}
        for key, item in value.items():
            sub = props.get(key, extra)
            if item is None and sub is not None and not sub.get("nullable"):
                continue
            out[key] = as_stored(sub, item)
        for key, sub in props.items():
            if key not in out and "default" in sub:
                out[key] = as_stored(sub, copy.deepcopy(sub["default"]))
        return out
    if isinstance(value, list):
        return [as_stored(schema.get("items"), item) for item in value]
    return value


@dataclass
class CrdSchema:
    schema: dict
    validator: jsonschema.protocols.Validator

    def errors(self, doc: dict) -> list:
        stored = as_stored(self.schema, doc)
        return sorted(self.validator.iter_errors(stored), key=lambda e: list(map(str, e.absolute_path)))


def crd_validators(crds: list[dict]) -> dict[tuple[str, str], CrdSchema]:
    out = {}
    for crd in crds:
        spec = crd["spec"]
        for version in spec["versions"]:
            schema = (version.get("schema") or {}).get("openAPIV3Schema")
            if version.get("served", True) and schema:
                out[(f"{spec['group']}/{version['name']}", spec["names"]["kind"])] = \
                    CrdSchema(schema, jsonschema.Draft7Validator(_strict(schema)))
    return out


def test_custom_resources_are_checked_after_null_pruning_and_defaulting():
    schema = {"type": "object", "required": ["runtime", "name"], "properties": {
        "runtime": {"type": "string", "default": "docker"},
        "name": {"type": "string"},
        "label": {"type": "string"},
        "note": {"type": "string", "nullable": True},
        "items": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer", "default": 1}}}}}}
    crd = CrdSchema(schema, jsonschema.Draft7Validator(_strict(schema)))
    assert as_stored(schema, {"name": "a", "label": None, "note": None, "items": [{}]}) == \
        {"name": "a", "note": None, "items": [{"n": 1}], "runtime": "docker"}
    assert crd.errors({"name": "a", "label": None}) == []
    assert [e.message for e in crd.errors({"label": "x"})] == ["'name' is a required property"]
    assert crd.errors({"name": "a", "extra": 1}), "unknown fields stay errors (strict field validation)"


_BUILTIN: dict[tuple[str, str], str | None] = {}


def builtin_error(doc: dict, version: str) -> str | None:
    key = (json.dumps(doc, sort_keys=True), version)
    if key not in _BUILTIN:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
            _BUILTIN[key] = None
        except kubernetes_validate.ValidationError as exc:
            path = ".".join(str(p) for p in exc.absolute_path) or "(root)"
            _BUILTIN[key] = f"{path}: {exc.message}"
        except kubernetes_validate.SchemaNotFoundError:
            _BUILTIN[key] = "no such apiVersion/kind in this Kubernetes version"
    return _BUILTIN[key]


def _label(origin: str, doc: dict) -> str:
    meta = doc.get("metadata") or {}
    return f"{origin} {doc.get('apiVersion')} {doc.get('kind')} {meta.get('namespace', '')}/{meta.get('name')}"


@pytest.mark.parametrize("name", CONFIG_NAMES + list(PIN_VARIANTS))
def test_rendered_and_authored_objects_are_valid_for_the_cluster(rendered, name):
    """Built-in kinds against the strict OpenAPI schemas of the stack's own Kubernetes minor; custom resources
    (the charts' and ours) against the CRDs the stack's charts install; a kind neither knows fails."""
    stack = rendered(name)
    version = f"{stack.minor[0]}.{stack.minor[1]}.0"
    custom = crd_validators(stack.crds())
    errors = []
    for origin, doc in stack.all_objects():
        key = (doc["apiVersion"], doc["kind"])
        if key in custom:
            problems = custom[key].errors(doc)
            errors += [f"{_label(origin, doc)}: {'.'.join(map(str, e.absolute_path))}: {e.message}"
                       for e in problems[:3]]
        elif (err := builtin_error(doc, version)) is not None:
            errors.append(f"{_label(origin, doc)}: {err}")
    assert not errors, f"{len(errors)} objects rejected at Kubernetes {version}:\n" + "\n".join(errors)


@pytest.mark.parametrize("name", CONFIG_NAMES + list(PIN_VARIANTS))
def test_every_served_api_version_is_one_the_cluster_serves(rendered, name):
    """What a chart chose from .Capabilities must exist in the cluster: built-ins of the minor or installed CRDs."""
    stack = rendered(name)
    wrong = {(doc["apiVersion"], doc["kind"]) for _, doc in stack.all_objects()
             if f"{doc['apiVersion']}/{doc['kind']}" not in stack.api_versions}
    assert not wrong, sorted(wrong)


def test_render_options_change_the_output(charts):
    """Guards the private render entry point: with the capabilities given, prometheus-adapter's APIService is
    apiregistration.k8s.io/v1; with Helm's offline defaults it is the removed v1beta1."""
    path = charts.archive("prometheus-adapter", CHARTS["prometheus-adapter"].version)
    builtins = helm_engine.builtin_api_versions((1, 35))
    assert "apiregistration.k8s.io/v1" in builtins and "extensions/v1beta1" not in builtins

    def api_service(api_versions):
        out = helm_engine.render(path, {}, release="a", namespace="m", kube_version="v1.35.0",
                                 api_versions=api_versions)
        return next(d for _, d in helm_engine.objects(out) if d["kind"] == "APIService")["apiVersion"]

    assert api_service(builtins) == "apiregistration.k8s.io/v1"
    assert api_service([]) == "apiregistration.k8s.io/v1beta1"
