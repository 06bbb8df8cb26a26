"""The public API a consumer composes: every component from its args, the contracts between components checked
before anything is registered, and args errors reported like config errors (component, key, value, what is
allowed), never as a traceback."""
import inspect
import subprocess
import sys
import typing

import pulumi
import pytest

import gpuplatform.components as public
from gpuplatform.components import (GpuAlerts, GpuCluster, GpuMonitoring, GpuNodePool, GpuSoftware,
                                    InferenceService, WorkloadNamespace)
from gpuplatform.components.args import check_args
from gpuplatform.synth import synthesize
from support import REPO, STACKS, stack_raw, synth

KUBE = {"kind": "kubeconfig", "kubernetesVersion": "1.33"}
T4 = {"name": "t4", "gpuModel": "T4", "gpusPerNode": 1, "maxNodes": 2}
PORTS = [{"name": "http", "containerPort": 8080, "protocol": "http"}]


def workload(name="svc", **extra) -> dict:
    return {"name": name, "image": "registry.example.com/svc:1.0", "ports": PORTS, "gpu": {"count": 1},
            "autoscaling": {"maxReplicas": 2, "metrics": [{"metric": "gpu_util", "target": 60}]}, **extra}


def compose(build) -> str:
    """The message a program stops with (pulumi.RunError), or '' when it composes."""
    try:
        synthesize({}, build)
    except pulumi.RunError as exc:
        return str(exc)
    return ""


def base(monitoring: dict | None = None, pool: dict | None = None, cluster: dict | None = None):
    c = GpuCluster("c", {"cluster": cluster or KUBE})
    p = GpuNodePool("p", {"cluster": c, "pool": pool or T4})
    m = GpuMonitoring("m", {"cluster": c, "monitoring": monitoring or {}})
    return c, p, m


# ------------------------------------------------------------------------------------------- one public way
def test_platform_builds_every_child_through_the_public_args(monkeypatch):
    """Every component GpuPlatform builds gets args a consumer could pass: only keys of its public Args, values of
    plain data, pulumi outputs or public components."""
    classes = {n: getattr(public, n) for n in public.__all__ if isinstance(getattr(public, n), type)
               and issubclass(getattr(public, n), pulumi.ComponentResource)}
    calls = []
    for cls_name, cls in classes.items():
        if cls_name == "GpuPlatform":
            continue

        def recording(self, name, args, opts=None, _original=cls.__init__, _cls=cls_name):
            calls.append((_cls, name, args))
            _original(self, name, args, opts)
        monkeypatch.setattr(cls, "__init__", recording)
    public_types = tuple(classes.values())

    def plain(value) -> bool:
        if isinstance(value, (str, int, float, bool, type(None), pulumi.Output, *public_types)):
            return True
        if isinstance(value, (list, tuple)):
            return all(plain(v) for v in value)
        if isinstance(value, dict):
            return all(isinstance(k, str) and plain(v) for k, v in value.items())
        return False

    seen = set()
    for stack in STACKS:
        calls.clear()
        synth(stack_raw(stack))
        for cls_name, name, args in calls:
            seen.add(cls_name)
            spec = getattr(public, f"{cls_name}Args")
            assert typing.is_typeddict(spec)
            assert check_args(cls_name, name, args, spec) == [], (stack, cls_name, name)
            assert plain(args), (stack, cls_name, name, args)
    assert seen == set(classes) - {"GpuPlatform"}


def test_the_recording_sees_a_private_arg():
    """The check above fails on what a consumer could not pass: an internal object among the args."""
    from gpuplatform.components.pools import PoolFacts

    assert not isinstance(object(), PoolFacts)
    issues = check_args("GpuNodePool", "p", {"cluster": None, "pool": {}, "facts": object()}, public.GpuNodePoolArgs)
    assert [i.path for i in issues] == ["GpuNodePool 'p' args.cluster", "GpuNodePool 'p' args.facts"]


def test_every_component_takes_name_args_opts():
    for name in public.__all__:
        obj = getattr(public, name)
        if isinstance(obj, type) and issubclass(obj, pulumi.ComponentResource):
            assert list(inspect.signature(obj.__init__).parameters) == ["self", "name", "args", "opts"], name


