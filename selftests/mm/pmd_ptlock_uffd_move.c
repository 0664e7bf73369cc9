// SPDX-License-Identifier: GPL-2.0
/*
 * UFFDIO_MOVE of THPs and huge zero PMDs within one PMD table and across
 * PMD tables, while other threads fault THPs in both tables.
 *
 * UFFDIO_MOVE of a PMD-aligned, PMD-sized range whose source is a huge PMD
 * and whose destination PMD entry is empty goes to move_pages_huge_pmd()
 * (mm/huge_memory.c; the caller is move_pages() in mm/userfaultfd.c): it
 * takes both PMD tables' locks (double_pt_lock(): one lock when both are
 * the same table), moves the huge PMD, and moves the deposited page table
 * from the source table's queue to the destination table's (withdraw and
 * deposit, even within one table). Upstream's uffd-unit-tests "move-pmd"
 * checks the data only: not that the THP is still mapped by a huge PMD,
 * not where the deposit went, and not across PMD tables.
 *
 * Prerequisites (move_pages(), validate_move_areas()): UFFD_FEATURE_MOVE
 * (6.8 and later), both ranges anonymous, private and writable with the
 * same protection, the destination registered with the same userfaultfd,
 * the source folio exclusive to this mm (no fork since it was faulted) and
 * not pinned, the destination PMD entry empty (never touched: not even an
 * empty PTE table), both addresses and the length multiples of the PMD
 * size. Both ranges are registered (MISSING) so that the chunks can move
 * back and forth. Nothing ever touches a registered range that has nothing
 * mapped (that would wait for a fault handler this test does not run):
 * the source is checked empty with PAGEMAP_SCAN only.
 *
 * What overlaps a move: UFFDIO_MOVE holds the two VMAs' read locks (or
 * mmap_lock for read), so the traffic threads' THP faults, under their own
 * VMA locks, and their madvise() calls, under mmap_lock or VMA read locks,
 * in VMAs of their own in the same two PMD tables, can run during a move
 * and take the very PMD table locks it takes; the count of traffic faults
 * that completed while UFFDIO_MOVE ran is printed.
 *
 * Where the deposits end up: a small page at the start of each 1 GiB
 * region keeps both PMD tables in place without a deposit of its own, and
 * the traffic ends with its chunks zapped, so once it has stopped the only
 * deposits in the destination's PMD table are the moved chunks'. Zapping
 * them must then withdraw and free exactly one page table each (VmPTE); a
 * deposit left in the source table makes that zap withdraw from an empty
 * queue (a NULL dereference: the workload is killed, or the kernel dies),
 * and the one left behind stays charged to the case's memory cgroup once
 * the process is gone.
 *
 * Catches: a move that copies or splits instead of moving (PFN changes,
 * PAGEMAP_SCAN no longer reports one huge PMD per chunk, or a PTE table is
 * allocated), loses data, leaves the source mapped, or leaves the deposit
 * in the source table, and missing locking against the faults depositing
 * into either table meanwhile (lost data, corrupted queues).
 */
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <linux/userfaultfd.h>
#include "pmd_ptlock.h"

struct move {
	const char *name;
	bool cross;		/* destination in another PMD table */
	bool zero;		/* huge zero PMDs (read faults), not THPs */
};

static const struct move moves[] = {
	{ "THPs moved by UFFDIO_MOVE to another PMD table", true, false },
	{ "THPs moved by UFFDIO_MOVE within one PMD table", false, false },
	{ "huge zero PMDs moved by UFFDIO_MOVE to another PMD table", true, true },
};

enum { C_DATA, C_MOVED, C_SRC_EMPTY, C_QUIET, C_ZAP, C_TRAFFIC };
static const char *const checks[] = {
	[C_DATA] = "moved data intact",
	[C_MOVED] =
		"moved, not copied or split (same PFNs, still one huge PMD per chunk)",
	[C_SRC_EMPTY] = "source left with nothing mapped (PAGEMAP_SCAN)",
	[C_QUIET] = "a move alone leaves VmPTE unchanged",
	[C_ZAP] =
		"zapping the moved chunks lowers VmPTE by one page table each (each withdraws and frees a deposit)",
	[C_TRAFFIC] =
		"traffic in other VMAs of both tables (its faults and zaps can overlap a move) sees its data",
	NULL
};

