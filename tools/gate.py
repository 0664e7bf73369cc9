#!/usr/bin/env python3
"""pmd-ptlock gate: Debian's linux-source-6.12 -> our series -> KUnit and
kselftests under QEMU -> verdict.

Unpacks the tree into a cache outside the repo (once), resets it to its
pristine commit, applies patches/ with git am, then for each configuration
(configs/NAME.config over configs/guest.config and .kunitconfig) builds one
kernel, boots it through the tree's kunit.py for the KUnit suite, and boots
it again as a guest whose root is the host's / over 9p (TCG by default) to
run `make -C tools/testing/selftests TARGETS=mm run_tests` for the chosen
run_vmtests.sh categories. Scans every console for kernel reports, prints a
verdict table and exits 0 only when all passed.
"""

import argparse
import glob
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gatelib import common, console, expect, guest, kbuild, kunitrun, series, tree  # noqa: E402
from gatelib.cache import Cache, open_locked  # noqa: E402
from gatelib.common import GateError, say  # noqa: E402
from gatelib.verdict import Verdict  # noqa: E402

CONFIG_DIR = os.path.join(common.REPO, "configs")
CONFIGS = common.CONFIGS
UPSTREAM_CATEGORIES = "thp mremap cow"


def parse_args(argv):
    ap = common.OneLineParser(prog="tools/gate", description=__doc__ + "\n" + guest.bounds_text(),
                formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", choices=CONFIGS,
                    help="kernel configuration to test, configs/NAME.config (default: default)")
    ap.add_argument("--matrix", action="store_true",
                    help="test every configuration in turn: " + ", ".join(CONFIGS))
    ap.add_argument("--filter", default="", metavar="GLOB",
                    help="KUnit suite/case glob as kunit.py's filter_glob, e.g. 'pmd_ptlock_deposit.*'")
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE")
    ap.add_argument("--kcidb", metavar="FILE",
                    help="also write the run as a KCIDB report (KernelCI's schema v4: checkout, "
                         "one build per configuration, one test per result)")
    ap.add_argument("--compare", metavar="OLD.json",
                    help="after the run, print what changed against an earlier run's --json "
                         "(new failures, fixed, new skips, timing ratios); a new failure makes "
                         "the exit non-zero")
    ap.add_argument("--against", metavar="NEW.json",
                    help="with --compare: compare OLD.json with this stored run instead of "
                         "running the gate")
    ap.add_argument("--kselftests", default="pmd_ptlock", metavar="CATS",
                    help="run_vmtests.sh categories to run in the guest, space-separated, "
                         "e.g. 'pmd_ptlock thp mremap cow' (default: %(default)s)")
    ap.add_argument("--thp", choices=["always", "madvise", "never"], default="always",
                    help="THP mode the guest sets before the selftests (default %(default)s; "
                         "with never they must skip)")
    ap.add_argument("--suite", choices=["ours", "upstream"], default="ours",
                    help="ours (default): our KUnit suite and kselftests; upstream: upstream's own "
                         "tests only: selftests/mm categories " + repr(UPSTREAM_CATEGORIES) +
                         " in the guest, DEBUG_VM_PGTABLE at its boot, console scan")
    ap.add_argument("--mutant", metavar="FILE",
                    help="apply this unified diff on top of the series for this run (the tree "
                         "goes back to pristine + series afterwards, interrupted or not)")
    ap.add_argument("--keep-mutant", action="store_true",
                    help="leave the --mutant applied when the run ends normally, so the next run "
                         "of the same mutant (e.g. the other --suite) reuses this build; the "
                         "next run of anything else resets the tree")
    ap.add_argument("--only", choices=["kunit", "kselftest"],
                    help="run only the KUnit suite or only the kselftest guest")
    ap.add_argument("--apply", nargs="+", metavar="PATCH", default=[],
                    help="patches to git am on top of the series (e.g. a patch under review)")
    ap.add_argument("--tarball", metavar="FILE",
                    help="kernel source tarball (default: the --tree's, e.g. "
                         "/usr/src/linux-source-6.12.tar.xz)")
    ap.add_argument("--patches", metavar="DIR",
                    help="series to apply (default: the repo's patches/<tree>/; with --source, "
                         "the series generated afresh on the checkout)")
    ap.add_argument("--smp", type=int, default=2, metavar="N", help="guest vCPUs (default %(default)s)")
    ap.add_argument("--mem", default="4G", metavar="SIZE",
                    help="kselftest guest memory (default %(default)s: upstream's mremap_test maps 2 GiB)")
    ap.add_argument("--qemu-args", default="", metavar="ARGS", help="extra QEMU arguments (one string)")
    common.add_shared_options(ap, "--cache", "--timeout", "--accel", "--jobs", "--no-install",
                              "--tree", "--source")
    args = ap.parse_args(argv)
    common.check_shared_options(ap, args)
    if args.smp < 1:
        ap.error("--smp must be at least 1")
    if not args.kselftests.split():
        ap.error("--kselftests needs at least one category")
    if args.matrix and args.config:
        ap.error("--matrix runs every configuration: give it or --config, not both")
    args.config = args.config or "default"
    if args.suite == "upstream":
        if args.only == "kunit":
            ap.error("--suite upstream has no KUnit part")
        args.only, args.kselftests = "kselftest", UPSTREAM_CATEGORIES
    try:
        args.cache = Cache(args.cache).root
    except GateError as e:
        ap.error(str(e))
    if args.against and not args.compare:
        ap.error("--against needs --compare")
    if args.source and args.tarball:
        ap.error("--source and --tarball both name the tree: give one")
    common.check_inputs(ap, args, files=[("--mutant", args.mutant), ("--tarball", args.tarball),
                                         ("--compare", args.compare), ("--against", args.against)]
                        + [("--apply", p) for p in args.apply],
                        dirs=[("--patches", args.patches), ("--source", args.source)],
                        outputs=[("--json", args.json), ("--kcidb", args.kcidb)])
    if args.patches and not glob.glob(os.path.join(args.patches, "[0-9]*.patch")):
        ap.error(f"--patches {args.patches}: no NNNN-*.patch files in it")
    if args.keep_mutant and not args.mutant:
        ap.error("--keep-mutant needs --mutant")
    return args


