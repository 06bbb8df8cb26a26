"""The real loop's pieces that need no engine: the scenarios' arrivals and the trace simulate gets, the kwok stages
that play the simulator's start-up delays, the emulated server's metrics, and how the agreement is read."""
import asyncio
import time
from dataclasses import replace

import yaml

from gpuplatform.realloop.agreement import (
    KARPENTER_EMPTINESS_VALIDATION_S, Agreement, Side, placeholder_shortcut_problems, read_side, table)
from gpuplatform.realloop.chain import kwok_stages
from gpuplatform.realloop.emulator import EmulatedServer
from gpuplatform.realloop.run import load_scenario, main, recompare
from gpuplatform.realloop.scenarios import SCENARIOS, Scenario
from support import FIXTURES_DIR


def test_even_arrivals_follow_the_rates_warm_up_included():
    s = Scenario("t", "t", SCENARIOS["gpu-util-step"].config, "echo-gpu", "dcgm", ((0, 2.0), (10, 6.0)), 20,
                 poisson=False, deterministic_service=True, warmup_s=5)
    arrivals = s.arrivals()
    assert sum(1 for a in arrivals if a < 0) == 10            # 5 s of warm-up at 2/s
    assert sum(1 for a in arrivals if 0 <= a < 10) == 20
    assert sum(1 for a in arrivals if 10 <= a < 20) == 60
    assert s.trace().rates == (2.0, 6.0) and s.trace().times == (0.0, 10.0)


def test_poisson_arrivals_are_seeded_and_simulate_replays_their_per_second_counts():
    s = SCENARIOS["vllm-queue-poisson"]
    assert s.arrivals() == s.arrivals()
    trace = s.trace()
    counted = [0] * (s.duration_s + 1)
    for a in s.arrivals():
        if 0 <= a <= s.duration_s:
            counted[int(a)] += 1
    assert list(trace.rates[1:]) == [float(c) for c in counted[1:]]
    # second 0 is the warm-up's rate: the simulator starts in that steady state
    assert trace.rates[0] == s.rates[0][1]
    after = sum(counted[s.rates[1][0]:s.duration_s]) / (s.duration_s - s.rates[1][0])
    assert abs(after - s.rates[1][1]) < 0.2 * s.rates[1][1]


def test_kwok_plays_the_pull_then_the_load():
    stages = {d["metadata"]["name"]: d for d in yaml.safe_load_all(kwok_stages(10, 20))}
    assert stages["real-loop-pod-started"]["spec"]["delay"]["durationMilliseconds"] == 10000
    assert stages["real-loop-pod-ready"]["spec"]["delay"]["durationMilliseconds"] == 20000
    started = yaml.safe_load(stages["real-loop-pod-started"]["spec"]["next"]["statusTemplate"]
                             .replace("{{ $now := Now }}", "").split("containerStatuses")[0]
                             .replace("{{ $now | Quote }}", "now"))
    assert {c["type"]: c["status"] for c in started["conditions"]}["Ready"] == "False"
    assert "rehearsal-pod-deleted" in stages and "rehearsal-node-ready" in stages


def test_the_scenarios_load_and_their_delays_are_the_simulators():
    for scenario in SCENARIOS.values():
        cfg, s, _ = load_scenario(scenario)
        assert s.plan.image_pull_s == 10 and s.plan.model_load_s == 20
        assert s.hpa_spec["minReplicas"] == 1


