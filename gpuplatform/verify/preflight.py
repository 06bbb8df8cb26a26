"""Preflight: is the Alibaba Cloud account ready for the stack's first ``pulumi up``? (``gpuplatform verify
--preflight``.)

Reads the account through Alibaba Cloud's RPC APIs (read-only calls), before any cluster exists:

* ``account.service-role`` (one per role the stack needs): RAM ``GetRole``; ``EntityNotExist.Role`` means it was
  never authorized (ACK quick authorization, or Auto Scaling's activation for its service-linked role);
* ``account.vcpu-quota``: ECS ``DescribeAccountAttributes`` (``max-postpaid-instance-vcpu-count`` and
  ``used-postpaid-instance-vcpu-count``) against the vCPUs of every pool at its most nodes plus the system pool;
* ``account.instance-stock`` (one per pool): ECS ``DescribeAvailableResource`` for each instance type in each zone
  of the stack's vSwitches (``StatusCategory: WithStock``).

What no API reads (ACK's activation) is on the README's checklist (catalogs/account.py ``CHECKLIST``).

The calls are signed as Alibaba Cloud's RPC signature version 1.0 describes (HMAC-SHA1 over the canonicalized
query: ECS API reference "Request signatures"); credentials come from the environment variables the provider
reads. Tests replay recorded responses (:class:`RecordedApi`); nothing here runs at plan time.
"""
from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import os
import sys
import urllib.parse
import urllib.request
import uuid
from typing import Callable, Optional, TextIO

from gpuplatform.catalogs import account
from gpuplatform.catalogs.ack import SYSTEM_INSTANCE_TYPES
from gpuplatform.catalogs.gpus import instance_type
from gpuplatform.components.config import PlatformConfig
from gpuplatform.verify.output import format_json, format_table
from gpuplatform.verify.results import CheckResult, _fail, _pass, _warn

API_VERSIONS = {"ram": "2015-05-01", "ecs": "2014-05-26"}
ENDPOINTS = {"ram": "ram.aliyuncs.com", "ecs": "ecs.{region}.aliyuncs.com"}
CREDENTIAL_ENV = (("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET"),
                  ("ALICLOUD_ACCESS_KEY", "ALICLOUD_SECRET_KEY"))
"""Environment variables holding an AccessKey pair, in the order read (the same names the provider reads)."""
TIMEOUT_SECONDS = 15


class ApiError(Exception):
    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def _encode(value: str) -> str:
    """Percent-encoding of the RPC signature: RFC 3986 unreserved characters kept, space as %20."""
    return urllib.parse.quote(str(value), safe="-_.~")


def rpc_signature(params: dict, secret: str, method: str = "GET") -> str:
    """Signature version 1.0 of an RPC request: HMAC-SHA1, keyed by the secret plus '&', of
    ``METHOD&%2F&<percent-encoded canonicalized query>`` (parameters sorted by name, each name and value
    percent-encoded), base64."""
    canonical = "&".join(f"{_encode(k)}={_encode(v)}" for k, v in sorted(params.items()))
    to_sign = f"{method}&{_encode('/')}&{_encode(canonical)}"
    digest = hmac.new(f"{secret}&".encode(), to_sign.encode(), hashlib.sha1).digest()
    return base64.b64encode(digest).decode()


class AlibabaRpc:
    """Read-only calls to Alibaba Cloud's RPC APIs with an AccessKey pair."""

    def __init__(self, key_id: str, secret: str, region: str,
                 opener: Callable = urllib.request.urlopen):
        self.key_id, self.secret, self.region, self.opener = key_id, secret, region, opener

    def call(self, product: str, action: str, params: dict) -> dict:
        query = {"Action": action, "Version": API_VERSIONS[product], "Format": "JSON", "AccessKeyId": self.key_id,
                 "SignatureMethod": "HMAC-SHA1", "SignatureVersion": "1.0", "SignatureNonce": uuid.uuid4().hex,
                 "Timestamp": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), **params}
        query["Signature"] = rpc_signature(query, self.secret)
        url = f"https://{ENDPOINTS[product].format(region=self.region)}/?{urllib.parse.urlencode(query)}"
        try:
            with self.opener(url, timeout=TIMEOUT_SECONDS) as response:
                return json.loads(response.read().decode())
        except urllib.error.HTTPError as exc:
            try:
                body = json.loads(exc.read().decode())
            except ValueError:
                body = {}
            raise ApiError(body.get("Code", f"HTTP {exc.code}"), body.get("Message", str(exc))) from None
        except (OSError, ValueError) as exc:
            raise ApiError("Unreachable", str(exc)) from None


