"""Errors stay short at any scale and speak of what the user wrote, in the user's words."""
import copy

import pytest

from gpuplatform.components.errors import FULL_ERRORS_ENV, ConfigError, counted, listing
from gpuplatform.components.validation import load
from support import stack_raw

MANY = 500


def many_workloads(n: int, max_nodes: int) -> dict:
    """prod with n copies of its workload, each with its own ingress hosts, on a pool of max_nodes nodes."""
    raw = stack_raw("prod")
    base = raw["workloads"][0]
    ingress = base["exposure"]["ingress"]
    raw["workloads"] = [
        dict(copy.deepcopy(base), name=f"svc-{i}", exposure=dict(base["exposure"], ingress=dict(
            ingress, routes=[dict(r, host=f"svc-{i}.{r['host']}") for r in ingress["routes"]])))
        for i in range(n)]
    raw["nodePools"][0]["maxNodes"] = max_nodes
    return raw


def capacity_error(raw) -> str:
    with pytest.raises(ConfigError) as exc:
        load(raw)
    return exc.value.render()


def test_capacity_error_for_hundreds_of_workloads_is_a_short_summary(monkeypatch):
    monkeypatch.delenv(FULL_ERRORS_ENV, raising=False)
    text = capacity_error(many_workloads(MANY, 2))
    assert len(text) < 500, text
    assert f"{MANY} workloads (svc-0 (7), svc-1 (7), svc-2 (7) and {MANY - 3} more)" in text
    assert "svc-10 " not in text
    assert FULL_ERRORS_ENV in text  # says how to get the rest


def test_the_full_list_on_request(monkeypatch):
    monkeypatch.setenv(FULL_ERRORS_ENV, "1")
    text = capacity_error(many_workloads(20, 1))
    assert all(f"svc-{i} (7)" in text for i in range(20))
    assert " more" not in text and FULL_ERRORS_ENV not in text


def test_a_few_items_are_listed_whole(monkeypatch):
    monkeypatch.delenv(FULL_ERRORS_ENV, raising=False)
    assert listing(["a", "b", "c"]) == "a, b, c"
    assert listing(["a", "b", "c", "d", "e"]) == "a, b, c and 2 more"


def test_units_are_counted_in_the_plural():
    assert counted(56, "MIG instance") == "56 MIG instances"
    assert counted(1, "GPU") == "1 GPU"
    assert counted(14, "GiB") == "14 GiB"
    text = capacity_error(many_workloads(30, 1))
    assert "56 MIG instances per node" in text


def cli(*args) -> tuple[int, str]:
    import io
    from contextlib import redirect_stderr, redirect_stdout

    from gpuplatform.cli import main

    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        code = main(list(args))
    return code, err.getvalue()


def issues_of(raw) -> list:
    with pytest.raises(ConfigError) as exc:
        load(raw)
    return exc.value.issues


def test_an_unknown_mig_profile_is_one_error_without_follow_ons():
    raw = stack_raw("prod")
    raw["nodePools"][0]["sharing"]["profile"] = "7g.80gb"  # an A100-80GB profile on an A100-40GB pool
    issues = issues_of(raw)
    assert [i.path for i in issues] == ["nodePools[0].sharing.profile"], [str(i) for i in issues]
    assert "7g.40gb" in issues[0].message


def test_a_misspelt_key_gets_a_did_you_mean():
    raw = stack_raw("prod")
    autoscaling = raw["workloads"][0]["autoscaling"]
    autoscaling["minReplica"] = autoscaling.pop("minReplicas")
    [issue] = issues_of(raw)
    assert issue.path == "workloads[0].autoscaling.minReplica"
    assert "Did you mean 'minReplicas'" in issue.message


def test_a_misspelt_key_inside_a_tagged_union_gets_a_did_you_mean():
    raw = stack_raw("prod")
    raw["nodePools"][0]["sharing"]["strategi"] = raw["nodePools"][0]["sharing"].pop("strategy")
    [issue] = issues_of(raw)
    assert issue.path == "nodePools[0].sharing.strategi" and "Did you mean 'strategy'" in issue.message


def test_flag_problems_are_not_called_stack_configuration(tmp_path):
    code, err = cli("plan", "--stack", "prod", "--config", "stacks/Pulumi.prod.yaml")
    assert code == 2 and err.startswith("invalid command line: --stack: given with --config")
    code, err = cli("plan", "--config", str(tmp_path / "Pulumi.none.yaml"))
    assert code == 2 and err.startswith("invalid command line: --config:") and "does not exist" in err
    code, err = cli("check", "--stack", "prod", "--policy-config", str(tmp_path / "none.json"))
    assert code == 2 and err.startswith("invalid command line: --policy-config:")
    code, err = cli("simulate", "--stack", "prod", "--workload", "flower", "--trace", "step", "--duration", "0s")
    assert code == 2 and err.startswith("invalid command line (1 problem):\n  - --duration:")
    assert "stack configuration" not in err
    code, err = cli("simulate", "--stack", "prod", "--workload", "nope", "--trace", "step")
    assert code == 2 and err.startswith("invalid command line (1 problem):\n  - --workload: no workload named 'nope'")


