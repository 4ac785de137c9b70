/* oci/update.c — `update`: new limits for a container that runs, as
 * containerd's shim asks for them (`update --resources -`, the config's
 * linux.resources object on stdin: a pod resized in place) or with runc's
 * flags (--memory, --pids-limit, --cpu-quota, --cpu-period). What abox
 * enforces changes (memory, pids, CPU quota and shares); what it does not (
 * cpusets, block I/O...) is named in the log, never silently dropped. */
#include <errno.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <abox/abox.h>

#include "oci.h"

/* what runc's update takes and abox does not enforce: accepted, warned */
static const char *const ignored_flags[] = { "memory-reservation", "memory-swap",     "kernel-memory",
					     "kernel-memory-tcp",  "cpu-rt-period",   "cpu-rt-runtime",
					     "blkio-weight",       "l3-cache-schema", "mem-bw-schema" };

struct want {
	int64_t memory, pids, quota, period; /* 0: not given; -1: unlimited */
	int64_t shares; /* 0: not given */
	char cpus[256], mems[256]; /* cpuset lists; "": not given */
	char ignored[256];
};

/* A cpuset list (runc's --cpuset-cpus, cpu.cpus): the kernel judges it */
static int list_arg(const char *name, const char *v, char *out, size_t n)
{
	if (!*v || strlen(v) >= n || strspn(v, "0123456789,-") != strlen(v))
		return oci_error("update: invalid value for --%s: '%s' (a list such as 0-3,6)", name, v);
	snprintf(out, n, "%s", v);
	return 0;
}

static void note_ignored(struct want *w, const char *name)
{
	size_t n = strlen(w->ignored);
	snprintf(w->ignored + n, sizeof(w->ignored) - n, "%s%s", n ? ", " : "", name);
}

/* "512m", "1G", "1048576": bytes (runc takes docker's sizes) */
static int size_arg(const char *name, const char *v, int64_t *out)
{
	char *end;
	errno = 0;
	long long n = strtoll(v, &end, 10);
	int shift = 0;
	switch (*end) {
	case 'k':
	case 'K':
		shift = 10;
		end++;
		break;
	case 'm':
	case 'M':
		shift = 20;
		end++;
		break;
	case 'g':
	case 'G':
		shift = 30;
		end++;
		break;
	default:
		break;
	}
	if (*end == 'b' || *end == 'B')
		end++;
	if (errno || end == v || *end || n < -1 || (n > 0 && n > (INT64_MAX >> shift)))
		return oci_error("update: invalid value for --%s: %s", name, v);
	*out = n > 0 ? n << shift : n;
	return 0;
}

/* A number field of obj (absent: left as is). */
static int field(json_object *obj, const char *key, const char *path, int64_t *out)
{
	json_object *v;
	if (!obj || !json_object_object_get_ex(obj, key, &v) || json_object_is_type(v, json_type_null))
		return 0;
	if (!json_object_is_type(v, json_type_int))
		return oci_error("update: %s.%s: a number is needed", path, key);
	*out = json_object_get_int64(v);
	return 0;
}

static int from_json(const char *path, struct want *w)
{
	json_object *o = !strcmp(path, "-") ? json_object_from_fd(0) : json_object_from_file(path);
	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return oci_error("update: %s: not a JSON resources object (%s)",
				 !strcmp(path, "-") ? "stdin" : path,
				 json_util_get_last_err() ? json_util_get_last_err() : "not an object");
	}
	json_object *mem = NULL, *cpu = NULL, *pids = NULL, *v;
	json_object_object_get_ex(o, "memory", &mem);
	json_object_object_get_ex(o, "cpu", &cpu);
	json_object_object_get_ex(o, "pids", &pids);
	int r = field(mem, "limit", "memory", &w->memory) || field(pids, "limit", "pids", &w->pids) ||
		field(cpu, "quota", "cpu", &w->quota) || field(cpu, "period", "cpu", &w->period) ||
		field(cpu, "shares", "cpu", &w->shares);
	for (int k = 0; !r && k < 2 && cpu; k++) {
		const char *key = k ? "mems" : "cpus";
		if (json_object_object_get_ex(cpu, key, &v) && json_object_is_type(v, json_type_string) &&
		    *json_object_get_string(v))
			r = list_arg(k ? "cpuset-mems" : "cpuset-cpus", json_object_get_string(v),
				     k ? w->mems : w->cpus, sizeof(w->cpus));
	}
	static const struct {
		const char *obj, *key;
	} unenforced[] = { { "memory", "reservation" },
			   { "memory", "swap" },
			   { "memory", "kernel" },
			   { "memory", "kernelTCP" },
			   { "cpu", "realtimePeriod" },
			   { "cpu", "realtimeRuntime" },
			   { NULL, "blockIO" },
			   { NULL, "hugepageLimits" },
			   { NULL, "devices" },
			   { NULL, "unified" },
			   { NULL, "rdma" },
			   { NULL, "network" } };
	for (size_t i = 0; !r && i < sizeof(unenforced) / sizeof(unenforced[0]); i++) {
		json_object *in = o;
		if (unenforced[i].obj && !json_object_object_get_ex(o, unenforced[i].obj, &in))
			continue;
		if (json_object_is_type(in, json_type_object) &&
		    json_object_object_get_ex(in, unenforced[i].key, &v) &&
		    !json_object_is_type(v, json_type_null)) {
			char name[64];
			snprintf(name, sizeof(name), "%s%s%s", unenforced[i].obj ? unenforced[i].obj : "",
				 unenforced[i].obj ? "." : "", unenforced[i].key);
			note_ignored(w, name);
		}
	}
	json_object_put(o);
	return r;
}

