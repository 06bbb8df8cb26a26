"""Checks of each workload's ingress: an address from a controller serving its class."""
from __future__ import annotations

from kubernetes import client as k8s

from gpuplatform.components.config import PlatformConfig, Workload
from gpuplatform.verify.kube import REQUEST_TIMEOUT, _api_error, _not_found
from gpuplatform.verify.results import CheckResult, _fail, _pass


def ingress_names(w: Workload) -> list[str]:
    """Names of the workload's Ingress objects, as ``workload_manifests.ingresses`` gives them."""
    ing = w.exposure.ingress
    routes = ing.all_routes()
    return [w.name] if len(routes) == 1 and not ing.routes else [f"{w.name}-{r.port}" for r in routes]


def check_ingress(cfg: PlatformConfig, w: Workload, name: str, networking: k8s.NetworkingV1Api) -> CheckResult:
    """An Ingress gets an address only from a controller serving its class. ``pulumi up`` waits for it when the
    stack installs the controller; with an external controller it does not, so this is where a missing one shows."""
    ns, ing = cfg.workload_namespace(w), w.exposure.ingress
    subject = f"ingress/{ns}/{name}"
    try:
        obj = networking.read_namespaced_ingress(name, ns, _request_timeout=REQUEST_TIMEOUT)
    except Exception as exc:  # noqa: BLE001
        if _not_found(exc):
            return _fail("ingress.address", subject, "Ingress not found", "the stack is not applied")
        return _fail("ingress.address", subject, f"cannot read it ({_api_error(exc)})",
                     "the credentials lack 'get ingresses'")
    lb = (obj.status.load_balancer.ingress or []) if obj.status and obj.status.load_balancer else []
    addresses = [a.ip or a.hostname for a in lb if a.ip or a.hostname]
    if addresses:
        return _pass("ingress.address", subject, f"address {', '.join(addresses)} (class {ing.class_name})")
    if ing.controller_for(cfg.cloud) == "addon":
        cause = ("ACK's nginx-ingress-controller add-on is not running or its SLB was not created (kube-system "
                 "pods nginx-ingress-controller; the add-on status in the ACK console)")
    else:
        cause = (f"the external controller for ingressClassName '{ing.class_name}' is not installed, not running or "
                 "serves another class (exposure.ingress.controller is 'external', so `pulumi up` did not wait)")
    return _fail("ingress.address", subject, "no address in .status.loadBalancer", cause)
