"""The check runner: every check in order against one cluster, and the command's polling loop around it."""
from __future__ import annotations

import sys
import time
from typing import Callable, Optional, TextIO

from kubernetes import client as k8s

from gpuplatform.catalogs.versions import chart
from gpuplatform.components.config import PlatformConfig
from gpuplatform.components.pools import all_pool_facts
from gpuplatform.components.workload_manifests import uses_app_metrics
from gpuplatform.verify.capacity import (check_compile_cache, check_fluid_cache, check_pre_pull, check_warm_capacity,
                                         check_warm_priority_class)
from gpuplatform.verify.cluster import (check_cgpu_component, check_credential, check_csi_driver, check_pod_network,
                                       check_system_pods)
from gpuplatform.verify.ingress import check_ingress, ingress_names
from gpuplatform.verify.kube import REQUEST_TIMEOUT, _api_error, build_api_client, kubeconfig_attempts
from gpuplatform.verify.network import check_policy_enforced, check_policy_peers
from gpuplatform.verify.monitoring import (CUSTOM_METRICS_APISERVICE, EXTERNAL_METRICS_APISERVICE, check_adapter_pods,
                                           check_apiservice, check_exporter, check_metrics)
from gpuplatform.verify.nodes import check_pool
from gpuplatform.verify.output import format_json, format_table, progress_line
from gpuplatform.verify.placement import check_pod_placement
from gpuplatform.verify.results import CheckResult, _fail, _pass
from gpuplatform.verify.slo import check_slo
from gpuplatform.verify.startup import check_load_time
from gpuplatform.verify.wake import check_wake_time, pod_proxy
from gpuplatform.verify.workloads import check_hpa, check_pod_monitor

POLL_SECONDS = 5.0


def run_verify(cfg: PlatformConfig, api_client: k8s.ApiClient) -> list[CheckResult]:
    """All checks against what ``cfg`` declares; never raises for API errors (they become failed checks)."""
    core = k8s.CoreV1Api(api_client)
    try:
        version = k8s.VersionApi(api_client).get_code(_request_timeout=REQUEST_TIMEOUT)
    except Exception as exc:  # noqa: BLE001
        host = api_client.configuration.host
        return [_fail("cluster.reachable", host, f"API server not reachable ({_api_error(exc)})",
                      "wrong kubeconfig/context, expired credentials, or the API endpoint is not reachable from "
                      "here (private endpoint without VPC access)")]
    results = [_pass("cluster.reachable", api_client.configuration.host, f"Kubernetes {version.git_version}")]
    cloud_checks = {"credential": lambda: check_credential(api_client),
                    "csi-driver": lambda: check_csi_driver(k8s.StorageV1Api(api_client)),
                    "pod-network": lambda: check_pod_network(cfg, core)}
    for name in cfg.cloud.cluster_checks:  # the checks only the cluster's cloud answers
        result = cloud_checks[name]()
        if result is not None:
            results.append(result)
    results.append(check_system_pods(cfg, core))

    pools = all_pool_facts(cfg)
    gpu_nodes = cgpu_nodes = 0
    for pool in pools.values():
        pool_results, count = check_pool(pool, cfg, core)
        results += pool_results
        gpu_nodes += count
        cgpu_nodes += count if pool.mode == "cgpu" else 0
    apps = k8s.AppsV1Api(api_client)
    cgpu = check_cgpu_component(cfg, apps, cgpu_nodes)
    if cgpu is not None:
        results.append(cgpu)

    reg = k8s.ApiregistrationV1Api(api_client)
    adapter = chart(cfg.monitoring.adapter_kind)
    # a second adapter in the same namespace (ack-prometheus-operator's prometheusAdapter installs into
    # 'monitoring' too) is told apart by its service: the prometheus-adapter chart names it after the release
    # (templates/service.yaml, k8s-prometheus-adapter.fullname: the release name when it contains the chart name)
    own_service = adapter.release if cfg.monitoring.adapter_kind == "prometheus-adapter" else None
    apis = [(CUSTOM_METRICS_APISERVICE, adapter.namespace, f"{adapter.release} (namespace {adapter.namespace})",
             own_service)]
    if any(w.autoscaling.autoscaler == "keda" for w in cfg.workloads):
        keda = chart("keda")
        apis.append((EXTERNAL_METRICS_APISERVICE, keda.namespace, f"KEDA (namespace {keda.namespace})", None))
    for name, ns, installer, service in apis:
        result, svc = check_apiservice(name, ns, installer, reg, service)
        results.append(result)
        if svc is not None:
            pods = check_adapter_pods(svc, core)
            if pods is not None:
                results.append(pods)

    exporter = check_exporter(cfg, apps, gpu_nodes)
    if exporter is not None:
        results.append(exporter)

    results += check_metrics(cfg, api_client, core, pools)
    auto = k8s.AutoscalingV2Api(api_client)
    for w in cfg.workloads:
        if not w.fixed:  # a workload without an autoscaler has no HPA to find
            results += check_hpa(cfg, w, auto)
    for w in cfg.workloads:
        placement = check_pod_placement(cfg, w, pools[w.node_pool], core) if w.node_pool in pools else None
        if placement is not None:
            results.append(placement)
    for w in cfg.workloads:
        results.append(check_load_time(cfg, w, core))
    for w in cfg.workloads:
        woke = check_wake_time(cfg, w, core, pod_proxy(api_client))
        if woke is not None:
            results.append(woke)
    # the time-to-capacity measures, for the workloads that use them (docs/model-startup.md, "Time to capacity")
    if any(w.warm_replicas for w in cfg.workloads):
        results.append(check_warm_priority_class(k8s.SchedulingV1Api(api_client)))
    for w in cfg.workloads:
        if w.warm_replicas:
            results += check_warm_capacity(cfg, w, core, apps)
    for w in cfg.workloads:
        if w.pre_pull:
            results += check_pre_pull(cfg, w, core, apps)
    for w in cfg.workloads:
        if any(v.fluid is not None for v in w.volumes):
            results += check_fluid_cache(cfg, w, core, k8s.CustomObjectsApi(api_client))
    for w in cfg.workloads:
        results += check_compile_cache(cfg, w, core)
    custom = k8s.CustomObjectsApi(api_client)
    for w in cfg.workloads:
        if uses_app_metrics(w):
            results.append(check_pod_monitor(cfg, w, custom))
    networking = k8s.NetworkingV1Api(api_client)
    for w in cfg.workloads:
        if w.exposure.ingress is not None:
            results += [check_ingress(cfg, w, name, networking) for name in ingress_names(w)]
    enforced = check_policy_enforced(cfg, apps, core)
    if enforced is not None:
        results.append(enforced)
    results += [check_policy_peers(cfg, w, networking, core) for w in cfg.workloads if w.network_policy.enabled]
    for w in cfg.workloads:
        results += check_slo(cfg, w, api_client)
    return results


