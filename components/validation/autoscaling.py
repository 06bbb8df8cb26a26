"""Rules of a workload's autoscaling: replica range, autoscaler and HPA API, behavior, metrics and their targets,
waking from zero, and scaling down at all."""
import math
import re
from typing import Optional

from gpuplatform.catalogs.kubernetes import HPA_TOLERANCE, hpa_replica_bounds, served_by
from gpuplatform.catalogs.metrics import LATENCY_OBSERVES, METRICS, histogram_p90, image_version, parse_version
from gpuplatform.components.config import PlatformConfig, Workload
from gpuplatform.components.errors import ConfigIssue, fmt, one_of
from gpuplatform.components.metric_sources import provider_for
from gpuplatform.components.model_startup import (default_keda_cooldown_seconds, default_scale_down_window_seconds,
                                                  scale_in_floor_seconds, stated_startup_seconds)
from gpuplatform.components.pools import PoolFacts
from gpuplatform.components.validation.capacity import check_replica_ceiling
from gpuplatform.components.validation.common import (HPA_API_VERSIONS, _Issues, _suggest, hpa_api_version,
                                                      kubernetes_version)


def check_autoscaling(cfg: PlatformConfig, p: str, w: Workload, f: Optional[PoolFacts], out: _Issues) -> None:
    if w.fixed:
        return  # no autoscaler: check_replicas asks for a fixed count instead
    version = kubernetes_version(cfg)
    a = w.autoscaling
    pa = f"{p}.autoscaling"
    if a.autoscaler == "hpa":
        # the same rule as the hpa-replica-bounds policy, so a plan that passes is not failed by `check`
        for kind, field, reason in hpa_replica_bounds(a.min_replicas, a.max_replicas):
            if kind == "max-below-min":
                reason = f"'minReplicas' ({a.min_replicas}) must be <= 'maxReplicas' ({a.max_replicas})"
            hint = {"below-floor": " (use autoscaler: keda to scale GPU workloads to zero)",
                    "never-scales": " (for a fixed count use autoscaler: none with replicas)"}.get(kind, "")
            out.add(f"{pa}.{field}", reason + hint)
    elif a.min_replicas > a.max_replicas:
        out.add(f"{pa}.minReplicas", f"'minReplicas' ({a.min_replicas}) must be <= 'maxReplicas' ({a.max_replicas})")
    _check_activation(cfg, pa, w, out)
    if a.autoscaler == "keda" and cfg.monitoring.backend != "self-hosted":
        out.add(f"{pa}.autoscaler", "'keda' queries Prometheus directly and needs the self-hosted backend; "
                "allowed with backend 'arms': hpa")
    api = hpa_api_version(cfg, w)
    if a.autoscaler == "hpa" and version is not None and not served_by(api, version):
        out.add(f"{pa}.hpaApiVersion", f"{fmt(api)} is not served by Kubernetes {version[0]}.{version[1]}; allowed: "
                f"{one_of(v for v in HPA_API_VERSIONS if served_by(v, version))}")
    if a.autoscaler == "keda" and a.hpa_api_version:
        out.add(f"{pa}.hpaApiVersion", f"{fmt(a.hpa_api_version)}: KEDA creates the HPA of a ScaledObject itself; "
                "remove it")
    if a.behavior is not None:
        if a.autoscaler == "hpa" and api == "autoscaling/v2beta1":
            out.add(f"{pa}.behavior", "autoscaling/v2beta1 has no behavior; allowed: remove it, or hpaApiVersion "
                    "autoscaling/v2beta2 (Kubernetes 1.12-1.25) or autoscaling/v2 (1.23+)")
        for side in ("scale_up", "scale_down"):
            rules = getattr(a.behavior, side)
            if rules is None:
                continue
            ps = f"{pa}.behavior.{'scaleUp' if side == 'scale_up' else 'scaleDown'}"
            win = rules.stabilization_window_seconds
            if win is not None and not 0 <= win <= 3600:
                out.add(f"{ps}.stabilizationWindowSeconds", f"{win} is out of range; allowed: 0..3600")
            for k, pol in enumerate(rules.policies):
                if not 1 <= pol.period_seconds <= 1800:
                    out.add(f"{ps}.policies[{k}].periodSeconds", f"{pol.period_seconds} is out of range; "
                            "allowed: 1..1800")
    check_scale_in_floor(pa, w, out)
    check_replica_ceiling(p, w, f, out)
    _check_scales_down(pa, a.metrics, out)
    sm = w.service_model
    if sm.first_token_ms is not None and sm.first_token_ms > sm.service_time_ms:
        out.add(f"{p}.serviceModel.firstTokenMs", f"'firstTokenMs' ({sm.first_token_ms:g}) must be <= 'serviceTimeMs' "
                f"({sm.service_time_ms:g}): the first token comes within the request's service")
    seen = set()
    for k, t in enumerate(a.metrics):
        pm = f"{pa}.metrics[{k}]"
        if t.target is None:
            on = [o.metric for o in w.slo.objectives] if w.slo is not None else []
            why = (f"the slo has no objective on {fmt(t.metric)} (it is on {one_of(on)})" if on
                   else "the workload states no slo to derive it from")
            unit = METRICS[t.metric].unit if t.metric in METRICS else "the metric's unit"
            out.add(f"{pm}.target", f"required: {why}; allowed: a target (in {unit}), or an slo objective on "
                    f"{fmt(t.metric)}, from whose threshold the target is then derived")
            seen.add(t.metric)
            continue
        if t.target <= 0:
            out.add(f"{pm}.target", f"{t.target} is not a positive target; allowed: > 0")
        if t.metric in seen:
            out.add(f"{pm}.metric", f"{fmt(t.metric)} is listed twice")
        seen.add(t.metric)
        before = len(out)
        if t.metric in METRICS:
            _check_target_range(pm, t.metric, t.target, METRICS[t.metric], out)
        found = check_metric_exported(cfg, pm, w, f, t.metric, out, gpu_in_contract=a.autoscaler != "none")
        if found is not None:
            _check_idle_reading(pm, w, t.metric, t.target, *found, out)
        if t.derived:
            _name_the_derivation(pm, w, t, out, before)


