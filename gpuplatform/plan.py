"""``gpuplatform plan``: synthesize a stack offline and show/write what ``pulumi up`` would register."""
import json
import math
import sys
from pathlib import Path
from typing import Any, Optional, TextIO

import yaml

from gpuplatform.authored import raise_for_refusals
from gpuplatform.catalogs.ack import PREREQUISITES, SYSTEM_POOL_NAME
from gpuplatform.catalogs.metrics import METRICS, is_windowed
from gpuplatform.catalogs.prices import CURRENCY, HOURS_PER_MONTH
from gpuplatform.components.errors import ConfigError, counted
from gpuplatform.components.config import SECRET_KEYS, PlatformConfig, duration_seconds
from gpuplatform.components.metric_sources import source_for
from gpuplatform.components.model_startup import load_estimate, startup_seconds, stated_startup_seconds
from gpuplatform.components.pools import all_pool_facts
from gpuplatform.components.validation import load
from gpuplatform.records import RegisteredResource
from gpuplatform.report import table as _table
from gpuplatform.synth import OFFLINE_SECRETS, stack_config_from_namespace, synthesize

SECRET_MASK = "[secret]"
YAML_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
"""libyaml's emitter when PyYAML has it (its wheels do): a 500-workload plan writes 4500 files, six times faster.
Long strings may fold at other places than with the pure-Python emitter; the documents are the same."""


def ordered(records: list[RegisteredResource]) -> list[tuple[int, RegisteredResource]]:
    """Depth-first tree order (children sorted by type, then name), so output is stable run to run. Children are
    found by their parent's URN: a logical name is unique only with its type and parent, and two components of
    one name (a GpuCluster and a WorkloadNamespace both called ``ml``) are two parents. A resource whose parent
    is not among ``records`` (the stack itself) is a root."""
    urns = {r.urn for r in records if r.urn}
    children: dict[Any, list[RegisteredResource]] = {}
    for r in records:
        children.setdefault(r.parent_urn if r.parent_urn in urns else None, []).append(r)
    out: list[tuple[int, RegisteredResource]] = []

    def walk(parent, depth):
        for r in sorted(children.get(parent, []), key=lambda x: (x.custom, x.type, x.name)):
            out.append((depth, r))
            if r.urn:
                walk(r.urn, depth + 1)

    walk(None, 0)
    return out


def tree_text(records: list[RegisteredResource]) -> str:
    """The resource tree as ``pulumi preview`` draws it: ``+`` for a create (an offline plan creates everything),
    children under their parent with ``├─``/``└─``."""
    rows = ordered(records)
    lines = []
    for i, (depth, r) in enumerate(rows):
        guides = ""
        for level in range(depth):
            last = _last_at(rows, i, level + 1)
            if level == depth - 1:
                guides += "└─ " if last else "├─ "
            else:
                guides += "   " if last else "│  "
        flags = " [protect]" if r.protect else ""
        lines.append(f"+ {guides}{r.name}  ({r.type}){flags}")
    return "\n".join(lines)


def _last_at(rows: list[tuple[int, RegisteredResource]], i: int, depth: int) -> bool:
    """Whether the ancestor of row ``i`` at ``depth`` (or the row itself) is the last child of its parent."""
    k = i
    while rows[k][0] > depth:
        k -= 1
    for later, _ in rows[k + 1:]:
        if later < depth:
            return True
        if later == depth:
            return False
    return True


def capacity_rows(cfg: PlatformConfig) -> list[dict]:
    """One row per pool and GPU resource its nodes advertise (a per-GPU MIG layout advertises several)."""
    facts = all_pool_facts(cfg)
    rows = []
    for pool in cfg.node_pools:
        f = facts[pool.name]
        if f.mig_layout:
            sharing = f"mig layout {f.mig_config} ({f.mig_strategy})"
        else:
            sharing = f.mode + (f" {f.mig_profile} ({f.mig_strategy})" if f.mode == "mig" else "") + \
                (f" {f.cgpu_policy}/{f.cgpu_placement}" if f.mode == "cgpu" else "")
        workloads = [w for w in cfg.workloads if w.node_pool == pool.name]
        rows.append({
            "pool": pool.name, "gpu": f"{f.gpus_per_node} x {f.model.name}", "sharing": sharing,
            "maxNodes": f.max_nodes, "nodeLabels": f.node_labels, "labelByHand": not cfg.cloud.creates_node_pools,
            "resources": [{"resource": r, "unitsPerNode": n, "unitsAtMax": n * f.max_nodes,
                           "unit": f.unit_of(r)}
                          for r, n in sorted(f.node_resources.items())],
            "workloads": [{"name": w.name, "resource": f.resource_for(w.gpu) if f.mode != "cgpu" else f.resource_name,
                           "replicasPerNode": f.replicas_per_node(w.gpu), "replicasAtMax": f.max_replicas(w.gpu),
                           "maxReplicas": w.replica_ceiling,
                           **({"warmCapacity": warm_capacity_row(cfg, pool, f, w)} if w.warm_replicas else {})}
                          for w in workloads],
        })
    return rows


