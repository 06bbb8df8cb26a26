"""``gpuplatform rehearse``: the stack's real ``pulumi up`` against a local control plane shaped like its pools.

1. A local control plane on loopback (:mod:`gpuplatform.rehearse.controlplane`: TLS, RBAC, no anonymous access).
2. kwok nodes shaped like the stack's node groups at their most, and on an ACK stack ACK's own system pods and its
   add-ons' pods, so the stack's pods compete for what a real cluster would have left.
3. The real Pulumi engine with the real kubernetes provider runs the package's own ``__main__.py`` on the stack
   (:mod:`gpuplatform.rehearse.stack` says what an ACK stack gives up here).
4. The report: every object applied (or the engine's error, which carries the API server's own refusal), every pod
   placed by the real scheduler (or its own message), the Deployments available, the autoscalers made.
5. A second ``up`` must change nothing (``preview --expect-no-changes``), and ``destroy`` must leave nothing.

Every step is bounded; a failed step ends the run with its own message, the control plane is always stopped.
"""
from __future__ import annotations

import json
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

import yaml

from gpuplatform.rehearse.apply import Discovery, apply, wait_established
from gpuplatform.rehearse.controlplane import ControlPlaneError, LocalControlPlane
from gpuplatform.rehearse.engines import CHECKOUT, engines_dir, pinned_versions
from gpuplatform.rehearse.placement import create_controllers, create_nodes
from gpuplatform.rehearse.stack import rehearsal_namespace
from gpuplatform.rehearse.state import inventory, left_behind, read_placement

PROJECT_KEY = "gpu-platform"


@dataclass
class Step:
    name: str
    ok: bool
    seconds: float
    detail: list = field(default_factory=list)


@dataclass
class Report:
    stack: str
    engines: dict
    notes: list = field(default_factory=list)
    steps: list = field(default_factory=list)
    applied: dict = field(default_factory=dict)
    """The first ``up``'s count per operation (``create``, ...)."""
    pods: dict = field(default_factory=dict)
    deployments: list = field(default_factory=list)
    autoscalers: list = field(default_factory=list)
    second_up_changes: dict = field(default_factory=dict)
    left_after_destroy: list = field(default_factory=list)
    kept_by_helm: list = field(default_factory=list)
    """The charts' CRDs (and the API server's APIService of their groups), which Helm never deletes."""

    @property
    def ok(self) -> bool:
        return bool(self.steps) and all(s.ok for s in self.steps)

    def as_json(self) -> str:
        return json.dumps({**asdict(self), "ok": self.ok}, indent=2, sort_keys=True)

    def text(self) -> str:
        lines = [f"rehearsal of stack {self.stack!r} on a local control plane "
                 f"(Kubernetes {self.engines.get('KUBERNETES_VERSION')}, kwok {self.engines.get('KWOK_VERSION')}, "
                 f"Pulumi {self.engines.get('PULUMI_VERSION')})"]
        lines += [f"  note: {n}" for n in self.notes]
        for s in self.steps:
            lines.append(f"  [{'ok' if s.ok else 'FAILED'}] {s.name} ({s.seconds:.0f} s)")
            lines += [f"      {d}" for d in s.detail]
        lines.append("  " + ("every step passed" if self.ok else "the rehearsal failed"))
        return "\n".join(lines)


def _config_file(raw: dict, dest: Path) -> Path:
    dest.write_text(yaml.safe_dump({"config": {f"{PROJECT_KEY}:{k}": v for k, v in raw.items()}}, sort_keys=False))
    return dest


def _timed(report: Report, name: str, action) -> None:
    """Run ``action`` (-> its report lines and whether it passed) as the step ``name``."""
    started = time.monotonic()
    try:
        detail, ok = action()
    except Exception as exc:  # every failure ends the run with its own message
        report.steps.append(Step(name, False, time.monotonic() - started, [str(exc)]))
        raise _Stop() from exc
    report.steps.append(Step(name, ok, time.monotonic() - started, detail))
    if not ok:
        raise _Stop()


class _Stop(Exception):
    pass


def named_claims(cfg) -> list[tuple[str, str]]:
    """(namespace, claim) of every PersistentVolumeClaim a workload mounts by name (``volumes[].pvc``): the stack
    expects it to exist (a prerequisite the user makes), and without it the scheduler leaves the pod Pending."""
    found = []
    for w in cfg.workloads:
        namespace = cfg.workload_namespace(w)
        for v in w.volumes:
            if v.pvc and (namespace, v.pvc) not in found:
                found.append((namespace, v.pvc))
    return found


