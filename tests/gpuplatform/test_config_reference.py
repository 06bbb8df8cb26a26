"""docs/configuration-reference.md is generated from the stack file's schema: the committed file is what the code
generates today, and every key of the schema has its row."""
from gpuplatform import config_reference
from gpuplatform.schema import stack_file_schema
from support import REPO

REFERENCE = REPO / "docs" / "configuration-reference.md"


def test_the_committed_reference_is_what_the_schema_generates():
    assert config_reference.main(["--check", "--out", str(REFERENCE)]) == 0, (
        "docs/configuration-reference.md is stale: run `python -m gpuplatform.config_reference`")


def test_a_stale_reference_is_caught(tmp_path):
    stale = tmp_path / "reference.md"
    stale.write_text(REFERENCE.read_text().replace("| `maxReplicas` |", "| `maxReplica` |", 1))
    assert config_reference.main(["--check", "--out", str(stale)]) == 1


def test_every_object_and_key_of_the_schema_has_its_row():
    schema = stack_file_schema()
    text = config_reference.render()
    for key in schema["properties"]["config"]["properties"]:
        assert f"| `{key}` |" in text, key
    for name, model in schema["$defs"].items():
        section = text.split(f"\n## {name}\n", 1)[1].split("\n## ", 1)[0]
        for key in model.get("properties", {}):
            assert f"| `{key}` |" in section, (name, key)
