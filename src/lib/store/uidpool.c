/* store/uidpool.c — see uidpool.h. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/json.h"
#include "store/store.h"
#include "store/uidpool.h"

#define STALE_AGE_S 60

const char *const uidpool_limit_names[UIDPOOL_LIMITS] = {
	"user_namespaces",   "mnt_namespaces",  "pid_namespaces",    "net_namespaces",
	"ipc_namespaces",    "uts_namespaces",  "cgroup_namespaces", "time_namespaces",
	"inotify_instances", "inotify_watches", "fanotify_groups",   "fanotify_marks",
};

/* "limits": {NAME: a whole number up to INT_MAX, or null for the
 * kernel's} */
static int apply_limits(struct uidpool_cfg *c, json_object *o, abox_error *err)
{
	if (!json_object_is_type(o, json_type_object))
		return abox_error_setx(err, EINVAL, "%s: limits must be an object", c->path);
	json_object_object_foreach(o, key, v) {
		int i = 0;
		while (i < UIDPOOL_LIMITS && strcmp(key, uidpool_limit_names[i]))
			i++;
		if (i == UIDPOOL_LIMITS)
			return abox_error_setx(
				err, EINVAL,
				"%s: unknown limit '%s' (user_namespaces, mnt_namespaces, "
				"pid_namespaces, net_namespaces, ipc_namespaces, uts_namespaces, "
				"cgroup_namespaces, time_namespaces, inotify_instances, "
				"inotify_watches, fanotify_groups, fanotify_marks)",
				c->path, key);
		int64_t n = v ? json_object_get_int64(v) : -1;
		if (v && (!json_object_is_type(v, json_type_int) || n < 0 || n > INT32_MAX))
			return abox_error_setx(err, EINVAL,
					       "%s: limit %s must be a whole number from 0 to %d, or null "
					       "for the kernel's",
					       c->path, key, INT32_MAX);
		c->limits[i] = n;
	}
	return 0;
}

static int get_u32(json_object *o, const char *key, uint32_t *out, const char *path, abox_error *err)
{
	json_object *v;
	if (!json_object_object_get_ex(o, key, &v))
		return 0;
	int64_t n = json_object_get_int64(v);
	if (!json_object_is_type(v, json_type_int) || n < 0 || n > UINT32_MAX)
		return abox_error_setx(err, EINVAL, "%s: %s must be a whole number from 0 to %u", path, key,
				       UINT32_MAX);
	*out = (uint32_t)n;
	return 0;
}

static int apply(struct uidpool_cfg *c, json_object *o, abox_error *err)
{
	json_object_object_foreach(o, key, v) {
		if (strcmp(key, "default") && strcmp(key, "poolStart") && strcmp(key, "poolRanges") &&
		    strcmp(key, "limits"))
			return abox_error_setx(
				err, EINVAL, "%s: unknown key '%s' (default, poolStart, poolRanges, limits)",
				c->path, key);
		int r;
		if (strcmp(key, "limits") == 0 && (r = apply_limits(c, v, err)) < 0)
			return r;
		if (strcmp(key, "default") == 0) {
			const char *s =
				json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
			if (strcmp(s, "on") && strcmp(s, "off"))
				return abox_error_setx(err, EINVAL, "%s: default must be \"on\" or \"off\"",
						       c->path);
			c->default_on = strcmp(s, "on") == 0;
		}
	}
	int r;
	if ((r = get_u32(o, "poolStart", &c->start, c->path, err)) < 0 ||
	    (r = get_u32(o, "poolRanges", &c->ranges, c->path, err)) < 0)
		return r;
	return 0;
}

