"""The holder program a warm GPU's pod runs (components/warm_set_holder.py), run here against stand-in servers
that share one "GPU" (tests/fixtures/warm_set/sleepy_server.py): it starts them one after the other, each only once
the one before sleeps, reports ready when all sleep, and exits when one of them does."""
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from support import REPO

HOLDER = REPO / "components" / "warm_set_holder.py"
SERVER = REPO / "tests" / "fixtures" / "warm_set" / "sleepy_server.py"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(port: int, path: str):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as r:
        return json.loads(r.read() or b"null")


@pytest.fixture
def holder(tmp_path):
    ports = [_free_port() for _ in range(3)]
    ready = tmp_path / "ready"
    spec = {"readyFile": str(ready), "sleepLevel": 1, "servers": [
        {"model": f"m{i}", "port": p, "env": {"FAKE_NAME": f"m{i}", "FAKE_MARK": f"$(FAKE_NAME)-{i}"},
         "health": "/health", "sleep": "/sleep?level=1", "isSleeping": "/is_sleeping", "startSeconds": 30}
        for i, p in enumerate(ports)]}
    (tmp_path / "servers.json").write_text(json.dumps(spec))
    args = [str(tmp_path / "servers.json")]
    for i, p in enumerate(ports):
        args += ["--next-server", sys.executable, str(SERVER), "--model=$(FAKE_NAME)", "--port=1", f"--port={p}"]
    env = {**os.environ, "FAKE_GPU_FILE": str(tmp_path / "gpu"), "FAKE_LOG": str(tmp_path / "log")}
    # its own session, so that the teardown can stop the holder and every server it started, and nothing else
    proc = subprocess.Popen([sys.executable, str(HOLDER), *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    yield proc, ports, tmp_path
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=10)


def _started(tmp) -> list[dict]:
    return [json.loads(line) for line in (tmp / "log").read_text().splitlines()]


def test_every_server_starts_after_the_one_before_sleeps_and_the_holder_turns_ready(holder):
    proc, ports, tmp = holder
    assert proc.poll() is None, proc.stdout.read()
    assert (tmp / "ready").read_text() == "asleep: m0, m1, m2\n"
    assert [_get(p, "/is_sleeping") for p in ports] == [{"is_sleeping": True}] * 3
    started = _started(tmp)
    # each sibling found the GPU free (the stand-in exits otherwise); the server's own variables are expanded in
    # its command line and environment, and its last --port wins
    assert [s["name"] for s in started] == ["m0", "m1", "m2"]
    assert [s["argv"][0] for s in started] == ["--model=m0", "--model=m1", "--model=m2"]
    assert [s["mark"] for s in started] == ["m0-0", "m1-1", "m2-2"]
    assert [s["port"] for s in started] == ports


def test_a_server_that_exits_takes_the_holder_and_its_siblings_down(holder):
    proc, ports, tmp = holder
    assert proc.poll() is None
    [victim] = [s["pid"] for s in _started(tmp) if s["port"] == ports[1]]
    os.kill(victim, signal.SIGKILL)
    assert proc.wait(timeout=40) != 0
    for port in (ports[0], ports[2]):
        with pytest.raises(OSError):
            _get(port, "/health")


def test_sigterm_stops_every_server_and_exits_cleanly(holder):
    proc, ports, _ = holder
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=40) == 0
    for port in ports:
        with pytest.raises(OSError):
            _get(port, "/health")


def test_too_few_command_lines_for_the_servers_is_an_error(tmp_path):
    (tmp_path / "servers.json").write_text(json.dumps({"readyFile": str(tmp_path / "r"), "servers": [
        {"model": "a", "port": 1, "env": {}, "health": "/health", "sleep": "/sleep?level=1",
         "isSleeping": "/is_sleeping", "startSeconds": 1}]}))
    run = subprocess.run([sys.executable, str(HOLDER), str(tmp_path / "servers.json")], capture_output=True,
                         text=True, timeout=30)
    assert run.returncode == 2 and "0 command lines for 1 servers" in run.stdout


def test_the_rendered_args_hold_one_command_line_per_server_of_the_config():
    """Example 007's holder args split as the program splits them, one line per server of its servers.json."""
    import importlib.util
    from gpuplatform.components.validation import load
    from gpuplatform.components import warm_set_objects as warm_set
    from test_warm_set import example
    spec = importlib.util.spec_from_file_location("holder_program", HOLDER)
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    cfg = load(example())
    pool = cfg.node_pools[0]
    lines = program.command_lines(warm_set.holder_args(cfg, pool)[1:])
    config = warm_set.holder_config(cfg, pool)
    assert len(lines) == len(config["servers"]) == 3
    assert [line[-1] for line in lines] == [f"--port={s['port']}" for s in config["servers"]]
    assert program.SEPARATOR == warm_set.SERVER_SEPARATOR
