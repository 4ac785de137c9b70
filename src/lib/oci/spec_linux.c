/* oci/spec_linux.c — see spec.h: mounts and the linux object
 * (namespaces, id mappings, sysctl, resources, cgroups path, seccomp,
 * masked and read-only paths, devices). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "oci/spec.h"
#include "oci/spec_int.h"

static const char *const ns_names[OCI_NS_COUNT] = { "pid", "network", "mount",  "ipc",
						    "uts", "user",    "cgroup", "time" };

const char *oci_ns_name(enum oci_ns ns)
{
	return ns < OCI_NS_COUNT ? ns_names[ns] : "?";
}

void oci_resources_init(struct oci_resources *r)
{
	r->memory_limit = r->memory_reservation = r->memory_swap = -1;
	r->cpu_quota = -1;
}

/* An absolute path without "." or ".." components: a mount destination
 * with ".." would climb out of the root filesystem it is resolved in. */
static int clean_abs(struct oci_pc *c, const char *p, const char *path)
{
	if (p[0] != '/')
		return oci_fail(c, path, "'%.*s' must be an absolute path", 200, p);
	for (const char *s = p; *s;) {
		while (*s == '/')
			s++;
		size_t n = strcspn(s, "/");
		if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
			return oci_fail(c, path, "'%.*s' has a '.' or '..' component", 200, p);
		s += n;
	}
	return 0;
}

static int parse_idmaps(struct oci_pc *c, json_object *v, const char *path, struct oci_idmap *m, unsigned *n)
{
	if (oci_want(c, v, json_type_array, path, "an array of mappings") < 0)
		return -EINVAL;
	size_t len = json_object_array_length(v);
	if (len > OCI_MAX_IDMAPS)
		return oci_fail(c, path, "has more than %d mappings", OCI_MAX_IDMAPS);
	for (size_t i = 0; i < len; i++) {
		json_object *e = json_object_array_get_idx(v, i), *f;
		char p[OCI_PATH + 32];
		uint64_t x[3];
		static const char *const keys[3] = { "containerID", "hostID", "size" };
		oci_pathf(p, sizeof(p), "%s[%zu]", path, i);
		if (oci_want(c, e, json_type_object, p, "an object") < 0)
			return -EINVAL;
		for (int k = 0; k < 3; k++) {
			oci_pathf(p, sizeof(p), "%s[%zu].%s", path, i, keys[k]);
			if (!json_object_object_get_ex(e, keys[k], &f))
				return oci_fail(c, p, "is required");
			if (oci_uint(c, f, p, UINT32_MAX, &x[k]) < 0)
				return -EINVAL;
		}
		oci_pathf(p, sizeof(p), "%s[%zu]", path, i);
		if (!x[2] || x[0] + x[2] > (uint64_t)UINT32_MAX + 1 || x[1] + x[2] > (uint64_t)UINT32_MAX + 1)
			return oci_fail(c, p, "size must be 1 or more and keep both ranges within 32 bits");
		m[i] = (struct oci_idmap){ (uint32_t)x[0], (uint32_t)x[1], (uint32_t)x[2] };
		(*n)++;
	}
	return 0;
}

int oci_parse_mounts(struct oci_pc *c, json_object *v, struct oci_spec *s)
{
	if (oci_want(c, v, json_type_array, "mounts", "an array") < 0)
		return -EINVAL;
	size_t n = json_object_array_length(v);
	if (n > OCI_MAX_MOUNTS)
		return oci_fail(c, "mounts", "has more than %d entries", OCI_MAX_MOUNTS);
	if (!(s->mounts = calloc(n ? n : 1, sizeof(*s->mounts))))
		return abox_error_set(c->err, ENOMEM, "%s", c->source);
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(v, i), *f;
		struct oci_mount *m = &s->mounts[i];
		char p[OCI_PATH];
		s->nmounts++;
		oci_pathf(p, sizeof(p), "mounts[%zu]", i);
		if (oci_want(c, e, json_type_object, p, "an object") < 0)
			return -EINVAL;
		oci_pathf(p, sizeof(p), "mounts[%zu].destination", i);
		if (!json_object_object_get_ex(e, "destination", &f))
			return oci_fail(c, p, "is required");
		if (oci_str(c, f, p, false, &m->destination) < 0 || clean_abs(c, m->destination, p) < 0)
			return -EINVAL;
		oci_pathf(p, sizeof(p), "mounts[%zu].type", i);
		if (json_object_object_get_ex(e, "type", &f) && oci_str(c, f, p, true, &m->type) < 0)
			return -EINVAL;
		oci_pathf(p, sizeof(p), "mounts[%zu].source", i);
		if (json_object_object_get_ex(e, "source", &f) && oci_str(c, f, p, true, &m->source) < 0)
			return -EINVAL;
		oci_pathf(p, sizeof(p), "mounts[%zu].options", i);
		if (json_object_object_get_ex(e, "options", &f) &&
		    oci_strv(c, f, p, 256, false, &m->options) < 0)
			return -EINVAL;
		oci_pathf(p, sizeof(p), "mounts[%zu].uidMappings", i);
		if (json_object_object_get_ex(e, "uidMappings", &f) &&
		    parse_idmaps(c, f, p, m->uid_map, &m->nuid) < 0)
			return -EINVAL;
		oci_pathf(p, sizeof(p), "mounts[%zu].gidMappings", i);
		if (json_object_object_get_ex(e, "gidMappings", &f) &&
		    parse_idmaps(c, f, p, m->gid_map, &m->ngid) < 0)
			return -EINVAL;
	}
	return 0;
}

