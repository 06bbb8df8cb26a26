"""Whole-config validation, run before any resource is registered.

``parse`` turns pydantic errors into :class:`ConfigIssue` s with camelCase paths; ``validate`` applies the
cross-field rules (hardware, sharing, capacity, metrics, exposure, intervals). Each rule is a small function
that appends issues, so every problem of a config is reported at once.

One module per area: ``parsing``, ``common`` (what the rules share), ``cluster``, ``monitoring``, ``pools``,
``mig``, ``workloads``, ``model``, ``autoscaling``, ``slo``, ``exposure``, ``capacity``, ``authored`` (the objects a
workload's config makes, as the API server judges them); ``rules`` groups them by the component whose
args they guard (``CLUSTER_RULES``, ``POOL_RULES``, ``MONITORING_RULES``, ``WORKLOAD_RULES``, ``STACK_RULES``)
and fixes the order ``validate`` runs them in.
"""
from gpuplatform.components.validation.autoscaling import check_autoscaling
from gpuplatform.components.validation.capacity import (check_node_fit, check_pool_totals, check_replica_ceiling,
                                                        check_replicas)
from gpuplatform.components.validation.cluster import check_ack_cluster, check_chart_versions, check_cluster
from gpuplatform.components.validation.common import (HPA_API_VERSIONS, HPA_V2_MIN, K8S_VERSION, MIN_KUBERNETES, Rule,
                                                      WorkloadRule, hpa_api_version, kubernetes_version)
from gpuplatform.components.validation.exposure import GRPC_NEEDS_TLS, check_exposure
from gpuplatform.components.validation.mig import check_mig_configs, check_mig_strategy, check_pool_mig
from gpuplatform.components.validation.model import check_model
from gpuplatform.components.validation.monitoring import check_adapter_adoption, check_intervals, check_monitoring
from gpuplatform.components.validation.parsing import parse
from gpuplatform.components.validation.pools import MAX_POOL_NAME, check_ack_pools, check_pools
from gpuplatform.components.validation.rules import (AREAS, CLUSTER_RULES, MONITORING_RULES, POOL_RULES, RULES,
                                                     STACK_RULES, WORKLOAD_RULES, check_workloads, load, validate)
from gpuplatform.components.validation.workloads import (DNS_1035, MAX_WORKLOAD_NAME, PORT_NAME, SECRET_ENV,
                                                         check_env_and_volumes, check_gpu_request, check_image,
                                                         check_node_pool, check_ports_and_probes, check_workload_name)

__all__ = ["parse", "validate", "load", "hpa_api_version", "kubernetes_version",
           "AREAS", "RULES", "CLUSTER_RULES", "POOL_RULES", "MONITORING_RULES", "WORKLOAD_RULES", "STACK_RULES"]
