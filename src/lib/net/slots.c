/* net/slots.c — the pool's slots on disk (see slots.h). */
#include <dirent.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/json.h"
#include "net/slots.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

void net_host_ifname(const char *id, char name[IFNAMSIZ])
{
	snprintf(name, IFNAMSIZ, "%s%.12s", NET_IF_PREFIX, id);
}

static int slots_dir(const char *state_dir, char *p, size_t n, bool make, abox_error *err)
{
	snprintf(p, n, "%s/net", state_dir);
	if (make && mkdir(p, 0700) < 0 && errno != EEXIST)
		return abox_error_set(err, errno, "net: mkdir '%s'", p);
	snprintf(p, n, "%s/net/slots", state_dir);
	if (make && mkdir(p, 0700) < 0 && errno != EEXIST)
		return abox_error_set(err, errno, "net: mkdir '%s'", p);
	return 0;
}

/* The record: policy_json is net_policy_json's (JSON abox made, not
 * input) and id an id (id_ok), so it is written as it is, without a
 * parse and a print of it on every create. */
static char *slot_text(const char *id, const char *policy_json)
{
	char *t;
	if (!id_ok(id) || !policy_json || policy_json[0] != '{' ||
	    asprintf(&t, "{\"id\":\"%s\",\"policy\":%s}", id, policy_json) < 0)
		return NULL;
	return t;
}

/* The record written whole into path opened with flags (no fsync: a
 * slot means something only while the host runs (its veth, the table
 * and the sandbox are gone after a reboot, and gc then frees the slot);
 * what a crash of abox leaves, the O_EXCL or rename made whole); the
 * file removed when the write fails. -errno. */
static int write_record(const char *path, int flags, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | flags, 0600);
	if (fd < 0)
		return -errno;
	int r = write_full(fd, text, strlen(text));
	close(fd);
	if (r < 0)
		unlink(path);
	return r;
}

/* A complete temporary file beside the slots, its name in tmp. */
static int temp_file(const char *dir, const char *id, const char *policy_json, char *tmp, size_t n,
		     abox_error *err)
{
	_cleanup_free_ char *text = slot_text(id, policy_json);
	if (!text)
		return abox_error_setx(err, EINVAL, "net: the policy to record is not JSON");
	snprintf(tmp, n, "%s/.tmp-%s-%d", dir, id, (int)getpid());
	int r = write_record(tmp, O_CREAT | O_TRUNC, text);
	return r < 0 ? abox_error_set(err, -r, "net: write '%s'", tmp) : 0;
}

int64_t net_slot_age_s(const char *state_dir, uint32_t slot)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/net/slots/%u", state_dir, slot);
	struct stat st;
	if (stat(p, &st) < 0)
		return -1;
	int64_t age = (int64_t)time(NULL) - (int64_t)st.st_mtime;
	return age < 0 ? 0 : age;
}

int net_slot_read(const char *state_dir, uint32_t slot, char id[ABOX_ID_LEN + 1], char **policy_json,
		  abox_error *err)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/net/slots/%u", state_dir, slot);
	_cleanup_free_ char *text = NULL;
	int r = read_file_at(AT_FDCWD, p, 1 << 20, &text, NULL);
	if (r < 0)
		return r == -ENOENT ? -ENOENT : abox_error_set(err, -r, "net: read slot %u", slot);
	json_object *o = json_tokener_parse(text);
	const char *sid = js_str(o, "id");
	json_object *pol = js_get(o, "policy", json_type_object);
	if (!sid || !id_ok(sid) || !pol) {
		json_object_put(o);
		return abox_error_setx(err, EPROTO, "net: slot %u: not a slot record", slot);
	}
	memcpy(id, sid, ABOX_ID_LEN + 1);
	r = 0;
	if (policy_json) {
		const char *s = json_object_to_json_string_ext(pol, JSON_C_TO_STRING_PLAIN);
		if (!(*policy_json = s ? strdup(s) : NULL))
			r = abox_error_set(err, ENOMEM, "net: slot %u", slot);
	}
	json_object_put(o);
	return r;
}

/* Where a search of the pool starts: a random place, so a slot freed a
 * moment ago (whose veth the kernel may still be taking down) is not the
 * next one given, and concurrent creators rarely meet. */
static uint32_t random_start(uint32_t n)
{
	uint32_t start = 0;
	if (getrandom(&start, sizeof(start), GRND_NONBLOCK) != (ssize_t)sizeof(start))
		start = (uint32_t)getpid() * 2654435761u;
	return start % n;
}

int net_slot_pick(const char *state_dir, const struct net_config *c, bool (*busy)(uint32_t slot),
		  uint32_t *slot, abox_error *err)
{
	char dir[4096], p[4300];
	slots_dir(state_dir, dir, sizeof(dir), false, NULL);
	uint32_t n = net_config_slots(c), start = random_start(n);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t s = (start + i) % n;
		if (busy && busy(s))
			continue;
		snprintf(p, sizeof(p), "%s/%u", dir, s);
		if (faccessat(AT_FDCWD, p, F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT) {
			*slot = s;
			return 0;
		}
	}
	return abox_error_setx(err, ENOSPC,
			       "net: every address of the pool is taken (%u sandboxes with networking)", n);
}

