// SPDX-License-Identifier: GPL-2.0
/*
 * mremap() of THP-backed and PMD-aligned ranges across PMD tables, under
 * fault and zap traffic in both tables.
 *
 * Moving a THP to another 1 GiB region makes move_huge_pmd() take the old
 * and the new PMD table's locks together and, because they differ, move the
 * deposited page table from the old table's queue to the new one's
 * (pmd_move_must_withdraw()). Within one region it takes one lock and moves
 * no deposit. A PMD-aligned range of small pages goes through
 * move_normal_pmd(), which moves a whole PTE table between PMD tables.
 * Upstream's mremap_test moves shmem (no THP), so none of this is covered
 * there.
 *
 * Catches: a move that copies or splits instead of moving (PFN or THP
 * changes), loses data, leaves the old range mapped, or leaves the deposit
 * in the old table (the zap of the new range then withdraws from an empty
 * queue: a crash, or PageTables not back to baseline), and lock ordering or
 * missing locking against concurrent faults and zaps in either table.
 */
#define _GNU_SOURCE
#include "pmd_ptlock.h"

enum kind { MOVE_THP, MOVE_SMALL };

struct move {
	const char *name;
	enum kind kind;
	bool cross;		/* destination in another PMD table */
};

static const struct move moves[] = {
	{ "THPs moved to another PMD table", MOVE_THP, true },
	{ "THPs moved within one PMD table", MOVE_THP, false },
	{ "PMD-aligned small pages moved to another PMD table", MOVE_SMALL, true },
};

enum { C_DATA, C_MOVED, C_OLD_GONE, C_TRAFFIC };
static const char *const checks[] = {
	[C_DATA] = "moved data intact",
	[C_MOVED] = "moved, not copied or split (same PFNs, still THP)",
	[C_OLD_GONE] = "old range unmapped",
	[C_TRAFFIC] = "concurrent faults and zaps in both tables see their data",
	NULL
};

#define NR_CHUNKS	4	/* chunks moved at a time */
#define TRAFFIC_SLOT	256	/* first chunk index used by the traffic threads */

/*
 * Always an odd number of moves: the chunks end in the table they were not
 * faulted in. A deposit that does not travel with its THP would cancel out
 * over an even number of round trips; with an odd one the final zap finds
 * it missing in the new table and left over in the old one.
 */
static int nr_threads, rounds = 15;

/* Traffic chunk i: in region A for even i, in region B for odd i. */
static char *traffic_chunk(int i, void *base)
{
	return (char *)base + (i % 2) * PT_GIB + (TRAFFIC_SLOT + i) * pmdsize;
}

static int move_case(void *arg, struct pt_report *r)
{
	const struct move *m = arg;
	size_t len = NR_CHUNKS * pmdsize;
	unsigned long pfn[NR_CHUNKS];
	int stop = 0;
	struct pt_traffic *t;
	char *base, *a, *b;
	int i, round;

	/* Region A and, 1 GiB on, region B: one PMD table each. */
	base = pt_map_aligned(2 * PT_GIB, PT_GIB, true);
	if (!base)
		return 2;
	a = base + 8 * pmdsize;
	b = m->cross ? base + PT_GIB + 16 * pmdsize : base + 64 * pmdsize;
	/* The moved range leaves holes; keep it a VMA of its own kind. */
	if (m->kind == MOVE_SMALL && madvise(a, len, MADV_NOHUGEPAGE))
		return 2;

	t = pt_traffic_start(nr_threads, traffic_chunk, base, C_TRAFFIC, r, &stop);
	if (!t)
		return 2;

	pt_fill(a, len, 0xa5);
	for (round = 0; round < rounds; round++) {
		char *from = round % 2 ? b : a, *to = round % 2 ? a : b;
		long bad;

		for (i = 0; i < NR_CHUNKS; i++) {
			pfn[i] = pt_pfn(from + i * pmdsize);
			if (m->kind == MOVE_THP)
				pt_check(r, C_MOVED, pt_is_thp(from + i * pmdsize),
					 "round %d: source chunk %d is not a THP", round, i);
		}
		if (mremap(from, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, to) != to) {
			pt_check(r, C_MOVED, false, "round %d: mremap: %s", round,
				 strerror(errno));
			break;
		}
		bad = pt_verify(to, len, 0xa5);
		pt_check(r, C_DATA, bad < 0, "round %d: word %ld differs after the move",
			 round, bad);
		for (i = 0; i < NR_CHUNKS; i++) {
			char *c = to + i * pmdsize;

			pt_check(r, C_MOVED, pt_pfn(c) == pfn[i] &&
				 (m->kind == MOVE_SMALL ? !pt_is_thp(c) : pt_is_thp(c)),
				 "round %d: chunk %d pfn %lx -> %lx, thp %d", round, i,
				 pfn[i], pt_pfn(c), pt_is_thp(c));
		}
		pt_check(r, C_OLD_GONE, pt_unmapped(from, len),
			 "round %d: old range still mapped", round);
	}

	pt_traffic_stop(t, nr_threads, &stop);
	/* Unmapping zaps the moved range: its deposit must be in its new table. */
	munmap(base, 2 * PT_GIB);
	return 0;
}

int main(int argc, char **argv)
{
	const char *why;
	size_t i;

	ksft_print_header();
	nr_threads = pt_threads(argc, argv, &rounds);
	rounds |= 1;
	why = pt_thp_unavailable();
	if (why)
		ksft_exit_skip("%s\n", why);
	if (getuid())
		ksft_exit_skip("needs root to read PFNs from /proc/self/pagemap\n");
	ksft_set_plan(ARRAY_SIZE(moves) * pt_case_results(checks));
	ksft_print_msg("%d traffic threads, %d moves per case\n", nr_threads, rounds);
	for (i = 0; i < ARRAY_SIZE(moves); i++)
		pt_run_case(moves[i].name, checks, move_case, (void *)&moves[i]);
	ksft_finished();
}
