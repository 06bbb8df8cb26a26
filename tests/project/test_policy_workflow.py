"""The CI workflow that runs the pack is valid GitHub Actions syntax and covers every stack."""
import subprocess
import sys
from pathlib import Path

import yaml
from support import REPO

WORKFLOW = REPO / ".github" / "workflows" / "preview.yml"
CHECK_JSONSCHEMA = Path(sys.executable).parent / "check-jsonschema"


def test_workflow_matches_the_github_schema():
    result = subprocess.run([str(CHECK_JSONSCHEMA), "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_workflow_previews_every_stack_with_the_pack():
    jobs = yaml.safe_load(WORKFLOW.read_text())["jobs"]
    for job in ("check", "preview"):
        assert jobs[job]["strategy"]["matrix"]["stack"] == ["dev", "staging", "prod", "local"]
    preview = next(s for s in jobs["preview"]["steps"] if str(s.get("uses", "")).startswith("pulumi/actions"))
    assert preview["with"]["command"] == "preview"
    assert preview["with"]["policyPacks"] == "policies"
    assert any("gpuplatform check --stack" in str(s.get("run", "")) for s in jobs["check"]["steps"])
