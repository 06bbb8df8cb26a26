"""Rules of a workload's NetworkPolicy: the callers it lets in name a namespace, labels and ports that exist."""
from typing import Optional

from gpuplatform.components.config import EVERY_NAMESPACE, PlatformConfig, Workload
from gpuplatform.components.errors import fmt, one_of
from gpuplatform.components.k8s_validity import dns_label, label_key, label_value
from gpuplatform.components.pools import PoolFacts
from gpuplatform.components.validation.common import _Issues

def check_network_policy(cfg: PlatformConfig, p: str, w: Workload, f: Optional[PoolFacts], out: _Issues) -> None:
    names = [port.name for port in w.ports]
    for k, caller in enumerate(w.network_policy.allow_from):
        pc = f"{p}.networkPolicy.allowFrom[{k}]"
        ns = caller.namespace
        if ns is not None and ns != EVERY_NAMESPACE:
            problem = dns_label(ns, "namespace")
            if problem:
                out.add(f"{pc}.namespace", f"{problem}, or '{EVERY_NAMESPACE}' for every namespace")
        for key, value in caller.pod_labels.items():
            problem = label_key(key) or label_value(value)
            if problem:
                out.add(f"{pc}.podLabels", problem)
        for j, name in enumerate(caller.ports):
            if name not in names:
                out.add(f"{pc}.ports[{j}]", f"{fmt(name)} is not a port of the workload; allowed: {one_of(names)}")
