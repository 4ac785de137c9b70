/* lifecycle.c — see lifecycle.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lifecycle.h"

static bool meta_is(const abox_sandbox_info *in, const char *key, const char *want)
{
	json_object *all = in->metadata_json ? json_tokener_parse(in->metadata_json) : NULL, *v;
	bool yes = all && json_object_is_type(all, json_type_object) && json_object_object_get_ex(all, key, &v) &&
		   json_object_is_type(v, json_type_string) && !strcmp(json_object_get_string(v), want);
	json_object_put(all);
	return yes;
}

int lifecycle_parse(json_object *body, bool auto_pause, bool *on, char *why, size_t n)
{
	json_object *ar, *en;
	*on = false;
	if (!json_object_object_get_ex(body, "autoResume", &ar) || json_object_is_type(ar, json_type_null))
		return 0;
	if (!json_object_is_type(ar, json_type_object) || !json_object_object_get_ex(ar, "enabled", &en) ||
	    !json_object_is_type(en, json_type_boolean)) {
		snprintf(why, n, "autoResume must be an object {\"enabled\": true|false}");
		return -1;
	}
	*on = json_object_get_boolean(en);
	if (*on && !auto_pause) {
		snprintf(why, n, "autoResume can only be enabled with autoPause (lifecycle.onTimeout 'pause')");
		return -1;
	}
	return 0;
}

bool lifecycle_auto_resume(const abox_sandbox_info *in)
{
	return meta_is(in, LIFECYCLE_AUTO_RESUME_KEY, "1");
}

json_object *lifecycle_json(const abox_sandbox_info *in)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "onTimeout",
			       json_object_new_string(meta_is(in, LIFECYCLE_ON_TIMEOUT_KEY, "pause") ? "pause" : "kill"));
	json_object_object_add(o, "autoResume", json_object_new_boolean(lifecycle_auto_resume(in)));
	return o;
}

int lifecycle_wake(abox_ctx *ctx, const abox_sandbox_info *in, abox_error *err)
{
	if (in->state != ABOX_STATE_PAUSED)
		return 0;
	if (!lifecycle_auto_resume(in))
		return -EAGAIN;
	abox_sandbox *sb = NULL;
	int r = abox_sandbox_connect(ctx, in->id, &sb, err);
	if (r >= 0) {
		/* the library's lock lets one resume through; the others find
		 * it running (EALREADY) and go on */
		r = abox_sandbox_resume(sb, err);
		if (r >= 0)
			r = abox_sandbox_set_timeout(sb, LIFECYCLE_RESUME_TIMEOUT_S * 1000, err);
		else if (r == -EALREADY)
			r = 0;
	}
	abox_sandbox_free(sb);
	return r;
}

enum MHD_Result lifecycle_paused_reply(struct request *rq)
{
	return reply_error(rq, 502,
			   "sandbox %s is paused: Sandbox.connect() resumes it (or create it with lifecycle.autoResume "
			   "to resume it on its next request)", rq->sandbox);
}

bool lifecycle_sandbox_gone(abox_ctx *ctx, const char *id)
{
	abox_sandbox_info in = { .version = ABOX_SANDBOX_INFO_VERSION };
	abox_error err = ABOX_ERROR_INIT;
	if (abox_sandbox_info_get(ctx, id, &in, &err) < 0)
		return true;
	bool gone = in.state != ABOX_STATE_RUNNING && in.state != ABOX_STATE_PAUSED;
	abox_sandbox_info_clear(&in);
	return gone;
}
