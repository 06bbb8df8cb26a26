"""Which rules guard which component's args, and the one order ``validate`` runs them in.

Each tuple holds the rules of one area; ``RULES`` interleaves them in the order the issues have always been
reported, so a report reads the same whichever way its rules are grouped.
"""
from typing import Any, Iterable, Optional

from pydantic import ValidationError

from gpuplatform.components.config import PlatformConfig
from gpuplatform.components.contracts import check_metrics_served, check_served_metrics
from gpuplatform.components.errors import ConfigError, ConfigIssue
from gpuplatform.components.k8s_validity import check_kubernetes_validity
from gpuplatform.components.pools import PoolFacts, all_pool_facts
from gpuplatform.components.validation.authored import check_authored_objects
from gpuplatform.components.validation.autoscaling import check_autoscaling
from gpuplatform.components.validation.capacity import check_node_fit, check_pool_totals, check_replicas
from gpuplatform.components.validation.cluster import check_ack_cluster, check_chart_versions, check_cluster
from gpuplatform.components.validation.common import Rule, WorkloadRule, _Issues
from gpuplatform.components.validation.drain import check_drain
from gpuplatform.components.validation.exposure import check_exposure
from gpuplatform.components.validation.mig import check_mig_configs, check_mig_strategy
from gpuplatform.components.validation.fluid import check_fluid_volumes
from gpuplatform.components.validation.model import check_model
from gpuplatform.components.validation.monitoring import check_adapter_adoption, check_intervals, check_monitoring
from gpuplatform.components.validation.network import check_network_policy
from gpuplatform.components.validation.parsing import parse, provider_conflicts, without_unknown_keys
from gpuplatform.components.validation.placement import check_pod_homes
from gpuplatform.components.validation.pools import check_ack_pools, check_pools
from gpuplatform.components.validation.servers import check_server
from gpuplatform.components.validation.slo import check_slo
from gpuplatform.components.validation.warm import check_warm_capacity, check_warm_sets
from gpuplatform.components.validation.workloads import (check_command_line, check_env_and_volumes,
                                                         check_gpu_request, check_image, check_node_pool,
                                                         check_ports_and_probes, check_workload_name)

# In the order they run on each workload: later ones skip what an earlier one already reported under the same
# path (a replica ceiling is not computed from a GPU request that is itself wrong).
WORKLOAD_RULES: tuple[WorkloadRule, ...] = (check_image, check_ports_and_probes, check_env_and_volumes,
                                            check_command_line, check_node_pool, check_gpu_request, check_server,
                                            check_model, check_fluid_volumes, check_node_fit,
                                            check_replicas,
                                            check_autoscaling, check_warm_capacity, check_slo, check_exposure,
                                            check_drain, check_network_policy)


def check_workloads(cfg: PlatformConfig, facts: dict[str, PoolFacts], out: _Issues) -> None:
    """Every workload through ``WORKLOAD_RULES``, one workload after the other, so its issues stay together."""
    seen: dict[str, int] = {}
    for i, w in enumerate(cfg.workloads):
        p = f"workloads[{i}]"
        if i < out.checked_workloads:
            seen.setdefault(w.name, i)
            continue
        check_workload_name(p, i, w, seen, out)
        f = facts.get(w.node_pool)
        if f is not None and f.units_per_node == 0:
            f = None  # the pool serves no GPU at all (an unknown MIG profile): its own issue says why
        for rule in WORKLOAD_RULES:
            rule(cfg, p, w, f, out)


CLUSTER_RULES: tuple[Rule, ...] = (check_cluster, check_chart_versions, check_ack_cluster)
POOL_RULES: tuple[Rule, ...] = (check_ack_pools, check_pools)
MONITORING_RULES: tuple[Rule, ...] = (check_monitoring, check_adapter_adoption, check_intervals, check_served_metrics)
# Cross-component: they compare pools with each other or with the workloads, and read the issues the rules of
# single components reported, so they run after those. The last builds each workload's objects and judges them as
# the API server would, once nothing else is wrong with the workload.
STACK_RULES: tuple[Rule, ...] = (check_mig_strategy, check_mig_configs, check_pool_totals, check_warm_sets,
                                 check_kubernetes_validity, check_authored_objects)
