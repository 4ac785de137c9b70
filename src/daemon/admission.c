/* admission.c — admission of creates and forks, and of snapshots.
 *
 * Three kinds of limit, checked in this order:
 *  - maxima per sandbox (memory, disk, cpus, timeout): a request over one
 *    can never be served, a 400 naming it. Unset, they are the host's own
 *    size: a sandbox is never promised more memory than the host has,
 *    more cpus than it runs or more disk than the state folder's
 *    filesystem holds.
 *  - quotas per API key (running sandboxes, their memory, the disk of its
 *    running and paused sandboxes, the storage of its snapshots): a 429
 *    naming the quota, in E2B's shape for its concurrency cap.
 *  - the host's capacity: the memory limits of all running sandboxes stay
 *    within host_overcommit times the host's memory, and a create needs
 *    host_reserve_mb of memory and disk actually free: a 429 too (it may
 *    pass later).
 * Counting reads every sandbox's record; two creates at once could both
 * pass a count that has room for one, so what an admitted create asked for
 * stays reserved (a list under a lock) until its sandbox exists. A
 * sandbox that exists and is still reserved counts twice for that moment:
 * the error is on the safe side.
 * Not here: what libabox enforces once a sandbox runs (its cgroup limits,
 * its disk). Runs in aboxd. */
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "admission.h"
#include "daemon.h"

struct admission_limits admission_cfg = {
	.sandbox_timeout_s = 86400 * 30,
	.host_overcommit = 8,
	.host_reserve_mb = 256,
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct admission_ticket *pending;

/* One limit: its name in the config's "limits" object, its environment
 * variable, where it goes (32 or 64 bits). */
struct knob {
	const char *name, *env;
	void *field;
	bool wide;
	uint64_t max;
};

static const struct knob knobs[] = {
	{ "sandboxMemoryMB", "ABOXD_LIMIT_SANDBOX_MEMORY_MB", &admission_cfg.sandbox_memory_mb, true, 1ull << 40 },
	{ "sandboxDiskMB", "ABOXD_LIMIT_SANDBOX_DISK_MB", &admission_cfg.sandbox_disk_mb, true, 1ull << 40 },
	{ "sandboxCpus", "ABOXD_LIMIT_SANDBOX_CPUS", &admission_cfg.sandbox_cpus, false, 4096 },
	{ "sandboxTimeoutSeconds", "ABOXD_LIMIT_SANDBOX_TIMEOUT_SECONDS", &admission_cfg.sandbox_timeout_s, false,
	  86400 * 30 },
	{ "keySandboxes", "ABOXD_LIMIT_KEY_SANDBOXES", &admission_cfg.key_sandboxes, false, 1u << 20 },
	{ "keyMemoryMB", "ABOXD_LIMIT_KEY_MEMORY_MB", &admission_cfg.key_memory_mb, true, 1ull << 40 },
	{ "keyDiskMB", "ABOXD_LIMIT_KEY_DISK_MB", &admission_cfg.key_disk_mb, true, 1ull << 40 },
	{ "keySnapshotMB", "ABOXD_LIMIT_KEY_SNAPSHOT_MB", &admission_cfg.key_snapshot_mb, true, 1ull << 40 },
	{ "hostOvercommit", "ABOXD_LIMIT_HOST_OVERCOMMIT", &admission_cfg.host_overcommit, false, 1000 },
	{ "hostReserveMB", "ABOXD_LIMIT_HOST_RESERVE_MB", &admission_cfg.host_reserve_mb, true, 1ull << 40 },
};

static void set_knob(const struct knob *k, uint64_t v)
{
	if (k->wide)
		*(uint64_t *)k->field = v;
	else
		*(uint32_t *)k->field = (uint32_t)v;
}

int admission_configure(json_object *limits, char *why, size_t whyn)
{
	if (!json_object_is_type(limits, json_type_object)) {
		snprintf(why, whyn, "limits must be an object");
		return -1;
	}
	json_object_object_foreach(limits, name, v) {
		const struct knob *k = NULL;
		for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]) && !k; i++)
			if (!strcmp(knobs[i].name, name))
				k = &knobs[i];
		int64_t x = json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : -1;
		if (!k || x < 0 || (uint64_t)x > k->max) {
			snprintf(why, whyn, "limits.%s: %s", name,
				 k ? "must be an integer of 0 (no limit) or more, within bounds" : "unknown limit");
			return -1;
		}
		set_knob(k, (uint64_t)x);
	}
	return 0;
}

