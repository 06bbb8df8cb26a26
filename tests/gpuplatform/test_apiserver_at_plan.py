"""What the API server would refuse fails `plan` and `check` as a configuration error (exit 2) naming the config
path that produced the object, before anything is registered: one case per rule of gpuplatform/apiserver.py a
config can reach, the net under them (components/validation/authored.py in the program, gpuplatform/authored.py
over every registered object) for the ones it cannot, and objects two workloads would both create."""
import copy

import pulumi
import pytest
import yaml

from gpuplatform.cli import main
from gpuplatform.components import workload_manifests as wm
from gpuplatform.synth import synthesize
from support import stack_raw

BASE = {
    "cluster": {"kind": "kubeconfig", "kubernetesVersion": "1.33"},
    "nodePools": [{"name": "t4", "gpuModel": "T4", "gpusPerNode": 1, "maxNodes": 4}],
    "workloads": [{"name": "web", "image": "registry.example.com/web:1.0", "nodePool": "t4", "gpu": {"count": 1},
                   "replicas": 1, "ports": [{"name": "http", "containerPort": 8080}]}],
}


def stack_file(tmp_path, raw: dict) -> str:
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_text(yaml.safe_dump({"config": {f"gpu-platform:{k}": v for k, v in raw.items()}}))
    return str(path)


def refused(capsys, *argv) -> str:
    """stderr of a command that must exit 2 without a traceback."""
    code = main(list(argv))
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    return err


def base(**workload) -> dict:
    raw = copy.deepcopy(BASE)
    raw["workloads"][0].update(workload)
    return raw


def second(raw: dict, **workload) -> dict:
    raw["workloads"].append({**copy.deepcopy(raw["workloads"][0]), **workload})
    return raw


NFS = {"server": "10.0.0.2", "path": "/exports/models"}
# (case, config, the config path the error names, fragments of its message)
CASES = [
    ("service-port-twice", base(ports=[{"name": "http", "containerPort": 8080, "servicePort": 80},
                                       {"name": "grpc", "containerPort": 8081, "servicePort": 80,
                                        "protocol": "grpc"}]),
     "workloads[0].ports[1].servicePort", ["80 is also the Service port of 'http' (ports[0])", "'80/TCP'"]),
    ("service-port-on-another-container-port", base(ports=[{"name": "http", "containerPort": 8080},
                                                           {"name": "admin", "containerPort": 9000,
                                                            "servicePort": 8080}]),
     "workloads[0].ports[1].servicePort", ["8080 is also the Service port of 'http'", "allowed: a servicePort"]),
    ("volume-at-tmp", base(volumes=[{"name": "scratch", "mountPath": "/tmp", "pvc": "scratch"}]),
     "workloads[0].volumes[0].mountPath", ["'/tmp'", "writable /tmp emptyDir", "duplicate mount path"]),
    ("volumes-share-a-path", base(volumes=[{"name": "a", "mountPath": "/models", "pvc": "a"},
                                           {"name": "b", "mountPath": "/models/", "pvc": "b"}]),
     "workloads[0].volumes[1].mountPath", ["'/models/'", "volumes[0] ('a')", "e.g. /models"]),
    ("volume-named-like-tmp", base(volumes=[{"name": "tmp", "mountPath": "/scratch", "pvc": "scratch"}]),
     "workloads[0].volumes[0].name", ["'tmp'", "reserved"]),
    ("volume-name-twice", base(volumes=[{"name": "a", "mountPath": "/a", "pvc": "a"},
                                        {"name": "a", "mountPath": "/b", "pvc": "b"}]),
     "workloads[0].volumes[1].name", ["'a' is used twice"]),
    ("fractional-gpu-count", base(gpu={"count": 1.5}), "workloads[0].gpu.count", ["1.5", "integer"]),
    ("cpu-not-a-quantity", base(resources={"cpu": "2 cores"}), "workloads[0].resources.cpu",
     ["'2 cores' is not a Kubernetes quantity", "did you mean '2'"]),
    ("ingress-made-twice", second(base(exposure={"ingress": {"routes": [{"port": "http", "host": "a.example.com"}]}}),
                                  name="web-http", exposure={"ingress": {"host": "b.example.com", "port": "http"}}),
     "workloads[1].exposure.ingress", ["Ingress inference/web-http is also made by workloads[0].exposure.ingress",
                                       "409 AlreadyExists"]),
    ("claim-made-twice", second(base(volumes=[{"name": "b-models", "mountPath": "/m", "nfs": NFS}]),
                                name="web-b", volumes=[{"name": "models", "mountPath": "/m", "nfs": NFS}]),
     "workloads[1].volumes", ["PersistentVolume", "web-b-models is also made by workloads[0].volumes"]),
]


