"""Helm values of the monitoring charts (kube-prometheus-stack, dcgm-exporter, prometheus-adapter, ACK's metrics
adapter) and the adapter rules they carry, pure over the config: monitoring.py registers them, and placement reads
them to know which pods the charts run without importing the component."""
from typing import Optional

import pulumi

from gpuplatform.catalogs.kubernetes import MANAGED_CONTROL_PLANE_COMPONENTS
from gpuplatform.catalogs.metrics import METRICS
from gpuplatform.catalogs.sharing import POOL_LABEL
from gpuplatform.catalogs.versions import IMAGES, MONITOR_LABELS, PROMETHEUS_PORT, chart
from gpuplatform.components import adapter_rules
from gpuplatform.components.config import PlatformConfig, duration_seconds
from gpuplatform.components.metric_sources import used_sources
from gpuplatform.components.pools import all_pool_facts

MONITORING_NS = chart("kube-prometheus-stack").namespace
ADAPTER_SA = chart("prometheus-adapter").release


def adapter_replicas(cfg: PlatformConfig) -> int:
    return cfg.monitoring.adapter_replicas or (2 if cfg.settings.is_prod else 1)


def generated_rules(cfg: PlatformConfig) -> list[dict]:
    mon = cfg.monitoring
    if mon.ack_guide_rules:
        # every ACK-exporter metric of the catalog, pod metrics also per node: the set the ACK guide configures
        sources = used_sources(cfg) + [s for m in METRICS.values() for s in m.sources if s.exporter == "ack"]
        unique = list({(s.exporter, s.api_name): s for s in sources}.values())
        return [adapter_rules.rule(s, mon.intervals.rule_window, per_node=True) for s in unique]
    return adapter_rules.rules(used_sources(cfg), mon.intervals.rule_window)


def kube_prometheus_stack_values(cfg: PlatformConfig, grafana_password=None) -> dict:
    iv = cfg.monitoring.intervals
    spec = {"scrapeInterval": iv.scrape, "evaluationInterval": iv.scrape, "retention": "15d"}
    # Select every ServiceMonitor/PodMonitor/PrometheusRule, not only those labelled release=<name>:
    # the NVIDIA article's PodMonitor went unscraped for lack of that label.
    for kind in ("serviceMonitor", "podMonitor", "rule", "probe"):
        spec[f"{kind}SelectorNilUsesHelmValues"] = False
    grafana = {"sidecar": {"dashboards": {"enabled": True, "label": "grafana_dashboard", "labelValue": "1",
                                          "searchNamespace": "ALL"}}}
    if grafana_password is None and cfg.grafana_admin_password:
        grafana_password = cfg.grafana_admin_password.get_secret_value()
    if grafana_password is not None:
        grafana["adminPassword"] = pulumi.Output.secret(grafana_password)
    values = {"prometheus": {"prometheusSpec": spec}, "grafana": grafana,
              # Helm installs a chart's crds/ once and never upgrades them; the chart's pre-install/pre-upgrade
              # hook Job applies the CRDs of the chart version being installed (server-side), so a chart bump
              # upgrades ServiceMonitor, PrometheusRule, ... with it (docs/helm.md)
              "crds": {"enabled": True, "upgradeJob": {"enabled": True, "image": {"busybox": {
                  "tag": IMAGES["crd-upgrade-busybox"]}}}}}
    if managed_control_plane(cfg):
        # a managed control plane exposes no controller-manager, scheduler or etcd to scrape, and ACK's kube-proxy
        # serves no metrics endpoint Prometheus can reach: their monitors find no target and their alerts
        # (absent(up{job=...})) would fire for ever. Turning a component off drops its monitor and its rules.
        values.update({key: {"enabled": False} for key in MANAGED_CONTROL_PLANE_COMPONENTS})
    return values


def managed_control_plane(cfg: PlatformConfig) -> bool:
    """ACK managed (and adopted ACK Pro) clusters: Alibaba runs the control plane outside the cluster."""
    return cfg.cloud.managed_control_plane()


