"""Every name the project's code uses is defined or imported where it is used.

A name that resolves nowhere fails only when its line runs, and some lines run only on an engine's path (the real
loop's KEDA start-up, say) or on an error path no unit test reaches. pyflakes reads each module's scopes as Python
does and reports such names without running anything; unused imports are not reported here, since a package's
``__init__`` re-exports what it imports."""
from pyflakes import api, messages
from pyflakes.reporter import Reporter

from support import REPO

CHECKED = ("gpuplatform", "components", "catalogs", "policies", "tests", "benchmarks", "examples")
UNRESOLVED = (messages.UndefinedName, messages.UndefinedLocal, messages.UndefinedExport)


class _Collect(Reporter):
    def __init__(self):
        super().__init__(None, None)
        self.found: list[str] = []

    def flake(self, message):
        if isinstance(message, UNRESOLVED):
            self.found.append(str(message))

    def syntaxError(self, filename, msg, lineno, offset, text):  # noqa: N802 - pyflakes' name
        self.found.append(f"{filename}:{lineno}: {msg}")

    def unexpectedError(self, filename, msg):  # noqa: N802 - pyflakes' name
        self.found.append(f"{filename}: {msg}")


def _python_files():
    seen = set()
    for top in CHECKED:
        root = REPO / top
        if not root.exists():
            continue
        for path in sorted(root.rglob("*.py")):
            real = path.resolve()
            if real in seen or any(part in (".venv", "__pycache__", "build") for part in path.parts):
                continue
            seen.add(real)
            yield path


def _unresolved(source: str, name: str) -> list[str]:
    reporter = _Collect()
    api.check(source, name, reporter)
    return reporter.found


def test_a_name_used_and_never_imported_is_found():
    assert _unresolved("import os\n\ndef f():\n    return shutil.which('x')\n", "m.py") == [
        "m.py:4:12: undefined name 'shutil'"]
    assert _unresolved("import shutil\n\ndef f():\n    return shutil.which('x')\n", "m.py") == []


def test_every_name_the_project_uses_resolves():
    files = list(_python_files())
    assert len(files) > 300
    found = [f for path in files for f in _unresolved(path.read_text(), str(path.relative_to(REPO)))]
    assert found == []
