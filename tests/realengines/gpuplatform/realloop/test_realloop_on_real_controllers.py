"""The autoscaling chain on the real controllers, and ``simulate`` on the same arrivals (docs/real-loop.md): kwok
pods with the simulator's start-up delays, emulated DCGM and vLLM servers under real request traffic, Prometheus,
the real prometheus-adapter with the package's rules and RBAC behind an APIService, the real HPA controller; for
the scale-to-zero scenario the real KEDA operator and metrics API server with the package's ScaledObject.

The gate of each scenario: the first scale-up, the time to capacity, the first scale-down and its settling within
one HPA sync period of the real chain's (a sync and an autoscaler scan when nodes are added); the replica count per
time within one sync period, and under evenly spaced arrivals with no node added equal at every sync. With node
autoscaling (Karpenter with its kwok provider on the real chain), the first node requested and the first ready
within a scan, and the nodes per second within a sync and a scan; when the load falls, the first and the last node
removed within a sync and a scan, the real chain allowed Karpenter's 15 s validation of an empty node later. From
zero (KEDA), the activation and the return to zero within a polling interval, and the replicas equal at every poll
and every sync of the HPA KEDA owns. A scenario whose run does not hold runs once more and the second run is held to
the gate (one run is one draw of the chain's timing). Each scenario takes four to seven minutes of real time."""
import os

import pytest

from gpuplatform.realloop.agreement import placeholder_shortcut_problems, table
from gpuplatform.realloop.run import run_scenario
from gpuplatform.realloop.scenarios import SCENARIOS


@pytest.fixture(scope="module")
def prometheus(engines):
    """The Prometheus release the stack deploys, built with the other engines (engines/versions.env)."""
    if not (engines / "prometheus").exists():
        message = f"prometheus is not in {engines}: run `make engines`; the real loop scrapes with it"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_simulate_agrees_with_the_real_chain(name, engines, prometheus, tmp_path):
    scenario = SCENARIOS[name]
    needed = (["karpenter-kwok"] if scenario.node_provision_s is not None else []) + (
        ["keda-operator", "keda-metrics-apiserver"] if scenario.from_zero else [])
    for binary in needed:
        if not (engines / binary).exists():
            message = f"{binary} is not in {engines}: run `make engines`"
            if os.environ.get("CI") == "true":
                pytest.fail(message)
            pytest.skip(message)
    agreements = _run(scenario, engines, tmp_path / name)
    try:
        _hold_to_the_gate(scenario, agreements)
    except AssertionError as first:
        # One run is one draw of the chain's timing: a Poisson burst of the real server's instant gauge can cross
        # the HPA's threshold a sync before the simulator's mean does (docs/real-loop.md, disagreement 3), and on
        # the shared host a replica can turn Ready within a second of a collection, which the simulator's
        # one-second clock cannot resolve (disagreement 2). The scenario runs once more on new loop phases and
        # that run is held to the gate; a model that disagrees keeps failing it. The first run's failure is
        # printed with the second's.
        print(f"\nfirst run, which did not hold:\n{first}")
        agreements = _run(scenario, engines, tmp_path / f"{name}-second-run")
        _hold_to_the_gate(scenario, agreements)
    if scenario.others:
        # the placeholder held a node for the first burst: its replica started on the node the real scheduler
        # emptied by preempting the placeholder, before Karpenter could add one
        first = agreements[0]
        problems = placeholder_shortcut_problems(first.real, scenario.node_provision_s)
        assert not problems, f"{first.scenario}: " + "; ".join(problems) + "\n" + table(agreements)


def _run(scenario, engines, workdir) -> list:
    result = run_scenario(scenario, engines, workdir)
    return result if isinstance(result, list) else [result]


def _hold_to_the_gate(scenario, agreements) -> None:
    for agreement in agreements:
        check(scenario.for_workload(agreement.scenario.split("/")[-1]) if scenario.others else scenario, agreement)


