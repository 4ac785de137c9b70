/* config.c — aboxd's configuration: the defaults, the config file
 * (JSON, default /etc/abox/aboxd.json, optional) and the API key made on
 * first start.
 *
 * The file may name "stateDir", "listen", "port", "apiKeys" (array),
 * "domain", "idleTimeoutSeconds" (60), "accessLog" (a file, or "-" for
 * stderr), "unixSocket" (also serve on that path),
 * "adminListen"/"adminPort" (Prometheus /metrics, 127.0.0.1:49990; port 0
 * for none), "maxConnections" (1000), "maxConnectionsPerClient" (64),
 * "headerTimeoutSeconds" (10; see conns.c), "defaults" {"memoryMB",
 * "diskMB", "cpus"}, "limits" (admission.h; kept as given, for
 * admission_configure) and "network" {"default": "open" | "none"} (what
 * a create without network settings gets; E2B's is open; the host's side
 * of egress is the state folder's network.json, docs/networking.md),
 * "codeInterpreterTemplate" (the template served as E2B's
 * code-interpreter-v1: "code-interpreter", built from
 * rootfs/code-interpreter.recipe; "host" to serve the host template
 * instead), "codeInterpreterHeadStart" (true: such a sandbox's default
 * python context starts at its create). With no key configured, the key in
 * <state>/aboxd.key is used, made on first start (e2b_ and 40 hex
 * digits, the shape the SDKs check; mode 0600) and printed once.
 * Command-line options and the environment are main.c's. Runs in aboxd,
 * before it serves. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "ttags.h"
#include "daemon.h"

struct daemon_config daemon_cfg = {
	.port = 49982,
	.memory_bytes = 512ull << 20,
	.disk_bytes = 1ull << 30,
	.cpu_millis = 1000,
	.idle_timeout = 60,
	.admin_port = 49990,
	.max_conns = 1000,
	.per_client_conns = 64,
	.head_timeout = 10,
	.net_default = ABOX_NET_OPEN,
	.ci_head_start = true,
};

int config_load(const char *path, bool explicit)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		if (!explicit && errno == ENOENT)
			return 0;
		fprintf(stderr, "aboxd: config '%s': %s\n", path, strerror(errno));
		return -1;
	}
	char buf[1 << 16];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	json_object *o = json_tokener_parse(buf), *v;
	if (!o || !json_object_is_type(o, json_type_object)) {
		fprintf(stderr, "aboxd: config '%s' is not a JSON object\n", path);
		json_object_put(o);
		return -1;
	}
	int r = 0;
	json_object_object_foreach(o, k, val) {
		if (!strcmp(k, "stateDir") && json_object_is_type(val, json_type_string))
			daemon_cfg.state_dir = strdup(json_object_get_string(val));
		else if (!strcmp(k, "listen") && json_object_is_type(val, json_type_string))
			daemon_cfg.listen = strdup(json_object_get_string(val));
		else if (!strcmp(k, "port") && json_object_is_type(val, json_type_int))
			daemon_cfg.port = (uint16_t)json_object_get_int(val);
		else if (!strcmp(k, "unixSocket") && json_object_is_type(val, json_type_string))
			daemon_cfg.unix_path = strdup(json_object_get_string(val));
		else if (!strcmp(k, "accessLog") && json_object_is_type(val, json_type_string))
			daemon_cfg.access_log_path = strdup(json_object_get_string(val));
		else if (!strcmp(k, "adminListen") && json_object_is_type(val, json_type_string))
			daemon_cfg.admin_listen = strdup(json_object_get_string(val));
		else if (!strcmp(k, "adminPort") && json_object_is_type(val, json_type_int))
			daemon_cfg.admin_port = json_object_get_int(val);
		else if (!strcmp(k, "network") && json_object_is_type(val, json_type_object)) {
			json_object *d;
			const char *m = json_object_object_get_ex(val, "default", &d)
						? json_object_get_string(d)
						: "open";
			if (!strcmp(m, "open"))
				daemon_cfg.net_default = ABOX_NET_OPEN;
			else if (!strcmp(m, "none"))
				daemon_cfg.net_default = ABOX_NET_NONE;
			else {
				fprintf(stderr,
					"aboxd: config '%s': network.default must be \"open\" or \"none\"\n",
					path);
				r = -1;
			}
		} else if (!strcmp(k, "idleTimeoutSeconds") && json_object_is_type(val, json_type_int))
			daemon_cfg.idle_timeout = (unsigned)json_object_get_int(val);
		else if (!strcmp(k, "maxConnections") && json_object_is_type(val, json_type_int) &&
			 json_object_get_int(val) >= 10)
			daemon_cfg.max_conns = (unsigned)json_object_get_int(val);
		else if (!strcmp(k, "maxConnectionsPerClient") && json_object_is_type(val, json_type_int) &&
			 json_object_get_int(val) >= 0)
			daemon_cfg.per_client_conns = (unsigned)json_object_get_int(val);
		else if (!strcmp(k, "headerTimeoutSeconds") && json_object_is_type(val, json_type_int) &&
			 json_object_get_int(val) >= 1)
			daemon_cfg.head_timeout = (unsigned)json_object_get_int(val);
		else if (!strcmp(k, "codeInterpreterTemplate") &&
			 json_object_is_type(val, json_type_string) && json_object_get_string_len(val) > 0)
			daemon_cfg.ci_template = strdup(json_object_get_string(val));
		else if (!strcmp(k, "codeInterpreterHeadStart") &&
			 json_object_is_type(val, json_type_boolean))
			daemon_cfg.ci_head_start = json_object_get_boolean(val);
		else if (!strcmp(k, "domain") && json_object_is_type(val, json_type_string))
			daemon_cfg.domain = strdup(json_object_get_string(val));
		else if (!strcmp(k, "apiKeys") && json_object_is_type(val, json_type_array)) {
			size_t c = json_object_array_length(val);
			daemon_cfg.keys = calloc(c + 1, sizeof(char *));
			for (size_t i = 0; daemon_cfg.keys && i < c; i++)
				daemon_cfg.keys[i] = strdup(json_object_get_string(json_object_array_get_idx(val, i)));
		} else if (!strcmp(k, "limits")) {
			/* read by admission.c, which main.c hands it to */
			json_object_put(daemon_cfg.limits);
			daemon_cfg.limits = json_object_get(val);
		} else if (!strcmp(k, "defaults") && json_object_is_type(val, json_type_object)) {
			if (json_object_object_get_ex(val, "memoryMB", &v))
				daemon_cfg.memory_bytes = (uint64_t)json_object_get_int64(v) << 20;
			if (json_object_object_get_ex(val, "diskMB", &v))
				daemon_cfg.disk_bytes = (uint64_t)json_object_get_int64(v) << 20;
			if (json_object_object_get_ex(val, "cpus", &v))
				daemon_cfg.cpu_millis = (uint32_t)(json_object_get_double(v) * 1000);
		} else {
			fprintf(stderr, "aboxd: config '%s': unknown or mistyped key '%s'\n", path, k);
			r = -1;
		}
	}
	json_object_put(o);
	return r;
}

