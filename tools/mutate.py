#!/usr/bin/env python3
"""pmd-ptlock mutation gate: does the suite catch regressions?

Runs kernel mutants (unified diffs against the pristine 6.12 tree) one at a
time: for each, the gate resets the tree to pristine + series, applies the
mutant, builds incrementally and runs in full (KUnit, kselftests, console
scan) on the mutant's configuration; the run is compared with the unmodified
tree's run on the same configuration and the mutant classified killed (by
what), survived, invalid (does not apply or build), timeout (hung guest: a
kill) or equivalent (declared in its header, kept out of the score). The tree
goes back to pristine + series after every mutant, interrupted or not.

With no FILE the catalogue (mutants/*.diff) runs; each catalogue mutant
names its configuration in its header. Mutants without a header run on
--config. --suite upstream measures upstream's own tests on the same mutants;
--suite both judges each mutant's one build by both, ours first (the second
run reuses the build, so a header mutant's near-full rebuild is paid once).
Every result is kept in the cache with what it depends on (mutant, tree,
series, configurations; upstream's results on the series outside our own
tests); --resume reuses the ones still valid, so the
catalogue can be measured across several sittings.
"""

import argparse
import json
import lzma
import re
import os
import tempfile
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gatelib import common, guest, mutants, series, tree  # noqa: E402
from gatelib.cache import Cache  # noqa: E402
from gatelib.common import GateError, StepTimeout, run_logged, say  # noqa: E402

CATALOGUE = os.path.join(common.REPO, "mutants")
GATE = os.path.join(common.REPO, "tools", "gate")
CONFIGS = common.CONFIGS
SUITES = {"ours": ["ours"], "upstream": ["upstream"], "both": ["ours", "upstream"]}


def parse_args(argv):
    ap = common.OneLineParser(prog="tools/mutate", description=__doc__,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", metavar="FILE.diff",
                    help="mutants to run (default: the catalogue, mutants/*.diff)")
    ap.add_argument("--config", default="default", choices=CONFIGS,
                    help="configuration for mutants whose header names none (default %(default)s)")
    ap.add_argument("--suite", choices=list(SUITES), default="ours",
                    help="whose tests judge the mutants: ours, upstream, or both on one build "
                         "per mutant (default %(default)s)")
    ap.add_argument("--resume", action="store_true",
                    help="reuse results (baselines included) of earlier runs whose mutant, tree, "
                         "series, configurations, classifier version (gatelib/mutants.py "
                         "CLASSIFIER_VERSION) and --timeout are unchanged")
    ap.add_argument("--json", metavar="FILE", help="write the results as JSON")
    ap.add_argument("--markdown", metavar="FILE",
                    help="write the kill table, scores and times as Markdown (for the README)")
    ap.add_argument("--shard", metavar="K/N", help="run only the K-th of N disjoint slices")
    ap.add_argument("--reclassify", action="store_true",
                    help="boot nothing: judge each mutant again, with this classifier, from the "
                         "evidence (gate result and its console/TAP logs) kept in the cache by "
                         "the run that measured it, and store the results under this "
                         "classifier's key")
    ap.add_argument("--merge", nargs="+", metavar="JSON",
                    help="fold shard results into one table and score (runs nothing)")
    # --timeout, passed to the gate: a mutant that hangs a guest costs this
    # much. Without it, guest_bound() per suite and configuration.
    common.add_shared_options(ap, "--timeout", "--cache", "--no-install", "--tree", "--source")
    ap.add_argument("--records", metavar="DIR",
                    help="where results are stored (in DIR/<tree>/<suite>/) and --resume looks "
                         "for them (default: the cache's mutate/); a directory in the repo "
                         "(docs/mutate/records) carries them to another machine, where the same "
                         "tree, series and classifier reuse them")
    args = ap.parse_args(argv)
    if args.merge and (args.files or args.shard or args.reclassify):
        ap.error("--merge takes only result files")
    if args.reclassify and args.resume:
        ap.error("--reclassify judges what is kept; --resume is for runs that boot")
    common.check_shared_options(ap, args)
    if not args.merge:
        try:
            args.cache = Cache(args.cache).root
        except GateError as e:
            ap.error(str(e))
    common.check_inputs(ap, args, dirs=[("--source", args.source)],
                        files=[("mutant", f) for f in args.files] +
                        [("--merge", f) for f in args.merge or []],
                        outputs=[("--json", args.json), ("--markdown", args.markdown)])
    return args