int net_slot_record(const char *state_dir, uint32_t slot, const char *id, const char *policy_json,
		    abox_error *err)
{
	char dir[4096], p[4300];
	slots_dir(state_dir, dir, sizeof(dir), false, NULL);
	_cleanup_free_ char *text = slot_text(id, policy_json);
	if (!text)
		return abox_error_setx(err, EINVAL, "net: the policy to record is not JSON");
	snprintf(p, sizeof(p), "%s/%u", dir, slot);
	/* O_EXCL, then the record: a reader that comes in between finds it
	 * unreadable and treats the slot as taken by nobody it can serve
	 * yet (only netd uses it before the write is done); the folders
	 * exist but for the first sandbox */
	int r = write_record(p, O_CREAT | O_EXCL, text);
	if (r == -ENOENT) {
		if ((r = slots_dir(state_dir, dir, sizeof(dir), true, err)) < 0)
			return r;
		r = write_record(p, O_CREAT | O_EXCL, text);
	}
	if (r == -EEXIST)
		return abox_error_setx(err, EEXIST, "net: slot %u was taken meanwhile by another creator",
				       slot);
	return r < 0 ? abox_error_set(err, -r, "net: take slot %u", slot) : 0;
}

int net_slot_premake(const char *state_dir, char name[NET_SLOT_PREMADE_NAME], abox_error *err)
{
	char dir[4096], p[4300];
	int r = slots_dir(state_dir, dir, sizeof(dir), true, err);
	if (r < 0)
		return r;
	uint8_t rnd[8];
	if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
		return abox_error_set(err, errno, "net: getrandom");
	snprintf(name, NET_SLOT_PREMADE_NAME, "%s%02x%02x%02x%02x%02x%02x%02x%02x", NET_SLOT_PREMADE_PREFIX,
		 rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return abox_error_set(err, errno, "net: create '%s'", p);
	close(fd);
	return 0;
}

int net_slot_record_premade(const char *state_dir, const char *premade, uint32_t slot, const char *id,
			    const char *policy_json, abox_error *err)
{
	char dir[4096], from[4300], to[4300];
	slots_dir(state_dir, dir, sizeof(dir), false, NULL);
	_cleanup_free_ char *text = slot_text(id, policy_json);
	if (!text)
		return abox_error_setx(err, EINVAL, "net: the policy to record is not JSON");
	snprintf(from, sizeof(from), "%s/%s", dir, premade);
	snprintf(to, sizeof(to), "%s/%u", dir, slot);
	int r = write_record(from, O_TRUNC, text);
	if (r < 0) {
		unlink(from); /* used up either way */
		return abox_error_set(err, -r, "net: write '%s'", from);
	}
	/* whole, in one step, where no slot file was: as O_EXCL, without
	 * a reader ever meeting it empty */
	if (syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) < 0) {
		r = errno;
		unlink(from);
		return r == EEXIST
			       ? abox_error_setx(err, EEXIST,
						 "net: slot %u was taken meanwhile by another creator", slot)
			       : abox_error_set(err, r, "net: record slot %u", slot);
	}
	return 0;
}

void net_slot_premade_clear(const char *state_dir)
{
	char dir[4096];
	slots_dir(state_dir, dir, sizeof(dir), false, NULL);
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, NET_SLOT_PREMADE_PREFIX, strlen(NET_SLOT_PREMADE_PREFIX)))
			(void)unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
}

int net_slot_update(const char *state_dir, uint32_t slot, const char *id, const char *policy_json,
		    abox_error *err)
{
	char dir[4096], tmp[4300], p[4300];
	int r = slots_dir(state_dir, dir, sizeof(dir), false, err);
	if (r < 0 || (r = temp_file(dir, id, policy_json, tmp, sizeof(tmp), err)) < 0)
		return r;
	char holder[ABOX_ID_LEN + 1];
	if ((r = net_slot_read(state_dir, slot, holder, NULL, err)) < 0 || strcmp(holder, id)) {
		unlink(tmp);
		return r < 0 ? r : abox_error_setx(err, ESTALE, "net: slot %u is not sandbox %s's", slot, id);
	}
	snprintf(p, sizeof(p), "%s/%u", dir, slot);
	if (rename(tmp, p) < 0) {
		r = abox_error_set(err, errno, "net: record the policy of slot %u", slot);
		unlink(tmp);
	}
	return r;
}

void net_slot_release(const char *state_dir, uint32_t slot, const char *id)
{
	char holder[ABOX_ID_LEN + 1], p[4200];
	if (net_slot_read(state_dir, slot, holder, NULL, NULL) < 0 || strcmp(holder, id))
		return;
	snprintf(p, sizeof(p), "%s/net/slots/%u", state_dir, slot);
	(void)unlink(p);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

int net_slots_list(const char *state_dir, uint32_t **slots, size_t *n, abox_error *err)
{
	char dir[4096];
	slots_dir(state_dir, dir, sizeof(dir), false, NULL);
	*slots = NULL;
	*n = 0;
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : abox_error_set(err, errno, "net: open '%s'", dir);
	size_t cap = 0;
	struct dirent *de;
	int r = 0;
	while ((de = readdir(d))) {
		char *end;
		unsigned long v = strtoul(de->d_name, &end, 10);
		if (de->d_name[0] < '0' || de->d_name[0] > '9' || *end || v > UINT32_MAX)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			uint32_t *nv = realloc(*slots, cap * sizeof(**slots));
			if (!nv) {
				r = abox_error_set(err, ENOMEM, "net: list slots");
				break;
			}
			*slots = nv;
		}
		(*slots)[(*n)++] = (uint32_t)v;
	}
	closedir(d);
	if (r < 0) {
		free(*slots);
		*slots = NULL;
		*n = 0;
		return r;
	}
	if (*n)
		qsort(*slots, *n, sizeof(**slots), cmp_u32);
	return 0;
}