const char *daemon_template_of(const char *want)
{
	/* "name:tag" and "name:BUILD_ID" (the Template SDK's): the template
	 * that tag is kept in (ttags.c) */
	static __thread char tagged[64];
	const char *colon = strchr(want, ':');
	if (colon && colon != want && (size_t)(colon - want) < 64 && !strchr(colon + 1, ':') &&
	    !strchr(want, '/')) {
		char name[64];
		snprintf(name, sizeof(name), "%.*s", (int)(colon - want), want);
		want = tt_resolve(name, colon + 1, tagged, sizeof(tagged));
	}
	if (!strcmp(want, "base"))
		return "host";
	if (!strcmp(want, "code-interpreter-v1"))
		return daemon_cfg.ci_template ? daemon_cfg.ci_template : "code-interpreter";
	return want;
}

/* The key of <state>/aboxd.key, made on first start. */
int config_default_key(void)
{
	const char *state = daemon_cfg.state_dir ? daemon_cfg.state_dir : getenv("ABOX_ROOT");
	if (!state || !*state)
		state = "/var/lib/abox";
	char path[4096];
	snprintf(path, sizeof(path), "%s/aboxd.key", state);
	char key[64] = "";
	FILE *f = fopen(path, "re");
	if (f) {
		if (!fgets(key, sizeof(key), f))
			key[0] = '\0';
		fclose(f);
		key[strcspn(key, "\n")] = '\0';
	}
	if (!key[0]) {
		unsigned char raw[20];
		if (random_bytes(raw, sizeof(raw)) < 0) {
			fprintf(stderr, "aboxd: no randomness for an API key\n");
			return -1;
		}
		strcpy(key, "e2b_");
		for (int i = 0; i < 20; i++)
			snprintf(key + 4 + 2 * i, 3, "%02x", raw[i]);
		mkdir(state, 0700);
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0 || dprintf(fd, "%s\n", key) < 0 || fsync(fd) < 0) {
			fprintf(stderr, "aboxd: store the API key in '%s': %s\n", path, strerror(errno));
			if (fd >= 0)
				close(fd);
			return -1;
		}
		close(fd);
		fprintf(stderr, "aboxd: created the API key %s (kept in %s, mode 0600)\n", key, path);
	}
	daemon_cfg.keys = calloc(2, sizeof(char *));
	if (!daemon_cfg.keys || !(daemon_cfg.keys[0] = strdup(key)))
		return -1;
	return 0;
}
