"""Node scale-down in the simulator's cluster-autoscaler model (gpuplatform/simulate/cluster.py ``NodePool``) and
the timing a ``kubeconfig`` cluster states for its own autoscaler (``cluster.nodeAutoscaling``)."""
import pytest
from support import stack_raw

from gpuplatform.catalogs.node_autoscaling import MAX_EMPTY_BULK_DELETE, UPSTREAM_CA
from gpuplatform.components.config import duration_seconds
from gpuplatform.components.errors import ConfigError
from gpuplatform.components.validation import load
from gpuplatform.components.validation.parsing import parse
from gpuplatform.simulate.cluster import NodePool, NodeScaler, Pods
from gpuplatform.simulate.workload_setup import node_scaler


def _local(**autoscaling) -> dict:
    raw = stack_raw("local")
    assert raw["cluster"]["kind"] == "kubeconfig"
    if autoscaling:
        raw["cluster"]["nodeAutoscaling"] = autoscaling
    return raw


def test_a_kubeconfig_cluster_states_its_autoscalers_timing_and_simulate_reads_it() -> None:
    default = node_scaler(parse(_local()))
    assert (default.scan_s, default.unneeded_s, default.delay_after_add_s) == (
        duration_seconds(UPSTREAM_CA["scanInterval"]), duration_seconds(UPSTREAM_CA["scaleDownUnneededTime"]),
        duration_seconds(UPSTREAM_CA["scaleDownDelayAfterAdd"])) == (10, 600, 600)
    stated = node_scaler(parse(_local(scanInterval="15s", scaleDownUnneededTime="2m",
                                      scaleDownDelayAfterAdd="5m")))
    assert (stated.scan_s, stated.unneeded_s, stated.delay_after_add_s) == (15, 120, 300)
    assert "cluster.nodeAutoscaling" in stated.source
    assert default.source == "the upstream cluster-autoscaler's defaults"


@pytest.mark.parametrize("key, value, says", [
    ("scaleDownUnneededTime", "0s", "'0s' is zero; allowed: a positive duration"),
    ("scaleDownUnneededTime", "ten minutes", "'ten minutes' is not a duration"),
    ("scanInterval", "-10s", "'-10s' is negative"),
    ("scaleDownDelayAfterAdd", "1d", "'1d' is not a duration"),
])
def test_a_bad_autoscaler_timing_names_its_path_and_what_is_allowed(key, value, says) -> None:
    with pytest.raises(ConfigError) as exc:
        load(_local(**{key: value}))
    issues = {i.path: i.message for i in exc.value.issues}
    (path, message), = [(p, m) for p, m in issues.items() if key in p]
    assert path.endswith(f"cluster.nodeAutoscaling.{key}") and says in message


def test_an_ack_setting_is_not_a_kubeconfig_clusters_to_state() -> None:
    # the expander, thresholds and scaler type are what the stack sends to ACK; a kubeconfig cluster sends nothing
    with pytest.raises(ConfigError) as exc:
        load(_local(expander="random"))
    assert any("nodeAutoscaling" in i.path and "expander" in i.path for i in exc.value.issues)


def _pool(nodes: int, unneeded_s: int = 60, delay_after_add_s: int = 60, min_nodes: int = 0,
          max_nodes: int = 40) -> tuple[NodePool, Pods]:
    pool = NodePool(slots=1, min_nodes=min_nodes, max_nodes=max_nodes, provision_s=60, autoscaled=True,
                    initial=nodes, scaler=NodeScaler(10, unneeded_s, delay_after_add_s))
    pods = Pods("w", image_pull_s=10, model_load_s=20)
    pods.start_ready(nodes, pool)
    return pool, pods


def _node_counts(pool: NodePool, pods: Pods, scale_ins: dict, end: int) -> dict:
    """Scan every second up to ``end``, the HPA setting the replicas to ``scale_ins[t]`` at second ``t`` (between
    two scans); the node count after each scan that changed it."""
    out, before = {}, len(pool.nodes)
    for t in range(end):
        if t in scale_ins:
            pods.scale(scale_ins[t], float(t))
        pool.scan(float(t), pods)
        if len(pool.nodes) != before:
            out[t], before = len(pool.nodes), len(pool.nodes)
    return out


def test_an_emptied_node_goes_at_the_first_scan_it_was_unneeded_for_the_unneeded_time() -> None:
    """cluster-autoscaler's unneeded time counts from the scan that first found the node unneeded (not from when
    its pod went), and the node goes at the first scan at which it has been unneeded that long."""
    pool, pods = _pool(3)
    # scale-ins at 103 and 133 s empty a node each; the scans at 110 and 140 s find them; 60 s later they go
    assert _node_counts(pool, pods, {103: 2, 133: 1}, 300) == {170: 2, 200: 1}
    pool, pods = _pool(3)
    assert _node_counts(pool, pods, {103: 1}, 300) == {170: 1}  # two emptied at once go at once
    pool, pods = _pool(2, min_nodes=2)
    assert _node_counts(pool, pods, {5: 1}, 300) == {}  # not below minNodes


def test_no_node_goes_within_the_delay_after_a_scale_out_but_its_unneeded_time_keeps_counting() -> None:
    pool, pods = _pool(3, unneeded_s=60, delay_after_add_s=100, max_nodes=4)
    # a fourth replica at 1 s goes Pending: the scan at 10 s adds a node (ready at 70 s); the load falls at 15 s
    # and the HPA keeps one replica: two ready nodes empty (found at 20 s, due at 80 s) and the new one once ready
    # (found at 70 s, due at 130 s). The delay after the scale-out holds the first two until 110 s, when they go
    # (their unneeded time counted through the delay, not from its end, which would be 170 s)
    assert _node_counts(pool, pods, {1: 4, 15: 1}, 300) == {10: 4, 110: 2, 130: 1}


def test_empty_nodes_go_in_bulk_of_at_most_max_empty_bulk_delete_per_scan() -> None:
    """FAQ "How does scale-down work?": empty nodes are terminated in bulk, up to --max-empty-bulk-delete (10) at a
    time; the rest go at the next scan."""
    assert MAX_EMPTY_BULK_DELETE == 10
    pool, pods = _pool(15)
    # 14 nodes empty: 10 at the first scan past the unneeded time, the other 4 at the next
    assert _node_counts(pool, pods, {5: 1}, 300) == {70: 5, 80: 1}
