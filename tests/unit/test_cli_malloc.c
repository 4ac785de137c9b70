/* The musl CLI's allocator (src/cli/malloc.c), built here under cm_
 * names beside glibc's own. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* src/cli/malloc.c, compiled into this program with CLI_MALLOC_PREFIX
 * (tests/meson.build), has no header: its entry points under that prefix */
void *cm_malloc(size_t n);
void cm_free(void *p);
void *cm_calloc(size_t a, size_t b);
void *cm_realloc(void *p, size_t n);
void *cm_aligned_alloc(size_t align, size_t n);
int cm_posix_memalign(void **out, size_t align, size_t n);
size_t cm_malloc_usable_size(void *p);

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(seed * 31u + i * 7u);
}

static bool same(const unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(seed * 31u + i * 7u))
			return false;
	return true;
}

Test(cli_malloc, every_size_is_aligned_usable_and_separate)
{
	static const size_t sizes[] = { 0, 1, 15, 16, 17, 100, 4095, 4096, 65535, 65536, 65537, 1 << 20 };
	void *p[sizeof(sizes) / sizeof(sizes[0])];
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		p[i] = cm_malloc(sizes[i]);
		cr_assert_not_null(p[i]);
		cr_assert_eq((uintptr_t)p[i] % 16, 0, "size %zu not 16-aligned", sizes[i]);
		cr_assert_geq(cm_malloc_usable_size(p[i]), sizes[i]);
		fill(p[i], sizes[i], i);
	}
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		cr_assert(same(p[i], sizes[i], i), "block of %zu bytes was overwritten", sizes[i]);
		cm_free(p[i]);
	}
	cm_free(NULL);
}

Test(cli_malloc, a_freed_block_serves_the_next_request_of_its_class)
{
	void *a = cm_malloc(300);
	cm_free(a);
	void *b = cm_malloc(400); /* same class: 512 */
	cr_assert_eq(a, b);
	cm_free(b);
}

Test(cli_malloc, calloc_zeroes_reused_memory_and_refuses_overflow)
{
	unsigned char *a = cm_malloc(1000);
	memset(a, 0xff, 1000);
	cm_free(a);
	unsigned char *b = cm_calloc(10, 100);
	cr_assert_eq((void *)a, (void *)b);
	for (int i = 0; i < 1000; i++)
		cr_assert_eq(b[i], 0);
	cm_free(b);
	unsigned char *big = cm_calloc(1, 300000);
	for (int i = 0; i < 300000; i += 4096)
		cr_assert_eq(big[i], 0);
	cm_free(big);
	errno = 0;
	cr_assert_null(cm_calloc(SIZE_MAX / 2, 3));
	cr_assert_eq(errno, ENOMEM);
}

Test(cli_malloc, realloc_keeps_the_bytes_through_every_kind)
{
	size_t n = 10;
	unsigned char *p = cm_malloc(n);
	fill(p, n, 7);
	/* small to small, to large, large to larger, back to small */
	static const size_t to[] = { 100, 5000, 70000, 500000, 3000000, 200, 8 };
	for (unsigned i = 0; i < sizeof(to) / sizeof(to[0]); i++) {
		unsigned char *q = cm_realloc(p, to[i]);
		cr_assert_not_null(q);
		size_t keep = n < to[i] ? n : to[i];
		cr_assert(same(q, keep, 7), "bytes lost growing from %zu to %zu", n, to[i]);
		fill(q, to[i], 7);
		p = q;
		n = to[i];
	}
	cm_free(p);
	p = cm_realloc(NULL, 50);
	cr_assert_not_null(p);
	cm_free(p);
}

Test(cli_malloc, aligned_blocks)
{
	static const size_t aligns[] = { 8, 16, 32, 64, 256, 4096 };
	for (unsigned i = 0; i < sizeof(aligns) / sizeof(aligns[0]); i++) {
		unsigned char *p = cm_aligned_alloc(aligns[i], 1000);
		cr_assert_not_null(p);
		cr_assert_eq((uintptr_t)p % aligns[i], 0);
		cr_assert_geq(cm_malloc_usable_size(p), 1000);
		fill(p, 1000, i);
		cr_assert(same(p, 1000, i));
		cm_free(p);
	}
	errno = 0;
	cr_assert_null(cm_aligned_alloc(24, 10));
	cr_assert_eq(errno, EINVAL);
	void *q = NULL;
	cr_assert_eq(cm_posix_memalign(&q, 3, 10), EINVAL);
	cr_assert_eq(cm_posix_memalign(&q, 128, 10), 0);
	cr_assert_eq((uintptr_t)q % 128, 0);
	cm_free(q);
}

static int dies_with(void (*f)(void))
{
	pid_t c = fork();
	cr_assert_geq(c, 0);
	if (c == 0) {
		f();
		_exit(0);
	}
	int st;
	cr_assert_eq(waitpid(c, &st, 0), c);
	return WIFSIGNALED(st) ? WTERMSIG(st) : 0;
}

static void double_free(void)
{
	void *p = cm_malloc(64);
	cm_free(p);
	cm_free(p);
}

static void foreign_pointer(void)
{
	char *p = malloc(64); /* glibc's */
	memset(p, 0, 64);
	cm_free(p + 32);
}

Test(cli_malloc, a_double_free_or_a_foreign_pointer_stops_the_process)
{
	cr_assert_eq(dies_with(double_free), SIGABRT);
	cr_assert_eq(dies_with(foreign_pointer), SIGABRT);
}

/* random work against a record of what each block must hold */
Test(cli_malloc, random_work_keeps_every_block_intact)
{
	enum { SLOTS = 256, OPS = 20000 };
	unsigned char *p[SLOTS] = { 0 };
	size_t n[SLOTS] = { 0 };
	unsigned seed = 12345;
	for (int op = 0; op < OPS; op++) {
		seed = seed * 1103515245u + 12345u;
		unsigned s = (seed >> 8) % SLOTS;
		size_t want = (seed >> 16) % 4 == 0 ? (seed >> 4) % 200000 : (seed >> 4) % 3000;
		if (p[s]) {
			cr_assert(same(p[s], n[s], s), "slot %u corrupted", s);
			if (seed & 1) {
				cm_free(p[s]);
				p[s] = NULL;
				continue;
			}
			unsigned char *q = cm_realloc(p[s], want);
			cr_assert_not_null(q);
			size_t keep = n[s] < want ? n[s] : want;
			cr_assert(same(q, keep, s), "realloc lost bytes of slot %u", s);
			p[s] = q;
		} else {
			p[s] = (seed & 2) ? cm_calloc(1, want) : cm_malloc(want);
			cr_assert_not_null(p[s]);
		}
		n[s] = want;
		fill(p[s], want, s);
	}
	for (unsigned s = 0; s < SLOTS; s++) {
		if (p[s])
			cr_assert(same(p[s], n[s], s));
		cm_free(p[s]);
	}
}
