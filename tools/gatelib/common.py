"""Shared helpers: errors, paths, running commands with progress and a bound."""

import argparse
import fcntl
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class GateError(Exception):
    """Bad input or a broken step: reported as one line, non-zero exit."""


class StepTimeout(GateError):
    """A bounded step (build, guest) ran past its bound and was killed."""


class StepStopped(StepTimeout):
    """A watched step (a guest) was stopped before its bound because its
    watcher saw that it would make no more progress (e.g. quiet after a BUG)."""


def config_fragments(cfg):
    """The Kconfig fragments of configuration cfg's kernel, merged in this
    order: the guest's base, the KUnit suite, the configuration."""
    return [os.path.join(REPO, "configs", "guest.config"), os.path.join(REPO, ".kunitconfig"),
            os.path.join(REPO, "configs", f"{cfg}.config")]


def say(msg):
    print(msg, flush=True)


def cache_dir(override=None):
    """The cache (tree, build dirs, ccache): flag, then $PMD_GATE_CACHE, then ~/.cache."""
    path = override or os.environ.get("PMD_GATE_CACHE")
    if not path:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
        path = os.path.join(base, "pmd-ptlock-gate")
    path = os.path.abspath(path)
    if path == REPO or path.startswith(REPO + os.sep):
        if not path.startswith(os.path.join(REPO, ".cache")):
            raise GateError(f"cache dir {path} is inside the repo: use .cache/ (ignored) or a dir outside")
    try:
        os.makedirs(path, exist_ok=True)
        probe = os.path.join(path, f".write-probe-{os.getpid()}")
        with open(probe, "w") as f:
            f.write("ok")
        os.unlink(probe)
    except OSError as e:
        raise GateError(f"cache dir {path} is not writable: {e.strerror}") from None
    return path


def git(tree, *args, check=True, capture=True, env=None):
    """Run git in tree with a fixed identity (CI may have none configured)."""
    full_env = dict(os.environ)
    full_env.update({
        "GIT_AUTHOR_NAME": "pmd-ptlock gate", "GIT_AUTHOR_EMAIL": "gate@localhost",
        "GIT_COMMITTER_NAME": "pmd-ptlock gate", "GIT_COMMITTER_EMAIL": "gate@localhost",
    })
    if env:
        full_env.update(env)
    r = subprocess.run(["git", "-C", tree, *args], env=full_env, text=True,
                       stdout=subprocess.PIPE if capture else None,
                       stderr=subprocess.PIPE if capture else None)
    if check and r.returncode != 0:
        err = (r.stderr or "").strip().splitlines()
        raise GateError(f"git {' '.join(args[:2])} failed in {tree}: {err[-1] if err else r.returncode}")
    return r


def run_logged(cmd, log_path, label, timeout, cwd=None, env=None, heartbeat=30, echo=False,
               watch=None):
    """Run cmd with output into log_path, printing a progress line every `heartbeat` s.

    The command runs in its own process group; past `timeout` seconds the whole
    group (make, qemu, ...) is killed and StepTimeout is raised. A `watch`
    (feed(line) for every output line, check() once a second returning a
    reason or None) can stop it earlier: the group is killed and StepStopped
    raised with the watcher's reason. Returns the exit code otherwise.
    """
    start = time.monotonic()
    last_line = [""]
    with open(log_path, "w", errors="replace") as log:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)

        def pump():
            for raw in iter(proc.stdout.readline, b""):
                line = raw.decode("utf-8", "replace")
                log.write(line)
                log.flush()
                if line.strip():
                    last_line[0] = line.strip()
                if watch is not None:
                    watch.feed(line)
                if echo:
                    sys.stdout.write(line)
                    sys.stdout.flush()

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        next_beat = heartbeat
        try:
            while True:
                try:
                    proc.wait(timeout=1)
                    break
                except subprocess.TimeoutExpired:
                    pass
                elapsed = time.monotonic() - start
                reason = watch.check() if watch is not None else None
                if reason:
                    kill_group(proc)
                    reader.join(5)
                    raise StepStopped(f"{label}: {reason}, stopped after {int(elapsed)} s "
                                      f"(log: {log_path})")
                if elapsed > timeout:
                    kill_group(proc)
                    reader.join(5)
                    raise StepTimeout(f"{label}: no end after {int(timeout)} s, killed (log: {log_path})")
                if heartbeat and elapsed >= next_beat:
                    say(f"  {label}: {int(elapsed)} s  {last_line[0][:90]}")
                    next_beat += heartbeat
        except KeyboardInterrupt:
            kill_group(proc)
            raise
        reader.join(5)
    return proc.returncode


def kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
    except ProcessLookupError:
        pass


def first_error(log_path):
    """The first line of a build log that looks like the error, else its last line."""
    try:
        with open(log_path, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return "no log"
    for line in lines:
        if re.search(r"error:|\bError \d|\*\*\*|ERROR", line):
            return line.strip()[:200]
    return lines[-1].strip()[:200] if lines else "no output"


class OneLineParser(argparse.ArgumentParser):
    """Bad input is one line on stderr and exit 2, not a traceback or a usage dump."""

    def error(self, message):
        tool = os.path.basename(self.prog)
        print(f"{tool}: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def output_file_problem(path):
    """Why path cannot be written as a result file, or None. Checked before
    any work by making its folder and opening it for appending (a file that
    was not there is removed again), so a bad --json fails in a line, not
    after an hour's run."""
    if os.path.isdir(path):
        return "it is a directory"
    existed = os.path.exists(path)
    above = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(above):
        above = os.path.dirname(above)
    if not os.path.isdir(above):
        return f"{above} is not a directory"
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "a"):
            pass
    except OSError as e:
        return e.strerror or str(e)
    if not existed:
        os.unlink(path)
    return None


def check_inputs(ap, args, files=(), dirs=(), outputs=()):
    """Bad input is one line and exit 2 before the cache lock or any work:
    each (flag, path) in files must be a file, in dirs a directory, in
    outputs writable."""
    for flag, path in files:
        if path is not None and not os.path.isfile(path):
            ap.error(f"{flag} {path}: no such file")
    for flag, path in dirs:
        if path is not None and not os.path.isdir(path):
            ap.error(f"{flag} {path}: no such directory")
    for flag, path in outputs:
        why = path is not None and output_file_problem(path)
        if why:
            ap.error(f"{flag} {path}: cannot write it ({why})")


def locked_cache(override, no_install):
    """Packages (as root), QEMU, the cache dir, and the cache's lock held for
    the run (a second run waits for the first). Returns (cache, lock file)."""
    from . import deps
    if os.geteuid() == 0 and not no_install:
        deps.ensure(install=True)
    deps.require_qemu()
    cache = cache_dir(override)
    lock = open(os.path.join(cache, "gate.lock"), "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        say(f"{os.path.basename(sys.argv[0]).replace('.py', '')}: another run holds "
            f"{cache}/gate.lock; waiting for it")
        fcntl.flock(lock, fcntl.LOCK_EX)
    return cache, lock


def write_json(path, obj):
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")
