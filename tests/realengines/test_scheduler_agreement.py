"""The real kube-scheduler as the judge of the package's offline placement (components/placement.py).

For every stack and example: kwok nodes shaped like its node groups at their most, every controller the cluster
will run (ACK's system pods, the add-ons', the charts', the stack's Deployments at maxReplicas), then where the
scheduler put their pods. The offline verdict (a pod that fits no node group) must be the scheduler's.
"""
from pathlib import Path

import pytest

from gpuplatform.components.placement import cluster_pods, homeless_pods, node_groups, workload_pods
from gpuplatform.components.stack_config import load_stack_file
from gpuplatform.rehearse.apply import Discovery
from gpuplatform.rehearse.controlplane import LocalControlPlane
from gpuplatform.rehearse.placement import create_controllers, create_nodes, settled_placement

REPO = Path(__file__).resolve().parents[2]
STACK_FILES = sorted((REPO / "stacks").glob("Pulumi.*.yaml")) + sorted((REPO / "examples").glob("0*/Pulumi.*.yaml"))


def placement_rows(engines, workdir, cfg) -> list[dict]:
    groups = node_groups(cfg)
    pods = cluster_pods(cfg) + workload_pods(cfg)
    offline_homeless = {h.pod.owner: h for h in homeless_pods(pods, groups)}
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
    return rows


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.stem.removeprefix("Pulumi."))
def test_the_schedulers_placement_is_the_plans(engines, tmp_path, path, record_property):
    cfg = load_stack_file(path)
    rows = placement_rows(engines, tmp_path, cfg)
    differ = [f"{r['owner']}: offline {'places' if r['offline'] else 'refuses'} ({r['offline_says'] or '-'}), "
              f"scheduler {'places' if r['server'] else 'refuses'} ({r['server_says'] or '-'})"
              for r in rows if r["offline"] != r["server"]]
    record_property("figures", f"{len(rows)} controllers, the scheduler places {sum(r['server'] for r in rows)}, "
                               f"{len(differ)} disagreements")
    assert rows
    assert not differ, "\n".join(differ)
