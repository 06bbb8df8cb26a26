"""An LLM team's first stack files, run through the command line as they would run them (``gpuplatform plan``,
then ``gpuplatform check --manifests`` on what it wrote): the mistakes engineers make when they copy a server's
command line from a blog post or an older release are each refused, in one run, naming the key and never with a
traceback; configurations that look unusual but are right are planned, and their manifests pass the policies."""
import copy
import json

import pytest
import yaml
from test_scenarios import EXAMPLES, example_raw

from gpuplatform.cli import main

W = "gpu-platform:workloads[0]"


def write_stack(tmp_path, raw: dict):
    path = tmp_path / "Pulumi.first.yaml"
    path.write_text(yaml.safe_dump({"config": {f"gpu-platform:{k}": v for k, v in raw.items()}}, sort_keys=False))
    return path


def plan(tmp_path, raw: dict, capsys) -> tuple[int, str]:
    code = main(["plan", "--config", str(write_stack(tmp_path, raw)), "--out", str(tmp_path / "out"), "--no-sweep"])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def vllm_chat() -> dict:
    return example_raw("005")


def sglang_qa() -> dict:
    return example_raw("006")


def _args(raw):
    return raw["workloads"][0]["args"]


def _set(raw, **changes):
    raw["workloads"][0].update(changes)


MISTAKES = [
    # (what the engineer did, the change, the key named, a fragment of the message)
    ("copied 'python -m sglang.launch_server --model-path ...' from the quick start: no --host, no metrics",
     lambda r: _set(r, args=["--model-path=/models/Qwen2.5-14B-Instruct", "--port=30000"]),
     f"{W}.args", "listens on 127.0.0.1"),
    ("vLLM on the port the blog used, the container port left at 8000",
     lambda r: _args(r).__setitem__(2, "--port=8080"), f"{W}.ports[0].containerPort", "listens on no such port"),
    ("the API key pasted into the args",
     lambda r: _args(r).extend(["--api-key", "sk-proj-0123456789"]), f"{W}.args", "credential in plain text"),
    ("a Hugging Face token pasted into the args",
     lambda r: _args(r).append("--hf-token=hf_0123456789abcdef"), f"{W}.args", "credential in plain text"),
    ("tensor parallel over 4 GPUs, one GPU requested",
     lambda r: _args(r).append("--tensor-parallel-size=4"), f"{W}.gpu.count", "spans 4 GPUs"),
    ("HPA on running requests above the batch vLLM runs",
     lambda r: (_args(r).append("--max-num-seqs=32"),
                r["workloads"][0]["autoscaling"].update(metrics=[{"metric": "vllm_requests_running", "target": 32}])),
     f"{W}.autoscaling.metrics[0].target", "runs at most 32 at once"),
    ("a TTFT SLO of 2 s written as 2 in a millisecond metric",
     lambda r: (r["workloads"][0]["autoscaling"].update(metrics=[{"metric": "vllm_ttft_p90_ms", "target": 2}]),
                r["workloads"][0]["serviceModel"].update(firstTokenMs=180)),
     f"{W}.autoscaling.metrics[0].target", "can never be met"),
    ("a prefill longer than the whole request in the service model",
     lambda r: r["workloads"][0]["serviceModel"].update(firstTokenMs=900), f"{W}.serviceModel.firstTokenMs",
     "must be <= 'serviceTimeMs'"),
    ("weights downloaded at start into the read-only root's /tmp",
     lambda r: _set(r, model={"sizeGib": 15, "source": "download"}, volumes=[]), f"{W}.model.source",
     "in the /tmp emptyDir"),
    ("a separate metrics port, as for Triton",
     lambda r: r["workloads"][0]["ports"].append({"name": "metrics", "containerPort": 8001, "protocol": "metrics"}),
     f"{W}.ports[1].containerPort", "listens on no such port"),
    ("a 21 GiB checkpoint on a 24 GB A10 at vLLM's default memory share (0.9 of the card)",
     lambda r: (_set(r, model={"sizeGib": 21, "source": "volume", "volume": "models"})),
     f"{W}.model.sizeGib", "--gpu-memory-utilization"),
    ("the Prometheus URL copied with its query path",
     lambda r: r["monitoring"].update(prometheusUrl="http://prometheus-operated.monitoring.svc:9090/api/v1/query"),
     "gpu-platform:monitoring.prometheusUrl", "append themselves"),
]


@pytest.mark.parametrize("what,change,key,fragment", MISTAKES, ids=[m[0][:40] for m in MISTAKES])
def test_each_mistake_is_refused_naming_its_key(what, change, key, fragment, tmp_path, capsys):
    raw = sglang_qa() if "sglang" in what else vllm_chat()
    change(raw)
    code, text = plan(tmp_path, raw, capsys)
    assert code != 0, what
    assert "Traceback" not in text
    lines = [line for line in text.splitlines() if line.strip().startswith(f"- {key}:")]
    assert lines and any(fragment in line for line in lines), f"{what}: {key} / {fragment!r} not in\n{text}"
    assert not (tmp_path / "out" / "plan.json").exists()  # nothing planned, nothing half-written
    assert "sk-proj-0123456789" not in text and "hf_0123456789abcdef" not in text