def test_stack_names_without_a_checkout_say_what_to_use_instead(monkeypatch, tmp_path):
    import gpuplatform.cli as cli_module

    monkeypatch.setattr(cli_module, "STACKS_DIR", tmp_path / "stacks")  # an installed package has no stacks/
    code, err = cli("plan", "--stack", "prod")
    assert code == 2
    assert "no stack files here" in err and "--config FILE" in err and "--project DIR" in err
    assert "stacks: " not in err


def test_verify_without_a_kubeconfig_says_where_it_looked(monkeypatch, tmp_path):
    import io

    from kubernetes.config import kube_config

    from gpuplatform.components.stack_config import load_stack_file
    from gpuplatform.verify import verify_main
    from support import REPO

    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    missing = tmp_path / "home" / ".kube" / "config"
    monkeypatch.setattr(kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(missing))
    out = io.StringIO()
    assert verify_main(load_stack_file(REPO / "stacks" / "Pulumi.prod.yaml"), None, None, "table", 0, out) == 2
    text = out.getvalue()
    assert f"the default {missing} (does not exist)" in text
    assert "KUBERNETES_SERVICE_HOST not set" in text and "--kubeconfig FILE" in text


def test_plot_without_matplotlib_names_the_extra(monkeypatch, tmp_path):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails as in a venv without the extra
    code, err = cli("simulate", "--stack", "prod", "--workload", "flower", "--trace", "step", "--duration", "5m",
                    "--plot", str(tmp_path / "out.png"))
    assert code == 2 and "pip install 'gpu-platform[plot]'" in err
    assert not (tmp_path / "out.png").exists()


def test_the_plot_extra_installs_matplotlib():
    import tomllib

    from support import REPO

    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(req.startswith("matplotlib") for req in extras["plot"])


@pytest.mark.parametrize("url, problem", [
    ("ack-prometheus-operator-prometheus:9090", "scheme"),
    ("http://", "names no host"),
    ("ftp://prom:9090", "scheme 'ftp'"),
    ("http://prometheus.monitoring.svc:99999", "port '99999' is not a number in 1-65535"),
    ("http://prometheus.monitoring.svc:0", "port 0"),
    ("http://prometheus.monitoring.svc:90a", "port '90a'"),
    ("http://admin:secret@prometheus.monitoring.svc:9090", "credentials"),
    ("http://prom_etheus..svc:9090", "neither a DNS name nor an IP address"),
    ("http://prometheus.monitoring.svc:9090/api?x=1", "query"),
    ("http://prometheus .svc:9090", "white space"),
])
def test_prometheus_url_is_parsed_fully(url, problem):
    raw = stack_raw("staging")
    raw["monitoring"]["prometheusUrl"] = url
    issues = [i for i in issues_of(raw) if i.path == "monitoring.prometheusUrl"]
    assert len(issues) == 1 and problem in issues[0].message and "allowed: http(s)://host" in issues[0].message


@pytest.mark.parametrize("url", ["http://prometheus.monitoring.svc:9090", "https://10.0.0.5:443/prom",
                                 "http://[fd00::5]:9090", "http://prometheus:65535"])
def test_good_prometheus_urls_pass(url):
    from gpuplatform.components.validation.common import url_problem

    assert url_problem(url) is None


def test_a_kubeconfig_path_the_plan_cannot_find_is_a_loud_warning(tmp_path, capsys):
    import yaml

    from gpuplatform.cli import main

    raw = stack_raw("local")
    raw["workloads"] = []  # the warning is the cluster's: no workload needs planning (or simulating) for it
    raw["cluster"]["kubeconfigPath"] = str(tmp_path / "missing" / "kubeconfig")
    path = tmp_path / "Pulumi.local.yaml"
    path.write_text(yaml.safe_dump({"config": {f"gpu-platform:{k}": v for k, v in raw.items()}}))
    assert main(["plan", "--config", str(path)]) == 0
    err = capsys.readouterr().err
    assert err.startswith("WARNING: cluster.kubeconfigPath") and "could not check it" in err
    (tmp_path / "missing").mkdir()
    (tmp_path / "missing" / "kubeconfig").write_text("apiVersion: v1\nkind: Config\n")
    assert main(["plan", "--config", str(path)]) == 0
    assert "WARNING" not in capsys.readouterr().err


def test_a_project_folder_problem_is_a_command_line_problem(tmp_path):
    code, err = cli("plan", "--project", str(tmp_path / "nowhere"))
    assert code == 2
    assert err.startswith("invalid command line (1 problem):\n  - --project: ") and "has no Pulumi.yaml" in err


def test_a_count_of_a_unit_with_a_complement_pluralizes_its_head_noun():
    from gpuplatform.components.errors import counted

    assert [counted(4, "GiB of GPU memory"), counted(2, "slice of a card"), counted(1, "GPU"), counted(3, "GPU")] == [
        "4 GiB of GPU memory", "2 slices of a card", "1 GPU", "3 GPUs"]