# ------------------------------------------------------------------------------------------- contracts
def test_a_composed_stack_plans_and_exposes_its_contracts():
    seen = {}

    def build():
        c, p, m = base({"metrics": ["gpu_util"]})
        ns = WorkloadNamespace("ns", {"cluster": c, "name": "team"})
        s = InferenceService("svc", {"workload": workload(), "node_pool": p, "monitoring": m, "namespace": ns})
        seen.update(pool=p.facts, served=m.served, svc=s)
    records = synthesize({}, build)
    assert seen["pool"].node_resources == {"nvidia.com/gpu": 1}
    assert seen["served"]["gpu_util"].api_name == "gpu_utilization" and seen["served"]["gpu_util"].served_unit == \
        "percent"
    deployment = next(r for r in records if r.type == "kubernetes:apps/v1:Deployment")
    assert deployment.inputs["metadata"]["namespace"] == "team" and "ns-namespace" in deployment.depends_on


def test_metric_not_served_names_both_sides_and_the_fix():
    msg = compose(lambda: _service(monitoring={"metrics": ["gpu_mem_used_ratio"]}))
    assert "InferenceService 'svc' args.workload.autoscaling.metrics[0].metric" in msg
    assert "not served by GpuMonitoring 'm'" in msg and "add 'gpu_util' to monitoring.metrics" in msg


def test_metric_of_another_exporter():
    msg = compose(lambda: _service(monitoring={"gpuExporter": "ack-legacy", "metrics": ["gpu_util"]},
                                   metric="gpu_mem_used_ratio"))
    assert "'gpu_mem_used_ratio' is not exported by GpuMonitoring 'm''s GPU exporter 'ack-legacy'" in msg
    assert "exporters with it: ack, dcgm" in msg


def test_target_in_another_unit_gets_the_converted_target():
    msg = compose(lambda: _service(unit="ratio", target=0.6))
    assert "args.workload.autoscaling.metrics[0].unit: 'ratio': GpuMonitoring 'm' serves gpu_util in percent" in msg
    assert "with target 60 for the same load" in msg


def test_gpu_resource_the_pool_does_not_serve():
    msg = compose(lambda: _service(gpu={"memoryGib": 4}))
    assert "InferenceService 'svc' args.workload.gpu" in msg and "exclusive" in msg


def test_replicas_beyond_the_pool_and_across_services():
    assert "InferenceService 'svc' args.workload.autoscaling.maxReplicas" in compose(lambda: _service(max_replicas=3))

    def two():
        c, p, m = base()
        for name in ("a", "b"):
            InferenceService(name, {"workload": workload(name), "node_pool": p, "monitoring": m, "namespace": "t"})
    msg = compose(two)
    assert "GpuNodePool 'p' args.pool.maxNodes: 2 nodes cannot hold a (2), b (2)" in msg


def test_namespace_contracts():
    def root_in_restricted():
        c, p, m = base()
        ns = WorkloadNamespace("ns", {"cluster": c, "name": "team"})
        InferenceService("svc", {"workload": workload(runAsRoot=True), "node_pool": p, "monitoring": m,
                                 "namespace": ns})
    msg = compose(root_in_restricted)
    assert "args.namespace: WorkloadNamespace 'ns' enforces Pod Security 'restricted'" in msg

    def other_cluster():
        c, p, m = base()
        other = GpuCluster("other", {"cluster": KUBE})
        ns = WorkloadNamespace("ns", {"cluster": other, "name": "team"})
        InferenceService("svc", {"workload": workload(), "node_pool": p, "monitoring": m, "namespace": ns})
    assert "is created in GpuCluster 'other', but GpuNodePool 'p' belongs to GpuCluster 'c'" in compose(other_cluster)
    assert "'Team_NS' is not a namespace name" in compose(lambda: _service(namespace="Team_NS"))


def test_keda_needs_the_monitoring_to_install_it():
    autoscaling = {"autoscaler": "keda", "minReplicas": 1, "maxReplicas": 2,
                   "metrics": [{"metric": "gpu_util", "target": 60}]}
    msg = compose(lambda: _service(autoscaling=autoscaling))
    assert "'keda', but GpuMonitoring 'm' does not install KEDA" in msg
    assert compose(lambda: _service(autoscaling=autoscaling, monitoring={"keda": True})) == ""