int uidpool_config(const char *state_dir, struct uidpool_cfg *out, abox_error *err)
{
	struct uidpool_cfg c = { .default_on = true,
				 .start = UIDPOOL_DEFAULT_START,
				 .ranges = UIDPOOL_DEFAULT_RANGES,
				 .subuid = "/etc/subuid",
				 .subgid = "/etc/subgid" };
	for (int i = 0; i < UIDPOOL_LIMITS; i++)
		c.limits[i] = i == 0 ? 0 : -1; /* user_namespaces: none */
	safe_snprintf(c.path, sizeof(c.path), "%s/userns.json", state_dir);
	_cleanup_free_ char *text = NULL;
	int r = read_file_at(AT_FDCWD, c.path, 1 << 16, &text, NULL);
	if (r == -ENOENT) {
		c.path[0] = '\0';
	} else if (r < 0) {
		return abox_error_set(err, -r, "read the user namespace config '%s'", c.path);
	} else {
		json_object *o = js_parse_object(text, 4);
		if (!o)
			return abox_error_setx(err, EINVAL, "%s: not a JSON object", c.path);
		r = apply(&c, o, err);
		json_object_put(o);
		if (r < 0)
			return r;
	}
	const char *where = *c.path ? c.path : "user namespace config";
	/* ids below 65536 are the host's own accounts; the last id (-1) means
	 * "no change" to chown and setresuid */
	if (c.ranges == 0)
		return abox_error_setx(err, EINVAL, "%s: poolRanges must be at least 1", where);
	if (c.start < UIDPOOL_RANGE)
		return abox_error_setx(err, EINVAL,
				       "%s: poolStart %u lies among the host's own ids (below %u)", where,
				       c.start, UIDPOOL_RANGE);
	if ((uint64_t)c.start + (uint64_t)c.ranges * UIDPOOL_RANGE > UINT32_MAX)
		return abox_error_setx(err, EINVAL, "%s: %u ranges from %u run past the last id %u", where,
				       c.ranges, c.start, UINT32_MAX - 1);
	*out = c;
	return 0;
}

/* Whether [base, base+RANGE) overlaps a range of /etc/subuid or
 * /etc/subgid ("name:start:count" lines): those ids are a user's own, for
 * their rootless containers. */
static bool in_subids(const char *text, uint32_t base)
{
	for (const char *ln = text; ln && *ln; ln = strchr(ln, '\n'), ln = ln ? ln + 1 : NULL) {
		const char *c1 = strchr(ln, ':');
		const char *nl = strchr(ln, '\n');
		if (!c1 || (nl && c1 > nl))
			continue;
		char *e;
		unsigned long long start = strtoull(c1 + 1, &e, 10);
		if (*e != ':')
			continue;
		unsigned long long count = strtoull(e + 1, &e, 10);
		if (start < (unsigned long long)base + UIDPOOL_RANGE && base < start + count)
			return true;
	}
	return false;
}

bool uidpool_overlaps(const struct uidpool_cfg *cfg, uint64_t start, uint64_t count, uint32_t *slot_base)
{
	uint64_t lo = cfg->start, hi = lo + (uint64_t)cfg->ranges * UIDPOOL_RANGE;
	if (!count || start >= hi || start + count <= lo)
		return false;
	_cleanup_free_ char *subuid = NULL, *subgid = NULL;
	(void)read_file_at(AT_FDCWD, cfg->subuid, 1 << 20, &subuid, NULL);
	(void)read_file_at(AT_FDCWD, cfg->subgid, 1 << 20, &subgid, NULL);
	uint64_t first = start > lo ? (start - lo) / UIDPOOL_RANGE : 0;
	uint64_t last = (start + count - 1 < hi ? start + count - 1 : hi - 1) - lo;
	for (uint64_t k = first; k <= last / UIDPOOL_RANGE; k++) {
		uint32_t b = cfg->start + (uint32_t)k * UIDPOOL_RANGE;
		/* a slot the pool skips is never a sandbox's */
		if ((subuid && in_subids(subuid, b)) || (subgid && in_subids(subgid, b)))
			continue;
		*slot_base = b;
		return true;
	}
	return false;
}

