"""The cyclic garbage collector around a one-shot run (a synthesis, a whole ``plan`` or ``check`` command).

Its own module, importing nothing else of the package: the CLI pauses the collector before it knows which
command runs, and a ``check`` of plain manifests must not import the Pulumi SDK (:mod:`gpuplatform.synth` does).
"""
import gc
from contextlib import contextmanager


@contextmanager
def collector_paused():
    """Pause the cyclic garbage collector while the program runs.

    Every registration creates futures, tasks and outputs that refer to one another, and the collector re-scans
    them as the heap grows: about 40% of a 200-workload run. Paused, a 500-workload run peaks about 60 MB higher
    (``benchmarks/synth.py``); the cycles are freed by the first collection after the run. Nested use leaves the
    collector as the outermost caller set it (the CLI keeps it paused for a whole one-shot command)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
