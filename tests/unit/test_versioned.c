/* Callers built against an older header: their versioned structs are
 * shorter, and the library must read and write only the bytes their
 * version has. Each struct is put right before an inaccessible page, so
 * a byte too many is a crash. */
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "versioned.h"

/* n bytes that end where an inaccessible page begins (n rounded up to
 * the structs' alignment, as a v1 caller's sizeof would be) */
static void *at_guard(size_t n, void **map)
{
	n = (n + 7) & ~(size_t)7;
	long pg = sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(m, MAP_FAILED);
	cr_assert_eq(mprotect(m + pg, (size_t)pg, PROT_NONE), 0);
	*map = m;
	return m + pg - n;
}

Test(versioned, a_version_1_ctx_opts_is_not_read_past_its_end)
{
	unsetenv("ABOX_REMOTE");
	void *map;
	size_t n = offsetof(abox_ctx_opts, remote_url);
	abox_ctx_opts *o = at_guard(n, &map);
	memset(o, 0, n);
	o->version = 1;
	o->state_dir = "/nonexistent/state";
	o->runtime_dir = "/nonexistent/run";
	o->init_path = "/bin/true";
	abox_ctx *ctx = NULL;
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(abox_ctx_new(o, &ctx, &err), 0, "%s", err.msg);
	abox_ctx_free(ctx);
	munmap(map, (size_t)sysconf(_SC_PAGESIZE) * 2);
}

Test(versioned, version_0_is_refused)
{
	abox_ctx_opts o = ABOX_CTX_OPTS_INIT;
	o.version = 0;
	abox_ctx *ctx = NULL;
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_lt(abox_ctx_new(&o, &ctx, &err), 0);
	cr_assert(strstr(err.msg, "version"), "%s", err.msg);
}

Test(versioned, a_version_1_snapshot_info_is_written_within_its_size)
{
	void *map;
	size_t n = offsetof(abox_snapshot_info, memory);
	abox_snapshot_info *out = at_guard(n, &map);
	memset(out, 0x5a, n);
	out->version = 1;
	versioned_clear(VERSIONED_SNAPSHOT_INFO, out);
	cr_assert_eq(out->version, 1u);
	cr_assert_eq(out->id[0], '\0');
	abox_snapshot_info full = { .version = ABOX_SNAPSHOT_INFO_VERSION, .id = "abcdefghij0123456789", .memory = true };
	versioned_copy_out(VERSIONED_SNAPSHOT_INFO, out, &full);
	cr_assert_eq(out->version, 1u, "the caller's version stays");
	cr_assert_str_eq(out->id, "abcdefghij0123456789");
	munmap(map, (size_t)sysconf(_SC_PAGESIZE) * 2);
}

Test(versioned, a_newer_caller_gets_what_this_library_knows)
{
	abox_sandbox_opts theirs = ABOX_SANDBOX_OPTS_INIT;
	theirs.version = 99;
	theirs.memory_bytes = 42;
	abox_sandbox_opts ours = ABOX_SANDBOX_OPTS_INIT;
	cr_assert_eq(versioned_copy_in(VERSIONED_SANDBOX_OPTS, &ours, &theirs), 0);
	cr_assert_eq(ours.memory_bytes, 42u);
	cr_assert_eq(ours.version, (uint32_t)ABOX_SANDBOX_OPTS_VERSION);
}
