"""Access to the cluster: the API client from a kubeconfig or the pod's service account, raw GETs of the
aggregated APIs, and the error text every check reports."""
from __future__ import annotations

import json
import os
from typing import Optional

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from gpuplatform.components.config import PlatformConfig

REQUEST_TIMEOUT = 10
"""Seconds per API request: a verify run must end even when the API server or an aggregated API hangs."""


def _api_error(exc: Exception) -> str:
    if isinstance(exc, ApiException):
        reason = exc.reason or ""
        try:
            reason = json.loads(exc.body or "{}").get("message") or reason
        except (ValueError, AttributeError):
            pass
        return f"HTTP {exc.status}: {reason}".strip()
    return f"{type(exc).__name__}: {exc}"


def _not_found(exc: Exception) -> bool:
    return isinstance(exc, ApiException) and exc.status == 404


def get_raw(api_client: k8s.ApiClient, path: str, query: Optional[list[tuple[str, str]]] = None) -> dict:
    """GET an API path the typed client has no method for (the aggregated custom metrics API) as JSON."""
    method, url, headers, body, post = api_client.param_serialize(
        "GET", path, query_params=query or [], header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"])
    resp = api_client.call_api(method, url, header_params=headers, _request_timeout=REQUEST_TIMEOUT)
    resp.read()
    text = resp.data.decode("utf-8") if resp.data else ""
    if not 200 <= resp.status <= 299:
        raise ApiException(http_resp=resp)
    return json.loads(text) if text else {}


def _selector_string(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _pod_ready(pod: k8s.V1Pod) -> bool:
    conds = (pod.status.conditions if pod.status else None) or []
    return any(c.type == "Ready" and c.status == "True" for c in conds)


def kubeconfig_attempts(cfg: PlatformConfig, kubeconfig: Optional[str]) -> str:
    """What ``build_api_client`` read, or would have read, and whether each file exists: a failed verify names
    where it looked. Without a path the client reads ``$KUBECONFIG`` (paths joined by the OS path separator) or
    ``~/.kube/config``, as fixed when the module is imported (kubernetes-client/python,
    ``kubernetes/base/config/kube_config.py``: ``KUBE_CONFIG_DEFAULT_LOCATION``, ``KubeConfigMerger``)."""
    from kubernetes.config import kube_config

    def state(path: str) -> str:
        full = os.path.expanduser(path)
        return f"{path} ({'exists' if os.path.isfile(full) else 'does not exist'})"

    if kubeconfig:
        return f"--kubeconfig {state(kubeconfig)}"
    stack_path = getattr(cfg.cluster, "kubeconfig_path", None)
    if stack_path:
        return f"the stack's cluster.kubeconfigPath {state(stack_path)}"
    default = kube_config.KUBE_CONFIG_DEFAULT_LOCATION
    if os.environ.get("KUBECONFIG"):
        paths = [p for p in default.split(kube_config.ENV_KUBECONFIG_PATH_SEPARATOR) if p]
        tried = f"$KUBECONFIG: {', '.join(map(state, paths)) or '(empty)'}"
    else:
        tried = f"no --kubeconfig, no $KUBECONFIG, the default {state(default)}"
    pod = "set" if os.environ.get("KUBERNETES_SERVICE_HOST") else "not set"
    return f"{tried}; in-cluster service account: KUBERNETES_SERVICE_HOST {pod}"


def build_api_client(cfg: PlatformConfig, kubeconfig: Optional[str], context: Optional[str]) -> k8s.ApiClient:
    """kubeconfig/context from the command line, else the stack's (kubeconfig clusters), else the default
    kubeconfig; inside a pod without any kubeconfig, the pod's service account (CI jobs in the cluster)."""
    from kubernetes import config as kconfig

    kubeconfig = kubeconfig or getattr(cfg.cluster, "kubeconfig_path", None)
    context = context or getattr(cfg.cluster, "context", None)
    default_exists = os.path.exists(os.path.expanduser(kconfig.KUBE_CONFIG_DEFAULT_LOCATION))
    if kubeconfig is None and not default_exists and os.environ.get("KUBERNETES_SERVICE_HOST"):
        configuration = k8s.Configuration()
        kconfig.load_incluster_config(client_configuration=configuration)
        return k8s.ApiClient(configuration)
    return kconfig.new_client_from_config(config_file=kubeconfig, context=context, persist_config=False)