static int parse_namespaces(struct oci_pc *c, json_object *v, struct oci_spec *s)
{
	if (oci_want(c, v, json_type_array, "linux.namespaces", "an array") < 0)
		return -EINVAL;
	for (size_t i = 0; i < json_object_array_length(v); i++) {
		json_object *e = json_object_array_get_idx(v, i), *f;
		char p[OCI_PATH];
		oci_pathf(p, sizeof(p), "linux.namespaces[%zu]", i);
		if (oci_want(c, e, json_type_object, p, "an object") < 0)
			return -EINVAL;
		const char *type = js_str(e, "type");
		int ns = -1;
		for (int k = 0; type && k < OCI_NS_COUNT && ns < 0; k++)
			if (!strcmp(ns_names[k], type))
				ns = k;
		oci_pathf(p, sizeof(p), "linux.namespaces[%zu].type", i);
		if (ns < 0)
			return oci_fail(c, p, "unknown namespace type '%.*s'", 64, type ? type : "");
		if (s->ns_wanted[ns])
			return oci_fail(c, p, "namespace type '%s' is given twice", type);
		s->ns_wanted[ns] = true;
		oci_pathf(p, sizeof(p), "linux.namespaces[%zu].path", i);
		if (json_object_object_get_ex(e, "path", &f)) {
			if (oci_str(c, f, p, true, &s->ns_path[ns]) < 0)
				return -EINVAL;
			if (!s->ns_path[ns][0]) {
				free(s->ns_path[ns]); /* "": a new one, as runc reads it */
				s->ns_path[ns] = NULL;
			} else if (s->ns_path[ns][0] != '/') {
				return oci_fail(c, p, "must be an absolute path");
			}
		}
	}
	return 0;
}

static int raw(struct oci_pc *c, json_object *v, char **out)
{
	if (!(*out = strdup(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN))))
		return abox_error_set(c->err, ENOMEM, "%s", c->source);
	return 0;
}

/* linux.resources.devices: {allow, type a|c|b, major, minor (absent or
 * -1: any), access of r, w and m} each. */
