"""Parse nested KTAP/TAP as KUnit and kselftest print it.

Nesting is by indentation (KUnit: four spaces a level) or by "# " prefixes
(kselftest's runner wraps each test's own TAP that way). The parser builds a
tree of tests; results() flattens it into the gate's result rows. A plan
that was not met (a crash or hang mid-suite) is a failure, never a pass.
"""

import re
from typing import List

from .result import Row, row

TIMESTAMP = re.compile(r"^\[\s*\d+\.\d+\]\s?")
VERSION = re.compile(r"^(K?TAP) version \d+\s*$")
PLAN = re.compile(r"^1\.\.(\d+)(?:\s*#\s*SKIP\b[:\s]*(.*))?", re.I)
RESULT = re.compile(r"^(not ok|ok)\s+(\d+)(?:\s+-)?\s*(.*?)\s*(?:#\s*(.*))?$", re.I)
DIRECTIVE = re.compile(r"^(SKIP|TODO)\b[:\s]*(.*)$", re.I)
SUBTEST = re.compile(r"^#\s*Subtest:\s*(.*)$")


class Node:
    def __init__(self, name="", depth=0):
        self.name = name
        self.depth = depth
        self.plan = None
        self.status = None      # "pass" | "fail" | "skip" | None (no result line)
        self.reason = ""
        self.children = []
        self.diag = []          # "# ..." lines seen at this level since the last result
        self.skip_reason = ""   # from a "1..0 # SKIP reason" plan

    def __repr__(self):
        return f"Node({self.name!r}, {self.status}, {len(self.children)} children)"


def _strip(line):
    line = line.rstrip("\r\n")
    line = TIMESTAMP.sub("", line)
    return line


def _is_tap(body):
    return bool(VERSION.match(body) or PLAN.match(body) or RESULT.match(body))


def _depth_and_body(line, hash_nesting):
    """(depth, body) of a line: by 4-space indents, or with hash_nesting by '# '
    prefixes (a TAP line under N prefixes is at depth N; a comment under N
    prefixes is a diagnostic at depth N - 1)."""
    depth = 0
    body = line
    while body.startswith("    ") or body.startswith("\t"):
        body = body[4:] if body.startswith("    ") else body[1:]
        depth += 1
    if hash_nesting:
        n = 0
        rest = body
        while rest.startswith("# ") or rest == "#":
            rest = rest[2:]
            n += 1
        if n and _is_tap(rest.strip()):
            return depth + n, rest.strip()
        if n > 1:
            return depth + n - 1, "# " + rest.strip()
    return depth, body


def parse(text, hash_nesting=False):
    """Parse console text; return the root Node (its children: top-level tests)."""
    root = Node("root", -1)
    stack = [root]          # stack[d] is the test whose own lines are at depth d
    started = False
    base_depth = 0
    for raw in text.splitlines():
        line = _strip(raw)
        if not started:
            m = re.search(r"K?TAP version \d+\s*$", line)
            if not m:
                continue
            # Console noise may precede the version marker on the same line.
            started = True
            pre = line[:m.start()]
            base_depth = _depth_and_body(pre, hash_nesting)[0] if pre.strip() == "" else 0
            continue
        depth, body = _depth_and_body(line, hash_nesting)
        depth -= base_depth
        if depth < 0:
            continue
        body = body.strip()
        structural = _is_tap(body) or bool(SUBTEST.match(body))
        if not structural:
            # Diagnostics and console noise never open or close a subtest.
            stack[min(depth, len(stack) - 1)].diag.append(body.lstrip("#").strip())
            continue
        # Keep the stack as deep as this line: a deeper line opens a subtest.
        while len(stack) - 1 > depth:
            stack.pop()
        while len(stack) - 1 < depth:
            child = Node(_announced(stack[-1]), len(stack) - 1)
            stack[-1].children.append(child)
            stack.append(child)
        cur = stack[-1]
        if VERSION.match(body):
            if cur is not root and (cur.plan is not None or cur.children or cur.status):
                # A sibling subtest starts without its predecessor's result line.
                stack.pop()
                child = Node("", depth)
                stack[-1].children.append(child)
                stack.append(child)
            continue
        pm = PLAN.match(body)
        if pm:
            cur.plan = int(pm.group(1))
            if pm.group(2) is not None:
                cur.skip_reason = pm.group(2).strip() or "skipped"
            continue
        rm = RESULT.match(body)
        if rm:
            ok, _num, name, directive = rm.groups()
            status = "pass" if ok.lower() == "ok" else "fail"
            reason = (directive or "").strip()
            if not name and reason.upper().startswith("XFAIL"):
                # kselftest's "ok N # XFAIL msg": an expected failure, named by msg.
                name, reason = reason[5:].strip(), "expected failure (XFAIL)"
            case = next((m.group(1) for m in map(CASE_RUN.match, reversed(cur.diag)) if m), None)
            if case and cur.depth >= 1:
                # (Below a runner only: a runner's results are its programs.)
                # Named by its announced case, so each result is told apart.
                name = f"{case}: {name}" if name else case
            dm = DIRECTIVE.match(reason)
            if dm:
                reason = dm.group(2)
                if dm.group(1).upper() == "SKIP":
                    status = "skip"
            # An open subtest at this level with this name (or none yet) is this result.
            node = None
            for c in reversed(cur.children):
                if c.status is None and c.name in (name, ""):
                    node = c
                    break
            if node is None:
                node = Node(name, depth + 1)
                cur.children.append(node)
            node.name = name
            node.status = status
            node.reason = (reason or "").strip()
            if status == "fail":
                diag = _failure_reason(node.diag + cur.diag)
                node.reason = "; ".join(x for x in (node.reason, diag) if x)
            cur.diag = []
            continue
        sm = SUBTEST.match(body)
        if sm and cur is not root and cur.name == "":
            cur.name = sm.group(1).strip()
        else:
            cur.diag.append(body.lstrip("#").strip())
    return root


