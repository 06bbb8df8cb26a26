"""Command lines for the differential test (tests/gpuplatform/test_server_parsers.py): each server's entry points given every
shape the issue names, both ways: every option of the table at least once, written as the parser accepts it and
as it refuses it (a value on a switch, a bad choice, a wrong type, ``--no-`` on a switch that has none), its
underscore spelling, unique and ambiguous prefixes, flags of other servers and of other versions, and the
entry-point mistakes (``vllm serve ... --model``, a positional model under the api_server entry point)."""
from __future__ import annotations

from gpuplatform.catalogs import server_grammar as g

BASE = {("vllm", "serve"): ["facebook/opt-125m"], ("vllm", "api_server"): ["--model", "facebook/opt-125m"],
        ("sglang", "launch_server"): ["--model-path", "facebook/opt-125m"]}

OPAQUE_DESTS_SKIPPED = ("chat_template",)
"""Options whose reading depends on the image's file system (vLLM checks that a chat template path exists)."""

HAND_WRITTEN = {
    ("vllm", "serve"): [
        ["--tensor-parallel-size", "4"], ["-tp", "2", "-pp", "2"], ["--enforce-eager", "--no-enforce-eager"],
        ["--no-enforce-eager", "--enforce-eager"], ["--enforce-eager=true"], ["--disable-log-stats=true"],
        ["--model", "x"], ["--uds", "/tmp/s"], ["-pcp", "2"], ["--num-shard", "2"], ["--max_num_seqs", "8"],
        ["--gpu-memory-utilization=90"], ["--gpu-memory-utilization", "0.95"], ["--dtype", "bf16"],
        ["--dtype", "bfloat16"], ["--quantization", "fp8"], ["--tensor-parallel", "2"], ["--tensor", "2"],
        ["--port", "8000", "--port", "9000"], ["--port=-1"], ["--port", "-1"], ["--host", "0.0.0.0"],
        ["--enable-auto-tool-choice"], ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"],
        ["--max-model-len", "32k"], ["--max-model-len", "1K"], ["--max-model-len", "1.5K"],
        ["--hf-overrides", '{"a": 1}'], ["--hf-overrides", "a=1,b=2"], ["--hf-overrides", "a=b"],
        ["--hf-overrides.rope_scaling.factor", "2"], ["--limit-mm-per-prompt", "image=2"], ["-O3"], ["-O", "3"],
        ["--api-key", "$(VLLM_API_KEY)"], ["--served-model-name", "a", "b"], ["--served-model-name"],
        ["--lora-modules", "a=/x"], ["--help"], ["--data-parallel-size", "2", "--data-parallel-size-local", "1"],
        ["second-model"], ["--", "x"], ["--load-format", "runai_streamer"], ["--load-format", "tensorizer2"],
    ],
    ("vllm", "api_server"): [
        ["facebook/opt-125m"], ["--tensor-parallel-size", "4"], ["--tp", "2"], ["--uds", "/tmp/s"],
        ["--enforce-eager=false"], ["--no-disable-log-stats"], ["--max_num_seqs=4"], ["--port", "80a"],
        ["--kv-cache-dtype", "fp8"], ["--kv-cache-dtype", "fp4"], ["--swap-space", "4.5"],
    ],
    ("sglang", "launch_server"): [
        ["--tp", "2"], ["--tp-size", "2"], ["--tp_size", "2"], ["--tensor-parallel-size", "2"], ["--tp", "x"],
        ["--enable-metrics"], ["--enable-metrics=true"], ["--no-enable-metrics"], ["--dp", "2"], ["--pp", "2"],
        ["--mem-fraction-static", "0.8"], ["--mem-fraction-static", "80%"], ["--model", "m2"],
        ["--attention-backend", "fa3"], ["--attention-backend", "flashattn"], ["--dtype", "bfloat16"],
        ["--quantization", "fp8"], ["--quantization", "fp4x"], ["--port", "30000", "--host", "0.0.0.0"],
        ["--api-key", "$(SGLANG_API_KEY)"], ["--max-running-requests", "64"], ["--tensor-parallel-size=2"],
        ["--t", "2"], ["--help"], ["--uds", "/x"], ["--gpu-memory-utilization", "0.9"], ["--max-num-seqs", "8"],
        ["--json-model-override-args", '{"a": 1}'], ["--lora-paths", "a=/x", "b"], ["--enable-lora"],
    ],
}

