"""The suite's ``xdist_group`` marks take effect under ``--dist loadgroup``: the Helm renders and the fresh
virtualenvs a group shares are then built once, on one worker. With pytest 9.2 and pytest-xdist 3.8 they silently
do not (pytest-dev/pytest-xdist#1386); requirements.txt pins a pytest with which they do, and this test fails on a
pin with which they would not."""
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.xdist_group("xdist-groups")


def test_marked_and_conftest_grouped_tests_run_on_one_worker(tmp_path):
    (tmp_path / "conftest.py").write_text(textwrap.dedent('''
        import pytest

        @pytest.hookimpl(tryfirst=True)
        def pytest_collection_modifyitems(items):
            for item in items:
                if "by_conftest" in item.name:
                    item.add_marker(pytest.mark.xdist_group("added"))
    '''))
    (tmp_path / "test_a.py").write_text(textwrap.dedent('''
        import pytest

        @pytest.mark.xdist_group("marked")
        @pytest.mark.parametrize("i", range(6))
        def test_marked(i):
            pass

        @pytest.mark.parametrize("i", range(6))
        def test_by_conftest(i):
            pass

        @pytest.mark.parametrize("i", range(6))
        def test_free(i):
            pass
    '''))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v", "-p",
                           "no:cacheprovider", "-p", "no:cloudcoil", str(tmp_path)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    runs: dict[str, list] = {"marked": [], "added": []}
    for line in proc.stdout.splitlines():
        if "PASSED" not in line:
            continue
        worker, nodeid = line.split()[0], line.split()[-1]
        group = "marked" if "::test_marked[" in nodeid else "added" if "::test_by_conftest[" in nodeid else None
        if group is not None:
            assert nodeid.endswith(f"@{group}"), line
            runs[group].append(worker)
    assert [len(r) for r in runs.values()] == [6, 6] and all(len(set(r)) == 1 for r in runs.values()), runs
