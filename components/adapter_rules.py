"""Custom-metrics adapter rules generated from the metric catalog, and how the adapter renders them.

Both adapters (prometheus-adapter and ack-alibaba-cloud-metrics-adapter, which embeds it) read the same rule
format: ``seriesQuery`` discovers series, ``resources.overrides`` maps series labels to Kubernetes resources,
``name`` renames the series to the API name, ``metricsQuery`` is a Go template with ``<<`` ``>>`` delimiters.

Rendering (prometheus-adapter ``pkg/naming/metrics_query.go`` ``Build``), for a request
``GET /apis/custom.metrics.k8s.io/v1beta1/namespaces/<ns>/pods/<names>/<metric>``:

* ``<<.Series>>``        the discovered series name (e.g. ``DCGM_CUSTOM_PROCESS_MEM_USED``);
* ``<<.LabelMatchers>>`` the HPA's metric selector requirements (none here), then the namespace matcher
  ``<nsLabel>="<ns>"``, then the resource matcher: ``<podLabel>="<name>"`` for one object or
  ``<podLabel>=~"<a>|<b>"`` for several, joined by ``,``;
* ``<<.GroupBy>>``       the resource's label (``<podLabel>``), so the query returns one series per pod, which
  the adapter maps back to the pod by that label.

Node-scoped rules (cluster-scoped resource) get no namespace matcher. :func:`render_metrics_query` does exactly
this, and the test suite evaluates every rendered query with ``promtool`` on exporter-shaped series.
"""
from gpuplatform.catalogs.metrics import MetricSource, WINDOW, series_query, served_names  # noqa: F401 - re-exported


def rule(source: MetricSource, window: str, per_node: bool = False) -> dict:
    """``per_node``: a pod-scoped rule also maps the node label, so the API serves ``nodes/<name>`` besides
    ``pods/<name>`` and ``namespaces/<name>`` (what the ACK guide's rules list)."""
    lab = source.labels
    if source.scope == "node":
        overrides = {lab.node: {"resource": "node"}}
    else:
        overrides = {lab.namespace: {"resource": "namespace"}, lab.pod: {"resource": "pod"}}
        if per_node and lab.node:
            overrides[lab.node] = {"resource": "node"}
    return {
        "seriesQuery": series_query(source),
        "resources": {"overrides": overrides},
        "name": {"matches": _name_regex(source), "as": source.api_name},
        "metricsQuery": source.metrics_query.replace(WINDOW, window),
    }


def rules(sources: list[MetricSource], window: str) -> list[dict]:
    return [rule(s, window) for s in sources]


def go_quote(value: str) -> str:
    """Go's %q for the plain ASCII names Kubernetes allows."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def pod_matchers(source: MetricSource, namespace: str, pods: list[str]) -> str:
    lab = source.labels
    resource = f"{lab.pod}={go_quote(pods[0])}" if len(pods) == 1 else f"{lab.pod}=~{go_quote('|'.join(pods))}"
    return f"{lab.namespace}={go_quote(namespace)},{resource}"


def node_matchers(source: MetricSource, nodes: list[str]) -> str:
    lab = source.labels
    return f"{lab.node}={go_quote(nodes[0])}" if len(nodes) == 1 else f"{lab.node}=~{go_quote('|'.join(nodes))}"


def render_metrics_query(source: MetricSource, label_matchers: str, group_by: str, window: str) -> str:
    """The PromQL the adapter sends to Prometheus for one request (see the module docstring)."""
    return (source.metrics_query.replace(WINDOW, window)
            .replace("<<.Series>>", source.series)
            .replace("<<.LabelMatchers>>", label_matchers)
            .replace("<<.GroupBy>>", group_by))


def render_for_pods(source: MetricSource, namespace: str, pods: list[str], window: str) -> str:
    return render_metrics_query(source, pod_matchers(source, namespace, pods), source.labels.pod, window)


def render_for_nodes(source: MetricSource, nodes: list[str], window: str) -> str:
    return render_metrics_query(source, node_matchers(source, nodes), source.labels.node, window)


def _regex_escape(series: str) -> str:
    return series.replace(".", "\\.")


def _name_regex(source: MetricSource) -> str:
    """``name.matches`` over every name of the series. For a renamed series both names map to the one API name;
    the adapter keeps one series per metric name and resource (prometheus-adapter
    ``pkg/custom-provider/series_registry.go`` ``SetSeries``: the last discovered series wins), so ``<<.Series>>``
    could be either name: the metricsQuery of such a rule names both series itself."""
    names = [_regex_escape(n) for n in source.names]
    return f"^{names[0]}$" if len(names) == 1 else f"^({'|'.join(names)})$"


def listed_resources(rule_list: list[dict]) -> set[str]:
    """``<resource>/<metric>`` entries ``kubectl get --raw /apis/custom.metrics.k8s.io/v1beta1`` lists: one per
    metric name and resource its overrides map (prometheus-adapter lists every resource a rule's series can be
    attributed to, for each name the rule serves)."""
    plural = {"pod": "pods", "namespace": "namespaces", "node": "nodes"}
    out = set()
    for r in rule_list:
        for name in served_names([r]):
            for o in (r.get("resources") or {}).get("overrides", {}).values():
                out.add(f"{plural.get(o['resource'], o['resource'])}/{name}")
    return out
