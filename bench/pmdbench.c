// SPDX-License-Identifier: GPL-2.0
/*
 * pmdbench: the workloads behind the split PMD lock benchmark (tools/bench).
 *
 * Not a test: it measures and prints one JSON line per run.
 *
 *   pmdbench -w fault -t T -b BYTES [-l same|spread] [-H on|off] [-r ROUNDS] [-W]
 *	T threads each fault their share of BYTES of anonymous memory (one
 *	write per 4 KiB page; with THP on that is one fault per 2 MiB), then
 *	unmap it, ROUNDS times: the seed series' thp_pthread workload. -W
 *	first runs one untimed pass, so that the timed ones find the free
 *	2 MiB blocks it leaves rather than pay for compaction.
 *   pmdbench -w populate|mincore|zero -t T [-l same|spread] [-n ITERS | -d SECS]
 *	PMD-lock-bound walks: each thread owns one THP and walks it ITERS
 *	times (or until SECS seconds have passed) with MADV_POPULATE_READ or
 *	mincore(), or read-faults the huge zero page and drops it
 *	(MADV_DONTNEED).
 *   pmdbench -w clear -b BYTES [-r ROUNDS]
 *	The zeroing bound: memset() of 2 MiB blocks over a BYTES working set.
 *
 * Layout: "same" puts every thread's 2 MiB chunks in the same 1 GiB-aligned
 * regions (threads share PMD tables, hence PMD locks); "spread" gives each
 * thread its own 1 GiB-aligned regions (a PMD table, and lock, per thread).
 * For the walks, "same" keeps each thread's PMD entry on its own cache line
 * (chunks 16 MiB apart, still one table): the threads then share the
 * table's lock, not the entries' cache lines.
 * THP use is verified through /proc/vmstat's thp_fault_alloc.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

#ifndef fallthrough
#define fallthrough __attribute__((__fallthrough__))
#endif

#define CHUNK	(2UL << 20)
#define REGION	(1UL << 30)
#define PMDS_PER_TABLE	(REGION / CHUNK)
#define PMDS_PER_LINE	(64 / 8)
#define MAX_THREADS	1024

static const char *workload = "fault";
static const char *layout = "same";
static int nthreads = 1, rounds = 1, thp = 1, warm;
static unsigned long bytes = 64UL << 20, iters = 1000;
static double duration;			/* walks: seconds, 0 = ITERS each */
static char *base;
static unsigned long chunks;		/* 2 MiB chunks in all */
static unsigned long stride = 1;	/* chunks between neighbours in "same" */
static pthread_barrier_t start;
static int stop;			/* set when a timed walk is over */
static unsigned long done[MAX_THREADS];	/* walk iterations per thread */

