/* src/cli/malloc.c — the allocator of the CLI when it is built on musl.
 *
 * Why not musl's own: mallocng gives every group of blocks back to the
 * kernel as soon as it is empty. One `abox run -- true` then maps and
 * unmaps memory ≈ 20 times (the buffers that grow while a file is read,
 * the policy, the layout): each unmap is a TLB flush and each fresh page
 * a fault, ≈ 0.12 ms of a 4.3 ms run here. A CLI process lives for one
 * command, so this allocator keeps what is freed for the next request of
 * the same size and never shrinks:
 *   - blocks of 16 B .. 64 KiB in power-of-two classes, carved from 1 MiB
 *     chunks, freed onto one list per class;
 *   - anything bigger is its own mapping, unmapped on free (file copies
 *     and transfers of any size stay bounded).
 * Every block has a 16-byte header (what it is, and a tag that says "in
 * use"), so a double free or a foreign pointer stops the process instead
 * of corrupting the heap quietly.
 *
 * Thread safe (a spin lock: the CLI has no threads today, but libraries
 * may). Built only into the musl CLI; tests/unit/test_cli_malloc.c builds
 * it with CLI_MALLOC_PREFIX to test it beside glibc's.
 */
#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifdef CLI_MALLOC_PREFIX
#define CM(name) cm_##name
#else
#define CM(name) name
#endif

#define HDR 16u
#define MIN_SHIFT 4u			/* 16 bytes */
#define MAX_SHIFT 16u			/* 64 KiB */
#define NCLASS (MAX_SHIFT - MIN_SHIFT + 1)
#define CHUNK ((size_t)1 << 20)
#define PAGE 4096u
#define TAG_USED ((uint32_t)0xab0c5ed1u)
#define TAG_FREE ((uint32_t)0xab0cf4eeu)
#define KIND_LARGE 0xffffu

/* the 16 bytes before every block */
struct hdr {
	uint32_t tag;
	uint32_t kind;	 /* size class, or KIND_LARGE */
	uint64_t extent; /* large: bytes mapped, from the mapping's start */
};
_Static_assert(sizeof(struct hdr) == HDR, "header is 16 bytes: keeps blocks 16-aligned");

struct free_block {
	struct free_block *next;
};

static struct free_block *free_list[NCLASS];
static char *chunk_cur, *chunk_end;
static atomic_flag lock = ATOMIC_FLAG_INIT;

static void take(void)
{
	while (atomic_flag_test_and_set_explicit(&lock, memory_order_acquire))
		;
}

static void give(void)
{
	atomic_flag_clear_explicit(&lock, memory_order_release);
}

static struct hdr *hdr_of(void *p)
{
	struct hdr *h = (struct hdr *)((char *)p - HDR);
	/* a pointer this allocator never handed out, or one freed twice */
	if (h->tag != TAG_USED || (h->kind >= NCLASS && h->kind != KIND_LARGE))
		abort();
	return h;
}

static size_t class_size(unsigned k)
{
	return (size_t)1 << (k + MIN_SHIFT);
}

static unsigned class_of(size_t n)
{
	unsigned k = 0;
	while (class_size(k) < n)
		k++;
	return k;
}

/* a block of its own mapping; align is a power of two ≤ PAGE */
static void *large_alloc(size_t n, size_t align)
{
	size_t lead = align > HDR ? align : HDR;
	if (n > SIZE_MAX - lead - PAGE) {
		errno = ENOMEM;
		return NULL;
	}
	size_t extent = (n + lead + PAGE - 1) & ~(size_t)(PAGE - 1);
	char *m = mmap(NULL, extent, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		errno = ENOMEM;
		return NULL;
	}
	char *p = m + lead;
	struct hdr *h = (struct hdr *)(p - HDR);
	h->tag = TAG_USED;
	h->kind = KIND_LARGE;
	h->extent = extent;
	return p;
}

static void large_free(struct hdr *h)
{
	/* the header is at most a page into the mapping (lead <= PAGE):
	 * the mapping starts at the page the header is on */
	char *m = (char *)((uintptr_t)h & ~(uintptr_t)(PAGE - 1));
	munmap(m, h->extent);
}

static size_t usable(void *p, struct hdr *h)
{
	if (h->kind != KIND_LARGE)
		return class_size(h->kind);
	char *m = (char *)((uintptr_t)h & ~(uintptr_t)(PAGE - 1));
	return h->extent - (size_t)((char *)p - m);
}

static void *small_alloc(size_t n)
{
	unsigned k = class_of(n ? n : 1);
	char *p = NULL;
	take();
	if (free_list[k]) {
		p = (char *)free_list[k];
		free_list[k] = free_list[k]->next;
	} else {
		size_t need = HDR + class_size(k);
		if ((size_t)(chunk_end - chunk_cur) < need) {
			char *c = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (c == MAP_FAILED) {
				give();
				errno = ENOMEM;
				return NULL;
			}
			chunk_cur = c;
			chunk_end = c + CHUNK;
		}
		p = chunk_cur + HDR;
		chunk_cur += need;
	}
	give();
	struct hdr *h = (struct hdr *)(p - HDR);
	h->tag = TAG_USED;
	h->kind = k;
	h->extent = 0;
	return p;
}

void *CM(malloc)(size_t n)
{
	return n > class_size(NCLASS - 1) ? large_alloc(n, HDR) : small_alloc(n);
}

void CM(free)(void *p)
{
	if (!p)
		return;
	struct hdr *h = hdr_of(p);
	if (h->kind == KIND_LARGE) {
		large_free(h);
		return;
	}
	h->tag = TAG_FREE;
	take();
	((struct free_block *)p)->next = free_list[h->kind];
	free_list[h->kind] = p;
	give();
}

void *CM(calloc)(size_t a, size_t b)
{
	size_t n;
	if (__builtin_mul_overflow(a, b, &n)) {
		errno = ENOMEM;
		return NULL;
	}
	if (n > class_size(NCLASS - 1))
		return large_alloc(n, HDR); /* fresh pages are zero */
	void *p = small_alloc(n);
	if (p)
		memset(p, 0, n);
	return p;
}

void *CM(realloc)(void *p, size_t n)
{
	if (!p)
		return CM(malloc)(n);
	struct hdr *h = hdr_of(p);
	size_t have = usable(p, h);
	if (n <= have && (h->kind != KIND_LARGE || n > class_size(NCLASS - 1)))
		return p;
	void *q = CM(malloc)(n);
	if (!q)
		return NULL;
	memcpy(q, p, have < n ? have : n);
	CM(free)(p);
	return q;
}

void *CM(aligned_alloc)(size_t align, size_t n)
{
	if (align == 0 || (align & (align - 1))) {
		errno = EINVAL;
		return NULL;
	}
	if (align <= HDR)
		return CM(malloc)(n);
	if (align > PAGE) {
		errno = EINVAL;
		return NULL;
	}
	return large_alloc(n, align);
}

int CM(posix_memalign)(void **out, size_t align, size_t n)
{
	if (align < sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	int saved = errno;
	void *p = CM(aligned_alloc)(align, n);
	if (!p) {
		int e = errno;
		errno = saved;
		return e;
	}
	*out = p;
	return 0;
}

void *CM(memalign)(size_t align, size_t n)
{
	return CM(aligned_alloc)(align, n);
}

size_t CM(malloc_usable_size)(void *p)
{
	return p ? usable(p, hdr_of(p)) : 0;
}