def test_monitoring_and_gpu_software_of_the_pool():
    def other_monitoring():
        c, p, _ = base()
        other = GpuCluster("other", {"cluster": KUBE})
        m2 = GpuMonitoring("m2", {"cluster": other})
        InferenceService("svc", {"workload": workload(), "node_pool": p, "monitoring": m2, "namespace": "t"})
    assert "GpuMonitoring 'm2' monitors GpuCluster 'other', but GpuNodePool 'p' belongs to GpuCluster 'c'" in \
        compose(other_monitoring)
    mig = {"name": "a100", "gpuModel": "A100-40GB", "gpusPerNode": 1, "maxNodes": 2,
           "sharing": {"mode": "mig", "profile": "1g.5gb"}}
    gpu = {"count": 1, "migProfile": "1g.5gb"}
    autoscaling = {"maxReplicas": 2, "metrics": [{"metric": "gpu_engine_active", "target": 0.6}]}
    msg = compose(lambda: _service(pool=mig, gpu=gpu, autoscaling=autoscaling))
    assert "GpuNodePool 'p''s GPUs are served by gpu-operator, which no GpuSoftware installs" in msg

    def with_software():
        c = GpuCluster("c", {"cluster": KUBE})
        p = GpuNodePool("p", {"cluster": c, "pool": mig})
        GpuSoftware("gpu", {"cluster": c, "node_pools": [p]})
        m = GpuMonitoring("m", {"cluster": c, "monitoring": {"metrics": ["gpu_engine_active"]}})
        InferenceService("svc", {"workload": workload(gpu=gpu, autoscaling=autoscaling), "node_pool": p,
                                 "monitoring": m, "namespace": "t"})
    assert compose(with_software) == ""


def test_an_autoscaled_service_needs_a_monitoring():
    def build():
        c = GpuCluster("c", {"cluster": KUBE})
        p = GpuNodePool("p", {"cluster": c, "pool": T4})
        InferenceService("svc", {"workload": workload(), "node_pool": p, "namespace": "t"})
    assert "InferenceService 'svc' args.monitoring: required: autoscaler 'hpa'" in compose(build)


def test_stack_files_get_the_same_metric_contract():
    """The rule InferenceService applies is the stack validation's too (components/contracts.py)."""
    from gpuplatform.components.errors import ConfigError
    from gpuplatform.components.validation import load

    raw = stack_raw("local")
    raw.setdefault("monitoring", {})["metrics"] = ["gpu_mem_used_ratio"]
    with pytest.raises(ConfigError) as info:
        load(raw)
    assert "is not served by the stack's monitoring's metrics adapter" in info.value.render()


def _service(monitoring=None, pool=None, metric="gpu_util", unit=None, target=60, gpu=None, max_replicas=2,
             namespace="team", autoscaling=None):
    c, p, m = base(monitoring, pool)
    target_spec = {"metric": metric, "target": target, **({"unit": unit} if unit else {})}
    w = workload(gpu=gpu or {"count": 1},
                 autoscaling=autoscaling or {"maxReplicas": max_replicas, "metrics": [target_spec]})
    InferenceService("svc", {"workload": w, "node_pool": p, "monitoring": m, "namespace": namespace})


# ------------------------------------------------------------------------------------------- args errors
def _cluster(args):
    return lambda: GpuCluster("c", args)


def _pool(args):
    def build():
        c = GpuCluster("c", {"cluster": KUBE})
        GpuNodePool("p", {"cluster": c, **args} if "cluster" not in args else args)
    return build


def _pool_raw(args):
    return lambda: (GpuCluster("c", {"cluster": KUBE}), GpuNodePool("p", args))


def _monitoring(args):
    def build():
        c = GpuCluster("c", {"cluster": KUBE})
        GpuMonitoring("m", {"cluster": c, **args})
    return build


def _svc(args):
    def build():
        c, p, m = base()
        InferenceService("svc", {"node_pool": p, "monitoring": m, "namespace": "t", "workload": workload(), **args})
    return build


def _svc_raw(make_args):
    def build():
        c, p, m = base()
        InferenceService("svc", make_args(c, p, m))
    return build


