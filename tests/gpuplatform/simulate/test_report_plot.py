"""``simulate --plot``: the figure's structure (matplotlib objects, not pixels) and the series it draws."""
import json

import matplotlib
import pytest
from support import REPO, cli

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from gpuplatform.catalogs.metrics import METRICS  # noqa: E402
from gpuplatform.components.stack_config import load_stack_file  # noqa: E402
from gpuplatform.simulate.engine import simulate  # noqa: E402
from gpuplatform.simulate.report import OFF_SCALE, figure, metric_top, over_intervals, resolve_trace  # noqa: E402
from gpuplatform.simulate.traces import from_csv  # noqa: E402


def run(stack: str, workload: str, trace: str, slo=None, duration=None):
    cfg = load_stack_file(REPO / "stacks" / f"Pulumi.{stack}.yaml")
    return simulate(cfg, stack, workload, resolve_trace(cfg, workload, trace, duration), slo_target=slo)


@pytest.fixture(scope="module")
def dev_spike():
    """dev's bert-intent-detection: gpu_sm_util (percent) on an HPA; the spike takes it over target."""
    result = run("dev", "bert-intent-detection", "spike", duration="15m")
    fig = figure(result)
    yield result, fig
    plt.close(fig)


@pytest.fixture(scope="module")
def prod_step_slo():
    """prod's flower: Triton's queue time (us), judged against an SLO above the target."""
    result = run("prod", "flower", "step", slo=5000.0)
    fig = figure(result)
    yield result, fig
    plt.close(fig)


def panels(fig):
    load, metric, replicas, nodes = fig.axes
    return load, metric, replicas, nodes


def hlines(ax) -> list[float]:
    return sorted(line.get_ydata()[0] for line in ax.get_lines()
                  if len(set(line.get_ydata())) == 1 and list(line.get_xdata()) == [0, 1])


def over_spans(ax) -> list[tuple[float, float]]:
    return [(p.get_x(), p.get_x() + p.get_width()) for p in ax.patches if p.get_gid() == "over-target"]


def labelled(ax, start: str):
    found = [line for line in ax.get_lines() if line.get_label().startswith(start)]
    assert len(found) == 1, [line.get_label() for line in ax.get_lines()]
    return found[0]


def test_over_intervals_are_the_runs_of_seconds_over_target() -> None:
    assert over_intervals([0, 1, 1, 0, 0, 1]) == [(1, 3), (5, 6)]
    assert over_intervals([1, 1, 0]) == [(0, 2)]
    assert over_intervals([0, 0]) == [] and over_intervals([]) == []


def test_metric_axis_top_keeps_the_target_band_readable() -> None:
    assert metric_top(60.0, 22.0, 100.0) == pytest.approx(60 * 1.08)
    assert metric_top(100.0, 66.0, 100.0) == pytest.approx(105.0)  # a percentage never needs more room than 100 %
    assert metric_top(35000.0, 3850.0, None) == pytest.approx(OFF_SCALE * 3850)  # a queue's peak is cut off
    assert metric_top(1.0, 3850.0, None) == pytest.approx(3850 * 1.25)  # the over-target line stays inside


def test_four_panels_all_linear_from_zero(dev_spike) -> None:
    _, fig = dev_spike
    assert len(fig.axes) == 4
    for ax in fig.axes:
        assert ax.get_yscale() == "linear" and ax.get_ylim()[0] == 0, ax.get_ylabel()


def test_title_names_the_metric_as_the_stack_writes_it(dev_spike) -> None:
    result, fig = dev_spike
    title = fig._suptitle.get_text()
    assert "bert-intent-detection" in title and "gpu_sm_util target 20 %" in title
    assert result.api_name not in title  # the adapter's series is not what the user wrote
    assert panels(fig)[1].get_ylabel() == "gpu_sm_util (%)"


def test_target_and_tolerance_are_distinct_lines_on_the_percent_axis(dev_spike) -> None:
    result, fig = dev_spike
    metric = panels(fig)[1]
    assert hlines(metric) == pytest.approx([result.target, result.target * 1.1])
    top = metric.get_ylim()[1]
    assert top <= 105 and top > max(result.tally.seconds.level)


