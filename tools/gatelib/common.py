"""Shared helpers: errors, paths, running commands with progress and a bound."""

import argparse
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Dict

from .trees import DEFAULT_TREE, TREES

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class GateError(Exception):
    """Bad input or a broken step: reported as one line, non-zero exit."""


class StepTimeout(GateError):
    """A bounded step (build, guest) ran past its bound and was killed."""


class StepStopped(StepTimeout):
    """A watched step (a guest) was stopped before its bound because its
    watcher saw that it would make no more progress (e.g. quiet after a BUG)."""


# The configurations, each configs/NAME.config over the guest's base, in
# the order the matrix runs them: the shipped configuration first.
CONFIGS = ["default", "debug", "rt", "split-off"]


def config_fragments(cfg, family):
    """The Kconfig fragments of configuration cfg's kernel for a tree of
    series family family ('6.12', '7'), merged in this order: the guest's
    base, what only that family spells differently, the KUnit suite, the
    configuration."""
    return [os.path.join(REPO, "configs", "guest.config"),
            os.path.join(REPO, "configs", f"tree-{family}.config"),
            os.path.join(REPO, ".kunitconfig"), os.path.join(REPO, "configs", f"{cfg}.config")]


def say(msg):
    print(msg, flush=True)


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
            assert proc.stdout is not None
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


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def sigterm_like_ctrl_c():
    """SIGTERM (a CI timeout, kill) takes the tool the same way out as
    Ctrl-C: run_logged kills the step's process group, a mutant is taken
    back out of the tree, no gate is left running after its caller."""
    signal.signal(signal.SIGTERM, _raise_interrupt)


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


# The options every tool shares, declared once: name -> add_argument's keywords.
SHARED_OPTIONS: Dict[str, Dict[str, Any]] = {
    "--cache": dict(metavar="DIR", help="tree, build dirs, ccache, logs and mutation records "
                    "(default $PMD_GATE_CACHE or ~/.cache/pmd-ptlock-gate)"),
    "--no-install": dict(action="store_true",
                         help="never apt-get install missing packages; fail naming them instead"),
    "--timeout": dict(type=int, metavar="S",
                      help="bound on one guest run, in seconds (at least 5); a guest still "
                           "running then is killed and fails"),
    "--accel": dict(choices=["tcg", "kvm"], default="tcg",
                    help="QEMU accelerator (default tcg; kvm only where it is known to boot: "
                         "nested KVM hangs silently on this machine kind)"),
    "--jobs": dict(type=int, default=0, metavar="N", help="make -j (default: CPUs)"),
    "--tree": dict(choices=list(TREES), default=DEFAULT_TREE,
                   help=f"which Debian kernel tree to gate (default {DEFAULT_TREE}; 7.3 comes from "
                        "trixie-backports, pinned low); with --source, the series family is "
                        "the checkout's version's"),
    "--source": dict(metavar="DIR",
                     help="a kernel git checkout: its HEAD commit is what runs, instead of the "
                          "distro tarball (the gate works in its own clone in the cache; DIR "
                          "is only read)"),
}


def add_shared_options(ap, *names, unset=False, **defaults):
    """Add the named shared options to a parser (or an argument group),
    each with its one definition; defaults={'timeout': 900} sets a tool's
    own default. unset=True leaves every default None, so a tool can tell
    an option given from one not given (one mode's options refused in the
    other), the help still naming the default it applies."""
    for name in names:
        kw: Dict[str, Any] = dict(SHARED_OPTIONS[name])
        key = name.lstrip("-").replace("-", "_")
        if key in defaults:
            kw["default"] = defaults[key]
            kw["help"] = kw["help"] + f" (default {defaults[key]})"
        if unset:
            kw["default"] = None
        ap.add_argument(name, **kw)


def check_shared_options(ap, args):
    """The shared options' own rules, one line and exit 2 when broken."""
    if getattr(args, "timeout", None) is not None and args.timeout < 5:
        ap.error("--timeout must be at least 5 seconds")
    if (getattr(args, "jobs", 0) or 0) < 0:
        ap.error("--jobs must not be negative")


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


def write_json(path, obj):
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


def digest(files, *parts):
    """A digest of some strings and of files' names and contents."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() + b"\0")
    for p in files:
        with open(p, "rb") as f:
            h.update(os.path.basename(p).encode() + b"\0" + f.read())
    return h.hexdigest()