def _name_the_derivation(pm: str, w: Workload, t, out: _Issues, since: int) -> None:
    """A target the stack did not state: its issues say where it came from and that a stated one replaces it."""
    k, o = next((k, o) for k, o in enumerate(w.slo.objectives) if o.metric == t.metric)
    for i in range(since, len(out)):
        if out[i].path == f"{pm}.target":
            out[i] = ConfigIssue(out[i].path, f"the target derived from slo.objectives[{k}].below ({o.below:g} / "
                                 f"(1.1 x 1.25), catalogs/metrics.py slo_derived_target) is {t.target:g}: "
                                 f"{out[i].message}; or "
                                 "state a target, or a higher threshold")


def check_metric_exported(cfg: PlatformConfig, pm: str, w: Workload, f: Optional[PoolFacts], name: str,
                          out: _Issues, *, gpu_in_contract: bool = False):
    """``name`` at ``pm.metric`` is a catalog metric that this workload's server (at its image version) or GPU
    exporter serves per pod on its pool, and that its pods expose to Prometheus: the metric and its source, or
    None after reporting why not. ``gpu_in_contract``: a GPU metric the exporter lacks is left to the monitoring
    contract (components/contracts.py), which names the monitoring, for autoscaling metrics; one mistake, one
    message. An SLO's objectives (validation/slo.py) go through the same rule."""
    metric = METRICS.get(name)
    if metric is None:
        out.add(f"{pm}.metric", f"{fmt(name)} is not a catalog metric; allowed: {one_of(METRICS)}."
                f"{_suggest(name, METRICS)}")
        return None
    mode = f.mode_for(w.gpu) if f is not None else None
    if f is not None and mode not in metric.sharing_modes:
        valid = [m.name for m in METRICS.values() if mode in m.sharing_modes]
        out.add(f"{pm}.metric", f"{fmt(name)} is not meaningful on pool {fmt(f.name)} (sharing {mode}): "
                f"{_mode_reason(name, mode)}; allowed there: {one_of(valid)}")
        return None
    provider = provider_for(cfg, w, metric)
    if metric.category == "app" and provider is None:
        out.add(f"{pm}.metric", f"{fmt(name)} is an inference-server metric; set 'server' to one of "
                f"{one_of(metric.exporters)}")
        return None
    src = metric.source(provider)
    if src is None:
        if metric.category != "gpu" or not gpu_in_contract:
            # a GPU metric the exporter lacks is the monitoring contract's to report, naming the monitoring
            # (components/contracts.py): one mistake, one message
            out.add(f"{pm}.metric", f"{fmt(name)} is not available from {fmt(provider)}; it comes from "
                    f"{one_of(metric.exporters)}")
        return None
    if src.scope != "pod":
        pod_metrics = [m.name for m in METRICS.values()
                       if (s := m.source(provider)) and s.scope == "pod" and (f is None or f.mode in m.sharing_modes)]
        out.add(f"{pm}.metric", f"{fmt(name)} is served per node by the {provider} exporter "
                f"({src.api_name}), not per pod, so an HPA cannot average it over its pods; allowed: "
                f"{one_of(pod_metrics)}")
    _check_server_version(pm, w, name, src, out)
    if metric.category == "app" and not any(port.scrape_path is not None for port in w.ports):
        out.add(f"{pm}.metric", f"{fmt(name)} is scraped from the pods, but no port serves metrics: no port "
                "with protocol 'metrics' (e.g. Triton's 8002) and no serving port with 'metricsPath' (e.g. "
                "vLLM's /metrics on 8000); allowed: add either")
    return metric, src