@pytest.mark.parametrize("case,raw,path,fragments", CASES, ids=[c[0] for c in CASES])
def test_plan_refuses_what_the_api_server_refuses_naming_the_config_path(case, raw, path, fragments, tmp_path,
                                                                         capsys):
    err = refused(capsys, "plan", "--config", stack_file(tmp_path, raw))
    line = next((ln for ln in err.splitlines() if f"gpu-platform:{path}:" in ln), None)
    assert line, f"no error at {path}:\n{err}"
    for fragment in fragments:
        assert fragment in line, f"{fragment!r} not in {line!r}"


def test_the_cases_are_valid_without_their_mistake(tmp_path, capsys):
    """The corpus' base plans: each case fails for its own mistake."""
    assert main(["plan", "--config", stack_file(tmp_path, base())]) == 0, capsys.readouterr().err


def test_check_stack_refuses_it_too(tmp_path, capsys):
    err = refused(capsys, "check", "--config", stack_file(tmp_path, CASES[0][1]))
    assert "gpu-platform:workloads[0].ports[1].servicePort:" in err


def test_the_program_stops_before_registering_anything():
    """`pulumi up` runs the same validation before the first registration."""
    with pytest.raises(Exception) as info:
        synthesize({f"gpu-platform:{k}": v for k, v in CASES[2][1].items()})
    err = info.value
    while not isinstance(err, pulumi.RunError) and err.__cause__ is not None:
        err = err.__cause__
    assert "gpu-platform:workloads[0].volumes[0].mountPath" in str(err)


# ---------------------------------------------------------------------------------------------- the net
def test_a_request_above_its_limit_no_rule_foresaw_is_refused_at_the_workload(monkeypatch, tmp_path, capsys):
    """Requests equal limits by construction; a builder that broke that would still fail the plan, at the field
    of the config it comes from."""
    container = wm.container

    def cpu_limit_below_request(w, ctx):
        out = container(w, ctx)
        out["resources"]["limits"]["cpu"] = "500m"
        return out
    monkeypatch.setattr(wm, "container", cpu_limit_below_request)
    err = refused(capsys, "plan", "--config", stack_file(tmp_path, base()))
    assert ("gpu-platform:workloads[0].resources.cpu: the API server refuses Deployment inference/web: "
            "spec.template.spec.containers[0].resources.requests.cpu: cpu request 1 is above its limit 0.5") in err


def test_a_fractional_extended_resource_is_refused_at_the_gpu(monkeypatch, tmp_path, capsys):
    from gpuplatform.components.pools import PoolFacts

    monkeypatch.setattr(PoolFacts, "gpu_resources", lambda self, request: {"nvidia.com/gpu": "0.5"})
    err = refused(capsys, "plan", "--config", stack_file(tmp_path, base()))
    assert "gpu-platform:workloads[0].gpu: the API server refuses Deployment inference/web" in err
    assert "0.5 must be a whole number" in err


def test_unknown_fields_of_any_object_fail_plan_at_the_config_that_made_it(monkeypatch, tmp_path, capsys):
    """The strict schema of the cluster's version judges every registered object: a misspelt field in a
    workload's container and in the workload namespace, traced to the workload and to ``settings``."""
    from gpuplatform.components import namespace as namespace_module

    container, namespace = wm.container, namespace_module.namespace
    monkeypatch.setattr(wm, "container", lambda w, ctx: {**container(w, ctx), "resource": {}})
    monkeypatch.setattr(namespace_module, "namespace",
                        lambda *a, **kw: {**namespace(*a, **kw), "spec": {"finalizer": []}})
    err = refused(capsys, "plan", "--config", stack_file(tmp_path, base()))
    assert ("gpu-platform:workloads[0]: the API server of Kubernetes 1.33 refuses Deployment inference/web: "
            "spec.template.spec.containers[0].resource: unknown field 'resource'") in err
    assert ("gpu-platform:settings: the API server of Kubernetes 1.33 refuses Namespace inference: spec.finalizer: "
            "unknown field 'finalizer'") in err


