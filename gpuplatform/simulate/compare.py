"""``gpuplatform simulate --compare-pools``: one workload on candidate pools (say A10 vs L20 vs A100 MIG 3g), each
with its own ``serviceModel`` (how fast that GPU serves) and price, run through the same simulator on the same
trace and ranked by cost per day with the SLO met.

Candidates are pools of the stack by name (``--compare-pools a10,l20``: each keeps the workload's serviceModel and
gpu request) or a YAML file (``--compare-pools candidates.yaml``) that gives each candidate its serviceModel and
gpu request, and may define pools the stack lacks::

    candidates:
      - nodePool: a10                    # a pool of the stack
        serviceModel: {requestsPerSecondAtTarget: 10}
      - nodePool:                        # or a pool stated here, with the keys of nodePools[]
          name: l20
          instanceTypes: [ecs.gn8is.2xlarge]
          maxNodes: 6
          price: {perHour: 2.1, source: "quote Q-17"}
        serviceModel: {requestsPerSecondAtTarget: 16}
        gpu: {count: 1}                  # default: the workload's own

Cost per day is replica-hours (every replica bound to a node: pulling its image, loading or serving, since each
holds its GPU units) x the price of one replica-hour (the node's price, stated or catalog (gpuplatform/pricing.py),
divided by the replicas one node holds), scaled from the trace's length to 24 hours; the
cost of the nodes the run kept up (partly empty ones included) is reported beside it. A candidate the stack's
validation refuses (the request does not fit the pool's sharing mode, maxReplicas over what the pool holds) is
listed with the refusal, not run.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, TextIO, Union

import yaml
from pydantic import Field, ValidationError

from gpuplatform.components.config import GpuRequestSpec, Model, NodePool, PlatformConfig, ServiceModel
from gpuplatform.components.errors import ConfigError
from gpuplatform.components.pools import all_pool_facts
from gpuplatform.pricing import node_price
from gpuplatform.report import table
from gpuplatform.simulate.engine import find_workload, simulate
from gpuplatform.simulate.slo import error_budget_minutes
from gpuplatform.simulate.traces import ArgumentIssue, Trace

SECONDS_PER_DAY = 86400
FLAG = "--compare-pools"


class CandidateSpec(Model):
    node_pool: Union[str, NodePool]
    """A pool of the stack by name, or a pool stated here (the keys of ``nodePools[]``). Required."""
    service_model: Optional[ServiceModel] = None
    """How one replica serves on this pool's GPU. Default: the workload's own."""
    gpu: Optional[GpuRequestSpec] = None
    """The workload's GPU request on this pool. Default: the workload's own."""


class CandidatesFile(Model):
    candidates: list[CandidateSpec] = Field(min_length=1)
    """The pools to compare. Required, at least one."""


@dataclass
class Outcome:
    pool: str
    gpu: str
    refused: list[str]
    price: object = None
    replicas_per_node: int = 0
    result: object = None
    cost_per_day: Optional[float] = None
    node_cost_per_day: Optional[float] = None
    slo_met: Optional[bool] = None
    over_level_s: float = 0.0
    service_model: Optional[ServiceModel] = None
    own_service_model: bool = True
    """True when the candidate runs the workload's own serviceModel (no faster or slower GPU stated)."""

    def to_json(self) -> dict:
        doc = {"pool": self.pool, "gpu": self.gpu, "refused": self.refused}
        if self.result is None:
            return doc
        p, s = self.price, self.result.summary()
        return {**doc, "serviceModel": self.service_model.model_dump(by_alias=True, exclude_none=True),
                "ownServiceModel": self.own_service_model, "sloMet": self.slo_met,
                "overLevelSeconds": self.over_level_s,
                "replicaHours": s["replica_hours"], "readyReplicaHours": s["ready_replica_hours"],
                "nodeHours": s["node_hours"],
                "peakReplicas": s["peak_replicas"], "replicasPerNode": self.replicas_per_node,
                "costPerDay": self.cost_per_day, "nodeCostPerDay": self.node_cost_per_day,
                "currency": p.currency if p.known else None, "nodePricePerHour": p.dearest,
                "priceBasis": p.basis if p.known else "unknown", "priceUnknownReason": p.reason or None}


