// SPDX-License-Identifier: GPL-2.0
/*
 * MADV_DONTNEED of whole PTE-mapped chunks, which with CONFIG_PT_RECLAIM
 * frees the emptied PTE table and clears its PMD entry, in a PMD table
 * where other threads fault and zap THPs, and another thread walks the
 * chunks' page tables.
 *
 * PT_RECLAIM (not in 6.12; in 7.x def_bool y wherever
 * MMU_GATHER_RCU_TABLE_FREE is selected without HAVE_ARCH_TLB_REMOVE_TABLE,
 * which includes every x86-64 kernel) lives in zap_pte_range()
 * (mm/memory.c): when MADV_DONTNEED covers a whole PTE table, it clears
 * the PMD entry under the PMD table's lock, a split PMD lock that every
 * THP fault and zap in that 1 GiB region takes too. zap_empty_pte_table()
 * only trylocks it, with the PTE lock held; when that fails,
 * zap_pte_table_if_empty() takes pmd_lock(), then the PTE lock nested,
 * and checks the table is still empty. The table is freed by
 * pte_free_tlb(), after an RCU grace period, so that lockless walkers
 * (pte_offset_map()) never see it freed under them. The PMD entry is then
 * empty again, and the next write there is a THP fault, which deposits a
 * fresh table into the same PMD table's queue.
 *
 * Each worker cycles its own chunk: a write faults a THP (a huge PMD and a
 * deposit), MADV_DONTNEED of one page splits it (the deposit becomes its
 * PTE table; the other pages stay mapped with their data), MADV_DONTNEED
 * of the whole chunk zaps the rest and reclaims the PTE table, and the
 * next write must fault a THP again. Meanwhile THP traffic in the same
 * PMD table contends for its lock, and a walker reads every chunk's page
 * tables with mincore() and PAGEMAP_SCAN.
 *
 * Whether the kernel reclaims is first seen from a cycle run alone, with
 * VmPTE (one page table less after the whole-chunk zap). An x86-64 kernel
 * of 7.0 or later must; an older one without PT_RECLAIM (6.12) keeps the
 * table, there is nothing to race, and the test is skipped.
 *
 * Catches: reclaim that frees a PTE table still mapping pages (data lost,
 * "Bad page" reports, PageTables not back to baseline), a split that loses
 * data or maps the chunk wrongly, reclaim that stops happening or leaves
 * the PMD entry behind when its trylock of the PMD lock fails under the
 * traffic's contention (the refill is mapped by PTEs instead of a THP),
 * and a reclaim that leaks or double-frees the table (PageTables, console).
 * Not raced: only the worker touches its own chunk, so a reclaim that
 * clears the entry without the PMD lock, or frees the table before
 * lockless walkers are done, is left to lockdep and the console scan
 * (the walker's reads are not checked; no configuration has KASAN).
 */
#define _GNU_SOURCE
#include <sys/utsname.h>
#include "pmd_ptlock.h"

enum { C_SOLO, C_SPLIT, C_DATA, C_ZAPPED, C_REFILL, C_TRAFFIC };
static const char *const checks[] = {
	[C_SOLO] =
		"alone, the whole-chunk zap frees the emptied PTE table and the next write faults a THP (VmPTE)",
	[C_SPLIT] =
		"MADV_DONTNEED of one page splits the THP: no huge PMD, every other page mapped by PTEs",
	[C_DATA] = "the other pages keep their data through the split",
	[C_ZAPPED] = "MADV_DONTNEED of the whole chunk leaves nothing mapped",
	[C_REFILL] =
		"every fill faults a THP, so each whole-chunk zap reclaimed its PTE table (THP traffic in the same PMD table)",
	[C_TRAFFIC] = "THP traffic in the same PMD table sees its data",
	NULL
};

#define WORK_SLOT	8	/* first chunk of the workers */
#define TRAFFIC_SLOT	256	/* first chunk of the traffic threads */

static int nr_threads, rounds = 100;

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

/*
 * Index of the first word of the chunk p, from byte skip on, that differs
 * from what pt_fill(p, pmdsize, seed) wrote there, or -1.
 */
static long verify_past(const char *p, size_t skip, uint64_t seed)
{
	const uint64_t *w = (const uint64_t *)p;
	size_t i;

	for (i = skip / sizeof(*w); i < pmdsize / sizeof(*w); i++)
		if (w[i] != (seed ^ (i * 0x9e3779b97f4a7c15ULL)))
			return i;
	return -1;
}