static int parse_device_rules(struct oci_pc *c, json_object *v, struct oci_resources *r)
{
	if (oci_want(c, v, json_type_array, "linux.resources.devices", "an array") < 0)
		return -EINVAL;
	size_t n = json_object_array_length(v);
	if (n > 1024)
		return oci_fail(c, "linux.resources.devices", "has more than 1024 entries");
	if (!(r->device_rules = calloc(n ? n : 1, sizeof(*r->device_rules))))
		return abox_error_set(c->err, ENOMEM, "%s", c->source);
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(v, i), *f;
		struct oci_device_rule *d = &r->device_rules[r->ndevice_rules++];
		char p[OCI_PATH];
		oci_pathf(p, sizeof(p), "linux.resources.devices[%zu]", i);
		if (oci_want(c, e, json_type_object, p, "an object") < 0)
			return -EINVAL;
		oci_pathf(p, sizeof(p), "linux.resources.devices[%zu].allow", i);
		if (!json_object_object_get_ex(e, "allow", &f))
			return oci_fail(c, p, "is required");
		if (oci_want(c, f, json_type_boolean, p, "a boolean") < 0)
			return -EINVAL;
		d->allow = json_object_get_boolean(f);
		const char *t = js_str(e, "type");
		oci_pathf(p, sizeof(p), "linux.resources.devices[%zu].type", i);
		if (json_object_object_get_ex(e, "type", &f) && !json_object_is_type(f, json_type_null) &&
		    (!t || strlen(t) != 1 || !strchr("acb", t[0])))
			return oci_fail(c, p, "must be a, c or b");
		d->type = t && *t ? t[0] : 'a';
		const char *keys[] = { "major", "minor" };
		int64_t *dst[] = { &d->major, &d->minor };
		for (int k = 0; k < 2; k++) {
			oci_pathf(p, sizeof(p), "linux.resources.devices[%zu].%s", i, keys[k]);
			*dst[k] = -1;
			if (json_object_object_get_ex(e, keys[k], &f) &&
			    !json_object_is_type(f, json_type_null) &&
			    oci_int(c, f, p, -1, UINT32_MAX, dst[k]) < 0)
				return -EINVAL;
		}
		const char *a = js_str(e, "access");
		oci_pathf(p, sizeof(p), "linux.resources.devices[%zu].access", i);
		if (json_object_object_get_ex(e, "access", &f) && !json_object_is_type(f, json_type_null) &&
		    !a)
			return oci_fail(c, p, "must be a string of r, w and m");
		d->access = a ? 0 : OCI_DEV_READ | OCI_DEV_WRITE | OCI_DEV_MKNOD;
		for (; a && *a; a++) {
			const char *k = strchr("rwm", *a);
			if (!k)
				return oci_fail(c, p, "must be a string of r, w and m");
			d->access |= 1u << (k - "rwm");
		}
	}
	return 0;
}

/* "2MB", "1GB", "64KB" (runc's spelling: binary multiples) in KiB, or 0 */
static uint64_t page_kb(const char *t)
{
	uint64_t n = 0;
	const char *p = t;
	for (; *p >= '0' && *p <= '9' && n < (1ULL << 40); p++)
		n = n * 10 + (uint64_t)(*p - '0');
	if (p == t || n >= (1ULL << 40))
		return 0;
	return !strcmp(p, "KB") ? n : !strcmp(p, "MB") ? n << 10 : !strcmp(p, "GB") ? n << 20 : 0;
}

/* linux.resources.hugepageLimits: {pageSize, limit} each, both needed */
static int parse_hugepages(struct oci_pc *c, json_object *v, struct oci_resources *r)
{
	if (oci_want(c, v, json_type_array, "linux.resources.hugepageLimits", "an array") < 0)
		return -EINVAL;
	size_t n = json_object_array_length(v);
	if (n > 16)
		return oci_fail(c, "linux.resources.hugepageLimits", "has more than 16 entries");
	if (!(r->hugepages = calloc(n ? n : 1, sizeof(*r->hugepages))))
		return abox_error_set(c->err, ENOMEM, "%s", c->source);
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(v, i), *f;
		struct oci_hugepage *h = &r->hugepages[r->nhugepages++];
		char p[OCI_PATH];
		oci_pathf(p, sizeof(p), "linux.resources.hugepageLimits[%zu]", i);
		if (oci_want(c, e, json_type_object, p, "an object") < 0)
			return -EINVAL;
		oci_pathf(p, sizeof(p), "linux.resources.hugepageLimits[%zu].pageSize", i);
		if (!json_object_object_get_ex(e, "pageSize", &f))
			return oci_fail(c, p, "is missing");
		if (oci_str(c, f, p, false, &h->page_size) < 0)
			return -EINVAL;
		if (!(h->page_kb = page_kb(h->page_size)))
			return oci_fail(c, p, "must be a page size such as 2MB or 1GB");
		oci_pathf(p, sizeof(p), "linux.resources.hugepageLimits[%zu].limit", i);
		if (!json_object_object_get_ex(e, "limit", &f))
			return oci_fail(c, p, "is missing");
		if (oci_uint(c, f, p, UINT64_MAX, &h->limit) < 0)
			return -EINVAL;
	}
	return 0;
}

/* linux.resources.unified: each name a plain cgroup file name (a
 * controller's or the core's: "memory.high", "cgroup.max.depth"), never a
 * path: abox writes them in the container's own cgroup folder */
