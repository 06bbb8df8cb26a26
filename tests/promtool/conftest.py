"""Run PromQL under test through the real Prometheus engine with ``promtool``.

A query that only looks right as a string can still return nothing, return one series per GPU instead of
one per pod, or keep labels the adapter cannot map back to a pod. ``promtool test rules`` evaluates it on
synthetic series with the same engine Prometheus uses, so these tests assert what an HPA would actually read.

Every test runs with two promtools (``tests/prometheus_server.py``): the release the stack deploys (built by
engines/build) and Debian's 2.42, the two sides of ``gpuplatform.simulate.promql.Semantics``. Locally a missing
``promtool`` skips the tests; in CI (``CI=true``) it fails them, so a runner image without the binary cannot turn
the suite silently green.
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

import pytest
from prometheus_server import RELEASES, prometheus_release, require_release
import yaml


# Matches the stack's default scrape interval, so windowed queries see as many samples as in a cluster.
DEFAULT_INTERVAL = "15s"


@dataclass
class Promtool:
    binary: str
    workdir: Path

    @property
    def version(self) -> tuple[int, int, int]:
        """The Prometheus release this promtool embeds (``promtool, version 2.42.0+ds ...``): the semantics an
        evaluator compared with it must follow."""
        return prometheus_release(self.binary)

    @property
    def major(self) -> int:
        return self.version[0]

    @staticmethod
    def selector(name: str, labels: Mapping[str, str] | None = None) -> str:
        """``name{k="v",...}`` in the order given, as promtool expects in ``series`` and ``labels`` fields."""
        if not labels:
            return name
        body = ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels.items())
        return f"{name}{{{body}}}"

    @staticmethod
    def recording_rule(record: str, expr: str) -> dict:
        return {"record": record, "expr": expr}

    @staticmethod
    def expr_test(expr: str, eval_time: str, samples: Iterable[tuple[str, float]]) -> dict:
        """A ``promql_expr_test``; each sample is (full series selector incl. name, value).

        promtool compares the complete label set of every result series, so an extra label or an extra
        series fails the test.
        """
        return {
            "expr": expr,
            "eval_time": eval_time,
            "exp_samples": [{"labels": labels, "value": value} for labels, value in samples],
        }

    @staticmethod
    def alert_test(alertname: str, eval_time: str, exp_alerts: list[dict]) -> dict:
        """An ``alert_rule_test``; ``exp_alerts`` items hold ``exp_labels`` and optionally ``exp_annotations``."""
        return {"alertname": alertname, "eval_time": eval_time, "exp_alerts": exp_alerts}

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [self.binary, *args], cwd=self.workdir, capture_output=True, text=True, timeout=60, check=False)

    def write_rules(self, rules: list[dict] | dict, name: str = "rules.yml", group: str = "under-test",
                    interval: str = DEFAULT_INTERVAL) -> Path:
        """Rules as one group, or a ready ``{"groups": [...]}`` document (e.g. a PrometheusRule's spec)."""
        path = self.workdir / name
        doc = rules if isinstance(rules, dict) else {"groups": [{"name": group, "interval": interval, "rules": rules}]}
        _dump(path, doc)
        return path

    def check_rules(self, rule_file: Path) -> None:
        result = self.run("check", "rules", rule_file.name)
        if result.returncode != 0:
            pytest.fail(_report("promtool check rules", result, [rule_file]), pytrace=False)

    def test_rules(self, rules: list[dict] | dict, input_series: list[dict], *, promql_expr_tests: Iterable[dict] = (),
                   alert_rule_tests: Iterable[dict] = (), interval: str = DEFAULT_INTERVAL) -> None:
        """Write ``rules`` and one unit test over ``input_series``; fail with promtool's diff on mismatch.

        ``input_series`` items are ``{"series": selector, "values": expanding notation}`` (e.g.
        ``"0+10x4"`` is 0,10,...,40 at ``interval`` steps; ``_`` is a missing sample).
        """
        rule_file = self.write_rules(rules, interval=interval)
        self.check_rules(rule_file)
        unit = {
            "rule_files": [rule_file.name],
            "evaluation_interval": interval,
            "tests": [{
                "interval": interval,
                "input_series": list(input_series),
                **({"promql_expr_test": list(promql_expr_tests)} if promql_expr_tests else {}),
                **({"alert_rule_test": list(alert_rule_tests)} if alert_rule_tests else {}),
            }],
        }
        test_file = self.workdir / "unit.yml"
        _dump(test_file, unit)
        result = self.run("test", "rules", test_file.name)
        if result.returncode != 0:
            pytest.fail(_report("promtool test rules", result, [rule_file, test_file]), pytrace=False)


@pytest.fixture(scope="session", params=RELEASES)
def promtool_binary(request) -> str:
    return require_release("promtool", request.param)


@pytest.fixture
def promtool(promtool_binary: str, tmp_path: Path) -> Promtool:
    return Promtool(promtool_binary, tmp_path)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def _dump(path: Path, data: dict) -> None:
    # Unbounded width keeps each PromQL expression on one line in the failure report.
    path.write_text(yaml.safe_dump(data, sort_keys=False, width=float("inf")))


def _report(what: str, result: subprocess.CompletedProcess, files: list[Path]) -> str:
    parts = [f"{what} exited {result.returncode}", result.stdout.strip(), result.stderr.strip()]
    parts += [f"--- {f.name}\n{f.read_text()}" for f in files]
    return "\n".join(p for p in parts if p)
