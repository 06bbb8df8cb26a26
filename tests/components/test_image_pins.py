"""An image pinned by a digest without a tag names no server release: ``plan`` says which checks then take the
newest release, naming each config path; a digest after a tag, a tag alone, or a server without release-dependent
checks gets no note."""
import io
import sys

from gpuplatform.catalogs.metrics import pins_digest_only
from gpuplatform.components.image_pins import digest_notes, version_dependent_checks
from gpuplatform.components.validation import load
from gpuplatform.plan import run_plan
from support import stack_raw
from test_metrics_vllm import vllm_workload

DIGEST = "@sha256:" + "b" * 64


def test_only_a_digest_without_a_tag_counts_as_naming_no_release():
    assert pins_digest_only("vllm/vllm-openai" + DIGEST)
    assert pins_digest_only("registry.example:5000/team/vllm" + DIGEST)
    assert not pins_digest_only("vllm/vllm-openai:v0.9.2" + DIGEST)
    assert not pins_digest_only("registry.example:5000/team/vllm:v0.9.2")


def test_the_note_names_every_release_dependent_check_of_the_workload():
    raw = stack_raw("prod")
    vllm_workload("vllm/vllm-openai" + DIGEST, "vllm_requests_running", 24)(raw)
    (note,) = digest_notes(load(raw))
    assert "workloads[0].image" in note and "without a tag" in note
    assert "workloads[0].autoscaling.metrics[0] (vllm_requests_running, exported from vllm 0.2.3 on)" in note
    assert "--max-num-seqs" in note and "--gpu-memory-utilization" in note and "VLLM_CACHE_ROOT" in note
    assert "name:tag@sha256:" in note


def test_no_note_for_a_tagged_digest_a_tag_or_a_server_without_release_checks():
    for image in ("vllm/vllm-openai:v0.9.2" + DIGEST, "vllm/vllm-openai:v0.9.2"):
        raw = stack_raw("prod")
        vllm_workload(image)(raw)
        assert digest_notes(load(raw)) == [], image
    raw = stack_raw("prod")  # Triton: its queue-time metric exists in every release the catalog knows
    raw["workloads"][0]["image"] = "nvcr.io/nvidia/tritonserver" + DIGEST
    cfg = load(raw)
    assert version_dependent_checks(cfg.workloads[0]) == [] and digest_notes(cfg) == []


def test_plan_prints_the_note(monkeypatch):
    raw = stack_raw("prod")
    vllm_workload("vllm/vllm-openai" + DIGEST)(raw)
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    assert run_plan(raw, "prod", None, "json", out=io.StringIO(), sweep=False) == 0
    assert "NOTE: workloads[0].image" in err.getvalue()
