"""The stack rules by the component whose args they guard, so a component checks its part with the rules a stack
file is checked with."""
from gpuplatform.components import validation as v

AREAS = {
    "cluster": (v.check_cluster, v.check_ack_cluster),
    "pools": (v.check_pools, v.check_mig_strategy, v.check_mig_configs),
    "monitoring": (v.check_chart_versions, v.check_adapter_adoption, v.check_intervals, v.check_served_metrics),
    "workloads": (v.check_workloads, v.check_pool_totals, v.check_kubernetes_validity),
}


def validate_areas(cfg, areas) -> list:
    from gpuplatform.components.pools import all_pool_facts

    out = v._Issues()
    facts = all_pool_facts(cfg)
    for area in areas:
        for rule in AREAS[area]:
            rule(cfg, facts, out)
    return list(out)
