// SPDX-License-Identifier: GPL-2.0
/*
 * DRAFT (compiles against 6.12 and 7.3; passed on a 6.18 host, not yet run
 * in the gate's guests):
 * MADV_DONTNEED of whole PTE-mapped chunks, which with CONFIG_PT_RECLAIM
 * (not in 6.12; on by default wherever MMU_GATHER_RCU_TABLE_FREE is, so x86 in
 * 7.x) frees the emptied PTE table and clears its PMD entry, in a PMD
 * table where other threads fault and zap THPs.
 *
 * zap_pte_range() reclaims an empty PTE table under both the PTE table's
 * lock and the PMD table's lock: zap_empty_pte_table() only trylocks the
 * PMD table's lock (a split PMD lock, the one every THP fault and zap in
 * that 1 GiB region takes), and when that fails zap_pte_table_if_empty()
 * takes pmd_lock() and then the PTE lock nested. The freed table goes
 * back after an RCU grace period (pte_free_tlb()). The PMD entry it
 * clears is then empty again, so the next fault there can be a THP fault,
 * which deposits a fresh table into the same PMD table's queue.
 *
 * Each worker cycles its own chunk: a write faults a THP (huge PMD and a
 * deposit), MADV_DONTNEED of one page splits it (the deposit becomes its
 * PTE table, 511 pages stay mapped with their data), MADV_DONTNEED of the
 * whole chunk zaps the rest. Whether the kernel reclaims the emptied PTE
 * table is seen once, alone, from VmPTE (a page less, or not); then, with
 * traffic faulting THPs in the same PMD table, every cycle must agree: a
 * reclaimed table leaves the PMD entry empty and the next write faults a
 * THP; a kept one maps a single small page in it.
 *
 * Catches: reclaim that frees a PTE table still mapping pages, or under
 * the wrong PMD lock (a concurrent THP fault installs a huge PMD over it:
 * data lost, a crash, or PageTables not back to baseline), a split that
 * loses data, and reclaim that stops happening under PMD lock contention.
 */
#define _GNU_SOURCE
#include "pmd_ptlock.h"

enum { C_SPLIT, C_RECLAIM, C_DATA, C_TRAFFIC };
static const char *const checks[] = {
	[C_SPLIT] = "MADV_DONTNEED of one page splits the THP (PTE-mapped, the other pages' data kept)",
	[C_RECLAIM] = "MADV_DONTNEED of the whole chunk leaves nothing mapped, and its PTE table goes exactly when PT_RECLAIM frees it alone (the next write faults a THP)",
	[C_DATA] = "a chunk's data survives until its zap",
	[C_TRAFFIC] = "THP traffic in the same PMD table sees its data",
	NULL
};

#define WORK_SLOT	8	/* first chunk of the workers */
#define TRAFFIC_SLOT	256

static int nr_threads, rounds = 200;
static bool reclaims;		/* seen alone: the emptied PTE table is freed */

struct worker {
	pthread_t tid;
	char *chunk;
	int id;
	struct pt_report *r;
};

static char *traffic_chunk(int i, void *base)
{
	return (char *)base + (TRAFFIC_SLOT + i) * pmdsize;
}

