"""The project's own mandatory policies pass on what each stack really installs: every rendered chart object and
every object the program authors, checked together the way `gpuplatform check --manifests` checks
`helm template` output."""
import pytest
import yaml

from gpuplatform.check import load_manifests, run_policies
from rendered import CONFIGS

CONFIG_NAMES = sorted(CONFIGS)


@pytest.mark.parametrize("name", CONFIG_NAMES)
def test_mandatory_policies_pass_on_the_rendered_stack(rendered, name, tmp_path):
    stack = rendered(name)
    path = tmp_path / f"{name}.yaml"
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml: the same text, several times faster
    path.write_text(yaml.dump_all([doc for _, doc in stack.all_objects()], Dumper=dumper, sort_keys=False))
    resources = load_manifests([path])
    assert len(resources) == len(stack.all_objects())
    mandatory = [f"{v.policy_id}: {v.resource_type} {v.resource_name}: {v.message}" for v in run_policies(resources) if v.mandatory]
    assert not mandatory, f"{len(mandatory)} mandatory violations on {name}:\n" + "\n".join(mandatory)
