"""The offline runner itself: what it records, and that it leaves the process as it found it."""
import gc
import json

import yaml
import subprocess
import sys

import pulumi
from pulumi.runtime import resource as sdk_resource
from pulumi.runtime.mocks import MockMonitor

from gpuplatform import synth as offline
from gpuplatform.records import normalize
from support import REPO, stack_raw, synth


def test_recorded_inputs_are_what_the_sdks_own_mock_monitor_decodes(monkeypatch):
    """The recording monitor decodes inputs after the run; decoding them inside each registration, as the SDK's
    monitor does, must give the same plan."""
    decoded = {}

    def decode_during_registration(self, request):
        response = MockMonitor.RegisterResource(self, request)
        if request.type != "pulumi:pulumi:Stack":
            self.requests.append((response.urn, request))
        return response

    def capture(self, args):
        decoded[(args.typ, args.name)] = normalize(args.inputs)
        return offline.provider_outputs(args.typ, args.name)

    expected = synth(stack_raw("prod"))
    monkeypatch.setattr(offline.RecordingMonitor, "RegisterResource", decode_during_registration)
    monkeypatch.setattr(offline.OfflineMocks, "new_resource", capture)
    synth(stack_raw("prod"))
    assert len(decoded) == len(expected) > 20
    for r in expected:
        # the SDK's decoder drops the nulls the request carries; everything else must agree
        assert _without_nulls(r.inputs) == decoded[(r.type, r.name)], r.name


def _without_nulls(value):
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def test_nulls_the_engine_receives_are_recorded_and_planned(tmp_path):
    """The SDK serializes a None inside a map as a protobuf null (pulumi/runtime/rpc.py, serialize_property) and its
    own decoder drops it again; the plan must show it as given. (The real engine does not carry it on to Helm as a
    deletion, the rehearsal found: the package's own values send none, tests/gpuplatform/rehearse/test_rehearse_inputs.py.)"""
    from gpuplatform.cli import main

    raw = stack_raw("prod")
    raw["monitoring"]["helmValues"] = {"prometheusAdapter": {"podDisruptionBudget": {"unhealthyPodEvictionPolicy": None}}}
    config = tmp_path / "Pulumi.prod.yaml"
    config.write_text(yaml.safe_dump({"config": {f"gpu-platform:{k}": v for k, v in raw.items()}}))
    records = synth(raw)
    adapter = next(r for r in records if r.name.endswith("prometheus-adapter") and "helm" in r.type)
    assert adapter.inputs["values"]["podDisruptionBudget"]["unhealthyPodEvictionPolicy"] is None
    assert main(["plan", "--config", str(config), "--out", str(tmp_path / "out")]) == 0
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    planned = next(r for r in plan["resources"] if r["name"] == adapter.name)
    assert planned["inputs"]["values"]["podDisruptionBudget"]["unhealthyPodEvictionPolicy"] is None
    manifest = (tmp_path / "out" / "manifests" / "helmrelease-monitoring-prometheus-adapter.yaml").read_text()
    assert "unhealthyPodEvictionPolicy: null" in manifest


def test_restore_nulls_follows_secrets_lists_and_nesting():
    from google.protobuf import struct_pb2
    from pulumi.runtime import rpc

    from gpuplatform.records import SECRET_SIG, restore_nulls

    raw = struct_pb2.Struct()
    raw.update({"a": {"b": None, "c": [None, {"d": None, "e": 1}]},
                "s": {SECRET_SIG[0]: SECRET_SIG[1], "value": {"k": None, "v": "x"}}})
    restored = normalize(restore_nulls(raw, rpc.deserialize_properties(raw)))
    assert restored == {"a": {"b": None, "c": [None, {"d": None, "e": 1}]}, "s": {"k": None, "v": "x"}}


def test_run_is_a_preview_and_leaves_the_process_as_it_found_it():
    seen = {}

    def program():
        seen["dry_run"] = pulumi.runtime.is_dry_run()
        seen["collector"] = gc.isenabled()
        seen["stack_trace_hook"] = sdk_resource._get_stack_trace

    hook = sdk_resource._get_stack_trace
    assert hook.__module__ == "pulumi.runtime.resource"  # the pinned SDK still has what the runner swaps out
    offline.synthesize({}, program)
    assert seen["dry_run"] is True and seen["collector"] is False and seen["stack_trace_hook"] is not hook
    assert gc.isenabled() and sdk_resource._get_stack_trace is hook


def test_collector_pause_nests():
    with offline.collector_paused():
        with offline.collector_paused():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


def test_console_plan_runs_as_a_one_shot_process():
    proc = subprocess.run([sys.executable, "-m", "gpuplatform", "plan", "--stack", "local", "--format", "json"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["resourceCount"] > 10