def candidates_of(cfg: PlatformConfig, arg: str) -> list[CandidateSpec]:
    """The candidates ``--compare-pools`` names: a comma-separated list of the stack's pools, or a YAML file."""
    if arg.endswith((".yaml", ".yml")):
        path = Path(arg)
        if not path.is_file():
            raise ConfigError([ArgumentIssue(FLAG, f"{arg!r}: no such file")])
        try:
            doc = yaml.safe_load(path.read_text()) or {}
            return CandidatesFile.model_validate(doc).candidates
        except yaml.YAMLError as exc:
            raise ConfigError([ArgumentIssue(FLAG, f"{arg}: not YAML: {exc}")]) from None
        except ValidationError as exc:
            raise ConfigError([ArgumentIssue(f"{FLAG} {arg}", f"{_loc(e['loc'])}: {e['msg']}")
                               for e in exc.errors()]) from None
    names = [n.strip() for n in arg.split(",") if n.strip()]
    pools = [p.name for p in cfg.node_pools]
    unknown = [n for n in names if n not in pools]
    if not names or unknown:
        raise ConfigError([ArgumentIssue(FLAG, f"{', '.join(map(repr, unknown)) or repr(arg)}: not a pool of the "
                                               f"stack; pools: {', '.join(pools)}, or a candidates .yaml file")])
    return [CandidateSpec(node_pool=n) for n in names]


def _loc(loc: tuple) -> str:
    return "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in loc).lstrip(".")


def _candidate_config(cfg: PlatformConfig, workload: str, c: CandidateSpec):
    """The stack with the workload re-pointed at the candidate's pool (added when stated in the file), its
    serviceModel and gpu request; the stack's validation judges it like any stack."""
    from gpuplatform.components.validation import validate

    w = find_workload(cfg, workload)
    pools = list(cfg.node_pools)
    if isinstance(c.node_pool, NodePool):
        if any(p.name == c.node_pool.name for p in pools):
            raise ConfigError([ArgumentIssue(FLAG, f"pool {c.node_pool.name!r} is stated in the candidates file "
                                                   "and in the stack; name the stack's pool, or rename this one")])
        pools.append(c.node_pool)
    name = c.node_pool if isinstance(c.node_pool, str) else c.node_pool.name
    if name not in {p.name for p in pools}:
        raise ConfigError([ArgumentIssue(FLAG, f"{name!r}: not a pool of the stack; pools: "
                                               f"{', '.join(p.name for p in cfg.node_pools)}")])
    moved = w.model_copy(update={"node_pool": name, "service_model": c.service_model or w.service_model,
                                 "gpu": c.gpu or w.gpu})
    out = cfg.model_copy(update={"node_pools": pools,
                                 "workloads": [moved if x is w else x for x in cfg.workloads]})
    index = cfg.workloads.index(w)
    own = f"workloads[{index}]"
    pool_index = next(i for i, p in enumerate(pools) if p.name == name)
    # only what the move can break: the workload itself and its new pool
    refused = [f"{i.path}: {i.message}" for i in validate(out)
               if i.path.startswith(own) or i.path.startswith(f"nodePools[{pool_index}]")]
    return out, next(p for p in pools if p.name == name), refused


def slo_level_and_budget(cfg: PlatformConfig, workload: str, slo: Optional[float]) -> tuple[float, float, str]:
    """The level time over it is judged against, the fraction of the trace allowed over it, and where both come
    from: ``--slo``; else the workload's ``slo`` objective on its first autoscaling metric (read defensively: the
    key may be absent in this version), with its compliance; else the workload's target with no time allowed."""
    w = find_workload(cfg, workload)
    first = w.autoscaling.metrics[0]
    stated = getattr(w, "slo", None)
    objective = next((o for o in getattr(stated, "objectives", None) or []
                      if getattr(o, "metric", None) == first.metric), None)
    compliance = float(getattr(stated, "compliance", 100.0) or 100.0) if objective is not None else 100.0
    budget = max(0.0, 1 - compliance / 100)
    if slo is not None:
        return slo, budget, f"--slo {slo:g}"
    if objective is not None:
        return float(objective.below), budget, (f"the workload's SLO: {first.metric} below {objective.below:g}, "
                                                f"{compliance:g} % of the time")
    return float(first.target), 0.0, f"the workload's target {first.target:g} (no SLO stated)"


