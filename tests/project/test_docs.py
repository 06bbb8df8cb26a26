"""Every public args field and config field is documented with its default (terraform-aws-eks style)."""
import ast
import gc
import inspect

import pytest

from gpuplatform import components
from gpuplatform.components import config as config_module
from support import REPO

ARGS = [components.GpuClusterArgs, components.GpuNodePoolArgs, components.GpuMonitoringArgs, components.GpuSoftwareArgs,
        components.WorkloadNamespaceArgs, components.GpuAlertsArgs,
        components.InferenceServiceArgs, components.GpuPlatformArgs]


def _parse(source: str) -> ast.Module:
    """``ast.parse`` with the cyclic garbage collector paused: CPython 3.11 can raise "SystemError: AST constructor
    recursion depth mismatch" when a collection runs finalizers while the tree is built, in a process that has run
    other code first (python/cpython#106905; the fix was not released for 3.11)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(source)
    finally:
        if was_enabled:
            gc.enable()


def _field_docs(cls) -> dict[str, str]:
    """Attribute docstrings: a string literal right after an annotated assignment."""
    tree = _parse(inspect.getsource(cls))
    body = tree.body[0].body
    docs = {}
    for node, nxt in zip(body, body[1:] + [None]):
        if isinstance(node, ast.AnnAssign) and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant):
            docs[node.target.id] = nxt.value.value
    return docs


@pytest.mark.parametrize("cls", ARGS, ids=lambda c: c.__name__)
def test_every_args_field_has_a_docstring_with_its_default(cls):
    docs = _field_docs(cls)
    for field in cls.__annotations__:
        assert field in docs, f"{cls.__name__}.{field} has no docstring"
        assert "Default" in docs[field] or "Required" in docs[field], f"{cls.__name__}.{field}: state the default"


def test_optional_config_fields_state_their_default():
    missing = []
    for name, cls in inspect.getmembers(config_module, inspect.isclass):
        if not issubclass(cls, config_module.Model) or cls is config_module.Model:
            continue
        docs = _field_docs(cls)
        for field, info in cls.model_fields.items():
            if not info.is_required() and "efault" not in docs.get(field, ""):
                missing.append(f"{name}.{field}")
    assert not missing, missing


def test_the_reuse_guide_lists_every_public_arg():
    """docs/reuse.md's args reference names each args key of each public component, and no other."""
    import re

    from gpuplatform.components.args import _hints

    text = (REPO / "docs" / "reuse.md").read_text()
    sections = dict(re.findall(r"^### (\w+)\n(.*?)(?=^### |\Z)", text.split("## Args reference", 1)[1],
                               flags=re.S | re.M))
    classes = [n for n in components.__all__ if n.endswith("Args")]
    assert set(sections) == {n.removesuffix("Args") for n in classes}
    for name in classes:
        listed = set(re.findall(r"^\| `(\w+)` \|", sections[name.removesuffix("Args")], flags=re.M))
        assert listed == set(_hints(getattr(components, name))), name


def test_the_gpu_model_table_is_the_catalog():
    """docs/gpus.md lists every catalog model with the catalog's memory, nvidia-smi total, MIG, architecture and
    product label, and no other model."""
    import re

    from gpuplatform.catalogs.gpus import GPU_MODELS, gpu_product_label

    section = (REPO / "docs" / "gpus.md").read_text()
    rows = re.findall(r"^\| ([^|]+?) \| (\d+) \| (\d+|not sourced) \| (yes|no) \| (\w+) \| `([^`]+)` \|", section,
                      flags=re.M)
    documented = {r[0]: r[1:] for r in rows}
    expected = {n: (str(m.memory_gb), str(m.reported_mib) if m.reported_mib is not None else "not sourced",
                    "yes" if m.mig_capable else "no", m.architecture, gpu_product_label(m))
                for n, m in GPU_MODELS.items()}
    assert documented == expected


def test_the_configuration_guide_names_every_catalog_gpu_model():
    import re

    from gpuplatform.catalogs.gpus import GPU_MODELS

    text = (REPO / "docs" / "configuration.md").read_text()
    para = text.split("The catalog's GPU models (`gpuModel`", 1)[1].split("\n\n", 1)[0]
    listed = para.split(" are ", 1)[1].split(";", 1)[0]
    names = set()
    for item in re.split(r",\s*(?:and\s+)?|\s+and\s+", listed.replace("\n", " ")):
        base, _, sizes = item.strip().partition("-")
        names |= {item.strip()} if "/" not in sizes else {f"{base}-{s}" for s in sizes.split("/")}
    assert names == set(GPU_MODELS)