def load_mutants(args):
    """The mutants to run, and those the tree has no code for (each with why)."""
    files = args.files or mutants.catalogue(CATALOGUE, args.tree)
    if not files:
        raise mutants.MutantError("no mutants given and none in mutants/")
    out, absent = [], []
    for f in files:
        if not os.path.isfile(f):
            raise mutants.MutantError(f"{f}: no such file")
        m = mutants.read(f, args.config)
        if m["config"] not in CONFIGS:
            raise mutants.MutantError(f"{f}: unknown configuration '{m['config']}' in its header")
        if m["not_applicable"]:
            absent.append({"name": m["name"], "why": m["not_applicable"]})
            continue
        out.append(m)
    return (mutants.shard(out, args.shard) if args.shard else out), absent


def guest_bound(args, suite, config):
    """The guest bound of a mutant's gate runs, which its results are keyed
    on: --timeout, else the gate's own for the suite and configuration, and
    at least 900 s (a mutant may slow a guest that passes in less)."""
    return args.timeout or max(900, guest.bound(suite, config))


def gate(args, suite, config, out_json, log, mutant=None, keep=False):
    """One gate run; returns its JSON (or None when it wrote none)."""
    cmd = [GATE, "--config", config, "--suite", suite, "--json", out_json,
           "--timeout", str(guest_bound(args, suite, config)), "--tree", args.tree]
    if args.cache:
        cmd += ["--cache", args.cache]
    if args.no_install:
        cmd.append("--no-install")
    if args.source:
        cmd += ["--source", args.source]
    if mutant:
        cmd += ["--mutant", mutant] + (["--keep-mutant"] if keep else [])
    if os.path.exists(out_json):
        os.unlink(out_json)
    try:
        # The gate bounds its own guests; this bound only catches a gate that hangs itself.
        run_logged(cmd, log, "gate", 3 * 3600, heartbeat=60)
    except StepTimeout:
        return None
    try:
        with open(out_json) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def result_key(args, source, suite, cfg, mutant_path=None):
    """What a result depends on: the tree (version and pristine contents), the
    series, the configuration's fragments, the classifier's version (not the
    tools' source: a refactor keeps stored results), suite, guest bound and
    the mutant itself."""
    files = common.config_fragments(cfg, tree.family_of(source[0])) + \
        ([mutant_path] if mutant_path else [])
    return common.digest(files, *source, suite, cfg, str(guest_bound(args, suite, cfg)),
                       "classifier " + mutants.CLASSIFIER_VERSION)


def series_digests(args, src):
    """What each suite's results depend on of the series the gate applies to
    src (the repo's patches/<tree>/, or for a checkout the family's series as
    generated on it). Ours: all of it. Upstream's categories: what it changes
    outside our own tests, as their guest boots with kunit.enable=0 and never
    starts our programs; a change to our tests keeps their results."""
    def of(files):
        return {"ours": common.digest(files), "upstream": series.outside_our_tests_digest(files)}
    if not args.source:
        return of(tree.series_files(series.patch_dir(args.tree)))
    with tempfile.TemporaryDirectory(prefix="mutate-series-") as tmp:
        series.generate(src.path, src.family, tmp)
        return of(tree.series_files(tmp))


def restore_tree(cache, src):
    """Take a mutant a gate left behind back out, unless another run holds
    the cache's lock (it is using the tree, and resets it itself)."""
    if not cache.lock(wait=False):
        return
    try:
        if tree.is_dirty(src.path):
            tree.restore_series(src.path)
    finally:
        cache.unlock()


KEEP_RUNS = 4  # results kept per record file, newest last


def record_path(work, m):
    """Where a mutant's result under one suite is stored."""
    return os.path.join(work, f"{m['name']}-{m['config']}.record.json")


# What a gate run is judged from, kept beside its result in the cache (not
# in --records: a few hundred kB each) so a classifier change can judge it
# again without booting: the gate's JSON and the logs its rows came from.
EVIDENCE_LOGS = ("kunit-exec.log", "guest-console.log", os.path.join("out", "kselftest.log"))


def evidence_path(work, name, cfg):
    return os.path.join(work, f"{name}-{cfg}.evidence.json.xz")


