"""tests/ mirrors the source tree (docs/development.md, "Where a test goes"): the tests of ``components/pools.py``
sit in ``tests/components/`` as ``test_pools.py`` or ``test_pools_<aspect>.py``, those of
``gpuplatform/simulate/hpa.py`` in ``tests/gpuplatform/simulate/``; the tests of the project as a whole (docs, the
Makefile, packaging, examples, stacks, the suite itself) in ``tests/project/``. The tests that need an engine sit in
its folder (``tests/helm/``, ``tests/promtool/``, ``tests/realengines/``: its conftest gives them the engine, and
marks them), mirrored the same way inside. A test file anywhere else fails here with the place it belongs."""
import ast
from collections import Counter
from pathlib import Path

from support import REPO, TESTS

# the source folders tests/ mirrors, each with its subfolders of modules
SOURCE_ROOTS = ("components", "catalogs", "policies", "gpuplatform", "benchmarks")
# the import names of the folders gpuplatform/ links to (pyproject.toml: gpuplatform.components is components/)
LINKED = {"gpuplatform.components": "components", "gpuplatform.catalogs": "catalogs",
          "gpuplatform.policies": "policies"}
ENGINE_FOLDERS = ("helm", "promtool", "realengines")
PROJECT = "project"
RULE = ("a test file sits in the folder of tests/ that mirrors the source folder of the module it tests, named "
        "test_<module>.py or test_<module>_<aspect>.py (<module> a module or subpackage of that folder, or the "
        "folder itself); a test of the project as a whole (docs, Makefile, packaging, examples, stacks, the suite) "
        "goes to tests/project/; a test that needs an engine goes under tests/helm/, tests/promtool/ or "
        "tests/realengines/, mirrored the same way inside (docs/development.md, \"Where a test goes\")")


def source_folders(repo: Path) -> dict[str, set[str]]:
    """Folder relative to the repository -> the names a test file there may start with: its modules (``__main__``
    as ``main``), its subpackages and its own name. Symbolic links (gpuplatform/components) are not folders of
    their own: their tests mirror the folder linked to."""
    folders: dict[str, set[str]] = {}
    for root in SOURCE_ROOTS:
        for folder in [repo / root, *sorted((repo / root).rglob("*"))]:
            if not folder.is_dir() or folder.name == "__pycache__" or any(
                    p.is_symlink() for p in [folder, *folder.parents] if repo in p.parents):
                continue
            modules = {p.stem.strip("_") for p in folder.glob("*.py") if p.stem != "__init__"}
            packages = {p.name for p in folder.iterdir() if (p / "__init__.py").is_file() and not p.is_symlink()}
            if modules or packages:
                folders[folder.relative_to(repo).as_posix()] = modules | packages | {folder.name}
    return folders


def _module_path(dotted: str, repo: Path) -> Path | None:
    """``gpuplatform.simulate.hpa`` -> gpuplatform/simulate/hpa.py (a package -> its folder), or None."""
    for prefix, folder in LINKED.items():
        if dotted == prefix or dotted.startswith(prefix + "."):
            dotted = folder + dotted[len(prefix):]
            break
    parts = dotted.split(".")
    if parts[0] not in SOURCE_ROOTS:
        return None
    path = repo.joinpath(*parts)
    if path.with_suffix(".py").is_file():
        return path.with_suffix(".py")
    return path if (path / "__init__.py").is_file() else None


