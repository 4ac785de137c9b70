/* netd/sbx.c — the sandboxes abox-netd serves, by slot, as their slot
 * files say (see netd.h). A slot file is re-read when its inode, size or
 * time changed (the library replaces it by rename on a policy change),
 * so the resolver and the proxy never act on a policy older than the
 * one recorded; the stat that tells costs ≈ 1 µs. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/clock.h"
#include "net/slots.h"
#include "netd.h"

struct netd netd = { .lock = PTHREAD_MUTEX_INITIALIZER };

void netd_log(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	fprintf(stderr, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ netd: %s\n", tm.tm_year + 1900, tm.tm_mon + 1,
		tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, buf);
}

bool netd_log_allowed(void)
{
	static int64_t second;
	static unsigned lines;
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&m);
	int64_t now = clock_mono_ms() / 1000;
	if (now != second) {
		second = now;
		lines = 0;
	}
	bool ok = ++lines <= 20;
	pthread_mutex_unlock(&m);
	return ok;
}

static ssize_t find(uint32_t slot)
{
	size_t lo = 0, hi = netd.nsbx;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (netd.sbx[mid]->slot < slot)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < netd.nsbx && netd.sbx[lo]->slot == slot ? (ssize_t)lo : -(ssize_t)lo - 1;
}

static void sbx_free(struct sbx *s)
{
	if (!s)
		return;
	net_policy_free(&s->policy);
	net_policy_free(&s->applied);
	free(s->learned_all);
	free(s);
}

struct sbx *sbx_known(uint32_t slot)
{
	ssize_t i = find(slot);
	return i >= 0 ? netd.sbx[i] : NULL;
}

void sbx_drop(uint32_t slot)
{
	ssize_t i = find(slot);
	if (i < 0)
		return;
	sbx_free(netd.sbx[i]);
	memmove(&netd.sbx[i], &netd.sbx[i + 1], (netd.nsbx - (size_t)i - 1) * sizeof(*netd.sbx));
	netd.nsbx--;
}

static int insert(struct sbx *s)
{
	ssize_t i = find(s->slot);
	if (i >= 0) {
		sbx_free(netd.sbx[i]);
		netd.sbx[i] = s;
		return 0;
	}
	size_t at = (size_t)(-i - 1);
	if (netd.nsbx == netd.cap) {
		size_t cap = netd.cap ? netd.cap * 2 : 64;
		struct sbx **v = realloc(netd.sbx, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		netd.sbx = v;
		netd.cap = cap;
	}
	memmove(&netd.sbx[at + 1], &netd.sbx[at], (netd.nsbx - at) * sizeof(*netd.sbx));
	netd.sbx[at] = s;
	netd.nsbx++;
	return 0;
}

/* The slot file's identity: what changes when the library rewrites it. */
static int slot_stat(uint32_t slot, struct stat *st)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/net/slots/%u", netd.state_dir, slot);
	return stat(p, st) < 0 ? -errno : 0;
}

