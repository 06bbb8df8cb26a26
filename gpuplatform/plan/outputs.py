"""What ``plan --out DIR`` writes: ``DIR/plan.json`` (every resource with its inputs, and the report sections'
data) and ``DIR/manifests/`` (one YAML file per Kubernetes object and per Helm release), secrets masked."""
import json
from pathlib import Path
from typing import Any

import yaml

from gpuplatform.components.config import PlatformConfig
from gpuplatform.plan.resource_tree import ordered
from gpuplatform.plan.sections import capacity_rows, placement_report, pool_rows, startup_rows
from gpuplatform.plan.simulated_sections import latency_rows
from gpuplatform.records import RegisteredResource


SECRET_MASK = "[secret]"


YAML_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
"""libyaml's emitter when PyYAML has it (its wheels do): a 500-workload plan writes 4500 files, six times faster.
Long strings may fold at other places than with the pure-Python emitter; the documents are the same."""


def _mask(value: Any, secrets: set[str]) -> Any:
    if isinstance(value, str):
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, SECRET_MASK)
        return value
    if isinstance(value, dict):
        return {k: _mask(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v, secrets) for v in value]
    return value


def manifest_files(records: list[RegisteredResource]) -> dict[str, dict]:
    """File name -> document: one per Kubernetes object we author, one per Helm release."""
    files = {}
    for r in records:
        if r.is_kubernetes_object:
            meta = r.inputs.get("metadata") or {}
            ns = meta.get("namespace", "cluster")
            files[f"{r.inputs['kind'].lower()}-{ns}-{meta.get('name', r.name)}.yaml"] = r.inputs
        elif r.type == "kubernetes:helm.sh/v3:Release":
            i = r.inputs
            files[f"helmrelease-{i.get('namespace')}-{i.get('name')}.yaml"] = {
                "chart": i.get("chart"), "version": i.get("version"),
                "repository": (i.get("repositoryOpts") or {}).get("repo"), "namespace": i.get("namespace"),
                "name": i.get("name"), "values": i.get("values") or {}}
    return files


def write_records(out_dir: Path, stack: str, records: list[RegisteredResource], secrets: set[str],
                  **extra: Any) -> None:
    """``plan.json`` (every resource with its inputs, plus ``extra``) and ``manifests/``, secrets masked."""
    out_dir.mkdir(parents=True, exist_ok=True)
    manifests = out_dir / "manifests"
    manifests.mkdir(exist_ok=True)
    for old in manifests.glob("*.yaml"):
        old.unlink()
    doc = {"stack": stack, "resourceCount": len(records),
           "resources": [{"type": r.type, "name": r.name, "parent": r.parent, "urn": r.urn,
                          "parentUrn": r.parent_urn if r.parent else "", "protect": r.protect,
                          "dependsOn": sorted(r.depends_on), "inputs": _mask(r.inputs, secrets),
                          **({"ignoreChanges": list(r.ignore_changes)} if r.ignore_changes else {}),
                          **({"customTimeouts": r.custom_timeouts} if r.custom_timeouts else {})}
                         for _, r in ordered(records)], **extra}
    (out_dir / "plan.json").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    for name, body in sorted(manifest_files(records).items()):
        (manifests / name).write_text(yaml.dump(_mask(body, secrets), Dumper=YAML_DUMPER, sort_keys=True))


def write_plan(out_dir: Path, stack: str, records: list[RegisteredResource], cfg: PlatformConfig,
               secrets: set[str], sweep: bool = True) -> None:
    write_records(out_dir, stack, records, secrets, pools=pool_rows(cfg), placement=placement_report(cfg),
                  capacity=capacity_rows(cfg), startup=startup_rows(cfg), metricLatency=latency_rows(cfg, sweep))
