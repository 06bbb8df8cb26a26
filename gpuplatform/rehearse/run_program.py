"""Runs one Pulumi Python program for :mod:`gpuplatform.rehearse.language_host`, in the program's own virtualenv.

The language host starts this file by path with the program's Python (``<virtualenv>/bin/python run_program.py
--monitor ADDR --engine ADDR ... PROGRAM [ARGS...]``), so it imports nothing but the standard library and the
``pulumi`` SDK installed beside the program. It does what a Pulumi language executor does for a Python program:

* the stack's configuration comes in the environment, as the engine hands it to the language host:
  ``PULUMI_CONFIG`` (a JSON object of ``namespace:key`` to string values) and ``PULUMI_CONFIG_SECRET_KEYS`` (a JSON
  list of the keys that are secrets); the SDK reads both (``pulumi.runtime.get_config_env`` and
  ``get_config_secret_keys_env``);
* the runtime is pointed at the engine's resource monitor and engine addresses, with the project, stack,
  organization, root directory, dry-run flag and parallelism the engine asked for (``pulumi.runtime.Settings``);
* the program (a folder with ``__main__.py``, or a file) runs as ``__main__`` inside ``pulumi.runtime.run_in_stack``,
  which registers the root stack resource and waits for every resource and output the program started.

Exit codes, as the language host reads them: 0 the program ran; 32 the program failed and the error was already
sent to the engine as a diagnostic (the host then tells the engine to stop without a second message); anything
else is an error the host reports with the process's exit status.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import os
import runpy
import sys
import traceback
from concurrent.futures import ThreadPoolExecutor

EXIT_REPORTED = 32
"""The program failed and its error is already on the engine's diagnostic stream."""


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Run a Pulumi Python program against a running engine")
    for flag in ("monitor", "engine", "project", "stack", "organization", "root_directory", "pwd", "tracing"):
        parser.add_argument(f"--{flag}")
    parser.add_argument("--dry_run", choices=("true", "false"), default="false")
    parser.add_argument("--parallel", type=int, default=0)
    parser.add_argument("program")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    return parser.parse_args(argv)


def _program_frames_only(program: str) -> str:
    """The traceback of the exception being handled from the program's first frame on (the runner's own frames
    say nothing to the program's author)."""
    main = os.path.abspath(os.path.join(program, "__main__.py") if os.path.isdir(program) else program)
    frames = traceback.extract_tb(sys.exc_info()[2])
    for index, frame in enumerate(frames):
        if os.path.abspath(frame.filename) == main:
            return traceback.format_exc(limit=-(len(frames) - index))
    return traceback.format_exc()


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    try:
        import pulumi
        import pulumi.runtime
    except ImportError as exc:
        print(f"the program's Python ({sys.executable}) cannot import the Pulumi SDK ({exc}): install the "
              "program's requirements into its virtualenv", file=sys.stderr)
        return 1

    pulumi.runtime.set_all_config(pulumi.runtime.get_config_env(), pulumi.runtime.get_config_secret_keys_env())
    pulumi.runtime.configure(pulumi.runtime.Settings(
        project=args.project, stack=args.stack, monitor=args.monitor, engine=args.engine,
        parallel=args.parallel or None, dry_run=args.dry_run == "true", organization=args.organization,
        root_directory=args.root_directory))
    if args.pwd:
        os.chdir(args.pwd)
    sys.argv = [args.program, *args.args]

    program_path = args.program
    if os.path.isdir(program_path) and not os.path.isfile(os.path.join(program_path, "__main__.py")):
        pulumi.log.error(f"no __main__.py in the program folder {os.path.abspath(program_path)}")
        return EXIT_REPORTED

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    # the SDK runs blocking work (resource registrations' RPCs) on the loop's default executor: a few threads per
    # operation the engine runs at once (an unbounded `--parallel` arrives as a huge number)
    executor = ThreadPoolExecutor(max_workers=min(args.parallel, 64) * 4) if args.parallel > 0 else None
    if executor:
        loop.set_default_executor(executor)
    # a failed program leaves futures nobody awaits; asyncio's complaints about them are noise to the user
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    try:
        loop.run_until_complete(pulumi.runtime.run_in_stack(
            lambda: runpy.run_path(program_path, run_name="__main__")))
        return 0
    except pulumi.RunError as exc:
        # a failure the program raised to be shown as it is (no traceback)
        pulumi.log.error(str(exc))
        return EXIT_REPORTED
    except Exception:  # noqa: BLE001 - any failure of the program is the program's error to show
        pulumi.log.error("Program failed with an unhandled exception:\n" + _program_frames_only(program_path))
        return EXIT_REPORTED
    finally:
        if executor:
            executor.shutdown(wait=True)
        loop.close()
        sys.stdout.flush()
        sys.stderr.flush()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
