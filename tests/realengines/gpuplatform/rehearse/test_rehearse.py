"""``gpuplatform rehearse`` on the stacks and examples the issue names: the real Pulumi engine and kubernetes
provider run the package's own program against the local control plane; every object applied, every pod placed by
kube-scheduler, every Deployment available, the second ``up`` a no-op and ``destroy`` leaving nothing but the
charts' CRDs, which Helm keeps by design."""
import json

import pytest

from gpuplatform.chart_render import charts_dir
from gpuplatform.components.stack_config import namespace_from_stack_file
from gpuplatform.components.validation import load
from gpuplatform.rehearse.run import rehearse
from support import REPO

REHEARSED = {
    "local": REPO / "stacks" / "Pulumi.local.yaml",
    "prod": REPO / "stacks" / "Pulumi.prod.yaml",
    "005-vllm-queue": REPO / "examples" / "005-vllm-queue" / "Pulumi.005-vllm-queue.yaml",
    "003-triton-mig": REPO / "examples" / "003-triton-mig" / "Pulumi.003-triton-mig.yaml",
    # the warm set's holder (one GPU and its host memory), policies and waker (RBAC) applied and placed too
    "007-warm-set": REPO / "examples" / "007-warm-set" / "Pulumi.007-warm-set.yaml",
}


@pytest.mark.parametrize("stack", sorted(REHEARSED))
def test_the_stack_rehearses_clean(engines, stack, record_property):
    if charts_dir().path is None:
        pytest.fail("the rehearsal installs the pinned charts from GPUPLATFORM_CHARTS_DIR, which is not set")
    raw = namespace_from_stack_file(REHEARSED[stack])
    report = rehearse(raw, stack, load(raw), engines=engines)
    record_property("figures", " | ".join(f"{s.name}: {'ok' if s.ok else 'FAILED'} {s.seconds:.0f} s"
                                          for s in report.steps))
    assert report.ok, report.text()
    names = [s.name for s in report.steps]
    assert names[-3:] == ["every pod scheduled, every Deployment available", "second up changes nothing",
                          "destroy leaves nothing"]
    assert report.applied.get("create", 0) > 10
    assert report.pods["scheduled"] == report.pods["total"] > 0 and not report.pods["unschedulable"]
    assert all(d["available"] >= d["desired"] for d in report.deployments)
    assert any(a.startswith(("HorizontalPodAutoscaler", "ScaledObject")) for a in report.autoscalers)
    if stack == "007-warm-set":  # the holder (its GPU and memory placed) and the waker, both available
        held = {d["deployment"]: (d["available"], d["desired"]) for d in report.deployments
                if "warm-set-l20" in d["deployment"]}
        assert sorted(held.values()) == [(1, 1), (1, 1)] and len(held) == 2, report.deployments
    assert report.second_up_changes == {} and report.left_after_destroy == []
    assert json.loads(report.as_json())["ok"] is True
