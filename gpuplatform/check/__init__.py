"""Offline policy runner: the pack's own ``pulumi_policy`` objects over synthesized resources or plain YAML.

``pulumi preview --policy-pack`` needs the CLI, a backend and credentials for every provider; this runs the
same validate functions without any of them, with the same per-policy config and enforcement levels
(``--policy-pack-config`` format: ``{"all": "mandatory", "<policy>": {"enforcementLevel": …, <props>}}``).
What each kind of policy is given is what the engine gives it (docs/policies.md, "What the policies see"):

* resource policies (``Analyze``) get each resource's **inputs**, as authored;
* stack policies (``AnalyzeStack``) get each resource's **outputs**: a component's are only what it passed to
  ``register_outputs``, a custom resource's what its provider returned (in a first preview, a Kubernetes object's
  inputs; after a deployment, the live object with the API server's defaults and controllers' changes).

Both go through the same wire encoding as under the CLI (a protobuf ``Struct``, so every number arrives as a
float, then ``pulumi_policy``'s own ``deserialize_properties`` and unknown-checking proxy), so a policy that reads
an unknown value is reported as an advisory "can't run during preview", exactly as the CLI reports it. Plain data
(every manifest, most stacks) takes the same trip without the SDK (:mod:`gpuplatform.wire`): importing it is most
of the start-up of a check of one file, and only preview values, secrets and remediation need it.

One module per job: :mod:`~gpuplatform.check.policy_config` (a policy-pack config and the levels it sets),
:mod:`~gpuplatform.check.wire_encoding` (properties as the engine hands them over), :mod:`~gpuplatform.check.policy_run`
(running the policies), :mod:`~gpuplatform.check.yaml_reading` (manifests with the line of every object and field),
:mod:`~gpuplatform.check.locating` (the file and line of each finding), :mod:`~gpuplatform.check.rejections` (what
the API server refuses), :mod:`~gpuplatform.check.formats` (table, JSON, SARIF) and
:mod:`~gpuplatform.check.findings` (what they all report). The names below stay importable from
``gpuplatform.check`` as before the split.
"""
from gpuplatform.check.findings import CONFIG_RULE_DESCRIPTION, CONFIG_RULE_ID, Violation, exit_code
from gpuplatform.check.formats import SARIF_SCHEMA, SARIF_VERSION, Checked, format_json, format_sarif, format_table
from gpuplatform.check.locating import config_violations, located, stack_file_locations
from gpuplatform.check.policy_config import LEVELS, active_policies, with_kubernetes_version, with_strict
from gpuplatform.check.policy_run import WIRES, StackState, first_preview_outputs, run_policies
from gpuplatform.check.rejections import api_server_level, api_server_violations
# _wire_value too: the tests of the pack's loading read it from here
from gpuplatform.check.wire_encoding import _wire_value, as_policy_sees  # noqa: F401
from gpuplatform.check.yaml_reading import (HELM_RELEASE_TYPE, MANIFEST_SUFFIXES, PATCH_ANNOTATION, PLAN_RELEASE_KEYS,
                                            YAML_LOADER, InputError, ManifestError, Manifests, line_of,
                                            load_manifests, read_manifests)

__all__ = ["CONFIG_RULE_DESCRIPTION", "CONFIG_RULE_ID", "Checked", "HELM_RELEASE_TYPE", "InputError", "LEVELS",
           "MANIFEST_SUFFIXES", "ManifestError", "Manifests", "PATCH_ANNOTATION", "PLAN_RELEASE_KEYS", "SARIF_SCHEMA",
           "SARIF_VERSION", "StackState", "Violation", "WIRES", "YAML_LOADER", "active_policies", "api_server_level",
           "api_server_violations", "as_policy_sees", "config_violations", "exit_code", "first_preview_outputs",
           "format_json", "format_sarif", "format_table", "line_of", "load_manifests", "located", "read_manifests",
           "run_policies", "stack_file_locations", "with_kubernetes_version", "with_strict"]