/*
 * Fill the chunk (a THP fault: its PMD entry is empty), split it with a
 * one-page zap, zap it whole. Returns false if the fill was not a THP.
 */
static bool cycle(struct worker *w, int round)
{
	uint64_t seed = ((uint64_t)w->id << 40) | round;
	size_t pg = getpagesize();
	struct pt_scan s;
	enum pt_map got;
	long bad;

	pt_fill(w->chunk, pmdsize, seed);
	got = pt_map_of(w->chunk, pmdsize);
	pt_check(w->r, C_REFILL, got == PT_MAP_THP,
		 "worker %d round %d: the filled chunk is %s", w->id, round,
		 pt_map_name(got));
	if (got != PT_MAP_THP)
		return false;

	madvise(w->chunk, pg, MADV_DONTNEED);
	if (pt_scan(w->chunk, pmdsize, &s))
		pt_check(w->r, C_SPLIT, false, "worker %d round %d: PAGEMAP_SCAN: %s",
			 w->id, round, strerror(errno));
	else
		pt_check(w->r, C_SPLIT, !s.huge && s.present == pmdsize - pg,
			 "worker %d round %d: after a one-page zap, %zu kB by a huge PMD, %zu kB present, want 0, %zu kB",
			 w->id, round, s.huge >> 10, s.present >> 10,
			 (pmdsize - pg) >> 10);
	bad = verify_past(w->chunk, pg, seed);
	pt_check(w->r, C_DATA, bad < 0,
		 "worker %d round %d: word %ld differs after the split", w->id,
		 round, bad);

	madvise(w->chunk, pmdsize, MADV_DONTNEED);
	got = pt_map_of(w->chunk, pmdsize);
	pt_check(w->r, C_ZAPPED, got == PT_MAP_NONE,
		 "worker %d round %d: after the whole-chunk zap the chunk is %s",
		 w->id, round, pt_map_name(got));
	return true;
}

/*
 * One cycle alone, then a write: does the whole-chunk zap free the emptied
 * PTE table? Over the cycle VmPTE goes up a page at the THP fault (the
 * deposit), stays at the split (the deposit becomes the PTE table) and, if
 * the zap frees that table, down a page: *cycle_kb is 0 then, and the
 * write faults a THP (*refill_kb one page). If the table stays, *cycle_kb
 * is one page and the write maps a small page in it (*refill_kb 0).
 * Returns true if all of that says the table was freed.
 */
static bool reclaims_alone(struct worker *w, long *cycle_kb, long *refill_kb)
{
	long before, zapped, refilled, pg_kb = getpagesize() >> 10;
	bool thp;

	*cycle_kb = *refill_kb = 0;
	before = pt_vmpte_kb();
	if (!cycle(w, 0))
		return false;
	zapped = pt_vmpte_kb();
	w->chunk[0] = 1;
	refilled = pt_vmpte_kb();
	thp = pt_map_of(w->chunk, pmdsize) == PT_MAP_THP;
	madvise(w->chunk, pmdsize, MADV_DONTNEED);
	*cycle_kb = zapped - before;
	*refill_kb = refilled - zapped;
	return before >= 0 && thp && *cycle_kb == 0 && *refill_kb == pg_kb;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	int round;

	for (round = 1; round <= rounds; round++)
		if (!cycle(w, round))
			break;
	return NULL;
}

struct walker {
	pthread_t tid;
	struct worker *w;
	int *stop;
};

/* Read the workers' page tables without faulting anything in. */
static void *walk(void *arg)
{
	struct walker *k = arg;
	unsigned char vec[512];
	struct pt_scan s;
	int i;

	while (!__atomic_load_n(k->stop, __ATOMIC_ACQUIRE))
		for (i = 0; i < nr_threads; i++) {
			mincore(k->w[i].chunk, pmdsize, vec);
			pt_scan(k->w[i].chunk, pmdsize, &s);
		}
	return NULL;
}