def build_config(src, cfg, cache, jobs):
    """Configure and build the configuration's one kernel."""
    return kbuild.build(src.path, common.config_fragments(cfg, src.family),
                        cache.kernel_build(src.cache_key, cfg), cache.logs(src.cache_key, cfg),
                        cache, jobs)


def run_config(args, src, cfg, cache, jobs, verdict, selftests):
    """One configuration: build, KUnit boot, kselftest boot. Build and setup
    failures become a failed row of that configuration."""
    verdict.info[cfg] = {}
    try:
        kb = build_config(src, cfg, cache, jobs)
    except GateError as e:
        say(f"gate: {cfg}: {e}")
        verdict.add(cfg, "console", "(gate)", "kernel build", "fail", str(e))
        return
    verdict.info[cfg].update(kb.facts)
    say(f"{cfg}: " + ", ".join(f"{k}={v}" for k, v in kb.facts.items()))
    timeout = guest.bound(args.suite, cfg, args.timeout)
    if args.only != "kselftest":
        rows, cons, kfacts = kunitrun.run(
            kb.bzimage, kb.log_dir, filter_glob=args.filter, timeout=min(timeout, 300),
            accel=args.accel, smp=args.smp, extra_qemu=args.qemu_args)
        verdict.info[cfg].update(kfacts)
        verdict.add_rows(cfg, "kunit", expect.judge(rows, "kunit", verdict.info[cfg]))
        verdict.add_rows(cfg, "console", cons)
    if args.only != "kunit":
        try:
            st_build = selftests()
        except GateError as e:
            say(f"gate: {e}")
            verdict.add(cfg, "kselftest", "(gate)", "selftests build", "fail", str(e))
            return
        rows, text, boot_facts = guest.boot(src.path, st_build, kb.bzimage, kb.log_dir, args.kselftests,
                                            accel=args.accel, smp=args.smp, timeout=timeout,
                                            extra_qemu=args.qemu_args, thp=args.thp,
                                            mem=args.mem)
        verdict.info[cfg].update(boot_facts)
        if "pmd_ptlock" in args.kselftests.split():
            rows += expect.absent(rows, series.SELFTESTS)
        verdict.add_rows(cfg, "kselftest", expect.judge(rows, "kselftest", verdict.info[cfg]))
        verdict.add_rows(cfg, "console", console.results(text, "guest console"))


def selftests_builder(src, cache, jobs):
    """Build selftests/mm once per run (userspace: the same for every
    configuration), on first use, and only when its inputs changed since the
    build in the cache (a kernel-only mutant leaves it as it is)."""
    done = {}

    def get():
        if "dir" not in done:
            env = cache.build_env()
            build = cache.selftests_build(src.cache_key)
            key = tree.userspace_key(src.path)
            stamp = os.path.join(build, ".gate-selftests-key")
            runner = os.path.join(build, kbuild.INSTALL, "run_kselftest.sh")
            if os.path.isfile(runner) and (guest.read(stamp) or "").strip() == key:
                say(f"guest: selftests/mm unchanged since its last build ({key[:12]}): reused")
            else:
                if os.path.exists(stamp):
                    os.unlink(stamp)
                # Only for `make headers`: any configuration will do.
                kbuild.configure(src.path, build, [os.path.join(CONFIG_DIR, "guest.config")],
                                 cache.logs(src.cache_key), env)
                kbuild.build_selftests(src.path, build, cache.logs(src.cache_key), env, jobs)
                with open(stamp, "w") as f:
                    f.write(key)
            done["dir"] = build
        return done["dir"]
    return get


