/* What a failed checkpointer run reports from its log. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "local/checkpoint/checkpoint.h"

static char path[] = "/tmp/abox-ckpt-log.XXXXXX";

static void put(const char *text)
{
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void drop(void)
{
	unlink(path);
	strcpy(path, "/tmp/abox-ckpt-log.XXXXXX");
}

TestSuite(checkpoint_log, .fini = drop);

Test(checkpoint_log, error_lines_win)
{
	put("(00.001) starting\n(00.002) Error (cr-restore.c:12): pid 5 in use\n(00.003) some more\n"
	    "(00.004) Error (mount.c:9): cannot mount /sys\n(00.005) Restoring FAILED.\n");
	char out[512];
	checkpoint_log_tail(path, out, sizeof(out));
	cr_assert_str_eq(out, "\n  (00.002) Error (cr-restore.c:12): pid 5 in use"
			      "\n  (00.004) Error (mount.c:9): cannot mount /sys");
}

Test(checkpoint_log, the_last_four_error_lines)
{
	put("Error 1\nError 2\nok\nError 3\nError 4\nError 5\n");
	char out[512];
	checkpoint_log_tail(path, out, sizeof(out));
	cr_assert_str_eq(out, "\n  Error 2\n  Error 3\n  Error 4\n  Error 5");
}

/* a log without an error line (the checkpointer died early) still says
 * how it ended */
Test(checkpoint_log, no_error_line_gives_the_last_lines)
{
	put("a\nb\nc\nd\ne\nkilled by signal 9\n");
	char out[512];
	checkpoint_log_tail(path, out, sizeof(out));
	cr_assert_str_eq(out, "\n  c\n  d\n  e\n  killed by signal 9");
}

Test(checkpoint_log, missing_or_empty_log_gives_nothing)
{
	char out[64] = "x";
	checkpoint_log_tail("/nonexistent/abox.log", out, sizeof(out));
	cr_assert_str_eq(out, "");
	put("");
	checkpoint_log_tail(path, out, sizeof(out));
	cr_assert_str_eq(out, "");
}
