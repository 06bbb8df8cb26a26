"""TGI v3.3.7 and Triton v2.49.0, whose parsers are Rust (clap) and C++ (getopt_long) and cannot run here: their
flag tables, read from the source at the tag (gpuplatform/server_sources.py), and the package's reading of a line
against them (catalogs/server_grammar.py ``read_native``): every option of each table given a good and a bad
value, a value on a switch, an unknown spelling; Triton's prefixes and booleans."""
import pytest

from gpuplatform.catalogs import server_grammar as g
from gpuplatform.server_sources import _enums, tgi_table, triton_table

TABLES = [("tgi", "3.3.7"), ("triton", "2.49.0")]
GOOD = {"int": "8", "float": "0.5", "bool": "true", "str": "x"}
BAD = {"int": "eight", "float": "half", "bool": "yes"}


def _opts(server, version):
    (spec,) = g.flag_table(server, version)["entrypoints"].values()
    return spec["options"]


@pytest.mark.parametrize("server,version", TABLES)
def test_every_option_takes_its_kind_of_value_and_refuses_another(server, version):
    checked = 0
    for o in _opts(server, version):
        name = o["option_strings"][0]
        if o["dest"] == "help" or name in ("--env",):
            continue
        if o["kind"] == "switch":
            assert g.read_native(server, version, [name]).accepted, name
            refused = g.read_native(server, version, [f"{name}=true"])
            assert not refused.accepted and refused.flag == name, name
        else:
            good = o["choices"][0] if o["kind"] == "choice" else GOOD[o["kind"]]
            r = g.read_native(server, version, [name, good])
            assert r.accepted and o["dest"] in r.given, (name, r.error)
            r = g.read_native(server, version, [f"{name}={good}"])
            assert r.accepted, (name, r.error)
            bad = "not-a-choice" if o["kind"] == "choice" else BAD.get(o["kind"])
            if bad is not None:
                r = g.read_native(server, version, [name, bad])
                assert not r.accepted and r.flag == name and bad in r.error, (name, r.error)
        checked += 1
    assert checked > 40
    unknown = g.read_native(server, version, ["--no-such-flag", "1"])
    assert not unknown.accepted and unknown.flag == "--no-such-flag"


def test_triton_reads_a_unique_prefix_and_refuses_an_ambiguous_one_and_yes_no():
    r = g.read_native("triton", "2.49.0", ["--model-repository=/models", "--allow-gpu-metrics", "off", "--http-p",
                                           "8000"])
    assert r.accepted and r.values["http_port"] == 8000 and r.values["allow_gpu_metrics"] is False
    assert "ambiguous" in g.read_native("triton", "2.49.0", ["--allow", "true"]).error
    r = g.read_native("triton", "2.49.0", ["--allow-metrics=yes"])
    assert not r.accepted and "invalid value for bool option: yes" in r.error


def test_tgi_reads_clap_spellings_only():
    assert g.read_native("tgi", "3.3.7", ["--num-shard", "2", "--quantize", "fp8"]).values["num_shard"] == 2
    assert not g.read_native("tgi", "3.3.7", ["--num_shard", "2"]).accepted  # clap has no underscore spelling
    assert not g.read_native("tgi", "3.3.7", ["--num-sh", "2"]).accepted  # nor prefixes
    assert "more than one flag" in g.read_native("tgi", "3.3.7", ["-p", "80"]).error


def test_the_source_readers_take_clap_and_getopt_declarations():
    rust = '''
#[derive(Clone, Copy, Debug, ValueEnum)]
enum Dtype {
    Float16,
    #[clap(name = "bfloat16")]
    BFloat16,
}
struct Args {
    /// doc
    #[clap(default_value = "3000", long, short, env)]
    port: u16,
    #[clap(long, env, value_enum)]
    dtype: Option<Dtype>,
    #[clap(long, env)]
    sharded: Option<bool>,
    #[clap(long, short, action)]
    env: bool,
}
'''
    assert _enums(rust) == {"Dtype": ["float16", "bfloat16"]}
    opts = {o["dest"]: o for o in tgi_table(rust, "v9.9.9", "c0ffee")["entrypoints"]["launcher"]["options"]}
    assert opts["port"]["option_strings"] == ["--port", "-p"] and opts["port"]["env"] == "PORT"
    assert (opts["dtype"]["kind"], opts["sharded"]["kind"], opts["env"]["kind"]) == ("choice", "bool", "switch")
    cc = '{OPTION_HTTP_PORT, "http-port", Option::ArgInt, "Port."}, {OPTION_X, "x-api",\n "<a>:<b>", "X"}'
    got = triton_table(cc, "v2.0.0", "c0ffee")["entrypoints"]["tritonserver"]["options"]
    assert [(o["option_strings"][0], o["kind"]) for o in got] == [("--http-port", "int"), ("--x-api", "str")]
