/* Library handles that another process changed the sandbox under: a
 * handle that missed a pause must not wait for ever on the frozen init,
 * nor treat the sandbox as running. */
#include <abox/abox.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "harness.h"

TestSuite(stale_handle, .init = sandbox_suite_init, .fini = sandbox_suite_fini, .timeout = 60);

/* A sandbox (timeout 60 s) and two handles on it, *a and *b. */
static void two_handles(abox_ctx **ctx, abox_sandbox **a, abox_sandbox **b)
{
	abox_error err = ABOX_ERROR_INIT;
	abox_sandbox_opts so = ABOX_SANDBOX_OPTS_INIT;
	so.timeout_ms = 60000;
	api_create(ctx, &so, a);
	cr_assert_eq(abox_sandbox_connect(*ctx, abox_sandbox_id(*a), b, &err), 0, "%s", err.msg);
}

Test(stale_handle, requests_on_a_handle_that_missed_a_pause_say_paused)
{
	abox_error err = ABOX_ERROR_INIT;
	abox_ctx *ctx;
	abox_sandbox *a, *b;
	two_handles(&ctx, &a, &b);

	/* b pauses; a still believes it runs */
	cr_assert_eq(abox_sandbox_pause(b, &err), 0, "%s", err.msg);
	double t0 = now_s();
	/* each request kind on its own fresh belief that init runs */
	int exists = -1;
	int r = abox_file_exists(a, "/etc/hostname", NULL, &exists, &err);
	cr_assert_eq(r, -EAGAIN, "a file request on a paused sandbox: %d %s", r, err.msg);
	abox_sandbox_free(a);
	cr_assert_eq(abox_sandbox_connect(ctx, abox_sandbox_id(b), &a, &err), 0, "%s", err.msg);
	cr_assert_eq(abox_sandbox_resume(b, &err), 0, "%s", err.msg);
	abox_sandbox_free(a);
	cr_assert_eq(abox_sandbox_connect(ctx, abox_sandbox_id(b), &a, &err), 0, "%s", err.msg);
	cr_assert_eq(abox_sandbox_pause(b, &err), 0, "%s", err.msg);
	r = abox_sandbox_set_timeout(a, 30000, &err);
	cr_assert_eq(r, -EAGAIN, "set-timeout on a paused sandbox: %d %s", r, err.msg);
	cr_assert(strstr(err.msg, "is paused"), "%s", err.msg);
	abox_metrics m = { .version = ABOX_METRICS_VERSION };
	r = abox_sandbox_metrics(a, &m, &err);
	cr_assert_eq(r, -EAGAIN, "metrics on a paused sandbox: %d %s", r, err.msg);
	cr_assert_lt(now_s() - t0, 10.0, "a stale handle waited on the frozen init");

	/* and after b resumes, a works again: it followed the record */
	cr_assert_eq(abox_sandbox_resume(b, &err), 0, "%s", err.msg);
	abox_sandbox_free(b);
	cr_assert_eq(abox_sandbox_connect(ctx, abox_sandbox_id(a), &b, &err), 0, "%s", err.msg);
	cr_assert_eq(abox_sandbox_set_timeout(b, 30000, &err), 0, "%s", err.msg);
	cr_assert_eq(abox_sandbox_kill(b, &err), 0, "%s", err.msg);
	abox_sandbox_free(b);
	abox_sandbox_free(a);
	abox_ctx_free(ctx);
}

Test(stale_handle, resume_through_a_handle_that_missed_a_pause_without_memory)
{
	abox_error err = ABOX_ERROR_INIT;
	abox_ctx *ctx;
	abox_sandbox *a, *b;
	two_handles(&ctx, &a, &b);
	cr_assert_eq(abox_sandbox_pause_flags(b, ABOX_PAUSE_NO_MEMORY, &err), 0, "%s", err.msg);
	abox_sandbox_free(b);
	/* a never saw the cold pause: resume must cold-start, then a runs
	 * commands in the new init */
	cr_assert_eq(abox_sandbox_resume(a, &err), 0, "%s", err.msg);
	const char *argv[] = { "/bin/true", NULL };
	abox_proc_opts po = ABOX_PROC_OPTS_INIT;
	po.argv = argv;
	abox_proc *p;
	cr_assert_eq(abox_proc_start(a, &po, &p, &err), 0, "%s", err.msg);
	cr_assert_geq(abox_proc_wait(p, 10000, NULL, NULL, &err), 0, "%s", err.msg);
	abox_proc_free(p);
	cr_assert_eq(abox_sandbox_kill(a, &err), 0, "%s", err.msg);
	abox_sandbox_free(a);
	abox_gc(ctx, NULL, NULL);
	abox_ctx_free(ctx);
}
