"""WorkloadNamespace: a namespace for inference services, with its Pod Security level.

Pod Security labels apply to a whole namespace (kubernetes.io "Pod Security Admission"): services that run as
non-root share a ``restricted`` namespace; images that only run as root get a ``baseline`` one of their own,
warned and audited at ``restricted``, so they never lower the level of the others.
"""
from typing import Literal, Optional, TypedDict

import pulumi
from typing_extensions import NotRequired

from gpuplatform.components.cluster import GpuCluster
from gpuplatform.components.k8s_objects import namespace, register
from gpuplatform.components.k8s_validity import DNS_LABEL
from gpuplatform.components.assembly import BUILT, ComposedComponent


class WorkloadNamespaceArgs(TypedDict):
    cluster: GpuCluster
    """The cluster the namespace is created in. Required."""
    name: str
    """The namespace's name (a DNS label). Required."""
    pod_security: NotRequired[Literal["restricted", "baseline"]]
    """Enforced Pod Security level: ``restricted`` for services that run as non-root, ``baseline`` for the ones
    that set ``runAsRoot`` (warned and audited at restricted). Default ``restricted``."""


class WorkloadNamespace(ComposedComponent, pulumi.ComponentResource):
    """A namespace InferenceServices are created in; each service waits for it."""

    name: str
    pod_security: str
    resource: pulumi.CustomResource

    def __init__(self, name: str, args: WorkloadNamespaceArgs, opts: Optional[pulumi.ResourceOptions] = None):
        from gpuplatform.components.args import ArgsIssue, check_args, component_label, raise_for
        from gpuplatform.components.assembly import checking

        label = component_label("WorkloadNamespace", name)
        with checking(self, label) as outcome:
            raise_for(check_args("WorkloadNamespace", name, args, WorkloadNamespaceArgs))
            if not DNS_LABEL.match(args["name"]) or len(args["name"]) > 63:
                raise_for([ArgsIssue(f"{label} args.name", f"{args['name']!r} is not a namespace name; allowed: a "
                                     "DNS label (lowercase letters, digits and '-', at most 63 characters)")])
            self.label = label
            self.cluster: GpuCluster = args["cluster"]
            self.name = args["name"]
            self.pod_security = args.get("pod_security", "restricted")
        if not outcome.build:
            return
        super().__init__("gpuplatform:index:WorkloadNamespace", name, {"name": args["name"]}, opts)
        outcome.restore()
        obj = (namespace(self.name, "restricted", warn=True) if self.pod_security == "restricted"
               else namespace(self.name, "baseline", warn_audit="restricted"))
        self.resource = register(f"{name}-namespace", obj,
                                 pulumi.ResourceOptions(parent=self, provider=self.cluster.provider))
        BUILT.append(self)  # for the tools that read a composed program (components/assembly.py)
        self.register_outputs({"name": self.name})
