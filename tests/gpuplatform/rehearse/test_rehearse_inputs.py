"""What a rehearsal builds before any engine runs: the stack it deploys and the kwok nodes it creates."""
from support import REPO, stack_raw

from gpuplatform.components.placement import node_groups
from gpuplatform.components.stack_config import load, load_stack_file
from gpuplatform.rehearse.nodes import controller_objects, planned_nodes
from gpuplatform.rehearse.stack import kubernetes_minor, rehearsal_namespace


def test_an_ack_stack_is_rehearsed_as_an_existing_cluster_and_says_what_it_replaced():
    raw, notes = rehearsal_namespace(stack_raw("prod"), "/rehearsal/admin.kubeconfig")
    assert raw["cluster"] == {"kind": "kubeconfig", "kubernetesVersion": "1.35",
                              "kubeconfigPath": "/rehearsal/admin.kubeconfig"}
    assert any("ack-managed cluster and its node pools are not created" in n for n in notes)
    cfg = load(raw, {})  # the rehearsed stack is a valid stack of the package
    assert cfg.cluster.kind == "kubeconfig"
    assert [p.name for p in cfg.node_pools] == ["a100-mig"]


def test_a_kubeconfig_stack_is_rehearsed_as_it_is_with_the_rehearsals_kubeconfig():
    original = stack_raw("local")
    raw, notes = rehearsal_namespace(original, "/k")
    assert notes == []
    assert raw["cluster"] == {"kind": "kubeconfig", "kubernetesVersion": "1.35", "kubeconfigPath": "/k",
                              "simulateGpus": True}
    assert raw["workloads"] == original["workloads"]


def test_arms_monitoring_is_replaced_by_the_self_hosted_stack_and_said():
    original = stack_raw("prod")
    original["monitoring"] = {"backend": "arms", "gpuExporter": "ack"}
    raw, notes = rehearsal_namespace(original, "/k")
    assert raw["monitoring"]["backend"] == "self-hosted" and raw["monitoring"]["gpuExporter"] == "dcgm"
    assert any("ARMS" in n for n in notes) and any("dcgm-exporter" in n for n in notes)


def test_kubernetes_minor_drops_acks_patch_and_suffix():
    assert kubernetes_minor("1.35.2-aliyun.1") == "1.35"
    assert kubernetes_minor("1.34") == "1.34"


