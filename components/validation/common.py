"""What the rules of every area share: the issue list they append to, the Kubernetes version of the stack and the
HPA API it implies, and the "did you mean" hint."""
import re
from typing import Callable, Optional

from gpuplatform.catalogs.gpus import close_matches
# the cluster's version and the HPA API it implies are the builders' too: they live below validation/, and the rules
# name them through this module
from gpuplatform.components.cluster_version import (HPA_API_VERSIONS, HPA_V2_MIN, K8S_VERSION,  # noqa: F401
                                                    MIN_KUBERNETES, hpa_api_version, kubernetes_version)
from gpuplatform.components.config import PlatformConfig, Workload
from gpuplatform.components.errors import ConfigIssue, fmt, one_of
from gpuplatform.components.pools import PoolFacts

HOST_LABEL = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$")
"""One label of a DNS host name (RFC 1123: letters, digits and hyphens, not at either end, 1-63 long)."""


def url_problem(value: str, schemes: tuple[str, ...] = ("http", "https")) -> Optional[str]:
    """What is wrong with ``value`` as a base URL a client connects to (None when nothing): the scheme, a host
    name or IP address, a port in 1-65535; no credentials (they would sit in the config in plain text), query or
    fragment. Parsed as clients parse it (``urllib.parse.urlsplit``), not matched by pattern."""
    import ipaddress
    from urllib.parse import urlsplit

    if any(c.isspace() for c in value):
        return "it contains white space"
    try:
        parts = urlsplit(value)
    except ValueError as exc:
        return str(exc)
    if parts.scheme not in schemes:
        return f"scheme {parts.scheme or '(none)'!r} is not {' or '.join(schemes)}"
    if parts.username is not None or parts.password is not None:
        return "it carries credentials (user:password@), which would be stored in plain text"
    host = parts.hostname or ""
    if not host:
        return "it names no host"
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if len(host) > 253 or not all(HOST_LABEL.match(label) for label in host.rstrip(".").split(".")):
            return f"host {host!r} is neither a DNS name nor an IP address"
    try:
        port = parts.port
    except ValueError:
        return f"port {parts.netloc.rsplit(':', 1)[-1]!r} is not a number in 1-65535"
    if port == 0:
        return "port 0 is not a port a server listens on; allowed: 1-65535"
    if parts.query or parts.fragment:
        return "a base URL takes no query (?...) or fragment (#...)"
    return None


def _suggest(value: str, choices) -> str:
    near = close_matches(value, choices)
    return f" Did you mean {one_of(near)}?" if near else ""


class _Issues(list):
    checked_workloads: int = 0
    """Leading workloads already validated (a composed service's predecessors on its cluster): the rules of single
    workloads skip them, and they count only where the new one is compared with them (names, hosts, capacity).
    Without it, composing N services validates N x N workloads."""
    whole_stack: bool = True
    """Every area runs on the whole stack (a stack file): a rule may judge a reference to a workload that is not
    there. A composed component validates its own part, and a service named there may come later."""

    def add(self, path: str, message: str) -> None:
        self.append(ConfigIssue(path, message))


Rule = Callable[[PlatformConfig, dict[str, PoolFacts], _Issues], None]
WorkloadRule = Callable[[PlatformConfig, str, Workload, Optional[PoolFacts], _Issues], None]
"""A rule of one workload: the config, the workload's path (``workloads[i]``), the workload, the facts of its pool
(None when the pool is unknown) and the issues so far."""


def _cluster_tier(cfg: PlatformConfig) -> str:
    c = cfg.cluster
    if c.kind == "ack-managed":
        return f"cluster.clusterSpec is {fmt(c.cluster_spec)}"
    return "cluster.professional is false (a dedicated cluster)"
