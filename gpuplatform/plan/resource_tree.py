"""The resource tree of a plan, in the order ``pulumi preview`` draws it (``plan.json`` lists the resources in the
same order)."""
from typing import Any

from gpuplatform.records import RegisteredResource


def ordered(records: list[RegisteredResource]) -> list[tuple[int, RegisteredResource]]:
    """Depth-first tree order (children sorted by type, then name), so output is stable run to run. Children are
    found by their parent's URN: a logical name is unique only with its type and parent, and two components of
    one name (a GpuCluster and a WorkloadNamespace both called ``ml``) are two parents. A resource whose parent
    is not among ``records`` (the stack itself) is a root."""
    urns = {r.urn for r in records if r.urn}
    children: dict[Any, list[RegisteredResource]] = {}
    for r in records:
        children.setdefault(r.parent_urn if r.parent_urn in urns else None, []).append(r)
    out: list[tuple[int, RegisteredResource]] = []

    def walk(parent, depth):
        for r in sorted(children.get(parent, []), key=lambda x: (x.custom, x.type, x.name)):
            out.append((depth, r))
            if r.urn:
                walk(r.urn, depth + 1)

    walk(None, 0)
    return out


def tree_text(records: list[RegisteredResource]) -> str:
    """The resource tree as ``pulumi preview`` draws it: ``+`` for a create (an offline plan creates everything),
    children under their parent with ``├─``/``└─``."""
    rows = ordered(records)
    lines = []
    for i, (depth, r) in enumerate(rows):
        guides = ""
        for level in range(depth):
            last = _last_at(rows, i, level + 1)
            if level == depth - 1:
                guides += "└─ " if last else "├─ "
            else:
                guides += "   " if last else "│  "
        flags = " [protect]" if r.protect else ""
        lines.append(f"+ {guides}{r.name}  ({r.type}){flags}")
    return "\n".join(lines)


def _last_at(rows: list[tuple[int, RegisteredResource]], i: int, depth: int) -> bool:
    """Whether the ancestor of row ``i`` at ``depth`` (or the row itself) is the last child of its parent."""
    k = i
    while rows[k][0] > depth:
        k -= 1
    for later, _ in rows[k + 1:]:
        if later < depth:
            return True
        if later == depth:
            return False
    return True