def gpu_pool_tolerations(cfg: PlatformConfig) -> list[dict]:
    """Tolerations of every GPU pool's taints, for exporters that must run on all GPU nodes."""
    return _unique([t for f in all_pool_facts(cfg).values() for t in f.tolerations])


def dcgm_exporter_values(cfg: PlatformConfig) -> dict:
    iv = cfg.monitoring.intervals
    return {
        "serviceMonitor": {"enabled": True, "interval": iv.scrape, "honorLabels": True,
                           "additionalLabels": dict(MONITOR_LABELS)},
        "extraEnv": [{"name": "DCGM_EXPORTER_INTERVAL", "value": str(duration_seconds(iv.exporter_collect) * 1000)}],
        "tolerations": gpu_pool_tolerations(cfg),
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": POOL_LABEL, "operator": "Exists"}]}]}}},
        "priorityClassName": "system-node-critical",
    }


def prometheus_adapter_values(cfg: PlatformConfig, prometheus_url: pulumi.Input[str]) -> dict:
    values = {
        # the chart appends ':<port>' to the URL unless port is empty (templates/deployment.yaml --prometheus-url):
        # ARMS and a stack's own prometheusUrl are complete URLs
        "prometheus": {"url": prometheus_url, "port": "" if cfg.monitoring.backend == "arms"
                       or cfg.monitoring.prometheus_url else PROMETHEUS_PORT},
        "metricsRelistInterval": cfg.monitoring.intervals.adapter_relist,
        # rules.external stays empty: external.metrics.k8s.io belongs to KEDA when a workload uses it
        "rules": {"default": False, "custom": generated_rules(cfg), "external": []},
        "replicas": adapter_replicas(cfg),
        "serviceAccount": {"create": True, "name": ADAPTER_SA},
        # the chart's RBAC binds a wildcard custom.metrics role to the adapter; we bind only what it needs
        "rbac": {"create": False},
        # the chart's default maxUnavailable (1) must go: a PDB with both is refused by the API server. Not with a
        # null (the Pulumi engine does not carry it to Helm: the rehearsal's API server refused the PDB), but with
        # 0, which the chart's `if .maxUnavailable` leaves out (templates/pdb.yaml)
        "podDisruptionBudget": {"enabled": adapter_replicas(cfg) > 1, "minAvailable": 1, "maxUnavailable": 0},
        "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
            "weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                               "labelSelector": {"matchLabels": {
                                                   "app.kubernetes.io/name": "prometheus-adapter"}}}}]}},
        # in every environment, a certificate the API server verifies (cert-manager injects its CA into the
        # APIService) instead of the chart default insecureSkipTLSVerify: the aggregated API is what the HPA trusts
        "certManager": {"enabled": True},
    }
    return values


def ack_adapter_values(cfg: PlatformConfig, prometheus_url: pulumi.Input[str],
                       auth_token: Optional[pulumi.Input[str]]) -> dict:
    """The token is optional on ARMS V1 instances: without one, an ``Authorization`` header would carry an empty
    credential, so the header is only sent with a non-empty token (known once the ARMS lookup has run)."""
    prom = {"enabled": True, "url": prometheus_url, "metricsRelistInterval": cfg.monitoring.intervals.adapter_relist,
            "adapter": {"rules": {"default": False, "custom": generated_rules(cfg)}}}
    if auth_token is None:
        return {"AlibabaCloudMetricsAdapter": {"prometheus": prom}}
    with_header = pulumi.Output.all(prometheus_url, auth_token).apply(
        lambda a: {**prom, "url": a[0], **({"prometheusHeader": {"Authorization": a[1]}} if a[1] else {})})
    return {"AlibabaCloudMetricsAdapter": {"prometheus": with_header}}


def _unique(items: list[dict]) -> list[dict]:
    out = []
    for item in items:
        if item not in out:
            out.append(item)
    return out
