#!/usr/bin/env python3
"""pmd-ptlock gate: Debian's linux-source-6.12 -> our series -> KUnit and
kselftests under QEMU -> verdict.

Unpacks the tree into a cache outside the repo (once), resets it to its
pristine commit, applies patches/ with git am, builds and boots the KUnit
suite with the tree's own kunit.py, then builds a guest kernel and
selftests/mm and runs `make -C tools/testing/selftests TARGETS=mm run_tests`
for the chosen run_vmtests.sh categories in a guest whose root is the
host's / over 9p (TCG by default). Scans every console for kernel reports,
prints a verdict table and exits 0 only when all passed.
"""

import argparse
import fcntl
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gatelib import ccache, common, console, deps, guest, kunitrun, series, tree  # noqa: E402
from gatelib.common import GateError, say  # noqa: E402
from gatelib.verdict import Verdict  # noqa: E402

CONFIGS = ["default"]


class Parser(argparse.ArgumentParser):
    def error(self, message):
        # One line, non-zero: bad input is not a traceback or a usage dump.
        print(f"gate: {message} (see tools/gate --help)", file=sys.stderr)
        sys.exit(2)


def parse_args(argv):
    ap = Parser(prog="tools/gate", description=__doc__,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="default", choices=CONFIGS,
                    help="kernel configuration to test (default: %(default)s)")
    ap.add_argument("--filter", default="", metavar="GLOB",
                    help="KUnit suite/case glob as kunit.py's filter_glob, e.g. 'pmd_ptlock_deposit.*'")
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE")
    ap.add_argument("--kselftests", default="pmd_ptlock", metavar="CATS",
                    help="run_vmtests.sh categories to run in the guest, space-separated, "
                         "e.g. 'pmd_ptlock thp mremap cow' (default: %(default)s)")
    ap.add_argument("--thp", choices=["always", "madvise", "never"], default="always",
                    help="THP mode the guest sets before the selftests (default %(default)s; "
                         "with never they must skip)")
    ap.add_argument("--only", choices=["kunit", "kselftest"],
                    help="run only the KUnit suite or only the kselftest guest")
    ap.add_argument("--cache", metavar="DIR",
                    help="tree, build dirs and ccache (default $PMD_GATE_CACHE or ~/.cache/pmd-ptlock-gate)")
    ap.add_argument("--tarball", metavar="FILE",
                    help="kernel source tarball (default /usr/src/linux-source-6.12.tar.xz)")
    ap.add_argument("--patches", metavar="DIR", default=series.PATCH_DIR,
                    help="series to apply (default: the repo's patches/)")
    ap.add_argument("--timeout", type=int, default=600, metavar="S",
                    help="bound on a guest run; a guest still running then is killed and fails (default %(default)s)")
    ap.add_argument("--accel", choices=["tcg", "kvm"], default="tcg",
                    help="QEMU accelerator (default tcg; kvm only where it is known to boot)")
    ap.add_argument("--smp", type=int, default=2, metavar="N", help="guest vCPUs (default %(default)s)")
    ap.add_argument("--jobs", type=int, default=0, metavar="N", help="make -j (default: CPUs)")
    ap.add_argument("--mem", default="4G", metavar="SIZE",
                    help="kselftest guest memory (default %(default)s: upstream's mremap_test maps 2 GiB)")
    ap.add_argument("--qemu-args", default="", metavar="ARGS", help="extra QEMU arguments (one string)")
    ap.add_argument("--no-install", action="store_true",
                    help="never apt-get install missing packages; fail naming them instead")
    args = ap.parse_args(argv)
    if args.timeout < 5:
        ap.error("--timeout must be at least 5 seconds")
    if args.smp < 1:
        ap.error("--smp must be at least 1")
    if not args.kselftests.split():
        ap.error("--kselftests needs at least one category")
    return args