ARGS_ERRORS = [
    (_cluster({"clster": KUBE}), "GpuCluster 'c' args.clster: unknown key; did you mean 'cluster'?"),
    (_cluster({}), "GpuCluster 'c' args.cluster: required key is missing"),
    (_cluster({"cluster": KUBE, "environment": "production"}), "args.environment: 'production': expected"),
    (_cluster({"cluster": KUBE, "protect": "yes"}), "GpuCluster 'c' args.protect: 'yes': expected bool"),
    (_cluster({"cluster": KUBE, "addons": ["arms-prometeus"]}), "did you mean 'arms-prometheus'?"),
    (_cluster({"cluster": {"kind": "eks", "kubernetesVersion": "1.33"}}), "GpuCluster 'c' args.cluster"),
    (_cluster({"cluster": {"kind": "kubeconfig", "kubernetesVersion": "1.99"}}),
     "GpuCluster 'c' args.cluster.kubernetesVersion: '1.99'"),
    (_cluster({"cluster": {"kind": "kubeconfig"}}), "GpuCluster 'c' args.cluster.kubernetesVersion: required"),
    (_cluster("kubeconfig"), "GpuCluster 'c' args: 'kubeconfig': expected a dict"),
    (_pool_raw({"pool": T4}), "GpuNodePool 'p' args.cluster: required key is missing"),
    (_pool_raw({"cluster": KUBE, "pool": T4}), "GpuNodePool 'p' args.cluster: a dict: expected GpuCluster"),
    (_pool({"pol": T4}), "GpuNodePool 'p' args.pol: unknown key; did you mean 'pool'?"),
    (_pool({"pool": {**T4, "gpuModel": "T5"}}), "GpuNodePool 'p' args.pool.gpuModel"),
    (_pool({"pool": {**T4, "maxNodes": -1}}), "GpuNodePool 'p' args.pool.maxNodes: -1"),
    (_pool({"pool": T4, "facts": {}}), "GpuNodePool 'p' args.facts: unknown key"),
    (_monitoring({"monitoring": {"backend": "prom"}}), "GpuMonitoring 'm' args.monitoring.backend: 'prom'"),
    (_monitoring({"monitoring": {"metrics": ["gpu_utill"]}}), "did you mean gpu_util"),
    (_monitoring({"monitor": {}}), "GpuMonitoring 'm' args.monitor: unknown key; did you mean 'monitoring'?"),
    (_monitoring({"node_pools": ["t4"]}), "GpuMonitoring 'm' args.node_pools[0]: a str: expected a GpuNodePool"),
    (_svc({"node_pools": None}), "InferenceService 'svc' args.node_pools: unknown key; did you mean 'node_pool'?"),
    (_svc_raw(lambda c, p, m: {"node_pool": p, "monitoring": m, "workload": workload()}),
     "InferenceService 'svc' args.namespace: required key is missing"),
    (_svc({"kubernetes_version": "1.31"}), "args.kubernetes_version: removed in 0.2.0"),
    (_svc_raw(lambda c, p, m: {"node_pool": T4, "monitoring": m, "namespace": "t", "workload": workload()}),
     "a dict in the stack-file format: since 0.2.0 a service takes the GpuNodePool object"),
    (_svc({"workload": workload(gpu={"count": "one"})}), "InferenceService 'svc' args.workload.gpu.count"),
    (_svc({"workload": {**workload(), "imag": "x:1"}}), "InferenceService 'svc' args.workload.imag: unknown key"),
    (_svc({"workload": workload(nodePool="a10")}), "args.workload.nodePool: 'a10', but args.node_pool is"),
    (_svc({"monitoring": "m"}), "InferenceService 'svc' args.monitoring: 'm': expected GpuMonitoring"),
    (lambda: WorkloadNamespace("ns", {"cluster": GpuCluster("c", {"cluster": KUBE}), "name": "ML"}),
     "WorkloadNamespace 'ns' args.name: 'ML' is not a namespace name"),
    (lambda: GpuSoftware("s", {"cluster": (c := GpuCluster("c", {"cluster": KUBE})),
                               "node_pools": [GpuNodePool("p", {"cluster": c, "pool": T4})]}),
     "GpuSoftware 's' args.node_pools: nothing to install"),
    (lambda: GpuAlerts("a", {"monitoring": base()[2], "services": ["svc"]}),
     "GpuAlerts 'a' args.services[0]: a str: expected an InferenceService"),
    (lambda: public.GpuPlatform("gpu", {"config": {"cluster": KUBE, "nodePool": [T4]}}),
     "GpuPlatform 'gpu' args.config.nodePool: unknown key (not a gpu-platform setting). Did you mean 'nodePools'?"),
]


