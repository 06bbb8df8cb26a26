"""Kubernetes validity of the names, hosts, quantities and paths a stack file supplies, checked before anything
is registered, so that a typo fails the plan instead of the API server's admission halfway through ``pulumi up``.

Each check is a small pure function returning the problem in words (or ``None``). The rules mirror the API
server's own validation: kubernetes/kubernetes ``staging/src/k8s.io/apimachinery/pkg/util/validation/
validation.go`` (DNS-1123 labels and subdomains, qualified names, label values, environment variable and
ConfigMap/Secret key names), ``pkg/apis/core/validation/validation.go`` (``validateNFSVolumeSource``: the
path must be absolute), ``pkg/apis/networking/validation/validation.go`` (an Ingress host is a DNS name or a
``*.`` wildcard, never an IP address) and ``staging/src/k8s.io/apimachinery/pkg/api/resource/quantity.go``
(the quantity grammar).
"""
import ipaddress
import re
from typing import Optional

from gpuplatform.catalogs.kubernetes import QUANTITY, quantity_value  # noqa: F401  (one grammar)

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS_LABEL = re.compile(rf"^{_LABEL}$")
DNS_SUBDOMAIN = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")
_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
ENV_VAR_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_BINARY_SUFFIX = {"k": "Ki", "m": "Mi", "g": "Gi", "t": "Ti", "p": "Pi", "e": "Ei"}
MIN_MEMORY_BYTES = 2 ** 20
"""Below 1 MiB no container starts; a bare number is bytes, so '8' almost always meant '8Gi'."""


def dns_label(value: str, what: str = "name") -> Optional[str]:
    if len(value) > 63 or not DNS_LABEL.match(value):
        return (f"{_q(value)} is not a valid {what}; allowed: a DNS-1123 label (lowercase letters, digits and '-', "
                "starting and ending alphanumeric, at most 63 characters)")
    return None


def dns_subdomain(value: str, what: str = "name") -> Optional[str]:
    if len(value) > 253 or not DNS_SUBDOMAIN.match(value):
        return (f"{_q(value)} is not a valid {what}; allowed: a DNS-1123 subdomain (lowercase letters, digits, "
                "'-' and '.', starting and ending alphanumeric, at most 253 characters)")
    return None


def label_key(value: str) -> Optional[str]:
    prefix, _, name = value.rpartition("/")
    if ("/" in value and (not prefix or len(prefix) > 253 or not DNS_SUBDOMAIN.match(prefix))) \
            or len(name) > 63 or not _NAME_PART.match(name):
        return (f"{_q(value)} is not a valid label key; allowed: an optional DNS-subdomain prefix and '/', then "
                "at most 63 letters, digits, '-', '_' or '.', starting and ending alphanumeric")
    return None


def label_value(value: str) -> Optional[str]:
    if len(value) > 63 or not LABEL_VALUE.match(value):
        return (f"{_q(value)} is not a valid label value; allowed: empty, or at most 63 letters, digits, '-', '_' "
                "or '.', starting and ending alphanumeric")
    return None


def env_var_name(value: str) -> Optional[str]:
    if not ENV_VAR_NAME.match(value):
        return (f"{_q(value)} is not a valid environment variable name; allowed: letters, digits, '_', '-' and "
                "'.', not starting with a digit")
    return None


def secret_key(value: str) -> Optional[str]:
    if len(value) > 253 or value in (".", "..") or not CONFIG_KEY.match(value):
        return f"{_q(value)} is not a valid Secret key; allowed: letters, digits, '-', '_' and '.'"
    return None


def ingress_host(value: str) -> Optional[str]:
    if "://" in value:
        return f"{_q(value)} is a URL; allowed: a host name only, e.g. {_q(value.split('://', 1)[1].split('/')[0])}"
    if "/" in value or ":" in value:
        host = value.split("/")[0].split(":")[0]
        return f"{_q(value)} has a port or path; allowed: a host name only, e.g. {_q(host)}"
    if _is_ip(value):
        return f"{_q(value)} is an IP address; an Ingress host must be a DNS name"
    name = value[2:] if value.startswith("*.") else value
    if "*" in name or len(value) > 253 or not DNS_SUBDOMAIN.match(name):
        return (f"{_q(value)} is not a valid ingress host; allowed: a lowercase DNS name, optionally starting "
                "with '*.' (a wildcard covers exactly one label)")
    return None


def nfs_server(value: str) -> Optional[str]:
    if "://" in value:
        return f"{_q(value)} is a URL; allowed: a host name or IP address only, without scheme"
    if "/" in value or (":" in value and not _is_ip(value)):
        return (f"{_q(value)} has a port or path; allowed: a host name or IP address only (the export goes in "
                "'path')")
    if not _is_ip(value) and (len(value) > 253 or not DNS_SUBDOMAIN.match(value.lower())):
        return f"{_q(value)} is not a host name or IP address"
    return None


def absolute_path(value: str, what: str) -> Optional[str]:
    if not value.startswith("/"):
        return f"{_q(value)} is not an absolute path; allowed: a {what} starting with '/'"
    return None


