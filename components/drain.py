"""The drain chain of one workload: how long its pods keep serving after they are marked terminating, what its
server does with the requests in flight on SIGTERM, and the grace period that must cover both (catalogs/drain.py
holds the facts; docs/drain.md the why).

Pure functions of the workload and the cluster's Kubernetes version, read by the Deployment builder
(components/workload_manifests.py), by validation (every mistake of the chain at once), by ``plan`` (the chain per
workload) and by the simulator (whether a scale-in loses the requests in flight on the replica it removes).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

from gpuplatform.catalogs import drain as cat
from gpuplatform.catalogs.metrics import image_version, version_text
from gpuplatform.components.config import Workload
from gpuplatform.components.errors import ConfigIssue


@dataclass(frozen=True)
class DrainChain:
    """What a workload's pods do when they are terminated."""
    enabled: bool
    server: Optional[str]
    longest_request_s: int
    """The longest request the workload serves."""
    longest_basis: str
    pre_stop_s: int
    """The preStop wait before SIGTERM (0: no hook)."""
    routing: cat.Propagation
    """Whom the preStop wait waits for: kube-proxy, or the Ingress controller the workload uses."""
    server_drain_s: float
    """Seconds the server keeps serving its requests in flight after SIGTERM: 0 when it aborts them, ``inf`` when
    it waits with no bound of its own (the grace period then bounds it)."""
    added_args: tuple[str, ...] = ()
    """Flags the container's args get (the server's drain flag, when the stack's own args do not set it)."""
    grace_s: int = cat.KUBERNETES_DEFAULT_GRACE_SECONDS
    """The pod's ``terminationGracePeriodSeconds``."""
    grace_stated: bool = False
    notes: tuple[str, ...] = ()
    """Why the chain is weaker than the workload needs (a server release that aborts on SIGTERM), for ``plan``."""
    issues: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    """(path under the workload, message) of each mistake of the stack's drain settings."""

    @property
    def drains(self) -> bool:
        """The server keeps serving its requests in flight after SIGTERM, for as long as the longest one needs."""
        return self.server_drain_s >= self.longest_request_s

    @property
    def needed_s(self) -> float:
        """What the grace period must cover: the preStop wait and the drain (bounded by the longest request)."""
        return self.pre_stop_s + min(self.server_drain_s, self.longest_request_s)

    @property
    def holds(self) -> bool:
        """``terminationGracePeriodSeconds >= preStop wait + drain`` (vllm-project/vllm PR #43208)."""
        return self.grace_s >= self.needed_s

    @property
    def lossless(self) -> bool:
        """No request is lost when a pod of this workload is terminated: routing stops before SIGTERM, the server
        finishes its longest request, and the kubelet does not kill it first."""
        return (self.enabled and self.pre_stop_s >= self.routing.seconds and self.drains and self.holds)

    def summary(self) -> str:
        if not self.enabled:
            return (f"no drain (drain.enabled: false): {cat.KUBERNETES_DEFAULT_GRACE_SECONDS} s grace, no preStop; "
                    "requests in flight on a removed replica are lost")
        drain = ("(none named: its SIGTERM handling is its own) gets up to "
                 f"{fmt_s(min(self.server_drain_s, self.longest_request_s))}" if self.server is None else
                 "aborts its requests on SIGTERM" if self.server_drain_s <= 0 else
                 f"drains up to {fmt_s(min(self.server_drain_s, self.longest_request_s))}")
        flag = f" ({' '.join(self.added_args)})" if self.added_args else ""
        return (f"preStop {self.pre_stop_s} s for {self.routing.who}, server {drain}{flag}, grace {self.grace_s} s "
                f"(longest request {self.longest_request_s} s: {self.longest_basis})"
                + ("" if self.lossless else "; LOSES requests at scale-in"))


def fmt_s(seconds: float) -> str:
    return "no limit" if math.isinf(seconds) else f"{int(seconds)} s"


def routing_of(w: Workload) -> cat.Propagation:
    ing = w.exposure.ingress
    return cat.propagation(ing.class_name if ing is not None else None)


