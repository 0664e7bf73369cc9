"""Mutants: catalogue headers, classification of a gate run, shards, merge."""

import os
import re

HEADER_KEYS = ("mutant", "behaviour", "config", "reach", "killers", "equivalent", "not-applicable")

# The version of what turns a kernel into a verdict: the gate's rows (KTAP and
# kselftest parsing, console scan, which skips fail), the guest's init and
# this classifier. Stored results are keyed on it, not on the tools' source
# bytes: bump it with any change that can turn a kernel's run into other
# rows or another status, and only then are stored results measured again.
# 3: lean kernels, kselftests from a host install, early stop after a fatal
# report, skips of ours outside the configuration's rules fail.
# 4: a guest stopped early (quiet after a fatal report) is a hang: timeout.
CLASSIFIER_VERSION = "4"
STATUSES = ("killed", "survived", "invalid", "timeout", "equivalent")


class MutantError(Exception):
    pass


def read(path, default_config):
    """A mutant file: header fields (all optional) and its name. A file with
    no header (someone else's diff) runs on default_config."""
    with open(path, errors="replace") as f:
        text = f.read()
    head = {}
    for line in text.splitlines():
        if line.startswith(("--- ", "diff ", "Index: ", "+++ ", "@@")):
            break
        m = re.match(r"^#\s*([A-Za-z-]+):\s*(.*)$", line)
        if m and m.group(1).lower() in HEADER_KEYS:
            head[m.group(1).lower()] = m.group(2).strip()
    if ("\n--- " not in "\n" + text and "\ndiff " not in "\n" + text
            and not head.get("not-applicable")):
        raise MutantError(f"{path}: no unified diff in it")
    name = re.sub(r"\.(diff|patch)$", "", os.path.basename(path))
    return {"name": name, "path": os.path.abspath(path),
            "what": head.get("mutant", ""),
            "behaviour": head.get("behaviour", "unknown"),
            "config": head.get("config") or default_config,
            "reach": head.get("reach", ""),
            "expected_killers": head.get("killers", ""),
            "equivalent": head.get("equivalent", ""),
            "not_applicable": head.get("not-applicable", ""),
            "has_header": bool(head)}


def catalogue(root, tree_name):
    """The catalogue's files for a tree: NAME.diff from root/<tree>/ where
    that tree has its own (a port, a mutant only it has, or a header saying
    the code is not there), else from root/ (the 6.12 diff, which applies
    unchanged)."""
    own = os.path.join(root, tree_name)
    names = {f for f in os.listdir(root) if f.endswith(".diff")}
    if os.path.isdir(own):
        names |= {f for f in os.listdir(own) if f.endswith(".diff")}
    return [os.path.join(own, f) if os.path.isfile(os.path.join(own, f)) else os.path.join(root, f)
            for f in sorted(names)]


def shard(items, spec):
    """The K-th of N disjoint slices ("K/N", 1-based) of items, round robin
    over the given order, so every item is in exactly one shard."""
    m = re.fullmatch(r"(\d+)/(\d+)", spec or "")
    if not m:
        raise MutantError(f"--shard {spec}: expected K/N, e.g. 1/4")
    k, n = int(m.group(1)), int(m.group(2))
    if n < 1 or not 1 <= k <= n:
        raise MutantError(f"--shard {spec}: K must be between 1 and N")
    return [x for i, x in enumerate(items) if i % n == k - 1]


def result_key(r):
    """What identifies one result of a gate run across runs."""
    return (r["config"], r["kind"], r["suite"], r["name"])


def _row_id(r):
    return "\t".join((r["kind"], r["suite"], r["name"]))


def slim_baseline(gate_json):
    """What classifying needs of the unmodified tree's run: the verdict and
    which rows passed, failed or skipped (one configuration, so the row's
    kind, suite and name identify it)."""
    rows = gate_json["results"]
    return {"verdict": gate_json["verdict"],
            **{k: sorted(_row_id(r) for r in rows if r["status"] == s)
               for k, s in (("passed", "pass"), ("failed", "fail"), ("skipped", "skip"))}}