def quantity(value: str, kind: str) -> Optional[str]:
    """``kind`` is ``memory`` or ``cpu``. Returns the problem, with the spelling that was most likely meant."""
    text = str(value)
    if not QUANTITY.match(text):
        hint = _quantity_hint(text, kind)
        return (f"{_q(text)} is not a Kubernetes quantity{f'; did you mean {_q(hint)}?' if hint else ''} "
                + ("Allowed: e.g. 512Mi, 8Gi, 16G" if kind == "memory" else "Allowed: e.g. 500m, 1, 2.5"))
    amount = quantity_value(text)
    if amount <= 0:
        return f"{_q(text)} is not positive"
    if kind == "memory" and amount < MIN_MEMORY_BYTES:
        return (f"{_q(text)} is {amount:g} bytes, too little for any container; did you mean {_q(text + 'Gi')}? "
                "Allowed: e.g. 512Mi, 8Gi")
    return None


def _quantity_hint(text: str, kind: str) -> Optional[str]:
    compact = text.replace(" ", "")
    m = re.match(r"^(\d+(?:\.\d+)?)([A-Za-z]*)$", compact)
    if not m:
        return None
    number, unit = m.groups()
    if kind == "memory":
        unit = unit.lower().removesuffix("ib").removesuffix("b").removesuffix("i")
        return f"{number}{_BINARY_SUFFIX[unit]}" if unit in _BINARY_SUFFIX else None
    if unit.lower() in ("m", "mi", "millicores", "millicore"):
        return f"{number}m"
    if unit.lower() in ("cores", "core", "cpu", "cpus", "vcpu", "vcpus"):
        return number
    return None


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
        return True
    except ValueError:
        return False


def _q(value) -> str:
    return repr(value) if isinstance(value, str) else str(value)


# ---------------------------------------------------------------------------------------------- the rule
def check_kubernetes_validity(cfg, facts, out) -> None:
    """Every name, host, quantity and path of the stack, as the API server would judge it."""
    s = cfg.settings
    _add(out, "settings.namespace", dns_label(s.namespace, "namespace name"))
    for i, pool in enumerate(cfg.node_pools):
        p = f"nodePools[{i}]"
        for key, value in pool.labels.items():
            _add(out, f"{p}.labels", label_key(key))
            _add(out, f"{p}.labels.{key}", label_value(value))
        for j, taint in enumerate(pool.taints):
            _add(out, f"{p}.taints[{j}].key", label_key(taint.key))
            if taint.value is not None:
                _add(out, f"{p}.taints[{j}].value", label_value(taint.value))
    hosts: dict[tuple, str] = {}
    for i, w in enumerate(cfg.workloads):
        p = f"workloads[{i}]"
        if i < getattr(out, "checked_workloads", 0):
            ing = w.exposure.ingress
            for host in ([ing.host] if ing is not None and ing.host is not None else []) + \
                    [r.host for r in (ing.routes if ing is not None else [])]:
                hosts.setdefault((ing.class_name, host), w.name)
            continue
        _add(out, f"{p}.resources.cpu", quantity(w.resources.cpu, "cpu"))
        _add(out, f"{p}.resources.memory", quantity(w.resources.memory, "memory"))
        for key in w.env:
            _add(out, f"{p}.env.{key}", env_var_name(key))
        for key, ref in w.secret_env.items():
            _add(out, f"{p}.secretEnv.{key}", env_var_name(key))
            _add(out, f"{p}.secretEnv.{key}.secretName", dns_subdomain(ref.secret_name, "Secret name"))
            _add(out, f"{p}.secretEnv.{key}.key", secret_key(ref.key))
        for j, vol in enumerate(w.volumes):
            pv = f"{p}.volumes[{j}]"
            _add(out, f"{pv}.name", dns_label(vol.name, "volume name"))
            _add(out, f"{pv}.mountPath", absolute_path(vol.mount_path, "mount path"))
            if vol.pvc is not None:
                _add(out, f"{pv}.pvc", dns_subdomain(vol.pvc, "PersistentVolumeClaim name"))
            if vol.nfs is not None:
                _add(out, f"{pv}.nfs.server", nfs_server(vol.nfs.server))
                _add(out, f"{pv}.nfs.path", absolute_path(vol.nfs.path, "path exported by the NFS server"))
        ing = w.exposure.ingress
        if ing is not None:
            if ing.tls_secret is not None:
                _add(out, f"{p}.exposure.ingress.tlsSecret", dns_subdomain(ing.tls_secret, "Secret name"))
            one_port = [("host", ing.host)] if ing.host is not None else []
            for key, host in one_port + [(f"routes[{k}].host", r.host) for k, r in enumerate(ing.routes)]:
                problem = ingress_host(host)
                _add(out, f"{p}.exposure.ingress.{key}", problem)
                # every route sends '/' of its host to one port: a second route on the same host and class
                # would take the same requests, and the controller picks one of them
                route = (ing.class_name, host)
                if problem is None and route in hosts:
                    out.add(f"{p}.exposure.ingress.{key}", f"{_q(host)} already routes '/' to {hosts[route]} "
                            f"(ingress class {ing.class_name}); allowed: a host no other route uses")
                hosts.setdefault(route, w.name)


def _add(out, path: str, problem: Optional[str]) -> None:
    if problem:
        out.add(path, problem)