def warm_capacity_row(cfg: PlatformConfig, pool, f, w) -> dict:
    """What a workload's warm-capacity placeholders hold while idle (components/warm_capacity.py): one replica's
    GPU units each, and the share of a node each displaces (1 / replicas per node), priced at the pool's stated
    ``price``, else the catalog's (gpuplatform/pricing.py): the dearest instance type, as the autoscaler may start
    it."""
    from gpuplatform.pricing import node_price
    from gpuplatform.simulate.service import replica_units

    n = w.warm_replicas
    per_replica, unit = replica_units(cfg, w)
    units = n * per_replica
    nodes = n / max(f.replicas_per_node(w.gpu), 1)
    price = node_price(pool.instance_types, pool.price)
    row = {"placeholders": n, "unitsHeld": round(units, 3), "unit": unit, "nodeShare": round(nodes, 3),
           "priceKnown": price.known}
    if price.known:
        row.update({"currency": price.currency, "basis": price.basis,
                    "idlePerHour": round(nodes * price.dearest, 4), "idlePerDay": round(nodes * price.dearest * 24, 2)})
    else:
        row["reason"] = price.reason
    return row


def warm_capacity_text(rows: list[dict]) -> str:
    """The idle cost of each workload's warm capacity, or empty when no workload has any."""
    table = [["WORKLOAD", "POOL", "PLACEHOLDERS", "HOLD", "NODES", "IDLE COST"]]
    for r in rows:
        for w in r["workloads"]:
            c = w.get("warmCapacity")
            if c is None:
                continue
            cost = (f"{c['idlePerHour']:g} {c['currency']}/h, {c['idlePerDay']:g} {c['currency']}/day ({c['basis']})"
                    if c["priceKnown"] else f"unknown: {c['reason']}")
            held = c["unitsHeld"]
            table.append([w["name"], r["pool"], c["placeholders"],
                          counted(int(held) if float(held).is_integer() else held, c["unit"]),
                          f"{c['nodeShare']:g}", cost])
    if len(table) == 1:
        return ""
    return ("Warm capacity (placeholders preempted by a replica, so it skips node provisioning; they hold their GPUs "
            "while idle: docs/simulate.md)\n" + _table(table))


def pool_rows(cfg: PlatformConfig) -> list[dict]:
    """Per pool: what it runs on, how many nodes and GPUs it keeps at its least and most, and what that costs
    per hour and per month at the pool's stated price, else the catalog's list price (gpuplatform/pricing.py)."""
    facts = all_pool_facts(cfg)
    rows = []
    region = getattr(cfg.cluster, "region", None)
    system = getattr(cfg.cluster, "system_pool", None)
    if cfg.cluster.kind == "ack-managed" and system is not None and system.enabled:
        rows.append({"pool": SYSTEM_POOL_NAME, "role": "system", "instanceTypes": list(system.instance_types),
                     "region": region, "minNodes": system.nodes, "maxNodes": system.nodes, "autoscaled": False,
                     "taints": [], "gpuModel": None, "gpusPerNode": 0, "gpusAtMin": 0, "gpusAtMax": 0,
                     "cost": pool_cost(cfg, system.instance_types, system.nodes, system.nodes, remedy="")})
    for pool in cfg.node_pools:
        f = facts.get(pool.name)
        low, high = (pool.min_nodes, pool.max_nodes) if pool.autoscaling else (pool.desired_nodes or 0,) * 2
        gpus = f.gpus_per_node if f else 0
        rows.append({"pool": pool.name, "role": "gpu", "instanceTypes": list(pool.instance_types),
                     "region": region, "minNodes": low, "maxNodes": high, "autoscaled": pool.autoscaling,
                     "taints": [t.model_dump(exclude_none=True) for t in pool.taints],
                     "gpuModel": f.model.name if f else None, "gpusPerNode": gpus, "gpusAtMin": low * gpus,
                     "gpusAtMax": high * gpus, "cost": pool_cost(cfg, pool.instance_types, low, high, pool.price)})
    return rows


