"""The inference servers the package knows, one profile module each (catalogs/server_vllm.py, server_sglang.py,
server_tgi.py, server_triton.py, each a :class:`~gpuplatform.catalogs.server_base.Server`): the command-line model,
the flag tables, health and start facts, metrics, official images, shared memory and the flags that take secrets.
Everything that asks about a server (the manifests, validation, the policies, the docs) reads it here or through
the older catalogs that re-export it (server_cli.py, servers.py, server_grammar.py).

Adding a server: docs/servers.md, "Adding a server".
"""
from __future__ import annotations

from typing import Optional

from gpuplatform.catalogs import server_sglang, server_tgi, server_triton, server_vllm
from gpuplatform.catalogs.server_base import Server

SERVER_MODULES = (server_vllm, server_sglang, server_tgi, server_triton)

PROFILES: dict[str, Server] = {m.PROFILE.name: m.PROFILE for m in SERVER_MODULES}


def profile(name: Optional[str]) -> Optional[Server]:
    """The profile of a server by its name (``vllm``), None for a name the package does not know."""
    return PROFILES.get(name or "")