def _check_server_version(pm: str, w: Workload, name: str, src, out: _Issues) -> None:
    """A server series that appeared (or was renamed) in some version: the image's version must export the metric
    under a name the rule reads. A digest or a tag that is no version (``latest``) is not judged. A post release
    (SGLang's ``v0.4.4.post4-cu124``) sorts after its release and is shown as the server writes it."""
    from gpuplatform.catalogs.metrics import version_text

    if src is None or not src.since:
        return
    pinned = image_version(w.image)
    if pinned is None or pinned >= parse_version(src.since):
        return
    shown = version_text(pinned)
    if src.previous_series and src.renamed_in:
        read = (f"{src.previous_series}, which {w.server} exports from version {src.since}, or its new name "
                f"{src.series} from version {src.renamed_in}")
    else:
        read = f"{src.series}, which {w.server} exports from version {src.since}"
    out.add(f"{pm}.metric", f"{fmt(name)} is read from {read}; image {fmt(w.image)} pins {shown}; allowed: an image "
            f"of {w.server} {src.since} or later, or another metric")


def idle_reading(w: Workload, name: str, metric, src) -> Optional[tuple[float, str]]:
    """What an idle replica reads on a latency p90, and why: 0.9 x the histogram's first bound however fast the
    requests (catalogs/metrics.py ``histogram_p90``), and, with a ``serviceModel`` figure the stack states, that
    figure placed in the buckets. None for a metric that is no histogram quantile."""
    if src is None or not src.buckets:
        return None
    unit = metric.unit_info
    first = src.buckets[0] / unit.scale
    idle = histogram_p90(0.0, src.buckets) / unit.scale
    why = (f"{fmt(name)} is histogram_quantile(0.9) over buckets whose first bound is {first:g} {metric.unit}, so "
           f"however fast the requests it reads at least {idle:g} {metric.unit}")
    sm = w.service_model
    observed = LATENCY_OBSERVES.get(name)
    stated = {"first_token": ("first_token_ms", "firstTokenMs"), "request": ("service_time_ms", "serviceTimeMs")}
    if observed in stated and stated[observed][0] in sm.model_fields_set:
        field, key = stated[observed]
        ms = getattr(sm, field)
        reading = histogram_p90(ms / 1000.0, src.buckets) / unit.scale
        if reading > idle:
            idle = reading
            why = (f"an idle replica reads {reading:g} {metric.unit} (serviceModel.{key} {ms:g} ms placed in the "
                   f"histogram's buckets, p90 interpolated as Prometheus does)")
    return idle, why


