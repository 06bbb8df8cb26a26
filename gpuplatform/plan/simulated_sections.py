"""The report sections that run the simulator (gpuplatform/simulate/): metric latency with the simulated step
response, the first scale-up sweep and the wake-up from zero, and the SLO verdicts on the built-in traces.
Workloads that differ only in names, images and exposure share one simulation (the caches below)."""
import math
from typing import Optional

from gpuplatform.catalogs.metrics import METRICS, is_windowed
from gpuplatform.components.config import PlatformConfig, duration_seconds
from gpuplatform.components.errors import ConfigError
from gpuplatform.components.metric_sources import source_for
from gpuplatform.plan.sections import _secs
from gpuplatform.report import table as _table


def latency_rows(cfg: PlatformConfig, sweep: bool = True) -> list[dict]:
    """Worst case from a change on the GPU (or in the server) to the HPA acting on it: the exporter's next
    collection, the next scrape, a full rule window for windowed queries, and the next HPA sync. The adapter
    queries Prometheus on every HPA request, so its relist interval only delays *new* metric names. Each row's
    ``stepResponse`` holds the simulated step, and the sweep unless ``sweep`` is False."""
    iv = cfg.monitoring.intervals
    rows = []
    for w in cfg.workloads:
        for t in w.autoscaling.metrics:
            src, metric = source_for(cfg, w, t.metric), METRICS[t.metric]
            collect = duration_seconds(iv.exporter_collect) if metric.category == "gpu" else 0
            scrape = duration_seconds(iv.scrape)
            window = duration_seconds(iv.rule_window) if is_windowed(src) else 0
            poll = duration_seconds(iv.hpa_sync) if w.autoscaling.autoscaler == "hpa" else scrape
            rows.append({"workload": w.name, "metric": t.metric, "apiName": src.api_name,
                         "autoscaler": w.autoscaling.autoscaler, "collect": collect, "scrape": scrape,
                         "window": window, "poll": poll, "worstCaseSeconds": collect + scrape + window + poll,
                         "stepResponse": step_response(cfg, w, sweep)})
    return rows


_STEP_RESPONSES: dict[str, dict] = {}


STARTUP_FIELDS = ("model", "pre_pull", "server", "args", "command", "env", "volumes")
"""Workload fields a replica's start-up depends on (the weights' source and size, the load format on the server's
command line, pre-pulled images): workloads that differ in them do not share a simulation."""


def step_response(cfg: PlatformConfig, w, sweep: bool = True) -> dict:
    """``gpuplatform simulate --trace step`` for the workload: seconds from the load step to the first scale-up
    decision and until ready replicas cover the new load, and with ``sweep`` the first scale-up over every loop
    alignment (None without). Workloads that differ only in names, images and exposure share one simulation."""
    from gpuplatform.simulate.report import resolve_trace
    from gpuplatform.simulate.engine import simulate

    pool = cfg.pool(w.node_pool)
    key = "|".join((w.model_dump_json(include={"node_pool", "gpu", "probes", "autoscaling", "service_model",
                                               *STARTUP_FIELDS}),
                    pool.model_dump_json() if pool else "", cfg.monitoring.model_dump_json(),
                    cfg.cluster.model_dump_json(), cfg.settings.namespace, str(sweep)))
    if key not in _STEP_RESPONSES:
        from gpuplatform.simulate.report import never_reasons
        from gpuplatform.simulate.sweep import cached_sweep

        try:
            result = simulate(cfg, "", w.name, resolve_trace(cfg, w.name, "step", None))
        except ConfigError as e:
            # a metric the service model cannot produce, or a serviceModel that never reaches the target: the plan
            # says so and goes on (serviceModel is for simulation only; `gpuplatform simulate` reports it as an error)
            _STEP_RESPONSES[key] = {"trace": "step", "notSimulated": "; ".join(i.message for i in e.issues)}
            return _STEP_RESPONSES[key]
        _STEP_RESPONSES[key] = {"trace": "step", "firstScaleUpSeconds": result.first_scale_up_s,
                                "capacityReadySeconds": result.capacity_ready_s,
                                "capacityPath": result.tally.capacity_path,
                                "neverReasons": never_reasons(result),
                                "sweep": cached_sweep(cfg, w.name) if sweep else None}
    return _STEP_RESPONSES[key]


