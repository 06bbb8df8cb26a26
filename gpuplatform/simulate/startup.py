"""Time to ready capacity, taken apart: after a load step, the replica whose readiness completed the capacity the
load needs, and where the seconds from the step to its readiness went.

The phases follow the replica's path through the simulated cluster (gpuplatform/simulate/cluster.py):

* ``scale_up_decision``: the load step to the replica's creation (metric pipeline and HPA or KEDA, and further
  scale-ups when the first one was not enough);
* ``autoscaler_scan``: the replica pending until the cluster autoscaler's scan asks for a node for it
  (``--scan-interval`` 10 s); 0 on a node that already existed;
* ``node_provisioning``: the node being bought, booted and joined (catalogs/gpus.py ``provisioning``); 0 on a node
  that was Ready before the replica;
* ``scheduling``: Ready node to the replica bound to it (the scheduler's next pass);
* ``image_pull``: bound to the container started: the image pull on the node, 0 where it is already present
  (a replica ran there, or a pre-puller pulled it: ``prePull``);
* ``model_load``: the server's start and its weights read (``serverStart`` + ``weights`` when the load is the
  estimate of ``model``, components/model_startup.py); with a Fluid weights cache, ``cache`` says whether the
  replica filled it from OSS, hit it, or waited on the replica filling it; with vLLM's compile cache on a shared
  volume, ``compile`` says whether the replica compiled (``cold``) or loaded the compiled graphs (``cached``);
* ``probe``: the wait for the startup probe's next period after loading.

A replica woken from the pool's warm set (simulate.pool ``SleepingSet``) has another path: ``scale_up_decision``,
then ``wake`` (the weights copied back from host memory, or read again at level 2, plus the wake's overhead:
``wake_parts``) and ``probe`` (the readiness probe's next pass); the phases of a cold start are 0.
"""
from __future__ import annotations

from typing import Optional

PHASES = ("scale_up_decision", "autoscaler_scan", "node_provisioning", "scheduling", "image_pull", "model_load",
          "probe")


def capacity_path(ready_pods: list, increase_at: float, setup) -> Optional[dict]:
    """The phases of the ready replica that turned ready last after ``increase_at`` (None when capacity covered the
    load without a new replica). ``setup``: the simulation's ``WorkloadSetup``."""
    pods = [p for p in ready_pods if p.created >= increase_at and p.node is not None]
    if not pods:
        return None
    pod = max(pods, key=lambda p: (p.ready_at, p.created))
    node = pod.node
    load = pod.load_s if pod.load_s is not None else setup.plan.model_load_s
    t1 = pod.created
    if pod.woken is not None:
        wake = pod.woken["seconds"]
        out = {"scale_up_decision": t1 - increase_at, **{p: 0.0 for p in PHASES[1:]}, "wake": wake,
               "probe": pod.ready_at - pod.started - wake, "total": pod.ready_at - increase_at, "new_node": False,
               "wake_parts": pod.woken}
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in out.items()}
    t2 = max(t1, node.created)
    t3 = max(t2, node.ready_at)
    t4 = max(t3, pod.bound)
    t5 = pod.started
    t6 = t5 + load
    out = {"scale_up_decision": t1 - increase_at, "autoscaler_scan": t2 - t1, "node_provisioning": t3 - t2,
           "scheduling": t4 - t3, "image_pull": t5 - t4, "model_load": float(load), "probe": pod.ready_at - t6,
           "total": pod.ready_at - increase_at, "new_node": node.created >= t1}
    est = setup.load_estimate
    if est is not None:
        out["model_load_parts"] = {"server_start": est.overhead_seconds, "weights": round(est.read_seconds, 1),
                                   "weights_mib_per_second": est.mib_per_second, "streamed": est.streamed}
        if est.cold_overhead_seconds is not None:
            out["model_load_parts"].update(
                {"compile": "cold" if pod.compiles else "cached",
                 "server_start": est.cold_overhead_seconds if pod.compiles else est.overhead_seconds})
        if est.fill_mib_per_second is not None:
            out["model_load_parts"].update(_cache_parts(pod, est, float(load), setup.plan.model_load_s))
    return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in out.items()}


def _cache_parts(pod, est, load: float, hit_load: int) -> dict:
    """The weights' part of a load with a Fluid cache: ``cache`` is ``fill`` (the replica read OSS and filled the
    cache), ``hit`` (it read the filled cache) or ``wait`` (it read the cache while another replica was still
    filling it, and finished with that replica's read)."""
    if pod.fills_cache:
        return {"cache": "fill", "weights": round(est.size_gib * 1024 / est.fill_mib_per_second, 1),
                "weights_mib_per_second": est.fill_mib_per_second}
    if load > hit_load + (est.first_overhead_seconds - est.overhead_seconds if pod.compiles else 0):
        start = est.first_overhead_seconds if pod.compiles else est.overhead_seconds
        return {"cache": "wait", "weights": round(load - start, 1)}
    return {"cache": "hit"}


def path_text(path: Optional[dict]) -> str:
    """One line: each phase with its seconds, in order."""
    if not path:
        return "no new replica was needed"
    if "wake" in path:
        w = path["wake_parts"]
        how = (f"{w['copy']:g}s copying {w['size_gib']:g} GiB back from host memory at {w['gib_per_second']:g} GiB/s"
               if w["level"] == 1 else f"{w['reload']:g}s reading the {w['size_gib']:g} GiB of weights again")
        return (f"{path['total']:.0f}s woken from the warm set (sleep level {w['level']}) = scale-up decision "
                f"{path['scale_up_decision']:.0f}s + wake {path['wake']:g}s ({how} + {w['overhead']:g}s overhead; "
                f"estimates) + readiness probe {path['probe']:g}s")
    parts = []
    for name in PHASES:
        label = name.replace("_", " ").replace("scale up", "scale-up")
        if name == "model_load" and "model_load_parts" in path:
            m = path["model_load_parts"]
            how = "streamed" if m["streamed"] else "read"
            where = {"fill": " from OSS, filling the Fluid cache", "hit": " from the Fluid cache",
                     "wait": " from the Fluid cache as another replica filled it"}.get(m.get("cache"), "")
            rate = f" at {m['weights_mib_per_second']:g} MiB/s" if m.get("cache") != "wait" else ""
            start = {"cold": " compiling the model", "cached": " with the compiled graphs cached"}.get(
                m.get("compile"), "")
            parts.append(f"{label} {path[name]:.0f}s ({m['server_start']}s server start{start} + {m['weights']:g}s "
                         f"weights {how}{where}{rate})")
        else:
            parts.append(f"{label} {path[name]:.0f}s")
    where = "a new node" if path["new_node"] else "an existing node"
    return f"{path['total']:.0f}s on {where} = " + " + ".join(parts)
