"""The autoscaling chain on the real controllers, and ``simulate`` on the same arrivals (docs/real-loop.md): kwok
pods with the simulator's start-up delays, emulated DCGM and vLLM servers under real request traffic, Prometheus,
the real prometheus-adapter with the package's rules and RBAC behind an APIService, the real HPA controller.

The gate of each scenario: the first scale-up, the time to capacity, the first scale-down and its settling within
one HPA sync period of the real chain's; the replica count per time within one sync period, and under evenly spaced
arrivals equal at every sync. Each scenario takes about four minutes of real time."""
import os
import shutil

import pytest

from gpuplatform.realloop.agreement import table
from gpuplatform.realloop.run import run_scenario
from gpuplatform.realloop.scenarios import SCENARIOS


@pytest.fixture(scope="module")
def prometheus():
    if shutil.which("prometheus") is None:
        message = "prometheus is not installed (Debian: apt-get install prometheus); the real loop scrapes with it"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_simulate_agrees_with_the_real_chain(name, engines, prometheus, tmp_path):
    scenario = SCENARIOS[name]
    agreement = run_scenario(scenario, engines, tmp_path / name)
    shown = table([agreement]) + (
        f"\nphases {agreement.phases}\nsyncs {agreement.syncs}\nreplicas real {agreement.real.replicas_at_syncs}"
        f"\nreplicas sim  {agreement.sim.replicas_at_syncs}\nmetric real {agreement.real.metric_at_syncs}"
        f"\nmetric sim  {agreement.sim.metric_at_syncs}")
    print("\n" + shown)
    real, sim = agreement.real, agreement.sim
    # the scenario moves the replicas, the way its load moves (a gate over a chain that never scaled proves nothing)
    if scenario.rates[-1][1] > scenario.rates[0][1]:
        assert real.first_scale_up_s is not None, f"the real chain never scaled up:\n{shown}"
    else:
        assert real.first_scale_down_s is not None, f"the real chain never scaled down:\n{shown}"
    assert agreement.failed_real == 0, f"{agreement.failed_real} arrivals found no Ready pod in the real chain"
    assert agreement.times_agree, (f"first scale-up {real.first_scale_up_s} / {sim.first_scale_up_s} s, capacity "
                                   f"{real.capacity_s} / {sim.capacity_s} s (real / simulate), allowed one sync "
                                   f"period ({agreement.sync_s} s):\n{shown}")
    assert not agreement.beyond_a_sync, (f"replicas differ by more than a sync at {agreement.beyond_a_sync}:"
                                         f"\n{shown}")
    if not scenario.poisson:
        # evenly spaced arrivals and fixed service times leave no sampling noise: every sync decides the same
        assert not agreement.mismatched_syncs, f"replicas differ at syncs {agreement.mismatched_syncs}:\n{shown}"