static int parse_unified(struct oci_pc *c, json_object *v, struct oci_resources *r)
{
	if (oci_kv(c, v, "linux.resources.unified", &r->unified) < 0)
		return -EINVAL;
	for (size_t i = 0; r->unified[i]; i++) {
		const char *k = r->unified[i];
		size_t len = strcspn(k, "=");
		bool ok = len > 2 && len <= 64 && k[0] >= 'a' && k[0] <= 'z' && memchr(k, '.', len) &&
			  strspn(k, "abcdefghijklmnopqrstuvwxyz0123456789_.") == len && k[len - 1] != '.';
		if (!ok) {
			char p[OCI_PATH];
			oci_pathf(p, sizeof(p), "linux.resources.unified.%.*s", (int)(len > 64 ? 64 : len),
				  k);
			return oci_fail(c, p, "is not a cgroup file name");
		}
	}
	return 0;
}

static int parse_resources(struct oci_pc *c, json_object *o, struct oci_resources *r)
{
	json_object *v, *f;
	uint64_t x;
	int64_t i;
	if (oci_want(c, o, json_type_object, "linux.resources", "an object") < 0)
		return -EINVAL;
	if (json_object_object_get_ex(o, "memory", &v)) {
		if (oci_want(c, v, json_type_object, "linux.resources.memory", "an object") < 0)
			return -EINVAL;
		const char *keys[] = { "limit", "reservation", "swap" };
		int64_t *dst[] = { &r->memory_limit, &r->memory_reservation, &r->memory_swap };
		for (int k = 0; k < 3; k++) {
			char p[OCI_PATH];
			oci_pathf(p, sizeof(p), "linux.resources.memory.%s", keys[k]);
			if (json_object_object_get_ex(v, keys[k], &f) &&
			    oci_int(c, f, p, -1, INT64_MAX, dst[k]) < 0)
				return -EINVAL;
		}
	}
	if (json_object_object_get_ex(o, "cpu", &v)) {
		if (oci_want(c, v, json_type_object, "linux.resources.cpu", "an object") < 0)
			return -EINVAL;
		if (json_object_object_get_ex(v, "shares", &f) &&
		    oci_uint(c, f, "linux.resources.cpu.shares", 262144, &r->cpu_shares) < 0)
			return -EINVAL;
		if (json_object_object_get_ex(v, "quota", &f) &&
		    oci_int(c, f, "linux.resources.cpu.quota", -1, INT64_MAX, &r->cpu_quota) < 0)
			return -EINVAL;
		if (json_object_object_get_ex(v, "period", &f) &&
		    oci_uint(c, f, "linux.resources.cpu.period", 1000000, &r->cpu_quota_period) < 0)
			return -EINVAL;
		if (json_object_object_get_ex(v, "cpus", &f) &&
		    oci_str(c, f, "linux.resources.cpu.cpus", true, &r->cpu_cpus) < 0)
			return -EINVAL;
		if (json_object_object_get_ex(v, "mems", &f) &&
		    oci_str(c, f, "linux.resources.cpu.mems", true, &r->cpu_mems) < 0)
			return -EINVAL;
	}
	if (json_object_object_get_ex(o, "pids", &v)) {
		if (oci_want(c, v, json_type_object, "linux.resources.pids", "an object") < 0)
			return -EINVAL;
		if (json_object_object_get_ex(v, "limit", &f)) {
			if (oci_int(c, f, "linux.resources.pids.limit", -1, INT64_MAX, &i) < 0)
				return -EINVAL;
			r->pids_limit = i ? i : -1; /* 0 means no limit, as -1 */
		}
	}
	if (json_object_object_get_ex(o, "blockIO", &v)) {
		if (oci_want(c, v, json_type_object, "linux.resources.blockIO", "an object") < 0)
			return -EINVAL;
		if (json_object_object_get_ex(v, "weight", &f)) {
			if (oci_uint(c, f, "linux.resources.blockIO.weight", 1000, &x) < 0)
				return -EINVAL;
			r->has_blkio_weight = true;
			r->blkio_weight = (uint16_t)x;
		}
	}
	if (json_object_object_get_ex(o, "devices", &v) && parse_device_rules(c, v, r) < 0)
		return -EINVAL;
	if (json_object_object_get_ex(o, "hugepageLimits", &v) && parse_hugepages(c, v, r) < 0)
		return -EINVAL;
	if (json_object_object_get_ex(o, "unified", &v) && parse_unified(c, v, r) < 0)
		return -EINVAL;
	return 0;
}

