"""The cache: where the gate keeps what outlives a run (the unpacked tree,
build dirs, ccache, logs, mutation records), its layout, its lock and the
build environment that points ccache into it. Every path under the cache is
made here and nowhere else."""

from __future__ import annotations

import fcntl
import os
import sys
from typing import Dict, Optional, TextIO

from . import deps
from .common import REPO, GateError, say


def default_root(override: Optional[str] = None) -> str:
    """The cache's root: the flag, then $PMD_GATE_CACHE, then ~/.cache."""
    path = override or os.environ.get("PMD_GATE_CACHE")
    if not path:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
        path = os.path.join(base, "pmd-ptlock-gate")
    return os.path.abspath(path)


class Cache:
    """A cache root, made and checked writable (GateError otherwise)."""

    def __init__(self, override: Optional[str] = None):
        path = default_root(override)
        if path == REPO or path.startswith(REPO + os.sep):
            if not path.startswith(os.path.join(REPO, ".cache")):
                raise GateError(f"cache dir {path} is inside the repo: use .cache/ (ignored) "
                                f"or a dir outside")
        try:
            os.makedirs(path, exist_ok=True)
            probe = os.path.join(path, f".write-probe-{os.getpid()}")
            with open(probe, "w") as f:
                f.write("ok")
            os.unlink(probe)
        except OSError as e:
            raise GateError(f"cache dir {path} is not writable: {e.strerror}") from None
        self.root = path
        self._lock: Optional[TextIO] = None

    def __str__(self) -> str:
        return self.root

    # Layout.
    def src_root(self) -> str:
        """Where trees are unpacked, one dir per tarball."""
        return os.path.join(self.root, "src")

    def kernel_build(self, version: str, config: str) -> str:
        return os.path.join(self.root, "build", version, config, "kernel")

    def bench_build(self, version: str, kernel: str) -> str:
        return os.path.join(self.root, "build", version, "bench", kernel)

    def selftests_build(self, version: str) -> str:
        return os.path.join(self.root, "build", version, "selftests")

    def logs(self, version: str, config: Optional[str] = None) -> str:
        path = os.path.join(self.root, "logs", version, *([config] if config else []))
        os.makedirs(path, exist_ok=True)
        return path

    def scratch(self, name: str) -> str:
        """A fixed directory for the project's tests' own kernel checkouts: a
        checkout's cache key is its path, so a fixed path lets the next run
        reuse its clone and build instead of adding new ones."""
        return os.path.join(self.root, "scratch", name)

    def mutate_work(self, tree: str, suite: str) -> str:
        return os.path.join(self.root, "mutate", tree, suite)

    def ccache_dir(self) -> str:
        return os.path.join(self.root, "ccache")

    # The lock: one run at a time per cache.
    def lock_path(self) -> str:
        return os.path.join(self.root, "gate.lock")

    def lock(self, wait: bool = True) -> bool:
        """Hold the cache's lock for this process's life (a second run waits
        for the first, or with wait=False returns False)."""
        f = open(self.lock_path(), "w")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not wait:
                f.close()
                return False
            say(f"{os.path.basename(sys.argv[0]).replace('.py', '')}: another run holds "
                f"{self.lock_path()}; waiting for it")
            fcntl.flock(f, fcntl.LOCK_EX)
        self._lock = f
        return True

    def unlock(self) -> None:
        if self._lock:
            self._lock.close()
            self._lock = None

    # The build environment.
    def build_env(self) -> Dict[str, str]:
        """The environment for a build using this cache: ccache's gcc
        wrappers first in PATH, its store here (10 GiB cap)."""
        e = dict(os.environ)
        # kunit.py's bytecode would otherwise land in the tree and make it dirty.
        e["PYTHONDONTWRITEBYTECODE"] = "1"
        if os.path.isdir(CCACHE_WRAPPERS):
            e["PATH"] = CCACHE_WRAPPERS + os.pathsep + e.get("PATH", "")
            e["CCACHE_DIR"] = self.ccache_dir()
            e.setdefault("CCACHE_MAXSIZE", "10G")
            # Build dirs differ per configuration (build/<version>/<config>/kernel,
            # all at one depth): paths under the cache are hashed relative to the
            # build dir and the build dir itself is left out, so an object that
            # compiles the same in two configurations is a hit in the second.
            e.setdefault("CCACHE_BASEDIR", self.root)
            e.setdefault("CCACHE_NOHASHDIR", "1")
            # Headers' times change on every `git am`/reset of the tree: hash
            # their contents only.
            e.setdefault("CCACHE_SLOPPINESS", "include_file_mtime,include_file_ctime,time_macros")
        return e


CCACHE_WRAPPERS = "/usr/lib/ccache"


def open_locked(override: Optional[str], no_install: bool) -> Cache:
    """Packages (as root), QEMU, the cache, and its lock held for the run."""
    if os.geteuid() == 0 and not no_install:
        deps.ensure(install=True)
    deps.require_qemu()
    cache = Cache(override)
    cache.lock()
    return cache