def compare(cfg: PlatformConfig, stack: str, workload: str, trace: Trace, arg: str,
            slo: Optional[float] = None) -> tuple[list[Outcome], str, float]:
    level, budget, basis = slo_level_and_budget(cfg, workload, slo)
    length = max(trace.times[-1] if trace.times else 0, 1)
    outcomes = []
    for c in candidates_of(cfg, arg):
        candidate_cfg, pool, refused = _candidate_config(cfg, workload, c)
        w = find_workload(candidate_cfg, workload)
        o = Outcome(pool.name, _gpu_text(w.gpu), refused, service_model=w.service_model,
                    own_service_model=c.service_model is None)
        outcomes.append(o)
        if refused:
            continue
        try:
            r = simulate(candidate_cfg, stack, workload, trace, slo_target=level)
        except ConfigError as exc:
            o.refused = [f"{i.path}: {i.message}" for i in exc.issues]
            continue
        facts = all_pool_facts(candidate_cfg)[pool.name]
        o.result, o.price = r, node_price(pool.instance_types, pool.price)
        o.replicas_per_node = facts.replicas_per_node(w.gpu)
        o.gpu = _gpu_text(w.gpu, facts.resource_name if facts.mode == "cgpu" else facts.resource_for(w.gpu))
        o.over_level_s = r.over_target_s
        # the SLO verdict of simulate.slo (bad minutes of the worst pod's SLI, or failed requests) within the
        # share of the trace's minutes the compliance allows: the judgement --tune and plan make
        o.slo_met = r.tally.bad_minutes <= error_budget_minutes(100 * (1 - budget), len(r.tally.failed_minutes))
        s = r.summary()
        if o.price.known:
            per_replica_hour = o.price.dearest / o.replicas_per_node
            o.cost_per_day = round(s["replica_hours"] * per_replica_hour * SECONDS_PER_DAY / length, 2)
            o.node_cost_per_day = round(s["node_hours"] * o.price.dearest * SECONDS_PER_DAY / length, 2)
    outcomes.sort(key=_rank)
    return outcomes, basis, budget


def _rank(o: Outcome):
    """SLO met first, then the cheapest per day; unknown costs after known ones, refusals last."""
    return (o.result is None, not o.slo_met, o.cost_per_day is None, o.cost_per_day or 0.0, o.pool)


def _gpu_text(g: GpuRequestSpec, resource: str = "") -> str:
    """The request as the pool's device plugin advertises it (``1 x nvidia.com/mig-3g.20gb``)."""
    parts = [f"{g.count} x {resource or g.mig_profile or 'GPU'}" if g.count else "",
             f"{g.memory_gib} GiB" if g.memory_gib else "", f"{g.core_percent}% core" if g.core_percent else ""]
    return ", ".join(p for p in parts if p) or "-"


def run_compare(cfg: PlatformConfig, stack: str, workload: str, trace: Trace, arg: str, fmt: str, out: TextIO,
                slo: Optional[float] = None) -> int:
    outcomes, basis, budget = compare(cfg, stack, workload, trace, arg, slo)
    if fmt == "json":
        json.dump({"workload": workload, "trace": trace.name, "sloBasis": basis, "allowedFractionOver": budget,
                   "ranking": [o.to_json() for o in outcomes]}, out, indent=1)
        out.write("\n")
        return 0
    out.write(compare_text(workload, trace.name, basis, budget, outcomes))
    return 0


def compare_text(workload: str, trace: str, basis: str, budget: float, outcomes: list[Outcome]) -> str:
    rows = [["RANK", "POOL", "GPU PER REPLICA", "SLO MET", "OVER LEVEL", "REPLICA-H", "PER DAY",
             "NODES PER DAY", "PRICE BASIS"]]
    notes = []
    for rank, o in enumerate(outcomes, 1):
        if o.result is None:
            rows.append([str(rank), o.pool, o.gpu, "refused", "-", "-", "-", "-", "-"])
            notes += [f"  {o.pool}: refused: {why}" for why in o.refused]
            continue
        s = o.result.summary()
        if o.price.known:
            day, nodes = f"${o.cost_per_day:,.2f}", f"${o.node_cost_per_day:,.2f}"
            price_basis = "stated in the stack" if o.price.stated else o.price.basis
        else:
            day = nodes = "unknown"
            price_basis = "-"
            notes.append(f"  {o.pool}: cost unknown: {o.price.reason}")
        if o.own_service_model:
            notes.append(f"  {o.pool}: runs the workload's own serviceModel; state how fast this GPU serves in a "
                         "candidates file")
        rows.append([str(rank), o.pool, o.gpu, "yes" if o.slo_met else "no", f"{o.over_level_s:g}s",
                     f"{s['replica_hours']:g}", day, nodes, price_basis])
    allowed = f"{budget * 100:g} % of the trace" if budget else "no time"
    head = (f"Pools compared for {workload} on trace {trace}; SLO: {basis}, {allowed} allowed over it.\n"
            "Per day: replica-hours (bound replicas: pulling, loading, serving) x (node price / replicas per node), "
            "scaled to 24 h; nodes per day: the nodes the run kept up.\n")
    return head + table(rows) + "\n" + ("\n".join(notes) + "\n" if notes else "")
