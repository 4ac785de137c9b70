/* oci/events.c — `events [--stats] [--interval D] ID`: the container's
 * resource use in runc's event form, one JSON object a line
 * ({"type":"stats","id":...,"data":{"cpu":...,"memory":...,"pids":...}});
 * --stats prints one and returns, else one every interval (default 5s)
 * until the container stops. */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <abox/abox.h>

#include "oci.h"

/* "5s", "500ms", "1m", or seconds alone: milliseconds, or -1. */
static long interval_ms(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || v <= 0)
		return -1;
	double k = !strcmp(end, "ms")           ? 1
		   : !strcmp(end, "s") || !*end ? 1000
		   : !strcmp(end, "m")          ? 60000
						: -1;
	return k < 0 ? -1 : (long)(v * k);
}

static json_object *stats(abox_ctx *ctx, const struct oci_ctr *c, abox_error *err)
{
	abox_sandbox *sb = NULL;
	abox_metrics m = { .version = ABOX_METRICS_VERSION };
	abox_sandbox_info info = { .version = ABOX_SANDBOX_INFO_VERSION };
	if (abox_sandbox_connect(ctx, c->sandbox, &sb, err) < 0 || abox_sandbox_metrics(sb, &m, err) < 0 ||
	    abox_sandbox_info_get(ctx, c->sandbox, &info, err) < 0) {
		abox_sandbox_free(sb);
		return NULL;
	}
	abox_sandbox_free(sb);
	json_object *usage = json_object_new_object();
	json_object_object_add(
		usage, "total",
		json_object_new_int64(m.cpu_used_usec == UINT64_MAX ? 0 : (int64_t)(m.cpu_used_usec * 1000)));
	json_object *cpu = json_object_new_object();
	json_object_object_add(cpu, "usage", usage);
	json_object_object_add(cpu, "throttling", json_object_new_object());
	json_object *mu = json_object_new_object();
	json_object_object_add(mu, "limit", json_object_new_int64((int64_t)m.mem_limit));
	json_object_object_add(mu, "usage", json_object_new_int64((int64_t)m.mem_used));
	json_object *mem = json_object_new_object();
	json_object_object_add(mem, "usage", mu);
	json_object *pids = json_object_new_object();
	json_object_object_add(pids, "current", json_object_new_int64((int64_t)m.pids));
	json_object_object_add(pids, "limit", json_object_new_int64((int64_t)info.pids));
	abox_sandbox_info_clear(&info);
	json_object *data = json_object_new_object();
	json_object_object_add(data, "cpu", cpu);
	json_object_object_add(data, "memory", mem);
	json_object_object_add(data, "pids", pids);
	json_object_object_add(data, "blkio", json_object_new_object());
	json_object_object_add(data, "hugetlb", json_object_new_object());
	json_object *ev = json_object_new_object();
	json_object_object_add(ev, "type", json_object_new_string("stats"));
	json_object_object_add(ev, "id", json_object_new_string(c->id));
	json_object_object_add(ev, "data", data);
	return ev;
}

int oci_events(int argc, char **argv)
{
	bool once = false;
	long every = 5000;
	int i = 1;
	for (; i < argc; i++) {
		char name[64];
		const char *val;
		if (!oci_option(argv[i], name, sizeof(name), &val))
			break;
		if (!strcmp(name, "interval") && !val && i + 1 < argc)
			val = argv[++i];
		if (!strcmp(name, "stats"))
			once = !val || !strcmp(val, "true");
		else if (!strcmp(name, "interval")) {
			if ((every = interval_ms(val ? val : "")) < 0)
				return oci_error("events: invalid --interval '%s'", val ? val : "");
		} else
			return oci_error("flag provided but not defined: -%s", name);
	}
	if (i != argc - 1)
		return oci_error("events: exactly one container id is needed");
	struct oci_ctr c;
	abox_ctx *ctx = NULL;
	if (oci_open(argv[i], &c, &ctx))
		return 1;
	int r = 0, pid;
	for (;;) {
		if (!strcmp(oci_status(ctx, &c, &pid), "stopped")) {
			r = once ? oci_error("container with id %s is not running", c.id) : 0;
			break;
		}
		abox_error err = ABOX_ERROR_INIT;
		json_object *ev = stats(ctx, &c, &err);
		if (!ev) {
			r = oci_error("events: %s", err.msg);
			break;
		}
		printf("%s\n", json_object_to_json_string_ext(ev, JSON_C_TO_STRING_PLAIN));
		fflush(stdout);
		json_object_put(ev);
		if (once)
			break;
		struct timespec ts = { .tv_sec = every / 1000, .tv_nsec = (every % 1000) * 1000000L };
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	oci_close(&c, ctx);
	return r;
}
