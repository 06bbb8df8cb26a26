"""The verify checks of the ACK behaviours docs/ack.md lists as unverified: the kubeconfig credential is not a
temporary one, the disk CSI driver the creation add-ons install is registered, and flannel gave the GPU nodes pod
ranges from the stack's pod CIDR."""
from __future__ import annotations

import datetime as dt

from k8s_fixture_server import api_client_for

from gpuplatform.verify import check_credential, run_verify
from support import FIXTURES_DIR

CREDENTIALS = FIXTURES_DIR / "credentials"
# the fixture certificates were issued on 2026-11-23: one for three years (ACK's default kubeconfig), one for
# three days (temporary_duration_minutes=4320)
ISSUED = dt.datetime(2026, 11, 23, 12, tzinfo=dt.timezone.utc)


class _Client:
    def __init__(self, cert_file):
        self.configuration = type("Configuration", (), {"cert_file": cert_file})()


def test_long_lived_ack_kubeconfig_passes():
    result = check_credential(_Client(str(CREDENTIALS / "long-lived.pem")), now=ISSUED)
    assert result.ok and result.message == "the client certificate is valid until 2029-11-22"


def test_temporary_credential_fails_naming_destroy():
    result = check_credential(_Client(str(CREDENTIALS / "temporary.pem")), now=ISSUED)
    assert not result.ok
    assert "(2 days left)" in result.message and "destroy/refresh" in result.cause


def test_token_or_exec_credential_has_nothing_to_expire():
    assert check_credential(_Client(None), now=ISSUED).ok


def _results(fake_api, cfg, stack, variant):
    server = fake_api(stack, variant)
    client = api_client_for(server)
    try:
        return {(r.check, r.subject): r for r in run_verify(cfg, client)}
    finally:
        client.close()


def test_prod_pod_network_and_csi_driver_pass(fake_api, prod_cfg):
    results = _results(fake_api, prod_cfg, "prod", "healthy")
    assert results[("cluster.pod-network", "podcidr/172.20.0.0/16")].message == \
        "1 GPU node(s) have pod ranges inside 172.20.0.0/16"
    assert results[("cluster.csi-driver", "csidriver/diskplugin.csi.alibabacloud.com")].ok


def test_staging_is_adopted_so_its_pod_network_is_not_ours(fake_api, staging_cfg):
    assert not any(check == "cluster.pod-network" for check, _ in _results(fake_api, staging_cfg, "staging",
                                                                            "healthy"))


def test_pod_range_outside_the_pod_cidr_and_no_csi_driver_fail(fake_api, prod_cfg):
    results = _results(fake_api, prod_cfg, "prod", "ack-network-broken")
    network = results[("cluster.pod-network", "podcidr/172.20.0.0/16")]
    assert not network.ok and "10.244.1.0/24" in network.message and "flannel" in network.cause
    csi = results[("cluster.csi-driver", "csidriver/diskplugin.csi.alibabacloud.com")]
    assert not csi.ok and "HTTP 404" in csi.message and "csi-plugin" in csi.cause