def _check_idle_reading(pm: str, w: Workload, name: str, target: float, metric, src, out: _Issues) -> None:
    """A latency p90 never reads below what an idle replica reads (:func:`idle_reading`). A target the HPA must
    see exceeded by less than its tolerance at that reading keeps adding replicas up to ``maxReplicas`` and never
    scales down."""
    found = idle_reading(w, name, metric, src)
    if found is None or target <= 0:
        return
    idle, why = found
    least = idle / (1 + HPA_TOLERANCE)
    if target < least:
        out.add(f"{pm}.target", f"{target:g} {metric.unit} can never be met: {why}, and the HPA adds replicas while "
                f"the reading is more than {HPA_TOLERANCE:.0%} above the target, so the workload would sit at "
                f"maxReplicas; allowed: >= {math.ceil(least * 1000) / 1000:g} ({metric.unit_info.description})")


def check_scale_in_floor(pa: str, w: Workload, out: _Issues) -> None:
    """The startup budget is the floor of the scale-down stabilization window and of KEDA's ``cooldownPeriod``
    (model_startup.scale_in_floor_seconds): the window only delays the HPA's scale-down, and when it comes the
    ReplicaSet deletes not-ready pods first (kubernetes ``pkg/controller/replicaset``, ``getPodsToDelete``), so a
    shorter window removes exactly the replicas still loading; a shorter cooldown takes a woken workload back to zero
    before its first replica could serve. A window the stack leaves unset is raised to the floor, never refused."""
    a = w.autoscaling
    floor = scale_in_floor_seconds(w)
    why = (f"the floor is the startup budget, {floor}s ({_budget_basis(w)}): a replica may take that long to load")
    rules = a.behavior.scale_down if a.behavior is not None else None
    win = rules.stabilization_window_seconds if rules is not None else None
    if win is not None and 0 <= win < floor:
        out.add(f"{pa}.behavior.scaleDown.stabilizationWindowSeconds",
                f"{win}s is shorter than the scale-in floor; {why}, and when the window lets the HPA scale down, "
                f"the ReplicaSet removes not-ready (loading) pods first, so the replicas a burst started would be "
                f"deleted before they serve; allowed: >= {floor}, or leave it unset (default "
                f"{default_scale_down_window_seconds(w)}s)")
    cool = a.cooldown_period_seconds
    if cool is None:
        return
    if a.autoscaler != "keda":
        out.add(f"{pa}.cooldownPeriodSeconds", "KEDA's cooldownPeriod; only used with autoscaler 'keda' (an HPA "
                "scales down by behavior.scaleDown)")
    elif a.min_replicas == 0 and cool < floor:
        out.add(f"{pa}.cooldownPeriodSeconds", f"{cool}s is shorter than the scale-in floor; {why}, and KEDA "
                f"scales to zero once no trigger was active for cooldownPeriod, removing a replica a short burst "
                f"woke before it ever serves; allowed: >= {floor}, or leave it unset (default "
                f"{default_keda_cooldown_seconds(w)}s)")


def _budget_basis(w: Workload) -> str:
    """Where the startup budget comes from, for a message."""
    if stated_startup_seconds(w) is not None:
        return "probes.startupTimeoutSeconds"
    if w.model is not None:
        return "sized from model"
    return "the default without model or probes.startupTimeoutSeconds"