def longest_request(w: Workload) -> tuple[int, str]:
    """(seconds, basis) of the longest request: stated, from the token limit on the command line, else the
    server's default (catalogs/drain.py)."""
    stated = w.drain.max_request_seconds
    if stated is not None:
        return stated, "drain.maxRequestSeconds"
    words = list(w.command) + list(w.args)
    tokens = cat.token_limit(w.server, words, dict(w.env))
    if tokens:
        flag = cat.TOKEN_LIMIT_FLAGS[w.server][0]
        return (cat.seconds_for_tokens(tokens),
                f"{flag} {tokens} tokens x {cat.DECODE_SECONDS_PER_TOKEN * 1000:g} ms/token, an estimate")
    if w.server in cat.DEFAULT_MAX_REQUEST_SECONDS:
        return cat.DEFAULT_MAX_REQUEST_SECONDS[w.server], f"the {w.server} default (catalogs/drain.py)"
    return cat.GENERIC_MAX_REQUEST_SECONDS, "no server named: the Kubernetes default grace period"


def _shell(w: Workload) -> bool:
    head = [c.rsplit("/", 1)[-1] for c in w.command[:1]]
    return bool(head) and head[0] in ("sh", "bash") and "-c" in (list(w.command) + list(w.args))


def drain_chain(w: Workload, kubernetes_version: Optional[tuple[int, int]] = None) -> DrainChain:
    """The chain the workload's Deployment renders (with ``drain.enabled: false``, the pod's at Kubernetes'
    defaults, which ``simulate --no-drain`` charges)."""
    d = w.drain
    on = d.enabled
    routing = routing_of(w)
    longest, basis = longest_request(w)
    if not on:
        return DrainChain(False, w.server, longest, basis, 0, routing, _server_drain_unset(w),
                          grace_s=cat.KUBERNETES_DEFAULT_GRACE_SECONDS)
    issues: list[tuple[str, str]] = []
    notes: list[str] = []
    pre_stop = d.pre_stop_seconds if d.pre_stop_seconds is not None else routing.seconds
    added: list[str] = []
    lag = 0
    spec = cat.SERVER_DRAINS.get(w.server or "")
    if spec is None:
        server_drain = float(longest)  # the application's own SIGTERM handling: the grace period is all we set
    else:
        lag = spec.exit_lag_seconds
        version = image_version(w.image)
        given = cat.drain_seconds_given(spec.server, list(w.command) + list(w.args))
        if not spec.drains(version):
            server_drain = 0.0
            why = (f"{w.image} runs {spec.server} {version_text(version)}, whose SIGTERM aborts every request in "
                   f"flight: {spec.server} drains from {spec.since_text} ({spec.flag}; {spec.source.split(';')[0]})")
            if d.max_request_seconds is not None:
                issues.append(("image", f"{why}; allowed: {spec.since_text} or later, or drain.enabled: false to "
                                        "accept losing the requests in flight at scale-in"))
            else:
                notes.append(why)
        elif spec.flag is not None and given is not None:
            server_drain = float(given)
            if d.max_request_seconds is not None and given < d.max_request_seconds:
                issues.append(("args", f"'{spec.flag}' ({given}) must be >= 'drain.maxRequestSeconds' "
                                       f"({d.max_request_seconds}): the server would abort the longest request"))
        elif spec.flag is not None:
            if _shell(w):
                why = (f"the command line is a shell script, so {spec.flag} cannot be added to it and "
                       f"{spec.server} keeps its default ({spec.default_seconds} s)")
                if d.max_request_seconds is not None:
                    issues.append(("command", f"{why}; allowed: write {spec.flag}={longest} into the script, or "
                                              "run the server without a shell"))
                else:
                    notes.append(f"{why}: write {spec.flag}={longest} into the script")
                server_drain = float(spec.default_seconds or 0)
            else:
                added.append(f"{spec.flag}={longest}")
                server_drain = float(longest)
        else:
            server_drain = cat.effective_drain_seconds(spec.server, version, None)
            if spec.ceiling_seconds is not None and longest > spec.ceiling_seconds:
                msg = (f"{longest} s: {spec.server} drains at most {spec.ceiling_seconds} s whatever its flags "
                       f"({spec.source.split(';')[0]})")
                if d.max_request_seconds is not None:
                    issues.append(("drain.maxRequestSeconds", f"{msg}; allowed: <= {spec.ceiling_seconds}"))
                else:
                    notes.append(msg)
    bounded = min(server_drain, float(longest))
    needed = pre_stop + bounded
    grace_default = int(math.ceil(needed)) + cat.EXIT_MARGIN_SECONDS + lag
    grace = d.termination_grace_period_seconds if d.termination_grace_period_seconds is not None else grace_default
    if d.termination_grace_period_seconds is not None and grace < needed:
        issues.append(("drain.terminationGracePeriodSeconds",
                       f"'drain.terminationGracePeriodSeconds' ({grace}) must be >= the preStop wait ({pre_stop}) + "
                       f"the server's drain ({fmt_s(bounded)}) = {int(math.ceil(needed))}: the kubelet would kill "
                       "the server while it still serves"))
    if d.pre_stop_seconds is not None and d.pre_stop_seconds < routing.seconds:
        notes.append(f"drain.preStopSeconds {d.pre_stop_seconds} is under the {routing.seconds} s {routing.who} may "
                     "take to stop routing to a terminating pod: requests that arrive meanwhile are refused")
    return DrainChain(True, w.server, longest, basis, pre_stop, routing, server_drain, tuple(added), grace,
                      d.termination_grace_period_seconds is not None, tuple(notes), tuple(issues))