static int parse(int argc, char **argv, struct want *w, const char **id)
{
	const char *resources = NULL;
	int i = 1;
	for (; i < argc; i++) {
		char name[64];
		const char *val;
		if (!oci_option(argv[i], name, sizeof(name), &val))
			break;
		if (!val) {
			if (i + 1 >= argc)
				return oci_error("update: option --%s needs a value", name);
			val = argv[++i];
		}
		int r = 0;
		if (!strcmp(name, "resources") || !strcmp(name, "r"))
			resources = val;
		else if (!strcmp(name, "memory"))
			r = size_arg(name, val, &w->memory);
		else if (!strcmp(name, "pids-limit"))
			r = size_arg(name, val, &w->pids);
		else if (!strcmp(name, "cpu-quota"))
			r = size_arg(name, val, &w->quota);
		else if (!strcmp(name, "cpu-period"))
			r = size_arg(name, val, &w->period);
		else if (!strcmp(name, "cpu-shares"))
			r = size_arg(name, val, &w->shares);
		else if (!strcmp(name, "cpuset-cpus"))
			r = list_arg(name, val, w->cpus, sizeof(w->cpus));
		else if (!strcmp(name, "cpuset-mems"))
			r = list_arg(name, val, w->mems, sizeof(w->mems));
		else {
			size_t k = 0;
			while (k < sizeof(ignored_flags) / sizeof(ignored_flags[0]) &&
			       strcmp(name, ignored_flags[k]))
				k++;
			if (k == sizeof(ignored_flags) / sizeof(ignored_flags[0]))
				return oci_error("flag provided but not defined: -%s", name);
			note_ignored(w, name);
		}
		if (r)
			return r;
	}
	if (i + 1 != argc)
		return oci_error("update: exactly one container id is needed");
	*id = argv[i];
	/* runc: --resources and the flags are one or the other */
	return resources ? from_json(resources, w) : 0;
}

/* The request as abox's limits. -1 (unlimited) is the node's, as at a
 * create whose config sets no limit: its memory, 32768 processes, all its
 * CPUs (every sandbox keeps a bound). */
static int to_limits(const struct want *w, abox_limits *l)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE),
	     cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if ((w->memory < 0 && (pages <= 0 || page <= 0)) || (w->quota < 0 && cpus <= 0))
		return oci_error("update: this node's memory or CPUs are unknown: give a number, not -1");
	l->memory_bytes = w->memory < 0 ? (uint64_t)pages * (uint64_t)page : (uint64_t)w->memory;
	l->pids = w->pids < 0 ? 32768 : (uint64_t)w->pids;
	if (w->shares > 0)
		l->cpu_shares = w->shares > 262144 ? 262144 : w->shares < 2 ? 2 : (uint32_t)w->shares;
	if (w->quota < 0)
		l->cpu_millis = (uint32_t)cpus * 1000u;
	else if (w->quota > 0) {
		/* as given, over the period in force when none is (runc's) */
		if (w->period && (w->period < 1000 || w->period > 1000000))
			return oci_error("update: a CPU period of %lld us: it must be from 1000 to 1000000",
					 (long long)w->period);
		l->cpu_quota_us = (uint64_t)w->quota;
		l->cpu_period_us = w->period > 0 ? (uint32_t)w->period : 0;
	}
	l->cpuset_cpus = w->cpus[0] ? w->cpus : NULL;
	l->cpuset_mems = w->mems[0] ? w->mems : NULL;
	return 0;
}

int oci_update(int argc, char **argv)
{
	struct want w = { 0 };
	const char *id = NULL;
	abox_limits l = ABOX_LIMITS_INIT;
	struct oci_ctr c;
	abox_ctx *ctx = NULL;
	if (parse(argc, argv, &w, &id) || to_limits(&w, &l) || oci_open(id, &c, &ctx))
		return 1;
	/* a period alone would change what the quota in force means */
	if (w.period && !w.quota)
		note_ignored(&w, "cpu period without a quota");
	int pid, r = 0;
	const char *st = oci_status(ctx, &c, &pid);
	abox_sandbox *sb = NULL;
	abox_error err = ABOX_ERROR_INIT;
	if (!strcmp(st, "stopped"))
		r = oci_error("container not running");
	else if (abox_sandbox_connect(ctx, c.sandbox, &sb, &err) < 0 ||
		 abox_sandbox_set_limits(sb, &l, &err) < 0)
		r = oci_error("update: %s", err.msg);
	else if (w.ignored[0])
		oci_warn("update: not enforced by abox, left as they were: %s", w.ignored);
	abox_sandbox_free(sb);
	oci_close(&c, ctx);
	return r;
}