def claim_stand_in(namespace: str, name: str) -> list[dict]:
    """The claim's namespace, a volume and the claim bound to it (the persistent-volume controller binds a claim
    that names its volume)."""
    volume = f"rehearsal-{namespace}-{name}"[:63]
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": volume},
         "spec": {"capacity": {"storage": "1Ti"}, "accessModes": ["ReadWriteMany", "ReadOnlyMany", "ReadWriteOnce"],
                  "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
                  "hostPath": {"path": f"/rehearsal/{namespace}/{name}"},
                  "claimRef": {"namespace": namespace, "name": name}}},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": namespace},
         "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "", "volumeName": volume,
                  "resources": {"requests": {"storage": "1Gi"}}}},
    ]


def fluid_claims(cfg) -> list[tuple[str, str]]:
    """(namespace, claim) of every claim Fluid would create for a workload's ``fluid`` volume: the stack renders the
    Datasets, and Fluid (a prerequisite the stack names, not something it installs) turns the referencing one into a
    claim of its name that the replicas mount."""
    from gpuplatform.components.fluid_cache import claim_name
    return [(cfg.workload_namespace(w), claim_name(w, v)) for w in cfg.workloads for v in w.volumes if v.fluid]


FLUID_KINDS = (("Dataset", "datasets"), ("JindoRuntime", "jindoruntimes"))
"""The Fluid kinds the stack renders (components/fluid_cache.py)."""


def fluid_crd_stand_ins() -> list[dict]:
    """Namespaced CRDs of Fluid's kinds that keep whatever the stack writes (``x-kubernetes-preserve-unknown-fields``):
    here they only let the API server store the objects, as ack-fluid's CRDs would on the cluster; their fields
    follow Fluid's api/v1alpha1 types (components/fluid_cache.py), which tests/components/test_fluid_cache.py pins."""
    from gpuplatform.components.fluid_cache import FLUID_API_VERSION
    group, version = FLUID_API_VERSION.split("/")
    return [{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
             "metadata": {"name": f"{plural}.{group}"},
             "spec": {"group": group, "scope": "Namespaced",
                      "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
                      "versions": [{"name": version, "served": True, "storage": True,
                                    "subresources": {"status": {}},
                                    "schema": {"openAPIV3Schema": {"type": "object",
                                                                   "x-kubernetes-preserve-unknown-fields": True}}}]}}
            for kind, plural in FLUID_KINDS]


def _summary(changes: dict) -> str:
    return ", ".join(f"{n} {op}" for op, n in sorted(changes.items())) or "nothing"


