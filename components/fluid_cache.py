"""A workload's weights in OSS behind a Fluid dataset cache (``volumes[].fluid``): ACK's ``ack-fluid`` with
JindoRuntime, the runtime ACK documents for OSS data that pods load at start (alibabacloud.com/help/en/doc-detail/
440265.html).

Fluid (fluid-cloudnative/fluid, api/v1alpha1 ``dataset_types.go``, ``jindoruntime_types.go``) turns a ``Dataset``
(where the data is) and a runtime of the same name (the cache: a master, cache workers, and a FUSE client on every
node that mounts the data) into a PersistentVolumeClaim of the Dataset's name in its namespace. Its FUSE pods run
privileged with hostPath mounts (charts/jindocache templates/fuse/daemonset.yaml), which the restricted namespace of
the workload refuses. So the cache lives in a namespace of its own (``<workload>-fluid``, Pod Security
``privileged``, holding only Fluid's pods and the OSS Secret), and the workload's namespace gets a *referencing*
Dataset (``mountPoint: dataset://<namespace>/<name>``), whose PVC the replicas mount read-only: the pods of the
workload stay restricted (Fluid docs/en/samples/dataset_across_namespace_with_csi.md: the referenced Dataset's PVC
reads the physical Dataset's cache through the CSI plugin).

Placement: the cache workers run on the workload's pool (its nodeSelector and tolerations), so a replica reads the
blocks from a worker on its own node or its pool's; the FUSE client gets the pool's tolerations, as it must run on
every node a replica mounts the volume on. The cache tier is an emptyDir (``MEM``: ``medium: Memory`` at
``/dev/shm``; ``SSD``: the node's disk), never a hostPath: the cache lives as long as the worker, which outlives the
replicas. The OSS AccessKey pair is read from a Secret by reference (``encryptOptions``), never written here.
"""
from __future__ import annotations

from gpuplatform.catalogs.network import PLATFORM_PART_OF
from gpuplatform.components.config import Volume, Workload
from gpuplatform.components.k8s_objects import namespace

FLUID_API_VERSION = "data.fluid.io/v1alpha1"
CACHE_HIGH_WATERMARK = "0.99"
CACHE_LOW_WATERMARK = "0.95"
"""Eviction watermarks of the cache tier (JindoRuntime ``tieredstore.levels[].high/low``): the weights are the only
data, sized to fit the quota (validation), so eviction starts only when the tier is all but full."""
TIER_PATH = {"MEM": "/dev/shm", "SSD": "/var/cache/fluid"}
"""The tier's path inside the cache worker; the emptyDir is mounted there."""


def cache_namespace(w: Workload) -> str:
    """The namespace of the cache (the physical Dataset, the JindoRuntime and Fluid's pods)."""
    return f"{w.name}-fluid"


def dataset_name(w: Workload, v: Volume) -> str:
    """Name of both Datasets and of the runtime; Fluid names the PVC after the Dataset."""
    return f"{w.name}-{v.name}"


def claim_name(w: Workload, v: Volume) -> str:
    """The PersistentVolumeClaim Fluid creates for the referencing Dataset in the workload's namespace."""
    return dataset_name(w, v)


def _labels(w: Workload) -> dict:
    return {"app.kubernetes.io/name": w.name, "app.kubernetes.io/part-of": PLATFORM_PART_OF,
            "app.kubernetes.io/managed-by": "pulumi", "app.kubernetes.io/component": "weights-cache"}


def _tier(v: Volume) -> dict:
    f = v.fluid
    empty_dir = {"medium": "Memory"} if f.cache_medium == "MEM" else {}
    return {"mediumtype": f.cache_medium, "volumeType": "emptyDir", "volumeSource": {"emptyDir": empty_dir},
            "path": TIER_PATH[f.cache_medium], "quota": f"{f.cache_quota_gib:g}Gi",
            "high": CACHE_HIGH_WATERMARK, "low": CACHE_LOW_WATERMARK}


def fluid_objects(w: Workload, ctx) -> list[dict]:
    """Per ``fluid`` volume of the workload: the cache's namespace, the Dataset reading OSS and its JindoRuntime
    there, and the referencing Dataset in the workload's namespace. ``ctx``: the workload's ``WorkloadContext``."""
    out = []
    for v in w.volumes:
        if v.fluid is None:
            continue
        f, ns, name = v.fluid, cache_namespace(w), dataset_name(w, v)
        labels = _labels(w)
        creds = f.credentials
        encrypt = [{"name": option, "valueFrom": {"secretKeyRef": {"name": creds.secret_name, "key": key}}}
                   for option, key in (("fs.oss.accessKeyId", creds.access_key_id_key),
                                       ("fs.oss.accessKeySecret", creds.access_key_secret_key))]
        if not out:
            ns_obj = namespace(ns, "privileged")
            ns_obj["metadata"]["labels"].update(labels)
            out.append(ns_obj)
        placement = {"nodeSelector": dict(ctx.pool.node_selector), "tolerations": ctx.pool.tolerations}
        out.append({"apiVersion": FLUID_API_VERSION, "kind": "Dataset",
                    "metadata": {"name": name, "namespace": ns, "labels": labels},
                    "spec": {"mounts": [{"mountPoint": f.mount_point, "name": v.name, "path": "/",
                                         "options": {"fs.oss.endpoint": f.endpoint},
                                         "encryptOptions": encrypt}],
                             "accessModes": ["ReadOnlyMany"]}})
        out.append({"apiVersion": FLUID_API_VERSION, "kind": "JindoRuntime",
                    "metadata": {"name": name, "namespace": ns, "labels": labels},
                    "spec": {"replicas": f.cache_workers,
                             "tieredstore": {"levels": [_tier(v)]},
                             "worker": placement,
                             "fuse": {"tolerations": ctx.pool.tolerations}}})
        out.append({"apiVersion": FLUID_API_VERSION, "kind": "Dataset",
                    "metadata": {"name": claim_name(w, v), "namespace": ctx.namespace, "labels": labels},
                    "spec": {"mounts": [{"mountPoint": f"dataset://{ns}/{name}", "name": v.name, "path": "/"}]}})
    return out
