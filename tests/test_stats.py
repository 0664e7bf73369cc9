"""The benchmark's statistics (tools/gatelib/stats.py): the exact
distribution-free interval for the median of paired per-round ratios, and
what the tables print from it. No benchmark is run here."""

import math
import random
import unittest

import helpers  # noqa: F401  (the import path for gatelib)
from gatelib import stats


class TheOrderStatisticInterval(unittest.TestCase):
    def test_coverage_is_the_binomial_sum(self):
        self.assertAlmostEqual(stats.coverage(6, 1), 62 / 64)
        self.assertAlmostEqual(stats.coverage(5, 1), 30 / 32)
        self.assertAlmostEqual(stats.coverage(10, 2), 1 - 2 * 11 / 1024)

    def test_k_is_the_largest_that_keeps_95_percent(self):
        # The textbook table for the median: n=6..8 [x(1), x(n)], n=10 k=2, n=15 k=4, n=20 k=6.
        for n, k in ((5, None), (6, 1), (8, 1), (9, 2), (10, 2), (15, 4), (20, 6)):
            self.assertEqual(stats.order_k(n), k, n)
            if k:
                self.assertGreaterEqual(stats.coverage(n, k), 0.95)
                self.assertLess(stats.coverage(n, k + 1), 0.95)

    def test_six_rounds_are_the_fewest_for_95_percent(self):
        self.assertEqual(stats.min_rounds(), 6)

    def test_the_interval_is_two_of_the_ratios_themselves(self):
        xs = [1.9, 1.5, 2.2, 1.7, 1.6, 2.0, 1.8, 2.1, 1.4, 1.95]
        iv = stats.median_interval(xs)
        s = sorted(xs)
        self.assertEqual((iv.n, iv.k, iv.lo, iv.hi), (10, 2, s[1], s[8]))
        self.assertAlmostEqual(iv.median, (s[4] + s[5]) / 2)

    def test_it_holds_the_true_median_at_least_95_percent_of_the_time(self):
        # Skewed (log-normal) ratios with a known median of 1.3, seeded: the
        # exact method needs no distribution and should cover about 97.9% at n=10.
        rng = random.Random(24)
        trials, hit = 3000, 0
        for _ in range(trials):
            xs = [1.3 * math.exp(rng.gauss(0, 0.8)) for _ in range(10)]
            iv = stats.median_interval(xs)
            hit += iv.lo <= 1.3 <= iv.hi
        self.assertGreaterEqual(hit / trials, 0.95)

    def test_deterministic_and_blind_to_the_order_of_rounds(self):
        xs = [1.02, 0.97, 1.10, 0.99, 1.05, 1.01, 0.95, 1.03]
        shuffled = xs[:]
        random.Random(7).shuffle(shuffled)
        self.assertEqual(stats.median_interval(xs), stats.median_interval(shuffled))
        self.assertEqual(stats.median_interval(xs), stats.median_interval(list(xs)))

    def test_a_round_without_a_number_is_no_round(self):
        iv = stats.median_interval([1.0, float("nan"), 2.0])
        self.assertEqual(iv.n, 2)


class WhatTheTablesPrint(unittest.TestCase):
    def test_an_interval_holding_one_is_no_effect_measurable_and_no_ratio(self):
        iv = stats.median_interval([0.96, 1.04, 1.01, 0.99, 1.07, 0.98, 1.02])
        self.assertEqual(iv.verdict, stats.NO_EFFECT)
        self.assertEqual(iv.text(), "no effect measurable (95% CI 0.96-1.07)")
        self.assertFalse(iv.text()[0].isdigit())

    def test_a_clear_effect_prints_the_ratio_with_its_interval(self):
        iv = stats.median_interval([15.1, 14.8, 15.5, 16.0, 14.9, 15.2, 15.3])
        self.assertEqual(iv.verdict, stats.EFFECT)
        self.assertEqual(iv.text(), "15.2 (95% CI 14.8-16.0)")

    def test_an_effect_below_one_is_an_effect_too(self):
        iv = stats.median_interval([0.73, 0.75, 0.71, 0.78, 0.74, 0.72])
        self.assertEqual(iv.verdict, stats.EFFECT)
        self.assertTrue(iv.text().startswith("0.73 (95% CI 0.71-0.78)"), iv.text())

    def test_a_bound_just_above_one_does_not_print_as_one(self):
        iv = stats.median_interval([1.004, 1.06, 1.08, 1.05, 1.11, 1.07])
        self.assertEqual(iv.verdict, stats.EFFECT)
        self.assertEqual(iv.text(), "1.06 (95% CI 1.004-1.11)")
        self.assertEqual(stats.fmt(1.0), "1.00")

    def test_an_interval_touching_one_is_no_effect(self):
        iv = stats.median_interval([1.0, 1.2, 1.3, 1.25, 1.1, 1.15])
        self.assertEqual(iv.verdict, stats.NO_EFFECT)

    def test_too_few_rounds_say_so_and_give_no_number(self):
        for n in (0, 1, 5):
            iv = stats.median_interval([1.5 + i / 100 for i in range(n)])
            self.assertEqual(iv.verdict, stats.TOO_FEW)
            self.assertIsNone(iv.lo)
            self.assertEqual(iv.text(), f"too few rounds (n={n}, 6 needed)")

    def test_the_json_form_carries_the_verdict_and_the_text(self):
        d = stats.median_interval([2.0] * 6).as_dict()
        for key in ("n", "median", "lo", "hi", "k", "coverage", "confidence", "verdict", "text"):
            self.assertIn(key, d)
        self.assertEqual(d["verdict"], stats.EFFECT)

    def test_the_method_is_one_line(self):
        self.assertNotIn("\n", stats.METHOD)
        self.assertIn("95%", stats.METHOD)


class PairingRounds(unittest.TestCase):
    def test_only_rounds_with_both_sides_pair(self):
        num = {1: 2.0, 2: 3.0, 3: 4.0, 4: 1.0}
        den = {1: 1.0, 2: 1.5, 4: 0.0}
        self.assertEqual(stats.paired_ratios(num, den), {1: 2.0, 2: 2.0})


if __name__ == "__main__":
    unittest.main()