/* THP fault, split by a one-page zap, whole zap; false if the THP fault fell back. */
static bool cycle(struct worker *w, int round, bool first)
{
	size_t pg = getpagesize();
	uint64_t seed = ((uint64_t)w->id << 40) | round;
	enum pt_map got;
	long bad;

	pt_fill(w->chunk, pmdsize, seed);
	got = pt_map_of(w->chunk, pmdsize);
	if (!first)
		pt_check(w->r, C_RECLAIM, got == (reclaims ? PT_MAP_THP : PT_MAP_PTE),
			 "worker %d round %d: refilled chunk is %s, want %s", w->id, round,
			 pt_map_name(got), reclaims ? "a THP (table reclaimed)" :
			 "mapped by PTEs (table kept)");
	if (got != PT_MAP_THP)
		return false;
	madvise(w->chunk, pg, MADV_DONTNEED);
	got = pt_map_of(w->chunk, pmdsize);
	pt_check(w->r, C_SPLIT, got == PT_MAP_PTE_PARTLY,
		 "worker %d round %d: after a one-page zap the chunk is %s", w->id, round,
		 pt_map_name(got));
	/* pt_fill() seeds per word index: compare against the whole-chunk pattern. */
	bad = -1;
	{
		const uint64_t *wd = (const uint64_t *)w->chunk;
		size_t i;

		for (i = pg / sizeof(*wd); i < pmdsize / sizeof(*wd); i++)
			if (wd[i] != (seed ^ (i * 0x9e3779b97f4a7c15ULL))) {
				bad = i;
				break;
			}
	}
	pt_check(w->r, C_DATA, bad < 0, "worker %d round %d: word %ld differs after the split",
		 w->id, round, bad);
	madvise(w->chunk, pmdsize, MADV_DONTNEED);
	got = pt_map_of(w->chunk, pmdsize);
	pt_check(w->r, C_RECLAIM, got == PT_MAP_NONE,
		 "worker %d round %d: after the whole-chunk zap the chunk is %s", w->id, round,
		 pt_map_name(got));
	return true;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	int round;

	for (round = 0; round < rounds; round++)
		cycle(w, round, round == 0);
	return NULL;
}

static int reclaim_case(void *arg, struct pt_report *r)
{
	struct worker *w = calloc(nr_threads, sizeof(*w));
	struct pt_traffic *t;
	long before, after;
	int stop = 0, i;
	char *base;

	base = pt_map_aligned(PT_GIB, PT_GIB, true);
	if (!base || !w)
		return 2;
	if (pt_own_vmas(base + TRAFFIC_SLOT * pmdsize, PT_GIB - TRAFFIC_SLOT * pmdsize))
		return 2;
	for (i = 0; i < nr_threads; i++) {
		w[i].chunk = base + (WORK_SLOT + i) * pmdsize;
		w[i].id = i;
		w[i].r = r;
	}
	/* Alone, once: does this kernel free the emptied PTE table? */
	if (!cycle(&w[0], 0, true))
		return 2;
	before = pt_vmpte_kb();
	w[0].chunk[0] = 1;		/* a THP fault again iff the table went */
	after = pt_vmpte_kb();
	reclaims = pt_map_of(w[0].chunk, pmdsize) == PT_MAP_THP;
	pt_note(r, "PT_RECLAIM %s (VmPTE %+ld kB at the refault)",
		reclaims ? "frees emptied PTE tables" : "off: emptied PTE tables stay",
		after - before);
	madvise(w[0].chunk, pmdsize, MADV_DONTNEED);

	t = pt_traffic_start(nr_threads, traffic_chunk, base, C_TRAFFIC, r, &stop);
	if (!t)
		return 2;
	for (i = 0; i < nr_threads; i++)
		if (pthread_create(&w[i].tid, NULL, work, &w[i]))
			return 2;
	for (i = 0; i < nr_threads; i++)
		pthread_join(w[i].tid, NULL);
	pt_traffic_stop(t, nr_threads, &stop);
	munmap(base, PT_GIB);
	free(w);
	return 0;
}

int main(int argc, char **argv)
{
	const char *why;

	ksft_print_header();
	nr_threads = pt_threads(argc, argv, &rounds);
	why = pt_thp_unavailable();
	if (why)
		ksft_exit_skip("%s\n", why);
	ksft_set_plan(pt_case_results(checks));
	ksft_print_msg("%d workers and %d traffic threads in one PMD table, %d cycles each\n",
		       nr_threads, nr_threads, rounds);
	pt_run_case("split THPs zapped whole next to THP traffic", checks, reclaim_case, NULL);
	ksft_finished();
}
