"""``verify_main``: client from kubeconfig/context, report formats, exit codes and the bounded ``--wait`` loop."""
from __future__ import annotations

import io
import json
import re

from k8s_fixture_server import write_kubeconfig

from gpuplatform.verify import CheckResult, format_json, format_table, verify_main


def test_json_report_and_exit_0_on_healthy_cluster(fake_api, prod_cfg, tmp_path):
    server = fake_api("prod", "healthy")
    out = io.StringIO()
    code = verify_main(prod_cfg, str(write_kubeconfig(tmp_path, server.url)), None, "json", 0, out)
    assert code == 0
    doc = json.loads(out.getvalue())
    assert doc["ok"] is True
    # the guides' checks, the ACK ones docs/ack.md lists as unverified, the system pods, MIG partitioning, the
    # address of each of the two Ingresses, the workload's measured model load, its NetworkPolicy (flannel
    # does not enforce it: a warning) and its SLO's compliance
    assert doc["summary"] == {"checks": 25, "passed": 25, "failed": 0, "warnings": 1}
    assert doc["checks"][0] == {"check": "cluster.reachable", "subject": server.url, "ok": True,
                                "message": "Kubernetes v1.31.5-aliyun.1", "cause": "", "warning": False}


def test_table_report_and_exit_1_when_a_check_fails(fake_api, staging_cfg, tmp_path):
    server = fake_api("staging", "metric-missing")
    out = io.StringIO()
    code = verify_main(staging_cfg, str(write_kubeconfig(tmp_path, server.url)), None, "table", 0, out)
    assert code == 1
    text = out.getvalue()
    assert "FAIL    metrics.listed" in text
    assert "likely cause: the adapter lists a metric only when a rule serves 'DCGM_CUSTOM_PROCESS_SM_UTIL'" in text
    assert text.rstrip().endswith("19 checks, 16 passed, 3 failed, 1 with a warning")  # the SLO: ARMS
    assert "round" not in text, "no progress lines without --wait"


def test_context_selects_the_cluster(fake_api, prod_cfg, tmp_path):
    server = fake_api("prod", "healthy")
    path = write_kubeconfig(tmp_path, "http://127.0.0.1:9", context="dead")
    doc = json.loads(path.read_text())
    doc["clusters"].append({"name": "live", "cluster": {"server": server.url}})
    doc["contexts"].append({"name": "live", "context": {"cluster": "live", "user": "tester"}})
    path.write_text(json.dumps(doc))
    out = io.StringIO()
    assert verify_main(prod_cfg, str(path), "live", "json", 0, out) == 0
    assert server.paths()[0].rstrip("/") == "/version"


def test_wait_polls_until_all_checks_pass(fake_api, staging_cfg, tmp_path):
    server = fake_api("staging", "apiservice-unavailable")
    out = io.StringIO()
    sleeps = []

    def adapter_recovers(seconds):
        sleeps.append(seconds)
        server.use("healthy")

    code = verify_main(staging_cfg, str(write_kubeconfig(tmp_path, server.url)), None, "table", 60, out,
                       sleep=adapter_recovers)
    assert code == 0
    lines = out.getvalue().splitlines()
    progress = [line for line in lines if line.startswith("verify round")]
    assert len(progress) == 2
    # the round's elapsed seconds depend on the machine's load, the rest does not
    assert re.match(r"verify round 1 \(\d+s/60s\): 14/19 checks pass; waiting on apiservice.available "
                    r"apiservice/v1beta1\.custom\.metrics\.k8s\.io, adapter\.ready ", progress[0])
    assert "(+2 more)" in progress[0]
    assert progress[1].startswith("verify round 2 (") and progress[1].endswith("20/20 checks pass")
    assert sleeps == [5.0]
    assert lines[-1] == "20 checks, 20 passed, 0 failed, 1 with a warning"


def test_wait_is_bounded_when_checks_keep_failing(fake_api, prod_cfg, tmp_path):
    server = fake_api("prod", "hpa-unknown")
    out, progress = io.StringIO(), io.StringIO()
    sleeps = []
    code = verify_main(prod_cfg, str(write_kubeconfig(tmp_path, server.url)), None, "json", 10, out,
                       sleep=sleeps.append, progress=progress)
    assert code == 1
    rounds = progress.getvalue().splitlines()
    assert 2 <= len(rounds) <= 4
    assert all("waiting on hpa.scaling-active hpa/inference/flower" in line for line in rounds)
    assert json.loads(out.getvalue())["summary"]["failed"] == 2, "stdout stays a single JSON document"


def test_unusable_kubeconfig_exits_2(prod_cfg, tmp_path):
    out = io.StringIO()
    assert verify_main(prod_cfg, str(tmp_path / "missing"), None, "table", 0, out) == 2
    assert out.getvalue().startswith("cannot build a Kubernetes client: ")


def test_unreachable_cluster_exits_1(prod_cfg, tmp_path):
    out = io.StringIO()
    code = verify_main(prod_cfg, str(write_kubeconfig(tmp_path, "http://127.0.0.1:9")), None, "table", 0, out)
    assert code == 1
    assert "FAIL    cluster.reachable" in out.getvalue()


def test_formats():
    results = [CheckResult("nodes.present", "pool/a", True, "1 node(s): n1"),
               CheckResult("hpa.current-metrics", "hpa/ns/w", False, "TARGETS m <unknown>/5", "no value")]
    assert format_table(results).splitlines() == [
        "STATUS  CHECK                SUBJECT   RESULT",
        "ok      nodes.present        pool/a    1 node(s): n1",
        "FAIL    hpa.current-metrics  hpa/ns/w  TARGETS m <unknown>/5",
        "                                       likely cause: no value",
        "",
        "2 checks, 1 passed, 1 failed",
    ]
    doc = json.loads(format_json(results))
    assert doc["ok"] is False and doc["summary"] == {"checks": 2, "passed": 1, "failed": 1, "warnings": 0}
    assert doc["checks"][1]["cause"] == "no value"