def _check_activation(cfg: PlatformConfig, pa: str, w: Workload, out: _Issues) -> None:
    """At zero replicas KEDA decides 0 -> 1 from its triggers' activation alone (KEDA docs, "Scaling Deployments":
    activation phase). A trigger on the workload's own pods returns nothing then (ignoreNullValues reads it as 0),
    so scale to zero needs a trigger whose series exists without the pods."""
    a = w.autoscaling
    act = a.activation
    if a.autoscaler == "keda" and a.min_replicas == 0 and act is None:
        own = ", ".join(fmt(t.metric) for t in a.metrics)
        out.add(f"{pa}.minReplicas", f"0 would never wake up: {own} come from the workload's own pods, which do not "
                "exist at zero replicas, so KEDA never activates; allowed: >= 1, or add 'activation' (source "
                "'ingress': requests at the ingress controller, or 'prometheus': a series of another job such as a "
                "queue length)")
    if act is None:
        return
    if a.autoscaler != "keda" or a.min_replicas != 0:
        out.add(f"{pa}.activation", "only used to wake a KEDA workload from zero; allowed with autoscaler 'keda' "
                "and minReplicas 0")
    if act.source == "ingress":
        ing = w.exposure.ingress
        if ing is None or ing.class_name != "nginx":
            out.add(f"{pa}.activation.source", "'ingress' counts requests at the ingress-nginx controller, but the "
                    "workload has no nginx ingress; allowed: add exposure.ingress (className nginx), or source "
                    "'prometheus'")
        if act.query is not None:
            out.add(f"{pa}.activation.query", "only used with source 'prometheus'; the ingress query is generated")
    else:
        if not act.query:
            out.add(f"{pa}.activation.query", "required with source 'prometheus': PromQL over series of another "
                    "job, e.g. a queue length")
            return
        series = {n for m in METRICS.values() for s in m.sources for n in s.names}
        own = sorted(series & set(re.findall(r"[A-Za-z_:][\w:]*", act.query)))
        if own:
            out.add(f"{pa}.activation.query", f"{fmt(act.query)} reads {one_of(own)}, which the workload's pods "
                    "or their GPUs report and which does not exist at zero replicas; allowed: a series of another "
                    "job (ingress controller, queue exporter)")


def _check_scales_down(pa: str, targets, out: _Issues) -> None:
    """GPU memory does not fall when load falls (servers pre-allocate it and keep it: GKE's inference autoscaling
    guidance names TGI and vLLM), so an autoscaler on memory alone never scales down; next to a metric that does
    fall, the HPA takes the larger recommendation and memory only adds replicas (kubernetes.io, "Horizontal Pod
    Autoscaling", scaling on multiple metrics)."""
    metrics = [METRICS.get(t.metric) for t in targets]
    if not metrics or any(m is None for m in metrics) or any(m.scale_down_reliable for m in metrics):
        return
    falls = [name for name, m in METRICS.items() if m.scale_down_reliable]
    names = ", ".join(fmt(t.metric) for t in targets)
    out.add(f"{pa}.metrics", f"{names} only measure GPU memory, which inference servers pre-allocate and keep, so "
            f"the workload would never scale down; allowed: add a metric that falls with load ({one_of(falls)}) "
            "and keep memory as a scale-up signal")


def _check_target_range(pm: str, name: str, target: float, metric, out: _Issues) -> None:
    """A target is in the metric's unit; it must be a value the metric can exceed by more than the HPA's
    tolerance, and a quantity Kubernetes can hold (milli precision)."""
    if target <= 0:
        return
    unit = metric.unit_info
    if unit.maximum is not None:
        ceiling = math.floor(unit.maximum / (1 + HPA_TOLERANCE) * 1000) / 1000
        if target > ceiling:
            # a percentage written for a ratio (80 for 0.8); a ratio just over the ceiling is no unit mistake
            hint = f"; a ratio is 0-1: did you mean {target / 100:g}?" if metric.unit == "ratio" and 1 < target <= 100 \
                else ""
            out.add(f"{pm}.target", f"{target:g} can never be exceeded enough to scale up: {fmt(name)} is "
                    f"{unit.description} and never passes {unit.maximum:g}, and the HPA acts only when the value is "
                    f"more than {HPA_TOLERANCE:.0%} above its target (kube-controller-manager "
                    f"--horizontal-pod-autoscaler-tolerance); allowed: > 0 and <= {ceiling:g}{hint}")
            return
    if abs(target * 1000 - round(target * 1000)) > 1e-6:
        out.add(f"{pm}.target", f"{target:g} has more precision than a Kubernetes quantity keeps; allowed: a "
                f"multiple of 0.001 (in {unit.description})")


def _mode_reason(metric: str, mode: str) -> str:
    if mode == "mig" and metric in ("gpu_util", "gpu_fb_used", "gpu_mem_used_ratio"):
        return "DCGM does not report whole-GPU utilization/memory for MIG instances (use gpu_engine_active)"
    if mode == "cgpu":
        return "device-level values describe the whole shared card, not one pod"
    return "the exporter reports no per-pod value in this mode"
