// SPDX-License-Identifier: GPL-2.0
/*
 * fork() of a process mapping THPs and huge zero pages, while its other
 * threads fault and zap THPs in the same and in another PMD table.
 *
 * copy_huge_pmd() takes the child's and the parent's PMD table locks
 * (nested), deposits a freshly allocated page table in the child's table
 * for every huge PMD it copies (THP or huge zero page), and write-protects
 * both sides so the first write copies. Each child checks every chunk,
 * writes its own data into all of them and checks again; the parent checks
 * that its data survived. After every process is gone, PageTables in
 * /proc/meminfo must be back where it was.
 *
 * Catches: a copy that skips the deposit or deposits in the wrong table
 * (the child's zap withdraws from an empty queue, or a page table leaks),
 * a copy that is not write-protected (the child's write shows in the
 * parent), a child that sees the wrong page, and races between the copy and
 * concurrent faults or zaps (lost data, corrupted queues).
 */
#define _GNU_SOURCE
#include "pmd_ptlock.h"

struct variant {
	const char *name;
	bool traffic_other_table;	/* traffic in another PMD table too */
};

static const struct variant variants[] = {
	{ "fork under traffic in the same PMD table", false },
	{ "fork under traffic in the same and another PMD table", true },
};

enum { C_PARENT_HUGE, C_CHILD_SEES, C_CHILD_HUGE, C_COW, C_PARENT_KEEPS, C_TRAFFIC };
static const char *const checks[] = {
	[C_PARENT_HUGE] = "parent maps THPs and huge zero pages before fork",
	[C_CHILD_SEES] = "child sees the parent's data and zeroes",
	[C_CHILD_HUGE] = "child's copies are huge PMDs",
	[C_COW] = "child's writes land in its own copies",
	[C_PARENT_KEEPS] = "parent's data survives every child",
	[C_TRAFFIC] = "concurrent faults and zaps see their data",
	NULL
};

#define NR_CHUNKS	8	/* even: written THPs, odd: huge zero pages */
#define TRAFFIC_SLOT	128

static int nr_threads, rounds = 8;

struct traffic_layout {
	char *base;
	bool other_table;
};

/* Traffic chunk i: past the forked chunks, in another table for odd i if asked. */
static char *traffic_chunk(int i, void *arg)
{
	struct traffic_layout *l = arg;
	bool other = l->other_table && i % 2;

	return l->base + other * PT_GIB + (TRAFFIC_SLOT + i) * pmdsize;
}

static uint64_t parent_seed(int chunk)
{
	return 0x5eed0000ULL | chunk;
}

/* In the child: check what fork() copied, then break COW everywhere. */
static int check_and_write_copies(char *base, struct pt_report *r, int round)
{
	int i;

	for (i = 0; i < NR_CHUNKS; i++) {
		char *c = base + i * pmdsize;
		bool zero = i % 2;

		pt_check(r, C_CHILD_HUGE, zero ? pt_is_huge_zero(c) : pt_is_thp(c),
			 "round %d: child's chunk %d is not a huge %s", round, i,
			 zero ? "zero page" : "THP");
		pt_check(r, C_CHILD_SEES, zero ? pt_all_zero(c, pmdsize) :
			 pt_verify(c, pmdsize, parent_seed(i)) < 0,
			 "round %d: child's chunk %d differs from the parent's", round, i);
	}
	for (i = 0; i < NR_CHUNKS; i++)
		pt_fill(base + i * pmdsize, pmdsize, 0xc0ffee00ULL | round << 8 | i);
	for (i = 0; i < NR_CHUNKS; i++)
		pt_check(r, C_COW, pt_verify(base + i * pmdsize, pmdsize,
					     0xc0ffee00ULL | round << 8 | i) < 0,
			 "round %d: child's write to chunk %d did not stick", round, i);
	return 0;
}

static int fork_case(void *arg, struct pt_report *r)
{
	const struct variant *v = arg;
	struct traffic_layout layout;
	int stop = 0;
	struct pt_traffic *t;
	int i, round, status;
	char *base;

	base = pt_map_aligned(2 * PT_GIB, PT_GIB, true);
	if (!base)
		return 2;
	for (i = 0; i < NR_CHUNKS; i++) {
		char *c = base + i * pmdsize;

		if (i % 2) {
			/* A read fault maps the huge zero page. */
			pt_check(r, C_PARENT_HUGE, pt_all_zero(c, pmdsize) &&
				 pt_is_huge_zero(c), "chunk %d is not the huge zero page", i);
		} else {
			pt_fill(c, pmdsize, parent_seed(i));
			pt_check(r, C_PARENT_HUGE, pt_is_thp(c), "chunk %d is not a THP", i);
		}
	}
	layout.base = base;
	layout.other_table = v->traffic_other_table;
	t = pt_traffic_start(nr_threads, traffic_chunk, &layout, C_TRAFFIC, r, &stop);
	if (!t)
		return 2;

	for (round = 0; round < rounds; round++) {
		pid_t pid = fork();

		if (pid < 0)
			return 2;
		if (!pid)
			_exit(check_and_write_copies(base, r, round));
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			pt_check(r, C_CHILD_SEES, false, "round %d: child died (status %#x)",
				 round, status);
		for (i = 0; i < NR_CHUNKS; i++) {
			char *c = base + i * pmdsize;

			pt_check(r, C_PARENT_KEEPS, i % 2 ? pt_all_zero(c, pmdsize) :
				 pt_verify(c, pmdsize, parent_seed(i)) < 0,
				 "round %d: parent's chunk %d changed", round, i);
		}
	}

	pt_traffic_stop(t, nr_threads, &stop);
	munmap(base, 2 * PT_GIB);
	return 0;
}

int main(int argc, char **argv)
{
	const char *why;
	size_t i;
	FILE *f;
	int zp = -1;

	ksft_print_header();
	nr_threads = pt_threads(argc, argv, &rounds);
	why = pt_thp_unavailable();
	if (why)
		ksft_exit_skip("%s\n", why);
	f = fopen("/sys/kernel/mm/transparent_hugepage/use_zero_page", "r");
	if (f) {
		if (fscanf(f, "%d", &zp) != 1)
			zp = -1;
		fclose(f);
	}
	if (zp != 1)
		ksft_exit_skip("huge zero page off (transparent_hugepage/use_zero_page != 1)\n");
	ksft_set_plan(ARRAY_SIZE(variants) * pt_case_results(checks));
	ksft_print_msg("%d traffic threads, %d forks per case\n", nr_threads, rounds);
	for (i = 0; i < ARRAY_SIZE(variants); i++)
		pt_run_case(variants[i].name, checks, fork_case, (void *)&variants[i]);
	ksft_finished();
}