def series_for(args, src, cache):
    """The series to apply: --patches; else on a distro tree the repo's
    patches/<tree>/ (checked to match the sources: a stale series would
    pass silently); else, on a developer's checkout, the family's series
    generated afresh on the checkout's own pristine commit."""
    if args.patches:
        return args.patches
    if args.source:
        out = os.path.join(cache.logs(src.cache_key), "series")
        series.generate(src.path, src.family, out)
        say(f"series: generated for linux {src.version} ({src.family} family) into {out}")
        return out
    out = series.patch_dir(args.tree)
    drift = series.check(src.path, src.family, out)
    if drift:
        raise GateError(f"patches/{args.tree} is stale against kunit/, selftests/ or series/ "
                        f"({', '.join(drift)}): run tools/mkpatches")
    return out


def load_run(ap_error, path):
    """A stored gate run (its --json), or one line and exit 2."""
    try:
        with open(path) as f:
            doc = json.load(f)
        if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
            raise ValueError("no results in it")
        return doc
    except (OSError, ValueError) as e:
        ap_error(f"{path}: not a gate run's JSON ({e})")


def compare_runs(old_path, new_doc, new_label):
    """Print the comparison; 1 when the new run has a new failure."""
    from gatelib import compare
    old = load_run(_bad_input, old_path)
    c = compare.compare(old, new_doc)
    print(compare.report(c, old_path, new_label))
    return 1 if c.regressed else 0


def _bad_input(msg):
    print(f"gate: {msg}", file=sys.stderr)
    sys.exit(2)


def main(argv):
    args = parse_args(argv)
    if args.compare and args.against:
        return compare_runs(args.compare, load_run(_bad_input, args.against), args.against)
    if args.compare:
        load_run(_bad_input, args.compare)     # bad input fails before the run
    start = time.monotonic()
    common.sigterm_like_ctrl_c()
    mutated = None
    try:
        cache = open_locked(args.cache, args.no_install)
        if args.source:
            src = tree.prepare_checkout(cache, args.source)
        else:
            src = tree.prepare(cache, tree.find_tarball(args.tarball, install=not args.no_install,
                                                        tree_name=args.tree))
        version = src.version
        say(f"tree: linux {version} at {src.path} (series family {src.family})")
        patch_dir = series_for(args, src, cache)
        patches = tree.series_files(patch_dir) + [os.path.abspath(p) for p in args.apply]
        if args.mutant and tree.mutant_kept(src.path, patches, args.mutant):
            # Left in place by the previous run of this very mutant: same build.
            mutated = src.path
            say(f"mutant: {os.path.basename(args.mutant)} still applied from the previous run")
        else:
            head = tree.apply_series(src.path, version, patches)
            say(f"series: {len(patches)} patches applied (HEAD {head[:12]})")
        if args.mutant and not mutated:
            mutated = src.path
            files = tree.apply_mutant(src.path, args.mutant)
            say(f"mutant: {os.path.basename(args.mutant)} applied ({', '.join(files)})")

        verdict = Verdict(version)
        jobs = kbuild.jobs(args.jobs)
        selftests = selftests_builder(src, cache, jobs)
        for cfg in (CONFIGS if args.matrix else [args.config]):
            run_config(args, src, cfg, cache, jobs, verdict, selftests)

        print(verdict.table())
        say(f"gate: {int(time.monotonic() - start)} s; logs in {cache.logs(src.cache_key)}")
        if args.json:
            verdict.write_json(args.json)
            say(f"gate: JSON written to {args.json}")
        if args.kcidb:
            from gatelib import kcidb
            common.write_json(args.kcidb, kcidb.report(verdict.to_json(), patches,
                                                       tree.pristine_id(src.path)))
            say(f"gate: KCIDB report written to {args.kcidb}")
        if args.keep_mutant:
            # Only a run that wrote its results leaves its mutant for the next.
            tree.keep_mutant(mutated, args.mutant)
            mutated = None
        regressed = compare_runs(args.compare, verdict.to_json(), "this run") if args.compare else 0
        return 0 if verdict.verdict == "pass" and not regressed else 1
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
    finally:
        if mutated:
            tree.restore_series(mutated)

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
