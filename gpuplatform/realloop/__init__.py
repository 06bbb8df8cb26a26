"""The autoscaling loop on the real controllers, and ``simulate`` measured against it (docs/real-loop.md)."""
