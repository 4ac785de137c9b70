/* Unit tests of base/openat2.h: a lookup with ".." under RESOLVE_BENEATH
 * while renames happen elsewhere on the host. The kernel answers such a
 * raced lookup EAGAIN (about one in two hundred here, with a rename
 * running on another core); openat2_retry must never pass that on. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/openat2.h"
#include "scratch.h"

static volatile int stop;
static char dir[64] = "/tmp/abox-openat2-XXXXXX";

static void *renamer(void *arg)
{
	(void)arg;
	char a[128], b[128];
	snprintf(a, sizeof(a), "%s/r1", dir);
	snprintf(b, sizeof(b), "%s/r2", dir);
	while (!stop) {
		(void)rename(a, b);
		(void)rename(b, a);
	}
	return NULL;
}

Test(openat2, dotdot_lookups_never_fail_with_eagain_while_renames_race)
{
	scratch_make(dir);
	scratch_put(dir, "d/a/.keep", "");
	scratch_put(dir, "d/b/f", "x");
	scratch_put(dir, "r1", "");
	int d = open(scratch_path(dir, "d"), O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	cr_assert_geq(d, 0);
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, renamer, NULL), 0);
	struct open_how how = { .flags = O_RDONLY | O_CLOEXEC, .resolve = RESOLVE_BENEATH };
	long failed = 0, eagain = 0;
	int last = 0;
	for (int i = 0; i < 100000; i++) {
		long fd = openat2_retry(d, "a/../b/f", &how, sizeof(how));
		if (fd >= 0) {
			close((int)fd);
		} else {
			failed++;
			last = errno;
			eagain += errno == EAGAIN;
		}
	}
	stop = 1;
	pthread_join(t, NULL);
	close(d);
	scratch_remove(dir);
	cr_assert_eq(failed, 0, "%ld lookups failed (%ld EAGAIN; last: %s)", failed, eagain, strerror(last));
}
