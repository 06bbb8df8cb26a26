"""`gpuplatform verify --preflight`: the account checks the first-deploy checklist of docs/deploy.md points to, run on
recorded API answers (tests/fixtures/alibaba_api) and the request signing on the API reference's own example."""
from __future__ import annotations

import copy
import io
import json

import pytest

from gpuplatform.catalogs import account
from gpuplatform.components.validation.parsing import parse
from gpuplatform.verify.preflight import (AlibabaRpc, RecordedApi, needed_roles, needed_vcpus, preflight_main,
                                          rpc_signature, run_preflight)
from support import FIXTURES_DIR, REPO, stack_raw

READY = json.loads((FIXTURES_DIR / "alibaba_api" / "ready-account.json")
                   .read_text())["responses"]


def _api(**changes) -> RecordedApi:
    """The ready account, with some answers replaced: role name -> an error, or 'quota'/'stock' edits."""
    recorded = copy.deepcopy(READY)
    for r in recorded:
        name = r["params"].get("RoleName")
        if name in changes:
            r.pop("response")
            r["error"] = {"Code": "EntityNotExist.Role", "Message": f"The role not exists: {name}."}
        if r["action"] == "DescribeAccountAttributes" and "quota" in changes:
            item = r["response"]["AccountAttributeItems"]["AccountAttributeItem"][0]
            item["AttributeValues"]["ValueItem"][0]["Value"] = str(changes["quota"])
        if r["action"] == "DescribeAvailableResource" and r["params"].get("ZoneId") in changes.get("sold_out", ()):
            sup = r["response"]["AvailableZones"]["AvailableZone"][0]["AvailableResources"]["AvailableResource"][0]
            sup["SupportedResources"]["SupportedResource"][0].update(Status="SoldOut", StatusCategory="WithoutStock")
    return RecordedApi(recorded)


def test_the_signature_is_the_api_references_example():
    """ECS API reference, "Request signatures": DescribeRegions with AccessKeyId testid and secret testsecret."""
    params = {"Timestamp": "2016-02-23T12:46:24Z", "Format": "XML", "AccessKeyId": "testid",
              "Action": "DescribeRegions", "SignatureMethod": "HMAC-SHA1",
              "SignatureNonce": "3ee8c1b8-83d3-44af-a94f-4e0ad82fd6cf", "Version": "2014-05-26",
              "SignatureVersion": "1.0"}
    assert rpc_signature(params, "testsecret") == "OLeaidS1JvxuMvnyHOwuJ+uX5qY="


def test_a_ready_account_passes_every_check_for_dev():
    cfg = parse(stack_raw("dev"))
    api = _api()
    results = run_preflight(cfg, api)
    assert all(r.ok and not r.warning for r in results), results
    checked = {r.subject for r in results if r.check == "account.service-role"}
    # dev creates a Pro cluster with an autoscaled, managed pool and ARMS: the roles those need, not Terway's
    assert checked == {f"role/{n}" for n in ("AliyunCSDefaultRole", "AliyunCSManagedKubernetesRole",
                                             "AliyunCSManagedCsiRole", "AliyunCSManagedArmsRole",
                                             "AliyunCSManagedAutoScalerRole", "AliyunCSManagedNlcRole",
                                             "AliyunServiceRoleForAutoScaling")}
    quota = next(r for r in results if r.check == "account.vcpu-quota")
    assert quota.message.startswith("20 vCPUs at the pools' most nodes (t4-cgpu 3 x 4, system 2 x 4)")
    stock = next(r for r in results if r.check == "account.instance-stock")
    assert stock.message == "cn-hangzhou-j: ecs.gn6i-c4g1.xlarge; cn-hangzhou-k: ecs.gn6i-c4g1.xlarge"
    # read-only calls only
    assert {a for _, a, _ in api.calls} == {"GetRole", "DescribeAccountAttributes", "DescribeAvailableResource"}


def test_a_role_never_authorized_fails_naming_the_console_step():
    results = run_preflight(parse(stack_raw("dev")), _api(AliyunCSManagedAutoScalerRole=True,
                                                         AliyunServiceRoleForAutoScaling=True))
    failed = {r.subject: r for r in results if not r.ok}
    assert set(failed) == {"role/AliyunCSManagedAutoScalerRole", "role/AliyunServiceRoleForAutoScaling"}
    assert "Configure Auto Scaling" in failed["role/AliyunCSManagedAutoScalerRole"].cause
    assert "activate the service" in failed["role/AliyunServiceRoleForAutoScaling"].cause


def test_a_quota_below_the_pools_most_nodes_fails_with_the_shortfall():
    raw = stack_raw("dev")
    need, parts = needed_vcpus(parse(raw))
    result = next(r for r in run_preflight(parse(raw), _api(quota=need - 10)) if r.check == "account.vcpu-quota")
    assert not result.ok and result.message.endswith(": 18 short")  # 8 vCPUs are in use already
    assert "Quota Center" in result.cause


def test_a_zone_without_stock_warns_and_no_stock_anywhere_fails():
    cfg = parse(stack_raw("dev"))
    one = next(r for r in run_preflight(cfg, _api(sold_out=("cn-hangzhou-j",)))
               if r.check == "account.instance-stock")
    assert one.ok and one.warning and one.message.startswith("no stock in cn-hangzhou-j")
    none = next(r for r in run_preflight(cfg, _api(sold_out=("cn-hangzhou-j", "cn-hangzhou-k")))
                if r.check == "account.instance-stock")
    assert not none.ok and "none of ecs.gn6i-c4g1.xlarge has stock in cn-hangzhou-j, cn-hangzhou-k" in none.message


def test_without_credentials_the_command_says_which_variables_to_set():
    out = io.StringIO()
    assert preflight_main(parse(stack_raw("dev")), out=out, env={}) == 2
    assert "ALIBABA_CLOUD_ACCESS_KEY_ID" in out.getvalue() and "Traceback" not in out.getvalue()


def test_the_client_signs_and_sends_one_get_per_call():
    sent = []

    class _Response(io.BytesIO):
        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

    def opener(url, timeout):
        sent.append(url)
        return _Response(b'{"Role": {"RoleName": "AliyunCSDefaultRole"}}')

    api = AlibabaRpc("testid", "testsecret", "cn-hangzhou", opener=opener)
    assert api.call("ram", "GetRole", {"RoleName": "AliyunCSDefaultRole"})["Role"]["RoleName"] == "AliyunCSDefaultRole"
    assert sent[0].startswith("https://ram.aliyuncs.com/?") and "Signature=" in sent[0] and "RoleName=" in sent[0]


def test_the_first_deploy_checklist_names_every_prerequisite_and_role():
    guide = (REPO / "docs" / "deploy.md").read_text()
    section = guide.split("#### Is the account ready?")[1].split("\n#### ")[0]
    for item in account.CHECKLIST:
        assert item.what in section, item.key
    for role in account.SERVICE_ROLES:
        assert role.name in section, role.name
    assert "gpuplatform verify --preflight" in section


def test_adopted_and_terway_stacks_need_the_roles_of_what_they_use():
    raw = stack_raw("staging")
    names = {r.name for r in needed_roles(parse(raw))}
    assert "AliyunCSDefaultRole" not in names and "AliyunCSManagedAutoScalerRole" in names