def placement_report(cfg: PlatformConfig) -> dict:
    """Where each pod other than the stack's workloads can run (components/placement.py), what is assumed about
    nodes the stack does not create, and the components the stack needs but cannot install."""
    from gpuplatform.components.addons import prerequisites
    from gpuplatform.components.placement import cluster_pods, existing_nodes_assumption, node_groups, why_not

    groups = node_groups(cfg)
    pods = [{"pod": p.owner, "origin": p.origin, "replicas": p.replicas,
             "homes": [g.name for g in groups if not why_not(p, g)], "sourced": p.sourced, "source": p.source}
            for p in cluster_pods(cfg)]
    from gpuplatform.components.placement import request_sums, workload_pods

    sums = request_sums(cluster_pods(cfg, with_daemonsets=True) + workload_pods(cfg), groups)
    return {"assumption": existing_nodes_assumption(cfg), "pods": pods, "requests": sums,
            "prerequisites": [{"component": name, "how": PREREQUISITES[name]} for name in prerequisites(cfg)]}


def placement_text(report: dict) -> str:
    table = [["POD", "FROM", "RUNS ON"]]
    for p in report["pods"]:
        table.append([p["pod"] + ("" if p["sourced"] else " *"), p["origin"], ", ".join(p["homes"]) or "NOWHERE"])
    lines = [_table(table) if report["pods"] else "no pod besides the workloads"]
    if any(not p["sourced"] for p in report["pods"]):
        lines.append("* scheduling constraints not published: taken as an ordinary pod (no toleration, no node "
                     "selector); sources: catalogs/pods.py")
    for row in report.get("requests", []):
        parts = []
        for r, unit in (("cpu", "CPU"), ("memory", "GiB memory"), ("pods", "pods")):
            if r in row:
                scale = 2 ** 30 if r == "memory" else 1
                parts.append(f"{row[r]['requested'] / scale:.1f} of {row[r]['offered'] / scale:.1f} {unit}")
        if parts:
            lines.append(f"Requests on {row['group']} ({row['nodes']} nodes, DaemonSets on each, workloads at "
                         f"maxReplicas): {', '.join(parts)}")
    if report["assumption"]:
        lines.append(f"Assumed: {report['assumption']}")
    lines += [f"Prerequisite: {p['component']}: {p['how']}" for p in report["prerequisites"]]
    return "\n".join(lines)


def pool_cost(cfg: PlatformConfig, instance_types: list[str], low: int, high: int, stated=None,
              remedy: Optional[str] = None) -> dict:
    """Hourly and monthly cost at the least and most nodes, at the pool's stated ``price`` when it has one, else
    at the catalog's. With several instance types the autoscaler may start any of them: the least is priced with
    the cheapest, the most with the dearest. ``basis`` says which price it is."""
    from gpuplatform.pricing import node_price

    if not cfg.cloud.creates_node_pools:
        return {"known": False, "reason": "the cluster's nodes exist already; this stack buys none"}
    price = node_price(instance_types, stated, remedy)
    if not price.known:
        return {"known": False, "reason": price.reason}
    cheapest, dearest = price.cheapest, price.dearest
    return {"known": True, "currency": price.currency, "hoursPerMonth": HOURS_PER_MONTH, "basis": price.basis,
            "hourlyAtMin": round(low * cheapest, 2), "hourlyAtMax": round(high * dearest, 2),
            "monthlyAtMin": round(low * cheapest * HOURS_PER_MONTH, 2),
            "monthlyAtMax": round(high * dearest * HOURS_PER_MONTH, 2),
            "estimate": price.basis == "estimate",
            "prices": [{"instanceType": p.instance_type, "perHour": p.per_hour, "basis": p.basis,
                        "region": p.region, "retrieved": p.retrieved, "source": p.source,
                        **({"method": p.method} if p.method else {})} for p in price.catalog]
            or [{"instanceTypes": list(instance_types), "perHour": stated.per_hour, "basis": "stated",
                 "source": stated.source}]}