static void die(const char *what)
{
	fprintf(stderr, "pmdbench: %s: %s\n", what, strerror(errno));
	exit(2);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long vmstat(const char *name)
{
	char key[64];
	long val, found = -1;
	FILE *f = fopen("/proc/vmstat", "r");

	if (!f)
		return -1;
	while (fscanf(f, "%63s %ld", key, &val) == 2)
		if (!strcmp(key, name))
			found = val;
	fclose(f);
	return found;
}

/* Address of thread t's c-th chunk. */
static char *chunk_addr(int t, unsigned long c)
{
	unsigned long per_thread = chunks / nthreads;

	if (!strcmp(layout, "same"))		/* interleaved: tables shared */
		return base + (c * nthreads + t) * stride * CHUNK;
	/* spread: thread t owns whole 1 GiB regions */
	return base + t * ((per_thread * CHUNK + REGION - 1) / REGION) * REGION + c * CHUNK;
}

static size_t mapping_size(void)
{
	unsigned long per_thread = chunks / nthreads;

	if (!strcmp(layout, "same"))
		return chunks * stride * CHUNK;
	return nthreads * ((per_thread * CHUNK + REGION - 1) / REGION) * REGION;
}

/* A 1 GiB-aligned anonymous mapping, THP on or off for it. */
static void map_all(void)
{
	size_t len = mapping_size();
	char *p = mmap(NULL, len + REGION, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		die("mmap");
	base = (char *)(((unsigned long)p + REGION - 1) & ~(REGION - 1));
	if (base > p)
		munmap(p, base - p);
	munmap(base + len, p + REGION - base);
	if (madvise(base, len, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE))
		die("madvise(HUGEPAGE)");
}

static void *fault_thread(void *arg)
{
	int t = (long)arg;
	unsigned long c, off;

	pthread_barrier_wait(&start);
	for (c = 0; c < chunks / nthreads; c++) {
		char *p = chunk_addr(t, c);

		for (off = 0; off < CHUNK; off += 4096)
			p[off] = 1;
	}
	return NULL;
}

/* Timed walks run until the main thread says stop, counted ones ITERS times. */
static bool walk_more(unsigned long i)
{
	if (duration > 0)
		return !__atomic_load_n(&stop, __ATOMIC_RELAXED);
	return i < iters;
}

static void *walk_thread(void *arg)
{
	int t = (long)arg;
	char *p = chunk_addr(t, 0);
	unsigned char vec[CHUNK / 4096];
	unsigned long i;
	volatile char sink;

	pthread_barrier_wait(&start);
	for (i = 0; walk_more(i); i++) {
		if (!strcmp(workload, "populate")) {
			if (madvise(p, CHUNK, MADV_POPULATE_READ))
				die("MADV_POPULATE_READ");
		} else if (!strcmp(workload, "mincore")) {
			if (mincore(p, CHUNK, vec))
				die("mincore");
		} else {		/* zero: huge zero page read fault + zap */
			sink = p[0];
			if (madvise(p, CHUNK, MADV_DONTNEED))
				die("MADV_DONTNEED");
		}
	}
	(void)sink;
	done[t] = i;		/* once, at the end: no shared line while walking */
	return NULL;
}

/* A rate over no measured time would print inf, which is not JSON. */
static int too_fast(void)
{
	fprintf(stderr, "pmdbench: the clock saw no time pass; raise -n/-b/-r or fix the clock source\n");
	return 4;
}

static double run_threads(void *(*fn)(void *), double secs)
{
	pthread_t tid[MAX_THREADS];
	struct timespec ts = {
		.tv_sec = (time_t)secs,
		.tv_nsec = (long)((secs - (time_t)secs) * 1e9),
	};
	double t0, t1;
	long t;

	__atomic_store_n(&stop, 0, __ATOMIC_RELAXED);
	pthread_barrier_init(&start, NULL, nthreads + 1);
	for (t = 0; t < nthreads; t++)
		if (pthread_create(&tid[t], NULL, fn, (void *)t))
			die("pthread_create");
	t0 = now();
	pthread_barrier_wait(&start);
	if (secs > 0) {
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
		__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	}
	for (t = 0; t < nthreads; t++)
		pthread_join(tid[t], NULL);
	t1 = now();
	pthread_barrier_destroy(&start);
	return t1 - t0;
}

/*
 * Clear 2 MiB the way the kernel's clear_page_rep() does (rep stosq), not
 * with libc's vector memset: under TCG the two differ several-fold.
 */
static void clear_chunk(char *p)
{
#if defined(__x86_64__)
	unsigned long cnt = CHUNK / 8, zero = 0;

	asm volatile("rep stosq" : "+D" (p), "+c" (cnt) : "a" (zero) : "memory");
#else
	memset(p, 0, CHUNK);
#endif
}

static long minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: pmdbench -w fault|populate|mincore|zero|clear [-t THREADS] [-b BYTES[k|m|g]]\n"
		"                [-l same|spread] [-H on|off] [-r ROUNDS] [-W] [-n ITERS | -d SECS]\n");
	exit(2);
}

static unsigned long parse_size(const char *s)
{
	char *end;
	unsigned long v = strtoul(s, &end, 0);

	switch (*end) {
	case 'g':
	case 'G':
		v <<= 10;
		fallthrough;
	case 'm':
	case 'M':
		v <<= 10;
		fallthrough;
	case 'k':
	case 'K':
		v <<= 10;
	}
	return v;
}