def save_evidence(path, data, log_dir, seconds, since):
    """Keep the gate's JSON and the logs of log_dir written at or after since
    (epoch seconds): a log left by an earlier run (an upstream run boots no
    KUnit kernel, so kunit-exec.log is someone else's) is not this run's
    evidence."""
    logs = {}
    for name in EVIDENCE_LOGS:
        log = os.path.join(log_dir, name)
        try:
            if os.path.getmtime(log) < since:
                continue
        except OSError:
            continue
        text = guest.read(log)
        if text is not None:
            logs[name] = text
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with lzma.open(path + ".tmp", "wt") as f:
        json.dump({"gate": data, "seconds": seconds, "logs": logs}, f)
    os.replace(path + ".tmp", path)


def load_evidence(path):
    """The kept evidence of a gate run, or None."""
    try:
        with lzma.open(path, "rt") as f:
            return json.load(f)
    except (OSError, ValueError, EOFError, lzma.LZMAError):
        return None


def _stored(path):
    """The results stored in a record file, by key."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return {}
    if "results" in doc:
        return doc["results"]
    return {doc["key"]: doc["result"]} if "key" in doc else {}  # one per file, as before


def _load_kept(path, key):
    """A stored result, if one was stored under this key."""
    return _stored(path).get(key)


def _keep(path, key, result):
    """Store a result beside those stored under other keys (another --timeout,
    series or configuration), so runs with different inputs (CI's short-bound
    subset, say) do not evict each other's results; the KEEP_RUNS keys stored
    last are kept."""
    results = {k: v for k, v in _stored(path).items() if k != key}
    results[key] = result
    common.write_json(path, {"results": dict(list(results.items())[-KEEP_RUNS:])})


def _base_record(records, cfg):
    # Under baseline/: no mutant's name (a file name) can have a slash in it.
    return os.path.join(records, "baseline", f"{cfg}.record.json")


def baseline(args, work, records, suite, cfg, key, log_dir):
    """The unmodified tree's gate JSON for (suite, configuration): only a test
    that passed here can kill a mutant."""
    kept = _base_record(records, cfg)
    evidence = evidence_path(os.path.join(work, "baseline"), "unmodified", cfg)
    if args.reclassify:
        ev = load_evidence(evidence)
        if ev is None:
            raise GateError(f"no evidence of the unmodified tree's run on {cfg} ({suite}) in "
                            f"{work}: measure it first (without --reclassify)")
        base = mutants.slim_baseline(ev["gate"])
        _keep(kept, key, base)
        return base
    out, log = os.path.join(work, "baseline", f"{cfg}.json"), os.path.join(work, "baseline", f"{cfg}.log")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    os.makedirs(os.path.dirname(kept), exist_ok=True)
    base = _load_kept(kept, key) if args.resume else None
    if base is not None:
        say(f"mutate: the unmodified tree on {cfg} ({suite}): reused from an earlier run")
        return base
    say(f"mutate: the unmodified tree on {cfg} ({suite} suite) first")
    t0, started = time.monotonic(), time.time()
    base = gate(args, suite, cfg, out, log)
    if base is None or not any(r["status"] == "pass" for r in base["results"]):
        raise GateError(f"the unmodified tree did not run on {cfg} ({suite} suite; log: {log})")
    if suite == "ours" and base["verdict"] != "pass":
        raise GateError(f"the unmodified tree fails our suite on {cfg}: fix that "
                        f"before measuring mutants (see {log})")
    save_evidence(evidence, base, log_dir, round(time.monotonic() - t0), since=started)
    # Only what judging needs is stored: which rows passed, failed, skipped.
    base = mutants.slim_baseline(base)
    _keep(kept, key, base)
    return base


def verdict_of(m, data, base, seconds, log):
    """A mutant's result record from its gate JSON (None: the gate wrote
    none) against the unmodified tree's slim baseline."""
    if data is None:
        # The gate bounds its guests and builds: no result is the harness failing.
        status, why = "invalid", f"the gate wrote no result (log: {log})"
    else:
        status, why = mutants.classify(data, base)
    if m["equivalent"] and status == "survived":
        status, why = "equivalent", m["equivalent"]
    elif m["equivalent"]:
        why = f"{why} (declared equivalent, but this run tells them apart)"
    return {"name": m["name"], "behaviour": m["behaviour"], "config": m["config"],
            "status": status, "killed_by": why,
            "seconds": seconds, "expected_killers": m["expected_killers"],
            "file": os.path.relpath(m["path"], common.REPO)
            if m["path"].startswith(common.REPO + os.sep) else m["path"]}