FOREIGN = ["--num-shard", "--max-batch-size", "--http-port", "--model-repository", "--cuda-memory-fraction"]
"""Flags of TGI and Triton, which neither argparse server has."""


def _value_cases(o: dict) -> list[list[str]]:
    """Lines that give option ``o`` a value, good and bad, in both spellings (``--x v`` and ``--x=v``)."""
    name = next((s for s in o["option_strings"] if s.startswith("--")), o["option_strings"][0])
    kind, cases = o["action"], []
    if kind in ("_StoreTrueAction", "_StoreFalseAction", "_StoreConstAction", "_CountAction"):
        cases += [[name], [f"{name}=true"], [name, "true"]]
    elif kind == "BooleanOptionalAction":
        cases += [[name], [f"--no-{name[2:]}"], [f"{name}=false"], [name, f"--no-{name[2:]}"]]
    elif kind == "DeprecatedAction":
        cases += [[name]]
    elif kind == "help":
        return []
    else:
        if o.get("choices"):
            cases += [[name, str(o["choices"][-1])], [f"{name}=not-a-choice"]]
        elif o.get("type") in ("int", "float") or o.get("type_of", [""])[-1] in ("int", "float"):
            cases += [[name, "2"], [f"{name}=2.5"], [name, "abc"], [f"{name}=0x10"]]
        elif o.get("nargs") in ("+", "*"):
            cases += [[name, "a", "b"], [name]]
        elif o["dest"] in OPAQUE_DESTS_SKIPPED or g.is_opaque(o):
            cases += [[name]]  # no value: refused by both for the grammar alone
        else:
            cases += [[f"{name}=value"], [name]]
    return cases


def _spelling_cases(o: dict, longs: list[str]) -> list[list[str]]:
    """The option's underscore spelling, and a prefix of it (unique or ambiguous, as the table makes it)."""
    name = next((s for s in o["option_strings"] if s.startswith("--")), None)
    if name is None or o["action"] in ("help", "DeprecatedAction"):
        return []
    value = [] if o["action"] in ("_StoreTrueAction", "BooleanOptionalAction", "_StoreConstAction") else \
        [str(o["choices"][0]) if o.get("choices") else ("1" if o.get("type") in ("int", "float") else "v")]
    if o["dest"] in OPAQUE_DESTS_SKIPPED or g.is_opaque(o):
        return []
    cases = []
    if "-" in name[2:]:
        cases.append(["--" + name[2:].replace("-", "_")] + value)
    for cut in (len(name) - 1, max(4, len(name) // 2)):
        prefix = name[:cut]
        if prefix not in longs and len(prefix) > 3:
            cases.append([prefix] + value)
    return cases


def corpus(server: str, version: str) -> list[dict]:
    """Every line for each entry point of ``server==version``: ``{"entrypoint", "argv"}``."""
    items = []
    for entry in g.ENTRYPOINTS[server]:
        base = BASE[(server, entry)]
        opts = g.options(server, version, entry)
        longs = [s for o in opts for s in o["option_strings"]]
        lines = [[]] + HAND_WRITTEN.get((server, entry), [])
        for o in opts:
            if not o["option_strings"] or o["dest"] in OPAQUE_DESTS_SKIPPED:
                continue
            lines += _value_cases(o) + _spelling_cases(o, longs)
        lines += [[f, "1"] for f in FOREIGN]
        seen = set()
        for line in lines:
            argv = base + line
            key = (entry, tuple(argv))
            if key not in seen:
                seen.add(key)
                items.append({"entrypoint": entry, "argv": argv})
    return items