PLACEMENT_TITLE = "Where the cluster's other pods run (ACK, add-ons, charts; components/placement.py)"


def pools_text(rows: list[dict]) -> str:
    table = [["POOL", "INSTANCE TYPES", "REGION", "NODES MIN-MAX", "GPUS MIN-MAX", "PER HOUR MIN-MAX",
              "PER MONTH MIN-MAX", "PRICE BASIS"]]
    notes: dict[str, str] = {}
    for r in rows:
        c = r["cost"]
        if c["known"]:
            hourly = f"${c['hourlyAtMin']:,.2f}-${c['hourlyAtMax']:,.2f}"
            monthly = f"${c['monthlyAtMin']:,.0f}-${c['monthlyAtMax']:,.0f}"
            basis = "stated in the stack" if c["basis"].startswith("stated") else c["basis"]
            for p in c["prices"]:
                if p["basis"] == "stated":
                    notes[r["pool"]] = f"  {r['pool']}: ${p['perHour']:,.2f}/h per node, {c['basis']}"
                    continue
                notes[p["instanceType"]] = (f"  {p['instanceType']}: ${p['perHour']:,.2f}/h, {p['basis']}, "
                                            f"{p['region']}, read {p['retrieved']}, {p['source']}"
                                            + (f"\n    ({p['method']})" if p.get("method") else ""))
        else:
            hourly, monthly, basis = "unknown", "", "-"
            notes[r["pool"]] = f"  {r['pool']}: cost unknown: {c['reason']}"
        table.append([r["pool"], ", ".join(r["instanceTypes"]) or "(existing nodes)", r["region"] or "-",
                      f"{r['minNodes']}-{r['maxNodes']}",
                      f"{r['gpusAtMin']}-{r['gpusAtMax']} x {r['gpuModel']}" if r["gpuModel"] else "-",
                      hourly, monthly, basis])
    legend = (f"{CURRENCY}, pay-as-you-go compute only, {HOURS_PER_MONTH} h a month; a pool's nodePools[].price "
              "(stated in the stack, with its source) wins over the catalog's list prices and estimates "
              "(catalogs/prices.py)")
    return _table(table) + "\n" + legend + ("\n" + "\n".join(notes.values()) if notes else "")


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
STARTUP_TITLE = "Start-up (container start -> ready; estimates and sources: docs/model-startup.md)"


def startup_rows(cfg: PlatformConfig) -> list[dict]:
    """Per workload: where its weights come from, how long a replica is expected to take from container start to
    ready (components/model_startup.py) and what its probes allow and check."""
    from gpuplatform.components.workload_manifests import probes

    rows = []
    for w in cfg.workloads:
        est = load_estimate(w)
        if stated_startup_seconds(w) is not None:
            basis = "probes.startupTimeoutSeconds"
        else:
            basis = "sized from model" if est is not None else "default, no model"
        ready = probes(w)["readinessProbe"]
        check = (f"HTTP {ready['httpGet']['path']}" if "httpGet" in ready
                 else f"TCP {ready['tcpSocket']['port']}")
        if "timeoutSeconds" in ready:
            check += f", {ready['timeoutSeconds']}s timeout"
        rows.append({"workload": w.name,
                     "weights": None if est is None else {"sizeGib": est.size_gib, "source": est.source,
                                                          "mibPerSecond": est.mib_per_second,
                                                          "rateBasis": est.rate_basis, "streamed": est.streamed},
                     "expectedLoadSeconds": None if est is None else round(est.expected_seconds),
                     **({"cacheFillLoadSeconds": round(est.first_expected_seconds)}
                        if est is not None and (est.fill_mib_per_second is not None
                                                or est.cold_overhead_seconds is not None) else {}),
                     "startupProbeSeconds": startup_seconds(w), "startupProbeBasis": basis, "readiness": check})
    return rows


DRAIN_TITLE = "Scale-in and rollouts (docs/drain.md)"


