"""Rules of the drain chain (``workloads[].drain``): every setting the chain cannot honour, at once
(components/drain.py)."""
from typing import Optional

from gpuplatform.components.config import PlatformConfig, Workload
from gpuplatform.components.drain import drain_chain
from gpuplatform.components.pools import PoolFacts
from gpuplatform.components.validation.common import _Issues, kubernetes_version


def check_drain(cfg: PlatformConfig, p: str, w: Workload, f: Optional[PoolFacts], out: _Issues) -> None:
    """A stated drain the server release cannot do (naming the first release that can), a drain flag under the
    stated longest request, a grace period under the preStop wait plus the drain, a drain past a server's fixed
    bound, a flag that cannot be added to a shell script."""
    if not w.drain.enabled or any(i.path in (f"{p}.image", f"{p}.args", f"{p}.command") for i in out):
        return
    for path, message in drain_chain(w, kubernetes_version(cfg)).issues:
        out.add(f"{p}.{path}", message)