static int reclaim_case(void *arg, struct pt_report *r)
{
	struct worker *w = calloc(nr_threads, sizeof(*w));
	struct walker k = { 0 };
	long cycle_kb, refill_kb;
	int stop = 0, i;
	bool freed;
	struct pt_traffic *t;
	char *base;

	(void)arg;
	base = pt_map_aligned(PT_GIB, PT_GIB, true);
	if (!base || !w)
		return 2;
	/* A small page keeps the PMD table in place (VmPTE counts chunks only). */
	if (madvise(base, getpagesize(), MADV_NOHUGEPAGE))
		return 2;
	*base = 1;
	if (pt_own_vmas(base + TRAFFIC_SLOT * pmdsize, PT_GIB - TRAFFIC_SLOT * pmdsize))
		return 2;
	for (i = 0; i < nr_threads; i++) {
		w[i].chunk = base + (WORK_SLOT + i) * pmdsize;
		w[i].id = i;
		w[i].r = r;
	}

	/* Alone first; the concurrent cycles run (and report) either way. */
	freed = reclaims_alone(&w[0], &cycle_kb, &refill_kb);
	pt_check(r, C_SOLO, freed,
		 "VmPTE %+ld kB over the cycle (want +0: fault +1 page, split 0, zap -1), %+ld kB at the next write (want +%d: a THP fault)",
		 cycle_kb, refill_kb, getpagesize() >> 10);

	t = pt_traffic_start(nr_threads, traffic_chunk, base, C_TRAFFIC, r, &stop);
	if (!t)
		return 2;
	k.w = w;
	k.stop = &stop;
	if (pthread_create(&k.tid, NULL, walk, &k))
		return 2;
	for (i = 0; i < nr_threads; i++)
		if (pthread_create(&w[i].tid, NULL, work, &w[i]))
			return 2;
	for (i = 0; i < nr_threads; i++)
		pthread_join(w[i].tid, NULL);
	pt_traffic_stop(t, nr_threads, &stop);
	pthread_join(k.tid, NULL);
	munmap(base, PT_GIB);
	free(w);
	return 0;
}

/*
 * Must this kernel reclaim? 7.3's mm/Kconfig makes PT_RECLAIM def_bool y
 * on MMU_GATHER_RCU_TABLE_FREE && !HAVE_ARCH_TLB_REMOVE_TABLE, which x86-64
 * always has there (taken to hold from 7.0 on). Elsewhere it depends on
 * the architecture or the config, and a kernel that keeps the tables
 * skips.
 */
static bool must_reclaim(void)
{
	struct utsname u;
	int major;

	return !uname(&u) && !strcmp(u.machine, "x86_64") &&
	       sscanf(u.release, "%d.", &major) == 1 && major >= 7;
}

/*
 * A cycle alone in a child: exit 1 if the emptied PTE table was freed, 0
 * if it was kept (a small page in it after the zap, VmPTE as if kept), 2
 * on anything else.
 */
static int probe(void)
{
	struct pt_report *r = pt_report_new(checks);
	struct worker w = { .id = 0, .r = r };
	long cycle_kb, refill_kb;
	char *base;

	/* In one PMD table: a new one would add a page to the cycle's VmPTE. */
	base = pt_map_aligned(2 * pmdsize, PT_GIB, true);
	if (!base || madvise(base, getpagesize(), MADV_NOHUGEPAGE))
		return 2;
	*base = 1;
	w.chunk = base + pmdsize;
	if (reclaims_alone(&w, &cycle_kb, &refill_kb))
		return 1;
	return cycle_kb == getpagesize() >> 10 && !refill_kb ? 0 : 2;
}

/* Does this kernel free emptied PTE tables? Asked in a child. */
static bool kept_alone(void)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		ksft_exit_fail_msg("fork: %s\n", strerror(errno));
	if (!pid)
		_exit(probe());
	if (waitpid(pid, &status, 0) != pid)
		ksft_exit_fail_msg("waitpid: %s\n", strerror(errno));
	return WIFEXITED(status) && !WEXITSTATUS(status);
}

int main(int argc, char **argv)
{
	const char *what = "split THPs zapped whole next to THP traffic";

	ksft_print_header();
	nr_threads = pt_threads(argc, argv, &rounds);
	pt_skip_unless_thp(false);
	pt_khugepaged_leave_holes();
	if (!must_reclaim() && kept_alone())
		ksft_exit_skip("MADV_DONTNEED keeps emptied PTE tables (no CONFIG_PT_RECLAIM, which 6.12 lacks): nothing to race\n");
	ksft_set_plan(pt_case_results(checks));
	ksft_print_msg("%d workers and %d traffic threads in one PMD table, %d cycles each\n",
		       nr_threads, nr_threads, rounds);
	pt_run_case(what, checks, reclaim_case, NULL);
	ksft_finished();
}
