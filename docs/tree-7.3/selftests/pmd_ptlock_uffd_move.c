// SPDX-License-Identifier: GPL-2.0
/*
 * DRAFT (compiles against 6.12 and 7.3; passed on a 6.18 host, not yet run
 * in the gate's guests): UFFDIO_MOVE of THPs
 * and huge zero PMDs across PMD tables, while other threads fault THPs in
 * both tables.
 *
 * UFFDIO_MOVE of a 2 MiB-aligned, PMD-sized range whose source is a huge
 * PMD and whose destination PMD entry is empty goes to
 * move_pages_huge_pmd(): it takes both PMD tables' locks (double_pt_lock()),
 * moves the huge PMD and moves the deposited page table from the source
 * table's queue to the destination table's (withdraw + deposit, even
 * within one table). Upstream's uffd-unit-tests "move-pmd" checks the data
 * only: not that the THP is still mapped by a huge PMD, not where the
 * deposit went, and not across PMD tables.
 *
 * Prerequisites (mm/userfaultfd.c: move_pages(), validate_move_areas()):
 * UFFD_FEATURE_MOVE (6.8+), both ranges anonymous, private and writable
 * with the same protection, the destination registered with the same
 * userfaultfd, the source folio exclusive to this mm (no fork since it was
 * faulted) and not pinned, the destination PMD entry empty (never touched:
 * not even an empty PTE table), both addresses and the length multiples of
 * the PMD size. Both ranges are registered (MISSING) so that chunks can
 * move back and forth; nothing ever touches a registered range that has
 * nothing mapped (it would wait for a handler that does not exist): the
 * source is checked empty with PAGEMAP_SCAN only.
 *
 * UFFDIO_MOVE holds mmap_lock for read or only the two VMAs' locks, so the
 * traffic threads' faults and madvise() calls in their own VMAs of the same
 * two PMD tables really run during the moves.
 *
 * Catches: a move that copies or splits instead of moving (PFN changes, or
 * PAGEMAP_SCAN no longer reports one huge PMD per chunk), loses data,
 * leaves the source mapped, allocates or frees a page table (VmPTE moves),
 * or leaves the deposit in the source table (the zap of the destination
 * then withdraws from an empty queue: a crash, or PageTables not back to
 * baseline), and missing locking against the faults depositing into
 * either table meanwhile.
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

enum { C_DATA, C_MOVED, C_SRC_EMPTY, C_VMPTE, C_TRAFFIC };
static const char *const checks[] = {
	[C_DATA] = "moved data intact",
	[C_MOVED] = "moved, not copied or split (same PFNs, still one huge PMD per chunk)",
	[C_SRC_EMPTY] = "source left with nothing mapped (PAGEMAP_SCAN)",
	[C_VMPTE] = "no page table allocated or freed by a move; each moved deposit freed by the zap of its new place",
	[C_TRAFFIC] = "traffic in other VMAs of both tables (its faults and zaps overlap the moves) sees its data",
	NULL
};

#define NR_CHUNKS	4
#define TRAFFIC_SLOT	256

static int nr_threads, rounds = 15;

static char *traffic_chunk(int i, void *base)
{
	return (char *)base + (i % 2) * PT_GIB + (TRAFFIC_SLOT + i) * pmdsize;
}

/* A userfaultfd with UFFD_FEATURE_MOVE, or -1 with *why set. */
static int pt_uffd_open(const char **why)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_MOVE };
	int fd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (fd < 0) {
		*why = "userfaultfd() failed (CONFIG_USERFAULTFD off?)";
		return -1;
	}
	if (ioctl(fd, UFFDIO_API, &api) || !(api.features & UFFD_FEATURE_MOVE)) {
		close(fd);
		*why = "no UFFD_FEATURE_MOVE (before 6.8)";
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
		.dst = (uintptr_t)dst, .src = (uintptr_t)src, .len = len,
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

/* Check what [to, to + len) holds after a move from [from, ...). */
static void check_moved(const struct move *m, struct pt_report *r, int round,
			char *from, char *to, const unsigned long *pfn)
{
	size_t len = NR_CHUNKS * pmdsize;
	struct pt_scan s;
	long bad;
	bool ok;
	int i;

	for (i = 0; i < NR_CHUNKS; i++) {
		char *c = to + i * pmdsize;
		enum pt_map got = pt_map_of(c, pmdsize);
		unsigned long now = pt_pfn(c);

		pt_check(r, C_MOVED, got == want(m) && now == pfn[i],
			 "round %d: moved chunk %d is %s, pfn %lx -> %lx", round, i,
			 pt_map_name(got), pfn[i], now);
	}
	bad = m->zero ? (pt_all_zero(to, len) ? -1 : 0) : pt_verify(to, len, 0xa5);
	pt_check(r, C_DATA, bad < 0, "round %d: word %ld differs after the move", round, bad);
	/* Registered and empty: look, never touch. */
	ok = !pt_scan(from, len, &s);
	pt_check(r, C_SRC_EMPTY, ok && !s.present,
		 "round %d: %zu kB still present at the source%s", round,
		 s.present >> 10, ok ? "" : " (PAGEMAP_SCAN failed)");
}

static int move_case(void *arg, struct pt_report *r)
{
	const struct move *m = arg;
	size_t len = NR_CHUNKS * pmdsize;
	unsigned long pfn[NR_CHUNKS];
	const char *why;
	struct pt_traffic *t;
	char *base, *a, *b;
	long before, moved;
	int stop = 0, fd, i, round;

	fd = pt_uffd_open(&why);
	if (fd < 0)
		return 2;
	base = pt_map_aligned(2 * PT_GIB, PT_GIB, true);
	if (!base)
		return 2;
	a = base + 8 * pmdsize;
	b = m->cross ? base + PT_GIB + 16 * pmdsize : base + 64 * pmdsize;
	if (m->zero) {
		if (madvise(a, len, MADV_POPULATE_READ))
			return 2;
	} else {
		pt_fill(a, len, 0xa5);
	}
	/* Both tables exist before the first look at VmPTE. */
	if (pt_own_vmas(base + TRAFFIC_SLOT * pmdsize, PT_GIB - TRAFFIC_SLOT * pmdsize) ||
	    pt_own_vmas(base + PT_GIB + TRAFFIC_SLOT * pmdsize,
			PT_GIB - TRAFFIC_SLOT * pmdsize))
		return 2;
	traffic_chunk(0, base)[0] = 1;
	traffic_chunk(1, base)[0] = 1;
	if (pt_uffd_register(fd, a, len) || pt_uffd_register(fd, b, len))
		return 2;

	/* One quiet move: no page table may come or go. */
	for (i = 0; i < NR_CHUNKS; i++)
		pfn[i] = pt_pfn(a + i * pmdsize);
	before = pt_vmpte_kb();
	moved = pt_uffd_move(fd, b, a, len);
	pt_check(r, C_MOVED, moved == (long)len, "quiet move: UFFDIO_MOVE: %ld", moved);
	pt_check(r, C_VMPTE, pt_vmpte_kb() == before,
		 "quiet move: VmPTE %ld kB -> %ld kB", before, pt_vmpte_kb());
	check_moved(m, r, -1, a, b, pfn);

	t = pt_traffic_start(nr_threads, traffic_chunk, base, C_TRAFFIC, r, &stop);
	if (!t)
		return 2;
	/* An even number of moves here: the chunks end in b, moved an odd number of times. */
	for (round = 0; round < (rounds & ~1); round++) {
		char *from = round % 2 ? a : b, *to = round % 2 ? b : a;

		for (i = 0; i < NR_CHUNKS; i++)
			pfn[i] = pt_pfn(from + i * pmdsize);
		moved = pt_uffd_move(fd, to, from, len);
		pt_check(r, C_MOVED, moved == (long)len, "round %d: UFFDIO_MOVE: %ld",
			 round, moved);
		check_moved(m, r, round, from, to, pfn);
	}
	pt_traffic_stop(t, nr_threads, &stop);

	/* The zap of b withdraws the deposits: they must be in b's table. */
	before = pt_vmpte_kb();
	if (munmap(b, len))
		return 2;
	pt_check(r, C_VMPTE, before - pt_vmpte_kb() == NR_CHUNKS * (getpagesize() >> 10),
		 "munmap of the moved chunks: VmPTE %ld kB -> %ld kB, want -%d kB",
		 before, pt_vmpte_kb(), NR_CHUNKS * (getpagesize() >> 10));
	munmap(base, 2 * PT_GIB);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	const char *why;
	size_t i;
	int fd;

	ksft_print_header();
	nr_threads = pt_threads(argc, argv, &rounds);
	why = pt_thp_unavailable();
	if (why)
		ksft_exit_skip("%s\n", why);
	if (getuid())
		ksft_exit_skip("needs root to read PFNs from /proc/self/pagemap\n");
	fd = pt_uffd_open(&why);
	if (fd < 0)
		ksft_exit_skip("%s\n", why);
	close(fd);
	ksft_set_plan(ARRAY_SIZE(moves) * pt_case_results(checks));
	ksft_print_msg("%d traffic threads, %d moves per case\n", nr_threads, rounds);
	for (i = 0; i < ARRAY_SIZE(moves); i++)
		pt_run_case(moves[i].name, checks, move_case, (void *)&moves[i]);
	ksft_finished();
}