def drain_rows(cfg: PlatformConfig) -> list[dict]:
    """Per workload: its drain chain as rendered (preStop wait, the server's drain, grace period) and whether it
    holds, and how a rollout replaces its replicas (components/drain.py)."""
    from gpuplatform.components.drain import drain_chain, rollout_strategy
    from gpuplatform.components.pools import all_pool_facts
    from gpuplatform.components.validation import kubernetes_version

    version = kubernetes_version(cfg)
    facts = all_pool_facts(cfg)
    rows = []
    for w in cfg.workloads:
        c = drain_chain(w, version)
        f = facts.get(w.node_pool)
        rollout = rollout_strategy(w, f.max_replicas(w.gpu) if f is not None else None)
        rows.append({"workload": w.name, "enabled": c.enabled, "preStopSeconds": c.pre_stop_s,
                     "waitsFor": c.routing.who, "serverDrainSeconds": None if c.server_drain_s == float("inf")
                     else c.server_drain_s, "drainFlag": list(c.added_args),
                     "longestRequestSeconds": c.longest_request_s, "longestBasis": c.longest_basis,
                     "terminationGracePeriodSeconds": c.grace_s, "holds": c.holds, "lossless": c.lossless,
                     "rollout": rollout.strategy["rollingUpdate"], "surgeRoom": rollout.surge,
                     "rolloutWhy": rollout.why})
    return rows


def drain_text(rows: list[dict]) -> str:
    if not rows:
        return "(no workloads)"
    table = [["WORKLOAD", "PRESTOP", "SERVER DRAIN", "GRACE", "LONGEST REQUEST", "SCALE-IN", "ROLLOUT"]]
    for r in rows:
        drain = ("no limit" if r["serverDrainSeconds"] is None else
                 "aborts" if r["serverDrainSeconds"] <= 0 else f"{r['serverDrainSeconds']:g}s")
        ru = r["rollout"]
        table.append([r["workload"], f"{r['preStopSeconds']}s ({r['waitsFor']})",
                      drain + (f" ({' '.join(r['drainFlag'])})" if r["drainFlag"] else ""),
                      f"{r['terminationGracePeriodSeconds']}s", f"{r['longestRequestSeconds']}s ({r['longestBasis']})",
                      "no request lost" if r["lossless"] else "LOSES requests",
                      f"surge 1{'' if r['surgeRoom'] else ', no GPU at max'}"])
    return _table(table)


def startup_text(rows: list[dict]) -> str:
    if not rows:
        return "(no workloads)"
    table = [["WORKLOAD", "WEIGHTS", "EXPECTED LOAD", "STARTUP PROBE BUDGET", "READINESS"]]
    for r in rows:
        weights = r["weights"]
        table.append([r["workload"],
                      f"{weights['sizeGib']:g} GiB ({'streamed ' if weights['streamed'] else ''}{weights['source']}, "
                      f"{weights['mibPerSecond']:g} MiB/s)"
                      if weights else "-",
                      (_secs(r["expectedLoadSeconds"]) + (f" ({_secs(r['cacheFillLoadSeconds'])} filling the cache)"
                                                          if "cacheFillLoadSeconds" in r else ""))
                      if weights else "unknown (no model)",
                      f"{r['startupProbeSeconds']}s ({r['startupProbeBasis']})", r["readiness"]])
    return _table(table)


def capacity_text(rows: list[dict]) -> str:
    table = [["POOL", "GPUS/NODE", "SHARING", "RESOURCE", "UNITS/NODE", "MAX NODES", "UNITS AT MAX"]]
    for r in rows:
        for k, res in enumerate(r["resources"]):
            first = [r["pool"], r["gpu"], r["sharing"]] if k == 0 else ["", "", ""]
            table.append(first + [res["resource"], counted(res['unitsPerNode'], res['unit']),
                                  r["maxNodes"] if k == 0 else "", res["unitsAtMax"]])
    fits = [["WORKLOAD", "POOL", "RESOURCE", "REPLICAS/NODE", "REPLICAS AT MAX", "maxReplicas"]]
    for r in rows:
        fits += [[w["name"], r["pool"], w["resource"], w["replicasPerNode"], w["replicasAtMax"], w["maxReplicas"]]
                 for w in r["workloads"]]
    labels = [f"  {r['pool']}: " + " ".join(f"{k}={v}" for k, v in sorted(r["nodeLabels"].items()))
              for r in rows if r.get("labelByHand")]
    text = _table(table) + ("\n\n" + _table(fits) if len(fits) > 1 else "")
    warm = warm_capacity_text(rows)
    text += "\n\n" + warm if warm else ""
    return text + ("\n\nLabel the nodes of each pool (this cluster's nodes exist already):\n" + "\n".join(labels)
                   if labels else "")


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