class RecordedApi:
    """Answers from recorded API responses: a list of ``{"product", "action", "params", "response"}`` (or
    ``"error": {"Code", "Message"}``), matched by product, action and every recorded parameter."""

    def __init__(self, recorded: list[dict]):
        self.recorded = recorded
        self.calls: list[tuple[str, str, dict]] = []

    def call(self, product: str, action: str, params: dict) -> dict:
        self.calls.append((product, action, dict(params)))
        for r in self.recorded:
            if r["product"] == product and r["action"] == action and all(
                    str(params.get(k)) == str(v) for k, v in r.get("params", {}).items()):
                if "error" in r:
                    raise ApiError(r["error"]["Code"], r["error"].get("Message", ""))
                return r["response"]
        raise ApiError("NotRecorded", f"{product} {action} {params}")


def api_from_environment(region: str, env: Optional[dict] = None) -> Optional[AlibabaRpc]:
    env = os.environ if env is None else env
    for key, secret in CREDENTIAL_ENV:
        if env.get(key) and env.get(secret):
            return AlibabaRpc(env[key], env[secret], region)
    return None


# ------------------------------------------------------------------------------------------------ what the stack needs
def needed_roles(cfg: PlatformConfig) -> list[account.ServiceRole]:
    c = cfg.cluster
    needs = set()
    if c.kind == "ack-managed":
        needs.add("cluster")
        if c.network_plugin == "terway":
            needs.add("terway")
    if any(p.autoscaling for p in cfg.node_pools):
        needs.add("autoscaling")
    if any(cfg.pool_managed(p) for p in cfg.node_pools):
        needs.add("managed-pool")
    if cfg.monitoring.backend == "arms":
        needs.add("arms")
    return [r for r in account.SERVICE_ROLES if r.needed_for in needs]


def needed_vcpus(cfg: PlatformConfig) -> tuple[int, list[str]]:
    """vCPUs of every pool at its most nodes (its largest instance type) and of the system pool, with the parts."""
    parts, total = [], 0
    for p in cfg.node_pools:
        sizes = [t.vcpus for t in map(instance_type, p.instance_types) if t is not None]
        if not sizes:
            continue
        n = p.max_nodes if p.autoscaling else (p.desired_nodes or 0)
        total += n * max(sizes)
        parts.append(f"{p.name} {n} x {max(sizes)}")
    sp = getattr(cfg.cluster, "system_pool", None)
    if cfg.cluster.kind == "ack-managed" and sp is not None and sp.enabled:
        sizes = [SYSTEM_INSTANCE_TYPES[t].vcpus for t in sp.instance_types if t in SYSTEM_INSTANCE_TYPES]
        if sizes:
            total += sp.nodes * max(sizes)
            parts.append(f"system {sp.nodes} x {max(sizes)}")
    return total, parts


def stack_zones(cfg: PlatformConfig) -> list[Optional[str]]:
    c = cfg.cluster
    zones = sorted({v.zone_id for v in getattr(c, "vswitches", [])})
    return zones or [None]  # an adopted cluster's zones are its vSwitches': asked region-wide


# ------------------------------------------------------------------------------------------------ checks
def check_service_roles(cfg: PlatformConfig, api) -> list[CheckResult]:
    out = []
    for role in needed_roles(cfg):
        subject = f"role/{role.name}"
        try:
            api.call("ram", "GetRole", {"RoleName": role.name})
        except ApiError as exc:
            if exc.code == "EntityNotExist.Role":
                out.append(_fail("account.service-role", subject, f"not authorized (needed: {role.purpose})",
                                 role.step))
            else:
                out.append(_fail("account.service-role", subject, f"cannot read it ({exc})",
                                 "the AccessKey's user needs ram:GetRole (AliyunRAMReadOnlyAccess)"))
            continue
        out.append(_pass("account.service-role", subject, f"authorized ({role.purpose})"))
    return out


def _attribute_values(response: dict, name: str) -> list[dict]:
    for item in ((response.get("AccountAttributeItems") or {}).get("AccountAttributeItem") or []):
        if item.get("AttributeName") == name:
            return list((item.get("AttributeValues") or {}).get("ValueItem") or [])
    return []