def run_kselftests(args, src, cache, build_root, log_dir, jobs, verdict):
    """Guest kernel + selftests/mm built on the host, run in one guest boot."""
    cfg = args.config
    env = ccache.env(cache)
    build = os.path.join(build_root, "guest")
    fragment = os.path.join(common.REPO, "configs", "guest.config")
    t0 = time.monotonic()
    config = guest.configure(src, build, [fragment], log_dir, env)
    kernel = guest.build_kernel(src, build, log_dir, env, jobs)
    guest.build_selftests(src, build, log_dir, env, jobs)
    facts = {"guest_build_s": round(time.monotonic() - t0)}
    for sym in ("SPLIT_PMD_PTLOCKS", "TRANSPARENT_HUGEPAGE", "HUGETLBFS", "NR_CPUS"):
        facts[f"guest_{sym}"] = config.get(sym, "n")
    rows, text, boot_facts = guest.boot(src, build, kernel, log_dir, args.kselftests,
                                        accel=args.accel, smp=args.smp, timeout=args.timeout,
                                        extra_qemu=args.qemu_args, thp=args.thp,
                                        mem=args.mem)
    facts.update(boot_facts)
    verdict.info[cfg].update(facts)
    verdict.add_rows(cfg, "kselftest", rows)
    verdict.add_rows(cfg, "console", console.results(text, "guest console"))


def main(argv):
    args = parse_args(argv)
    start = time.monotonic()
    try:
        if os.geteuid() == 0 and not args.no_install:
            deps.ensure(install=True)
        deps.require_qemu()
        cache = common.cache_dir(args.cache)
        lock = open(os.path.join(cache, "gate.lock"), "w")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"gate: another run holds {cache}/gate.lock; waiting for it")
            fcntl.flock(lock, fcntl.LOCK_EX)
        tarball = tree.find_tarball(args.tarball, install=not args.no_install)
        src, version = tree.prepare(cache, tarball)
        say(f"tree: linux {version} at {src}")
        if os.path.abspath(args.patches) == series.PATCH_DIR:
            # Testing a series that no longer matches the sources would pass silently.
            drift = series.check(src)
            if drift:
                raise GateError(f"patches/ is stale against kunit/, selftests/ or series/ "
                                f"({', '.join(drift)}): run tools/mkpatches")
        patches = tree.series_files(args.patches)
        head = tree.apply_series(src, version, patches)
        say(f"series: {len(patches)} patches applied (HEAD {head[:12]})")

        verdict = Verdict(version)
        cfg = args.config
        build_root = os.path.join(cache, "build", version, cfg)
        log_dir = os.path.join(cache, "logs", version, cfg)
        os.makedirs(log_dir, exist_ok=True)
        jobs = args.jobs or os.cpu_count() or 2
        verdict.info[cfg] = {}
        if args.only != "kselftest":
            rows, cons, facts = kunitrun.run(
                src, os.path.join(build_root, "kunit"), os.path.join(common.REPO, ".kunitconfig"),
                log_dir, cache=cache, filter_glob=args.filter, timeout=min(args.timeout, 300),
                accel=args.accel, smp=args.smp, jobs=jobs, extra_qemu=args.qemu_args)
            verdict.info[cfg].update(facts)
            verdict.add_rows(cfg, "kunit", rows)
            verdict.add_rows(cfg, "console", cons)
        if args.only != "kunit":
            run_kselftests(args, src, cache, build_root, log_dir, jobs, verdict)
    except GateError as e:
        print(f"gate: {e}", file=sys.stderr)
        if args.json:
            fail = Verdict(locals().get("version", "unknown"))
            fail.add(args.config, "console", "(gate)", "setup", "fail", str(e))
            fail.write_json(args.json)
        return 1
    except KeyboardInterrupt:
        print("gate: interrupted; the tree is reset to pristine on the next run", file=sys.stderr)
        return 130

    print(verdict.table())
    say(f"gate: {int(time.monotonic() - start)} s; logs in {log_dir}")
    if args.json:
        verdict.write_json(args.json)
        say(f"gate: JSON written to {args.json}")
    return 0 if verdict.verdict == "pass" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
