"""Rules of a workload's ``model``: the volume it reads from, a startup budget that covers its expected load and
stays within the limit, and weights that fit the GPU memory of one replica."""
import math
from typing import Optional

from gpuplatform.catalogs import server_cli
from gpuplatform.catalogs.metrics import image_version
from gpuplatform.catalogs.timeouts import STARTUP_BUDGET_MAX_SECONDS, STARTUP_SAFETY_FACTOR
from gpuplatform.components import server_args
from gpuplatform.components.config import PlatformConfig, Workload
from gpuplatform.components.errors import fmt, one_of
from gpuplatform.components.model_startup import load_estimate, stated_startup_seconds
from gpuplatform.components.pools import PoolFacts
from gpuplatform.components.validation.common import _Issues


def _check_source(p: str, w: Workload, out: _Issues) -> bool:
    """The volume ``source: volume`` reads from is one of the workload's; False when the estimate cannot be made."""
    m = w.model
    names = [v.name for v in w.volumes]
    if m.source != "volume":
        if m.volume is not None:
            out.add(f"{p}.model.volume", f"{fmt(m.volume)} is set, but source is {fmt(m.source)}; allowed: leave it "
                    "out, or source: volume")
        return True
    if m.volume is None:
        if len(names) == 1:
            return True
        detail = ("the workload has no volumes" if not names
                  else f"the workload has several volumes; allowed: {one_of(names)}")
        out.add(f"{p}.model.volume", f"required with source 'volume': {detail}")
        return False
    if m.volume not in names:
        allowed = one_of(names) if names else "none (the workload has no volumes; add one under 'volumes')"
        out.add(f"{p}.model.volume", f"{fmt(m.volume)} is not a volume of this workload; allowed: {allowed}")
        return False
    return True


def check_model(cfg: PlatformConfig, p: str, w: Workload, f: Optional[PoolFacts], out: _Issues) -> None:
    if w.model is None:
        return
    m = w.model
    if _check_source(p, w, out):
        est = load_estimate(w)
        expected = est.slowest_expected_seconds
        stated = stated_startup_seconds(w)
        if expected > STARTUP_BUDGET_MAX_SECONDS and (stated is None or stated < expected):
            out.add(f"{p}.model",
                    f"the expected load {expected:.0f}s ({est.describe()}) exceeds the {STARTUP_BUDGET_MAX_SECONDS}s "
                    "limit of a startup budget, so no budget covers it; allowed: a faster source (a volume instead "
                    "of a download), or a measured model.loadMibPerSecond")
        elif stated is not None and stated < expected:
            out.add(f"{p}.probes.startupTimeoutSeconds",
                    f"{stated} is below the expected load of {p}.model ({m.size_gib:g} GiB, source {m.source}): "
                    f"{expected:.0f}s = {est.describe()}; the kubelet would restart every replica before it loads; "
                    f"allowed: >= {expected:.0f} (the sized budget is {est.sized_budget_seconds}), or leave it out to "
                    "use the sized budget")
        elif stated is None and est.sized_budget_seconds > STARTUP_BUDGET_MAX_SECONDS:
            out.add(f"{p}.model",
                    f"the expected load {expected:.0f}s ({est.describe()}) x safety factor {STARTUP_SAFETY_FACTOR:g} "
                    f"= {est.sized_budget_seconds}s exceeds the {STARTUP_BUDGET_MAX_SECONDS}s limit of a startup "
                    "budget; allowed: a faster source (a volume instead of a download), a measured "
                    "model.loadMibPerSecond, or probes.startupTimeoutSeconds between "
                    f"{math.ceil(expected)} and {STARTUP_BUDGET_MAX_SECONDS} to accept a smaller margin")
    if f is None or any(issue.path.startswith(f"{p}.gpu") for issue in out):
        return  # the GPU request is itself wrong: its own issue says why
    have, what = weights_room(w, f)
    if m.size_gib > have:
        out.add(f"{p}.model.sizeGib",
                f"{m.size_gib:g} GiB of weights cannot fit the GPU memory one copy of the model gets in a replica on "
                f"pool {fmt(f.name)}: {what}; allowed: <= {math.floor(have * 10) / 10:g}, or more GPU memory per "
                "copy (a larger gpu.memoryGib, MIG profile or GPU, tensor parallelism over whole GPUs, a higher "
                "memory fraction)")


def memory_fraction(w: Workload, facts: Optional[server_args.ServerFacts]) -> tuple[float, str]:
    """(share of each device's memory the server takes, what sets it): ``--gpu-memory-utilization`` (vLLM, by
    default 0.9 or 0.92 by release), ``--cuda-memory-fraction`` (TGI, 1.0), ``--mem-fraction-static`` (SGLang,
    only when given: its default is derived at start from the device); 1.0 otherwise. ``facts``: the workload's
    server as components/server_args.py reads it."""
    if facts is None:
        return 1.0, ""
    s = facts.setting(server_cli.MEMORY_FRACTION)
    if s is not None and isinstance(s.value, float):
        return (s.value, s.where) if s.path or s.value != 1.0 else (1.0, "")
    if facts.server == "vllm" and not facts.config_file:
        return server_cli.vllm_memory_fraction(image_version(w.image)), "vLLM's default --gpu-memory-utilization"
    return 1.0, ""


def weights_room(w: Workload, f: PoolFacts) -> tuple[float, str]:
    """(GiB one copy of the weights may take, how that is counted): the memory of a device as the process sees it,
    times the devices one copy is split over (tensor x pipeline parallel of the server, else the replica's GPUs;
    always one on MIG and cGPU: ``devices_per_process``), times the server's memory fraction."""
    per, what = f.device_gpu_memory(w.gpu)
    devices = f.devices_per_process(w.gpu)
    facts = server_args.parse(w)
    if devices > 1 and facts is not None and facts.model_shards is not None:
        devices = min(devices, facts.model_shards)
    fraction, source = memory_fraction(w, facts)
    room = per * devices * fraction
    text = f"{devices} x {what}" if devices > 1 else what
    shown = math.floor(room * 10) / 10
    if fraction < 1.0 or source:
        text += f" x {fraction:g} ({source}) = {shown:g} GiB"
    elif devices > 1:
        text += f" = {shown:g} GiB"
    return room, text
