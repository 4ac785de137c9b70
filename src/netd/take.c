/* netd/take.c — a creator's slot, taken by netd (see take.h). */
#include <json-c/json.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/json.h"
#include "net/slots.h"
#include "netd.h"
#include "take.h"

/* a policy of NET_POLICY_MAX_ENTRIES entries of NET_ENTRY_MAX each,
 * both lists, quoted, with room */
#define TAKE_POLICY_MAX (2 * NET_POLICY_MAX_ENTRIES * (NET_ENTRY_MAX + 3) + 4096)

/* The policy a take brings: inline, or (beyond what one message holds)
 * in a file whose fd came with it. Canonical JSON (parsed and printed
 * again), so the slot file holds what the library's own writer would. */
static char *take_policy(json_object *req, int fd, abox_error *err)
{
	_cleanup_free_ char *text = NULL;
	json_object *inline_pol = js_get(req, "policy", json_type_object);
	if (inline_pol) {
		const char *t = json_object_to_json_string_ext(inline_pol, JSON_C_TO_STRING_PLAIN);
		text = t ? strdup(t) : NULL;
	} else if (fd >= 0) {
		struct stat st;
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
		    st.st_size > TAKE_POLICY_MAX) {
			abox_error_setx(err, EINVAL, "take: the policy's file is not one of at most %d bytes",
					TAKE_POLICY_MAX);
			return NULL;
		}
		if ((text = malloc((size_t)st.st_size + 1)) &&
		    pread(fd, text, (size_t)st.st_size, 0) != (ssize_t)st.st_size) {
			abox_error_set(err, errno ? errno : EIO, "take: read the policy");
			return NULL;
		}
		if (text)
			text[st.st_size] = '\0';
	} else {
		abox_error_setx(err, EINVAL, "take needs the sandbox's policy");
		return NULL;
	}
	if (!text) {
		abox_error_set(err, ENOMEM, "take");
		return NULL;
	}
	struct net_policy p;
	if (net_policy_parse(text, &p, err) < 0)
		return NULL;
	char *canon = net_policy_json(&p);
	net_policy_free(&p);
	if (!canon)
		abox_error_set(err, ENOMEM, "take");
	return canon;
}

/* Slots picked for a take and not recorded yet: no other take gets one
 * of them meanwhile. */
static struct {
	pthread_mutex_t lock;
	uint32_t v[64];
	size_t n;
} picked = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* picked.lock held */
static bool is_picked(uint32_t slot)
{
	for (size_t i = 0; i < picked.n; i++)
		if (picked.v[i] == slot)
			return true;
	return false;
}

static void unpick(uint32_t slot)
{
	pthread_mutex_lock(&picked.lock);
	for (size_t i = 0; i < picked.n; i++)
		if (picked.v[i] == slot) {
			picked.v[i] = picked.v[--picked.n];
			break;
		}
	pthread_mutex_unlock(&picked.lock);
}

int take_slot(json_object *req, int fd, struct take *t, abox_error *err)
{
	memset(t, 0, sizeof(*t));
	const char *id = js_str(req, "id");
	if (!id || !id_ok(id))
		return abox_error_setx(err, EINVAL, "take needs a sandbox id");
	if (!(t->policy = take_policy(req, fd, err)))
		return -EINVAL;
	memcpy(t->id, id, sizeof(t->id));
	json_object *pv = js_get(req, "prefer", json_type_int);
	int64_t prefer = pv ? json_object_get_int64(pv) : -1;
	char holder[ABOX_ID_LEN + 1];
	if (prefer >= 0 && prefer < net_config_slots(&netd.cfg) &&
	    net_slot_read(netd.state_dir, (uint32_t)prefer, holder, NULL, NULL) == 0 && !strcmp(holder, id)) {
		/* a cold resume whose slot is still its own: the same
		 * address again, its policy refreshed now (rare: not worth
		 * a second way); one that lost it is picked a new one */
		t->slot = (uint32_t)prefer;
		int r = net_slot_update(netd.state_dir, t->slot, id, t->policy, err);
		free(t->policy);
		t->policy = NULL;
		return r;
	}
	pthread_mutex_lock(&picked.lock);
	int r = picked.n < ELEMENTSOF(picked.v)
			? net_slot_pick(netd.state_dir, &netd.cfg, is_picked, &t->slot, err)
			: abox_error_setx(err, EAGAIN, "take: %zu creates at once already", picked.n);
	if (r >= 0)
		picked.v[picked.n++] = t->slot;
	pthread_mutex_unlock(&picked.lock);
	if (r < 0) {
		free(t->policy);
		t->policy = NULL;
		return r;
	}
	t->record = true;
	return 0;
}

/* Files made ahead for the records (net_slot_premake). */
#define PREMADE_WANT 4
static struct {
	pthread_mutex_t lock;
	char v[PREMADE_WANT][NET_SLOT_PREMADE_NAME];
	size_t n;
} premade = { .lock = PTHREAD_MUTEX_INITIALIZER };

void take_premake(void)
{
	for (;;) {
		pthread_mutex_lock(&premade.lock);
		bool full = premade.n >= PREMADE_WANT;
		pthread_mutex_unlock(&premade.lock);
		char name[NET_SLOT_PREMADE_NAME];
		if (full || net_slot_premake(netd.state_dir, name, NULL) < 0)
			return;
		pthread_mutex_lock(&premade.lock);
		if (premade.n < PREMADE_WANT)
			memcpy(premade.v[premade.n++], name, sizeof(name));
		pthread_mutex_unlock(&premade.lock);
	}
}

static bool premade_take(char name[NET_SLOT_PREMADE_NAME])
{
	pthread_mutex_lock(&premade.lock);
	bool ok = premade.n > 0;
	if (ok)
		memcpy(name, premade.v[--premade.n], NET_SLOT_PREMADE_NAME);
	pthread_mutex_unlock(&premade.lock);
	return ok;
}

int take_record(struct take *t, bool answered, abox_error *err)
{
	if (!t->record)
		return 0;
	char pre[NET_SLOT_PREMADE_NAME];
	int r = !answered ? 0
		: premade_take(pre)
			? net_slot_record_premade(netd.state_dir, pre, t->slot, t->id, t->policy, err)
			: net_slot_record(netd.state_dir, t->slot, t->id, t->policy, err);
	take_done(t);
	return r;
}

void take_done(struct take *t)
{
	if (t->record)
		unpick(t->slot);
	t->record = false;
	free(t->policy);
	t->policy = NULL;
}