def classify(data, baseline):
    """(status, killed_by) of a mutant's gate JSON against the unmodified
    tree's (same suite and configuration). A result that failed on the
    unmodified tree too cannot kill; a setup or build failure is invalid; a
    hung guest is a kill, reported as timeout."""
    for r in data["results"]:
        if r["suite"] == "(gate)" and r["status"] == "fail":
            reason = r["reason"]
            m = re.match(r"kernel build failed: (.*?)(?: \(log: .*\))?$", reason)
            return "invalid", (m.group(1) if m else reason)
    if "results" in baseline:
        baseline = slim_baseline(baseline)
    base_fail = set(baseline["failed"])
    base_seen = base_fail | set(baseline["passed"]) | set(baseline["skipped"])
    killers, hung = [], False
    for r in data["results"]:
        if r["status"] != "fail" or _row_id(r) in base_fail:
            continue
        if r["suite"] == "(guest)" and ("hung" in r["reason"] or "stopped early" in r["reason"]):
            # Killed at its bound, or stopped early once it went quiet after
            # a fatal report: either way the mutant hung the guest.
            hung = True
        what = f"{r['suite']}.{r['name']}" if r["kind"] == "kunit" else f"{r['suite']}: {r['name']}"
        if r["kind"] == "console":
            what = f"{r['suite']}: {r['reason'][:80]}"
        if _row_id(r) not in base_seen and r["kind"] != "console" and r["suite"] != "(guest)":
            what += " (new)"
        killers.append(f"{r['kind']} {what}")
    # A case the unmodified tree passed that no longer reports at all (a crash
    # cut the run short) is caught by the parsers as a failure row already.
    if hung:
        return "timeout", "; ".join(killers)
    if killers:
        return "killed", "; ".join(killers)
    return "survived", ""


def score(results):
    """Kill rate over the valid, non-equivalent mutants (timeouts are kills)."""
    counted = [r for r in results if r["status"] in ("killed", "survived", "timeout")]
    killed = sum(r["status"] in ("killed", "timeout") for r in counted)
    counts = {s: sum(r["status"] == s for r in results) for s in STATUSES}
    pct = round(100.0 * killed / len(counted), 1) if counted else None
    return {"killed": killed, "valid": len(counted), "percent": pct, "counts": counts}


def document(tree, suite, results, not_applicable=()):
    """The result document: the mutants and the score; with suite "both",
    each mutant also carries upstream's verdict on the same build and the
    document upstream's score."""
    s = score(results)
    doc = {"tree": tree, "suite": suite, "mutants": results, "score": s["percent"],
           "counts": s["counts"], "killed": s["killed"], "valid": s["valid"],
           "not_applicable": list(not_applicable)}
    if suite == "both":
        u = score([m["upstream"] for m in results])
        doc["upstream"] = {"score": u["percent"], "counts": u["counts"],
                           "killed": u["killed"], "valid": u["valid"]}
    return doc


def merge(docs):
    """Fold shard results (same tree and suite, disjoint mutants) into one."""
    if not docs:
        raise MutantError("nothing to merge")
    tree, suite = docs[0].get("tree"), docs[0].get("suite")
    seen, mutants = set(), []
    for d in docs:
        if d.get("tree") != tree or d.get("suite") != suite:
            raise MutantError(f"cannot merge results of different trees or suites "
                              f"({tree}/{suite} vs {d.get('tree')}/{d.get('suite')})")
        for m in d["mutants"]:
            key = (m["name"], m["config"])
            if key in seen:
                raise MutantError(f"mutant {m['name']} ({m['config']}) is in more than one shard")
            seen.add(key)
            if suite == "both" and "status" not in m.get("upstream", {}):
                raise MutantError(f"mutant {m['name']} ({m['config']}) has no upstream verdict "
                                  f"in a two-suite result")
            mutants.append(m)
    mutants.sort(key=lambda m: (m["name"], m["config"]))
    # Every shard lists the tree's not-applicable mutants (no shard runs them).
    return document(tree, suite, mutants, docs[0].get("not_applicable", []))


def _score_line(who, d):
    c = d["counts"]
    pct = "n/a" if d["score"] is None else f"{d['score']}%"
    return (f"{who}: {d['killed']}/{d['valid']} valid mutants killed ({pct}); "
            f"{c['survived']} survived, {c['invalid']} invalid, {c['timeout']} timeout, "
            f"{c['equivalent']} equivalent")


def table(doc):
    both = doc["suite"] == "both"
    head = ("MUTANT", "BEHAVIOUR", "CONFIG", "STATUS", "SECONDS") + \
        (("UPSTREAM",) if both else ()) + ("KILLED BY / WHY",)
    rows = [(m["name"], m["behaviour"], m["config"], m["status"], str(m["seconds"]))
            + ((m["upstream"]["status"],) if both else ()) + (m.get("killed_by", ""),)
            for m in doc["mutants"]]
    n = len(head) - 1
    widths = [min(52, max([len(head[i])] + [len(r[i]) for r in rows])) for i in range(n)]
    out = [f"mutation gate: linux {doc['tree']}, suite {doc['suite']}"]

    def fmt(r):
        return "  ".join(str(r[i])[:widths[i]].ljust(widths[i]) for i in range(n)) + \
            ("  " + r[n][:120] if r[n] else "")
    out.append(fmt(head).rstrip())
    out += [fmt(r).rstrip() for r in rows]
    out.append(_score_line("SCORE" if not both else "SCORE (ours)", doc))
    if both:
        out.append(_score_line("SCORE (upstream, same mutants)", doc["upstream"]))
    out.append(f"{doc['killed']} passed, {doc['valid'] - doc['killed']} failed")
    return "\n".join(out)
