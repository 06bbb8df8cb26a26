"""The manifest corpus (tests/fixtures/corpus): manifests in the shapes real projects publish, each judged by
`gpuplatform check --manifests` exactly as verdicts.yaml says a careful platform engineer would."""
import json

import pytest
import yaml

from gpuplatform import apiserver
from gpuplatform.cli import main
from gpuplatform.policies.pack import POLICY_DEFS
from support import FIXTURES_DIR

CORPUS = FIXTURES_DIR / "corpus"
VERDICTS = yaml.safe_load((CORPUS / "verdicts.yaml").read_text())
LEVEL = {p.id: p.level.value for p in POLICY_DEFS} | {apiserver.RULE_ID: "mandatory"}


def test_the_corpus_is_large_and_every_file_has_a_verdict():
    files = sorted(p.name for p in CORPUS.glob("*.yaml") if p.name != "verdicts.yaml")
    assert len(files) >= 25
    assert sorted(VERDICTS) == files
    blocked = [f for f, v in VERDICTS.items() if v["mandatory"]]
    assert 10 <= len(blocked) <= len(files) - 10, "the corpus needs both clean and blocked manifests"


def test_verdicts_name_real_policies_at_their_level():
    for name, v in VERDICTS.items():
        for pid in v["mandatory"]:
            assert LEVEL.get(pid) == "mandatory", (name, pid)
        for pid in v["advisory"]:
            assert LEVEL.get(pid) == "advisory", (name, pid)


@pytest.mark.parametrize("name", sorted(VERDICTS))
def test_check_gives_the_expected_verdict(name, capsys):
    code = main(["check", "--manifests", str(CORPUS / name), "--format", "json"])
    found = json.loads(capsys.readouterr().out)
    got = {level: sorted({v["policy_id"] for v in found if v["level"] == level})
           for level in ("mandatory", "advisory")}
    want = {level: sorted(set(VERDICTS[name][level])) for level in ("mandatory", "advisory")}
    assert got == want, VERDICTS[name]["why"]
    assert code == (1 if want["mandatory"] else 0)


def test_the_whole_corpus_at_once_blocks_only_the_bad_files(capsys):
    """Checked together, cross-object findings may resolve, but nothing new becomes mandatory."""
    main(["check", "--manifests", str(CORPUS), "--format", "json"])
    found = json.loads(capsys.readouterr().out)
    expected = {pid for v in VERDICTS.values() for pid in v["mandatory"]}
    assert {v["policy_id"] for v in found if v["level"] == "mandatory"} == expected