def _secs(value) -> str:
    return "never" if value is None else f"{value:g}s"


def _mask(value: Any, secrets: set[str]) -> Any:
    if isinstance(value, str):
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, SECRET_MASK)
        return value
    if isinstance(value, dict):
        return {k: _mask(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v, secrets) for v in value]
    return value


def manifest_files(records: list[RegisteredResource]) -> dict[str, dict]:
    """File name -> document: one per Kubernetes object we author, one per Helm release."""
    files = {}
    for r in records:
        if r.is_kubernetes_object:
            meta = r.inputs.get("metadata") or {}
            ns = meta.get("namespace", "cluster")
            files[f"{r.inputs['kind'].lower()}-{ns}-{meta.get('name', r.name)}.yaml"] = r.inputs
        elif r.type == "kubernetes:helm.sh/v3:Release":
            i = r.inputs
            files[f"helmrelease-{i.get('namespace')}-{i.get('name')}.yaml"] = {
                "chart": i.get("chart"), "version": i.get("version"),
                "repository": (i.get("repositoryOpts") or {}).get("repo"), "namespace": i.get("namespace"),
                "name": i.get("name"), "values": i.get("values") or {}}
    return files


def write_records(out_dir: Path, stack: str, records: list[RegisteredResource], secrets: set[str],
                  **extra: Any) -> None:
    """``plan.json`` (every resource with its inputs, plus ``extra``) and ``manifests/``, secrets masked."""
    out_dir.mkdir(parents=True, exist_ok=True)
    manifests = out_dir / "manifests"
    manifests.mkdir(exist_ok=True)
    for old in manifests.glob("*.yaml"):
        old.unlink()
    doc = {"stack": stack, "resourceCount": len(records),
           "resources": [{"type": r.type, "name": r.name, "parent": r.parent, "urn": r.urn,
                          "parentUrn": r.parent_urn if r.parent else "", "protect": r.protect,
                          "dependsOn": sorted(r.depends_on), "inputs": _mask(r.inputs, secrets),
                          **({"ignoreChanges": list(r.ignore_changes)} if r.ignore_changes else {}),
                          **({"customTimeouts": r.custom_timeouts} if r.custom_timeouts else {})}
                         for _, r in ordered(records)], **extra}
    (out_dir / "plan.json").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    for name, body in sorted(manifest_files(records).items()):
        (manifests / name).write_text(yaml.dump(_mask(body, secrets), Dumper=YAML_DUMPER, sort_keys=True))


def write_plan(out_dir: Path, stack: str, records: list[RegisteredResource], cfg: PlatformConfig,
               secrets: set[str], sweep: bool = True) -> None:
    write_records(out_dir, stack, records, secrets, pools=pool_rows(cfg), placement=placement_report(cfg),
                  capacity=capacity_rows(cfg), startup=startup_rows(cfg), metricLatency=latency_rows(cfg, sweep))


def file_warnings(cfg: PlatformConfig) -> list[str]:
    """Files the stack names that ``pulumi up`` will read: each one that is not on this machine, said loudly,
    since the plan cannot check it. The kubernetes provider takes ``kubeconfig`` as "the contents of a kubeconfig
    file or the path to a kubeconfig file" (pulumi-kubernetes ``Provider`` args), and the program hands it the
    path, which is read where ``pulumi`` runs."""
    import os

    path = getattr(cfg.cluster, "kubeconfig_path", None)
    if not path or os.path.isfile(os.path.expanduser(path)):
        return []
    return [f"WARNING: cluster.kubeconfigPath {path!r} does not exist here, so this plan could not check it; "
            "`pulumi up` fails unless it runs where that file exists (or set the secret gpu-platform:kubeconfig)"]


def custom_gpu_warnings(cfg: PlatformConfig) -> list[str]:
    """A pool's ``customGpu`` is the stack's own statement, said on every plan: its capacity, cGPU and sharing
    checks are only as right as those facts."""
    out = []
    for i, pool in enumerate(cfg.node_pools):
        c = pool.custom_gpu
        if c is not None:
            out.append(f"WARNING: nodePools[{i}].customGpu {c.name!r} is not in the GPU catalog: its {c.memory_gib} "
                       f"GiB per card and sharing modes ({', '.join(c.sharing)}) are this stack's statement, unchecked; "
                       "capacity and GPU-request checks of pool " f"{pool.name!r} rely on them")
    return out


