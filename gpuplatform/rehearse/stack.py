"""The stack a rehearsal deploys: the user's stack file, its cluster replaced by the local control plane.

A stack of cluster kind ``kubeconfig`` is deployed as it is, pointed at the rehearsal's kubeconfig. An ACK stack
cannot create its cluster or node pools here (no Alibaba Cloud API is reachable): its Kubernetes layer is deployed
to the local control plane as the stack of an existing cluster whose nodes are kwok nodes shaped like its pools,
and every setting that only ACK provides is replaced by the any-cluster equivalent the package offers. Each
replacement is returned as a note, so the report says what was not rehearsed.
"""
from __future__ import annotations

import copy
from typing import Any


KEPT_CLUSTER_KEYS = ("simulateGpus",)
"""The cluster settings a rehearsal keeps; the cluster's kind, version and kubeconfig are the rehearsal's."""


def kubernetes_minor(version: str) -> str:
    """``1.35.2-aliyun.1`` -> ``1.35``."""
    parts = str(version).split("-", 1)[0].split(".")
    return ".".join(parts[:2])


def rehearsal_namespace(raw: dict[str, Any], kubeconfig_path: str,
                        chart_packages: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """``raw`` (the stack file's ``gpu-platform`` namespace, keys without the prefix) for the local control plane at
    ``kubeconfig_path``, its charts installed from ``chart_packages`` (no chart repository is reachable here), and
    the notes on what was replaced."""
    out = copy.deepcopy(raw)
    notes: list[str] = []
    if chart_packages and not (out.get("settings") or {}).get("chartPackages"):
        out.setdefault("settings", {})["chartPackages"] = chart_packages
    cluster = dict(out.get("cluster") or {})
    kind = cluster.get("kind", "kubeconfig")
    version = kubernetes_minor(cluster.get("kubernetesVersion", ""))
    if kind != "kubeconfig":
        notes.append(f"cluster: the {kind} cluster and its node pools are not created (no Alibaba Cloud here); "
                     "the stack's Kubernetes layer is deployed to the local control plane, whose kwok nodes are "
                     "shaped like the pools and the system pool")
    kept = {k: v for k, v in cluster.items() if k in KEPT_CLUSTER_KEYS}
    out["cluster"] = {**kept, "kind": "kubeconfig", "kubernetesVersion": version, "kubeconfigPath": kubeconfig_path}
    if kind == "kubeconfig":
        return out, notes

    for i, pool in enumerate(out.get("nodePools") or []):
        sharing = (pool.get("sharing") or {}).get("mode")
        if sharing == "cgpu":
            notes.append(f"nodePools[{i}]: cGPU sharing is ACK's (ack-ai-installer): not rehearsed")
        for key in ("autoRepair", "keyPair", "imageType", "systemDisk", "dataDisks"):
            if key in pool:
                pool.pop(key)
    mon = out.setdefault("monitoring", {})
    if mon.get("backend") == "arms":
        notes.append("monitoring.backend: ACK managed Prometheus (ARMS) replaced by the self-hosted stack")
        mon["backend"] = "self-hosted"
        mon.pop("prometheusUrl", None)
    if mon.get("adapter") == "ack-alibaba-cloud-metrics-adapter" or (mon.get("backend") == "self-hosted"
                                                                     and "adapter" in mon and
                                                                     mon["adapter"] != "prometheus-adapter"):
        notes.append("monitoring.adapter: ack-alibaba-cloud-metrics-adapter replaced by prometheus-adapter")
        mon["adapter"] = "prometheus-adapter"
    if mon.get("gpuExporter") in ("ack", "ack-legacy"):
        notes.append(f"monitoring.gpuExporter: ACK's GPU exporter ({mon['gpuExporter']}) replaced by dcgm-exporter")
        mon["gpuExporter"] = "dcgm"
    for i, w in enumerate(out.get("workloads") or []):
        exposure = w.get("exposure") or {}
        if exposure.get("serviceType") == "InternalLoadBalancer":
            notes.append(f"workloads[{i}].exposure.serviceType: ACK's internal SLB replaced by ClusterIP")
            exposure["serviceType"] = "ClusterIP"
        ingress = exposure.get("ingress") or {}
        if ingress.get("controller") == "addon":
            notes.append(f"workloads[{i}].exposure.ingress.controller: ACK's nginx add-on is not installed here")
            ingress["controller"] = "external"
    return out, notes
