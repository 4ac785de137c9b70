/* layer/unpack_run.c — see unpack_run.h. */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "layer/helper_run.h"
#include "layer/unpack_run.h"

/* One line of the helper's stdout. */
static void on_line(char *line, void *ud)
{
	struct unpack_run *r = ud;
	unsigned long long a, b, c;
	unsigned l, n;
	if (sscanf(line, "progress %llu %llu %u %u", &a, &b, &l, &n) == 4) {
		if (r->progress)
			r->progress(a, b, l, n, r->ud);
	} else if (strncmp(line, "config ", 7) == 0) {
		free(r->config);
		r->config = strdup(line + 7);
	} else if (sscanf(line, "done %llu %llu %llu", &a, &b, &c) == 3) {
		r->entries = a;
		r->bytes = b;
		r->dropped = c;
	}
}

int unpack_run(struct unpack_run *r, abox_error *err)
{
	char mb[48], me[48];
	const char *argv[12];
	int k = 0;
	argv[k++] = "abox-unpack";
	if (r->keep_setuid)
		argv[k++] = "--keep-setuid";
	if (r->keep_devices)
		argv[k++] = "--keep-devices";
	if (r->max_bytes) {
		snprintf(mb, sizeof(mb), "--max-bytes=%llu", (unsigned long long)r->max_bytes);
		argv[k++] = mb;
	}
	if (r->max_entries) {
		snprintf(me, sizeof(me), "--max-entries=%llu", (unsigned long long)r->max_entries);
		argv[k++] = me;
	}
	argv[k++] = "--";
	argv[k++] = r->source;
	argv[k++] = r->dest;
	argv[k++] = r->scratch;
	argv[k] = NULL;

	struct helper_run h = {
		.path = r->helper,
		.argv = argv,
		.on_line = on_line,
		.ud = r,
		.what = "import",
	};
	int status = helper_run(&h, err);
	const char *ebuf = h.errtext;
	size_t el = strlen(ebuf);
	if (status <= 0)
		return status;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
		return 1;
	if (WIFSIGNALED(status))
		return abox_error_setx(err, EIO, "import: the unpacker was killed by signal %d%s%s", WTERMSIG(status),
				       el ? ": " : "", ebuf);
	return abox_error_setx(err, EINVAL, "import: %s", el ? ebuf : "the unpacker failed");
}

void unpack_run_free(struct unpack_run *r)
{
	free(r->config);
	r->config = NULL;
}