def end_of_life_warnings(cfg: PlatformConfig) -> list[str]:
    """A chart installed at an end-of-life pin (``settings.allowEndOfLifeCharts``) is said on every plan, so the
    opt-in is not forgotten once the cluster could take a supported one."""
    from gpuplatform.catalogs.versions import chart
    from gpuplatform.components.releases import chart_releases
    from gpuplatform.components.validation import kubernetes_version

    version = kubernetes_version(cfg)
    out = []
    for key in chart_releases(cfg) if version else []:
        c = chart(key)
        chosen = c.for_kubernetes(version, c.name in cfg.settings.allow_end_of_life_charts)
        if chosen is not None and chosen.end_of_life:
            out.append(f"WARNING: {c.name} {chosen.version} is end of life upstream since {chosen.end_of_life} "
                       f"(chosen through settings.allowEndOfLifeCharts); upgrade the cluster to a Kubernetes version "
                       f"a supported pin covers: {c.supported_text()}")
    return out


def run_plan(raw: dict[str, Any], stack: str, out_dir: str | None, fmt: str, out: TextIO | None = None,
             provider_settings: dict[str, Any] | None = None, sweep: bool = True) -> int:
    """``gpuplatform plan``. ``sweep``: False skips the first scale-up sweep over every loop alignment (seconds per
    GPU-metric workload the first time a stack is planned); the single simulated step is still shown."""
    out = out or sys.stdout
    provider_settings = provider_settings or {}
    # ConfigError propagates to the CLI (exit 2) before anything is registered
    cfg = load(raw, provider_settings)
    from gpuplatform.components.image_pins import digest_notes
    from gpuplatform.components.network_policy import network_warnings
    from gpuplatform.components.drain import drain_warnings

    for warning in (file_warnings(cfg) + custom_gpu_warnings(cfg) + end_of_life_warnings(cfg) + digest_notes(cfg)
                    + network_warnings(cfg) + drain_warnings(cfg)):
        sys.stderr.write(warning + "\n")
    records = synthesize({**stack_config_from_namespace(raw), **provider_settings}, stack=stack)
    raise_for_refusals(records, cfg)  # what the API server would refuse is a config error, as validation's are
    secrets = {str(raw[k]) for k in SECRET_KEYS if raw.get(k)} | OFFLINE_SECRETS
    if out_dir:
        write_plan(Path(out_dir), stack, records, cfg, secrets, sweep)
    if fmt == "json":
        json.dump({"stack": stack, "resourceCount": len(records),
                   "tree": [{"depth": d, "type": r.type, "name": r.name, "urn": r.urn, "protect": r.protect}
                            for d, r in ordered(records)],
                   "pools": pool_rows(cfg), "placement": placement_report(cfg), "capacity": capacity_rows(cfg),
                   "startup": startup_rows(cfg), "drain": drain_rows(cfg), "metricLatency": latency_rows(cfg, sweep),
                   "slo": slo_rows(cfg)},
                  out, indent=2)
        out.write("\n")
    else:
        out.write(f"Stack {stack}: {len(records)} resources\n\n{tree_text(records)}\n\n")
        out.write(f"Node pools\n{pools_text(pool_rows(cfg))}\n\n")
        out.write(f"{PLACEMENT_TITLE}\n{placement_text(placement_report(cfg))}\n\n")
        out.write(f"GPU capacity\n{capacity_text(capacity_rows(cfg))}\n\n")
        out.write(f"{STARTUP_TITLE}\n{startup_text(startup_rows(cfg))}\n\n")
        out.write(f"{DRAIN_TITLE}\n{drain_text(drain_rows(cfg))}\n\n")
        out.write(f"{LATENCY_TITLE}\n{latency_text(latency_rows(cfg, sweep))}\n")
        slos = slo_rows(cfg)
        if slos:
            out.write(f"\n{SLO_TITLE}\n{slo_text(slos)}\n")
        if out_dir:
            out.write(f"\nWrote {Path(out_dir) / 'plan.json'} and {Path(out_dir) / 'manifests'}/\n")
    return 0