def test_kwok_nodes_carry_each_groups_labels_taints_and_allocatable():
    cfg = load_stack_file(REPO / "stacks" / "Pulumi.prod.yaml")
    nodes, notes = planned_nodes(node_groups(cfg))
    by_group: dict = {}
    for n in nodes:
        by_group.setdefault(n.group, []).append(n)
    assert len(by_group["system pool"]) == cfg.cluster.system_pool.nodes
    gpu = by_group["pool a100-mig"][0].body
    assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"} in gpu["spec"]["taints"]
    assert gpu["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
    allocatable = gpu["status"]["allocatable"]
    assert allocatable["nvidia.com/mig-1g.5gb"] == str(8 * 7)  # 8 A100s, 7 1g.5gb slices each
    assert allocatable["pods"] and allocatable["cpu"].endswith("m")
    assert len(by_group["pool a100-mig"]) == 2  # the pool's most
    assert notes == [] or all("not limited" in n or "rehearsed with" in n for n in notes)


def test_existing_nodes_of_a_kubeconfig_cluster_are_assumed_and_said():
    cfg = load_stack_file(REPO / "stacks" / "Pulumi.local.yaml")
    _nodes, notes = planned_nodes(node_groups(cfg))
    assert any(n.startswith("existing nodes (assumed): size not known to the plan, not limited (cpu 1000000m")
               for n in notes)


def test_a_controller_with_one_pod_per_node_keeps_that_rule():
    body = controller_objects("Deployment kube-system/coredns", {"tolerations": [{"operator": "Exists"}]}, 2, True)
    assert body["spec"]["replicas"] == 2
    spec = body["spec"]["template"]["spec"]
    assert spec["tolerations"] == [{"operator": "Exists"}]
    term = spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert controller_objects("Job kube-system/x", {}, 1, False) is None


def test_rehearse_without_the_engines_says_how_to_build_them(tmp_path):
    import os
    import subprocess
    import sys

    env = {**os.environ, "GPUPLATFORM_ENGINES_BIN": str(tmp_path / "none")}
    done = subprocess.run([sys.executable, "-m", "gpuplatform", "rehearse", "--stack", "local"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "GPUPLATFORM_ENGINES_BIN" in done.stderr and "is not a directory" in done.stderr


def test_rehearse_refuses_a_bad_stack_before_any_engine_starts(tmp_path):
    import os
    import subprocess
    import sys

    bad = tmp_path / "Pulumi.bad.yaml"
    bad.write_text((REPO / "stacks" / "Pulumi.local.yaml").read_text().replace("maxNodes: 2", "maxNodes: -1"))
    env = {**os.environ, "GPUPLATFORM_ENGINES_BIN": str(tmp_path / "none")}
    done = subprocess.run([sys.executable, "-m", "gpuplatform", "rehearse", "--config", str(bad)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "nodePools[0].maxNodes" in done.stderr


def test_chart_packages_install_each_pinned_chart_from_its_package_on_disk():
    from gpuplatform.chart_render import chart_of
    from support import synth

    raw = stack_raw("local")
    raw.setdefault("settings", {})["chartPackages"] = "/srv/charts"
    releases = [r for r in synth(raw) if r.type == "kubernetes:helm.sh/v3:Release"]
    assert releases
    for r in releases:
        assert r.inputs["chart"] == f"/srv/charts/{chart_of(r).name}-{r.inputs['version']}.tgz"
        assert "repositoryOpts" not in r.inputs


def test_no_helm_value_relies_on_a_null():
    """Helm deletes a chart default given a null, but the Pulumi engine does not carry a null in a Release's values
    to the provider (the rehearsal found prometheus-adapter's PDB left with both minAvailable and the chart's
    maxUnavailable, which the API server refuses): no stack may send one."""
    from support import STACKS, synth

    def nulls(value, path=""):
        if isinstance(value, dict):
            for k, v in value.items():
                yield from nulls(v, f"{path}.{k}")
        elif isinstance(value, list):
            for i, v in enumerate(value):
                yield from nulls(v, f"{path}[{i}]")
        elif value is None:
            yield path

    found = [(stack, r.inputs["name"], p) for stack in STACKS for r in synth(stack_raw(stack))
             if r.type == "kubernetes:helm.sh/v3:Release" for p in nulls(r.inputs.get("values") or {})]
    assert found == []


def test_fluid_is_stood_in_for_by_crds_that_store_the_datasets_and_a_bound_claim_of_the_datasets_name():
    """Example 005 reads its weights from a Fluid cache: the rehearsal serves Fluid's kinds and makes the claim Fluid
    would make, so the replicas mount it as they would on the cluster."""
    from gpuplatform.components.stack_config import load_stack_file
    from gpuplatform.rehearse.run import claim_stand_in, fluid_claims, fluid_crd_stand_ins, named_claims

    cfg = load_stack_file(REPO / "examples" / "005-vllm-queue" / "Pulumi.005-vllm-queue.yaml")
    assert fluid_claims(cfg) == [("inference", "chat-models")]
    assert named_claims(cfg) == [("inference", "vllm-compile-cache")]  # the compile cache's claim is the user's
    crds = {c["metadata"]["name"]: c["spec"] for c in fluid_crd_stand_ins()}
    assert set(crds) == {"datasets.data.fluid.io", "jindoruntimes.data.fluid.io"}
    assert {s["names"]["kind"] for s in crds.values()} == {"Dataset", "JindoRuntime"}
    assert all(s["scope"] == "Namespaced" and s["versions"][0]["name"] == "v1alpha1" for s in crds.values())
    claim = claim_stand_in("inference", "chat-models")[-1]
    assert claim["kind"] == "PersistentVolumeClaim" and claim["metadata"] == {"name": "chat-models",
                                                                              "namespace": "inference"}
