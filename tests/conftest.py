"""Session fixtures shared by the test modules."""
import pytest

from support import stack_raw, synth

_CACHE: dict[str, list] = {}


@pytest.fixture(scope="session")
def stack_records():
    """stack name -> synthesized records (each stack synthesized once per session)."""
    def get(stack: str):
        if stack not in _CACHE:
            _CACHE[stack] = synth(stack_raw(stack))
        return _CACHE[stack]
    return get
