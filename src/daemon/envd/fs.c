/* fs.c — filesystem.Filesystem over Connect (unary calls: Stat, MakeDir,
 * Move, Remove, ListDir, and the watcher calls, which watch.c serves).
 * The plain /files endpoint is files.c's and upload.c's. All done by
 * abox-init inside the sandbox as the requested user, so paths resolve
 * in the sandbox's own tree. Runs in aboxd. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/accounts.h"
#include "base/json.h"
#include "envd.h"
#include "meta.h"

static enum MHD_Result entry_reply(struct request *rq, sandbox_handle_t *h, const char *path)
{
	abox_file_info f;
	abox_error err = ABOX_ERROR_INIT;
	int r = abox_file_stat(h->sb, path, rq->user, &f, &err);
	if (r < 0)
		return envd_error(rq, -r, "%s", err.msg);
	abox_accounts *acc = NULL;
	(void)abox_accounts_read(h->sb, &acc, NULL); /* without: the fixed names */
	json_object *o = json_object_new_object(), *e = entry_json(&f, acc);
	abox_accounts_free(acc);
	meta_add_to_entry(h->sb, rq->user, e);
	json_object_object_add(o, "entry", e);
	return reply_json(rq, 200, o);
}

/* ListDir's depth: proto3 JSON gives a uint32 as a number or a string;
 * 0 or absent is 1. Anything else, or more than the limit, is refused
 * with the reason rather than turned into some depth. */
static int list_depth(json_object *b, unsigned *out, char *why, size_t n)
{
	json_object *d;
	if (!json_object_object_get_ex(b, "depth", &d) || json_object_is_type(d, json_type_null))
		return 0;
	int64_t v = -1;
	if (json_object_is_type(d, json_type_int)) {
		v = json_object_get_int64(d);
	} else if (json_object_is_type(d, json_type_string)) {
		const char *s = json_object_get_string(d);
		char *end;
		v = *s >= '0' && *s <= '9' ? strtoll(s, &end, 10) : -1;
		if (v >= 0 && *end)
			v = -1;
	}
	if (v < 0 || v > UINT32_MAX) {
		snprintf(why, n, "depth: a whole number from 0 to %u is expected", (unsigned)ABOX_FILE_LIST_MAX_DEPTH);
		return -EINVAL;
	}
	if (v > ABOX_FILE_LIST_MAX_DEPTH) {
		snprintf(why, n, "depth %lld is over the limit of %u", (long long)v, (unsigned)ABOX_FILE_LIST_MAX_DEPTH);
		return -EINVAL;
	}
	*out = v ? (unsigned)v : 1;
	return 0;
}

enum MHD_Result filesystem_rpc(struct request *rq, const char *method)
{
	if (!strcmp(method, "WatchDir"))
		return watch_dir(rq);
	if (!strcmp(method, "CreateWatcher") || !strcmp(method, "GetWatcherEvents") || !strcmp(method, "RemoveWatcher"))
		return watcher_rpc(rq, method);
	enum MHD_Result sent;
	json_object *b;
	sandbox_handle_t h = envd_read_open(rq, false, &b, &sent);
	if (!h.sb)
		return sent;
	abox_error err = ABOX_ERROR_INIT;
	const char *path = js_str(b, "path");
	enum MHD_Result q;
	int r = 0;
	if (!strcmp(method, "Stat") && path) {
		q = entry_reply(rq, &h, path);
	} else if (!strcmp(method, "MakeDir") && path) {
		int made = 0;
		r = abox_file_mkdir(h.sb, path, rq->user, &made, &err);
		q = r < 0 ? envd_error(rq, -r, "%s", err.msg)
		    : !made ? envd_error(rq, EEXIST, "'%s' already exists", path)
			    : entry_reply(rq, &h, path);
	} else if (!strcmp(method, "Move") && js_str(b, "source") && js_str(b, "destination")) {
		r = abox_file_move(h.sb, js_str(b, "source"), js_str(b, "destination"), rq->user, &err);
		q = r < 0 ? envd_error(rq, -r, "%s", err.msg) : entry_reply(rq, &h, js_str(b, "destination"));
	} else if (!strcmp(method, "Remove") && path) {
		r = abox_file_remove(h.sb, path, rq->user, &err);
		q = r < 0 ? envd_error(rq, -r, "%s", err.msg) : reply_json(rq, 200, json_object_new_object());
	} else if (!strcmp(method, "ListDir") && path) {
		unsigned depth = 1;
		char why[160];
		if (list_depth(b, &depth, why, sizeof(why)) < 0) {
			q = envd_error(rq, EINVAL, "%s", why);
		} else {
			q = list_dir_stream(rq, h, path, depth); /* streamed; it owns h now */
			h = (sandbox_handle_t){ 0 };
		}
	} else if (strcmp(method, "Stat") && strcmp(method, "MakeDir") && strcmp(method, "Move") &&
		   strcmp(method, "Remove") && strcmp(method, "ListDir")) {
		q = envd_error(rq, EOPNOTSUPP, "no method filesystem.Filesystem/%s (yet)", method);
	} else {
		q = envd_error(rq, EINVAL, "missing path (or source/destination)");
	}
	envd_close(&h);
	json_object_put(b);
	return q;
}