def test_the_configuration_guide_metric_table_lists_every_catalog_metric_and_its_api_name():
    """docs/configuration.md's metric table has one row per catalog metric, and no other; an app metric's row names the API name
    the adapter serves it under, and a renamed series' row names both of its series names."""
    import re

    from gpuplatform.catalogs.metrics import METRICS

    text = (REPO / "docs" / "configuration.md").read_text()
    table = text.split("| metric | meaning |", 1)[1].split("\n\n", 1)[0]
    rows = dict(re.findall(r"^\| `(\w+)` \|(.*)$", table, flags=re.M))
    assert set(rows) == set(METRICS)
    for name, metric in METRICS.items():
        if metric.category != "app":
            continue
        (src,) = metric.sources
        assert f"`{src.api_name}`" in rows[name], name
        for series in src.names:
            if len(src.names) > 1:
                assert f"`{series.removesuffix('_bucket')}`" in rows[name], (name, series)


def test_every_policy_count_the_docs_state_is_the_packs():
    """One number everywhere: each "N policies" in README.md and docs/*.md is the pack's count (the registry),
    which `gpuplatform check` prints too; the API server's checks are no policy of the pack and are not in it."""
    import re

    from gpuplatform.policies.pack import POLICY_DEFS

    claims = [(path.name, int(m.group(1))) for path in [REPO / "README.md", *sorted((REPO / "docs").glob(
        "*.md"))] for m in re.finditer(r"\b(\d+) policies\b", path.read_text())]
    assert ("README.md", len(POLICY_DEFS)) in claims
    assert all(n == len(POLICY_DEFS) for _, n in claims), (len(POLICY_DEFS), claims)


def _figures_recipe() -> list[str]:
    """The commands of the Makefile's ``figures`` target."""
    lines = (REPO / "Makefile").read_text().splitlines()
    start = lines.index("figures: $(VENV)/.installed") + 1
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("\t"))
    return [line.strip() for line in lines[start:end]]


def test_every_figure_the_docs_show_exists_is_small_and_make_figures_draws_it():
    import re

    shown = {}
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for target in re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", doc.read_text()):
            shown[(doc.parent / target).resolve()] = doc.name
    on_disk = {p.resolve() for p in (REPO / "docs").rglob("*.png")}
    assert shown and set(shown) == on_disk  # none missing, none left over
    recipe = "\n".join(_figures_recipe()).replace("$(VENV)/bin/gpuplatform", "gpuplatform")
    recipe = recipe.replace("$(FIGURES)", "docs/figures")
    for path, doc in shown.items():
        assert path.stat().st_size < 150_000, f"{path.name} is {path.stat().st_size} bytes"
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        relative = path.relative_to(REPO).as_posix()
        command = next((c for c in recipe.splitlines() if f"--plot {relative}" in c), None)
        assert command, f"{relative} (shown in {doc}) is not drawn by `make figures`"
        text = " ".join((REPO / "docs" / "simulate.md").read_text().split())
        assert command.removesuffix(" >/dev/null") in text, f"docs/simulate.md does not show how {relative} is drawn"


def _table_rows_with_a_wrong_cell_count(text: str) -> list[str]:
    """Rows of the Markdown tables in ``text`` whose number of cells differs from their header's (escaped pipes
    and pipes inside inline code do not separate cells)."""
    import re

    def cells(line: str) -> int:
        line = re.sub(r"`[^`]*`", "``", line.replace("\\|", ""))
        return line.strip().strip("|").count("|") + 1

    wrong, header = [], None
    for line in text.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        if header is None:
            header = cells(line)
        elif cells(line) != header:
            wrong.append(line)
    return wrong


def test_every_table_row_of_the_docs_has_a_cell_for_each_column():
    assert _table_rows_with_a_wrong_cell_count("| a | b |\n|---|---|\n| 1 |\n") == ["| 1 |"]
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        assert _table_rows_with_a_wrong_cell_count(doc.read_text()) == [], doc.name


def test_the_readme_starts_fast_and_every_link_it_gives_exists():
    """An introduction, not a manual: the two commands near the top, about 150 lines, and every page it sends the
    reader to is there (the reference lives in docs/, the upgrade notes in CHANGELOG.md)."""
    import re

    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= 160, len(lines)
    top = "\n".join(lines[:20])
    assert "make plan " in top and "make test " in top
    targets = {m for line in lines for m in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", line)
               if not m.startswith("http")}
    assert {"CHANGELOG.md", "docs/configuration-reference.md", "docs/deploy.md", "docs/install.md"} <= targets
    assert [t for t in targets if not (REPO / t).exists()] == []


def test_every_test_file_the_docs_name_exists():
    """A test the docs cite as evidence is there to run: moving a test file means moving its citations too. The
    development guide's naming example (``test_<module>_<aspect>.py``) names a pattern, not a file."""
    import re

    pattern = re.compile(r"`(tests/[A-Za-z0-9_/.-]+\.py)")
    cited = {(doc.name, path) for doc in [REPO / "README.md", REPO / "CHANGELOG.md", *sorted((REPO / "docs").glob("*.md"))]
             for path in pattern.findall(doc.read_text())}
    example = ("development.md", "tests/components/validation/test_pools.py")
    assert example in cited
    assert sorted((name, path) for name, path in cited - {example} if not (REPO / path).exists()) == []
