"""Compiler cache for every kernel build: ccache's gcc wrappers first in PATH."""

import os

WRAPPERS = "/usr/lib/ccache"


def env(cache):
    """The environment for a build under cache/ (its own ccache dir, 10 GiB cap)."""
    e = dict(os.environ)
    # kunit.py's bytecode would otherwise land in the tree and make it dirty.
    e["PYTHONDONTWRITEBYTECODE"] = "1"
    if os.path.isdir(WRAPPERS):
        e["PATH"] = WRAPPERS + os.pathsep + e.get("PATH", "")
        e["CCACHE_DIR"] = os.path.join(cache, "ccache")
        e.setdefault("CCACHE_MAXSIZE", "10G")
        # Build dirs differ per config: hash relative paths so hits carry over.
        e.setdefault("CCACHE_BASEDIR", cache)
        e.setdefault("CCACHE_NOHASHDIR", "1")
    return e
