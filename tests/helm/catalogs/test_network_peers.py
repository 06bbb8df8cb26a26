"""The peer the workloads' NetworkPolicies admit to their metrics port is what kube-prometheus-stack installs: the
chart's own Prometheus Service and NetworkPolicy template select the Prometheus pods by those labels, in that
namespace, with the values the stack sends."""
from gpuplatform.catalogs.network import KUBE_PROMETHEUS_STACK


def test_the_prometheus_peer_matches_the_rendered_prometheus(rendered):
    kps = rendered("prod").releases["kube-prometheus-stack"]
    (prometheus,) = [d for d in kps.installed() if d.get("kind") == "Prometheus"]
    assert prometheus["metadata"]["namespace"] == KUBE_PROMETHEUS_STACK.namespace
    service = next(d for d in kps.installed() if d.get("kind") == "Service"
                   and d["spec"].get("selector", {}).get("operator.prometheus.io/name") ==
                   prometheus["metadata"]["name"])
    assert service["metadata"]["namespace"] == KUBE_PROMETHEUS_STACK.namespace
    assert KUBE_PROMETHEUS_STACK.pod_labels.items() <= service["spec"]["selector"].items()
