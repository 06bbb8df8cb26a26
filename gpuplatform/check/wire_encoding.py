"""Properties as the Pulumi engine hands them to a policy: through a protobuf ``Struct`` and ``pulumi_policy``'s own
decoding, unknowns included. The Pulumi SDK is imported where it is used: importing it is most of the start-up of
a check of one file (benchmarks/check_manifests.py), and plain data takes :mod:`gpuplatform.wire` instead."""
from typing import Any, Mapping


def _wire_value(value: Any) -> Any:
    """A property as the engine marshals it: unknowns as the unknown sentinel (``KeepUnknowns``)."""
    from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

    if type(value).__name__ == "Unknown":  # pulumi.output.Unknown: a value the preview does not know yet
        return UNKNOWN_STRING_VALUE
    if isinstance(value, Mapping):
        return {str(k): _wire_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_wire_value(v) for v in value]
    return value


def as_policy_sees(props: Mapping[str, Any]) -> Any:
    """``props`` as ``pulumi_policy`` hands them to a policy: through a protobuf ``Struct`` (numbers become
    floats, as in ``Analyze``/``AnalyzeStack`` of pulumi-policy ``policy.py``, which call
    ``json_format.MessageToDict``), deserialized and wrapped in the unknown-checking proxy."""
    from google.protobuf import json_format, struct_pb2
    from pulumi_policy.deserialize import deserialize_properties
    from pulumi_policy.proxy import unknown_checking_proxy

    struct = struct_pb2.Struct()
    struct.update(_wire_value(props))
    return unknown_checking_proxy(deserialize_properties(json_format.MessageToDict(struct)))
