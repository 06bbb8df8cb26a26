"""The real API server as the judge of the package's offline one (gpuplatform/apiserver.py).

Every object ``plan`` writes for every stack and example (the objects the stack authors, and what each Helm
release installs, rendered by the real Helm engine, CRDs applied first), and every document of the manifest corpora
the tests keep, goes through kube-apiserver (server-side apply, strict field validation, dry run). The offline
verdict, at the server's Kubernetes version, must be the server's on each: a disagreement is fixed in our checks.
"""
from pathlib import Path

import pytest
import yaml

from gpuplatform.apiserver import as_sent, rejections, schema_version
from gpuplatform.chart_render import CRD, charts_dir, render_stack_releases
from gpuplatform.components.stack_config import namespace_from_stack_file
from gpuplatform.rehearse.apply import Discovery, apply, wait_established
from gpuplatform.rehearse.engines import pinned_versions
from gpuplatform.synth import stack_config_from_namespace, synthesize
from support import REPO

STACK_FILES = sorted((REPO / "stacks").glob("Pulumi.*.yaml")) + sorted((REPO / "examples").glob("0*/Pulumi.*.yaml"))
CORPORA = sorted((REPO / "tests" / "fixtures").glob("corpus/*.yaml")) + sorted(
    (REPO / "tests" / "fixtures").glob("seed_manifests/*.yaml")) + sorted(
    (REPO / "tests" / "fixtures").glob("pods/*.yaml"))


def server_minor() -> str:
    version = pinned_versions()["KUBERNETES_VERSION"].lstrip("v")
    return ".".join(version.split(".")[:2])


def stack_objects(path: Path) -> tuple[list[dict], list[dict], list]:
    """(CRDs the stack's releases install, every other object ``plan`` writes or a release installs, the releases
    whose chart package is not at hand: ACK's own charts come from ACK's chart repository)."""
    records = synthesize(stack_config_from_namespace(namespace_from_stack_file(path)))
    # a patch of an object ACK installs (its GPU exporter's tolerations) needs that object, which only ACK makes
    objects = [r.inputs for r in records if r.is_kubernetes_object and not r.type.endswith("Patch")]
    charts = charts_dir()
    assert charts.path is not None, charts.reason
    minor = tuple(int(p) for p in server_minor().split("."))
    rendered = render_stack_releases(records, charts, minor)
    assert all(name.startswith("ack-") for name, _ in rendered.unrendered), rendered.unrendered
    crds = {c["metadata"]["name"]: c for rel in rendered.rendered for c in rel.crds}
    for rel in rendered.rendered:
        for doc in rel.installed():
            if doc.get("kind") != CRD:
                meta = doc.setdefault("metadata", {})
                meta.setdefault("namespace", rel.namespace)
                objects.append(doc)
    return list(crds.values()), objects, rendered.unrendered


def namespaces_of(objects: list[dict]) -> set[str]:
    return {(o.get("metadata") or {}).get("namespace") for o in objects} - {None, ""}


def judge(cp, discovery, objects: list[dict], label: str) -> list[dict]:
    rows = []
    for obj in objects:
        obj = as_sent(obj)
        meta = obj.get("metadata") or {}
        if discovery.find(obj.get("apiVersion", ""), obj.get("kind", "")) is None:
            continue  # a custom resource whose CRD this cluster does not have: neither side judges it
        offline = rejections(obj, schema_version(server_minor()))
        real = apply(cp, discovery, obj, dry_run=True)
        rows.append({"case": label, "object": f"{obj.get('kind')} {meta.get('namespace', '')}/{meta.get('name')}",
                     "offline": not offline, "server": real.accepted,
                     "offline_says": "; ".join(r.message for r in offline), "server_says": real.message})
    return rows


def prepare(cp, discovery, crds: list[dict], objects: list[dict]) -> None:
    for crd in crds:
        verdict = apply(cp, discovery, crd)
        assert verdict.accepted, f"CRD {crd['metadata']['name']}: {verdict.message}"
    wait_established(cp, [c["metadata"]["name"] for c in crds])
    discovery.refresh()
    for ns in sorted(namespaces_of(objects)):
        verdict = apply(cp, discovery, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        assert verdict.accepted, verdict.message


def disagreements(rows: list[dict]) -> list[str]:
    return [f"{r['case']}: {r['object']}: offline {'accepts' if r['offline'] else 'refuses'} "
            f"({r['offline_says'] or '-'}), server {'accepts' if r['server'] else 'refuses'} "
            f"({r['server_says'] or '-'})" for r in rows if r["offline"] != r["server"]]


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.stem.removeprefix("Pulumi."))
def test_every_planned_object_gets_the_servers_verdict(control_plane, path, record_property):
    discovery = Discovery(control_plane)
    crds, objects, unrendered = stack_objects(path)
    prepare(control_plane, discovery, crds, objects)
    rows = judge(control_plane, discovery, objects, path.stem.removeprefix("Pulumi."))
    accepted = sum(r["server"] for r in rows)
    record_property("figures", f"{len(rows)} objects, the server accepts {accepted}, "
                               f"{len(disagreements(rows))} disagreements"
                               + (f"; not rendered: {', '.join(n for n, _ in unrendered)}" if unrendered else ""))
    assert rows, "no object judged"
    assert not disagreements(rows), "\n".join(disagreements(rows))
    # what the package plans, the server must take: a refusal here fails `pulumi up` halfway
    assert accepted == len(rows), "\n".join(f"{r['object']}: {r['server_says']}" for r in rows if not r["server"])


def corpus_documents(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict) and d.get("kind")]


def test_the_manifest_corpora_get_the_servers_verdict(control_plane, record_property):
    discovery = Discovery(control_plane)
    documents = {p: corpus_documents(p) for p in CORPORA}
    crds = [d for docs in documents.values() for d in docs if d.get("kind") == CRD]
    others = [d for docs in documents.values() for d in docs if d.get("kind") != CRD]
    prepare(control_plane, discovery, crds, others)
    rows = []
    for path, docs in documents.items():
        rows += judge(control_plane, discovery, [d for d in docs if d.get("kind") != CRD], path.name)
    refused = sum(not r["server"] for r in rows)
    record_property("figures", f"{len(rows)} corpus documents, the server refuses {refused}, "
                               f"{len(disagreements(rows))} disagreements")
    assert rows
    assert not disagreements(rows), "\n".join(disagreements(rows))
