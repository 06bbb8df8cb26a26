"""How every benchmark reports against its target: one JSON line per verdict, and an exit code `make bench` and
the tests read.

A benchmark run at a size its target does not speak about (the tests' smoke runs) reports ``"not measured"``:
the figures are printed, but a verdict on them would say nothing about the target.
"""
import json

PASS, FAIL, NOT_MEASURED = "pass", "fail", "not measured"
EXIT_TARGET_MISSED = 1


def verdict(target: str, passed, **figures) -> str:
    """Print the verdict line and return its result: ``passed`` True/False, or None when not measured."""
    result = NOT_MEASURED if passed is None else PASS if passed else FAIL
    print(json.dumps({"target": target, "result": result, **figures}), flush=True)
    return result


def exit_code(results) -> int:
    """0 unless a measured target was missed."""
    return EXIT_TARGET_MISSED if FAIL in results else 0
