"""The servers' flag tables (``catalogs/server_flags/<server>-<version>.json``, generated from each server's own
parser by ``gpuplatform/server_parsers.py``): which versions the catalog holds and the table of one. A module of its
own below the server profiles and their grammar: a profile (:class:`~gpuplatform.catalogs.server_base.Server`) asks
which versions it has tables for, and the grammar (server_grammar.py), which reads the profiles, reads the tables.
"""
from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Optional

TABLES_DIR = Path(__file__).with_name("server_flags")


def known_versions(server: str) -> tuple[str, ...]:
    """The versions of ``server`` the tables know, oldest first."""
    found = [p.stem.split("-", 1)[1] for p in TABLES_DIR.glob(f"{server}-*.json")]
    return tuple(sorted(found, key=lambda v: tuple(int(x) for x in re.findall(r"\d+", v))))


@functools.lru_cache(maxsize=None)
def flag_table(server: str, version: str) -> Optional[dict]:
    """The generated table of ``server`` at ``version`` (``0.9.2``), or None when the tables do not know it."""
    path = TABLES_DIR / f"{server}-{version}.json"
    if not path.is_file():
        return None
    return json.loads(path.read_text())
