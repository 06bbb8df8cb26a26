"""The offline runner: enforcement levels and config as the CLI applies them, preview unknowns, remediation,
manifest loading and output."""
import json

from pulumi_policy.proxy import UNKNOWN_NUMBER_VALUE

from gpuplatform.check import exit_code, format_json, format_table, load_manifests, run_policies
from gpuplatform.records import RegisteredResource
from gpuplatform.policies.registry import by_id
from policy_helpers import find, pod_spec, stack_resources
from support import REPO

LB = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "inference"},
      "spec": {"type": "LoadBalancer", "selector": {"app": "web"}, "ports": [{"name": "http", "port": 80}]}}


def _svc():
    return [RegisteredResource("kubernetes:core/v1:Service", "web", LB)]


def test_config_overrides_level_and_properties():
    assert [v.level for v in run_policies(_svc())] == ["mandatory"]
    assert run_policies(_svc(), {"service-no-public-loadbalancer": "disabled"}) == []
    assert [v.level for v in run_policies(_svc(), {"all": "advisory"})] == ["advisory"]
    assert run_policies(_svc(), {"service-no-public-loadbalancer": {"allowPublic": True}}) == []
    levels = run_policies(_svc(), {"all": "advisory", "service-no-public-loadbalancer": "mandatory"})
    assert [v.level for v in levels] == ["mandatory"]


def test_platform_outputs_allow_public_endpoints():
    registered = {"allowPublicEndpoints": True}
    platform = RegisteredResource("gpuplatform:index:GpuPlatform", "p", registered, custom=False, outputs=registered)
    assert run_policies(_svc() + [platform]) == []
    # the same value only as a constructor prop: the engine's AnalyzeStack never sees it
    unregistered = RegisteredResource("gpuplatform:index:GpuPlatform", "p", registered, custom=False)
    assert [v.policy_id for v in run_policies(_svc() + [unregistered])] == ["service-no-public-loadbalancer"]


def test_unknown_value_at_preview_becomes_advisory():
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
           "spec": {"minReplicas": 1, "maxReplicas": UNKNOWN_NUMBER_VALUE,
                    "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}}}
    out = run_policies([RegisteredResource("kubernetes:autoscaling/v2:HorizontalPodAutoscaler", "h", hpa)],
                       policies=[by_id("hpa-replica-bounds")])
    assert [(v.level, "during preview" in v.message) for v in out] == [("advisory", True)]


def test_remediation_fixes_what_it_safely_can():
    rs = stack_resources("prod")
    dep = find(rs, "Deployment")
    dep.inputs["spec"]["template"]["spec"]["containers"][0]["securityContext"].pop("allowPrivilegeEscalation")
    pdef = by_id("pod-no-privilege-escalation")
    assert pdef.remediable
    assert run_policies(rs, policies=[pdef])
    assert run_policies(rs, {"pod-no-privilege-escalation": "remediate"}, policies=[pdef]) == []
    requests = pod_spec(dep)["containers"][0]["resources"]["requests"]
    requests.update({k: "2" for k in requests if "/" in k})
    gpu = by_id("gpu-limit-equals-request")
    assert run_policies(rs, policies=[gpu])
    assert run_policies(rs, {"gpu-limit-equals-request": "remediate"}, policies=[gpu]) == []


def test_exemptions_are_narrow_and_configurable():
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "ops"},
          "spec": {"template": {"spec": {"containers": [{"name": "a", "image": "a:1",
                                                           "securityContext": {"privileged": True}}]}}}}
    r = [RegisteredResource("kubernetes:apps/v1:DaemonSet", "agent", ds)]
    pol = [by_id("pod-no-privileged")]
    assert run_policies(r, policies=pol)
    cfg = {"pod-no-privileged": {"exemptions": [{"namespace": "ops", "name": "agent"}]}}
    assert run_policies(r, cfg, policies=pol) == []
    assert run_policies(r, {"pod-no-privileged": {"exemptions": [{"namespace": "ops", "name": "x"}]}},
                        policies=pol)


def test_patches_are_not_judged_as_whole_pods():
    patch = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "exporter", "namespace": "kube-system"},
             "spec": {"template": {"spec": {"tolerations": [{"operator": "Exists"}]}}}}
    assert run_policies([RegisteredResource("kubernetes:apps/v1:DaemonSetPatch", "p", patch)]) == []


def test_load_manifests_handles_lists_helm_output_and_json(tmp_path):
    (tmp_path / "rendered.yaml").write_text(
        "---\n# Source: chart/templates/svc.yaml\n" + json.dumps(LB) + "\n---\n# empty\n---\n"
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: rbac.authorization.k8s.io/v1\n  kind: ClusterRole\n"
        "  metadata: {name: wide}\n  rules: [{apiGroups: ['*'], resources: ['*'], verbs: ['*']}]\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "obj.json").write_text(json.dumps({**LB, "metadata": {"name": "other"}}))
    rs = load_manifests([tmp_path])
    assert sorted((r.type, r.name) for r in rs) == [
        ("kubernetes:core/v1:Service", "inference/web"), ("kubernetes:core/v1:Service", "other"),
        ("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", "wide")]
    ids = {v.policy_id for v in run_policies(rs)}
    assert {"rbac-no-wildcards", "service-no-public-loadbalancer"} <= ids


def test_output_formats_and_exit_code():
    vs = run_policies(_svc())
    assert exit_code(vs) == 1 and exit_code([]) == 0
    assert exit_code(run_policies(_svc(), {"all": "advisory"})) == 0
    assert "service-no-public-loadbalancer" in format_table(vs) and "1 mandatory" in format_table(vs)
    assert format_table([]) == "No policy violations."
    data = json.loads(format_json(vs))
    assert data[0]["policy_id"] == "service-no-public-loadbalancer"
    assert data[0]["resource_type"] == "kubernetes:core/v1:Service"
    assert set(data[0]) == {"policy_id", "level", "resource_type", "resource_name", "message", "severity", "file",
                            "line"}


def test_docs_table_lists_every_policy_with_its_level():
    from gpuplatform.policies.pack import POLICY_DEFS
    doc = (REPO / "docs" / "policies.md").read_text()
    for p in POLICY_DEFS:
        row = next((line for line in doc.splitlines() if line.startswith(f"| `{p.id}` |")), None)
        assert row is not None, p.id
        assert f"| {p.severity.value} | {p.level.value}" in row, p.id


def test_sdk_servicer_accepts_the_pack():
    """The analyzer the CLI talks to builds its info (names, schemas, levels) from our policy objects."""
    from pulumi_policy import EnforcementLevel
    from pulumi_policy.policy import _PolicyAnalyzerServicer

    from gpuplatform.policies.pack import ALL_POLICIES, PACK_NAME
    servicer = _PolicyAnalyzerServicer(PACK_NAME, "0.0.1", ALL_POLICIES, EnforcementLevel.ADVISORY)
    info = servicer.GetAnalyzerInfo(None, None)
    assert len(info.policies) == len(ALL_POLICIES)
    assert {p.name for p in info.policies} == {p.name for p in ALL_POLICIES}


def test_docs_list_every_configurable_property_of_the_pack():
    from gpuplatform.policy_pack import config_reference
    doc = (REPO / "docs" / "policies.md").read_text()
    table = config_reference()
    assert table.count("\n") > 20 and table in doc