def test_every_mistake_of_one_stack_is_reported_in_one_run(tmp_path, capsys):
    raw = vllm_chat()
    for _, change, _, _ in MISTAKES[1:8]:
        change(raw)
    code, text = plan(tmp_path, raw, capsys)
    assert code != 0 and "Traceback" not in text
    for _, _, key, _ in MISTAKES[1:8]:
        assert f"- {key}:" in text, key


def _unusual(raw, name):
    w = raw["workloads"][0]
    if name == "shell wrapper with the key from a Secret":
        w["command"] = ["/bin/sh", "-c"]
        w["args"] = ['exec vllm serve /models/Qwen2.5-7B-Instruct --port 8000 --api-key "$OPENAI_KEY" '
                     '--max-model-len 8192']
        w["secretEnv"] = {"OPENAI_KEY": {"secretName": "chat-keys", "key": "api-key"}}
    elif name == "underscored flags and a data-parallel pair on two GPUs":
        w["args"] = ["--model=/models/Qwen2.5-7B-Instruct", "--port=8000", "--data_parallel_size=2",
                     "--max_num_seqs=64"]
        w["gpu"]["count"] = 2
        raw["nodePools"][0]["gpusPerNode"] = 2
        raw["nodePools"][0]["instanceTypes"] = ["ecs.gn7i-2x.8xlarge"]
    elif name == "weights downloaded to a writable volume":
        w["model"] = {"sizeGib": 15, "source": "download"}
        w["volumes"] = [{"name": "hub", "mountPath": "/hub", "pvc": "hf-hub", "readOnly": False}]
        w["env"] = {"HF_HOME": "/hub", "HOME": "/tmp"}
        w["secretEnv"] = {"HF_TOKEN": {"secretName": "hf", "key": "token"}}
    elif name == "port from the environment by reference":
        w["env"] = {"HOME": "/tmp", "SERVE_PORT": "8000"}
        w["args"] = ["--model=/models/Qwen2.5-7B-Instruct", "--port=$(SERVE_PORT)"]
    elif name == "a lower memory share that still fits":
        w["args"].append("--gpu-memory-utilization=0.8")
    elif name == "flags of the release the catalog does not model":
        # (a flag of a newer release, "--future-flag=on", was once here: vLLM 0.9.2 exits on it, and so does the
        # reading now, tests/components/test_server_args_command_lines.py)
        w["args"] += ["--speculative-config", '{"method": "ngram", "num_speculative_tokens": 4}',
                      "--enable-chunked-prefill", "--max-num-batched-tokens", "2048", "--no-enforce-eager"]
    return raw


UNUSUAL = ["shell wrapper with the key from a Secret", "underscored flags and a data-parallel pair on two GPUs",
           "weights downloaded to a writable volume", "port from the environment by reference",
           "a lower memory share that still fits", "flags of the release the catalog does not model"]


@pytest.mark.parametrize("name", UNUSUAL)
def test_an_unusual_but_valid_config_is_planned(name, tmp_path, capsys):
    raw = _unusual(vllm_chat(), name)
    code, text = plan(tmp_path, raw, capsys)
    assert code == 0, f"{name}:\n{text}"
    planned = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert planned["resources"]
    manifest = next((tmp_path / "out" / "manifests").glob("deployment-*-chat.yaml"))
    container = yaml.safe_load(manifest.read_text())["spec"]["template"]["spec"]["containers"][0]
    assert container["readinessProbe"]["httpGet"]["path"] == "/health"
    credentials = [e for e in container.get("env", []) if "KEY" in e["name"] or "TOKEN" in e["name"]]
    assert all("valueFrom" in e and "value" not in e for e in credentials), credentials


@pytest.mark.parametrize("seed", ["005", "006"])
def test_the_rendered_llm_examples_pass_the_policy_pack(seed, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["plan", "--config", str(EXAMPLES[seed]), "--out", str(out), "--no-sweep"]) == 0
    capsys.readouterr()
    code = main(["check", "--manifests", str(out / "manifests"), "--format", "json"])
    violations = json.loads(capsys.readouterr().out)
    assert code == 0 and violations == [], violations
    workload = {"005": "chat", "006": "qa"}[seed]  # not its warm-capacity placeholders' Deployment
    deployment = yaml.safe_load((out / "manifests" / f"deployment-inference-{workload}.yaml").read_text())
    probe = deployment["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]
    assert probe["timeoutSeconds"] > 1  # SGLang's generating /health takes about a second


def test_the_mistakes_start_from_a_config_that_plans(tmp_path, capsys):
    for raw in (vllm_chat(), sglang_qa()):
        code, text = plan(tmp_path, copy.deepcopy(raw), capsys)
        assert code == 0, text
