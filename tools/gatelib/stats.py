"""Statistics for the benchmark's ratios: paired rounds, an exact interval.

A ratio is measured once per round (both sides of it in the same round, so
slow drifts of the machine hit both alike) and summarised by the median of
those per-round ratios with its 95% confidence interval (METHOD below says
how in one line; docs/bench.md quotes it).

The interval is distribution-free (no assumption about how the ratios
scatter) and exact (no resampling, hence no seed and nothing random): with
n ratios sorted x(1) <= ... <= x(n), the population median lies in
[x(k), x(n+1-k)] with probability P(k <= B <= n-k), B ~ Binomial(n, 1/2),
because B counts the rounds below the median. The largest k whose
probability still reaches 95% gives the narrowest such interval. Below 6
rounds even [x(1), x(n)] covers less than 95% (5 rounds: 93.75%), and the
result says 'too few rounds' instead of pretending.
"""

from dataclasses import asdict, dataclass
from math import comb
from statistics import median

CONFIDENCE = 0.95
METHOD = ("median of the paired per-round ratios; 95% CI = order statistics [x(k), x(n+1-k)] "
          "with the largest k such that P(k <= Binomial(n, 1/2) <= n-k) >= 0.95 "
          "(exact, distribution-free, needs n >= 6 rounds)")

TOO_FEW = "too few rounds"
NO_EFFECT = "no effect measurable"
EFFECT = "effect"


@dataclass(frozen=True)
class Interval:
    """The median of n per-round ratios and its confidence interval.

    lo and hi are None when n is too small for the confidence asked;
    coverage is the exact probability the interval holds the median
    (at least `confidence`, more when n leaves no k in between)."""
    n: int
    median: float | None
    lo: float | None
    hi: float | None
    k: int | None
    coverage: float | None
    confidence: float = CONFIDENCE

    @property
    def verdict(self) -> str:
        if self.lo is None or self.hi is None:
            return TOO_FEW
        if self.lo <= 1.0 <= self.hi:
            return NO_EFFECT
        return EFFECT

    def text(self) -> str:
        """What the tables print: a number only where the interval excludes 1.0."""
        pct = f"{100 * self.confidence:g}%"
        if self.verdict == TOO_FEW:
            return f"{TOO_FEW} (n={self.n}, {min_rounds(self.confidence)} needed)"
        assert self.lo is not None and self.hi is not None and self.median is not None
        ci = f"{pct} CI {fmt(self.lo)}-{fmt(self.hi)}"
        if self.verdict == NO_EFFECT:
            return f"{NO_EFFECT} ({ci})"
        return f"{fmt(self.median)} ({ci})"

    def as_dict(self) -> dict:
        return {**asdict(self), "verdict": self.verdict, "text": self.text()}


def fmt(x: float) -> str:
    """Two decimals below 10, one above: 0.98, 1.47, 15.3. Three where two
    would print 1.00 for a number that is not 1: a bound of 1.004 must not
    read as if the interval touched 1.0."""
    text = f"{x:.2f}" if abs(x) < 10 else f"{x:.1f}"
    return f"{x:.3f}" if text == "1.00" and x != 1.0 else text


def coverage(n: int, k: int) -> float:
    """P(k <= Binomial(n, 1/2) <= n-k): how often [x(k), x(n+1-k)] holds the median."""
    if k < 1 or 2 * k > n + 1:
        return 0.0
    return sum(comb(n, i) for i in range(k, n - k + 1)) / 2 ** n


def order_k(n: int, confidence: float = CONFIDENCE) -> int | None:
    """The largest k whose interval [x(k), x(n+1-k)] reaches `confidence`, or None."""
    best = None
    for k in range(1, n // 2 + 1):
        if coverage(n, k) >= confidence:
            best = k
        else:
            break   # coverage only falls as k grows
    return best


def min_rounds(confidence: float = CONFIDENCE) -> int:
    """The fewest ratios that can give an interval at `confidence` (6 for 95%)."""
    n = 1
    while order_k(n, confidence) is None:
        n += 1
    return n


def median_interval(ratios: list[float], confidence: float = CONFIDENCE) -> Interval:
    """The median of the paired ratios and its exact distribution-free interval."""
    xs = sorted(r for r in ratios if r == r)      # a NaN (a failed side) is no round
    n = len(xs)
    mid = median(xs) if xs else None
    k = order_k(n, confidence)
    if k is None:
        return Interval(n=n, median=mid, lo=None, hi=None, k=None, coverage=None,
                        confidence=confidence)
    return Interval(n=n, median=mid, lo=xs[k - 1], hi=xs[n - k], k=k,
                    coverage=coverage(n, k), confidence=confidence)


def paired_ratios(num: dict[int, float], den: dict[int, float]) -> dict[int, float]:
    """Per-round num/den for the rounds that measured both sides (and den > 0)."""
    return {r: num[r] / den[r] for r in sorted(num) if r in den and den[r] > 0}
