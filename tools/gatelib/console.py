"""Scan a guest console for kernel reports that fail the gate on their own,
even when every test passed."""

import os
import re
import time

from .ktap import TIMESTAMP
from .result import row

# (id, pattern): each a report the kernel prints only when something is wrong.
PATTERNS = [
    ("pgtables-leak", re.compile(r"non-zero pgtables_bytes")),
    ("bug", re.compile(r"\bBUG:")),
    ("kernel-bug", re.compile(r"kernel BUG at")),
    ("warning", re.compile(r"\bWARNING:")),
    ("lockdep", re.compile(r"possible recursive locking detected|possible circular locking dependency"
                           r"|inconsistent lock state|possible irq lock inversion|"
                           r"suspicious RCU usage|lock held when returning to user space|"
                           r"INFO: trying to register non-static key|DEBUG_LOCKS_WARN_ON")),
    ("panic", re.compile(r"Kernel panic")),
    ("oops", re.compile(r"\bOops\b|general protection fault|Unable to handle kernel|"
                        r"stack-protector: Kernel stack is corrupted")),
    ("bad-page", re.compile(r"Bad page (state|map)|Bad rss-counter|page_table_check")),
    ("list-corruption", re.compile(r"list_(add|del) corruption")),
    # RCU's reports (kernel/rcu/tree_stall.h, tree_exp.h, tasks.h): "INFO:
    # rcu_preempt detected stalls on CPUs/tasks", "... detected expedited
    # stalls", "... self-detected stall on CPU", "rcu_tasks detected stalls".
    ("stall", re.compile(r"soft lockup|hard LOCKUP|"
                         r"INFO: rcu\w* (self-)?detected (expedited )?stall|"
                         r"blocked for more than \d+ seconds")),
    ("sanitizer", re.compile(r"UBSAN:|KASAN:|KFENCE:|kmemleak: .* new suspected")),
]

# Lines that name the patterns without being reports (our own TAP output).
TAP_LINE = re.compile(r"^\s*(#|ok\b|not ok\b|K?TAP version|1\.\.)")


def finding(raw):
    """(id, the line without its timestamp) of a console line that is a
    kernel report, else None."""
    line = TIMESTAMP.sub("", raw.rstrip("\r\n"))
    if TAP_LINE.match(line):
        return None
    for pid, pat in PATTERNS:
        if pat.search(line):
            return pid, line.strip()
    return None


def scan(text, source):
    """Findings as (id, source, line number, line) for every matching console line."""
    found = ((n, finding(raw)) for n, raw in enumerate(text.splitlines(), 1))
    return [(f[0], source, n, f[1]) for n, f in found if f]


def results(text, source):
    """Gate rows (suite, name, status, reason): one per finding, or one clean pass."""
    found = scan(text, source)
    if not text.strip():
        return [row(source, "console captured", "fail",
                    "the console log is empty: the kernel died before its console "
                    "started, or QEMU did not run it")]
    if not found:
        return [row(source, "console clean", "pass", "")]
    return [row(source, f"{pid} (line {n})", "fail", line[:200]) for pid, _src, n, line in found]


# Reports after which a guest may never make progress again: the task that
# hit them died holding whatever it held, or a CPU is stuck. A WARNING or a
# lockdep report is not among them: the kernel carries on after those.
FATAL = {"bug", "kernel-bug", "panic", "oops", "stall"}


def fatal(line):
    """The finding id of a console line that is a fatal report, else None."""
    f = finding(line)
    return f[0] if f and f[0] in FATAL else None


class GuestWatch:
    """A run_logged watch for a guest, stopping it early, before its bound,
    when it will make no more progress:
    - its console showed a fatal report, and then neither the console nor
      any of `progress` (files the guest writes its results to) has changed
      for `quiet` seconds (a guest that keeps making progress after a fatal
      report runs on to its bound);
    - or `heartbeat` (a file guest-init grows by a byte every 5 s) has grown
      once and then not for `dead` seconds: no CPU schedules userspace any
      more, a hang that printed nothing (every CPU stuck with interrupts
      off), which no console report will ever show."""

    def __init__(self, quiet=30, progress=(), heartbeat=None, dead=120, clock=time.monotonic):
        self.quiet, self.progress, self.clock = quiet, list(progress), clock
        self.heartbeat, self.dead = heartbeat, dead
        self.first = None          # the first fatal console line
        self.last_output = clock()
        self.last_beat = None      # when the heartbeat last grew (None: not yet)
        self.sizes = {}

    def feed(self, line):
        self.last_output = self.clock()
        if self.first is None and fatal(line):
            self.first = TIMESTAMP.sub("", line.strip())[:160]

    def stopped(self, bound):
        """A guest row's reason once run_logged stopped the guest for it."""
        return (f"guest stopped early: {self.check() or 'quiet after a fatal report'} "
                f"(bound {bound} s)")

    def _grew(self, path):
        try:
            size = os.path.getsize(path)
        except OSError:
            size = -1
        grew = self.sizes.get(path) != size
        self.sizes[path] = size
        return grew and size > 0

    def check(self):
        now = self.clock()
        if any([self._grew(p) for p in self.progress]):
            self.last_output = max(self.last_output, now)
        if self.heartbeat and self._grew(self.heartbeat):
            self.last_beat = now
        if self.last_beat is not None and now - self.last_beat >= self.dead:
            return (f"its heartbeat stopped {self.dead} s ago: no CPU runs userspace, "
                    f"a hang that printed nothing")
        if self.first is None or now - self.last_output < self.quiet:
            return None
        return f"quiet for {self.quiet} s after a fatal report ({self.first})"