static bool same_file(const struct sbx *s, const struct stat *st)
{
	return s->ino == st->st_ino && s->size == (uint64_t)st->st_size &&
	       s->mtime_ns == (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/* (Re)reads slot's file into a new entry, keeping what the old one knew
 * of the table and its counters. */
static struct sbx *load(uint32_t slot, const struct stat *st, struct sbx *old)
{
	char id[ABOX_ID_LEN + 1];
	_cleanup_free_ char *json = NULL;
	abox_error e = ABOX_ERROR_INIT;
	if (net_slot_read(netd.state_dir, slot, id, &json, &e) < 0)
		return NULL;
	struct sbx *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	if (net_policy_parse(json, &s->policy, &e) < 0) {
		netd_log("slot %u: %s", slot, e.msg);
		free(s);
		return NULL;
	}
	s->slot = slot;
	memcpy(s->id, id, sizeof(s->id));
	net_host_ifname(id, s->ifname);
	s->ino = st->st_ino;
	s->size = (uint64_t)st->st_size;
	s->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	if (old && !strcmp(old->id, id)) {
		/* the same sandbox with a new policy: what the table holds
		 * and the counters carry over */
		s->applied = old->applied;
		memset(&old->applied, 0, sizeof(old->applied));
		s->attached = old->attached;
		s->c = old->c;
		s->generation = old->generation + 1;
		/* the kernel's learned set is the same until the policy
		 * change forgets it */
		s->learned_all = old->learned_all;
		s->nlearned_all = old->nlearned_all;
		s->learned_all_cap = old->learned_all_cap;
		s->learned_known = old->learned_known;
		old->learned_all = NULL;
		old->nlearned_all = old->learned_all_cap = 0;
		old->learned_known = false;
		/* learned addresses are not carried: the new policy may not
		 * allow the names they were learned for */
	}
	return s;
}

struct sbx *sbx_get(uint32_t slot)
{
	struct stat st;
	ssize_t i = find(slot);
	struct sbx *cur = i >= 0 ? netd.sbx[i] : NULL;
	if (slot_stat(slot, &st) < 0) {
		/* freed: the library released it (after asking us to remove
		 * its elements, or a gc found its sandbox gone) */
		if (cur && !cur->attached)
			sbx_drop(slot);
		return NULL;
	}
	if (cur && same_file(cur, &st))
		return cur;
	struct sbx *s = load(slot, &st, cur);
	if (!s || insert(s) < 0) {
		sbx_free(s);
		return NULL;
	}
	return s;
}

struct sbx *sbx_by_addr(uint32_t addr)
{
	int64_t slot = net_slot_of(&netd.cfg, addr);
	/* only a sandbox's own address (.2), never the gateway or another
	 * address of its /30 */
	if (slot < 0 || net_slot_address(&netd.cfg, (uint32_t)slot) != addr)
		return NULL;
	return sbx_get((uint32_t)slot);
}

int sbx_load_all(abox_error *err)
{
	uint32_t *slots = NULL;
	size_t n = 0;
	int r = net_slots_list(netd.state_dir, &slots, &n, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		(void)sbx_get(slots[i]);
	free(slots);
	return 0;
}

/* Beyond this many, a policy change reads the set back instead. */
#define LEARNED_ALL_MAX 4096

static void learned_all_reset(struct sbx *s, bool known)
{
	free(s->learned_all);
	s->learned_all = NULL;
	s->nlearned_all = s->learned_all_cap = 0;
	s->learned_known = known;
}

static void learned_all_add(struct sbx *s, uint32_t addr)
{
	if (!s->learned_known)
		return;
	for (size_t k = 0; k < s->nlearned_all; k++)
		if (s->learned_all[k] == addr)
			return;
	if (s->nlearned_all == s->learned_all_cap) {
		size_t cap = s->learned_all_cap ? s->learned_all_cap * 2 : 16;
		uint32_t *v = cap <= LEARNED_ALL_MAX ? realloc(s->learned_all, cap * sizeof(*v)) : NULL;
		if (!v) {
			/* not known any more: the long way next time */
			learned_all_reset(s, false);
			return;
		}
		s->learned_all = v;
		s->learned_all_cap = cap;
	}
	s->learned_all[s->nlearned_all++] = addr;
}

void sbx_learned_none(struct sbx *s)
{
	learned_all_reset(s, true);
}

void sbx_learn(struct sbx *s, const uint32_t *addrs, size_t n, uint64_t ttl_ms)
{
	int64_t until = clock_mono_ms() + (int64_t)ttl_ms;
	for (size_t i = 0; i < n; i++) {
		learned_all_add(s, addrs[i]);
		size_t at = ELEMENTSOF(s->learned);
		for (size_t k = 0; k < ELEMENTSOF(s->learned); k++)
			if (s->learned[k] == addrs[i] && s->learned_until_ms[k])
				at = k;
		if (at == ELEMENTSOF(s->learned)) {
			at = s->learned_next++ % ELEMENTSOF(s->learned);
			s->learned[at] = addrs[i];
		}
		s->learned_until_ms[at] = until;
	}
}

bool sbx_learned(const struct sbx *s, uint32_t addr)
{
	int64_t now = clock_mono_ms();
	for (size_t k = 0; k < ELEMENTSOF(s->learned); k++)
		if (s->learned[k] == addr && s->learned_until_ms[k] > now)
			return true;
	return false;
}

void sbx_applied(struct sbx *s)
{
	net_policy_free(&s->applied);
	char *j = net_policy_json(&s->policy);
	if (!j || net_policy_parse(j, &s->applied, NULL) < 0)
		memset(&s->applied, 0, sizeof(s->applied));
	free(j);
	s->attached = true;
}
