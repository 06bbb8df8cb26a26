"""Rules of the monitoring settings: backend, exporter and adapter for the cluster kind, adoption of an installed
adapter, and intervals that keep the series continuous."""

import re

from gpuplatform.catalogs.secrets import plaintext_secrets
from gpuplatform.components.config import PlatformConfig, duration_seconds
from gpuplatform.components.errors import fmt
from gpuplatform.components.pools import PoolFacts
from gpuplatform.components.validation.common import _Issues, url_problem


PROMETHEUS_API = re.compile(r"/api/v1(?:/(?:query|query_range|query_exemplars|series|labels|label/[^/]+/values|"
                            r"metadata|targets|rules|alerts|status/[^/]+))?/?$")
"""The HTTP API path every client appends to the base URL (Prometheus docs, querying/api: "/api/v1/query"): a base
URL ending in it makes every query go to ``.../api/v1/query/api/v1/query``."""


def api_path_problem(url: str) -> str | None:
    from urllib.parse import urlsplit

    path = urlsplit(url).path
    m = PROMETHEUS_API.search(path)
    if not m:
        return None
    return (f"it ends in the API path {m.group(0)!r}, which the adapter and KEDA append themselves (every query "
            f"would go to {path.rstrip('/')}/api/v1/query); allowed: the URL without it")


def check_monitoring(cfg: PlatformConfig, facts: dict[str, PoolFacts], out: _Issues) -> None:
    """Backend, exporter and adapter that run together and on this kind of cluster."""
    mon = cfg.monitoring
    # the escape hatch is held to the rule of first-class keys: a password in plain text is an error anywhere
    for field, values in mon.helm_values.model_dump(by_alias=True).items():
        for where, what in plaintext_secrets(values):
            found = "looks like a secret" if what == "a secret-looking key" else f"holds {what}"
            out.add(f"monitoring.helmValues.{field}.{where}", f"{found} in plain text (value not shown), "
                    "which would sit in the stack file, the plan and the Helm release; allowed: a reference to a "
                    "Kubernetes Secret (the chart's existingSecret or secretKeyRef values; for an Alertmanager "
                    "receiver the *_file form of the key, e.g. slack_api_url_file, with the Secret mounted through "
                    "alertmanager.alertmanagerSpec.secrets)")
    # the cloud's own Prometheus and adapter, asked for on a cluster whose cloud has none
    cloud = cfg.cloud
    if mon.backend == "arms" and not cloud.offers("arms"):
        out.add("monitoring.backend", "'arms' (ACK managed Prometheus) needs an ACK cluster; "
                "allowed for cluster kind 'kubeconfig': self-hosted")
    if mon.adapter_kind == "ack-alibaba-cloud-metrics-adapter" and not cloud.offers(mon.adapter_kind):
        out.add("monitoring.adapter", "'ack-alibaba-cloud-metrics-adapter' needs an ACK cluster; "
                "allowed for cluster kind 'kubeconfig': prometheus-adapter")
    problem = url_problem(mon.prometheus_url) if mon.prometheus_url is not None else None
    problem = problem or (api_path_problem(mon.prometheus_url) if mon.prometheus_url is not None else None)
    if problem:
        out.add("monitoring.prometheusUrl", f"{fmt(mon.prometheus_url)} is not a Prometheus URL: {problem}; allowed: "
                "http(s)://host[:port][/path], e.g. http://ack-prometheus-operator-prometheus.monitoring.svc:9090")
    if mon.ack_guide_rules and mon.exporter != "ack":
        out.add("monitoring.ackGuideRules", f"true, but the guide's rules read the ACK GPU exporter and this stack "
                f"uses {fmt(mon.exporter)}; allowed: true only with gpuExporter 'ack' (backend arms)")
    if mon.exporter == "ack" and mon.backend != "arms":
        out.add("monitoring.gpuExporter", "'ack' (the ACK GPU exporter) is collected by ACK managed Prometheus; "
                "allowed with backend 'self-hosted': dcgm, ack-legacy")
    if mon.exporter == "dcgm" and mon.backend == "arms":
        out.add("monitoring.gpuExporter", "'dcgm' is not scraped by ACK managed Prometheus; "
                "allowed with backend 'arms': ack")
    if getattr(cfg.cluster, "simulate_gpus", False) and mon.exporter != "dcgm":
        out.add("monitoring.gpuExporter", f"{fmt(mon.exporter)} does not run with simulated GPUs; "
                "allowed with simulateGpus: dcgm (fake-gpu-operator emits DCGM series)")


def check_adapter_adoption(cfg: PlatformConfig, facts: dict[str, PoolFacts], out: _Issues) -> None:
    mon = cfg.monitoring
    if mon.adopt_adapter_release and mon.adapter_kind != "ack-alibaba-cloud-metrics-adapter":
        out.add("monitoring.adoptAdapterRelease", f"true, but the adapter is {fmt(mon.adapter_kind)}; only an "
                "installed ack-alibaba-cloud-metrics-adapter release can be adopted; allowed: false")


def check_intervals(cfg: PlatformConfig, facts: dict[str, PoolFacts], out: _Issues) -> None:
    iv = cfg.monitoring.intervals
    collect, scrape = duration_seconds(iv.exporter_collect), duration_seconds(iv.scrape)
    window, relist = duration_seconds(iv.rule_window), duration_seconds(iv.adapter_relist)
    if relist < scrape:
        out.add("monitoring.intervals.adapterRelist", f"{fmt(iv.adapter_relist)} is shorter than the scrape interval "
                f"{fmt(iv.scrape)}; allowed: >= {iv.scrape} (series would appear and disappear)")
    if window < 2 * scrape:
        out.add("monitoring.intervals.ruleWindow", f"{fmt(iv.rule_window)} holds fewer than two scrapes of "
                f"{fmt(iv.scrape)}; allowed: >= {2 * scrape}s (increase()/rate() need two samples in the window, "
                "or the query returns nothing for the pod)")
    if collect > window:
        out.add("monitoring.intervals.exporterCollect", f"{fmt(iv.exporter_collect)} is longer than the rule "
                f"window {fmt(iv.rule_window)}; allowed: <= {window}s")
