"""This team's own components folder, as many Pulumi projects have one: it sits beside gpu-platform's without
shadowing it, because gpu-platform installs under the ``gpuplatform`` namespace."""

TEAM_NAMESPACE = "ml-serving"
"""Where this team's services run."""


def team_autoscaling(max_replicas: int) -> dict:
    """The team's house rule: GPU services scale on utilisation at 60 percent."""
    return {"minReplicas": 1, "maxReplicas": max_replicas,
            "metrics": [{"metric": "gpu_util", "target": 60, "unit": "percent"}]}