SLO_TRACES = ("step", "spike", "diurnal")
"""The built-in traces plan judges an SLO on, at their default lengths (20 min, 30 min, 2 h): a few seconds per
workload in all. ``gpuplatform simulate --trace diurnal --duration 24h`` judges a whole day."""


_SLO_VERDICTS: dict[str, dict] = {}


def slo_rows(cfg: PlatformConfig) -> list[dict]:
    """Per workload with an ``slo``: its objectives, the HPA targets stated for it, and the verdict of a simulated
    run on each built-in trace. Workloads that differ only in names, images and exposure share the runs."""
    from gpuplatform.simulate.engine import simulate
    from gpuplatform.simulate.report import resolve_trace

    rows = []
    for w in cfg.workloads:
        if w.slo is None:
            continue
        pool = cfg.pool(w.node_pool)
        key = "|".join((w.model_dump_json(include={"node_pool", "gpu", "probes", "autoscaling", "service_model",
                                                   "slo", *STARTUP_FIELDS}),
                        pool.model_dump_json() if pool else "", cfg.monitoring.model_dump_json(),
                        cfg.cluster.model_dump_json(), cfg.settings.namespace))
        if key not in _SLO_VERDICTS:
            verdicts = {}
            for trace in SLO_TRACES:
                try:
                    r = simulate(cfg, "", w.name, resolve_trace(cfg, w.name, trace, None))
                except ConfigError as e:
                    verdicts[trace] = {"notSimulated": "; ".join(i.message for i in e.issues)}
                    continue
                bound = r.bound.ready_replica_s
                verdicts[trace] = {**r.slo.to_json(), "readyReplicaHours": round(r.tally.ready_replica_s / 3600, 3),
                                   "lowerBoundReadyReplicaHours": round(bound / 3600, 3)}
            _SLO_VERDICTS[key] = verdicts
        targets = [{"metric": t.metric, "target": t.target, "basis": "derived" if t.derived else "stated"}
                   for t in w.autoscaling.metrics]
        rows.append({"workload": w.name,
                     "objectives": [{"metric": o.metric, "below": o.below} for o in w.slo.objectives],
                     "compliance": w.slo.compliance, "window": w.slo.window, "targets": targets,
                     "verdicts": _SLO_VERDICTS[key]})
    return rows


SLO_TITLE = ("SLOs (objectives, the HPA's targets, stated or derived from the SLO, simulated verdicts on the "
             "built-in traces: bad minutes / minutes, ready replica-hours / lower bound at the SLO)")


def slo_text(rows: list[dict]) -> str:
    if not rows:
        return "(no workload states an slo)"
    table = [["WORKLOAD", "SLO", "HPA TARGET", *(t.upper() for t in SLO_TRACES)]]
    for r in rows:
        objectives = " and ".join(f"{o['metric']} < {o['below']:g}" for o in r["objectives"])
        cells = []
        for trace in SLO_TRACES:
            v = r["verdicts"][trace]
            cells.append("not simulated" if "notSimulated" in v else
                         f"{'met' if v['met'] else 'NOT met'} ({v['badMinutes']}/{v['minutes']} min, "
                         f"{v['readyReplicaHours']:g}/{v['lowerBoundReadyReplicaHours']:g} h)")
        table.append([r["workload"], f"{objectives} in {r['compliance']:g}% of minutes over {r['window']}",
                      ", ".join(f"{t['metric']} {t['target']:g} ({t['basis']})" for t in r["targets"])
                      or "-", *cells])
    return _table(table) + _allowance_note(rows)


def _allowance_note(rows: list[dict]) -> str:
    """How many bad minutes each trace allows at each compliance stated: a 20-minute trace judged at 99 % allows
    none, so one bad minute is a NOT met there that a day of the same behaviour would pass."""
    lengths = {}
    for r in rows:
        for trace in SLO_TRACES:
            if "minutes" in r["verdicts"][trace]:
                lengths.setdefault(trace, r["verdicts"][trace]["minutes"])
    if not lengths:
        return ""
    notes = []
    for compliance in sorted({r["compliance"] for r in rows}):
        budget = 1 - compliance / 100
        per = ", ".join(f"{trace} ({n} min) {math.floor(n * budget + 1e-9)}" for trace, n in lengths.items())
        notes.append(f"at {compliance:g}%: {per}; a day (1440 min) {math.floor(1440 * budget + 1e-9)}")
    return ("\nBad minutes a trace allows " + "; ".join(notes) + " (gpuplatform simulate --trace diurnal --duration "
            "24h judges a whole day)")


