"""The package's import graph, read from the source with ``ast`` (no import runs): print one JSON line
{"modules", "imports", "function_level", "cycles", "cycle_sizes", "largest_cycle", "cycle_modules",
"components_to_policies", "policies_to_components", "ack_branches", "ack_branch_files", "ack_branches_outside_profile",
"ack_branch_files_outside_profile", "cluster_kind_branches_outside_profile"}, then the verdicts.

Every ``import gpuplatform...`` / ``from gpuplatform... import`` of every module under gpuplatform/ (the components,
catalogs and policies through their links) is an edge; ``function_level`` counts those inside a function.
``cycles`` is the number of strongly connected components with more than one module (Tarjan), ``largest_cycle``
the modules of the largest. ``ack_branches`` counts the source lines that name ``is_ack``, ``on_ack`` or
``is_ack_pro`` in code (a name, attribute, argument or keyword: the same word inside a string or comment does not
count), ``ack_branches_outside_profile`` those outside the cloud profiles (``components/clouds/``, where the
deprecated ``is_ack`` flags now live). ``cluster_kind_branches_outside_profile`` counts, for information, the lines
outside the profiles that compare a ``kind`` with a cluster kind string (``"ack-managed"``, ``"kubeconfig"``...):
questions a profile could answer that still ask the config directly. Targets: the layering that holds today,
components/ and policies/ never importing each other, no import cycle anywhere, and no ACK branch outside the cloud
profiles.

An edge is the module an import names: ``from gpuplatform.components.validation.common import x`` is an edge to
``validation.common``, not to the package ``validation`` whose ``__init__`` Python runs first. Python does run it,
so a graph without cycles is not all: a module below a package whose ``__init__`` imports back up to it would still
need an import inside a function (counted in ``function_level``). The builders import nothing of validation/ (what
both read, such as the cluster's version, sits in ``components.cluster_version``), so none is left for that.
"""
import ast
import io
import json
import os
import re
import sys
import tokenize
from pathlib import Path

from targets import exit_code, verdict

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "gpuplatform"
ACK_BRANCH = re.compile(r"^(is_ack|on_ack|is_ack_pro)$")
CLUSTER_KINDS = ("ack-managed", "ack-existing", "kubeconfig")
PROFILES = ROOT / "components" / "clouds"
"""The cloud profiles: the one place an ACK question may be asked by name."""


def modules() -> dict[str, Path]:
    out = {}
    # os.walk told to follow links: pathlib's ** does not enter gpuplatform/components, catalogs, policies
    found = [Path(d, f) for d, _, files in os.walk(PACKAGE, followlinks=True) for f in files if f.endswith(".py")]
    for path in sorted(found):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def edges(mods: dict[str, Path]) -> tuple[dict[str, set], int, int]:
    graph: dict[str, set] = {m: set() for m in mods}
    total = nested = 0
    for name, path in mods.items():
        tree = ast.parse(path.read_text())
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        inside = {id(n) for f in functions for n in ast.walk(f)}
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1] + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            for t in targets:
                while t and t not in mods:
                    t = t.rpartition(".")[0]
                if t and t != name and t.startswith("gpuplatform"):
                    graph[name].add(t)
                    total += 1
                    nested += id(node) in inside
    return graph, total, nested


def strongly_connected(graph: dict[str, set]) -> list[list[str]]:
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [c for c in out if len(c) > 1]


def _branch_lines(path: Path) -> tuple[int, int]:
    """(lines naming an ACK flag in code, lines comparing a ``kind`` with a cluster kind string) of one file."""
    flags, kinds = set(), {}
    for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
        if tok.type == tokenize.NAME and ACK_BRANCH.match(tok.string):
            flags.add(tok.start[0])
        line = kinds.setdefault(tok.start[0], set())
        if tok.type == tokenize.NAME and tok.string in ("kind", "in"):
            line.add(tok.string)
        elif tok.type == tokenize.OP and tok.string in ("==", "!="):
            line.add("compare")
        elif tok.type == tokenize.STRING and any(tok.string.strip("\"'") == k for k in CLUSTER_KINDS):
            line.add("literal")
    compared = sum("kind" in t and "literal" in t and ({"compare", "in"} & t) != set() for t in kinds.values())
    return len(flags), compared


def ack_branches() -> dict[str, int]:
    out = {"ack_branches": 0, "ack_branch_files": 0, "ack_branches_outside_profile": 0,
           "ack_branch_files_outside_profile": 0, "cluster_kind_branches_outside_profile": 0}
    for folder in ("gpuplatform", "components", "catalogs", "policies"):
        for path in sorted((ROOT / folder).glob("**/*.py")):
            if folder == "gpuplatform" and path.relative_to(ROOT / folder).parts[0] in ("components", "catalogs",
                                                                                        "policies"):
                continue
            flags, kinds = _branch_lines(path)
            out["ack_branches"] += flags
            out["ack_branch_files"] += bool(flags)
            if PROFILES not in path.parents:
                out["ack_branches_outside_profile"] += flags
                out["ack_branch_files_outside_profile"] += bool(flags)
                out["cluster_kind_branches_outside_profile"] += kinds
    return out


def crossing(graph: dict[str, set], source: str, target: str) -> list[str]:
    return sorted(f"{m} -> {t}" for m, ts in graph.items() if m.startswith(source) for t in ts if t.startswith(target))


def main() -> int:
    mods = modules()
    graph, total, nested = edges(mods)
    cycles = strongly_connected(graph)
    branches = ack_branches()
    down = crossing(graph, "gpuplatform.components", "gpuplatform.policies")
    up = crossing(graph, "gpuplatform.policies", "gpuplatform.components")
    largest = max(cycles, key=len) if cycles else []
    print(json.dumps({"modules": len(mods), "imports": total, "function_level": nested, "cycles": len(cycles),
                      "cycle_sizes": sorted((len(c) for c in cycles), reverse=True), "largest_cycle": largest,
                      "cycle_modules": sorted(cycles, key=len, reverse=True),
                      "components_to_policies": down, "policies_to_components": up, **branches}))
    results = [verdict("components/ imports nothing of policies/", not down, imports=down),
               verdict("policies/ imports nothing of components/", not up, imports=up),
               verdict("no import cycle", not cycles, cycles=cycles),
               verdict("no is_ack-style branch outside the cloud profiles (components/clouds/)",
                       branches["ack_branches_outside_profile"] == 0,
                       outside=branches["ack_branches_outside_profile"])]
    return exit_code(results)


if __name__ == "__main__":
    sys.exit(main())