static int parse_devices(struct oci_pc *c, json_object *v, struct oci_spec *s)
{
	if (oci_want(c, v, json_type_array, "linux.devices", "an array") < 0)
		return -EINVAL;
	size_t n = json_object_array_length(v);
	if (n > 1024)
		return oci_fail(c, "linux.devices", "has more than 1024 entries");
	if (!(s->devices = calloc(n ? n : 1, sizeof(*s->devices))))
		return abox_error_set(c->err, ENOMEM, "%s", c->source);
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(v, i), *f;
		struct oci_device *d = &s->devices[i];
		char p[OCI_PATH];
		uint64_t x;
		s->ndevices++;
		oci_pathf(p, sizeof(p), "linux.devices[%zu]", i);
		if (oci_want(c, e, json_type_object, p, "an object") < 0)
			return -EINVAL;
		oci_pathf(p, sizeof(p), "linux.devices[%zu].path", i);
		if (!json_object_object_get_ex(e, "path", &f))
			return oci_fail(c, p, "is required");
		if (oci_str(c, f, p, false, &d->path) < 0 || clean_abs(c, d->path, p) < 0)
			return -EINVAL;
		const char *t = js_str(e, "type");
		oci_pathf(p, sizeof(p), "linux.devices[%zu].type", i);
		if (!t || strlen(t) != 1 || !strchr("cbup", t[0]))
			return oci_fail(c, p, "must be c, b, u or p");
		d->type = t[0];
		const char *keys[] = { "major", "minor" };
		int64_t *dst[] = { &d->major, &d->minor };
		for (int k = 0; k < 2; k++) {
			oci_pathf(p, sizeof(p), "linux.devices[%zu].%s", i, keys[k]);
			if (!json_object_object_get_ex(e, keys[k], &f)) {
				if (d->type != 'p')
					return oci_fail(c, p, "is required for a device of type %c", d->type);
			} else if (oci_int(c, f, p, 0, UINT32_MAX, dst[k]) < 0) {
				return -EINVAL;
			}
		}
		oci_pathf(p, sizeof(p), "linux.devices[%zu].fileMode", i);
		if (json_object_object_get_ex(e, "fileMode", &f)) {
			if (oci_uint(c, f, p, 07777, &x) < 0)
				return -EINVAL;
			d->has_mode = true;
			d->mode = (uint32_t)x;
		}
		oci_pathf(p, sizeof(p), "linux.devices[%zu].uid", i);
		if (json_object_object_get_ex(e, "uid", &f)) {
			if (oci_uint(c, f, p, UINT32_MAX - 1, &x) < 0)
				return -EINVAL;
			d->has_uid = true;
			d->uid = (uid_t)x;
		}
		oci_pathf(p, sizeof(p), "linux.devices[%zu].gid", i);
		if (json_object_object_get_ex(e, "gid", &f)) {
			if (oci_uint(c, f, p, UINT32_MAX - 1, &x) < 0)
				return -EINVAL;
			d->has_gid = true;
			d->gid = (gid_t)x;
		}
	}
	return 0;
}

static int parse_paths(struct oci_pc *c, json_object *v, const char *path, char ***out)
{
	if (oci_strv(c, v, path, 4096, false, out) < 0)
		return -EINVAL;
	for (size_t i = 0; (*out)[i]; i++) {
		char p[OCI_PATH];
		oci_pathf(p, sizeof(p), "%s[%zu]", path, i);
		if (clean_abs(c, (*out)[i], p) < 0)
			return -EINVAL;
	}
	return 0;
}

/* linux.timeOffsets: {"monotonic"|"boottime": {secs, nanosecs}}. */
static int parse_time_offsets(struct oci_pc *c, json_object *v, struct oci_spec *s)
{
	static const char *const clocks[] = { "monotonic", "boottime" };
	if (oci_want(c, v, json_type_object, "linux.timeOffsets", "an object") < 0)
		return -EINVAL;
	json_object_object_foreach(v, key, val) {
		size_t k = 0;
		while (k < 2 && strcmp(key, clocks[k]) != 0)
			k++;
		char p[OCI_PATH];
		oci_pathf(p, sizeof(p), "linux.timeOffsets.%.40s", key);
		if (k == 2)
			return oci_fail(
				c, p,
				"is not a clock a time namespace can shift (monotonic and boottime are)");
		if (oci_want(c, val, json_type_object, p, "an object") < 0)
			return -EINVAL;
		json_object *f;
		int64_t secs = 0, ns = 0;
		oci_pathf(p, sizeof(p), "linux.timeOffsets.%s.secs", clocks[k]);
		if (json_object_object_get_ex(val, "secs", &f) &&
		    oci_int(c, f, p, -(INT64_C(1) << 40), INT64_C(1) << 40, &secs) < 0)
			return -EINVAL;
		oci_pathf(p, sizeof(p), "linux.timeOffsets.%s.nanosecs", clocks[k]);
		if (json_object_object_get_ex(val, "nanosecs", &f) && oci_int(c, f, p, 0, 999999999, &ns) < 0)
			return -EINVAL;
		s->time_offset_s[k] = secs;
		s->time_offset_ns[k] = (uint32_t)ns;
		s->has_time_offsets = true;
	}
	return 0;
}