def rehearse(raw: dict, stack: str, cfg, *, engines: Optional[Path] = None, keep: Optional[Path] = None,
             up_timeout: float = 900, settle_timeout: float = 120) -> Report:
    """Rehearse the stack ``raw`` (its validated config ``cfg``); the report says what happened at each step."""
    engines = engines or engines_dir()  # before anything starts: a missing engine is a usage error
    from gpuplatform.components.placement import cluster_pods, node_groups
    from gpuplatform.rehearse.pulumi_cli import PulumiCli, project_from_checkout

    report = Report(stack, pinned_versions())
    workdir = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="gpuplatform-rehearsal-"))
    cp = LocalControlPlane(engines, workdir / "cluster")
    try:
        def control_plane():
            cp.start()
            return [f"kube-apiserver at {cp.server}"], True
        _timed(report, "control plane", control_plane)
        discovery = Discovery(cp)

        def nodes():
            notes = create_nodes(cp, discovery, node_groups(cfg))
            count = len(cp.get("/api/v1/nodes")["items"])
            return [f"{count} kwok nodes"] + notes, True
        _timed(report, "nodes shaped like the node groups", nodes)

        if cfg.cloud.runs_system_components:
            def ack_pods():
                pods = [p for p in cluster_pods(cfg, with_charts=False)]
                wanted = create_controllers(cp, discovery, pods)
                return [f"{len(wanted)} controllers of ACK and its add-ons"], True
            _timed(report, "ACK's system pods", ack_pods)

        from gpuplatform.chart_render import charts_dir

        packages = charts_dir().path
        claims, fluid = named_claims(cfg), fluid_claims(cfg)
        if claims or fluid:
            def stand_ins():
                notes = []
                if fluid:
                    crds = fluid_crd_stand_ins()
                    for obj in crds:
                        verdict = apply(cp, discovery, obj)
                        if not verdict.accepted:
                            raise ControlPlaneError(f"{obj['kind']} {obj['metadata']['name']}: {verdict.message}")
                    wait_established(cp, [c["metadata"]["name"] for c in crds])
                    notes.append("Fluid (ack-fluid, a prerequisite the stack names) stood in for by CRDs of "
                                 f"{' and '.join(k for k, _ in FLUID_KINDS)} that store what the stack writes")
                for claim in [*claims, *fluid]:
                    for obj in claim_stand_in(*claim):
                        verdict = apply(cp, discovery, obj)
                        if not verdict.accepted:
                            raise ControlPlaneError(f"{obj['kind']} {obj['metadata']['name']}: {verdict.message}")
                notes += [f"PersistentVolumeClaim {ns}/{name}, named by the stack and made by you, stood in for "
                          "by a bound claim" for ns, name in claims]
                notes += [f"PersistentVolumeClaim {ns}/{name}, which Fluid makes from the stack's Dataset, stood "
                          "in for by a bound claim" for ns, name in fluid]
                return notes, True
            _timed(report, "what the stack names but does not create", stand_ins)

        raw_rehearsed, notes = rehearsal_namespace(raw, str(cp.admin_kubeconfig), str(packages) if packages else None)
        report.notes += notes
        before = inventory(cp)
        cli = PulumiCli(engines, workdir / "pulumi")
        project = project_from_checkout(CHECKOUT, workdir / "project", stack,
                                        _config_file(raw_rehearsed, workdir / f"Pulumi.{stack}.yaml"))

        def first_up():
            cli.stack_init(project, stack)
            outcome = cli.up(project, stack, timeout=up_timeout)
            report.applied = outcome.changes
            return [f"applied: {_summary(outcome.changes)}"], outcome.ok
        _timed(report, "pulumi up", first_up)

        def settled():
            deadline = time.monotonic() + settle_timeout
            while True:
                placement = read_placement(cp)
                waiting = [d for d in placement.deployments if d[1] < d[2]]
                if not waiting and not placement.unschedulable:
                    break
                if time.monotonic() > deadline:
                    break
                time.sleep(2)
            report.pods = {"total": placement.pods, "scheduled": placement.scheduled,
                           "unschedulable": placement.unschedulable}
            report.deployments = [{"deployment": d, "available": a, "desired": n} for d, a, n in placement.deployments]
            report.autoscalers = placement.autoscalers
            detail = [f"{placement.scheduled} of {placement.pods} pods scheduled by kube-scheduler",
                      *placement.unschedulable,
                      f"{sum(a >= n for _, a, n in placement.deployments)} of {len(placement.deployments)} "
                      "Deployments available",
                      *[f"not available: {d} ({a}/{n})" for d, a, n in placement.deployments if a < n],
                      f"autoscalers: {', '.join(placement.autoscalers) or 'none'}"]
            ok = not placement.unschedulable and all(a >= n for _, a, n in placement.deployments)
            return detail, ok
        _timed(report, "every pod scheduled, every Deployment available", settled)

        def second_up():
            outcome = cli.preview(project, stack, expect_no_changes=True, check=False)
            report.second_up_changes = {k: v for k, v in outcome.changes.items() if k != "same"}
            changed = [f"{op} {urn.rsplit('::', 1)[-1]}" for op, urn in outcome.operations if op not in ("same", "")]
            return [f"changes: {_summary(report.second_up_changes)}", *changed[:20]], \
                outcome.ok and not report.second_up_changes
        _timed(report, "second up changes nothing", second_up)

        def destroy():
            outcome = cli.destroy(project, stack)
            deadline = time.monotonic() + settle_timeout
            while True:
                left, kept = left_behind(before, inventory(cp))
                if not left or time.monotonic() > deadline:
                    break
                time.sleep(2)
            report.left_after_destroy = left
            report.kept_by_helm = kept
            crds = sum(x.startswith("CustomResourceDefinition") for x in kept)
            return [f"deleted: {_summary(outcome.changes)}", *[f"left: {x}" for x in left[:30]],
                          *([f"kept by Helm by design: {crds} CRDs of the charts' crds/ directories (Helm never "
                             "deletes a CRD: every object of its kind would go with it)"] if crds else [])], \
                outcome.ok and not left
        _timed(report, "destroy leaves nothing", destroy)
    except (_Stop, ControlPlaneError):
        pass
    finally:
        cp.stop()
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
    return report
