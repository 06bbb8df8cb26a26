"""The runner's plain wire (gpuplatform.wire) against the SDK's: the same properties, the same violations, and a
check of plain manifests that never imports the Pulumi SDK."""
import datetime
import json
import math
import subprocess
import sys

import pytest
from google.protobuf import json_format, struct_pb2

from gpuplatform.check import as_policy_sees, read_manifests, run_policies, with_strict
from gpuplatform.policies.pack import POLICY_DEFS
from gpuplatform.records import RegisteredResource
from gpuplatform.wire import SIGNATURE_KEY, UNKNOWN_SENTINELS, NotPlain, PropertyList, PropertyMap, as_received
from live_state import live_outputs
from support import REPO, STACKS

FIXTURES = REPO / "tests" / "fixtures"
MANIFEST_DIRS = ("corpus", "k8s_api", "seed_manifests")
SDK_MODULES = ("pulumi", "pulumi_policy", "grpc", "google.protobuf", "opentelemetry")


def _through_protobuf(value):
    """``{"v": value}`` through a Struct as pulumi-policy's ``Analyze`` decodes it (MessageToDict)."""
    struct = struct_pb2.Struct()
    struct.update({"v": value})
    return json_format.MessageToDict(struct)["v"]


def _plain(value):
    """A received value as plain Python, views unwrapped: what the two paths are compared on."""
    if isinstance(value, PropertyMap) or type(value).__name__ == "_DictProxy":
        return {k: _plain(value[k]) for k in value}
    if isinstance(value, PropertyList) or type(value).__name__ == "_ListProxy":
        return [_plain(value[i]) for i in range(len(value))]
    return value