def test_a_composed_program_is_refused_at_its_components_args(tmp_path, capsys):
    """A consumer's program: the service-port collision stops it at the InferenceService's args before anything is
    registered; two services whose ingresses share a name (each fine alone) are found by `check --project`
    among the program's objects, at the args of the second."""
    project = tmp_path / "team"
    project.mkdir()
    (project / "Pulumi.yaml").write_text("name: team\nruntime: python\n")
    (project / "__main__.py").write_text(PROGRAM)
    err = refused(capsys, "check", "--project", str(project), "--stack", "dev")
    assert ("InferenceService 'web-http' args.workload.exposure.ingress: Ingress serving/web-http is also made by "
            "InferenceService 'web' args.workload.exposure.ingress") in err
    (project / "__main__.py").write_text(PROGRAM.replace('"containerPort": 8081', '"containerPort": 8081, '
                                                         '"servicePort": 8080'))
    err = refused(capsys, "plan", "--project", str(project), "--stack", "dev")
    assert "InferenceService 'web' args.workload.ports[1].servicePort: 8080 is also the Service port of 'http'" in err


PROGRAM = '''
from gpuplatform.components import GpuCluster, GpuMonitoring, GpuNodePool, InferenceService, WorkloadNamespace

cluster = GpuCluster("ml", {"cluster": {"kind": "kubeconfig", "kubernetesVersion": "1.33"}})
pool = GpuNodePool("t4", {"cluster": cluster, "pool": {"name": "t4", "gpuModel": "T4", "gpusPerNode": 1,
                                                       "maxNodes": 2}})
monitoring = GpuMonitoring("monitoring", {"cluster": cluster, "monitoring": {}})
namespace = WorkloadNamespace("serving", {"cluster": cluster, "name": "serving"})


def service(name, ports, ingress):
    InferenceService(name, {"workload": {
        "name": name, "image": "registry.example.com/web:1.0", "gpu": {"count": 1}, "replicas": 1,
        "ports": ports, "exposure": {"ingress": ingress}},
        "node_pool": pool, "monitoring": monitoring, "namespace": namespace})


service("web", [{"name": "http", "containerPort": 8080}, {"name": "admin", "containerPort": 8081}],
        {"routes": [{"port": "http", "host": "web.example.com"}]})
service("web-http", [{"name": "http", "containerPort": 8080}], {"host": "other.example.com", "port": "http"})
'''


def test_every_shipped_stack_and_the_reuse_example_pass(stack_records):
    """No false refusal on what ships (the plan tests plan each of them through the same pass)."""
    from gpuplatform.authored import refusals
    from gpuplatform.components.validation import load

    for stack in ("dev", "staging", "prod", "local"):
        cfg = load(stack_raw(stack))
        assert refusals(stack_records(stack), workloads=[w.name for w in cfg.workloads],
                        pools=[p.name for p in cfg.node_pools]) == [], stack


def test_every_object_an_inference_service_registers_is_judged_by_validation(stack_records):
    """validation builds a workload's objects with ``workload_objects``: the same list the component registers,
    so an object added to one and not the other fails here."""
    from gpuplatform.components.inference_service import workload_context
    from gpuplatform.components.pools import all_pool_facts
    from gpuplatform.components.validation import load

    for stack in ("prod", "local"):
        cfg, records = load(stack_raw(stack)), stack_records(stack)
        facts = all_pool_facts(cfg)
        for w in cfg.workloads:
            owner = next(r for r in records if r.type == "gpuplatform:index:InferenceService"
                         and r.inputs.get("workload") == w.name)
            registered = sorted((r.inputs["kind"], r.inputs["metadata"]["name"]) for r in records
                                if r.parent_urn == owner.urn and r.is_kubernetes_object)
            built = sorted((o["kind"], o["metadata"]["name"])
                           for o in wm.workload_objects(w, workload_context(cfg, w, facts[w.node_pool])))
            assert built == registered, (stack, w.name)
