"""Splitting a workload's ``commandLine`` into the container's ``command`` and ``args``, as the image's entry point
expects them. Pure over the server catalogs (no config model), so the config's own validator can split a line while
components/server_args.py, which reads a whole ``Workload``, builds on the config."""
from __future__ import annotations

import shlex
from typing import Optional

from gpuplatform.catalogs import server_cli as cli
from gpuplatform.catalogs import server_grammar as grammar
from gpuplatform.catalogs.system_components import image_repository

SHELL_OPERATORS = ("|", "||", "&&", ";", "&", ">", ">>", "<", "2>", "2>&1")


def image_repository_matches(image: str, repository: str) -> bool:
    """Whether ``image`` is ``repository`` under any registry (``ghcr.io/huggingface/text-generation-inference:3``,
    ``nvcr.io/nvidia/tritonserver:24.08-py3``)."""
    repo = image_repository(image)
    return repo == repository or repo.endswith("/" + repository)


def split_command_line(server: Optional[str], image: str, text: str) -> tuple[list[str], list[str]]:
    """(command, args) of a ``commandLine``: split as a shell would (``shlex``: quotes, no expansion), then written
    for the image's entry point. ValueError with the fix for a line that cannot be."""
    try:
        words = shlex.split(text)
    except ValueError as e:
        raise ValueError(f"{text!r} does not split as a shell would split it ({e}); allowed: balanced quotes") \
            from None
    if not words:
        raise ValueError("empty; allowed: the server's command line, e.g. 'vllm serve /models/m --port 8000'")
    operators = [w for w in words if w in SHELL_OPERATORS]
    if operators:
        raise ValueError(f"{text!r} is a shell script ({operators[0]!r}), which no shell runs here; allowed: "
                         f"command: [sh, -c, {text!r}]")
    spec = cli.SERVER_CLIS.get(server or "")
    official = spec is not None and any(image_repository_matches(image, r) for r in spec.official_images)
    program = words[0].rsplit("/", 1)[-1]
    if server in grammar.ENTRYPOINTS:
        found = grammar.entrypoint_of(server, words)
        image_entry = grammar.IMAGE_ENTRYPOINTS.get(server) if official else None
        if found is not None:
            entry, n = found
            rest = words[n:]
            if entry == "serve" and image_entry == "api_server":
                if "--model" in rest:
                    raise ValueError(f"{text!r}: vLLM refuses --model after `vllm serve` (\"you should provide the "
                                     "model as a positional argument\"); allowed: 'vllm serve MODEL ...'")
                model = [] if not rest or rest[0].startswith("-") else ["--model", rest[0]]
                return [], model + rest[len(model) // 2:]
            if entry == image_entry:
                return [], rest
            return words[:n], rest
        if words[0].startswith("-"):
            if image_entry:
                return [], words
            if server == "sglang":
                return ["python3", "-m", "sglang.launch_server"], words
        starts = " or ".join(f"'{c} ...'" for c in grammar.ENTRYPOINTS[server].values())
        raise ValueError(f"{text!r}: {words[0]!r} starts no {grammar.TITLES[server]} entry point; allowed: a line "
                         f"starting {starts}" + (", or its flags only (the image's entry point)" if image_entry
                                                 else ""))
    if server == "tgi" and program == "text-generation-launcher":
        return ([] if official else words[:1]), words[1:]
    if server == "tgi" and words[0].startswith("-") and official:
        return [], words
    if server == "triton" and words[0].startswith("-"):
        return ["tritonserver"], words
    return words[:1], words[1:]