@pytest.mark.parametrize("build,expected", ARGS_ERRORS, ids=[e[1][:48] for e in ARGS_ERRORS])
def test_args_errors_name_component_key_value_and_what_is_allowed(build, expected):
    msg = compose(build)
    assert expected in msg, msg
    assert "Traceback" not in msg and ("allowed" in msg or "expected" in msg or "required" in msg
                                       or "did you mean" in msg or "removed" in msg or "should be" in msg
                                       or "unknown key" in msg or "since 0.2.0" in msg), msg


def _plan_project(tmp_path, program: str, stack_config: str = "") -> subprocess.CompletedProcess:
    """``gpuplatform plan --project`` of a one-file consumer project, as a user runs it."""
    project = tmp_path / "team"
    project.mkdir()
    (project / "Pulumi.yaml").write_text("name: team\nruntime: python\n")
    if stack_config:
        (project / "Pulumi.dev.yaml").write_text(stack_config)
    (project / "__main__.py").write_text(program)
    return subprocess.run([sys.executable, "-m", "gpuplatform", "plan", "--project", str(project)], cwd=REPO,
                          capture_output=True, text=True, timeout=300)


def test_a_bad_args_program_exits_2_without_a_traceback(tmp_path):
    proc = _plan_project(tmp_path, "from gpuplatform.components import GpuCluster, GpuNodePool\n"
                         "c = GpuCluster('c', {'cluster': {'kind': 'kubeconfig', 'kubernetesVersion': '1.33'}})\n"
                         "GpuNodePool('p', {'cluster': c, 'node_pools': []})\n")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "GpuNodePool 'p' args.node_pools: unknown key" in proc.stderr
    assert "GpuNodePool 'p' args.pool: required key is missing" in proc.stderr


def test_project_config_keys_are_checked_like_args(tmp_path):
    proc = _plan_project(tmp_path, "from typing import TypedDict\nfrom gpuplatform.components import "
                         "read_project_config\nclass Config(TypedDict):\n    context: str\n    replicas: int\n"
                         "read_project_config(Config)\n", "config:\n  team:contxt: ml\n  team:replicas: many\n")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "team:contxt: unknown key; did you mean 'context'?" in proc.stderr
    assert "team:replicas: 'many': expected int" in proc.stderr
    # the misspelt key names the required one it is close to: the same mistake is not reported twice
    assert "team:context: required key is missing" not in proc.stderr


def test_the_reuse_example_uses_only_the_public_api():
    import ast

    tree = ast.parse((REPO / "examples" / "reuse" / "__main__.py").read_text())
    ours = [(node.module, alias.name) for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
            and (node.module or "").startswith("gpuplatform") for alias in node.names]
    plain = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
             if alias.name.startswith("gpuplatform")]
    assert ours and not plain
    assert all(module == "gpuplatform.components" and name in public.__all__ for module, name in ours), ours
    used = {name for _, name in ours}
    assert {"GpuCluster", "GpuNodePool", "GpuMonitoring", "InferenceService"} <= used
    assert sum(isinstance(n, ast.Call) and getattr(n.func, "id", "") == "InferenceService" for n in ast.walk(tree)) == 2


def test_the_policies_read_a_composed_programs_environment_from_its_cluster():
    """Without a GpuPlatform, the stack policies take environment, version and exposure from the GpuCluster: a
    public LoadBalancer is refused on a cluster that does not allow public endpoints, and allowed where it does."""
    from gpuplatform.check import run_policies

    def build(allow: bool):
        c = GpuCluster("c", {"cluster": KUBE, "environment": "prod", "allow_public_endpoints": allow})
        p = GpuNodePool("p", {"cluster": c, "pool": T4})
        InferenceService("svc", {"node_pool": p, "namespace": "t", "workload": {
            "name": "svc", "image": "x:1.0", "replicas": 1, "gpu": {"count": 1}, "ports": PORTS,
            "exposure": {"serviceType": "PublicLoadBalancer"}}})

    def lb_findings(allow: bool):
        return [v for v in run_policies(synthesize({}, lambda: build(allow))) if "LoadBalancer" in v.message]

    assert compose(lambda: build(False)) != ""  # the service's own rule refuses it first
    assert lb_findings(True) == []