#define NR_CHUNKS	4	/* chunks moved at a time */

/*
 * Round trips while the traffic runs. With the first, quiet move, the
 * chunks move an odd number of times and end in the range they were not
 * faulted in.
 */
static int nr_threads, rounds = 8;
static bool zero_page;

/* A userfaultfd with UFFD_FEATURE_MOVE, or -1 and why not. */
static int pt_uffd_open(char *why, size_t size)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_MOVE };
	int fd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (fd < 0) {
		snprintf(why, size, "userfaultfd() unavailable: %s", strerror(errno));
		return -1;
	}
	if (ioctl(fd, UFFDIO_API, &api) || !(api.features & UFFD_FEATURE_MOVE)) {
		snprintf(why, size, "no UFFD_FEATURE_MOVE (UFFDIO_MOVE came in 6.8)");
		close(fd);
		return -1;
	}
	return fd;
}

static int pt_uffd_register(int fd, void *p, size_t len)
{
	struct uffdio_register reg = {
		.range = { .start = (uintptr_t)p, .len = len },
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};

	return ioctl(fd, UFFDIO_REGISTER, &reg);
}

/* Bytes moved, or -errno. */
static long pt_uffd_move(int fd, void *dst, void *src, size_t len)
{
	struct uffdio_move m = {
		.dst = (uintptr_t)dst,
		.src = (uintptr_t)src,
		.len = len,
		.mode = UFFDIO_MOVE_MODE_DONTWAKE,
	};

	if (ioctl(fd, UFFDIO_MOVE, &m))
		return m.move < 0 ? m.move : -errno;
	return m.move;
}

static enum pt_map want(const struct move *m)
{
	return m->zero ? PT_MAP_HUGE_ZERO : PT_MAP_THP;
}

/* Before a move: each source chunk is one huge PMD; note its PFN. */
static void check_source(const struct move *m, struct pt_report *r, int move,
			 char *from, unsigned long *pfn)
{
	int i;

	for (i = 0; i < NR_CHUNKS; i++) {
		char *c = from + i * pmdsize;
		enum pt_map got = pt_map_of(c, pmdsize);

		pfn[i] = pt_pfn(c);
		pt_check(r, C_MOVED, got == want(m) && pfn[i] != -1UL,
			 "move %d: before it, source chunk %d is %s", move, i,
			 pt_map_name(got));
	}
}

/* Traffic faults that completed during the UFFDIO_MOVE ioctls themselves. */
static long faults_in_moves;

/* Move [from, +len) to [to, +len) and check what each side holds then. */
static void move_and_check(const struct move *m, struct pt_report *r, int fd,
			   int move, char *from, char *to)
{
	size_t len = NR_CHUNKS * pmdsize;
	unsigned long pfn[NR_CHUNKS];
	struct pt_scan s;
	long moved, bad, done;
	bool ok;
	int i;

	check_source(m, r, move, from, pfn);
	done = pt_traffic_done();
	moved = pt_uffd_move(fd, to, from, len);
	faults_in_moves += pt_traffic_done() - done;
	pt_check(r, C_MOVED, moved == (long)len, "move %d: UFFDIO_MOVE: %s", move,
		 moved < 0 ? strerror(-moved) : "short move");
	for (i = 0; i < NR_CHUNKS; i++) {
		char *c = to + i * pmdsize;
		enum pt_map got = pt_map_of(c, pmdsize);
		unsigned long now = pt_pfn(c);

		pt_check(r, C_MOVED, got == want(m) && now == pfn[i],
			 "move %d: moved chunk %d is %s, pfn %lx -> %lx", move, i,
			 pt_map_name(got), pfn[i], now);
	}
	/*
	 * Read the destination only if all of it is mapped: a hole in a
	 * registered range would wait for a fault handler forever.
	 */
	ok = !pt_scan(to, len, &s) && s.present == len;
	if (!ok)
		bad = -2;
	else if (m->zero)
		bad = pt_all_zero(to, len) ? -1 : 0;
	else
		bad = pt_verify(to, len, 0xa5);
	pt_check(r, C_DATA, bad == -1, bad == -2 ?
		 "move %d: the destination is not all mapped, not read" :
		 "move %d: word %ld differs after the move", move, bad);
	/* Registered and empty now: look, never touch. */
	ok = !pt_scan(from, len, &s);
	pt_check(r, C_SRC_EMPTY, ok && !s.present,
		 "move %d: %s", move, ok ? "source still has pages present" :
		 "PAGEMAP_SCAN of the source failed");
}

