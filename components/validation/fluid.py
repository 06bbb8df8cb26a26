"""Rules of a Fluid weights cache (``volumes[].fluid``, components/fluid_cache.py): an OSS directory, a read-only
mount, a cache that holds the weights, cache workers on nodes that exist, and a memory tier that fits the node
beside the replicas."""
import math
import re
from typing import Optional

from gpuplatform.components.config import PlatformConfig, Workload
from gpuplatform.components.errors import fmt
from gpuplatform.components.model_startup import model_volume
from gpuplatform.components.pools import PoolFacts, _amount
from gpuplatform.components.validation.common import _Issues

OSS_MOUNT_POINT = re.compile(r"^oss://[a-z0-9][a-z0-9-]{1,61}[a-z0-9](/.*)?$")
"""``oss://<bucket>[/path]``: a bucket name is 3-63 lowercase letters, digits and hyphens, starting and ending with a
letter or digit (Alibaba OSS "Bucket naming conventions")."""


def check_fluid_volumes(cfg: PlatformConfig, p: str, w: Workload, f: Optional[PoolFacts], out: _Issues) -> None:
    if cfg.cloud.tier_lacks("fluid") and any(v.fluid is not None for v in w.volumes):
        j = next(j for j, v in enumerate(w.volumes) if v.fluid is not None)
        out.add(f"{p}.volumes[{j}].fluid", "ack-fluid, which serves it, runs on ACK Pro clusters only (ACK "
                "'ack-fluid' overview); allowed: a pvc or nfs volume, or an ACK Pro cluster")
    weights = model_volume(w)
    pool = cfg.pool(w.node_pool)
    for j, v in enumerate(w.volumes):
        c = v.fluid
        if c is None:
            continue
        pv = f"{p}.volumes[{j}]"
        if not v.read_only:
            out.add(f"{pv}.readOnly", "false: a Fluid dataset cache serves the weights read-only (its PVC is "
                    "ReadOnlyMany); allowed: true, or leave it out")
        if not OSS_MOUNT_POINT.match(c.mount_point):
            out.add(f"{pv}.fluid.mountPoint", f"{fmt(c.mount_point)} is not an OSS directory; allowed: "
                    "oss://<bucket>/<path>, e.g. oss://models/qwen2.5-7b-instruct")
        total = c.cache_quota_gib * c.cache_workers
        if weights is v and w.model is not None and total < w.model.size_gib:
            need = math.ceil(w.model.size_gib / c.cache_workers * 10) / 10
            out.add(f"{pv}.fluid.cacheQuotaGib",
                    f"{c.cache_quota_gib:g} GiB x {c.cache_workers} cache worker(s) = {total:g} GiB cannot hold the "
                    f"{w.model.size_gib:g} GiB of weights (model.sizeGib): every load would read OSS again; "
                    f"allowed: >= {need:g}, or more cacheWorkers")
        kept = (pool.min_nodes if pool.autoscaling else (pool.desired_nodes or 0)) if pool is not None else None
        if kept is not None and c.cache_workers > kept:
            what = "minNodes" if pool.autoscaling else "desiredNodes"
            out.add(f"{pv}.fluid.cacheWorkers",
                    f"{c.cache_workers}: the cache workers run on pool {fmt(pool.name)}, one per node, which keeps "
                    f"{kept} node(s) at all times ({what}); a worker beyond them waits for a node and makes the "
                    f"cluster autoscaler add a GPU node for it; allowed: <= {kept}, or raise the pool's {what}")
        if c.cache_medium == "MEM" and f is not None and f.allocatable_memory_bytes is not None:
            room = (f.allocatable_memory_bytes - _amount(w.resources.memory)) / 2 ** 30
            if c.cache_quota_gib > room:
                out.add(f"{pv}.fluid.cacheQuotaGib",
                        f"{c.cache_quota_gib:g} GiB of MEM cache does not fit a node of pool {fmt(f.name)} beside a "
                        f"replica ({w.resources.memory} of the {f.allocatable_memory_bytes / 2 ** 30:.1f} GiB it "
                        f"offers pods); allowed: <= {max(math.floor(room * 10) / 10, 0):g}, or cacheMedium: SSD")
