"""Resource moves between releases, recorded as aliases so that ``pulumi up`` after an upgrade updates resources
in place instead of replacing them.

A resource's URN carries the types of its parents (pulumi/pulumi ``sdk/go/common/resource/urn.go``
``NewURN``), so a child that moves under a new component gets a new URN: without an alias the engine would
delete the old resource and create the new one, and for a GPU node pool's device plugin or a Helm release that
is an outage. ``pulumi.Alias(parent=old_parent)`` names the URN it had (pulumi/pulumi
``sdk/python/lib/pulumi/resource.py`` ``Alias``: unset fields default to the resource's own).

Moves of 0.2.0 (``docs/reuse.md``, "Renames and moves"): the GPU software releases and their namespaces moved
from GpuPlatform into GpuSoftware; the workload namespaces from GpuPlatform into WorkloadNamespace; the
autoscaling alerts and dashboard from GpuMonitoring into GpuAlerts.
"""
from typing import Optional

import pulumi


def moved_from(old_parent: Optional[pulumi.Resource], new_parent_type: str, old_prefix: str = "",
               new_prefix: str = "") -> pulumi.ResourceTransformation:
    """A transformation for a component built where its children used to be children of ``old_parent``: each
    direct child of the component (of type ``new_parent_type``) gets an alias to its URN under ``old_parent``,
    under its old name where the component's name prefix changed (``new_prefix`` was ``old_prefix``)."""
    def transform(args: pulumi.ResourceTransformationArgs) -> Optional[pulumi.ResourceTransformationResult]:
        parent = args.opts.parent
        if old_parent is None or parent is None or getattr(parent, "_type", None) != new_parent_type:
            return None
        name = args.name
        if new_prefix and name.startswith(new_prefix):
            name = old_prefix + name[len(new_prefix):]
        opts = pulumi.ResourceOptions.merge(args.opts, pulumi.ResourceOptions(
            aliases=[pulumi.Alias(name=name, parent=old_parent)]))
        return pulumi.ResourceTransformationResult(args.props, opts)
    return transform