LATENCY_TITLE = "Metric latency (change on the GPU -> HPA sees it; simulated step: gpuplatform simulate --trace step)"


def latency_text(rows: list[dict]) -> str:
    if not rows:
        return "(no autoscaled workloads)"
    table = [["WORKLOAD", "METRIC", "API NAME", "COLLECT", "SCRAPE", "WINDOW", "POLL", "WORST CASE",
              "SIMULATED STEP: SCALE-UP / READY", "FIRST SCALE-UP OVER PHASES AND STEPS: WORST / MEDIAN",
              "WAKE-UP FROM ZERO: FIRST READY WORST / MEDIAN, REQUESTS FAILED / WAITED WORST"]]
    for r in rows:
        step = r["stepResponse"]
        if "notSimulated" in step:
            table.append([r["workload"], r["metric"], r["apiName"], f"{r['collect']}s", f"{r['scrape']}s",
                          f"{r['window']}s", f"{r['poll']}s ({r['autoscaler']})", f"{r['worstCaseSeconds']}s",
                          "not simulated (gpuplatform simulate says why)", "-", "-"])
            continue
        sweep = step["sweep"]
        table.append([r["workload"], r["metric"], r["apiName"], f"{r['collect']}s", f"{r['scrape']}s",
                      f"{r['window']}s", f"{r['poll']}s ({r['autoscaler']})", f"{r['worstCaseSeconds']}s",
                      f"{_secs(step['firstScaleUpSeconds'])} / {_secs(step['capacityReadySeconds'])}",
                      *((sweep_cell(sweep), wake_cell(sweep.get("wakeUp"))) if sweep is not None
                        else ("not swept (--no-sweep)", "-"))])
    notes = [f"  {r['workload']}: {n}" for r in rows for n in _never_notes(r["stepResponse"])]
    from gpuplatform.simulate.startup import path_text
    notes += [f"  {r['workload']}: time to ready capacity {path_text(r['stepResponse']['capacityPath'])}"
              for r in rows if r["stepResponse"].get("capacityPath")]
    return _table(table) + ("\n" + "\n".join(dict.fromkeys(notes)) if notes else "")


def sweep_cell(sweep: dict) -> str:
    """The sweep's worst and median; the tolerance edge its steps start from, and the worst closer to it."""
    edge = sweep.get("toleranceEdge") or {}
    if not sweep["runs"]:
        return f"never ({edge['below']})" if edge.get("below") else "no step outgrows the running replicas"
    text = f"{_secs(sweep['worstSeconds'])} / {_secs(sweep['medianSeconds'])} ({sweep['runs']} runs"
    if edge.get("step"):
        closest = min(edge["ladder"], key=float, default=None)
        text += (f"; steps from {edge['step'] * (1 + edge['resolution']):.6g}x, the HPA's tolerance edge "
                 f"{edge['step']:.6g}x + {edge['resolution']:g}" +
                 (f"; +{closest}: {_secs(edge['ladder'][closest])}" if closest else ""))
    return text + ")"


def wake_cell(wake: Optional[dict]) -> str:
    """Per starting point of the pool: first ready replica worst / median, requests failed (503 while no replica is
    ready) and waited (behind a wake short of capacity), worst."""
    if not wake:
        return "-"
    parts = []
    for c in wake["cases"]:
        failed = c["failedRequests"]["worst"]
        waited = (c.get("waitedRequests") or {}).get("worst")
        parts.append(f"{_secs(c['readySeconds']['worst'])} / {_secs(c['readySeconds']['median'])}, "
                     f"{'-' if failed is None else f'{failed:g}'} failed / "
                     f"{'-' if waited is None else f'{waited:g}'} waited ({c['nodes']})")
    return "; ".join(parts)


def _never_notes(step: dict) -> list[str]:
    """Every "never" of a row with its reason."""
    sweep = step.get("sweep") or {}
    notes = [f"never: {why}" for why in (step.get("neverReasons") or {}).values()]
    if sweep.get("neverReason"):
        notes.append(f"sweep never: {sweep['neverReason']}")
    for c in (sweep.get("wakeUp") or {}).get("cases", []):
        if c.get("neverReason"):
            notes.append(f"wake-up never ({c['nodes']}): {c['neverReason']}")
    return notes
