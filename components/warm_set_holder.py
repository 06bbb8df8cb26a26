"""The program a warm GPU's holder container runs (components/warm_set.py renders it into a ConfigMap): it starts the
sleeping replicas of a pool's warm set on the one GPU the device plugin gave the container, one after the other,
and puts each to sleep once it serves, so that the next one finds the GPU's memory free.

Standard library only, Python 3.8 or later: it runs inside the models' own server image (vLLM's images carry
Python 3), not in the package's environment. It is started as ``python3 holder.py servers.json --next-server
<command line> --next-server <command line> ...``: the command lines stay in the container's args, where the kubelet
expands ``$(NAME)`` and a reader of the pod spec sees them; the JSON file lists, in the same order, each server's
``model``, ``port``, ``env``, its ``health``, ``sleep`` and ``isSleeping`` paths, and the seconds its start may take
(``startSeconds``); ``readyFile`` names the file whose presence the container's readiness probe tests.

Why one process tree per GPU: the NVIDIA device plugin hands a GPU to exactly one container, so the servers that
take turns on it must live in that container (llm-d's launcher likewise keeps several vLLM instances as children of
one process, at most one awake: llm-d-fast-model-actuation ``docs/launcher.md``). Waking and putting back to sleep
is not its business: the waker calls the servers' endpoints (docs/model-startup.md, "Who wakes a sleeping
replica"). When any server exits, the holder stops the others and exits with its code, so the kubelet restarts the
container and every server starts again; a half-populated holder would look ready with a model missing.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

POLL_SECONDS = 1.0
_VAR = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand(word, env):
    """Kubernetes' expansion of ``$(NAME)`` (``$$`` escapes a dollar; an unknown name stays as written), for the
    names the kubelet could not expand: a server's own variables, which only this program sets."""
    def one(m):
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))
    return _VAR.sub(one, word)


def request(method, port, path, timeout=5.0):
    """(status, body) of one HTTP request to a server of this container; (None, '') when it does not answer."""
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), method=method,
                                 data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, ""
    except (OSError, ValueError):
        return None, ""


def sleeping(port, path):
    status, body = request("GET", port, path)
    if status != 200:
        return None
    try:
        return bool(json.loads(body)["is_sleeping"])
    except (ValueError, KeyError, TypeError):
        return None


def stop(children, code):
    for child in children:
        if child.poll() is None:
            child.terminate()
    deadline = time.monotonic() + 25
    for child in children:
        try:
            child.wait(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            child.kill()
    sys.exit(code)


def wait_until(check, child, children, seconds, what):
    """Polls ``check`` until it holds; exits (stopping every child) when ``child`` dies or ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    while not check():
        if child.poll() is not None:
            print("holder: %s: the server exited with %s" % (what, child.returncode), flush=True)
            stop(children, child.returncode or 1)
        if time.monotonic() > deadline:
            print("holder: %s: not done after %d s" % (what, seconds), flush=True)
            stop(children, 1)
        time.sleep(POLL_SECONDS)


SEPARATOR = "--next-server"


def command_lines(words):
    """The words after the JSON file's path, split at each separator."""
    out = []
    for word in words:
        if word == SEPARATOR:
            out.append([])
        elif out:
            out[-1].append(word)
    return out


def main(argv):
    with open(argv[1]) as f:
        spec = json.load(f)
    lines = command_lines(argv[2:])
    if len(lines) != len(spec["servers"]):
        print("holder: %d command lines for %d servers" % (len(lines), len(spec["servers"])), flush=True)
        sys.exit(2)
    children = []
    signal.signal(signal.SIGTERM, lambda *_: stop(children, 0))
    ready_file = spec["readyFile"]
    if os.path.exists(ready_file):
        os.remove(ready_file)
    for server, line in zip(spec["servers"], lines):
        env = dict(os.environ)
        for name, value in server["env"].items():  # in order, as the kubelet expands a container's variables
            env[name] = expand(value, env)
        words = [expand(w, env) for w in line]
        print("holder: starting %s on port %d" % (server["model"], server["port"]), flush=True)
        child = subprocess.Popen(words, env=env)
        children.append(child)
        port = server["port"]
        wait_until(lambda: request("GET", port, server["health"])[0] == 200, child, children,
                   server["startSeconds"], "%s: %s" % (server["model"], server["health"]))
        status, _ = request("POST", port, server["sleep"], timeout=300)
        if status != 200:
            print("holder: %s: POST %s answered %s" % (server["model"], server["sleep"], status), flush=True)
            stop(children, 1)
        wait_until(lambda: sleeping(port, server["isSleeping"]) is True, child, children, 300,
                   "%s: %s" % (server["model"], server["isSleeping"]))
        print("holder: %s asleep" % server["model"], flush=True)
    with open(ready_file, "w") as f:
        f.write("asleep: %s\n" % ", ".join(s["model"] for s in spec["servers"]))
    while True:
        for child in children:
            if child.poll() is not None:
                print("holder: a server exited with %s" % child.returncode, flush=True)
                stop(children, child.returncode or 1)
        time.sleep(POLL_SECONDS)


if __name__ == "__main__":
    main(sys.argv)