int main(int argc, char **argv)
{
	double secs = 0;
	long faults, thp0, thp_got = 0, ops;
	int opt, r;

	while ((opt = getopt(argc, argv, "w:t:b:l:H:r:n:d:W")) != -1) {
		switch (opt) {
		case 'w':
			workload = optarg;
			break;
		case 't':
			nthreads = atoi(optarg);
			break;
		case 'b':
			bytes = parse_size(optarg);
			break;
		case 'l':
			layout = optarg;
			break;
		case 'H':
			thp = !strcmp(optarg, "on");
			break;
		case 'r':
			rounds = atoi(optarg);
			break;
		case 'n':
			iters = strtoul(optarg, NULL, 0);
			break;
		case 'd':
			duration = strtod(optarg, NULL);
			break;
		case 'W':
			warm = 1;
			break;
		default:
			usage();
		}
	}
	if (nthreads < 1 || nthreads > MAX_THREADS || rounds < 1 || duration < 0 ||
	    (strcmp(layout, "same") && strcmp(layout, "spread")))
		usage();

	if (!strcmp(workload, "clear")) {
		/* Zeroing bound: what clearing 2 MiB pages costs this CPU. */
		size_t len = bytes < 64 * CHUNK ? 64 * CHUNK : bytes;
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		unsigned long off;
		double t0;

		if (p == MAP_FAILED)
			die("mmap");
		memset(p, 1, len);		/* warm: faults out of the timing */
		t0 = now();
		for (r = 0; r < rounds; r++)
			for (off = 0; off < len; off += CHUNK)
				clear_chunk(p + off);
		secs = now() - t0;
		if (secs <= 0)
			return too_fast();
		printf("{\"workload\":\"clear\",\"bytes\":%zu,\"rounds\":%d,\"wall_s\":%.6f,"
		       "\"bytes_per_s\":%.0f,\"pages_2m_per_s\":%.1f}\n",
		       len, rounds, secs, (double)len * rounds / secs,
		       (double)len * rounds / CHUNK / secs);
		return 0;
	}

	if (!strcmp(workload, "fault")) {
		chunks = bytes / CHUNK / nthreads * nthreads;
		if (!chunks)
			usage();
		if (warm) {
			map_all();
			run_threads(fault_thread, 0);
			munmap(base, mapping_size());
		}
		faults = minflt();
		thp0 = vmstat("thp_fault_alloc");
		for (r = 0; r < rounds; r++) {
			double t0 = now();

			map_all();
			run_threads(fault_thread, 0);
			munmap(base, mapping_size());
			secs += now() - t0;
		}
		faults = minflt() - faults;
		thp_got = vmstat("thp_fault_alloc") - thp0;
		ops = faults;
		/* THP on must really mean THPs (a fallback would measure 4 KiB faults). */
		if (thp && thp_got < (long)(chunks * rounds * 9 / 10)) {
			fprintf(stderr, "pmdbench: only %ld of %lu chunks were THPs\n",
				thp_got, chunks * rounds);
			return 3;
		}
	} else {
		unsigned long t;

		chunks = nthreads;
		thp = 1;
		/* Own cache line per PMD entry while the table holds them all. */
		stride = PMDS_PER_TABLE / nthreads;
		if (stride > PMDS_PER_LINE)
			stride = PMDS_PER_LINE;
		if (!stride)
			stride = 1;
		map_all();
		thp0 = vmstat("thp_fault_alloc");
		if (strcmp(workload, "zero"))
			for (t = 0; t < (unsigned long)nthreads; t++)
				memset(chunk_addr(t, 0), 1, CHUNK);
		thp_got = vmstat("thp_fault_alloc") - thp0;
		if (strcmp(workload, "zero") && thp_got < nthreads) {
			fprintf(stderr, "pmdbench: only %ld of %d chunks were THPs\n",
				thp_got, nthreads);
			return 3;
		}
		faults = minflt();
		secs = run_threads(walk_thread, duration);
		faults = minflt() - faults;
		for (ops = 0, t = 0; t < (unsigned long)nthreads; t++)
			ops += done[t];
		iters = ops / nthreads;		/* timed: the mean per thread */
	}
	if (secs <= 0)
		return too_fast();
	printf("{\"workload\":\"%s\",\"threads\":%d,\"bytes\":%lu,\"layout\":\"%s\","
	       "\"thp\":\"%s\",\"rounds\":%d,\"iters\":%lu,\"wall_s\":%.6f,\"faults\":%ld,"
	       "\"faults_per_s\":%.1f,\"ops_per_s\":%.1f,\"bytes_per_s\":%.0f,"
	       "\"thp_fault_alloc\":%ld,\"duration_s\":%.3f}\n",
	       workload, nthreads, chunks * CHUNK, layout, thp ? "on" : "off", rounds,
	       strcmp(workload, "fault") ? iters : 0, secs, faults, faults / secs,
	       ops / secs, strcmp(workload, "fault") ? 0 : (double)chunks * CHUNK * rounds / secs,
	       thp_got, duration);
	return 0;
}
