"""The real kube-scheduler as the judge of the package's offline placement (components/placement.py).

For every stack and example: kwok nodes shaped like its node groups at their most, every controller the cluster
will run (ACK's system pods and DaemonSets, the add-ons', the charts', the stack's Deployments at maxReplicas), then
where the scheduler put their pods. The offline verdicts must be the scheduler's: a controller whose pods fit no
node group, and a node group whose pods do not fit by the sum of their requests (some of them left Pending).
"""

import pytest

from gpuplatform.components.placement import (cluster_pods, homeless_pods, node_groups, packing_shortfalls,
                                              workload_pods)
from gpuplatform.components.stack_config import load_stack_file
from gpuplatform.components.validation import parse
from support import REPO, stack_raw
from gpuplatform.rehearse.apply import Discovery
from gpuplatform.rehearse.controlplane import LocalControlPlane
from gpuplatform.rehearse.placement import create_controllers, create_nodes, settled_placement

STACK_FILES = sorted((REPO / "stacks").glob("Pulumi.*.yaml")) + sorted((REPO / "examples").glob("0*/Pulumi.*.yaml"))


def placement_rows(engines, workdir, cfg) -> tuple[list[dict], list[str], bool]:
    """(a row per controller, the groups the offline packing finds short, whether the scheduler left a pod the
    packing charged to a group Pending)."""
    groups = node_groups(cfg)
    pods = cluster_pods(cfg, with_daemonsets=True) + workload_pods(cfg)
    offline_homeless = {h.pod.owner: h for h in homeless_pods(pods, groups)}
    short = sorted({f"{s.group.name}: {s.resource}" for s in packing_shortfalls(pods, groups)})
    with LocalControlPlane(engines, workdir) as cp:
        discovery = Discovery(cp)
        create_nodes(cp, discovery, groups)
        wanted = create_controllers(cp, discovery, pods)
        real = settled_placement(cp, wanted)
    rows = []
    for owner, placed in real.items():
        home = offline_homeless.get(owner)
        rows.append({"owner": owner, "offline": home is None, "server": placed.placed,
                     "offline_says": "; ".join(f"{g}: {', '.join(r)}" for g, r in home.reasons.items()) if home
                     else "", "server_says": "; ".join(sorted(set(placed.pending)))
                     or (f"{placed.scheduled} of {placed.wanted} placed" if not placed.placed else "")})
    left_pending = any(not r["server"] for r in rows if r["offline"])
    return rows, short, left_pending


def judged(engines, tmp_path, cfg, record_property) -> tuple[list[str], bool]:
    rows, short, left_pending = placement_rows(engines, tmp_path, cfg)
    differ = [f"{r['owner']}: offline {'places' if r['offline'] else 'refuses'} ({r['offline_says'] or '-'}), "
              f"scheduler {'places' if r['server'] else 'refuses'} ({r['server_says'] or '-'})"
              for r in rows if r["offline"] != r["server"]
              # a pod that fits a node alone but not beside the others: the sum's verdict, judged per group below
              # (which replica the scheduler leaves Pending depends on its order, not the packing's)
              and not (short and r["offline"] and not r["server"])]
    record_property("figures", f"{len(rows)} controllers, the scheduler places {sum(r['server'] for r in rows)}, "
                               f"{len(differ)} disagreements; groups short by the sum: {', '.join(short) or 'none'}")
    assert rows
    assert not differ, "\n".join(differ)
    assert bool(short) == left_pending, (short, [r for r in rows if r["offline"] and not r["server"]])
    return short, left_pending


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.stem.removeprefix("Pulumi."))
def test_the_schedulers_placement_is_the_plans(engines, tmp_path, path, record_property):
    short, left_pending = judged(engines, tmp_path, load_stack_file(path), record_property)
    # every stack plans, so no group is short by the sum, and the scheduler leaves no pod Pending either
    assert not short and not left_pending


def three_10_gib_monitoring_pods(system_nodes: int):
    raw = stack_raw("prod")
    ten = {"resources": {"requests": {"memory": "10Gi"}}}
    raw["monitoring"]["helmValues"] = {"kubePrometheusStack": {
        "prometheus": {"prometheusSpec": ten}, "alertmanager": {"alertmanagerSpec": ten}, "grafana": ten}}
    raw["cluster"]["systemPool"] = {"nodes": system_nodes}
    return parse(raw)


@pytest.mark.parametrize("system_nodes", [2, 3])
def test_the_sum_of_requests_is_judged_as_the_scheduler_places_them(engines, tmp_path, system_nodes,
                                                                   record_property):
    """prod with Prometheus, Alertmanager and Grafana at 10 GiB each: on 2 system nodes the plan refuses it by the
    sum of requests and the scheduler leaves one of them Pending; on 3 both place them all."""
    short, left_pending = judged(engines, tmp_path, three_10_gib_monitoring_pods(system_nodes), record_property)
    if system_nodes == 2:
        assert short == ["system pool: memory"] and left_pending
    else:
        assert not short and not left_pending
