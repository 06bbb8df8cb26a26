"""Rules of a workload's exposure: service type for the cluster and settings, ingress routes, and the ingress
controller the stack can install."""
from typing import Optional

from gpuplatform.components.config import PlatformConfig, Workload
from gpuplatform.components.errors import fmt, one_of
from gpuplatform.components.pools import PoolFacts
from gpuplatform.components.validation.common import _Issues


def check_exposure(cfg: PlatformConfig, p: str, w: Workload, f: Optional[PoolFacts], out: _Issues) -> None:
    e = w.exposure
    if e.service_type == "PublicLoadBalancer" and not cfg.settings.allow_public_endpoints:
        allowed = "ClusterIP, InternalLoadBalancer" if cfg.cloud.offers("InternalLoadBalancer") else "ClusterIP"
        out.add(f"{p}.exposure.serviceType", "'PublicLoadBalancer' exposes the service to the Internet, which this "
                f"stack does not allow (settings.allowPublicEndpoints is false); allowed: {allowed}")
    if e.service_type == "InternalLoadBalancer" and not cfg.cloud.offers("InternalLoadBalancer"):
        out.add(f"{p}.exposure.serviceType", "'InternalLoadBalancer' uses the ACK intranet SLB annotation; allowed "
                "on cluster kind 'kubeconfig': ClusterIP (with an ingress)")
    if e.ingress is not None:
        _check_ingress(p, w, e.ingress, out)
        _check_ingress_controller(cfg, p, e.ingress, out)
    _check_sleep_endpoints(cfg, p, w, out)


def _check_sleep_endpoints(cfg, p: str, w: Workload, out: _Issues) -> None:
    """A server that serves its sleep and wake endpoints (components/warm_set.py ``sleep_endpoints``) serves them on
    its API port: an L4 load balancer passes every path to it, so any client could put a replica to sleep. Behind
    an ingress only the clients' API is routed."""
    from gpuplatform.components.warm_set import served_sleep_endpoints, sleep_endpoints
    mode = served_sleep_endpoints(cfg, w)
    if mode is None or "LoadBalancer" not in w.exposure.service_type:
        return
    enabled = " and ".join(mode.enable_flags) + (f" with {mode.gate_env[0]}={mode.gate_env[1]}" if mode.gate_env
                                                  else "")
    where = "" if sleep_endpoints(w) is not None else " in its pool's warm set (nodePools[].warmSet)"
    out.add(f"{p}.exposure.serviceType", f"{fmt(w.exposure.service_type)} passes every path of the API port to the "
            f"server, and {w.server}{where} ({enabled}) serves {mode.sleep} and {mode.wake} there: any client could "
            "put a replica to sleep; allowed: ClusterIP with an ingress (which routes only "
            f"{', '.join(mode.client_paths)}), or the server without sleep mode")


# ingress-nginx proxies gRPC only on its TLS (HTTP/2 via ALPN) listener and asks for a TLS secret in the
# workload's namespace (kubernetes/ingress-nginx docs/examples/grpc/README.md, prerequisites; ACK "Configure
# gRPC services for NGINX Ingress": TLS must be enabled). ALB Ingress forwards gRPC only from HTTPS listeners
# (ACK "ALB Ingress configuration dictionary", backend-protocol grpc). So a gRPC route without TLS plans cleanly
# and never answers a gRPC client.
GRPC_NEEDS_TLS = ("nginx", "alb")


def _check_ingress(p: str, w: Workload, ing, out: _Issues) -> None:
    pi = f"{p}.exposure.ingress"
    one_port = (ing.host is not None, ing.port is not None)
    if one_port == (True, False) or one_port == (False, True):
        missing = "port" if ing.port is None else "host"
        out.add(f"{pi}.{missing}", f"required with {fmt(ing.host if ing.host is not None else ing.port)}: the "
                "one-port form needs both 'host' and 'port'")
    if not ing.routes and one_port == (False, False):
        out.add(pi, "routes nothing; allowed: 'host' + 'port', or 'routes' (one {port, host} per serving port)")
    if ing.stream_timeout_seconds is not None and ing.class_name != "nginx":
        out.add(f"{pi}.streamTimeoutSeconds", f"{ing.stream_timeout_seconds}: set through ingress-nginx "
                f"annotations, which ingress class {fmt(ing.class_name)} does not read; allowed: className nginx, "
                "or leave it out and set the ALB listener's timeouts in its AlbConfig")
    serving = [q.name for q in w.ports if q.protocol in ("http", "grpc")]
    keys = ([("port", ing.port)] if ing.port is not None else []) + \
        [(f"routes[{k}].port", r.port) for k, r in enumerate(ing.routes)]
    seen: set[str] = set()
    for key, name in keys:
        port = next((q for q in w.ports if q.name == name), None)
        if port is None or port.protocol == "metrics":
            out.add(f"{pi}.{key}", f"{fmt(name)} is not a serving port; allowed: {one_of(serving)}")
            continue
        if name in seen:
            out.add(f"{pi}.{key}", f"{fmt(name)} is routed twice; give each serving port one route")
        seen.add(name)
        if port.protocol == "grpc" and ing.class_name in GRPC_NEEDS_TLS and not ing.tls_secret:
            out.add(f"{pi}.tlsSecret", f"required: port {fmt(name)} speaks gRPC, and ingress class "
                    f"{fmt(ing.class_name)} serves gRPC (HTTP/2) only on its TLS listener; allowed: the name of a "
                    "kubernetes.io/tls Secret in the workload namespace covering every host")


def _check_ingress_controller(cfg: PlatformConfig, p: str, ing, out: _Issues) -> None:
    """The stack installs only ACK's nginx add-on; anything else runs a controller it does not manage."""
    if ing.controller != "addon":
        return
    if not cfg.cloud.offers("ingress-addon"):
        out.add(f"{p}.exposure.ingress.controller", "'addon' installs ACK's nginx-ingress-controller add-on and needs "
                "an ACK cluster; allowed on cluster kind 'kubeconfig': external (install a controller yourself)")
    elif ing.class_name == "alb":
        out.add(f"{p}.exposure.ingress.controller", "'addon' with className 'alb': an ALB Ingress also needs an "
                "AlbConfig and IngressClass this stack does not create; allowed: external (create them in the "
                "ACK console or another stack), or className nginx")
