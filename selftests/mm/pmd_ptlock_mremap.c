// SPDX-License-Identifier: GPL-2.0
/*
 * mremap() of THP-backed and PMD-aligned ranges across PMD tables, while
 * other threads fault THPs in both tables.
 *
 * Moving a THP to another 1 GiB region makes move_huge_pmd() take the old
 * and the new PMD table's locks together and, because they differ, move the
 * deposited page table from the old table's queue to the new one's
 * (pmd_move_must_withdraw()). Within one region it takes one lock and moves
 * no deposit. A PMD-aligned range of small pages goes through
 * move_normal_pmd(), which moves a whole PTE table between PMD tables
 * under both tables' locks. User space cannot see which path moved them:
 * the checks prove what any correct move leaves (the same pages, mapped by
 * PTEs, an empty old range), which move_page_tables()' PTE-by-PTE fallback
 * leaves too. So that case catches a move_normal_pmd() that goes wrong,
 * not one that is never taken.
 * Upstream's mremap_test moves shmem (no THP), so none of this is covered
 * there.
 *
 * What overlaps a move: mremap() holds mmap_lock for write and write-locks
 * the moved VMA and the neighbours it splits or merges, so the traffic
 * threads' madvise() calls (MADV_POPULATE_READ, MADV_DONTNEED: mmap_lock
 * for read) only run between moves. Their THP faults, in VMAs of their own
 * (pt_own_vmas()) in the same two PMD tables, run under their own VMA lock
 * and so really do run during the moves, taking the same PMD table locks
 * and depositing into the same queues as move_huge_pmd(); the count of
 * those that completed while mremap() ran is printed.
 *
 * Catches: a move that copies or splits instead of moving (PFN changes,
 * or PAGEMAP_SCAN no longer reports one huge PMD per THP), loses data,
 * leaves a PMD entry or PTE table behind at the old address (a new mapping
 * there finds pages present, or old data), or leaves the deposit in the
 * old table (the zap of the new range then withdraws from an empty queue:
 * a crash, or PageTables not back to baseline), and missing locking
 * against faults depositing into either table meanwhile.
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
	[C_MOVED] = "moved, not copied or split (same PFNs, same huge PMD or PTE mapping)",
	[C_OLD_GONE] =
		"old range left empty (a new mapping there has nothing present, reads zeros)",
	[C_TRAFFIC] =
		"traffic in other VMAs of both tables (its faults can overlap a move, its zaps cannot) sees its data",
	NULL
};

#define NR_CHUNKS	4	/* chunks moved at a time */

/*
 * Always an odd number of moves: the chunks end in the table they were not
 * faulted in. A deposit that does not travel with its THP would cancel out
 * over an even number of round trips; with an odd one the final zap finds
 * it missing in the new table and left over in the old one.
 */
static int nr_threads, rounds = 15;

/* How chunk c must be mapped: by a huge PMD (THP) or by PTEs (small). */
static bool mapped_as_moved(const struct move *m, char *c, enum pt_map *got)
{
	*got = pt_map_of(c, pmdsize);
	return *got == (m->kind == MOVE_SMALL ? PT_MAP_PTE : PT_MAP_THP);
}

static int move_case(void *arg, struct pt_report *r)
{
	const struct move *m = arg;
	size_t len = NR_CHUNKS * pmdsize;
	unsigned long pfn[NR_CHUNKS];
	long during = 0;
	int stop = 0;
	struct pt_traffic *t;
	char *base, *a, *b;
	enum pt_map got;
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
	/* Traffic in VMAs that no move splits, merges or write-locks. */
	if (pt_two_tables_traffic_vmas(base))
		return 2;

	t = pt_traffic_start(nr_threads, pt_two_tables_traffic_chunk, base,
			     C_TRAFFIC, r, &stop);
	if (!t)
		return 2;

	pt_fill(a, len, 0xa5);
	for (round = 0; round < rounds; round++) {
		char *from = round % 2 ? b : a, *to = round % 2 ? a : b;
		const char *left;
		long bad, done;

		for (i = 0; i < NR_CHUNKS; i++) {
			bool ok = mapped_as_moved(m, from + i * pmdsize, &got);

			pfn[i] = pt_pfn(from + i * pmdsize);
			pt_check(r, C_MOVED, ok,
				 "round %d: before the move, source chunk %d is %s", round,
				 i, pt_map_name(got));
		}
		done = pt_traffic_done();
		if (mremap(from, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, to) != to) {
			pt_check(r, C_MOVED, false, "round %d: mremap: %s", round,
				 strerror(errno));
			break;
		}
		during += pt_traffic_done() - done;
		bad = pt_verify(to, len, 0xa5);
		pt_check(r, C_DATA, bad < 0, "round %d: word %ld differs after the move",
			 round, bad);
		for (i = 0; i < NR_CHUNKS; i++) {
			char *c = to + i * pmdsize;
			/* A split or copy fallback fails here. */
			bool ok = mapped_as_moved(m, c, &got);
			unsigned long now = pt_pfn(c);

			pt_check(r, C_MOVED, ok && now == pfn[i],
				 "round %d: moved chunk %d is %s, pfn %lx -> %lx", round, i,
				 pt_map_name(got), pfn[i], now);
		}
		/* The old PMD entries are clear, not only the old VMA gone. */
		left = pt_range_left_empty(from, len);
		pt_check(r, C_OLD_GONE, !left, "round %d: %s", round, left);
	}
	pt_note(r, "%ld traffic THP faults completed while mremap() ran", during);

	pt_traffic_stop(t, nr_threads, &stop);
	/* Unmapping zaps the moved range: its deposit must be in its new table. */
	munmap(base, 2 * PT_GIB);
	return 0;
}

int main(int argc, char **argv)
{
	size_t i;

	ksft_print_header();
	nr_threads = pt_threads(argc, argv, &rounds);
	rounds |= 1;
	pt_skip_unless_thp(true);
	ksft_set_plan(ARRAY_SIZE(moves) * pt_case_results(checks));
	ksft_print_msg("%d traffic threads, %d moves per case\n", nr_threads, rounds);
	for (i = 0; i < ARRAY_SIZE(moves); i++)
		pt_run_case(moves[i].name, checks, move_case, (void *)&moves[i]);
	ksft_finished();
}