def check_vcpu_quota(cfg: PlatformConfig, api) -> CheckResult:
    needed, parts = needed_vcpus(cfg)
    names = [account.VCPU_QUOTA_ATTRIBUTE, "used-postpaid-instance-vcpu-count"]
    try:
        response = api.call("ecs", "DescribeAccountAttributes", {
            "RegionId": cfg.cluster.region, **{f"AttributeName.{i + 1}": n for i, n in enumerate(names)}})
    except ApiError as exc:
        return _fail("account.vcpu-quota", cfg.cluster.region, f"cannot read the quota ({exc})",
                     "the AccessKey's user needs ecs:DescribeAccountAttributes (AliyunECSReadOnlyAccess)")
    quota = [int(v.get("Value", 0)) for v in _attribute_values(response, names[0])]
    used = [int(v.get("Value", 0)) for v in _attribute_values(response, names[1])]
    if not quota:
        return _warn("account.vcpu-quota", cfg.cluster.region, f"the account reports no {names[0]}",
                     "check the pay-as-you-go vCPU quota in Quota Center")
    free = max(quota) - (max(used) if used else 0)
    shown = f"{needed} vCPUs at the pools' most nodes ({', '.join(parts)}); quota {max(quota)}, in use " \
            f"{max(used) if used else 0}"
    if needed > free:
        return _fail("account.vcpu-quota", cfg.cluster.region, f"{shown}: {needed - free} short",
                     "apply for more in Quota Center > ECS > pay-as-you-go vCPU quota, or lower maxNodes")
    return _pass("account.vcpu-quota", cfg.cluster.region, shown)


def _stock(response: dict) -> dict[str, str]:
    """Instance type -> StatusCategory, from a DescribeAvailableResource answer."""
    out = {}
    for zone in ((response.get("AvailableZones") or {}).get("AvailableZone") or []):
        for res in ((zone.get("AvailableResources") or {}).get("AvailableResource") or []):
            for sup in ((res.get("SupportedResources") or {}).get("SupportedResource") or []):
                if sup.get("StatusCategory") == "WithStock" or sup.get("Value") not in out:
                    out[sup.get("Value")] = sup.get("StatusCategory") or sup.get("Status") or ""
    return out


def check_instance_stock(cfg: PlatformConfig, api) -> list[CheckResult]:
    out = []
    for p in cfg.node_pools:
        if not p.instance_types:
            continue
        subject = f"pool/{p.name}"
        found: dict[str, list[str]] = {}
        errors = []
        for zone in stack_zones(cfg):
            for itype in p.instance_types:
                params = {"RegionId": cfg.cluster.region, "DestinationResource": "InstanceType",
                          "InstanceChargeType": "PostPaid", "InstanceType": itype}
                if zone:
                    params["ZoneId"] = zone
                try:
                    status = _stock(api.call("ecs", "DescribeAvailableResource", params)).get(itype, "")
                except ApiError as exc:
                    errors.append(f"{itype} in {zone or cfg.cluster.region}: {exc}")
                    continue
                if status == "WithStock":
                    found.setdefault(zone or cfg.cluster.region, []).append(itype)
        where = [z or cfg.cluster.region for z in stack_zones(cfg)]
        empty = [z for z in where if z not in found]
        if errors:
            out.append(_fail("account.instance-stock", subject, "; ".join(errors),
                             "the AccessKey's user needs ecs:DescribeAvailableResource (AliyunECSReadOnlyAccess)"))
        elif len(empty) == len(where):
            out.append(_fail("account.instance-stock", subject, f"none of {', '.join(p.instance_types)} has stock "
                             f"in {', '.join(where)}", "add an instance type with stock (instanceTypes are tried "
                             "in order) or use vSwitches in other zones"))
        elif empty:
            out.append(_warn("account.instance-stock", subject, f"no stock in {', '.join(empty)}; stock in "
                             + "; ".join(f"{z}: {', '.join(t)}" for z, t in sorted(found.items())),
                             "the pool's nodes can only be bought in the zones with stock"))
        else:
            out.append(_pass("account.instance-stock", subject,
                             "; ".join(f"{z}: {', '.join(t)}" for z, t in sorted(found.items()))))
    return out


def run_preflight(cfg: PlatformConfig, api) -> list[CheckResult]:
    """Every preflight check; API errors become failed checks."""
    if not cfg.cloud.has_account:
        return [_pass("account.preflight", "cluster", "a kubeconfig cluster: no Alibaba Cloud account to check")]
    return check_service_roles(cfg, api) + [check_vcpu_quota(cfg, api)] + check_instance_stock(cfg, api)


def preflight_main(cfg: PlatformConfig, fmt: str = "table", out: TextIO = sys.stdout, api=None,
                   env: Optional[dict] = None) -> int:
    """Exit code: 0 all checks pass, 1 a check failed, 2 no credentials to read the account with."""
    if cfg.cloud.has_account and api is None:
        api = api_from_environment(cfg.cluster.region, env)
        if api is None:
            names = " or ".join(f"{k} and {s}" for k, s in CREDENTIAL_ENV)
            print(f"no Alibaba Cloud credentials: set {names} (a RAM user with AliyunRAMReadOnlyAccess and "
                  "AliyunECSReadOnlyAccess is enough)", file=out)
            return 2
    results = run_preflight(cfg, api)
    print(format_json(results) if fmt == "json" else format_table(results), file=out)
    return 0 if all(r.ok for r in results) else 1