def _same(a, b) -> bool:
    """Equal values of equal types all the way down (``1 == 1.0`` and ``True == 1`` would hide the encoding)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(sorted(a)) == list(sorted(b)) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and math.copysign(1, a) != math.copysign(1, b):
        return False  # -0.0 stays -0.0
    return a == b


PLAIN_VALUES = [
    0, 1, -3, 80, 2 ** 31, 2 ** 53, 2 ** 53 + 1, 2 ** 53 + 3, 2 ** 63 - 1, 2 ** 64 + 1, 123456789012345678901,
    10 ** 300, 0.5, -0.0, 1e-300, 1.7976931348623157e308, True, False, None, "", "x", "ünïcode ✓", "80",
    "04da6b54", (1, "a", None), [], {}, [None, [None, {"a": None}]], {"a": {"b": [1, {"c": (2.5, False)}]}},
    {"": 1, "nvidia.com/gpu": 1, "ключ": "значение"},
]


@pytest.mark.parametrize("value", PLAIN_VALUES, ids=lambda v: repr(v)[:40])
def test_plain_values_arrive_as_through_protobuf(value):
    """Ints arrive as doubles (rounded above 2**53), bools as bools, nulls kept, tuples as lists, nested maps."""
    received = _plain(as_received({"v": value})["v"])
    assert _same(received, _through_protobuf(value)), (received, _through_protobuf(value))
    assert _same(received, _plain(as_policy_sees({"v": value})["v"]))


def test_numbers_lose_precision_as_doubles_do():
    assert as_received({"n": 2 ** 53 + 1})["n"] == 2.0 ** 53
    assert type(as_received({"n": 3})["n"]) is float and as_received({"b": True})["b"] is True


REFUSED = [float("nan"), float("inf"), -float("inf"), 10 ** 400, b"bytes", datetime.date(2024, 5, 1), object(),
           {1: "int key"}, {SIGNATURE_KEY: "1b47061264138c4ac30d75fd1eb44270", "value": "s3cret"}, "\ud800",
           {"\ud800": 1}, *sorted(UNKNOWN_SENTINELS)]


@pytest.mark.parametrize("value", REFUSED, ids=[f"{i}-{type(v).__name__}" for i, v in enumerate(REFUSED)])
def test_what_the_plain_wire_refuses_the_sdk_treats_otherwise(value):
    """Every refusal is a value protobuf refuses, or one the SDK decodes into something else than itself (a
    secret unwrapped, an unknown that raises when read)."""
    with pytest.raises(NotPlain):
        as_received({"v": value})
    try:
        seen = as_policy_sees({"v": value})
    except Exception:  # noqa: BLE001 - protobuf refuses it (ValueError, TypeError, OverflowError, UnicodeError)
        return
    try:
        decoded = seen["v"]
    except Exception as exc:  # the unknown-checking proxy raises on reading a sentinel
        assert type(exc).__name__ == "UnknownValueError"
        return
    assert _plain(decoded) != value


def test_the_sentinels_and_the_signature_key_are_the_sdks():
    from pulumi_policy import deserialize, proxy

    sdk_sentinels = {getattr(proxy, n) for n in dir(proxy) if n.startswith("UNKNOWN_") and n.endswith("_VALUE")}
    assert UNKNOWN_SENTINELS == sdk_sentinels
    assert SIGNATURE_KEY == deserialize.SPECIAL_SIG_KEY


def test_received_maps_and_lists_are_views_like_the_proxies():
    seen = as_received({"spec": {"ports": [{"port": 80}]}})
    ports = seen["spec"]["ports"]
    assert not isinstance(seen, dict) and not isinstance(ports, list)
    assert seen.get("missing") is None and "spec" in seen and ports[0]["port"] == 80.0
    assert type(ports[:1]) is list  # a slice is a plain list, as a slice of the SDK's list proxy is
    sdk_ports = as_policy_sees({"spec": {"ports": [{"port": 80}]}})["spec"]["ports"]
    assert (ports == [{"port": 80.0}]) == (sdk_ports == [{"port": 80.0}]) is False
    with pytest.raises(TypeError):
        seen["spec"]["replicas"] = 3  # one decoded copy is shared by every policy


# ------------------------------------------------------------------------------------------------ violations
def _manifest_sets():
    sets = [(f"{d}/{p.name}", [p]) for d in MANIFEST_DIRS for p in sorted((FIXTURES / d).rglob("*"))
            if p.suffix in (".yaml", ".yml", ".json") and p.name != "verdicts.yaml"]
    return sets + [(f"{d}/ (all at once)", [FIXTURES / d]) for d in MANIFEST_DIRS]


def _both_ways(resources, config=None, **kw):
    plain = run_policies(resources, config, wire="plain", **kw)
    sdk = run_policies(resources, config, wire="protobuf", **kw)
    key = lambda v: (v.policy_id, v.resource_type, v.resource_name, v.message, v.level)  # noqa: E731
    return sorted(plain, key=key), sorted(sdk, key=key)


def test_every_manifest_of_the_corpora_gets_the_same_violations_both_ways():
    checked = findings = 0
    for name, paths in _manifest_sets():
        read = read_manifests(paths)
        if not read.resources:
            continue
        for config in (None, with_strict(None)):
            plain, sdk = _both_ways(read.resources, config)
            assert plain == sdk, name
            findings += len(plain)
        checked += 1
    assert checked >= 80 and findings >= 300, (checked, findings)  # the corpora, not an empty directory, were compared


def test_numbers_at_the_edges_of_a_double_get_the_same_violations_both_ways(tmp_path):
    """A pod and its HPA whose numbers a double cannot hold exactly, or that are written as floats, nulls and
    strings: the policies read them as the CLI hands them over."""
    doc = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "edge", "namespace": "inference",
                                                                       "labels": None},
           "spec": {"replicas": 2 ** 53 + 1, "selector": {"matchLabels": {"app": "edge"}},
                    "template": {"metadata": {"labels": {"app": "edge"}}, "spec": {"containers": [{
                        "name": "server", "image": "nvcr.io/nvidia/tritonserver:24.05-py3",
                        "ports": [{"containerPort": 8000.0}, {"containerPort": 8002}],
                        "resources": {"limits": {"nvidia.com/gpu": 1.0}, "requests": {"nvidia.com/gpu": "1"}},
                        "securityContext": {"runAsUser": 2 ** 63, "privileged": None}}]}}}}
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
           "metadata": {"name": "edge", "namespace": "inference"},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "edge"},
                    "minReplicas": 3.0, "maxReplicas": 2 ** 53 + 1,
                    "metrics": [{"type": "Pods", "pods": {"metric": {"name": "nv_inference_queue_duration_us"},
                                                          "target": {"type": "AverageValue",
                                                                     "averageValue": 100}}}]}}
    (tmp_path / "edge.yaml").write_text(json.dumps(doc) + "\n---\n" + json.dumps(hpa) + "\n")
    resources = read_manifests([tmp_path]).resources
    plain, sdk = _both_ways(resources)
    assert plain == sdk and plain


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_gets_the_same_violations_both_ways(stack_records, stack):
    """What a stack registers, as a first and as a second preview's AnalyzeStack receives it."""
    records = stack_records(stack)
    for state in ({}, {"stack_state": live_outputs(records)}):
        plain, sdk = _both_ways(records, with_strict(None), **state)
        assert plain == sdk


