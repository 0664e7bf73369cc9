"""The kernel build: configure a build dir from Kconfig fragments over
allnoconfig, build the kernel and the host's selftests/mm, and read the
facts of a build (its .config, its generated bounds, its ccache hits).
Shared by tools/gate and tools/bench."""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from typing import Dict, Sequence

from .cache import Cache
from .common import GateError, digest, first_error, run_logged, say

SET = re.compile(r"^CONFIG_([A-Za-z0-9_]+)=(.*)$")
UNSET = re.compile(r"^# CONFIG_([A-Za-z0-9_]+) is not set$")


def read_config(path: str, unset: bool = False) -> Dict[str, str]:
    """{SYMBOL: value} of a .config or a fragment (the one parser of both);
    with unset, '# CONFIG_X is not set' lines give "n"."""
    have: Dict[str, str] = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            m = SET.match(line) or (UNSET.match(line) if unset else None)
            if m:
                have[m.group(1)] = m.group(2) if m.re is SET else "n"
    return have


def wanted_symbols(fragments):
    """{SYMBOL: value} the fragments ask for, a later fragment overriding an
    earlier one (merge_config.sh's order)."""
    want = {}
    for frag in fragments:
        want.update(read_config(frag, unset=True))
    return want


def missing_symbols(config_path, fragments):
    """Symbols the fragments asked for that the final .config does not have as asked."""
    have = read_config(config_path)
    bad = []
    for sym, val in wanted_symbols(fragments).items():
        got = have.get(sym, "n")
        if got != val:
            bad.append(f"CONFIG_{sym}={val} (got {got})")
    return bad


# How a build dir is configured: the fragments merged over allnoconfig
# (merge_config.sh -n), so the kernel holds what they ask for and what that
# selects, and nothing else. Part of the configure stamp: a build dir made
# another way is configured again.
BASE = "allnoconfig"


def configure(tree, build, fragments, log_dir, env):
    """The fragments merged in order over allnoconfig, redone only when a
    fragment changes."""
    os.makedirs(build, exist_ok=True)
    paths = list(fragments)
    stamp_path = os.path.join(build, ".gate-config-stamp")
    config = os.path.join(build, ".config")
    stamp = digest(paths, BASE)
    old = open(stamp_path).read().strip() if os.path.isfile(stamp_path) else ""
    if old != stamp or not os.path.isfile(config):
        log = os.path.join(log_dir, "kernel-config.log")
        if os.path.exists(log):
            os.unlink(log)
        # merge_config.sh -n runs `make allnoconfig` with the merged fragments
        # as KCONFIG_ALLCONFIG: what they set is kept, every other prompt is n.
        cmd = [os.path.join(tree, "scripts", "kconfig", "merge_config.sh"), "-n", "-O", build,
               *paths]
        if run_logged(cmd, log, "kernel config", 600, cwd=tree, env=env, heartbeat=0) != 0:
            raise GateError(f"kernel configuration failed (log: {log})")
        with open(stamp_path, "w") as f:
            f.write(stamp + "\n")
    bad = missing_symbols(config, fragments)
    if bad:
        names = ", ".join(os.path.basename(p) for p in fragments)
        raise GateError(f"config fragment did not take effect ({names}): {', '.join(bad[:6])}")
    return read_config(config)


def jobs(requested=None):
    """Parallel make jobs: the --jobs asked for, else one per CPU."""
    return requested or os.cpu_count() or 2


def build_kernel(tree, build, log_dir, env, jobs, timeout=3600):
    log = os.path.join(log_dir, "kernel-build.log")
    say(f"kernel: building ({build}); log {log}")
    rc = run_logged(["make", f"O={build}", f"-j{jobs}", "bzImage"], log, "kernel build", timeout,
                    cwd=tree, env=env)
    if rc != 0:
        raise GateError(f"kernel build failed: {first_error(log)} (log: {log})")
    return os.path.join(build, "arch", "x86", "boot", "bzImage")