static int move_case(void *arg, struct pt_report *r)
{
	const struct move *m = arg;
	size_t len = NR_CHUNKS * pmdsize;
	long before, now;
	struct pt_traffic *t;
	char *base, *a, *b;
	int stop = 0, fd, i;
	char why[128];

	fd = pt_uffd_open(why, sizeof(why));
	if (fd < 0)
		return 2;
	/* Region A and, 1 GiB on, region B: one PMD table each. */
	base = pt_map_aligned(2 * PT_GIB, PT_GIB, true);
	if (!base)
		return 2;
	a = base + 8 * pmdsize;
	b = m->cross ? base + PT_GIB + 16 * pmdsize : base + 64 * pmdsize;
	/* A small page keeps each PMD table in place, with no deposit of its own. */
	for (i = 0; i < 2; i++) {
		char *anchor = base + i * PT_GIB;

		if (madvise(anchor, getpagesize(), MADV_NOHUGEPAGE))
			return 2;
		*anchor = 1;
	}
	/* Traffic in VMAs that no move write-locks. */
	if (pt_two_tables_traffic_vmas(base))
		return 2;
	if (m->zero) {
		if (madvise(a, len, MADV_POPULATE_READ))
			return 2;
	} else {
		pt_fill(a, len, 0xa5);
	}
	if (pt_uffd_register(fd, a, len) || pt_uffd_register(fd, b, len))
		return 2;

	/* A quiet move first: no page table may come or go. */
	before = pt_vmpte_kb();
	move_and_check(m, r, fd, 0, a, b);
	now = pt_vmpte_kb();
	pt_check(r, C_QUIET, before >= 0 && now == before,
		 "quiet move: VmPTE %ld kB -> %ld kB", before, now);

	t = pt_traffic_start(nr_threads, pt_two_tables_traffic_chunk, base,
			     C_TRAFFIC, r, &stop);
	if (!t)
		return 2;
	faults_in_moves = 0;
	for (i = 0; i < rounds; i++) {
		move_and_check(m, r, fd, 1 + 2 * i, b, a);
		move_and_check(m, r, fd, 2 + 2 * i, a, b);
	}
	pt_traffic_stop(t, nr_threads, &stop);
	pt_note(r, "%ld traffic THP faults completed while UFFDIO_MOVE ran", faults_in_moves);

	/*
	 * The traffic's chunks are zapped: the moved chunks' deposits are the
	 * only ones in b's table. zap_huge_pmd() withdraws one for each.
	 */
	before = pt_vmpte_kb();
	if (munmap(b, len))
		return 2;
	now = pt_vmpte_kb();
	pt_check(r, C_ZAP, before >= 0 && before - now == NR_CHUNKS * (getpagesize() >> 10),
		 "munmap of the moved chunks: VmPTE %ld kB -> %ld kB, want -%d kB",
		 before, now, NR_CHUNKS * (getpagesize() >> 10));
	munmap(base, 2 * PT_GIB);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	char reason[128];
	int fd;
	size_t i;

	ksft_print_header();
	nr_threads = pt_threads(argc, argv, &rounds);
	pt_skip_unless_thp(true);
	fd = pt_uffd_open(reason, sizeof(reason));
	if (fd < 0)
		ksft_exit_skip("%s\n", reason);
	close(fd);
	zero_page = pt_use_zero_page();
	ksft_set_plan(ARRAY_SIZE(moves) * pt_case_results(checks));
	ksft_print_msg("%d traffic threads, %d moves per case\n", nr_threads,
		       1 + 2 * rounds);
	for (i = 0; i < ARRAY_SIZE(moves); i++) {
		if (moves[i].zero && !zero_page)
			pt_skip_case(moves[i].name, checks,
				     "the huge zero page is off (use_zero_page is not 1)");
		else
			pt_run_case(moves[i].name, checks, move_case, (void *)&moves[i]);
	}
	ksft_finished();
}
