"""Helpers for the policy tests: the resources a stack registers, built from the same pure builders the
components use, and helpers that run one policy object over them."""

from gpuplatform.catalogs.versions import CHARTS
from gpuplatform.components import adapter_rules
from gpuplatform.components import workload_manifests as wm
from gpuplatform.components.metric_sources import used_sources
from gpuplatform.components.network_policy import network_access
from gpuplatform.components.pools import all_pool_facts
from gpuplatform.components.stack_config import load_stack_file
from gpuplatform.components.validation import hpa_api_version, kubernetes_version
from gpuplatform.check import run_policies
from gpuplatform.components.node_pool import pool_props as node_pool_props
from gpuplatform.records import RegisteredResource
from gpuplatform.policies.registry import by_id
from support import REPO

STACKS = ("dev", "staging", "prod", "local")


def _release(key: str, values: dict) -> RegisteredResource:
    c = CHARTS[key]
    return RegisteredResource("kubernetes:helm.sh/v3:Release", c.release,
                              {"chart": c.name, "version": c.version, "name": c.release, "namespace": c.namespace,
                               "repositoryOpts": {"repo": c.repository}, "values": values})


def stack_resources(stack: str) -> list[RegisteredResource]:
    """What a stack registers, as far as the policies read it."""
    cfg = load_stack_file(REPO / "stacks" / f"Pulumi.{stack}.yaml")
    facts = all_pool_facts(cfg)
    version = kubernetes_version(cfg)
    prod = cfg.settings.is_prod
    protect = cfg.settings.protect_resources
    platform = {"environment": cfg.settings.environment, "kubernetesVersion": cfg.cluster.kubernetes_version,
                "clusterKind": cfg.cluster.kind, "allowPublicEndpoints": cfg.settings.allow_public_endpoints,
                "protect": protect}
    # a component's props are its inputs; what the stack policies see is what it registers as outputs, which for
    # these two components includes the same facts (tests/policies/test_pack_engine.py proves it on the real components)
    out = [RegisteredResource("gpuplatform:index:GpuPlatform", "platform", platform, custom=False, outputs=platform)]
    if cfg.cluster.kind == "ack-managed":
        out.append(RegisteredResource("alicloud:cs/managedKubernetes:ManagedKubernetes", "cluster",
                                      {"name": "c"}, protect=protect))
    for pool in cfg.node_pools:
        f = facts[pool.name]
        pool_props = node_pool_props(f)
        out.append(RegisteredResource("gpuplatform:index:GpuNodePool", pool.name, pool_props, custom=False,
                                      outputs=pool_props))
        if cfg.cloud.creates_node_pools:
            out.append(RegisteredResource("alicloud:cs/nodePool:NodePool", f"{pool.name}-pool", {
                "clusterId": "c-1", "nodePoolName": pool.name, "instanceTypes": list(pool.instance_types),
                "labels": [{"key": k, "value": v} for k, v in f.node_labels.items()],
                "taints": [{"key": k, "value": v, "effect": e} for k, v, e in f.taints],
                "scalingConfig": {"enable": True, "minSize": pool.min_nodes, "maxSize": pool.max_nodes,
                                  "type": "gpu"}}, parent=pool.name, protect=protect))
    window = cfg.monitoring.intervals.rule_window
    rules = adapter_rules.rules(used_sources(cfg), window)
    if cfg.monitoring.adapter_kind == "prometheus-adapter":
        values = {"rules": {"default": False, "custom": rules}, "replicas": 2 if prod else 1}
        if prod:
            values["certManager"] = {"enabled": True}
            values["podDisruptionBudget"] = {"enabled": True, "maxUnavailable": 1}
        out.append(_release("prometheus-adapter", values))
    else:
        out.append(_release("ack-alibaba-cloud-metrics-adapter",
                            {"AlibabaCloudMetricsAdapter": {"prometheus": {"adapter": {"rules": {"custom": rules}}}}}))
    for w in cfg.workloads:
        ctx = wm.WorkloadContext(namespace=cfg.settings.namespace, pool=facts[w.node_pool],
                                 kubernetes_version=version, hpa_api_version=hpa_api_version(cfg),
                                 cloud=cfg.cloud, rule_window=window, metric_sources=wm.context_sources(cfg, w),
                                 network=network_access(cfg, w))
        objs = [wm.deployment(w, ctx), wm.service(w, ctx), wm.hpa(w, ctx), wm.scaled_object(w, ctx),
                wm.pod_disruption_budget(w, ctx), wm.pod_monitor(w, ctx), *wm.ingresses(w, ctx),
                *wm.nfs_volume_objects(w, ctx), wm.network_policy(w, ctx)]
        for o in objs:
            if o is not None:
                group, _, ver = o["apiVersion"].rpartition("/")
                out.append(RegisteredResource(f"kubernetes:{group or 'core'}/{ver}:{o['kind']}",
                                              f"{w.name}-{o['kind'].lower()}", o, parent=w.name))
    return out


def only(policy_id: str, resources, config=None):
    """Violation messages of one policy (its real pulumi_policy object) over ``resources``."""
    return [v.message for v in run_policies(resources, config, policies=[by_id(policy_id)])]


def find(resources, kind_or_type: str) -> RegisteredResource:
    for r in resources:
        if r.type == kind_or_type or r.type.endswith(":" + kind_or_type):
            return r
    raise KeyError(kind_or_type)


def pod_spec(r: RegisteredResource) -> dict:
    return r.inputs["spec"]["template"]["spec"]