def test_counts_are_steps_on_integer_axes(dev_spike) -> None:
    _, fig = dev_spike
    _, metric, replicas, nodes = panels(fig)
    for ax in (replicas, nodes):
        assert isinstance(ax.yaxis.get_major_locator(), MaxNLocator)
        assert ax.yaxis.get_major_locator()._integer
        for line in ax.get_lines():
            if line.get_label() not in ("maxReplicas", "pool's max nodes"):
                assert line.get_drawstyle() == "steps-post", line.get_label()
    assert labelled(metric, "value the HPA read").get_drawstyle() == "steps-post"
    assert labelled(panels(fig)[0], "demand").get_drawstyle() == "steps-post"


def test_the_per_second_metric_is_drawn_and_over_target_time_shaded(dev_spike) -> None:
    result, fig = dev_spike
    metric = panels(fig)[1]
    assert list(labelled(metric, "true value each second").get_ydata()) == list(result.tally.seconds.level)
    intervals = over_intervals(result.tally.seconds.over)
    assert intervals and result.over_target_s > 0
    for ax in fig.axes:  # on every panel, so replicas read against the breach
        spans = over_spans(ax)
        assert len(spans) == len(intervals)
        assert [(round(a * 60), round(b * 60)) for a, b in spans] == intervals
    assert sum(b - a for a, b in intervals) == result.over_target_s


def test_desired_is_what_the_hpa_status_shows_not_the_raw_recommendation() -> None:
    """prod's step: after the load settles the recommendation drops to 3, but the scale-down stabilization window
    keeps 7; ``kubectl get hpa`` shows 7 desired (horizontal.go passes the normalized count to setStatus)."""
    result = run("prod", "flower", "step")
    held = [e for e in result.timeline if e["recommendation"] < e["replicas"]]
    assert held and all(e["desired"] == e["replicas"] for e in held)
    assert any(e["recommendation"] == 3 and e["desired"] == 7 for e in held)
    fig = figure(result)
    desired = labelled(panels(fig)[2], "desired")
    assert list(desired.get_ydata()) == [e["desired"] for e in result.timeline]
    plt.close(fig)


def test_slo_line_and_off_scale_peak(prod_step_slo) -> None:
    result, fig = prod_step_slo
    metric = panels(fig)[1]
    assert "triton_queue_time_us target 3500 µs, SLO 5000 µs" in fig._suptitle.get_text()
    assert hlines(metric) == pytest.approx([3500, 3850, 5000, 5500])
    assert metric.get_ylim() == pytest.approx((0, OFF_SCALE * 5500))
    assert max(result.tally.seconds.level) > OFF_SCALE * 5500
    assert any(t.get_text().startswith("off scale above: peak") for t in metric.texts)
    assert METRICS["triton_queue_time_us"].unit == "us"


def test_zero_is_drawn_at_zero_and_no_reading_as_a_gap(tmp_path) -> None:
    """local's batch-embedder (KEDA, minReplicaCount 0): idle it reads 0, at zero replicas the HPA reads nothing."""
    cfg = load_stack_file(REPO / "stacks" / "Pulumi.local.yaml")
    path = tmp_path / "trace.csv"
    path.write_text("seconds,requests_per_second\n0,8\n600,0\n1500,14\n")
    result = simulate(cfg, "local", "batch-embedder", from_csv(str(path), 2100))
    fig = figure(result)
    read = list(labelled(panels(fig)[1], "value the HPA read").get_ydata())
    assert 0.0 in read and min(v for v in read if v == v) == 0.0
    assert any(v != v for v in read)  # NaN: no value while the workload is at zero
    assert 0 in list(labelled(panels(fig)[2], "replicas").get_ydata())
    plt.close(fig)


def test_slo_without_tune_judges_the_run_and_is_in_the_json() -> None:
    code, out, err = cli("simulate", "--stack", "prod", "--workload", "flower", "--trace", "spike", "--duration",
                         "10m", "--slo", "5000", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["sloTarget"] == 5000 and doc["target"] == 3500
    assert doc["above_target_s"] <= json.loads(cli("simulate", "--stack", "prod", "--workload", "flower", "--trace",
                                                       "spike", "--duration", "10m", "--format", "json")[1]
                                                   )["above_target_s"]
    code, out, err = cli("simulate", "--stack", "prod", "--workload", "flower", "--trace", "spike", "--slo", "0")
    assert code == 2 and "--slo" in err and "0 must be > 0" in err