int admission_from_env(char *why, size_t whyn)
{
	for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		const char *s = getenv(knobs[i].env);
		if (!s || !*s)
			continue;
		char *end;
		errno = 0;
		unsigned long long x = strtoull(s, &end, 10);
		if (errno || *end || *s == '-' || x > knobs[i].max) {
			snprintf(why, whyn, "%s='%s': must be an integer of 0 (no limit) or more", knobs[i].env, s);
			return -1;
		}
		set_knob(&knobs[i], x);
	}
	return 0;
}

static const char *state_dir(void)
{
	const char *s = daemon_cfg.state_dir ? daemon_cfg.state_dir : getenv("ABOX_ROOT");
	return s && *s ? s : "/var/lib/abox";
}

/* MemTotal and MemAvailable, in MiB; 0 when unknown. */
static void host_memory(uint64_t *total, uint64_t *avail)
{
	*total = *avail = 0;
	FILE *f = fopen("/proc/meminfo", "re");
	if (!f)
		return;
	char line[256];
	unsigned long long kb;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
			*total = kb >> 10;
		else if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			*avail = kb >> 10;
	}
	fclose(f);
}

static char *owner_of(const abox_sandbox_info *in, char out[17])
{
	out[0] = '\0';
	json_object *m = in->metadata_json ? json_tokener_parse(in->metadata_json) : NULL, *v;
	if (m && json_object_object_get_ex(m, DAEMON_OWNER_KEY, &v) && json_object_is_type(v, json_type_string))
		snprintf(out, 17, "%s", json_object_get_string(v));
	json_object_put(m);
	return out;
}

struct usage {
	unsigned key_running;
	uint64_t key_memory, key_disk, host_memory; /* bytes */
};

static int count(abox_ctx *ctx, const char *owner, struct usage *u, char *why, size_t whyn)
{
	*u = (struct usage){ 0 };
	abox_list_opts lo = ABOX_LIST_OPTS_INIT;
	abox_sandbox_info *v = NULL;
	size_t n = 0;
	abox_error err = ABOX_ERROR_INIT;
	if (abox_sandbox_query(ctx, &lo, &v, &n, NULL, &err) < 0) {
		snprintf(why, whyn, "cannot count the sandboxes: %s", err.msg);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		char o[17];
		bool mine = owner && *owner && !strcmp(owner_of(&v[i], o), owner);
		bool running = v[i].state == ABOX_STATE_RUNNING, paused = v[i].state == ABOX_STATE_PAUSED;
		if (running)
			u->host_memory += v[i].memory_bytes;
		if (mine && running) {
			u->key_running++;
			u->key_memory += v[i].memory_bytes;
		}
		if (mine && (running || paused))
			u->key_disk += v[i].disk_bytes;
		abox_sandbox_info_clear(&v[i]);
	}
	free(v);
	for (struct admission_ticket *t = pending; t; t = t->next) {
		u->host_memory += t->memory_bytes * t->count;
		if (owner && !strcmp(t->owner, owner)) {
			u->key_running += t->count;
			u->key_memory += t->memory_bytes * t->count;
			u->key_disk += t->disk_bytes * t->count;
		}
	}
	return 0;
}

