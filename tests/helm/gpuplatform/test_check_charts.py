"""`check --stack --charts DIR`: each Helm release whose pinned package is in DIR is rendered with the real engine
and what it installs is checked like `--manifests` input (policies and the API server's checks), located as
`helmrelease <name>: <kind> <name>`; the releases that could not be rendered are named once, with why."""
import json
from importlib import metadata
from pathlib import Path

import yaml

from gpuplatform import chart_render
from gpuplatform.cli import main
from support import REPO, stack_raw, synth



def stack_file(tmp_path, adapter_values=None) -> Path:
    doc = yaml.safe_load((REPO / "stacks" / "Pulumi.prod.yaml").read_text())
    if adapter_values is not None:
        doc["config"]["gpu-platform:monitoring"]["helmValues"] = {"prometheusAdapter": adapter_values}
    path = tmp_path / "Pulumi.charts.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def run(capsys, *args) -> tuple[int, list, str]:
    capsys.readouterr()
    code = main(["check", *args, "--format", "json"])
    out = capsys.readouterr()
    return code, json.loads(out.out), out.err


def test_what_a_release_renders_is_checked_and_located_in_the_release(charts, tmp_path, capsys):
    """A memory limit prometheus-adapter's values pass through verbatim: the release object is fine, the
    Deployment the chart renders is refused by the API server."""
    path = stack_file(tmp_path, {"resources": {"limits": {"memory": "512 MiB"}}})
    code, found, err = run(capsys, "--config", str(path), "--charts", str(charts.path))
    rejected = [v for v in found if v["policy_id"] == "api-server-rejects"]
    assert code == 1 and len(rejected) == 1
    assert rejected[0]["file"] == "helmrelease prometheus-adapter: Deployment monitoring/prometheus-adapter"
    assert '"512 MiB" is not a Kubernetes quantity' in rejected[0]["message"]
    # the one release no public package exists for is not in prod; every release rendered, nothing to say
    assert "not rendered" not in err
    code, found, err = run(capsys, "--config", str(path), "--charts", str(tmp_path))  # an empty directory
    assert code == 0 and not [v for v in found if v["policy_id"] == "api-server-rejects"]
    assert err.count("not rendered") == 1 and "prometheus-adapter" in err and "prometheus-adapter-5.3.0.tgz" in err


def test_a_rendered_release_replaces_its_release_object_and_the_clean_stack_stays_clean(charts):
    from gpuplatform.check import api_server_violations, located, run_policies

    records = synth(stack_raw("prod"))
    resources, read, note = chart_render.with_rendered(list(records), charts, (1, 35))
    assert note is None
    assert not [r for r in resources if r.type == chart_render.RELEASE_TYPE]
    kinds = {r.inputs["kind"] for r in read.resources}
    assert {"APIService", "Deployment", "DaemonSet", "Prometheus"} <= kinds
    assert len(resources) == len(records) - 4 + len(read.resources)  # the four releases of prod
    found = located(run_policies(resources), read.locations) + api_server_violations(read, "1.35")
    assert found and not [v for v in found if v.mandatory]
    node_exporter = [v for v in found if v.file == "helmrelease kube-prometheus-stack: DaemonSet "
                     "monitoring/kube-prometheus-stack-prometheus-node-exporter"]
    assert node_exporter and all(v.file.startswith("helmrelease ") for v in found if v.file)


def test_without_packages_or_engine_every_release_is_named_with_why(monkeypatch, capsys, tmp_path):
    monkeypatch.delenv(chart_render.CHARTS_ENV, raising=False)
    code, _, err = run(capsys, "--stack", "prod")
    assert code == 0
    assert err.strip() == ("note: not rendered, checked as release objects only: kube-prometheus-stack, cert-manager, "
                           "dcgm-exporter, prometheus-adapter (no chart packages given (--charts DIR or "
                           "GPUPLATFORM_CHARTS_DIR))")
    assert main(["check", "--stack", "prod", "--charts", str(tmp_path / "nowhere")]) == 2
    assert "invalid command line: --charts" in capsys.readouterr().err

    real = metadata.version

    def missing(name):
        if name == "helm-python-sdk":
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(chart_render.metadata, "version", missing)
    result = chart_render.render_stack_releases(synth(stack_raw("prod")), chart_render.ChartsDir(tmp_path), (1, 35))
    assert result.rendered == [] and len(result.unrendered) == 4
    assert all("pip install 'gpu-platform[charts]'" in why for _, why in result.unrendered)