def _server_drain_unset(w: Workload) -> float:
    """What a server does on SIGTERM with no drain set: its default (vLLM aborts, Triton waits 30 s, SGLang until
    its requests are done, TGI up to 90 s); 0 for a workload that names no server (nothing is known of it)."""
    if w.server not in cat.SERVER_DRAINS:
        return 0.0
    given = cat.drain_seconds_given(w.server, list(w.command) + list(w.args))
    return cat.effective_drain_seconds(w.server, image_version(w.image), given)


def drain_window_s(chain: DrainChain) -> float:
    """Seconds a terminated pod's server keeps finishing its requests in flight after SIGTERM before it stops or is
    killed: its own drain, cut by what the grace period leaves after the preStop wait."""
    return max(0.0, min(chain.server_drain_s, chain.grace_s - chain.pre_stop_s))


def container_lifecycle(chain: DrainChain, kubernetes_version: Optional[tuple[int, int]]) -> Optional[dict]:
    """The container's ``lifecycle``: the preStop wait, native ``sleep`` where the cluster has it."""
    if not chain.enabled:
        return None
    return cat.pre_stop_hook(chain.pre_stop_s, kubernetes_version)


# ------------------------------------------------------------------------------------------ the node side
CLUSTER_AUTOSCALER_MAX_GRACEFUL_TERMINATION_DEFAULT = 600
"""cluster-autoscaler's ``--max-graceful-termination-sec`` default (kubernetes/autoscaler cluster-autoscaler FAQ,
"What are the parameters to CA?": 600); what ACK's managed autoscaler defaults to is not verified here."""


def autoscaler_grace_issues(setting_path: str, max_graceful_termination_sec: int,
                            grace_periods: Iterable[tuple[str, int]]) -> list[ConfigIssue]:
    """The cluster autoscaler waits at most ``max_graceful_termination_sec`` for a pod it evicts from a node it
    removes, then kills it, whatever the pod's ``terminationGracePeriodSeconds`` (kubernetes/autoscaler FAQ: "it
    waits for ... max-graceful-termination-sec"); so a node scale-down cuts every drain longer than it.
    ``grace_periods``: (config path, grace period) of every workload on the pools it scales down.

    Run by validation on the ACK autoscaling config (``cluster.nodeAutoscaling.maxGracefulTerminationSec``, sent as
    ``cs.AutoscalingConfig``'s ``max_graceful_termination_sec``), before any resource is registered."""
    out = []
    for path, grace in grace_periods:
        if grace > max_graceful_termination_sec:
            out.append(ConfigIssue(setting_path,
                                   f"'maxGracefulTerminationSec' ({max_graceful_termination_sec}) must be >= the "
                                   f"grace period of {path} ({grace} s): a node scale-down would kill its pods while "
                                   "they still drain"))
    return out