/* Over a per-sandbox maximum: 400. */
static unsigned maxima(const struct admission_ask *a, char *why, size_t whyn)
{
	uint64_t host_total, host_avail;
	host_memory(&host_total, &host_avail);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct statvfs fs;
	uint64_t disk_total = statvfs(state_dir(), &fs) == 0 ? ((uint64_t)fs.f_blocks * fs.f_frsize) >> 20 : 0;
	uint64_t mem_max = admission_cfg.sandbox_memory_mb ? admission_cfg.sandbox_memory_mb : host_total;
	uint64_t disk_max = admission_cfg.sandbox_disk_mb ? admission_cfg.sandbox_disk_mb : disk_total;
	uint64_t cpu_max = admission_cfg.sandbox_cpus ? admission_cfg.sandbox_cpus : (uint64_t)(cpus > 0 ? cpus : 0);
	const char *lim;
	if (mem_max && a->memory_bytes >> 20 > mem_max) {
		lim = admission_cfg.sandbox_memory_mb ? "limits.sandboxMemoryMB" : "the host's memory";
		snprintf(why, whyn, "memoryMB %llu is over the maximum of %llu MiB per sandbox (%s)",
			 (unsigned long long)(a->memory_bytes >> 20), (unsigned long long)mem_max, lim);
		return 400;
	}
	if (disk_max && a->disk_bytes >> 20 > disk_max) {
		lim = admission_cfg.sandbox_disk_mb ? "limits.sandboxDiskMB" : "the state folder's filesystem";
		snprintf(why, whyn, "diskSizeMB %llu is over the maximum of %llu MiB per sandbox (%s)",
			 (unsigned long long)(a->disk_bytes >> 20), (unsigned long long)disk_max, lim);
		return 400;
	}
	if (cpu_max && (a->cpu_millis + 999) / 1000 > cpu_max) {
		lim = admission_cfg.sandbox_cpus ? "limits.sandboxCpus" : "the host's cpus";
		snprintf(why, whyn, "cpuCount %u is over the maximum of %llu per sandbox (%s)",
			 (a->cpu_millis + 999) / 1000, (unsigned long long)cpu_max, lim);
		return 400;
	}
	if (admission_cfg.sandbox_timeout_s && a->timeout_s > admission_cfg.sandbox_timeout_s) {
		snprintf(why, whyn, "timeout %u is over the maximum of %u seconds (limits.sandboxTimeoutSeconds)",
			 a->timeout_s, admission_cfg.sandbox_timeout_s);
		return 400;
	}
	return 0;
}

/* Whether bytes is over a key's quota of quota_mb MiB (0: none), said in
 * why with what it counts and the setting's name. */
static bool over_key_quota(const char *what, uint64_t bytes, uint64_t quota_mb, const char *knob, char *why,
			   size_t whyn)
{
	if (!quota_mb || bytes >> 20 <= quota_mb)
		return false;
	snprintf(why, whyn, "the %s would be %llu MiB, over its quota of %llu MiB (limits.%s)", what,
		 (unsigned long long)(bytes >> 20), (unsigned long long)quota_mb, knob);
	return true;
}

/* Over a key's quota or the host's capacity: 429. Called locked. */
static unsigned quotas(abox_ctx *ctx, const struct admission_ask *a, char *why, size_t whyn)
{
	struct usage u;
	if (count(ctx, a->owner, &u, why, whyn) < 0)
		return 500;
	const struct admission_limits *c = &admission_cfg;
	uint64_t mem = a->memory_bytes * a->count, disk = a->disk_bytes * a->count;
	if (c->key_sandboxes && u.key_running + a->count > c->key_sandboxes) {
		/* the words of E2B's own answer, which clients may match */
		snprintf(why, whyn,
			 "You have reached the maximum number of concurrent sandboxes (%u) for this API key "
			 "(limits.keySandboxes)",
			 c->key_sandboxes);
		return 429;
	}
	if (over_key_quota("memory of this API key's running sandboxes", u.key_memory + mem, c->key_memory_mb,
			   "keyMemoryMB", why, whyn) ||
	    over_key_quota("disk of this API key's sandboxes", u.key_disk + disk, c->key_disk_mb, "keyDiskMB",
			   why, whyn))
		return 429;
	uint64_t total, avail;
	host_memory(&total, &avail);
	if (total && c->host_overcommit && (u.host_memory + mem) >> 20 > total * c->host_overcommit) {
		snprintf(why, whyn,
			 "host capacity: the running sandboxes' memory limits would add up to %llu MiB, over %u times "
			 "the host's %llu MiB (limits.hostOvercommit)",
			 (unsigned long long)((u.host_memory + mem) >> 20), c->host_overcommit, (unsigned long long)total);
		return 429;
	}
	if (total && avail < c->host_reserve_mb) {
		snprintf(why, whyn, "host capacity: %llu MiB of memory free, %llu MiB are kept free (limits.hostReserveMB)",
			 (unsigned long long)avail, (unsigned long long)c->host_reserve_mb);
		return 429;
	}
	struct statvfs fs;
	if (statvfs(state_dir(), &fs) == 0 && (((uint64_t)fs.f_bavail * fs.f_frsize) >> 20) < c->host_reserve_mb) {
		snprintf(why, whyn,
			 "host capacity: %llu MiB free on the state folder's filesystem, %llu MiB are kept free "
			 "(limits.hostReserveMB)",
			 (unsigned long long)(((uint64_t)fs.f_bavail * fs.f_frsize) >> 20),
			 (unsigned long long)c->host_reserve_mb);
		return 429;
	}
	return 0;
}

