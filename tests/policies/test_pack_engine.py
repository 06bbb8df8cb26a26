"""The pack under the engine's rules: stack policies see outputs (a component's are only what it registered),
resource policies see inputs, for the first preview and for every preview after a deployment.

Each stack is the real program synthesized offline (its components really call ``register_outputs``); the
second preview's outputs are the live objects of :mod:`live_state`. See docs/policies.md, "What the policies see".
"""
import copy
import dataclasses

import pytest

from gpuplatform.check import as_policy_sees, first_preview_outputs, run_policies
from gpuplatform.policies.pack import POLICY_DEFS
from gpuplatform.policies.registry import by_id
from live_state import live_outputs
from support import STACKS

STACK_POLICIES = [p for p in POLICY_DEFS if p.scope == "stack"]
PLATFORM = "gpuplatform:index:GpuPlatform"
POOL = "gpuplatform:index:GpuNodePool"


def _records(stack_records, stack):
    return copy.deepcopy(stack_records(stack))


def _previews(records, policies=STACK_POLICIES):
    """(first preview, second preview) violations of ``policies``."""
    return (run_policies(records, policies=policies, stack_state=first_preview_outputs),
            run_policies(records, policies=policies, stack_state=live_outputs(records)))


@pytest.mark.parametrize("stack", STACKS)
def test_stack_policies_pass_on_registered_outputs_first_and_second_preview(stack_records, stack):
    records = _records(stack_records, stack)
    first, second = _previews(records)
    assert first == [] and second == [], [v.message for v in first + second]


@pytest.mark.parametrize("stack", STACKS)
def test_components_register_what_the_stack_policies_read(stack_records, stack):
    """Without register_outputs a component is an empty map to AnalyzeStack: the pool lookup fails and every GPU
    workload is reported as unplaced (the defect the registered outputs fix)."""
    records = _records(stack_records, stack)
    platform = next(r for r in records if r.type == PLATFORM)
    assert {"environment", "kubernetesVersion", "allowPublicEndpoints"} <= set(platform.outputs)
    for pool in (r for r in records if r.type == POOL):
        assert {"poolName", "nodeSelector", "tolerations", "sharingMode", "resourceName", "gpuModel",
                "gpusPerNode", "maxNodes"} <= set(pool.outputs), pool.name
    unregistered = [dataclasses.replace(r, outputs=None) if not r.custom else r for r in records]
    placement = run_policies(unregistered, policies=[by_id("gpu-pod-placement")])
    deployments = [r for r in records if r.inputs.get("kind") == "Deployment"]
    assert deployments and len(placement) == len(deployments)
    assert all("names none of the pools" in v.message for v in placement)


@pytest.mark.parametrize("policy_id,mutate", [
    ("adapter-high-availability", lambda r: r.inputs["values"].update(replicas=1)),
    ("adapter-release-tls", lambda r: r.inputs["values"].pop("certManager")),
])
def test_prod_only_policies_run_under_the_engine(stack_records, policy_id, mutate):
    """The environment comes from the platform's registered outputs, so prod-only policies still run."""
    records = _records(stack_records, "prod")
    adapter = next(r for r in records if r.type == "kubernetes:helm.sh/v3:Release"
                   and r.inputs.get("chart") == "prometheus-adapter")
    mutate(adapter)
    first, second = _previews(records, [by_id(policy_id)])
    # at the policy's own level (adapter-high-availability is hardening: advisory unless --strict)
    assert len(first) == 1 and len(second) == 1 and first[0].level == by_id(policy_id).level.value, first + second
    # and only because the platform says prod: the same release in staging is not judged
    platform = next(r for r in records if r.type == PLATFORM)
    platform.outputs = {**platform.outputs, "environment": "staging"}
    assert _previews(records, [by_id(policy_id)]) == ([], [])


def test_live_objects_carry_replicas_and_defaults(stack_records):
    """The second preview's outputs really are live objects: replicas set by the HPA, API server defaults."""
    records = _records(stack_records, "prod")
    state = live_outputs(records)
    dep = next(r for r in records if r.inputs.get("kind") == "Deployment")
    assert "replicas" not in dep.inputs["spec"]
    live = state(dep)
    assert live["spec"]["replicas"] >= 2 and live["status"]["readyReplicas"] == live["spec"]["replicas"]
    assert live["spec"]["template"]["spec"]["dnsPolicy"] == "ClusterFirst"
    hpa = next(r for r in records if r.inputs.get("kind") == "HorizontalPodAutoscaler")
    assert "status" in state(hpa)


def test_autoscaled_replicas_are_judged_on_inputs_not_live_state(stack_records):
    records = _records(stack_records, "prod")
    pdef = by_id("deployment-no-replicas-with-autoscaler")
    assert pdef.scope == "resource"
    # every preview after the first: the live Deployment has spec.replicas, the authored one does not
    assert run_policies(records, policies=[pdef]) == []
    dep = next(r for r in records if r.inputs.get("kind") == "Deployment")
    hpa = next(r for r in records if r.inputs.get("kind") == "HorizontalPodAutoscaler")
    dep.inputs["spec"]["replicas"] = 3
    for order in ([dep, hpa], [hpa, dep]):  # the engine analyzes one resource at a time, in any order
        out = run_policies(order, policies=[pdef])
        assert len(out) == 1 and "replicas=3" in out[0].message and out[0].resource_name == order[1].name, out


def test_policies_get_numbers_as_the_wire_sends_them(stack_records):
    """Struct values are doubles (pulumi-policy ``policy.py`` decodes with ``json_format.MessageToDict``): a policy
    that compared an integer field as text missed ``maxUnavailable: 0`` under the CLI."""
    assert as_policy_sees({"spec": {"maxUnavailable": 0}})["spec"]["maxUnavailable"] == 0.0
    assert isinstance(as_policy_sees({"n": 3})["n"], float)
    records = _records(stack_records, "prod")
    pdb = next(r for r in records if r.inputs.get("kind") == "PodDisruptionBudget")
    pdb.inputs["spec"] = {k: v for k, v in pdb.inputs["spec"].items() if k != "minAvailable"}
    pdb.inputs["spec"]["maxUnavailable"] = 0
    out = run_policies([pdb], policies=[by_id("pdb-allows-disruption")])
    assert len(out) == 1 and "sets maxUnavailable 0: no voluntary disruption" in out[0].message, out