int uidpool_take(const char *runtime_dir, const struct uidpool_cfg *cfg, const char *id, uint32_t *base,
		 abox_error *err)
{
	char dir[4200], name[32];
	safe_snprintf(dir, sizeof(dir), "%s/uids", runtime_dir);
	/* a create may come before anything else made the runtime folder
	 * (root-only, as everywhere in the library) */
	int m = mkdir(dir, 0700);
	if (m < 0 && errno == ENOENT && mkdir(runtime_dir, 0700) == 0)
		m = mkdir(dir, 0700);
	if (m < 0 && errno != EEXIST)
		return abox_error_set(err, errno, "user namespace: mkdir '%s'", dir);
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0)
		return abox_error_set(err, errno, "user namespace: open '%s'", dir);
	_cleanup_free_ char *subuid = NULL, *subgid = NULL;
	(void)read_file_at(AT_FDCWD, cfg->subuid, 1 << 20, &subuid, NULL);
	(void)read_file_at(AT_FDCWD, cfg->subgid, 1 << 20, &subgid, NULL);
	/* start where the sandbox's id points: creators racing each other
	 * mostly try different ranges first */
	uint32_t h = 2166136261u;
	for (const char *p = id; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	for (uint32_t k = 0; k < cfg->ranges; k++) {
		uint32_t slot = (h + k) % cfg->ranges;
		uint32_t b = cfg->start + slot * UIDPOOL_RANGE;
		if ((subuid && in_subids(subuid, b)) || (subgid && in_subids(subgid, b)))
			continue;
		safe_snprintf(name, sizeof(name), "%u", b);
		int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0 && errno == EEXIST)
			continue;
		if (fd < 0)
			return abox_error_set(err, errno, "user namespace: take range '%s/%s'", dir, name);
		int w = write_full(fd, id, strlen(id));
		close(fd);
		if (w < 0) {
			(void)unlinkat(dfd, name, 0);
			return abox_error_set(err, -w, "user namespace: record range '%s/%s'", dir, name);
		}
		*base = b;
		return 0;
	}
	return abox_error_setx(
		err, ENOSPC,
		"user namespace: all %u uid ranges of the pool (from %u) are taken: kill sandboxes or "
		"raise poolRanges in userns.json",
		cfg->ranges, cfg->start);
}

void uidpool_give(const char *runtime_dir, uint32_t base, const char *id)
{
	char p[4200];
	safe_snprintf(p, sizeof(p), "%s/uids/%u", runtime_dir, base);
	_cleanup_free_ char *who = NULL;
	if (read_file_at(AT_FDCWD, p, 64, &who, NULL) < 0)
		return;
	/* a range this sandbox no longer holds is another's now */
	if (strcmp(who, id) == 0)
		(void)unlink(p);
}

int uidpool_sweep(const char *runtime_dir, const char *state_dir, unsigned *removed)
{
	char dir[4200];
	safe_snprintf(dir, sizeof(dir), "%s/uids", runtime_dir);
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	time_t now = time(NULL);
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		_cleanup_free_ char *who = NULL;
		size_t len = 0;
		if (read_file_at(dirfd(d), de->d_name, 64, &who, &len) < 0)
			continue;
		/* a create takes its range before its runtime folder exists:
		 * only ranges a while old can be a dead creator's */
		struct stat st;
		bool stale =
			fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			now - st.st_mtime > STALE_AGE_S &&
			(len == 0 || (!strchr(who, '/') && !store_has_owner(runtime_dir, state_dir, who)));
		if (stale && unlinkat(dirfd(d), de->d_name, 0) == 0 && removed)
			(*removed)++;
	}
	closedir(d);
	return 0;
}

unsigned uidpool_used(const char *runtime_dir)
{
	char dir[4200];
	safe_snprintf(dir, sizeof(dir), "%s/uids", runtime_dir);
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	unsigned n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}