unsigned admission_admit(abox_ctx *ctx, const struct admission_ask *a, struct admission_ticket *t, char *why,
			 size_t whyn)
{
	*t = (struct admission_ticket){ .memory_bytes = a->memory_bytes, .disk_bytes = a->disk_bytes,
					.count = a->count };
	snprintf(t->owner, sizeof(t->owner), "%s", a->owner ? a->owner : "");
	/* a paused sandbox was admitted at its create; maxima lowered since
	 * must not strand it */
	unsigned st = a->resume ? 0 : maxima(a, why, whyn);
	if (st)
		return st;
	pthread_mutex_lock(&lock);
	st = quotas(ctx, a, why, whyn);
	if (!st) {
		t->next = pending;
		pending = t;
		t->held = true;
	}
	pthread_mutex_unlock(&lock);
	return st;
}

void admission_release(struct admission_ticket *t)
{
	if (!t || !t->held)
		return;
	pthread_mutex_lock(&lock);
	for (struct admission_ticket **p = &pending; *p; p = &(*p)->next)
		if (*p == t) {
			*p = t->next;
			break;
		}
	t->held = false;
	pthread_mutex_unlock(&lock);
}

/* Blocks on disk below a snapshot's folder: what it costs the host, its
 * memory checkpoint included. FTW_PHYS: links are not followed. */
static __thread uint64_t walked;

static int add_blocks(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)path, (void)flag, (void)ftw;
	walked += (uint64_t)st->st_blocks * 512;
	return 0;
}

unsigned admission_snapshot(abox_ctx *ctx, const char *owner, uint64_t extra_bytes, char *why, size_t whyn)
{
	if (!admission_cfg.key_snapshot_mb)
		return 0;
	abox_snapshot_info *v = NULL;
	size_t n = 0;
	if (abox_snapshot_list(ctx, &v, &n, NULL) < 0) {
		snprintf(why, whyn, "cannot count the snapshots");
		return 500;
	}
	uint64_t used = extra_bytes;
	for (size_t i = 0; i < n; i++) {
		char *got = note_read("snapshots", v[i].id);
		if (got && owner && *owner && !strcmp(got, owner)) {
			char dir[4200];
			snprintf(dir, sizeof(dir), "%s/snapshots/%s", state_dir(), v[i].id);
			walked = 0;
			if (nftw(dir, add_blocks, 16, FTW_PHYS | FTW_MOUNT) == 0)
				used += walked;
			else
				used += v[i].bytes;
		}
		free(got);
	}
	free(v);
	if (used > admission_cfg.key_snapshot_mb << 20) {
		snprintf(why, whyn,
			 "the snapshots of this API key would take %llu MiB, over its quota of %llu MiB "
			 "(limits.keySnapshotMB)",
			 (unsigned long long)(used >> 20), (unsigned long long)admission_cfg.key_snapshot_mb);
		return 429;
	}
	return 0;
}
