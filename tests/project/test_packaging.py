"""One import mechanism: ``gpuplatform.X`` is the folder ``gpuplatform/X``, for a checkout, an editable install and
a wheel alike; three of those folders link to the repository's top-level folders (pyproject.toml, README)."""
import ast
import shutil
import subprocess
import sys
import venv

import pytest

from support import REPO, clean_env, wheelhouse

LINKED = ("components", "catalogs", "policies")


@pytest.mark.parametrize("name", LINKED)
def test_the_subpackage_folder_links_to_the_top_level_folder(name):
    link = REPO / "gpuplatform" / name
    assert link.is_symlink(), f"gpuplatform/{name} must be a symbolic link to {name}/"
    # relative, so that it holds in any clone
    assert str(link.readlink()) == f"../{name}"
    assert link.resolve() == (REPO / name).resolve()


def test_the_package_does_not_extend_its_search_path():
    tree = ast.parse((REPO / "gpuplatform" / "__init__.py").read_text())
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    attributes = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert "__path__" not in names | attributes


def test_pyproject_maps_no_package_to_another_folder():
    import tomllib

    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    # the mapping setuptools cannot express as a path entry is what made the editable install a meta path finder
    assert setuptools["package-dir"] == {"": "."}
    assert setuptools["packages"]["find"]["include"] == ["gpuplatform*"]


def test_a_checkout_on_the_path_imports_every_subpackage_from_its_folder():
    """How the Pulumi CLI runs the checkout's policy pack and __main__.py: the checkout root first on sys.path."""
    probe = ("import sys; sys.path.insert(0, sys.argv[1])\n"
             "import gpuplatform.components.config, gpuplatform.catalogs.gpus, gpuplatform.policies.registry\n"
             "for m in ('gpuplatform.components.config', 'gpuplatform.catalogs.gpus', "
             "'gpuplatform.policies.registry'):\n"
             "    print(sys.modules[m].__file__)\n")
    proc = subprocess.run([sys.executable, "-c", probe, str(REPO)], cwd=REPO / "policies", capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [str(REPO / "gpuplatform" / "components" / "config.py"),
                                        str(REPO / "gpuplatform" / "catalogs" / "gpus.py"),
                                        str(REPO / "gpuplatform" / "policies" / "registry.py")]


def test_the_editable_install_is_a_plain_path_entry_and_warns_of_nothing(tmp_path):
    """`make install` installs the checkout editable; setuptools chooses a plain path entry when every package sits
    where its name says, and otherwise installs a meta path finder and prints a warning on every fresh install."""
    wheels = wheelhouse()
    src = tmp_path / "checkout"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src)
    for folder in ("gpuplatform", *LINKED):
        shutil.copytree(REPO / folder, src / folder, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__", "venv"))
    root = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(root)
    proc = subprocess.run([root / "bin" / "python", "-m", "pip", "install", "--no-deps", "--no-index",
                           "--disable-pip-version-check", "--find-links", str(wheels), "-e", str(src)],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    output = proc.stdout + proc.stderr
    for warning in ("Warning", "Editable installation", "Package would be ignored", "!!"):
        assert warning not in output, output
    [pth] = next((root / "lib").glob("python3*/site-packages")).glob("__editable__.gpu_platform-*.pth")
    assert pth.read_text().split() == [str(src)]
    # found, not imported: the venv has none of the components' dependencies
    probe = subprocess.run([root / "bin" / "python", "-c", "import sys, importlib.util as u; "
                            "print(*(u.find_spec(f'gpuplatform.{n}').origin for n in sys.argv[1:]), sep='\\n')",
                            *LINKED], capture_output=True, text=True, cwd=tmp_path, env=clean_env(root), timeout=120)
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.split() == [str(src / "gpuplatform" / n / "__init__.py") for n in LINKED]
