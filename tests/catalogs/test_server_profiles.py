"""One profile module per inference server (catalogs/server_<name>.py), each exposing the same complete interface,
and every older catalog name reading its facts from them: adding a server is one module, its flag table and its
tests (docs/servers.md, "Adding a server")."""
import dataclasses
import importlib
from pathlib import Path

import pytest

from gpuplatform.catalogs import drain, server_cli, server_grammar, server_profiles, servers
from gpuplatform.catalogs.server_base import (GeneratingHealth, MetricsSwitch, Server, ServerCli, ServerDrain,
                                              ServerMetrics, ServerProfile)

CATALOGS = Path(server_profiles.__file__).parent
NOT_PROFILES = {"server_base", "server_profiles", "server_cli", "server_grammar"}


def test_every_server_module_is_registered_and_nothing_else():
    modules = {p.stem for p in CATALOGS.glob("server_*.py")} - NOT_PROFILES
    assert modules == {m.__name__.rsplit(".", 1)[-1] for m in server_profiles.SERVER_MODULES}
    assert list(server_profiles.PROFILES) == ["vllm", "sglang", "tgi", "triton"]


@pytest.mark.parametrize("module", server_profiles.SERVER_MODULES, ids=lambda m: m.__name__.rsplit("_", 1)[-1])
def test_each_profile_exposes_the_same_complete_interface(module):
    p = module.PROFILE
    assert isinstance(p, Server) and module.__name__.endswith("server_" + p.name)
    # the same shapes everywhere
    assert isinstance(p.cli, ServerCli) and p.cli.name == p.name
    assert isinstance(p.health, ServerProfile) and p.health.name == p.name
    assert isinstance(p.metrics, ServerMetrics) and p.metrics.path == "/metrics"
    assert p.metrics.switch is None or isinstance(p.metrics.switch, MetricsSwitch)
    assert p.generating_health is None or isinstance(p.generating_health, GeneratingHealth)
    # nothing left empty: a title, a flag table at a pinned release, entry points, an official image, health paths,
    # a start and a probe timeout, the flags that take secrets, a source
    assert p.title and p.source and p.cli.source
    assert p.flag_table_versions(), f"no catalogs/server_flags/{p.name}-<version>.json"
    # every release the generator is pinned to has its table, and no table is left from another
    assert set(p.flag_table_versions()) == set(p.flag_tables.releases)
    assert bool(p.flag_tables.repository and p.flag_tables.parser_path) is p.native_parser
    for version in p.flag_table_versions():
        table = server_grammar.flag_table(p.name, version)
        assert set(table["entrypoints"]) == set(p.entrypoints), version
    assert p.entrypoints and all(isinstance(cmd, str) and cmd for cmd in p.entrypoints.values())
    assert p.image_entrypoint is None or p.image_entrypoint in p.entrypoints
    assert p.official_images and all("/" in image for image in p.official_images)
    assert p.health.ready_path.startswith("/") and p.health.live_path.startswith("/")
    assert 0 < p.fastest_start_seconds <= p.health.start_overhead_seconds
    assert p.health.probe_timeout_seconds >= 1
    assert p.secret_flags and all(f.secret for f in p.secret_flags)
    assert p.shared_memory_gib is None or p.shared_memory_gib > 0
    assert isinstance(p.drain, ServerDrain) and p.drain.server == p.name and p.drain.source
    assert p.default_max_request_seconds > 0
    assert all(flag.startswith("--") for flag in p.token_limit_flags)
    assert all(need.server == p.name and need.source for need in p.capability_needs)
    # the option dests a profile names are options of its own flag table
    dests = {o["dest"] for version in p.flag_table_versions()
             for spec in server_grammar.flag_table(p.name, version)["entrypoints"].values() for o in spec["options"]}
    for dest in (*p.model_dests, *((p.metrics.switch.dest,) if p.metrics.switch else ()), *p.value_ranges,
                 *(need.dest for need in p.capability_needs)):
        assert dest in dests, (p.name, dest)


def test_every_profile_has_every_field_of_the_interface():
    fields = {f.name for f in dataclasses.fields(Server)}
    for p in server_profiles.PROFILES.values():
        assert {f.name for f in dataclasses.fields(p)} == fields


@pytest.mark.parametrize("name", list(server_profiles.PROFILES))
def test_the_older_catalog_names_read_the_profiles(name):
    p = server_profiles.PROFILES[name]
    assert server_cli.SERVER_CLIS[name] is p.cli
    assert servers.SERVER_PROFILES[name] is p.health
    assert server_grammar.TITLES[name] == p.title
    assert {**server_grammar.ENTRYPOINTS, **server_grammar.NATIVE_ENTRYPOINTS}[name] == p.entrypoints
    assert server_grammar.IMAGE_ENTRYPOINTS.get(name) == p.image_entrypoint
    assert server_cli.SHARED_MEMORY_GIB.get(name) == p.shared_memory_gib
    assert drain.SERVER_DRAINS[name] is p.drain
    assert drain.DEFAULT_MAX_REQUEST_SECONDS[name] == p.default_max_request_seconds
    assert drain.TOKEN_LIMIT_FLAGS.get(name, ()) == p.token_limit_flags
    assert [n for n in server_cli.CAPABILITY_NEEDS if n.server == name] == list(p.capability_needs)
    assert {d: r for (s, d), r in server_cli.RANGES.items() if s == name} == p.value_ranges


def test_the_names_other_modules_import_still_resolve():
    for module, names in {
        "gpuplatform.catalogs.server_cli": ("Flag", "CacheDir", "ServerCli", "SERVER_CLIS", "SHARED_MEMORY_GIB",
                                            "RUNAI_STREAMER", "VLLM_RUNAI_STREAMER_SINCE", "DRAIN_TIMEOUT",
                                            "BATCH_METRICS", "CAPABILITY_NEEDS", "CapabilityNeed", "RANGES"),
        "gpuplatform.catalogs.drain": ("ServerDrain", "SERVER_DRAINS", "DEFAULT_MAX_REQUEST_SECONDS",
                                       "TOKEN_LIMIT_FLAGS"),
        "gpuplatform.components.validation.servers": ("SGLANG_METRICS_WITHOUT_KEY", "TRITON_UNPROBED_CATEGORY"),
        "gpuplatform.catalogs.servers": ("ServerProfile", "SERVER_PROFILES", "VLLM_START", "SGLANG_START_SECONDS",
                                         "SGLANG_PROBE_TIMEOUT_SECONDS", "PROBE_TIMEOUT_SECONDS", "SERVER_NAMES",
                                         "start_overhead_seconds"),
    }.items():
        imported = importlib.import_module(module)
        assert all(hasattr(imported, n) for n in names), module