def _run(coroutine):
    """A loop of the test's own: ``asyncio.run`` would leave the main thread without a current event loop, which the
    Pulumi mocks of later tests in the same worker need."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        loop.close()


def test_an_emulated_gpu_reports_the_busy_share_of_the_second_before_its_collection():
    async def play():
        server = EmulatedServer("p", "dcgm", 0.1, 1, True, None, ready=True)
        start = time.time()
        for k in range(5):  # 5 requests of 100 ms, one every 200 ms: half busy
            asyncio.get_running_loop().call_later(0.2 * k, lambda: asyncio.ensure_future(server.serve_one()))
        await asyncio.sleep(1.0 - (time.time() - start))
        server.collect(time.time())
        return server
    server = _run(play())
    assert 45 <= server.collected_util <= 55
    assert 'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-p"}' in server.metrics_text()


def test_an_emulated_vllm_counts_requests_waiting_beyond_its_slots():
    async def play():
        server = EmulatedServer("p", "vllm", 0.5, 2, True, None, ready=True)
        tasks = [asyncio.ensure_future(server.serve_one()) for _ in range(5)]
        await asyncio.sleep(0.1)
        text = server.metrics_text()
        await asyncio.gather(*tasks)
        return text
    text = _run(play())
    assert "vllm:num_requests_waiting 3" in text and "vllm:num_requests_running 2" in text


def test_an_emulated_servers_metrics_carry_a_content_type_prometheus_3_parses():
    """Prometheus 3 fails a scrape whose Content-Type is missing or unknown (CHANGELOG 3.0.0, PR #15136; docs/
    migration.md "Scrape protocols" lists the ones it accepts) where 2.x fell back to the text format; the chain
    sets no ``fallback_scrape_protocol``, so the emulator must name the text format itself."""
    async def scrape(kind):
        server = EmulatedServer("p", kind, 0.1, 1, True, None, ready=True)
        listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
        port = listener.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /metrics HTTP/1.1\r\nHost: p\r\nAccept: text/plain;version=0.0.4\r\n\r\n")
        await writer.drain()
        answer = await reader.read()
        writer.close()
        listener.close()
        await listener.wait_closed()
        return answer.decode()
    for kind, name in (("dcgm", "DCGM_FI_DEV_GPU_UTIL"), ("vllm", "vllm:num_requests_waiting")):
        head, _, body = _run(scrape(kind)).partition("\r\n\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in head.splitlines()[1:])}
        media, *params = [part.strip() for part in headers["content-type"].split(";")]
        assert head.startswith("HTTP/1.1 200") and media == "text/plain" and "version=0.0.4" in params, head
        assert f"# TYPE {name} gauge" in body


def test_first_scale_up_and_capacity_are_read_from_the_load_increase():
    rate = lambda t: 3.0 if t < 10 else 15.0  # noqa: E731
    replicas = lambda t: 1 if t < 25 else 3  # noqa: E731
    ready = lambda t: 1 if t < 55 else 3  # noqa: E731
    side = read_side(rate, replicas, ready, 5.0, 80, [20.0, 35.0], lambda t: None)
    assert (side.first_scale_up_s, side.capacity_s) == (15, 45)
    assert side.replicas_at_syncs == [1, 3] and side.peak_replicas == 3


def test_the_gate_needs_both_times_within_a_sync_and_every_sync_equal():
    def agreement(real_first, sim_first, mismatched=()):
        return Agreement("s", "t", 15, Side(real_first, 60, [1], [None], 3), Side(sim_first, 60, [1], [None], 3),
                         [10.0], {}, 0, list(mismatched))
    assert agreement(30, 42).agrees
    assert not agreement(30, 46).agrees
    assert not agreement(30, None).agrees
    text = table([agreement(30, 42)])
    assert "30 s / 42 s" in text and "agree" in text


def test_replicas_one_sync_apart_agree_and_two_do_not():
    def agreement(real, sim):
        syncs = [15.0 * k for k in range(len(real))]
        return Agreement("s", "t", 15, Side(None, None, real, [None] * len(real), max(real)),
                         Side(None, None, sim, [None] * len(sim), max(sim)), syncs, {}, 0,
                         [{"t": t, "real": r, "sim": m} for t, r, m in zip(syncs, real, sim) if r != m])
    late = agreement([1, 1, 2, 6, 6], [1, 2, 6, 6, 6])   # the simulator decides each step one sync earlier
    assert late.agrees and len(late.mismatched_syncs) == 2
    early = agreement([1, 1, 1, 2, 6], [1, 2, 6, 6, 6])  # two syncs earlier: not within a sync period
    assert not early.agrees and [b["t"] for b in early.beyond_a_sync] == [15.0, 30.0]
    assert "3 of 5 equal, 5 within a sync" in table([late])
    # the same sync, a step of 4 where the real chain took 3 and then 5: on its path
    assert agreement([1, 4, 6, 6], [1, 5, 6, 6]).agrees
    assert not agreement([1, 4, 4, 4], [1, 5, 5, 5]).agrees


RECORDED = FIXTURES_DIR / "real-loop"


def test_a_recorded_real_run_agrees_only_with_each_pods_own_scrape_offset():
    """A run of gpu-util-step recorded from the real chain (docs/real-loop.md): the second replica's target was
    scraped 6 s before the first's; with one offset for every pod the simulator reads its first sample a sync late
    and asks for 4 replicas one sync after the real HPA did."""
    agreement = recompare(SCENARIOS["gpu-util-step"], RECORDED / "gpu-util-step")
    # the scrapes came at .42, .88, .76 and .31 of their seconds, none on a collection's second: each is the
    # simulator's second it began in (agreement._second), before the syncs later in those seconds
    assert agreement.phases["pod_scrapes"] == [13, 7, 6, 2]
    assert agreement.agrees and agreement.mismatched_syncs == []
    assert (agreement.real.first_scale_up_s, agreement.real.capacity_s) == (43, 118)
    assert [m["t"] for m in agreement.one_phase_mismatched] == [132.5]
    assert agreement.one_phase.capacity_s == 133


def test_the_command_names_what_it_allows():
    assert main(["nope"]) == 2
    assert main(["--recorded", str(RECORDED / "none")]) == 2
    assert main(["gpu-util-step", "--recorded", str(RECORDED)]) == 0


def test_an_emulated_servers_queue_runs_on_the_arrival_stamps_not_on_when_it_got_the_requests():
    server = EmulatedServer("p", "vllm", 1.0, 1, True, None, ready=True)
    base = time.time() - 100  # the requests arrive late: the queue is what their stamps say
    for k in range(3):
        server.admit(base + 0.1 * k)
    assert (server.running(base + 0.5), server.waiting(base + 0.5)) == (1, 2)
    assert (server.running(base + 2.5), server.waiting(base + 2.5)) == (1, 0)
    assert server.busy_fraction(base + 1, base + 3) == 1.0
    assert server.busy_fraction(base + 3, base + 4) == 0.0


def test_karpenter_is_given_the_pools_node_shape_and_room_above_its_standing_nodes():
    from gpuplatform.components.placement import gpu_pool_groups
    from gpuplatform.realloop.chain import karpenter_objects

    cfg, s, _ = load_scenario(SCENARIOS["nodes-scale-up"])
    group = gpu_pool_groups(cfg)[0]
    types, node_class, pool = karpenter_objects(group, "t4-node", s.max_nodes - s.min_nodes, s.gpus_per_node, 60,
                                                s.node_scaler.unneeded_s)
    assert types[0]["resources"]["nvidia.com/gpu"] == "1" and types[0]["name"] == "t4-node"
    # the provider reserves 100m and 10Mi of every instance type: added back, the node offers the pool's allocatable
    assert types[0]["resources"]["cpu"] == "1000100m" and types[0]["resources"]["memory"] == "1048586Mi"
    assert node_class["spec"]["nodeRegistrationDelay"] == "60s"
    spec = pool["spec"]
    assert spec["limits"] == {"nvidia.com/gpu": "3"}  # minNodes 1 stand outside the NodePool, maxNodes 4
    assert spec["template"]["metadata"]["labels"] == {"gpuplatform.io/pool": "t4",
                                                       "run.ai/simulated-gpu-node-pool": "t4"}
    assert {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]} in spec["template"]["spec"][
        "requirements"]
    assert spec["template"]["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "present",
                                                    "effect": "NoSchedule"}]
    assert spec["disruption"] == {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "600s"}


def test_node_counts_a_sync_and_a_scan_apart_agree_and_further_do_not():
    def agreement(real_nodes, sim_nodes):
        real = Side(None, None, [], [], 1, nodes=real_nodes, nodes_ready=real_nodes)
        sim = Side(None, None, [], [], 1, nodes=sim_nodes, nodes_ready=sim_nodes)
        return Agreement("s", "t", 15, real, sim, [], {}, 0, scan_s=10)
    real = [1] * 30 + [3] * 30
    assert agreement(real, [1] * 38 + [3] * 22).agrees  # the simulator's scan came 8 s after Karpenter's batch
    # a node after a later HPA decision: a sync (15 s) and a scan (10 s) after Karpenter's at most
    assert agreement(real, [1] * 55 + [3] * 5).agrees
    late = agreement(real, [1] * 56 + [3] * 4)
    assert not late.agrees and late.nodes_beyond_a_scan[0] == {"t": 55, "what": "nodes", "real": 3, "sim": 1}
    assert "peak 3 / 3" in table([late]) and "fixed" in table([Agreement(
        "s", "t", 15, Side(None, None, [], [], 1), Side(None, None, [], [], 1), [], {}, 0)])


def test_the_first_node_request_and_ready_are_read_from_the_load_increase():
    rate = lambda t: 3.0 if t < 10 else 15.0  # noqa: E731
    nodes = lambda t: 1 if t < 22 else 3  # noqa: E731
    ready = lambda t: 1 if t < 83 else 3  # noqa: E731
    side = read_side(rate, lambda t: 1, lambda t: 1, 5.0, 100, [], lambda t: None, nodes, ready)
    assert (side.first_node_s, side.node_ready_s) == (12, 73)
    assert side.nodes[:23][-1] == 3 and len(side.nodes) == 101


def test_a_pool_run_takes_each_workloads_phases_and_the_harness_provisioning():
    from gpuplatform.simulate.engine import Phases
    from gpuplatform.simulate.pool import simulate_pool

    scenario = SCENARIOS["two-workloads-placeholders"]
    cfg, _s, _ = load_scenario(scenario)
    traces = {n: scenario.for_workload(n).trace() for n in scenario.workloads}
    seen = []
    result = simulate_pool(cfg, "t", traces, phases={"burst-a": Phases(14, 3, 12)}, provision_s=60,
                           on_second=lambda t, pool: seen.append((t, len(pool.nodes), pool.ready_count(t))))
    assert len(seen) == scenario.duration_s + 1 and seen[0][1:] == (3, 3)  # two replicas and the placeholder
    added = next(t for t, n, _ in seen if n > 3)
    assert next(t for t, _, r in seen if r > 3) == added + 60  # provisioned in the harness's 60 s, not 180 s
    assert result.preempted >= 1


def test_tune_on_the_two_workload_scenario_compares_placeholders_with_min_replicas_at_the_same_slo():
    from gpuplatform.realloop.run import pool_tuning, tuning_text

    scenario = SCENARIOS["two-workloads-placeholders"]
    tuned = pool_tuning(scenario)
    by = {(tuple(s["minReplicas"].values()), s["placeholders"]): r for s, r in tuned.tried}
    # the placeholder halves the time to capacity of each burst (no node to wait for) ...
    assert [w.capacity_ready_s for w in by[((1, 1), 1)].workloads] == [73.0, 73.0]
    assert [w.capacity_ready_s for w in by[((1, 1), 0)].workloads] == [135.0, 135.0]
    # ... but the replica's own start still leaves a bad minute per burst, so only minReplicas 2 keeps the SLO
    assert not by[((1, 1), 1)].within_budget and by[((2, 2), 0)].within_budget
    assert tuned.placeholders_win is False
    assert "placeholders beat minReplicas at the same SLO: no" in tuning_text(scenario, tuned)


def test_a_recorded_karpenter_run_agrees_with_the_simulators_node_model_within_a_scan():
    """A run of nodes-scale-up recorded from the real chain (Karpenter v1.14.1 with its kwok provider, a 60 s node
    registration): Karpenter asked for each node 1 to 2 s after the HPA's scale-up (its batch of the pods the
    scheduler marked unschedulable), the simulator at its next 10 s scan."""
    scenario = SCENARIOS["nodes-scale-up"]
    agreement = recompare(scenario, RECORDED / "nodes-scale-up")
    assert agreement.agrees and not agreement.nodes_beyond_a_scan
    assert (agreement.real.first_node_s, agreement.sim.first_node_s) == (29, 35)
    assert (agreement.real.node_ready_s, agreement.sim.node_ready_s) == (90, 95)
    assert max(agreement.real.nodes) == max(agreement.sim.nodes) == 4
    # the same record against a simulator provisioning in the catalog's 180 s: the nodes come two minutes late
    slow = recompare(replace(scenario, node_provision_s=180), RECORDED / "nodes-scale-up")
    assert not slow.nodes_agree and not slow.agrees


def test_a_scrape_is_the_simulators_second_it_began_in_unless_a_collection_came_then():
    from gpuplatform.realloop.agreement import _second

    assert _second(192.2, (15, 14)) == 192  # before a sync at 192.66, which the simulator runs at 193
    assert _second(179.2, (15, 14)) == 180  # it read the collection of 179.0: the simulator's scrape at 180 does
    assert _second(192.2, None) == 193      # a gauge read at the scrape: rounded up as every real instant


def test_a_recorded_two_workload_run_agrees_per_workload_and_on_the_pools_nodes():
    """A run of two-workloads-placeholders recorded from the real chain: each burst's new replica preempted the
    placeholder (the real scheduler) and served 59 s after its load rose, and Karpenter added a node for the
    evicted placeholder each time."""
    scenario = SCENARIOS["two-workloads-placeholders"]
    a, b = recompare(scenario, RECORDED / "two-workloads-placeholders")
    assert a.scenario.endswith("burst-a") and b.scenario.endswith("burst-b")
    assert a.agrees and b.agrees
    assert (a.real.capacity_s, a.sim.capacity_s, b.real.capacity_s, b.sim.capacity_s) == (59, 59, 59, 59)
    assert max(a.real.nodes) == max(a.sim.nodes) == 5
    assert "two-workloads-placeholders/burst-b" in table([a, b])


def test_a_placeholders_shortcut_is_measured_from_the_scale_up_not_from_the_load():
    """The recorded run scaled up 28 s after its burst. A run whose loop phase puts the scale-up a sync later (43 s,
    capacity 73 s, seen on the real chain) still shows the shortcut: a replica waiting for a node would serve at
    43 + 60 s at the earliest. A replica that waited for the node added at 104 s does not."""
    scenario = SCENARIOS["two-workloads-placeholders"]
    a, _ = recompare(scenario, RECORDED / "two-workloads-placeholders")
    assert placeholder_shortcut_problems(a.real, scenario.node_provision_s) == []
    late_phase = replace(a.real, first_scale_up_s=43, capacity_s=73, node_ready_s=104)
    assert placeholder_shortcut_problems(late_phase, scenario.node_provision_s) == []
    waited = replace(late_phase, capacity_s=134)
    problems = placeholder_shortcut_problems(waited, scenario.node_provision_s)
    assert len(problems) == 2 and "scale-up 43 s + 60 s" in problems[0] and "ready (104 s)" in problems[1]
    no_node = replace(late_phase, nodes=[3] * len(late_phase.nodes))
    assert placeholder_shortcut_problems(no_node, scenario.node_provision_s) == [
        "no node was added for the evicted placeholder"]
    never = replace(late_phase, capacity_s=None)
    assert "no scale-up reached capacity" in placeholder_shortcut_problems(never, 60)[0]


def test_node_removals_are_read_from_the_loads_fall():
    rate = lambda t: 15.0 if t < 30 else 3.0  # noqa: E731
    nodes = lambda t: 3 if t < 185 else 2 if t < 215 else 1  # noqa: E731
    side = read_side(rate, lambda t: 3 if t < 102 else 1, lambda t: 3, 5.0, 240, [], lambda t: None, nodes, nodes)
    assert (side.load_fall_s, side.first_node_removed_s, side.last_node_removed_s) == (30, 155, 185)
    assert side.first_node_s is None  # no load increase: no node asked for


def test_a_node_removal_may_come_karpenters_validation_later_on_the_real_chain_and_no_more():
    """Karpenter validates an empty node's removal 15 s after it decided it (KARPENTER_EMPTINESS_VALIDATION_S): the
    real chain's removals may come that much later than a sync and a scan after the simulator's, not earlier."""
    def agreement(real_at, sim_at):
        def side(first, last):
            nodes = [3 if t < first else 2 if t < last else 1 for t in range(241)]
            return Side(None, None, [], [], 3, nodes=nodes, nodes_ready=nodes, load_fall_s=30,
                        first_node_removed_s=first - 30, last_node_removed_s=last - 30)
        return Agreement("s", "t", 15, side(*real_at), side(*sim_at), [], {}, 0, scan_s=10)
    assert KARPENTER_EMPTINESS_VALIDATION_S == 15
    assert agreement((185, 215), (170, 200)).agrees  # the run's figures: Karpenter 15 s after the simulator
    assert agreement((210, 240), (170, 200)).agrees  # a sync, a scan and the validation: 40 s
    late = agreement((211, 240), (170, 200))
    assert not late.removals_agree and not late.agrees
    assert late.nodes_beyond_a_scan[0] == {"t": 170, "what": "nodes", "real": 3, "sim": 2}
    # the simulator removing later than the real chain gets no such allowance: a sync and a scan only
    assert agreement((170, 200), (195, 225)).agrees
    early = agreement((170, 200), (196, 226))
    assert not early.removals_agree and not early.agrees
    # a node removed on one side only
    assert not agreement((170, 200), (400, 400)).agrees
    assert "removed first / last 155 s / 140 s, 185 s / 170 s" in table([agreement((185, 215), (170, 200))])


def test_a_scale_down_from_standing_nodes_is_held_to_a_sync_not_a_sync_and_a_scan():
    nodes = [3] * 100 + [2] * 141
    real = Side(None, None, [], [], 3, 60.0, 90.0, nodes=nodes, nodes_ready=nodes)
    sim = Side(None, None, [], [], 3, 76.0, 90.0, nodes=nodes, nodes_ready=nodes)
    a = Agreement("s", "t", 15, real, sim, [], {}, 0, scan_s=10)
    assert not a.nodes_added and a.times_bound_s == 15 and not a.times_agree
    added = Side(None, None, [], [], 3, 60.0, 90.0, nodes=[1] * 50 + nodes[50:], nodes_ready=nodes)
    assert Agreement("s", "t", 15, added, sim, [], {}, 0, scan_s=10).times_bound_s == 25


def test_karpenter_removes_an_empty_node_after_the_unneeded_time_the_stack_states():
    """nodes-scale-down states a 1 min scale-down unneeded time (cluster.nodeAutoscaling): the simulator's node
    model and Karpenter's consolidateAfter read the same figure; at minNodes 0 every node is Karpenter's."""
    from gpuplatform.components.placement import gpu_pool_groups
    from gpuplatform.realloop.chain import karpenter_objects

    cfg, s, _ = load_scenario(SCENARIOS["nodes-scale-down"])
    assert (s.node_scaler.unneeded_s, s.node_scaler.scan_s, s.min_nodes, s.max_nodes) == (60, 10, 0, 4)
    _types, _class, pool = karpenter_objects(gpu_pool_groups(cfg)[0], "t4-node", s.max_nodes - s.min_nodes,
                                             s.gpus_per_node, 60, s.node_scaler.unneeded_s)
    assert pool["spec"]["disruption"] == {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "60s"}
    assert pool["spec"]["limits"] == {"nvidia.com/gpu": "4"}


def test_a_recorded_node_scale_down_agrees_and_reads_the_stacks_unneeded_time(tmp_path):
    """A run of nodes-scale-down recorded from the real chain (Karpenter v1.14.1, consolidateAfter 60 s): the HPA
    removed a replica 73 and 103 s after the load fell; Karpenter deleted each emptied node's NodeClaim 79 and 74 s
    after its pod went (its last pod event, then its 10 s poll, then its 15 s validation), the simulator's
    cluster-autoscaler 67 and 67 s after (its next scan, then the 60 s unneeded time)."""
    scenario = SCENARIOS["nodes-scale-down"]
    agreement = recompare(scenario, RECORDED / "nodes-scale-down")
    assert agreement.agrees and not agreement.mismatched_syncs and not agreement.nodes_added
    assert (agreement.real.first_scale_down_s, agreement.sim.first_scale_down_s) == (73, 73)
    assert (agreement.real.first_node_removed_s, agreement.sim.first_node_removed_s) == (153, 140)
    assert (agreement.real.last_node_removed_s, agreement.sim.last_node_removed_s) == (177, 170)
    assert agreement.real.nodes[0] == agreement.sim.nodes[0] == 3 and agreement.real.nodes[-1] == 1
    # the same record against a simulator whose cluster states a 2 min unneeded time: its nodes go a minute after
    # Karpenter's, beyond a sync and a scan
    stack = yaml.safe_load(scenario.config.read_text())
    stack["config"]["gpu-platform:cluster"]["nodeAutoscaling"]["scaleDownUnneededTime"] = "2m"
    slower = tmp_path / "Pulumi.nodes-scale-down.yaml"
    slower.write_text(yaml.safe_dump(stack))
    late = recompare(replace(scenario, config=slower), RECORDED / "nodes-scale-down")
    assert late.sim.first_node_removed_s == 200 and not late.removals_agree and not late.agrees


def test_a_recorded_keda_run_wakes_from_zero_and_goes_back_as_simulate_does():
    """A run of keda-from-zero recorded from the real chain (KEDA v2.20.2's operator and metrics API server, the
    package's ScaledObject): KEDA woke the workload at its first poll after the ingress's counter rose, the HPA it
    owns asked for the second replica at its next sync, and KEDA put it back to zero at the first poll more than the
    40 s cooldown after its triggers were last active; the simulator, on the loop phases the real chain had, at the
    same seconds and with the same replicas at every poll and sync."""
    scenario = SCENARIOS["keda-from-zero"]
    agreement = recompare(scenario, RECORDED / "keda-from-zero")
    assert agreement.agrees and agreement.mismatched_syncs == []
    real, sim = agreement.real, agreement.sim
    assert (real.activation_s, sim.activation_s) == (27, 27)
    assert (real.first_scale_up_s, sim.first_scale_up_s) == (42, 42)
    assert (real.capacity_s, sim.capacity_s) == (73, 72)
    assert (real.to_zero_s, sim.to_zero_s) == (72, 72)
    # the polls come every 15 s to the millisecond, the HPA's syncs drift away from them (15.03 to 15.06 s)
    assert len(agreement.polls) == 18 and len(agreement.syncs) == 11
    assert agreement.phases["poll"] == agreement.phases["sync"] == 12
    assert real.replicas_at_polls == sim.replicas_at_polls == [0, 0, 0, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0]
    assert "from zero real / sim" in table([agreement]) and "27 s / 27 s" in table([agreement])


def test_keda_polls_are_told_apart_from_its_hpas_syncs_by_their_exact_period():
    from gpuplatform.realloop.chain import keda_polls_and_syncs

    polls = [11.53 + 15 * k + 0.001 * k for k in range(12)]
    syncs = [56.64 + 15.05 * k for k in range(8)]   # the first a tenth of a second after a poll
    found_polls, found_syncs = keda_polls_and_syncs(sorted(polls + syncs), 15)
    assert found_polls == polls and found_syncs == syncs
    assert keda_polls_and_syncs([], 15) == ([], [])


def test_from_zero_the_wake_the_hpas_first_scale_up_and_the_return_to_zero_are_read():
    rate = lambda t: 6.0 if 30 <= t < 150 else 0.0  # noqa: E731
    replicas = lambda t: 0 if t < 57 or t >= 222 else (1 if t < 72 else 2)  # noqa: E731
    ready = lambda t: 0 if t < 87 or t >= 222 else (1 if t < 102 else 2)  # noqa: E731
    side = read_side(rate, replicas, ready, 5.0, 270, [72.0], lambda t: None, polls=[56.5, 221.5])
    assert (side.activation_s, side.first_scale_up_s, side.capacity_s, side.to_zero_s) == (27, 42, 72, 72)
    assert side.replicas_at_polls == [1, 0]
    scenario = SCENARIOS["keda-from-zero"]
    _, s, _ = load_scenario(scenario)
    assert scenario.from_zero and scenario.initial_replicas(s) == 0
    assert not SCENARIOS["gpu-util-step"].from_zero


def test_the_emulated_ingress_counts_every_arrival_up_to_the_instant_asked():
    from types import SimpleNamespace

    from gpuplatform.realloop.emulator import Agent

    agent = SimpleNamespace(spec={"start": time.time() - 10.05, "arrivals": [1.0, 5.0, 10.0, 10.1, 20.0],
                                  "ingress": {"series": [{"ingress": "echo-gpu", "host": "echo.gpu.internal",
                                                          "status": "200", "namespace": "inference"}]}})
    text = Agent.ingress_text(agent)
    assert ('nginx_ingress_controller_requests{host="echo.gpu.internal",ingress="echo-gpu",namespace="inference",'
            'status="200"} 3') in text
