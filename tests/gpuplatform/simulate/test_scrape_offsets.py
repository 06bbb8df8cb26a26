"""Each pod's target scraped at its own offset (``Phases.pod_scrapes``), as Prometheus scrapes each target at an offset
hashed from its labels (prometheus/prometheus scrape/target.go, Target.offset); without offsets every target is
scraped at the one phase, as before."""
import math

from support import cfg_of

from gpuplatform.simulate import promql
from gpuplatform.simulate.cluster import NodePool, Pods
from gpuplatform.simulate.engine import Phases, Simulation, setup
from gpuplatform.simulate.scrape import Scraper
from gpuplatform.simulate.service import Queue, ServicePlan
from gpuplatform.simulate.traces import Trace

PLAN = ServicePlan("queue_time", 1.0, 10.0, 0.1, 0, 0, time_unit=1e6)


def _run(pod_phases: tuple, delete_at=None) -> promql.Storage:
    s = setup(cfg_of("local"), "batch-embedder")
    storage = promql.Storage()
    scraper = Scraper(storage, s.needed, PLAN, "inference", 10, 10, 0, 0, 1024.0, {"gpu_util": 100.0},
                      pod_phases=pod_phases)
    nodes = NodePool(2, 1, 1, 0, False, 1)
    pods = Pods("batch-embedder", 0, 0)
    pods.start_ready(2, nodes)
    served = Queue(PLAN).now(1.0, 2)
    for t in range(0, 41):
        if t == delete_at:
            pods.scale(1, float(t))
        scraper.scrape(pods, float(t), served)
        scraper.collect(pods, float(t), {"gpu_util": 50.0})
    return storage


def _times(storage: promql.Storage) -> dict:
    return {series.labels["pod"]: [t for t, v in zip(series.times, series.values) if not math.isnan(v)]
            for series in storage.select("DCGM_FI_DEV_GPU_UTIL")}


def test_each_pod_is_scraped_at_its_own_offset():
    times = _times(_run((0, 4)))
    assert times["batch-embedder-00001"] == [10.0, 20.0, 30.0, 40.0]
    assert times["batch-embedder-00002"] == [4.0, 14.0, 24.0, 34.0]


def test_without_offsets_every_pod_is_scraped_at_the_one_phase():
    times = _times(_run(()))
    assert times["batch-embedder-00001"] == times["batch-embedder-00002"] == [10.0, 20.0, 30.0, 40.0]


def test_a_deleted_pods_gpu_series_goes_stale_at_its_own_targets_next_scrape():
    storage = _run((4, 0), delete_at=25)  # the scale-in removes the first pod (equal rank: the first listed)
    gone = next(s for s in storage.select("DCGM_FI_DEV_GPU_UTIL") if s.labels["pod"] == "batch-embedder-00001")
    kept = next(s for s in storage.select("DCGM_FI_DEV_GPU_UTIL") if s.labels["pod"] == "batch-embedder-00002")
    # scraped at 4, 14 and 24; deleted at 25; its target's next scrape (34) finds it missing, not the other's (30)
    assert gone.times[-2:] == [24.0, 34.0] and math.isnan(gone.values[-1])
    assert not any(math.isnan(v) for v in kept.values)


def test_a_run_with_the_offsets_of_its_pods_reads_a_new_pods_sample_at_that_pods_offset():
    """A step that adds a replica: the new pod's first sample lands at its own offset."""
    cfg = cfg_of("local")
    s = setup(cfg, "echo-gpu")
    trace = Trace("step", (0.0, 60.0), (0.6 * s.plan.rps_at_target, 1.9 * s.plan.rps_at_target), 400)
    first = []
    for offset in (3, 11):
        sim = Simulation(s, trace, Phases(0, 5, 7, pod_scrapes=(5, offset))).run()
        series = {x.labels["pod"]: x.times for x in sim.storage.select("DCGM_FI_DEV_GPU_UTIL")}
        assert "echo-gpu-00002" in series, "the step never added a second replica"
        first.append(series["echo-gpu-00002"][0] % s.scrape_s)
        assert all(t % s.scrape_s == 5 for t in series["echo-gpu-00001"])
    assert first == [3, 11]
