"""Composing services validates each workload once: a service checks its own workload and compares it with the
services before it on the pool (names, hosts, capacity), instead of validating every earlier one again."""
import pulumi
import pytest

from gpuplatform.components import GpuCluster, GpuMonitoring, GpuNodePool, InferenceService
from gpuplatform.components.validation import rules
from gpuplatform.synth import synthesize

KUBE = {"kind": "kubeconfig", "kubernetesVersion": "1.33"}
PORTS = [{"name": "http", "containerPort": 8080, "protocol": "http"}]
SERVICES = 6


def workload(name: str, host: str) -> dict:
    return {"name": name, "image": "registry.example.com/svc:1.0", "ports": PORTS, "gpu": {"count": 1},
            "autoscaling": {"maxReplicas": 2, "metrics": [{"metric": "gpu_util", "target": 60}]},
            "exposure": {"ingress": {"className": "nginx", "host": host, "port": "http"}}}


def program(hosts: list[str], max_nodes: int):
    def build():
        c = GpuCluster("c", {"cluster": KUBE})
        p = GpuNodePool("p", {"cluster": c, "pool": {"name": "t4", "gpuModel": "T4", "gpusPerNode": 1,
                                                      "maxNodes": max_nodes}})
        m = GpuMonitoring("m", {"cluster": c})
        for i, host in enumerate(hosts):
            InferenceService(f"s{i}", {"workload": workload(f"s{i}", host), "node_pool": p, "monitoring": m,
                                       "namespace": "t"})
    return build


def test_each_composed_workload_is_checked_once(monkeypatch):
    checked: list[str] = []
    original = rules.check_workload_name

    def counting(p, i, w, seen, out):
        checked.append(w.name)
        original(p, i, w, seen, out)
    monkeypatch.setattr(rules, "check_workload_name", counting)
    synthesize({}, program([f"s{i}.example.com" for i in range(SERVICES)], 2 * SERVICES))
    assert sorted(checked) == sorted(f"s{i}" for i in range(SERVICES))


def message(build) -> str:
    with pytest.raises(pulumi.RunError) as exc:
        synthesize({}, build)
    return str(exc.value)


def test_a_later_service_is_still_compared_with_the_earlier_ones():
    msg = message(program(["a.example.com", "b.example.com", "a.example.com"], 6))
    assert "InferenceService 's2' args.workload.exposure.ingress.host: 'a.example.com' already routes '/' to s0" \
        in msg
    msg = message(program(["a.example.com", "b.example.com", "c.example.com"], 4))
    assert "4 nodes cannot hold s0 (2), s1 (2), s2 (2)" in msg


def test_a_composed_service_has_its_servers_command_line_checked():
    """The server checks run on a composed InferenceService as on a stack file's workload, every mistake in one
    run, named under the service's args."""
    def build():
        c = GpuCluster("c", {"cluster": KUBE})
        p = GpuNodePool("p", {"cluster": c, "pool": {"name": "t4", "gpuModel": "T4", "gpusPerNode": 1,
                                                      "maxNodes": 2}})
        m = GpuMonitoring("m", {"cluster": c})
        InferenceService("chat", {"workload": {
            "name": "chat", "image": "lmsysorg/sglang:v0.5.4", "server": "sglang", "gpu": {"count": 1},
            "ports": [{"name": "http", "containerPort": 30000, "protocol": "http", "metricsPath": "/metrics"}],
            "command": ["python3", "-m", "sglang.launch_server"],
            "args": ["--model-path=/models/m", "--api-key=sk-123"], "replicas": 1,
        }, "node_pool": p, "monitoring": m, "namespace": "t"})
    msg = message(build)
    assert "InferenceService 'chat' args.workload.args: sglang listens on 127.0.0.1 (the default)" in msg
    assert "SGLang serves no /metrics without --enable-metrics" in msg
    assert "--api-key is given a credential in plain text" in msg and "sk-123" not in msg