# run_vmtests.sh names a program's result by its whole command line ("ok 6
# transhuge-stress -d 20"), so the announced name keeps the arguments too.
RUNNING = re.compile(r"^running\s+(?:\./)?(\S.*?)\s*$")
# cow.c-style tests announce each case ("# [RUN] Basic COW after fork() ...")
# and then report a generic result ("ok 7 No leak from parent into child").
CASE_RUN = re.compile(r"^\[RUN\]\s+(.*?)\s*$")


def _announced(parent):
    """The program run_vmtests.sh announced ("running ./name") just before a
    nested TAP opened, so a program that dies before its result line is still
    named."""
    for d in reversed(parent.diag[-4:]):
        m = RUNNING.match(d)
        if m:
            return m.group(1)
    return ""


def _failure_reason(diag):
    """The first failed-expectation line and the one after it, else the last diagnostic."""
    lines = [d for d in diag if d and not d.startswith("Subtest:")]
    for i, d in enumerate(lines):
        if "FAILED" in d or "failed" in d.lower():
            return " / ".join(lines[i:i + 3])[:300]
    return lines[-1][:300] if lines else ""


def check_plan(node):
    """A plan with fewer results than promised: the names of the missing entries."""
    if node.plan is None:
        return None
    got = len([c for c in node.children if c.status is not None])
    if got < node.plan:
        return f"{got} of {node.plan} results (crashed or hung before the rest)"
    return None


def kunit_results(root):
    """Rows (suite, name, status, reason) for each KUnit case; params fold into their case."""
    rows: List[Row] = []
    tops = root.children
    if not tops:
        return rows
    for suite in tops:
        for case in suite.children:
            status = case.status
            reason = case.reason
            if status is None:
                status, reason = "fail", "no result line (crashed or hung)"
            if case.children:
                bad = [p.name for p in case.children if p.status == "fail"]
                missing = check_plan(case)
                if bad:
                    status = "fail"
                    reason = "failed params: " + ", ".join(bad) + (f"; {reason}" if reason else "")
                elif missing:
                    status, reason = "fail", missing
                elif status == "skip" and not reason:
                    # KUnit prints a skipped parameterised case's reason on its params only.
                    why = sorted({p.reason for p in case.children if p.status == "skip" and p.reason})
                    reason = "; ".join(why)
            rows.append(row(suite.name, case.name, status, reason))
        missing = check_plan(suite)
        if missing:
            rows.append(row(suite.name, "(suite incomplete)", "fail", missing))
        if suite.status is None and not missing:
            rows.append(row(suite.name, "(suite result)", "fail", "suite has no result line"))
    missing = check_plan(root) if root.plan is not None else None
    if missing:
        rows.append(row("(all)", "(run incomplete)", "fail", missing))
    return rows


def kunit_rows(text):
    """KUnit rows from a console; a console with no KTAP at all is one failure."""
    root = parse(text)
    rows = kunit_results(root)
    if root.plan is None and not rows:
        return [row("(kunit)", "KTAP output", "fail", "no KTAP in the console: the kernel did not run KUnit")]
    if root.plan == 0 or (root.plan is not None and not rows):
        return [row("(kunit)", "any case ran", "fail", "KTAP plan 1..0: no suite matched or was built in")]
    return rows


def kselftest_rows(text):
    """Rows from make run_tests output: one per subtest, one per program, one
    for the runner when it failed (e.g. its timeout)."""
    root = parse(text, hash_nesting=True)
    rows = []
    if not root.children:
        return [row("(kselftest)", "TAP output", "fail", "no kselftest TAP in the output")]
    for runner in root.children:            # "selftests: mm: run_vmtests.sh"
        programs = runner.children
        for prog in programs:
            pname = prog.name or "(unnamed)"
            for sub in prog.children:
                status = sub.status or "fail"
                reason = sub.reason if sub.status else "no result line (crashed or hung)"
                rows.append(row(pname, sub.name, status, reason))
            missing = check_plan(prog)
            if missing:
                rows.append(row(pname, "(incomplete)", "fail", missing))
            pstatus = prog.status or "fail"
            preason = prog.reason
            if pstatus == "skip":
                preason = prog.skip_reason or preason or "skipped"
            elif pstatus == "fail" and not preason:
                preason = "no result line (crashed or hung)" if not prog.status else "failed"
            rows.append(row(pname, "(program)", pstatus, preason))
        if runner.status != "pass" and not (runner.status == "skip" and programs):
            rows.append(row(runner.name or "(runner)", "(runner)", runner.status or "fail",
                         runner.reason or "the runner did not finish"))
        missing = check_plan(runner)
        if missing and not programs:
            rows.append(row(runner.name or "(runner)", "(incomplete)", "fail", missing))
    return rows