def check(scenario, agreement):
    shown = table([agreement]) + (
        f"\nphases {agreement.phases}\nsyncs {agreement.syncs}\nreplicas real {agreement.real.replicas_at_syncs}"
        f"\nreplicas sim  {agreement.sim.replicas_at_syncs}\nmetric real {agreement.real.metric_at_syncs}"
        f"\nmetric sim  {agreement.sim.metric_at_syncs}"
        + (f"\npolls {agreement.polls}\nat polls real {agreement.real.replicas_at_polls}"
           f"\nat polls sim  {agreement.sim.replicas_at_polls}\nfailed requests real {agreement.real.failed} / sim "
           f"{agreement.sim.failed}" if agreement.polls else "")
        + (f"\nnodes real {agreement.real.nodes}\nnodes sim  {agreement.sim.nodes}"
           f"\nready real {agreement.real.nodes_ready}\nready sim  {agreement.sim.nodes_ready}"
           if agreement.real.nodes else ""))
    print("\n" + shown)
    real, sim = agreement.real, agreement.sim
    # the scenario moves the replicas, the way its load moves (a gate over a chain that never scaled proves nothing)
    if scenario.from_zero:
        assert real.activation_s is not None, f"KEDA never woke the workload:\n{shown}"
        assert real.to_zero_s is not None, f"KEDA never put the workload back to zero:\n{shown}"
        assert agreement.polls, f"no KEDA poll was told apart from its HPA's syncs:\n{shown}"
    elif scenario.rates[-1][1] > scenario.rates[0][1]:
        assert real.first_scale_up_s is not None, f"the real chain never scaled up:\n{shown}"
    else:
        assert real.first_scale_down_s is not None, f"the real chain never scaled down:\n{shown}"
    if scenario.from_zero:
        # until the first replica is ready the arrivals find none (the ingress answers 503), on both sides
        assert real.failed and sim.failed, f"no request failed while the workload woke:\n{shown}"
    else:
        assert agreement.failed_real == 0, f"{agreement.failed_real} arrivals found no Ready pod in the real chain"
    assert agreement.times_agree, (f"first scale-up {real.first_scale_up_s} / {sim.first_scale_up_s} s, capacity "
                                   f"{real.capacity_s} / {sim.capacity_s} s (real / simulate), allowed "
                                   f"{agreement.times_bound_s} s (a sync, and a scan when nodes are added):\n{shown}")
    assert not agreement.beyond_a_sync, (f"replicas differ by more than a sync at {agreement.beyond_a_sync}:"
                                         f"\n{shown}")
    if not scenario.poisson and not agreement.nodes_added:
        # evenly spaced arrivals and fixed service times leave no sampling noise: every sync decides the same (with
        # nodes added, Karpenter's node comes up to a scan before the simulator's, which can move a replica's
        # readiness across a sync: those scenarios are held to the bounds above)
        assert not agreement.mismatched_syncs, f"replicas differ at syncs {agreement.mismatched_syncs}:\n{shown}"
    if scenario.node_provision_s is not None and scenario.rates[-1][1] > scenario.rates[0][1]:
        assert real.first_node_s is not None, f"Karpenter never added a node:\n{shown}"
    elif scenario.node_provision_s is not None:
        # the nodes the scale-in emptied went, on both sides, down to the one the last replica holds
        assert real.first_node_removed_s is not None, f"Karpenter never removed a node:\n{shown}"
        assert real.nodes[-1] == sim.nodes[-1] == real.nodes[0] - (real.replicas_at_syncs[0]
                                                                   - real.replicas_at_syncs[-1]), shown
        assert agreement.nodes_agree, (f"first node request {real.first_node_s} / {sim.first_node_s} s, ready "
                                       f"{real.node_ready_s} / {sim.node_ready_s} s, first and last removed "
                                       f"{real.first_node_removed_s} / {sim.first_node_removed_s} s, "
                                       f"{real.last_node_removed_s} / {sim.last_node_removed_s} s, nodes beyond a "
                                       f"sync and a scan "
                                       f"({agreement.sync_s} + {agreement.scan_s} s) at {agreement.nodes_beyond_a_scan[:5]}:\n{shown}")
