"""The report sections read from the config and the catalogs alone: node pools and their cost, where the cluster's
other pods run, GPU capacity (with the warm capacity's idle cost), start-up, scale-in and rollouts. Each is a
``*_rows`` function (the data ``plan.json`` and ``--format json`` hold) and a ``*_text`` function (the table)."""
from typing import Optional

from gpuplatform.catalogs.ack import PREREQUISITES, SYSTEM_POOL_NAME
from gpuplatform.catalogs.prices import CURRENCY, HOURS_PER_MONTH
from gpuplatform.components.config import PlatformConfig
from gpuplatform.components.errors import counted
from gpuplatform.components.model_startup import load_estimate, startup_seconds, stated_startup_seconds
from gpuplatform.components.pools import all_pool_facts
from gpuplatform.report import table as _table


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
    from gpuplatform.simulate.workload_setup import replica_units

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


def _secs(value) -> str:
    return "never" if value is None else f"{value:g}s"