# What a stack's workloads need from its monitoring: a composed InferenceService checks the same contract against
# the GpuMonitoring object it is given (components/contracts.py), naming it, so it does not run this area.
CONTRACT_RULES: tuple[Rule, ...] = (check_metrics_served,)
# Every pod the stack makes the cluster run has a node: needs the cluster, its pools and the monitoring's charts,
# so a composed program runs it with GpuMonitoring.
PLACEMENT_RULES: tuple[Rule, ...] = (check_pod_homes,)

AREAS: dict[str, tuple[Rule, ...]] = {
    "cluster": CLUSTER_RULES,
    "monitoring": MONITORING_RULES,
    "pools": POOL_RULES,
    "workloads": (check_workloads,),
    "stack": STACK_RULES,
    "contracts": CONTRACT_RULES,
    "placement": PLACEMENT_RULES,
}

RULES: tuple[Rule, ...] = (check_cluster, check_monitoring, check_chart_versions, check_ack_pools, check_ack_cluster,
                           check_adapter_adoption, check_intervals, check_pools,
                           check_mig_strategy, check_mig_configs,
                           check_workloads, check_pool_totals, check_warm_sets,
                           check_kubernetes_validity, check_served_metrics, check_metrics_served, check_pod_homes,
                           check_authored_objects)


def validate(cfg: PlatformConfig, *, installs_charts: bool = True,
             areas: Iterable[str] = tuple(AREAS), checked_workloads: int = 0) -> list[ConfigIssue]:
    """Every issue of ``cfg``. ``installs_charts=False`` for a config that stands for a single reused service,
    which installs none of the platform's charts, so their Kubernetes ranges do not limit it. ``areas`` (keys of
    ``AREAS``) limits the run to the rules of those components, e.g. ``("workloads",)``; the rules still run in
    the order of ``RULES``. ``checked_workloads``: how many leading workloads were validated before (see
    ``_Issues.checked_workloads``)."""
    areas = tuple(areas)
    unknown = [a for a in areas if a not in AREAS]
    if unknown:
        raise ValueError(f"unknown validation area(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(AREAS)}")
    chosen = {rule for area in areas for rule in AREAS[area]}
    out = _Issues()
    out.checked_workloads = checked_workloads
    out.whole_stack = set(areas) == set(AREAS)
    facts = all_pool_facts(cfg)
    for rule in RULES:
        if rule not in chosen or (rule is check_chart_versions and not installs_charts):
            continue
        rule(cfg, facts, out)
    return list(out)


def values_beside_unknown_keys(raw: dict[str, Any], issues: list[ConfigIssue]) -> list[ConfigIssue]:
    """The issues of every value of a stack whose only structural mistakes are unknown keys, so that one run
    reports the misspelt key and an impossible target beside it: the config is judged with each unknown key read
    as the key it is closest to, or without it (parsing ``without_unknown_keys``). Issues at a guessed key, or
    already reported, are left out; nothing when the repaired config still does not parse."""
    try:
        PlatformConfig.model_validate(raw)
        return []
    except ValidationError as exc:
        errors = exc.errors()
    if not any(e["type"] == "extra_forbidden" for e in errors):
        return []
    fixed, guessed = without_unknown_keys(raw, errors)
    try:
        cfg = parse(fixed)
    except ConfigError:
        return []
    found = validate(cfg)
    said = {(i.path, i.message) for i in issues}
    return [i for i in found if (i.path, i.message) not in said
            and not any(i.path == g or i.path.startswith(g + ".") or i.path.startswith(g + "[") for g in guessed)]


def load(raw: dict[str, Any], provider_settings: Optional[dict[str, Any]] = None) -> PlatformConfig:
    """The validated config of a stack's ``gpu-platform`` namespace; ``provider_settings`` (``alicloud:region``) are
    checked against it in the same run. ConfigError with every problem otherwise."""
    conflicts = provider_conflicts(raw, provider_settings or {})
    try:
        cfg = parse(raw)
    except ConfigError as exc:
        raise ConfigError(exc.issues + values_beside_unknown_keys(raw, exc.issues) + conflicts) from None
    issues = validate(cfg) + conflicts
    if issues:
        raise ConfigError(issues)
    return cfg