int oci_parse_linux(struct oci_pc *c, json_object *o, struct oci_spec *s)
{
	json_object *v;
	if (oci_want(c, o, json_type_object, "linux", "an object") < 0)
		return -EINVAL;
	if (json_object_object_get_ex(o, "namespaces", &v) && parse_namespaces(c, v, s) < 0)
		return -EINVAL;
	if (json_object_object_get_ex(o, "uidMappings", &v) &&
	    parse_idmaps(c, v, "linux.uidMappings", s->uid_map, &s->nuid) < 0)
		return -EINVAL;
	if (json_object_object_get_ex(o, "gidMappings", &v) &&
	    parse_idmaps(c, v, "linux.gidMappings", s->gid_map, &s->ngid) < 0)
		return -EINVAL;
	if ((s->nuid || s->ngid) && !s->ns_wanted[OCI_NS_USER])
		return oci_fail(c, "linux.uidMappings",
				"id mappings need a user namespace in linux.namespaces");
	if (json_object_object_get_ex(o, "sysctl", &v) && oci_kv(c, v, "linux.sysctl", &s->sysctl) < 0)
		return -EINVAL;
	if (json_object_object_get_ex(o, "resources", &v) && parse_resources(c, v, &s->resources) < 0)
		return -EINVAL;
	if (json_object_object_get_ex(o, "cgroupsPath", &v) &&
	    oci_str(c, v, "linux.cgroupsPath", true, &s->cgroups_path) < 0)
		return -EINVAL;
	if (json_object_object_get_ex(o, "seccomp", &v) &&
	    (oci_want(c, v, json_type_object, "linux.seccomp", "an object") < 0 ||
	     raw(c, v, &s->seccomp_json) < 0))
		return -EINVAL;
	if (json_object_object_get_ex(o, "maskedPaths", &v) &&
	    parse_paths(c, v, "linux.maskedPaths", &s->masked_paths) < 0)
		return -EINVAL;
	if (json_object_object_get_ex(o, "readonlyPaths", &v) &&
	    parse_paths(c, v, "linux.readonlyPaths", &s->readonly_paths) < 0)
		return -EINVAL;
	if (json_object_object_get_ex(o, "devices", &v) && parse_devices(c, v, s) < 0)
		return -EINVAL;
	if (json_object_object_get_ex(o, "rootfsPropagation", &v)) {
		static const char *const ok[] = { "shared",  "slave",  "private",  "unbindable",
						  "rshared", "rslave", "rprivate", "runbindable" };
		bool known = false;
		if (oci_str(c, v, "linux.rootfsPropagation", false, &s->rootfs_propagation) < 0)
			return -EINVAL;
		for (size_t k = 0; k < sizeof(ok) / sizeof(ok[0]); k++)
			known |= !strcmp(ok[k], s->rootfs_propagation);
		if (!known)
			return oci_fail(c, "linux.rootfsPropagation", "unknown propagation '%.*s'", 32,
					s->rootfs_propagation);
	}
	if (json_object_object_get_ex(o, "mountLabel", &v) &&
	    oci_str(c, v, "linux.mountLabel", true, &s->mount_label) < 0)
		return -EINVAL;
	if (json_object_object_get_ex(o, "timeOffsets", &v) && !json_object_is_type(v, json_type_null) &&
	    parse_time_offsets(c, v, s) < 0)
		return -EINVAL;
	if (s->has_time_offsets && !s->ns_wanted[OCI_NS_TIME])
		return oci_fail(c, "linux.timeOffsets", "offsets need a time namespace in linux.namespaces");
	/* what abox cannot apply: refused by name, never dropped */
	static const char *const refused[] = { "intelRdt", "personality", "netDevices", "memoryPolicy" };
	for (size_t k = 0; k < sizeof(refused) / sizeof(refused[0]); k++)
		if (json_object_object_get_ex(o, refused[k], &v) && !json_object_is_type(v, json_type_null)) {
			char p[OCI_PATH];
			oci_pathf(p, sizeof(p), "linux.%s", refused[k]);
			return oci_fail(c, p, "is not supported by abox");
		}
	return 0;
}
