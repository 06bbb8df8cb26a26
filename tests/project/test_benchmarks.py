"""Each benchmark runs here at a small size, so a change that breaks one fails the suite instead of rotting until
the next `make bench`. Targets are judged by the benchmarks themselves at their full size, never by a timed test."""
import importlib.util
import json
import subprocess
import sys

import pytest

from support import REPO, wheelhouse

BENCHMARKS = REPO / "benchmarks"
RESULTS = {"pass", "fail", "not measured"}


def run_benchmark(script: str, *args: str) -> tuple[list[dict], list[dict]]:
    """(figure lines, verdict lines) of one run; the exit code agrees with the verdicts."""
    run = subprocess.run([sys.executable, str(BENCHMARKS / script), *args], cwd=REPO, capture_output=True,
                         text=True, timeout=120)
    assert "Traceback" not in run.stderr, run.stderr
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    verdicts = [x for x in lines if "target" in x]
    assert verdicts, f"{script} printed no verdict against its target:\n{run.stdout}"
    assert all(v["result"] in RESULTS for v in verdicts), verdicts
    missed = any(v["result"] == "fail" for v in verdicts)
    assert run.returncode == (1 if missed else 0), (run.returncode, verdicts, run.stderr)
    return [x for x in lines if "target" not in x], verdicts


def test_synth_benchmark_plans_a_generated_config_the_validation_accepts():
    figures, verdicts = run_benchmark("synth.py", "--sizes", "2")
    assert [f["workloads"] for f in figures] == [2]
    assert figures[0]["resources"] > 0 and figures[0]["peak_rss_mb"] > 0
    # N=500 was not run, so no verdict may claim the target was met or missed
    assert {v["result"] for v in verdicts} == {"not measured"}


def test_synth_benchmark_sizes_its_pool_as_the_capacity_rule_counts_nodes():
    """The generated pool has just enough nodes for every size: a node's replicas are counted on what it offers
    pods (ACK's reservations taken), or the target size would be refused where a small one is not."""
    from gpuplatform.components.validation import load

    synth = _synth_module()
    for n in range(1, 21):
        load(synth.generated_config(n))


def test_check_manifests_benchmark_runs_the_check_end_to_end():
    figures, verdicts = run_benchmark("check_manifests.py", "--runs", "1")
    assert figures[0]["runs"] == 1 and figures[0]["median_s"] > 0
    assert len(verdicts) == 2


def test_simulate_benchmark_runs_every_autoscaled_workload_of_a_stack():
    figures, verdicts = run_benchmark("simulate.py", "--duration", "10m", "--stacks", "prod")
    assert figures and {f["stack"] for f in figures} == {"prod"}
    assert all(f["simulated_s"] == 600 and f["sweep_runs"] == 1050 for f in figures)
    assert all(f["lower_bound_unit_hours"] <= f["unit_hours"] for f in figures)
    assert [v["result"] for v in verdicts] == ["not measured", "not measured"]


def test_tune_benchmark_tunes_examples_005_on_a_bursty_trace():
    figures, verdicts = run_benchmark("tune.py", "--duration", "10m", "--budget", "1m")
    (figure,) = figures
    assert figure["example"] == "005-vllm-queue" and figure["simulated_s"] == 600
    assert figure["candidates"] > 10 and figure["cpu_seconds"] > 0
    assert [v["result"] for v in verdicts] == ["not measured"]


def test_pack_install_benchmark_resolves_the_consumer_pack_without_a_heavy_distribution():
    """The small run: which wheels the pack's venv would get (pip --dry-run), no venv built."""
    wheels = wheelhouse()
    figures, verdicts = run_benchmark("pack_install.py", "--resolve-only", "--wheelhouse", str(wheels))
    (figure,) = figures
    assert figure["heavy"] == [] and 0 < figure["distributions"] < 40 and figure["wheels_mb"] > 0
    assert figure["venv_mb"] is None and figure["install_s"] is None
    assert [v["result"] for v in verdicts] == ["pass", "not measured", "not measured"]


def test_import_graph_benchmark_keeps_components_and_policies_apart():
    """The layering that holds today, as a contract: components/ and policies/ never import each other, and the
    import graph has no cycle at all (catalogs/, policies/, components/ and the commands point only down)."""
    figures, verdicts = run_benchmark("import_graph.py")
    (figure,) = figures
    assert figure["modules"] > 100  # the linked components/, catalogs/ and policies/ are read too
    assert figure["components_to_policies"] == [] and figure["policies_to_components"] == []
    assert figure["cycles"] == 0 and figure["cycle_modules"] == [], figure["cycle_modules"]
    assert [v["result"] for v in verdicts] == ["pass", "pass", "pass", "pass"]


def test_import_graph_benchmark_finds_no_ack_branch_outside_the_cloud_profiles():
    """Every ACK question is asked of a cloud profile (components/clouds/): no is_ack / on_ack / is_ack_pro outside
    them. The deprecated flags the profiles keep for older code are the only ones left, inside."""
    figures, verdicts = run_benchmark("import_graph.py")
    (figure,) = figures
    assert figure["ack_branches_outside_profile"] == 0 and figure["ack_branch_files_outside_profile"] == 0
    assert 0 < figure["ack_branches"] <= 10  # the deprecated flags in components/clouds/compat.py
    assert figure["cluster_kind_branches_outside_profile"] >= 0
    assert verdicts[-1]["target"].startswith("no is_ack-style branch") and verdicts[-1]["result"] == "pass"


def test_import_graph_counts_an_ack_flag_in_code_but_not_in_a_string(tmp_path):
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location("import_graph_benchmark", BENCHMARKS / "import_graph.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    source = tmp_path / "sample.py"
    source.write_text('if cfg.is_ack:\n    pass\nREMOVED = {"on_ack": "gone"}  # is_ack in a comment\n'
                      'x = f(on_ack=True)\nif c.kind == "ack-managed":\n    pass\nif kind in ("kubeconfig",):\n'
                      '    pass\nname = "kubeconfig"\n')
    assert module._branch_lines(source) == (2, 2)


def _synth_module():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location("synth_benchmark", BENCHMARKS / "synth.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCHMARKS))


@pytest.mark.parametrize("seconds, rss, expected", [(5.0, 500.0, "pass"), (25.0, 500.0, "fail"),
                                                     (5.0, 2000.0, "fail")])
def test_synth_verdict_at_the_target_size(capsys, seconds, rss, expected):
    synth = _synth_module()
    rows = {synth.BASELINE_WORKLOADS: {"workloads": synth.BASELINE_WORKLOADS, "cpu_seconds": 1.0,
                                        "peak_rss_mb": 100},
            synth.TARGET_WORKLOADS: {"workloads": synth.TARGET_WORKLOADS, "cpu_seconds": seconds,
                                      "peak_rss_mb": rss}}
    results = synth.judge(rows)
    assert results[0] == expected
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert printed[0]["result"] == expected and str(synth.TARGET_WORKLOADS) in printed[0]["target"]
