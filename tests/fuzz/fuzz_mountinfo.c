/* libFuzzer target: the mountinfo parser and the cgroup layout built on
 * it. The kernel writes the text, but its names (mount points, FUSE
 * sources and types) are chosen by whoever may mount, in a user namespace
 * too. Must never crash, read out of bounds or leak. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup/cgroup.h"
#include "fuzz.h"
#include "mount/mountinfo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int touch(const struct mountinfo_entry *e, void *ud)
{
	size_t *sum = ud;
	*sum += strlen(e->root) + strlen(e->mount_point) + strlen(e->mount_opts) + strlen(e->optional) +
		strlen(e->fstype) + strlen(e->source) + strlen(e->super_opts);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_text(data, size);
	if (!text)
		return 0;
	size_t sum = 0;
	(void)mountinfo_parse(text, touch, &sum, NULL);
	/* the same bytes through the layout (it copies them itself); the
	 * fs prefix points nowhere, so no host file is read */
	memcpy(text, data, size);
	text[size] = '\0';
	struct cg_layout l;
	if (cgroup_layout_parse(text, "0::/\n", "/nonexistent-fuzz-root", &l, NULL) == 0)
		cgroup_layout_free(&l);
	free(text);
	return 0;
}
