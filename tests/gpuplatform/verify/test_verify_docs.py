"""docs/verify.md describes every check the verify package can report, and no other."""
from __future__ import annotations

import re

from k8s_fixture_server import REPO

SOURCES = REPO / "gpuplatform" / "verify"
ID = r'"([a-z]+\.[a-z-]+)"'


def source_check_ids() -> set[str]:
    ids = set()
    for path in SOURCES.glob("*.py"):
        text = path.read_text()
        ids |= set(re.findall(r"_(?:pass|fail|warn)\(\s*" + ID, text))
        ids |= set(re.findall(r"^[A-Z_]*CHECK = " + ID, text, flags=re.M))
    return ids


def test_every_check_id_has_a_row_in_the_checks_table():
    ids = source_check_ids()
    assert {"cluster.system-pods", "sharing.cgpu-component", "model.load-time", "startup.fluid-cache"} <= ids
    documented = set(re.findall(r"^\| `([a-z]+\.[a-z-]+)` \|", (REPO / "docs" / "verify.md").read_text(), flags=re.M))
    assert documented == ids
