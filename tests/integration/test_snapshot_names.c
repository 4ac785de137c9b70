/* Snapshot names and removal as E2B has them, through the C API: a name
 * taken with ABOX_SNAPSHOT_TAKE_NAME moves to the new snapshot (the older
 * keeps its id), without it the name is refused; abox_snapshot_forget of
 * a snapshot a sandbox stands on succeeds, the sandbox runs on, and gc
 * removes the layers once it is gone. */
#include <abox/abox.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

TestSuite(snapshot_names, .init = sandbox_suite_init, .fini = sandbox_suite_fini, .timeout = 120);

static int collect(const void *data, size_t len, void *ud)
{
	char *buf = ud;
	size_t have = strlen(buf);
	if (have + len < 64) {
		memcpy(buf + have, data, len);
		buf[have + len] = '\0';
	}
	return 0;
}

static const abox_snapshot_info *find(const abox_snapshot_info *v, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].id, id))
			return &v[i];
	return NULL;
}

Test(snapshot_names, a_name_moves_to_the_newest_and_a_used_snapshot_is_forgotten)
{
	abox_error err = ABOX_ERROR_INIT;
	abox_ctx *ctx;
	abox_sandbox *src, *child;
	abox_sandbox_opts so = ABOX_SANDBOX_OPTS_INIT;
	so.timeout_ms = 60000;
	api_create(&ctx, &so, &src);
	char name[64];
	snprintf(name, sizeof(name), "names-%s", abox_sandbox_id(src));
	abox_snapshot_info s1 = { .version = ABOX_SNAPSHOT_INFO_VERSION }, s2 = s1;
	cr_assert_eq(abox_file_write(src, "/tmp/v", NULL, "one", 3, 0, &err), 0, "%s", err.msg);
	cr_assert_eq(abox_sandbox_snapshot(src, name, &s1, &err), 0, "%s", err.msg);
	cr_assert_eq(abox_file_write(src, "/tmp/v", NULL, "two", 3, 0, &err), 0, "%s", err.msg);
	abox_snapshot_info x = { .version = ABOX_SNAPSHOT_INFO_VERSION };
	cr_assert_eq(abox_sandbox_snapshot(src, name, &x, &err), -EEXIST, "without the flag a name in use is refused");
	cr_assert_eq(abox_sandbox_snapshot_flags(src, name, ABOX_SNAPSHOT_TAKE_NAME, &s2, &err), 0, "%s", err.msg);

	abox_snapshot_info *v = NULL;
	size_t n = 0;
	cr_assert_eq(abox_snapshot_list(ctx, &v, &n, &err), 0, "%s", err.msg);
	cr_assert(find(v, n, s1.id) && !find(v, n, s1.id)->name[0], "the older keeps its id, not the name");
	cr_assert(find(v, n, s2.id) && !strcmp(find(v, n, s2.id)->name, name), "the name is the newest's");
	free(v);

	/* a sandbox on the named one sees its files */
	so.snapshot = name;
	cr_assert_eq(abox_sandbox_create(ctx, &so, &child, &err), 0, "%s", err.msg);
	char got[64] = "";
	cr_assert_eq(abox_file_read(child, "/tmp/v", NULL, collect, got, NULL, &err), 0, "%s", err.msg);
	cr_assert_str_eq(got, "two");

	/* removing what it stands on: refused plainly, forgotten as E2B does */
	cr_assert_eq(abox_snapshot_remove(ctx, s2.id, &err), -EBUSY, "%s", err.msg);
	cr_assert_eq(abox_snapshot_forget(ctx, s2.id, &err), 0, "%s", err.msg);
	cr_assert_eq(abox_snapshot_list(ctx, &v, &n, &err), 0, "%s", err.msg);
	cr_assert(find(v, n, s2.id) && find(v, n, s2.id)->automatic && !find(v, n, s2.id)->name[0],
		  "forgotten: kept while used, nameless, automatic");
	free(v);
	got[0] = '\0';
	cr_assert_eq(abox_file_read(child, "/tmp/v", NULL, collect, got, NULL, &err), 0, "%s", err.msg);
	cr_assert_str_eq(got, "two", "the sandbox on it runs on");
	cr_assert_eq(abox_sandbox_kill(child, &err), 0, "%s", err.msg);
	abox_sandbox_free(child);
	cr_assert_eq(abox_gc(ctx, NULL, &err), 0, "%s", err.msg);
	cr_assert_eq(abox_snapshot_list(ctx, &v, &n, &err), 0, "%s", err.msg);
	cr_assert(!find(v, n, s2.id), "gc removes a forgotten snapshot once nothing uses it");
	free(v);
	/* an unused one is simply removed */
	cr_assert_eq(abox_snapshot_forget(ctx, s1.id, &err), 0, "%s", err.msg);
	cr_assert_eq(abox_snapshot_list(ctx, &v, &n, &err), 0, "%s", err.msg);
	cr_assert(!find(v, n, s1.id), "an unused snapshot is removed at once");
	free(v);
	cr_assert_eq(abox_sandbox_kill(src, &err), 0, "%s", err.msg);
	abox_sandbox_free(src);
	abox_ctx_free(ctx);
}
