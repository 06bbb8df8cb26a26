"""``gpuplatform plan`` itself: validate the stack, synthesize it offline, print the report (table or JSON) and
write ``--out``."""
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from gpuplatform.authored import raise_for_refusals
from gpuplatform.components.config import SECRET_KEYS
from gpuplatform.components.validation import load
from gpuplatform.plan.outputs import write_plan
from gpuplatform.plan.resource_tree import ordered, tree_text
from gpuplatform.plan.sections import (DRAIN_TITLE, PLACEMENT_TITLE, STARTUP_TITLE, capacity_rows, capacity_text,
                                       drain_rows, drain_text, placement_report, placement_text, pool_rows, pools_text,
                                       startup_rows, startup_text)
from gpuplatform.plan.simulated_sections import (LATENCY_TITLE, SLO_TITLE, latency_rows, latency_text, slo_rows,
                                                 slo_text)
from gpuplatform.plan.stack_warnings import custom_gpu_warnings, end_of_life_warnings, file_warnings
from gpuplatform.synth import OFFLINE_SECRETS, stack_config_from_namespace, synthesize


def run_plan(raw: dict[str, Any], stack: str, out_dir: str | None, fmt: str, out: TextIO | None = None,
             provider_settings: dict[str, Any] | None = None, sweep: bool = True) -> int:
    """``gpuplatform plan``. ``sweep``: False skips the first scale-up sweep over every loop alignment (seconds per
    GPU-metric workload the first time a stack is planned); the single simulated step is still shown."""
    out = out or sys.stdout
    provider_settings = provider_settings or {}
    # ConfigError propagates to the CLI (exit 2) before anything is registered
    cfg = load(raw, provider_settings)
    from gpuplatform.components.image_pins import digest_notes
    from gpuplatform.components.network_policy import network_warnings
    from gpuplatform.components.drain import drain_warnings

    for warning in (file_warnings(cfg) + custom_gpu_warnings(cfg) + end_of_life_warnings(cfg) + digest_notes(cfg)
                    + network_warnings(cfg) + drain_warnings(cfg)):
        sys.stderr.write(warning + "\n")
    records = synthesize({**stack_config_from_namespace(raw), **provider_settings}, stack=stack)
    raise_for_refusals(records, cfg)  # what the API server would refuse is a config error, as validation's are
    secrets = {str(raw[k]) for k in SECRET_KEYS if raw.get(k)} | OFFLINE_SECRETS
    if out_dir:
        write_plan(Path(out_dir), stack, records, cfg, secrets, sweep)
    if fmt == "json":
        json.dump({"stack": stack, "resourceCount": len(records),
                   "tree": [{"depth": d, "type": r.type, "name": r.name, "urn": r.urn, "protect": r.protect}
                            for d, r in ordered(records)],
                   "pools": pool_rows(cfg), "placement": placement_report(cfg), "capacity": capacity_rows(cfg),
                   "startup": startup_rows(cfg), "drain": drain_rows(cfg), "metricLatency": latency_rows(cfg, sweep),
                   "slo": slo_rows(cfg)},
                  out, indent=2)
        out.write("\n")
    else:
        out.write(f"Stack {stack}: {len(records)} resources\n\n{tree_text(records)}\n\n")
        out.write(f"Node pools\n{pools_text(pool_rows(cfg))}\n\n")
        out.write(f"{PLACEMENT_TITLE}\n{placement_text(placement_report(cfg))}\n\n")
        out.write(f"GPU capacity\n{capacity_text(capacity_rows(cfg))}\n\n")
        out.write(f"{STARTUP_TITLE}\n{startup_text(startup_rows(cfg))}\n\n")
        out.write(f"{DRAIN_TITLE}\n{drain_text(drain_rows(cfg))}\n\n")
        out.write(f"{LATENCY_TITLE}\n{latency_text(latency_rows(cfg, sweep))}\n")
        slos = slo_rows(cfg)
        if slos:
            out.write(f"\n{SLO_TITLE}\n{slo_text(slos)}\n")
        if out_dir:
            out.write(f"\nWrote {Path(out_dir) / 'plan.json'} and {Path(out_dir) / 'manifests'}/\n")
    return 0
