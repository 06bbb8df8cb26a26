"""Reading Kubernetes manifests (``check --manifests``): YAML/JSON files, directories or standard input, with the
line of each object and its YAML node, so a finding can point at the line of the field it names; a file that cannot
be read (binary, not UTF-8, a Helm template, broken YAML) is an :class:`InputError` with its line."""
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

import yaml

from gpuplatform.apiserver import as_sent
from gpuplatform.policies import k8s
from gpuplatform.records import RegisteredResource


YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's parser when PyYAML has it (its wheels do): the same documents and line marks, several times faster on
the megabytes of a rendered kube-prometheus-stack."""


MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


_HELM_DIRECTIVE = re.compile(r"\{\{-?\s*(?:[^}]*\.(?:Values|Release|Chart|Capabilities|Files)\b|include\s|"
                             r"template\s|toYaml\b|tpl\s|define\s)")
"""Go-template actions that only Helm charts use (Prometheus and Alertmanager templates in ConfigMaps use
``{{ $labels }}``, ``{{ range .Alerts }}``, never these)."""


def _template_in_content(text: str) -> Optional[re.Match]:
    """The first Helm action in the YAML content of ``text``; one in a comment renders to nothing either way, so
    a plain manifest whose comments show a chart's values (``# image: {{ .Values.image }}``) is not a template.
    Block scalars (``|``, ``>``) are content whatever their lines start with: their ranges come from the YAML
    scanner, which also stops at a template's first syntax error (the text after it is judged line by line)."""
    matches = list(_HELM_DIRECTIVE.finditer(text))
    if not matches:
        return None
    blocks = []
    try:
        for token in yaml.scan(text, Loader=yaml.SafeLoader):
            if isinstance(token, yaml.ScalarToken) and token.style in ("|", ">"):
                blocks.append((token.start_mark.index, token.end_mark.index))
    except yaml.YAMLError:
        pass
    for m in matches:
        if any(start <= m.start() < end for start, end in blocks) or not _in_comment(text, m.start()):
            return m
    return None


def _in_comment(text: str, pos: int) -> bool:
    """Whether ``pos`` is inside a YAML comment: after a ``#`` that starts the line or follows whitespace, outside
    a quoted scalar (a quote opens one only where a scalar can start)."""
    start = text.rfind("\n", 0, pos) + 1
    quote, prev = None, " "
    for ch in text[start:pos]:
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"" and prev in " \t:-[{,":
            quote = ch
        elif ch == "#" and prev in " \t":
            return True
        prev = ch
    return False


@dataclass(frozen=True)
class InputError:
    """A file that could not be read as Kubernetes manifests."""

    path: str
    line: Optional[int]
    message: str

    def render(self) -> str:
        return f"{self.path}:{self.line}: {self.message}" if self.line else f"{self.path}: {self.message}"


class ManifestError(Exception):
    def __init__(self, errors: Sequence[InputError]):
        super().__init__("\n".join(e.render() for e in errors))
        self.errors = list(errors)


@dataclass
class Manifests:
    """What ``check --manifests`` read: the objects, where each one starts, and the files it could not read."""

    resources: list[RegisteredResource] = field(default_factory=list)
    locations: dict[str, tuple[str, int]] = field(default_factory=dict)
    """Resource name -> (file, line of the document)."""
    errors: list[InputError] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    nodes: dict[str, Any] = field(default_factory=dict)
    """Resource name -> the object's YAML node, to locate a field inside it."""


def _files(path: Path, errors: list[InputError]) -> list[Path]:
    if str(path) == "-":
        return [path]
    if not path.exists():
        errors.append(InputError(str(path), None, "no such file or directory"))
        return []
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in MANIFEST_SUFFIXES)
    return [path]


def _text(path: Path, errors: list[InputError]) -> Optional[str]:
    raw = sys.stdin.buffer.read() if str(path) == "-" else path.read_bytes()
    if b"\x00" in raw[:8192]:
        errors.append(InputError(str(path), None, "is a binary file, not YAML or JSON manifests"))
        return None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        errors.append(InputError(str(path), line, f"is not UTF-8 text ({exc.reason} at byte {exc.start})"))
        return None
    match = _template_in_content(text)
    if match:
        line = text[:match.start()].count("\n") + 1
        snippet = text[match.start():text.find("}}", match.start()) + 2][:60]
        errors.append(InputError(str(path), line, f"is a Helm template ('{snippet}'); render it first, e.g. "
                                                  f"'helm template RELEASE CHART -f values.yaml | gpuplatform "
                                                  f"check --manifests -'"))
        return None
    return text