def judge(args, work, records, suite, m, base, key, keep, log_dir):
    """One mutant under one suite: a result record (None: --reclassify
    found no evidence of it)."""
    cfg = m["config"]
    kept = record_path(records, m)
    evidence = evidence_path(work, m["name"], cfg)
    if args.reclassify:
        ev = load_evidence(evidence)
        if ev is None:
            say(f"mutate: {m['name']} on {cfg} ({suite}): no evidence kept: not judged")
            return None
        res = verdict_of(m, ev["gate"], base, ev["seconds"], evidence)
        _keep(kept, key, res)
        say(f"mutate: {m['name']} ({suite}): {res['status']}, judged again from {evidence}")
        return dict(res, reused=True)
    res = _load_kept(kept, key) if args.resume else None
    if res is not None:
        say(f"mutate: {m['name']} on {cfg} ({suite}): {res['status']}, reused from an earlier run")
        return dict(res, reused=True)
    say(f"mutate: {m['name']} on {cfg} ({suite} suite)")
    t0, started = time.monotonic(), time.time()
    log = os.path.join(work, f"{m['name']}-{cfg}.log")
    data = gate(args, suite, cfg, os.path.join(work, f"{m['name']}-{cfg}.json"), log,
                mutant=m["path"], keep=keep)
    res = verdict_of(m, data, base, round(time.monotonic() - t0), log)
    # A setup failure (no result, no packages, the tree busy) is no verdict on
    # the mutant: not stored, so a resumed run tries again.
    setup = data is None or any(
        r["suite"] == "(gate)" and r["status"] == "fail" and r["name"] != "kernel build"
        and not re.match(r"mutant .* does not apply", r["reason"]) for r in data["results"])
    if not setup:
        _keep(kept, key, res)
        save_evidence(evidence, data, log_dir, res["seconds"], since=started)
    say(f"mutate: {m['name']} ({suite}): {res['status']} in {res['seconds']} s"
        + (f" ({res['killed_by'][:120]})" if res["killed_by"] else ""))
    return res