def suggested_place(test_file: Path, repo: Path) -> str:
    """Where the file belongs, read from what it imports most: ``tests/<folder>/test_<module>.py``."""
    counts: Counter[Path] = Counter()
    for node in ast.walk(ast.parse(test_file.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                target = _module_path(f"{node.module}.{alias.name}", repo) or _module_path(node.module, repo)
                if target is not None:
                    counts[target] += 1
        elif isinstance(node, ast.Import):
            for alias in node.names:
                target = _module_path(alias.name, repo)
                if target is not None:
                    counts[target] += 1
    if not counts:
        return f"tests/{PROJECT}/{test_file.name}"
    target = counts.most_common(1)[0][0]
    if target.suffix == ".py":
        folder, name = target.parent.relative_to(repo).as_posix(), target.stem.strip("_")
    else:
        folder, name = target.relative_to(repo).as_posix(), target.name
    return f"tests/{folder}/test_{name}.py (or test_{name}_<aspect>.py)"


def layout_problems(tests: Path, repo: Path) -> list[str]:
    folders = source_folders(repo)
    problems = []
    for test_file in sorted(tests.rglob("test_*.py")):
        rel = test_file.relative_to(tests)
        if rel.parts[0] in ("fixtures",) or "__snapshots__" in rel.parts:
            continue
        parts = rel.parts[:-1]
        engine = parts[0] if parts and parts[0] in ENGINE_FOLDERS else None
        mirrored = "/".join(parts[1:] if engine else parts)
        if mirrored == PROJECT:
            continue
        stem = test_file.stem.removeprefix("test_")
        names = folders.get(mirrored)
        if names is not None and any(stem == n or stem.startswith(n + "_") for n in names):
            continue
        place = suggested_place(test_file, repo)
        if engine:
            place = place.replace("tests/", f"tests/{engine}/", 1)
        top = f"tests/{engine}/" if engine else "tests/"
        if not mirrored:
            where = f"{top} holds no test files of its own"
        elif names is None:
            where = f"{top}{mirrored}/ mirrors no source folder"
        else:
            where = f"its name starts with none of {', '.join(sorted(names))} (the modules of {mirrored}/)"
        problems.append(f"tests/{rel.as_posix()}: {where}; by what it imports it belongs at {place}. Rule: {RULE}.")
    return problems


def test_every_test_file_sits_in_the_mirror_of_the_folder_it_tests():
    problems = layout_problems(TESTS, REPO)
    assert not problems, "\n".join(problems)


def test_test_file_names_are_unique_across_the_tree():
    """pytest imports each test module by its file name (no packages; tests/conftest.py puts every test folder on
    sys.path), so two files of one name in two folders would be one module."""
    names = Counter(p.name for p in TESTS.rglob("test_*.py") if "fixtures" not in p.relative_to(TESTS).parts)
    twice = sorted(name for name, count in names.items() if count > 1)
    assert not twice, f"test file names used in more than one folder of tests/ (add the aspect to one): {twice}"


def test_every_engine_folder_has_the_conftest_that_gives_its_engine():
    for engine in ENGINE_FOLDERS:
        assert (TESTS / engine / "conftest.py").is_file(), engine


def _write(tests: Path, rel: str, source: str) -> None:
    path = tests / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)


def test_a_test_file_dropped_in_the_wrong_place_is_told_where_it_belongs(tmp_path):
    tests = tmp_path / "tests"
    _write(tests, "test_hpa_windows.py", "from gpuplatform.simulate.hpa import desired\n"
                                         "from gpuplatform.simulate.hpa import behaviour, window\n"
                                         "from gpuplatform.components.validation import load\n")
    _write(tests, "policies/test_policy_new_rule.py", "from gpuplatform.components.validation.pools import a, b\n"
                                                      "from gpuplatform.policies.registry import by_id\n")
    _write(tests, "promtool/test_new_query.py", "from gpuplatform.components.adapter_rules import rules\n")
    _write(tests, "gpuplatform/components/test_pools.py", "from gpuplatform.components import pools\n")
    _write(tests, "test_readme.py", "import yaml\n")
    problems = {p.split(":")[0]: p for p in layout_problems(tests, REPO)}
    assert set(problems) == {"tests/test_hpa_windows.py", "tests/policies/test_policy_new_rule.py",
                             "tests/promtool/test_new_query.py", "tests/gpuplatform/components/test_pools.py",
                             "tests/test_readme.py"}
    assert "belongs at tests/gpuplatform/simulate/test_hpa.py (or test_hpa_<aspect>.py)" in \
        problems["tests/test_hpa_windows.py"]
    assert "starts with none of" in problems["tests/policies/test_policy_new_rule.py"]
    assert "belongs at tests/components/validation/test_pools.py" in problems["tests/policies/test_policy_new_rule.py"]
    assert "belongs at tests/promtool/components/test_adapter_rules.py" in problems["tests/promtool/test_new_query.py"]
    assert "tests/gpuplatform/components/ mirrors no source folder" in \
        problems["tests/gpuplatform/components/test_pools.py"]
    assert "belongs at tests/components/test_pools.py" in problems["tests/gpuplatform/components/test_pools.py"]
    assert "belongs at tests/project/test_readme.py" in problems["tests/test_readme.py"]
    assert all("Rule: a test file sits in the folder" in p for p in problems.values())


def test_test_files_in_their_places_pass(tmp_path):
    tests = tmp_path / "tests"
    for rel in ("components/validation/test_pools.py", "components/validation/test_pools_gpu_counts.py",
                "gpuplatform/simulate/test_simulate.py", "gpuplatform/test_main.py", "catalogs/test_catalogs.py",
                "project/test_readme.py", "realengines/gpuplatform/rehearse/test_controlplane.py",
                "helm/project/test_charts_fetch.py", "fixtures/corpus/test_not_a_test.py"):
        _write(tests, rel, "import yaml\n")
    assert layout_problems(tests, REPO) == []