def verify_main(cfg: PlatformConfig, kubeconfig: Optional[str] = None, context: Optional[str] = None,
                fmt: str = "table", wait_seconds: int = 0, out: TextIO = sys.stdout, *,
                poll_seconds: float = POLL_SECONDS, sleep: Callable[[float], None] = time.sleep,
                progress: Optional[TextIO] = None) -> int:
    """Run the checks (polling up to ``wait_seconds`` until all pass) and print the report.

    Exit code: 0 all checks pass, 1 a check failed, 2 the cluster client could not be set up. Progress lines go
    to ``progress`` (default: ``out`` for tables, stderr for JSON so stdout stays one JSON document).
    """
    if fmt not in ("table", "json"):
        print(f"unknown format {fmt!r}; use table or json", file=out)
        return 2
    try:
        api_client = build_api_client(cfg, kubeconfig, context)
    except Exception as exc:  # noqa: BLE001 - kubeconfig problems are user errors, not tracebacks
        print(f"cannot build a Kubernetes client: {exc}\n  tried: {kubeconfig_attempts(cfg, kubeconfig)}\n"
              "  allowed: --kubeconfig FILE, $KUBECONFIG, ~/.kube/config, or run inside the cluster", file=out)
        return 2
    progress = progress or (sys.stderr if fmt == "json" else out)
    start = time.monotonic()
    round_no = 0
    # a round count bound as well as the clock: the loop ends even if a round returns instantly or sleep is stubbed
    max_rounds = int(wait_seconds / max(poll_seconds, 0.01)) + 2 if wait_seconds > 0 else 1
    try:
        while True:
            round_no += 1
            results = run_verify(cfg, api_client)
            ok = all(r.ok for r in results)
            if wait_seconds <= 0:
                break
            elapsed = time.monotonic() - start
            print(progress_line(round_no, elapsed, wait_seconds, results), file=progress, flush=True)
            remaining = wait_seconds - elapsed
            if ok or remaining <= 0 or round_no >= max_rounds:
                break
            sleep(min(poll_seconds, remaining))
    finally:
        api_client.close()
    print(format_json(results) if fmt == "json" else format_table(results), file=out)
    return 0 if ok else 1