def _parse(path: Path, text: str, errors: list[InputError]) -> Iterable[tuple[int, Any, Any]]:
    """(line, document, node) for every YAML document; a syntax error ends the file (later documents cannot be
    located reliably) and is reported with its line and column."""
    loader = YAML_LOADER(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            yield node.start_mark.line + 1, loader.construct_document(node), node
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = " ".join(str(x) for x in (getattr(exc, "context", None), getattr(exc, "problem", None)) if x)
        hint = " (a Helm template? render it with 'helm template' first)" if "{{" in text else ""
        errors.append(InputError(str(path), mark.line + 1 if mark else None,
                                 f"invalid YAML{f' at column {mark.column + 1}' if mark else ''}: "
                                 f"{problem or exc}{hint}"))
    finally:
        loader.dispose()


def _flatten(doc: Any, node: Any, line: int) -> Iterable[tuple[dict, int, Any]]:
    """(object, line, node) of a document: itself, or each item of a ``List`` kind at the item's own line."""
    if not isinstance(doc, dict):
        return
    kind = str(doc.get("kind") or "")
    if kind.endswith("List") and isinstance(doc.get("items"), list):
        item_nodes = []
        if isinstance(node, yaml.MappingNode):
            item_nodes = next((v.value for k, v in node.value if getattr(k, "value", None) == "items"
                               and isinstance(v, yaml.SequenceNode)), [])
        for i, item in enumerate(doc["items"]):
            child = item_nodes[i] if i < len(item_nodes) else None
            yield from _flatten(item, child, child.start_mark.line + 1 if child is not None else line)
    elif doc.get("apiVersion") and kind:
        yield doc, line, node


HELM_RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"


PATCH_ANNOTATION = "pulumi.com/patchForce"
"""Marks a pulumi-kubernetes server-side-apply patch (``…Patch`` resources): it names only the fields it owns."""


PLAN_RELEASE_KEYS = {"chart", "version", "values", "name", "namespace"}
"""A Helm release as ``gpuplatform plan --out`` writes it (``helmrelease-<ns>-<name>.yaml``): checked as the
release resource the program registers, so the adapter rules it carries vouch for the HPAs beside it."""


def _plan_release(doc: Any) -> Optional[RegisteredResource]:
    if not isinstance(doc, dict) or "apiVersion" in doc or not PLAN_RELEASE_KEYS <= set(doc):
        return None
    inputs = {k: doc[k] for k in PLAN_RELEASE_KEYS}
    if doc.get("repository"):
        inputs["repositoryOpts"] = {"repo": doc["repository"]}
    return RegisteredResource(type=HELM_RELEASE_TYPE, name=f"{doc['namespace']}/{doc['name']}", inputs=inputs)


def read_manifests(paths: Iterable[str | Path]) -> Manifests:
    """Kubernetes objects of YAML/JSON files, directories or ``-`` (stdin): multi-document files, ``List`` kinds,
    ``helm template`` output. Files that cannot be read are recorded in ``errors`` (file and line) and the
    others are still read, so one bad file hides nothing."""
    out = Manifests()
    seen: dict[str, int] = {}
    for p in paths:
        for f in _files(Path(p), out.errors):
            text = _text(f, out.errors)
            if text is None:
                continue
            out.files.append(str(f))
            for line, doc, node in _parse(f, text, out.errors):
                release = _plan_release(doc)
                if release is not None:
                    out.resources.append(release)
                    out.locations[f"{release.type}::{release.name}"] = (str(f), line)
                    continue
                for obj, obj_line, obj_node in _flatten(doc, node, line):
                    obj = as_sent(obj)  # JSON as kubectl sends it: no YAML dates, string keys
                    ns = k8s.get(obj, "metadata", "namespace")
                    name = f"{ns}/{k8s.name_of(obj)}" if ns else (k8s.name_of(obj) or str(obj["kind"]).lower())
                    token = k8s.type_token(str(obj["apiVersion"]), str(obj["kind"]))
                    if PATCH_ANNOTATION in k8s.as_map(k8s.get(obj, "metadata", "annotations")):
                        token += "Patch"  # a server-side-apply patch, as `plan --out` writes one: its fields only
                    key = f"{token}::{name}"
                    seen[key] = seen.get(key, 0) + 1
                    if seen[key] > 1:
                        name = f"{name}#{seen[key]}"
                    out.resources.append(RegisteredResource(type=token, name=name, inputs=obj))
                    out.locations[f"{token}::{name}"] = (str(f), obj_line)
                    if obj_node is not None:
                        out.nodes[f"{token}::{name}"] = obj_node
    return out


def line_of(node: Any, path: Sequence) -> Optional[int]:
    """Line of ``path`` (keys and indexes) inside a YAML node: the deepest part of it the node has."""
    line = node.start_mark.line + 1 if node is not None else None
    for part in path:
        child = None
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if getattr(key, "value", None) == str(part):
                    child, line = value, key.start_mark.line + 1
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            child = node.value[part]
            line = child.start_mark.line + 1
        if child is None:
            break
        node = child
    return line


def load_manifests(paths: Iterable[str | Path]) -> list[RegisteredResource]:
    """The objects of :func:`read_manifests`; raises :class:`ManifestError` when a file cannot be read."""
    read = read_manifests(paths)
    if read.errors:
        raise ManifestError(read.errors)
    return read.resources