def main(argv):
    args = parse_args(argv)
    common.sigterm_like_ctrl_c()
    try:
        if args.merge:
            docs = []
            for p in args.merge:
                try:
                    with open(p) as f:
                        docs.append(json.load(f))
                except (OSError, ValueError) as e:
                    raise mutants.MutantError(f"{p}: not a mutate result ({e})") from None
            doc = mutants.merge(docs)
            return finish(args, doc)
        todo, absent = load_mutants(args)
    except mutants.MutantError as e:
        print(f"mutate: {e}", file=sys.stderr)
        return 2

    cache = Cache(args.cache)
    suites = SUITES[args.suite]
    # Per tree (a checkout's results apart from the distro trees'), per suite.
    where = "source" if args.source else args.tree
    work = {s: cache.mutate_work(where, s) for s in suites}
    records = {s: os.path.join(os.path.abspath(args.records), where, s) if args.records
               else work[s] for s in suites}
    for d in list(work.values()) + list(records.values()):
        os.makedirs(d, exist_ok=True)
    results, baselines, unjudged = [], {}, []
    src, version = None, "unknown"
    try:
        src = (tree.prepare_checkout(cache, args.source) if args.source else
               tree.prepare(cache, tree.find_tarball(install=not args.no_install,
                                                     tree_name=args.tree)))
        version = src.version
        pristine, digests = src.pristine_id(), series_digests(args, src)
        source = {s: (version, pristine, digests[s]) for s in suites}
        for a in absent:
            say(f"mutate: {a['name']}: not applicable on linux {version}: {a['why']}")
        for m in todo:
            cfg = m["config"]
            keys = {s: result_key(args, source[s], s, cfg, m["path"]) for s in suites}
            reusable = {s: args.resume and _load_kept(record_path(records[s], m), keys[s]) is not None
                        for s in suites}
            for s in suites:
                # Every suite's baseline before the mutant, which may stay in
                # the tree from one suite's run to the next.
                if (s, cfg) not in baselines:
                    baselines[s, cfg] = baseline(args, work[s], records[s], s, cfg,
                                                 result_key(args, source[s], s, cfg),
                                                 cache.logs(src.cache_key, cfg))
            per_suite = {}
            for i, s in enumerate(suites):
                # Keep the mutant applied when the next suite will run on this build.
                keep = any(not reusable[n] for n in suites[i + 1:])
                per_suite[s] = judge(args, work[s], records[s], s, m, baselines[s, cfg], keys[s],
                                     keep, cache.logs(src.cache_key, cfg))
            if not args.reclassify:
                restore_tree(cache, src)
            if any(r is None for r in per_suite.values()):
                unjudged.append(m["name"])
                continue
            res = per_suite[suites[0]]
            if len(suites) > 1:
                up = per_suite["upstream"]
                res = dict(res, upstream={k: up[k] for k in ("status", "killed_by", "seconds", "reused")
                                          if k in up})
            results.append(res)
            if args.json:
                # What is measured so far, in case the run stops before the end.
                common.write_json(args.json, mutants.document(version, args.suite, results, absent))
    except GateError as e:
        print(f"mutate: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("mutate: interrupted", file=sys.stderr)
        return 130
    finally:
        # The gate restores the tree itself; this covers a gate killed hard.
        if src and not args.reclassify:
            restore_tree(cache, src)
    status = finish(args, mutants.document(version, args.suite, results, absent))
    if unjudged:
        print(f"mutate: no evidence kept for {len(unjudged)} mutant(s), not judged: "
              f"{' '.join(unjudged)} (measure them without --reclassify)", file=sys.stderr)
        return 1
    return status


# What a kill report names besides the tests and findings that did the
# killing: the stages a crash cut short. Left out of the Markdown summary.
_STAGES = re.compile(r": \((program|runner)\)$"
                     r"|[:.] ?(guest finished|boot finished|TAP output|KTAP output)$")


def _killers(why, status, most=3):
    """A kill report cut to what killed: the first few tests or findings."""
    if status not in ("killed", "timeout"):
        return "" if status == "survived" else why
    items = [re.sub(r" \(new\)$", "", x.strip()) for x in why.split(";") if x.strip()]
    items = [re.sub(r"^kunit pmd_ptlock_", "KUnit ", x) for x in items]
    items = [re.sub(r"^console (guest|kunit) console: ", r"console (\1): ", x) for x in items]
    items = [re.sub(r": \((incomplete)\)$", r" (cut short)", x) for x in items]
    named = [x for x in items if not _STAGES.search(x)] or items
    seen = list(dict.fromkeys(named))
    more = len(seen) - most
    text = "; ".join(seen[:most]) + (f" (+{more} more)" if more > 0 else "")
    return text.replace("|", "\\|")


def _reach(m):
    path = m.get("file") and os.path.join(common.REPO, m["file"])
    if path and os.path.isfile(path):
        head = mutants.read(path, m["config"])
        if head["behaviour"] != "unknown":  # a catalogue header; "none": unreachable
            return head["reach"] or "none"
    return "(no header)"


def markdown(doc):
    """The kill table as the README shows it, then the scores and times."""
    both = doc["suite"] == "both"
    head = ["mutant", "behaviour", "config", "reach", "ours", "killed by (ours)"]
    if both:
        head += ["upstream", "killed by (upstream)", "seconds (ours + upstream)"]
    else:
        head += ["seconds"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    total = 0
    for m in doc["mutants"]:
        row = [f"`{m['name']}`", m["behaviour"], m["config"], _reach(m), m["status"],
               _killers(m["killed_by"], m["status"])]
        total += m["seconds"]
        if both:
            up = m["upstream"]
            total += up["seconds"]
            row += [up["status"], _killers(up["killed_by"], up["status"]),
                    f"{m['seconds']} + {up['seconds']}"]
        else:
            row.append(str(m["seconds"]))
        out.append("| " + " | ".join(row) + " |")
    # One paragraph each: consecutive lines would run together in Markdown.
    out += ["", mutants._score_line("Ours" if both else doc["suite"].capitalize(), doc)]
    if both:
        out += ["", mutants._score_line("Upstream on the same mutants", doc["upstream"])]
    if doc.get("not_applicable"):
        out += ["", "Not applicable on this tree (the code is not there): " + "; ".join(
            f"`{a['name']}` ({a['why']})" for a in doc["not_applicable"]) + "."]
    out += ["", f"Measured time: {total} s ({total / 3600:.1f} h) over {len(doc['mutants'])} "
               f"mutants{', both suites' if both else ''}, linux {doc['tree']}."]
    return "\n".join(out) + "\n"


def finish(args, doc):
    print(mutants.table(doc))
    if args.json:
        common.write_json(args.json, doc)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown(doc))
    return 0 if doc["valid"] and doc["killed"] == doc["valid"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