def build_selftests(tree, build, log_dir, env, jobs, timeout=1800):
    """Headers into build/usr/include, selftests/mm built into build/kselftest/mm
    and installed, with kselftest's runner, into build/kselftest/kselftest_install: the
    guest runs that install (run_kselftest.sh) and never runs make, whose
    up-to-date checks over 9p took about 45 s of every guest run."""
    log = os.path.join(log_dir, "selftests-build.log")
    say(f"guest: building selftests/mm on the host; log {log}")
    for cmd in (["make", f"O={build}", "-s", "headers"],
                ["make", "-C", "tools/testing/selftests", "TARGETS=mm", f"O={build}",
                 "building_out_of_srctree=1", f"-j{jobs}", "install"]):
        rc = run_logged(cmd, log, "selftests build", timeout, cwd=tree, env=env)
        if rc != 0:
            raise GateError(f"selftests build failed: {first_error(log)} (log: {log})")
    if not os.path.isfile(os.path.join(build, INSTALL, "run_kselftest.sh")):
        raise GateError(f"selftests install made no {INSTALL}/run_kselftest.sh (log: {log})")
    return os.path.join(build, "kselftest", "mm")


# Where build_selftests installs, relative to its build dir (kselftest's default).
INSTALL = os.path.join("kselftest", "kselftest_install")


def config_facts(config_path, bounds_path=None):
    """The symbols that decide which locking design the kernel has (and
    PT_RECLAIM, whether emptied PTE tables are freed under the PMD lock), and
    ALLOC_SPLIT_PTLOCKS, a C macro (sizeof(spinlock_t) > sizeof(long)) read
    off the build's generated bounds.h."""
    want = ["SPLIT_PTE_PTLOCKS", "SPLIT_PMD_PTLOCKS", "PREEMPT_RT", "PROVE_LOCKING", "NR_CPUS",
            "TRANSPARENT_HUGEPAGE", "PT_RECLAIM"]
    facts: Dict[str, object] = {k: "n" for k in want}
    try:
        have = read_config(config_path)
    except OSError:
        have = {}
    facts.update({k: v.strip('"') for k, v in have.items() if k in want})
    if bounds_path:
        size = None
        try:
            with open(bounds_path) as f:
                m = re.search(r"^#define SPINLOCK_SIZE (\d+)", f.read(), re.M)
                size = int(m.group(1)) if m else None
        except OSError:
            pass
        facts["SPINLOCK_SIZE"] = size if size is not None else "unknown"
        facts["ALLOC_SPLIT_PTLOCKS"] = ("unknown" if size is None else "y" if size > 8 else "n")
    return facts


def counts(build_env):
    """(hits, misses) so far in the ccache build_env points at, or None
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


@dataclass
class KernelBuild:
    """A configured and built kernel: its build dir, bzImage, log dir and
    facts (key symbols, build time, ccache hit rate)."""
    build: str
    bzimage: str
    log_dir: str
    facts: Dict[str, object] = field(default_factory=dict)


def build(source_path: str, fragments: Sequence[str], build_dir: str,
          log_dir: str, cache: Cache, jobs: int) -> KernelBuild:
    """Configure build_dir from the fragments and build its kernel."""
    env = cache.build_env()
    t0 = time.monotonic()
    configure(source_path, build_dir, fragments, log_dir, env)
    before = counts(env)
    kernel = build_kernel(source_path, build_dir, log_dir, env, jobs)
    rate = hit_rate(before, counts(env))
    facts: Dict[str, object] = dict(config_facts(
        os.path.join(build_dir, ".config"),
        os.path.join(build_dir, "include", "generated", "bounds.h")))
    facts["kernel_build_s"] = round(time.monotonic() - t0)
    if rate:
        facts["ccache_hits"] = rate
    return KernelBuild(build_dir, kernel, log_dir, facts)
