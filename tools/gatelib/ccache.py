"""Compiler cache for every kernel build: ccache's gcc wrappers first in PATH."""

import os
import subprocess

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
        # Build dirs differ per configuration (build/<version>/<config>/kernel,
        # all at one depth): paths under the cache are hashed relative to the
        # build dir and the build dir itself is left out, so an object that
        # compiles the same in two configurations is a hit in the second.
        e.setdefault("CCACHE_BASEDIR", cache)
        e.setdefault("CCACHE_NOHASHDIR", "1")
        # Headers' times change on every `git am`/reset of the tree: hash
        # their contents only.
        e.setdefault("CCACHE_SLOPPINESS", "include_file_mtime,include_file_ctime,time_macros")
    return e


def counts(build_env):
    """(hits, misses) so far in the cache build_env points at, or None
    without ccache."""
    if "CCACHE_DIR" not in build_env:
        return None
    r = subprocess.run(["ccache", "--print-stats"], env=build_env, stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
    if r.returncode != 0:
        return None
    stats = {}
    for line in r.stdout.splitlines():
        parts = line.split("\t")
        if len(parts) == 2 and parts[1].strip().isdigit():
            stats[parts[0]] = int(parts[1])
    hits = stats.get("direct_cache_hit", 0) + stats.get("preprocessed_cache_hit", 0)
    return hits, stats.get("cache_miss", 0)


def hit_rate(before, after):
    """'H/N (P %)' of the compilations between two counts(), or None."""
    if before is None or after is None:
        return None
    hits, misses = after[0] - before[0], after[1] - before[1]
    total = hits + misses
    if total == 0:
        return "0/0 (nothing compiled)"
    return f"{hits}/{total} ({100 * hits // total} %)"
