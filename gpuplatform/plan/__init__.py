"""``gpuplatform plan``: synthesize a stack offline and show/write what ``pulumi up`` would register.

One module per job: :mod:`~gpuplatform.plan.resource_tree` (the tree as ``pulumi preview`` draws it),
:mod:`~gpuplatform.plan.sections` (the report sections read from the config and the catalogs),
:mod:`~gpuplatform.plan.simulated_sections` (those that run the simulator: metric latency, SLO verdicts),
:mod:`~gpuplatform.plan.outputs` (``plan.json`` and ``manifests/``), :mod:`~gpuplatform.plan.stack_warnings` and
:mod:`~gpuplatform.plan.driver` (the command). The names below are the package's public ones, importable from
``gpuplatform.plan`` as before the split.
"""
from gpuplatform.plan.driver import run_plan
from gpuplatform.plan.outputs import SECRET_MASK, YAML_DUMPER, manifest_files, write_plan, write_records
from gpuplatform.plan.resource_tree import ordered, tree_text
from gpuplatform.plan.sections import (DRAIN_TITLE, PLACEMENT_TITLE, STARTUP_TITLE, capacity_rows, capacity_text,
                                       drain_rows, drain_text, placement_report, placement_text, pool_cost, pool_rows,
                                       pools_text, startup_rows, startup_text, warm_capacity_row, warm_capacity_text)
from gpuplatform.plan.simulated_sections import (LATENCY_TITLE, SLO_TITLE, SLO_TRACES, STARTUP_FIELDS, latency_rows,
                                                 latency_text, slo_rows, slo_text, step_response, sweep_cell,
                                                 wake_cell)
from gpuplatform.plan.stack_warnings import custom_gpu_warnings, end_of_life_warnings, file_warnings

__all__ = ["DRAIN_TITLE", "LATENCY_TITLE", "PLACEMENT_TITLE", "SECRET_MASK", "SLO_TITLE", "SLO_TRACES",
           "STARTUP_FIELDS", "STARTUP_TITLE", "YAML_DUMPER", "capacity_rows", "capacity_text", "custom_gpu_warnings",
           "drain_rows", "drain_text", "end_of_life_warnings", "file_warnings", "latency_rows", "latency_text",
           "manifest_files", "ordered", "placement_report", "placement_text", "pool_cost", "pool_rows", "pools_text",
           "run_plan", "slo_rows", "slo_text", "startup_rows", "startup_text", "step_response", "sweep_cell",
           "tree_text", "wake_cell", "warm_capacity_row", "warm_capacity_text", "write_plan", "write_records"]
