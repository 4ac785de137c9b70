/* remote/stream.c — decoding a Connect server stream of process events:
 * envelopes (flag byte, 4-byte big-endian length, JSON) cut from a byte
 * stream that arrives in any pieces, and each event turned into the frame
 * abox-init would have sent. Pure functions over bytes: what a daemon (or
 * whatever answers at its address) sends is untrusted, and
 * tests/fuzz/fuzz_remote.c feeds them garbage. Runs in the caller's
 * process. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/base64.h"
#include "proto/messages.h"
#include "remote/stream.h"

static int signal_of(const char *status)
{
	/* "signal: killed", "signal: Terminated", ... (Go's ProcessState) */
	if (!status || strncmp(status, "signal: ", 8) != 0)
		return SIGKILL;
	const char *s = status + 8;
	if (!strcmp(s, "killed"))
		return SIGKILL;
	for (int i = 1; i < 65; i++) {
		const char *n = strsignal(i);
		if (n && !strcmp(n, s))
			return i;
	}
	return SIGKILL;
}

int remote_event_frame(json_object *ev, uint32_t req, int *pid, bool *end, struct proto_msg *m)
{
	json_object *e, *v;
	*end = false;
	if (!json_object_object_get_ex(ev, "event", &e) || !json_object_is_type(e, json_type_object))
		return 0;
	if (json_object_object_get_ex(e, "start", &v) && json_object_is_type(v, json_type_object)) {
		int p = js_int(v, "pid", 0);
		if (p <= 0)
			return -EPROTO;
		*pid = p;
		proto_msg_init(m, MSG_EV_START, req);
		proto_put_u64(m, F_PID, (uint64_t)p);
		return 1;
	}
	if (json_object_object_get_ex(e, "data", &v) && json_object_is_type(v, json_type_object)) {
		static const struct {
			const char *key;
			uint16_t type;
		} kinds[] = { { "stdout", MSG_EV_STDOUT }, { "stderr", MSG_EV_STDERR }, { "pty", MSG_EV_PTY } };
		for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
			json_object *d;
			if (!json_object_object_get_ex(v, kinds[i].key, &d))
				continue;
			unsigned char *raw = NULL;
			size_t n = 0;
			if (!json_object_is_type(d, json_type_string) || base64_decode(json_object_get_string(d), &raw, &n) < 0)
				return -EPROTO;
			if (n > PROTO_MAX_PAYLOAD - 64) {
				/* aboxd sends output in pieces of at most 64 KiB; one
				 * that does not fit a frame is not from it */
				free(raw);
				return -EPROTO;
			}
			proto_msg_init(m, kinds[i].type, req);
			proto_put_u64(m, F_PID, (uint64_t)*pid);
			proto_put_bytes(m, F_DATA, raw, n);
			free(raw);
			return 1;
		}
		return 0;
	}
	if (json_object_object_get_ex(e, "end", &v) && json_object_is_type(v, json_type_object)) {
		json_object *x;
		int code = js_int(v, "exitCode", 0);
		bool exited = !json_object_object_get_ex(v, "exited", &x) || json_object_get_boolean(x);
		const char *status = json_object_object_get_ex(v, "status", &x) && json_object_is_type(x, json_type_string)
					     ? json_object_get_string(x)
					     : NULL;
		int sig = exited ? 0 : signal_of(status);
		proto_msg_init(m, MSG_EV_END, req);
		proto_put_u64(m, F_PID, (uint64_t)*pid);
		proto_put_i64(m, F_EXIT_CODE, sig ? 128 + sig : code);
		proto_put_u64(m, F_SIGNAL, (uint64_t)sig);
		if (json_object_object_get_ex(v, "error", &x) && json_object_is_type(x, json_type_string)) {
			char msg[1024]; /* bounded: the frame has room for it */
			snprintf(msg, sizeof(msg), "%s", json_object_get_string(x));
			proto_put_str(m, F_MESSAGE, msg);
		}
		*end = true;
		return 1;
	}
	return 0; /* keepalive, or an event this version does not know */
}

bool remote_end_error(json_object *o, const char **code, const char **msg)
{
	json_object *e, *v;
	*code = NULL;
	*msg = "the stream failed";
	if (!o || !json_object_object_get_ex(o, "error", &e) || !json_object_is_type(e, json_type_object))
		return false;
	if (json_object_object_get_ex(e, "code", &v) && json_object_is_type(v, json_type_string))
		*code = json_object_get_string(v);
	if (json_object_object_get_ex(e, "message", &v) && json_object_is_type(v, json_type_string))
		*msg = json_object_get_string(v);
	return true;
}

int remote_watch_frame(json_object *ev, uint32_t req, const char *root, bool *started, struct proto_msg *m)
{
	static const struct {
		const char *name;
		uint64_t type;
	} types[] = { { "EVENT_TYPE_CREATE", FS_EV_CREATE }, { "EVENT_TYPE_WRITE", FS_EV_WRITE },
		      { "EVENT_TYPE_REMOVE", FS_EV_REMOVE }, { "EVENT_TYPE_RENAME", FS_EV_RENAME },
		      { "EVENT_TYPE_CHMOD", FS_EV_CHMOD } };
	json_object *e = ev, *v, *x;
	*started = false;
	/* WatchDirResponse's oneof sits at the top level in proto3 JSON */
	if (!json_object_is_type(ev, json_type_object))
		return 0;
	if (json_object_object_get_ex(e, "start", &v)) {
		*started = true;
		return 0;
	}
	if (!json_object_object_get_ex(e, "filesystem", &v) || !json_object_is_type(v, json_type_object))
		return 0; /* keepalive, or unknown */
	if (!json_object_object_get_ex(v, "name", &x) || !json_object_is_type(x, json_type_string))
		return -EPROTO;
	const char *name = json_object_get_string(x);
	const char *tname = json_object_object_get_ex(v, "type", &x) && json_object_is_type(x, json_type_string)
				    ? json_object_get_string(x)
				    : "";
	uint64_t type = 0;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcmp(tname, types[i].name))
			type = types[i].type;
	if (!type)
		return 0; /* a kind this version does not know */
	/* the daemon names entries relative to the watched folder; the
	 * library's events carry the whole path, as for a local watch */
	char path[4096];
	size_t rl = strlen(root);
	while (rl > 1 && root[rl - 1] == '/')
		rl--;
	int n = *name ? snprintf(path, sizeof(path), "%.*s/%s", (int)rl, root, name)
		      : snprintf(path, sizeof(path), "%.*s", (int)rl, root);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -EPROTO;
	proto_msg_init(m, MSG_EV_FS_EVENT, req);
	proto_put_str(m, F_PATH, path);
	proto_put_u64(m, F_TYPE, type);
	return 1;
}