def test_auto_takes_the_sdk_where_a_value_is_unknown_and_for_remediation():
    from pulumi_policy.proxy import UNKNOWN_NUMBER_VALUE

    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
           "spec": {"minReplicas": 1, "maxReplicas": UNKNOWN_NUMBER_VALUE,
                    "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}}}
    unknown = [RegisteredResource("kubernetes:autoscaling/v2:HorizontalPodAutoscaler", "h", hpa)]
    with pytest.raises(NotPlain):
        run_policies(unknown, wire="plain")
    assert [v.level for v in run_policies(unknown) if "during preview" in v.message]
    remediating = {p.id: "remediate" for p in POLICY_DEFS if p.remediable}
    with pytest.raises(ValueError, match="remediation"):
        run_policies([], remediating, wire="plain")


# ------------------------------------------------------------------------------------------------ imports
def test_checking_plain_manifests_imports_no_pulumi_sdk(tmp_path):
    """`gpuplatform check --manifests` of plain YAML runs without the SDK, gRPC or protobuf (their import was most
    of its start-up): the CLI's whole one-shot path, in a fresh interpreter."""
    manifest = FIXTURES / "corpus" / "06_triton_autoscaled.yaml"
    probe = ("import sys\n"
             "from gpuplatform.cli import entrypoint\n"
             "sys.argv = ['gpuplatform', 'check', '--manifests', sys.argv[1]]\n"
             "try:\n"
             "    entrypoint()\n"
             "except SystemExit as exit:\n"
             "    code = exit.code\n"
             f"print(sorted(m for m in sys.modules if m.split('.')[0] in {SDK_MODULES!r} "
             f"or m.startswith({SDK_MODULES!r})), code)\n")
    proc = subprocess.run([sys.executable, "-c", probe, str(manifest)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    *report, last = proc.stdout.strip().splitlines()
    assert f"checked {len(POLICY_DEFS)} policies and the API server's checks on 6 objects from 1 file" in report[-1], \
        report  # it ran
    assert last.split(" ")[0] == "[]", last


def test_the_pack_objects_are_built_once_and_carry_the_declaration():
    """The lazily built ``pulumi_policy`` objects: what the analyzer tells the CLI about each policy is its
    declaration (name, description, level, severity, tag, remediation, config schema)."""
    from pulumi_policy import EnforcementLevel
    from pulumi_policy.policy import _PolicyAnalyzerServicer

    from gpuplatform.policies.pack import ALL_POLICIES, PACK_NAME

    from pulumi.runtime.proto import analyzer_pb2

    assert all(p.policy is ALL_POLICIES[i] for i, p in enumerate(POLICY_DEFS))
    info = _PolicyAnalyzerServicer(PACK_NAME, "0.0.1", ALL_POLICIES, EnforcementLevel.ADVISORY).GetAnalyzerInfo(
        None, None)
    assert len(info.policies) == len(POLICY_DEFS)
    for served, pdef in zip(info.policies, POLICY_DEFS):
        assert (served.name, served.description) == (pdef.id, pdef.description)
        assert analyzer_pb2.EnforcementLevel.Name(served.enforcementLevel).lower() == pdef.level.value
        assert analyzer_pb2.PolicySeverity.Name(served.severity) == f"POLICY_SEVERITY_{pdef.severity.value.upper()}"
        assert analyzer_pb2.PolicyType.Name(served.policy_type) == f"POLICY_TYPE_{pdef.scope.upper()}"
        assert list(served.tags) == [pdef.category] and served.remediation_steps == pdef.remediation
        schema = json_format.MessageToDict(served.configSchema.properties)
        assert _same(schema, _plain(as_received(json.loads(json.dumps(pdef.config))))), pdef.id
