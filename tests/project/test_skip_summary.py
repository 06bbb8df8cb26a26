"""`make test -rs` prints one line per distinct skip reason, however many tests and files skip for it."""
import subprocess
import sys
import textwrap

from support import REPO


def test_a_reason_many_tests_skip_for_is_summarised_once(tmp_path):
    (tmp_path / "conftest.py").write_text(textwrap.dedent('''
        import pytest

        @pytest.fixture(scope="session")
        def tool():
            pytest.skip("no tool: fetch it with\\nfetch tool --version 1")
        '''))
    for name in ("test_a.py", "test_b.py"):
        (tmp_path / name).write_text("def test_one(tool):\n    pass\n\n\ndef test_two(tool):\n    pass\n\n\n"
                                     "def test_other():\n    import pytest\n    pytest.skip('another reason')\n")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:cloudcoil", "-p", "skip_summary",
                          str(tmp_path)], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(REPO / "tests"), "PATH": "", "HOME": str(tmp_path)})
    assert run.returncode == 0, run.stdout + run.stderr
    skipped = [line for line in run.stdout.splitlines() if line.startswith("SKIPPED")]
    assert len(skipped) == 2, run.stdout
    assert skipped[0].startswith("SKIPPED [4] ") and skipped[0].endswith("no tool: fetch it with")
    assert skipped[1].startswith("SKIPPED [2] ") and skipped[1].endswith("another reason")
    assert run.stdout.count("fetch tool --version 1") == 1