def pool_grace_periods(workloads: Sequence[Workload], pools: Iterable[str],
                       kubernetes_version: Optional[tuple[int, int]] = None) -> list[tuple[str, int]]:
    """(``workloads[i].drain``, grace period) of every workload on ``pools``."""
    wanted = set(pools)
    return [(f"workloads[{i}].drain", drain_chain(w, kubernetes_version).grace_s)
            for i, w in enumerate(workloads) if w.node_pool in wanted]


# ------------------------------------------------------------------------------------------ rollouts
@dataclass(frozen=True)
class Rollout:
    strategy: dict
    surge: bool
    why: str


def rollout_strategy(w: Workload, replicas_that_fit: Optional[int]) -> Rollout:
    """How an image or config change replaces the replicas while they keep serving: ``maxSurge: 1,
    maxUnavailable: 0``. The new replica starts (and loads its model) before an old one is stopped, and the old one
    then drains (the drain chain: no request lost), so serving capacity never drops below the replicas running.

    The surge replica needs one more replica's GPUs. On a pool that holds one more replica than the workload's
    ``maxReplicas`` (``replicas_that_fit``, the pool at its most nodes), the cluster autoscaler adds a node for it
    when no GPU is free. On a pool that cannot, a rollout that starts while the workload runs at ``maxReplicas``
    has no GPU for it: the surge pod stays Pending, every old replica keeps serving, and the rollout waits until a
    scale-in frees a GPU (Pulumi's wait for the Deployment fails after its timeout meanwhile, and the Deployment
    reports ProgressDeadlineExceeded; nothing is lost). Trading a replica of capacity for progress instead
    (``maxUnavailable: 1``) is not done: on a GPU pool a replica takes minutes to come back."""
    top = w.replica_ceiling + w.warm_replicas
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    if replicas_that_fit is None or replicas_that_fit > top:
        return Rollout(strategy, True, "surge: a new replica starts before an old one drains")
    return Rollout(strategy, False,
                   f"the pool holds {replicas_that_fit} replicas at most and the workload runs up to {top}, so at "
                   "that count no GPU is left for the surge replica: the rollout then waits, every old replica "
                   "serving, until a scale-in frees a GPU (the Deployment reports ProgressDeadlineExceeded and "
                   f"Pulumi's wait fails after its timeout meanwhile); raise the pool's maxNodes for a surge GPU")


def drain_warnings(cfg) -> list[str]:
    """``plan``'s warnings: workloads whose pods lose requests when terminated, and rollouts without a surge GPU."""
    from gpuplatform.components.pools import all_pool_facts
    from gpuplatform.components.validation.common import kubernetes_version

    version = kubernetes_version(cfg)
    facts = all_pool_facts(cfg)
    out = []
    for i, w in enumerate(cfg.workloads):
        chain = drain_chain(w, version)
        if not chain.enabled:
            out.append(f"WARNING: workloads[{i}].drain.enabled is false: a scale-in, rollout or node scale-down loses "
                       f"the requests in flight on the pods it stops ({w.name})")
        for note in chain.notes:
            out.append(f"WARNING: workloads[{i}] ({w.name}) loses requests at scale-in: {note}")
        f = facts.get(w.node_pool)
        rollout = rollout_strategy(w, f.max_replicas(w.gpu) if f is not None else None)
        if not rollout.surge:
            out.append(f"NOTE: workloads[{i}] ({w.name}) may roll out without a free GPU: {rollout.why}")
    return out
