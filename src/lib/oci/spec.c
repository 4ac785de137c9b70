/* oci/spec.c — see spec.h: the top level, root, process, mounts, hooks
 * and annotations (linux.* is in spec_linux.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "base/json.h"
#include "caps/caps.h"
#include "oci/spec.h"
#include "oci/spec_int.h"

int oci_fail(struct oci_pc *c, const char *path, const char *fmt, ...)
{
	char why[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return abox_error_setx(c->err, EINVAL, "%s: %s: %s", c->source, path, why);
}

void oci_pathf(char *out, size_t n, const char *fmt, ...)
{
	/* a path cut short in an error message is fine; vsnprintf keeps
	 * the compiler from flagging every such cut */
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out, n, fmt, ap);
	va_end(ap);
}

/* v at path must be of type t (what: its description in the error) */
int oci_want(struct oci_pc *c, json_object *v, json_type t, const char *path, const char *what)
{
	if (json_object_is_type(v, t))
		return 0;
	return oci_fail(c, path, "must be %s", what);
}

int oci_str(struct oci_pc *c, json_object *v, const char *path, bool empty_ok, char **out)
{
	if (oci_want(c, v, json_type_string, path, "a string") < 0)
		return -EINVAL;
	const char *s = json_object_get_string(v);
	size_t n = (size_t)json_object_get_string_len(v);
	if (strlen(s) != n)
		return oci_fail(c, path, "holds a NUL byte");
	if (!n && !empty_ok)
		return oci_fail(c, path, "must not be empty");
	if (n > OCI_MAX_STR)
		return oci_fail(c, path, "is longer than %d bytes", OCI_MAX_STR);
	if (!(*out = strdup(s)))
		return abox_error_set(c->err, ENOMEM, "%s", c->source);
	return 0;
}

int oci_uint(struct oci_pc *c, json_object *v, const char *path, uint64_t max, uint64_t *out)
{
	if (!json_object_is_type(v, json_type_int))
		return oci_fail(c, path, "must be a whole number");
	errno = 0;
	int64_t i = json_object_get_int64(v);
	uint64_t u = json_object_get_uint64(v);
	/* json-c keeps numbers above INT64_MAX as unsigned */
	if (i < 0 && u == 0)
		return oci_fail(c, path, "must not be negative");
	if (u > max)
		return oci_fail(c, path, "must be at most %llu", (unsigned long long)max);
	*out = u;
	return 0;
}

int oci_int(struct oci_pc *c, json_object *v, const char *path, int64_t min, int64_t max, int64_t *out)
{
	if (!json_object_is_type(v, json_type_int))
		return oci_fail(c, path, "must be a whole number");
	int64_t i = json_object_get_int64(v);
	if (i < min || i > max || (i == INT64_MAX && json_object_get_uint64(v) > (uint64_t)INT64_MAX))
		return oci_fail(c, path, "must be %lld to %lld", (long long)min, (long long)max);
	*out = i;
	return 0;
}

int oci_strv(struct oci_pc *c, json_object *v, const char *path, size_t max, bool empty_ok, char ***out)
{
	if (oci_want(c, v, json_type_array, path, "an array of strings") < 0)
		return -EINVAL;
	size_t n = json_object_array_length(v);
	if (n > max)
		return oci_fail(c, path, "has more than %zu entries", max);
	char **s = calloc(n + 1, sizeof(char *));
	if (!s)
		return abox_error_set(c->err, ENOMEM, "%s", c->source);
	for (size_t i = 0; i < n; i++) {
		char p[OCI_PATH];
		oci_pathf(p, sizeof(p), "%s[%zu]", path, i);
		if (oci_str(c, json_object_array_get_idx(v, i), p, empty_ok, &s[i]) < 0) {
			strv_free(s);
			return -EINVAL;
		}
	}
	*out = s;
	return 0;
}

/* an object's string values as "key=value" (annotations, sysctl) */
int oci_kv(struct oci_pc *c, json_object *v, const char *path, char ***out)
{
	if (oci_want(c, v, json_type_object, path, "an object of strings") < 0)
		return -EINVAL;
	size_t n = (size_t)json_object_object_length(v), k = 0;
	if (n > 4096)
		return oci_fail(c, path, "has more than 4096 entries");
	char **s = calloc(n + 1, sizeof(char *));
	if (!s)
		return abox_error_set(c->err, ENOMEM, "%s", c->source);
	json_object_object_foreach(v, key, val) {
		char p[OCI_PATH], *text = NULL;
		oci_pathf(p, sizeof(p), "%s.%.*s", path, 200, key);
		if (!*key || strchr(key, '=') || oci_str(c, val, p, true, &text) < 0 ||
		    asprintf(&s[k++], "%s=%s", key, text) < 0) {
			if (!*key || strchr(key, '='))
				oci_fail(c, p, "a key must be non-empty and without '='");
			free(text);
			strv_free(s);
			return -EINVAL;
		}
		free(text);
	}
	*out = s;
	return 0;
}

static int parse_caps(struct oci_pc *c, json_object *v, const char *path, uint64_t *out)
{
	if (oci_want(c, v, json_type_array, path, "an array of capability names") < 0)
		return -EINVAL;
	*out = 0;
	for (size_t i = 0; i < json_object_array_length(v); i++) {
		json_object *e = json_object_array_get_idx(v, i);
		const char *name = json_object_is_type(e, json_type_string) ? json_object_get_string(e) : "";
		int cap = -1;
		for (int k = 0; k < 64 && cap < 0; k++)
			if (caps_name(k) && !strcmp(caps_name(k), name))
				cap = k;
		if (cap < 0) {
			char p[OCI_PATH];
			oci_pathf(p, sizeof(p), "%s[%zu]", path, i);
			return oci_fail(c, p, "unknown capability '%.*s'", 64, name);
		}
		*out |= 1ull << cap;
	}
	return 0;
}

static const struct {
	const char *name;
	int res;
} rlimits[] = {
	{ "RLIMIT_AS", RLIMIT_AS },
	{ "RLIMIT_CORE", RLIMIT_CORE },
	{ "RLIMIT_CPU", RLIMIT_CPU },
	{ "RLIMIT_DATA", RLIMIT_DATA },
	{ "RLIMIT_FSIZE", RLIMIT_FSIZE },
	{ "RLIMIT_LOCKS", RLIMIT_LOCKS },
	{ "RLIMIT_MEMLOCK", RLIMIT_MEMLOCK },
	{ "RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE },
	{ "RLIMIT_NICE", RLIMIT_NICE },
	{ "RLIMIT_NOFILE", RLIMIT_NOFILE },
	{ "RLIMIT_NPROC", RLIMIT_NPROC },
	{ "RLIMIT_RSS", RLIMIT_RSS },
	{ "RLIMIT_RTPRIO", RLIMIT_RTPRIO },
	{ "RLIMIT_RTTIME", RLIMIT_RTTIME },
	{ "RLIMIT_SIGPENDING", RLIMIT_SIGPENDING },
	{ "RLIMIT_STACK", RLIMIT_STACK },
};

static int parse_rlimits(struct oci_pc *c, json_object *v, struct oci_process *p)
{
	if (oci_want(c, v, json_type_array, "process.rlimits", "an array") < 0)
		return -EINVAL;
	size_t n = json_object_array_length(v);
	if (n > 64)
		return oci_fail(c, "process.rlimits", "has more than 64 entries");
	if (!(p->rlimits = calloc(n ? n : 1, sizeof(*p->rlimits))))
		return abox_error_set(c->err, ENOMEM, "%s", c->source);
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(v, i);
		char path[OCI_PATH];
		oci_pathf(path, sizeof(path), "process.rlimits[%zu]", i);
		if (oci_want(c, e, json_type_object, path, "an object") < 0)
			return -EINVAL;
		const char *type = js_str(e, "type");
		struct oci_rlimit *r = &p->rlimits[i];
		r->resource = -1;
		for (size_t k = 0; type && k < sizeof(rlimits) / sizeof(rlimits[0]); k++)
			if (!strcmp(rlimits[k].name, type))
				r->resource = rlimits[k].res;
		if (r->resource < 0)
			return oci_fail(c, path, "unknown rlimit type '%.*s'", 64, type ? type : "");
		for (size_t k = 0; k < i; k++)
			if (p->rlimits[k].resource == r->resource)
				return oci_fail(c, path, "rlimit %s is given twice", type);
		json_object *hard = NULL, *soft = NULL;
		json_object_object_get_ex(e, "hard", &hard);
		json_object_object_get_ex(e, "soft", &soft);
		char hp[OCI_PATH + 8], sp[OCI_PATH + 8];
		oci_pathf(hp, sizeof(hp), "%s.hard", path);
		oci_pathf(sp, sizeof(sp), "%s.soft", path);
		if (oci_uint(c, hard, hp, UINT64_MAX, &r->hard) < 0 ||
		    oci_uint(c, soft, sp, UINT64_MAX, &r->soft) < 0)
			return -EINVAL;
		if (r->soft > r->hard)
			return oci_fail(c, path, "soft limit above the hard one");
		p->nrlimits++;
	}
	return 0;
}

static int parse_user(struct oci_pc *c, json_object *u, struct oci_process *p)
{
	json_object *v;
	uint64_t x;
	if (oci_want(c, u, json_type_object, "process.user", "an object") < 0)
		return -EINVAL;
	if (js_get(u, "username", json_type_string))
		return oci_fail(c, "process.user.username", "is for Windows; give uid and gid");
	if (!json_object_object_get_ex(u, "uid", &v) ||
	    oci_uint(c, v, "process.user.uid", UINT32_MAX - 1, &x) < 0)
		return v ? -EINVAL : oci_fail(c, "process.user.uid", "is required");
	p->uid = (uid_t)x;
	if (!json_object_object_get_ex(u, "gid", &v) ||
	    oci_uint(c, v, "process.user.gid", UINT32_MAX - 1, &x) < 0)
		return v ? -EINVAL : oci_fail(c, "process.user.gid", "is required");
	p->gid = (gid_t)x;
	if (json_object_object_get_ex(u, "umask", &v)) {
		if (oci_uint(c, v, "process.user.umask", 0777, &x) < 0)
			return -EINVAL;
		p->has_umask = true;
		p->umask = (uint32_t)x;
	}
	if (!json_object_object_get_ex(u, "additionalGids", &v))
		return 0;
	if (oci_want(c, v, json_type_array, "process.user.additionalGids", "an array of numbers") < 0)
		return -EINVAL;
	size_t n = json_object_array_length(v);
	if (n > 65536)
		return oci_fail(c, "process.user.additionalGids", "has more than 65536 entries");
	if (!(p->additional_gids = calloc(n ? n : 1, sizeof(gid_t))))
		return abox_error_set(c->err, ENOMEM, "%s", c->source);
	for (size_t i = 0; i < n; i++) {
		char path[OCI_PATH];
		oci_pathf(path, sizeof(path), "process.user.additionalGids[%zu]", i);
		if (oci_uint(c, json_object_array_get_idx(v, i), path, UINT32_MAX - 1, &x) < 0)
			return -EINVAL;
		p->additional_gids[p->nadditional_gids++] = (gid_t)x;
	}
	return 0;
}

static int parse_process(struct oci_pc *c, json_object *o, struct oci_process *p)
{
	json_object *v;
	uint64_t x;
	int64_t i;
	if (oci_want(c, o, json_type_object, "process", "an object") < 0)
		return -EINVAL;
	p->present = true;
	if (json_object_object_get_ex(o, "terminal", &v)) {
		if (oci_want(c, v, json_type_boolean, "process.terminal", "true or false") < 0)
			return -EINVAL;
		p->terminal = json_object_get_boolean(v);
	}
	if (json_object_object_get_ex(o, "consoleSize", &v)) {
		json_object *h = NULL, *w = NULL;
		if (oci_want(c, v, json_type_object, "process.consoleSize", "an object") < 0)
			return -EINVAL;
		json_object_object_get_ex(v, "height", &h);
		json_object_object_get_ex(v, "width", &w);
		if (oci_uint(c, h, "process.consoleSize.height", 65535, &x) < 0)
			return -EINVAL;
		p->console_height = (unsigned)x;
		if (oci_uint(c, w, "process.consoleSize.width", 65535, &x) < 0)
			return -EINVAL;
		p->console_width = (unsigned)x;
	}
	if (!json_object_object_get_ex(o, "user", &v))
		return oci_fail(c, "process.user", "is required");
	if (parse_user(c, v, p) < 0)
		return -EINVAL;
	if (!json_object_object_get_ex(o, "args", &v))
		return oci_fail(c, "process.args", "is required");
	if (oci_strv(c, v, "process.args", OCI_MAX_ARGS, true, &p->args) < 0)
		return -EINVAL;
	if (!p->args[0] || !p->args[0][0])
		return oci_fail(c, "process.args", "must name a program");
	if (json_object_object_get_ex(o, "commandLine", &v))
		return oci_fail(c, "process.commandLine", "is for Windows; give args");
	if (json_object_object_get_ex(o, "env", &v)) {
		if (oci_strv(c, v, "process.env", OCI_MAX_ARGS, false, &p->env) < 0)
			return -EINVAL;
		for (size_t k = 0; p->env[k]; k++)
			if (!strchr(p->env[k], '=') || p->env[k][0] == '=')
				return oci_fail(c, "process.env", "entry %zu is not NAME=VALUE", k);
	}
	if (!json_object_object_get_ex(o, "cwd", &v))
		return oci_fail(c, "process.cwd", "is required");
	if (oci_str(c, v, "process.cwd", false, &p->cwd) < 0)
		return -EINVAL;
	if (p->cwd[0] != '/')
		return oci_fail(c, "process.cwd", "must be an absolute path");
	if (json_object_object_get_ex(o, "capabilities", &v)) {
		p->has_capabilities = true;
		static const char *const sets[] = { "bounding", "effective", "inheritable", "permitted",
						    "ambient" };
		uint64_t *dst[] = { &p->cap_bounding, &p->cap_effective, &p->cap_inheritable,
				    &p->cap_permitted, &p->cap_ambient };
		if (oci_want(c, v, json_type_object, "process.capabilities", "an object") < 0)
			return -EINVAL;
		for (size_t k = 0; k < 5; k++) {
			json_object *set;
			char path[OCI_PATH];
			oci_pathf(path, sizeof(path), "process.capabilities.%s", sets[k]);
			if (json_object_object_get_ex(v, sets[k], &set) &&
			    parse_caps(c, set, path, dst[k]) < 0)
				return -EINVAL;
		}
	}
	if (json_object_object_get_ex(o, "rlimits", &v) && parse_rlimits(c, v, p) < 0)
		return -EINVAL;
	if (json_object_object_get_ex(o, "noNewPrivileges", &v)) {
		if (oci_want(c, v, json_type_boolean, "process.noNewPrivileges", "true or false") < 0)
			return -EINVAL;
		p->no_new_privileges = json_object_get_boolean(v);
	}
	if (json_object_object_get_ex(o, "oomScoreAdj", &v)) {
		if (oci_int(c, v, "process.oomScoreAdj", -1000, 1000, &i) < 0)
			return -EINVAL;
		p->has_oom_score_adj = true;
		p->oom_score_adj = (int)i;
	}
	if (json_object_object_get_ex(o, "apparmorProfile", &v) && !json_object_is_type(v, json_type_null) &&
	    oci_str(c, v, "process.apparmorProfile", true, &p->apparmor_profile) < 0)
		return -EINVAL;
	/* what abox has no way to apply is refused rather than dropped */
	static const char *const refused[] = { "selinuxLabel", "ioPriority", "scheduler", "execCPUAffinity" };
	for (size_t k = 0; k < sizeof(refused) / sizeof(refused[0]); k++) {
		json_object *r;
		if (json_object_object_get_ex(o, refused[k], &r) && !json_object_is_type(r, json_type_null) &&
		    !(json_object_is_type(r, json_type_string) && !json_object_get_string_len(r))) {
			char path[OCI_PATH];
			oci_pathf(path, sizeof(path), "process.%s", refused[k]);
			return oci_fail(c, path, "is not supported by abox");
		}
	}
	return 0;
}

static int parse_hooks(struct oci_pc *c, json_object *o, struct oci_spec *s)
{
	static const char *const kinds[OCI_HOOK_KINDS] = { "prestart",        "createRuntime",
							   "createContainer", "startContainer",
							   "poststart",       "poststop" };
	if (oci_want(c, o, json_type_object, "hooks", "an object") < 0)
		return -EINVAL;
	for (int k = 0; k < OCI_HOOK_KINDS; k++) {
		json_object *a;
		char path[OCI_PATH];
		oci_pathf(path, sizeof(path), "hooks.%s", kinds[k]);
		if (!json_object_object_get_ex(o, kinds[k], &a))
			continue;
		if (oci_want(c, a, json_type_array, path, "an array") < 0)
			return -EINVAL;
		size_t n = json_object_array_length(a);
		if (n > OCI_MAX_HOOKS)
			return oci_fail(c, path, "has more than %d hooks", OCI_MAX_HOOKS);
		if (!(s->hooks[k] = calloc(n ? n : 1, sizeof(struct oci_hook))))
			return abox_error_set(c->err, ENOMEM, "%s", c->source);
		for (size_t i = 0; i < n; i++) {
			json_object *h = json_object_array_get_idx(a, i), *v;
			struct oci_hook *hk = &s->hooks[k][i];
			char p[OCI_PATH + 16];
			s->nhooks[k]++;
			oci_pathf(p, sizeof(p), "%s[%zu]", path, i);
			if (oci_want(c, h, json_type_object, p, "an object") < 0)
				return -EINVAL;
			oci_pathf(p, sizeof(p), "%s[%zu].path", path, i);
			if (!json_object_object_get_ex(h, "path", &v))
				return oci_fail(c, p, "is required");
			if (oci_str(c, v, p, false, &hk->path) < 0)
				return -EINVAL;
			if (hk->path[0] != '/')
				return oci_fail(c, p, "must be an absolute path");
			oci_pathf(p, sizeof(p), "%s[%zu].args", path, i);
			if (json_object_object_get_ex(h, "args", &v) &&
			    oci_strv(c, v, p, OCI_MAX_ARGS, true, &hk->args) < 0)
				return -EINVAL;
			oci_pathf(p, sizeof(p), "%s[%zu].env", path, i);
			if (json_object_object_get_ex(h, "env", &v) &&
			    oci_strv(c, v, p, OCI_MAX_ARGS, false, &hk->env) < 0)
				return -EINVAL;
			oci_pathf(p, sizeof(p), "%s[%zu].timeout", path, i);
			int64_t t;
			if (json_object_object_get_ex(h, "timeout", &v)) {
				if (oci_int(c, v, p, 1, 86400, &t) < 0)
					return -EINVAL;
				hk->timeout_s = (int)t;
			}
		}
	}
	return 0;
}

int oci_spec_parse(const char *text, size_t len, const char *source, struct oci_spec *out, abox_error *err)
{
	memset(out, 0, sizeof(*out));
	struct oci_pc c = { .source = source ? source : "config.json", .err = err };
	if (len > OCI_MAX_CONFIG)
		return abox_error_setx(err, EFBIG, "%s: larger than %d bytes", c.source, OCI_MAX_CONFIG);
	char *copy = strndup(text, len);
	if (!copy)
		return abox_error_set(err, ENOMEM, "%s", c.source);
	bool nul = strlen(copy) != len;
	json_object *o = nul ? NULL : js_parse_object(copy, 64);
	free(copy);
	if (!o)
		return abox_error_setx(err, EINVAL, "%s: not one JSON object", c.source);
	json_object *v;
	int r = -EINVAL;
	struct oci_spec *s = out;
	oci_resources_init(&s->resources);
	if (!json_object_object_get_ex(o, "ociVersion", &v)) {
		oci_fail(&c, "ociVersion", "is required");
		goto out;
	}
	if (oci_str(&c, v, "ociVersion", false, &s->oci_version) < 0)
		goto out;
	if (strncmp(s->oci_version, "1.", 2) != 0) {
		oci_fail(&c, "ociVersion", "'%.*s' is not a 1.x version of the runtime spec", 32,
			 s->oci_version);
		goto out;
	}
	if (!json_object_object_get_ex(o, "root", &v)) {
		oci_fail(&c, "root", "is required (abox runs a root filesystem from the bundle)");
		goto out;
	}
	json_object *p = NULL, *ro = NULL;
	if (oci_want(&c, v, json_type_object, "root", "an object") < 0 ||
	    !json_object_object_get_ex(v, "path", &p) ||
	    oci_str(&c, p, "root.path", false, &s->root_path) < 0) {
		if (json_object_is_type(v, json_type_object) && !p)
			oci_fail(&c, "root.path", "is required");
		goto out;
	}
	if (json_object_object_get_ex(v, "readonly", &ro)) {
		if (oci_want(&c, ro, json_type_boolean, "root.readonly", "true or false") < 0)
			goto out;
		s->root_readonly = json_object_get_boolean(ro);
	}
	if (json_object_object_get_ex(o, "process", &v) && parse_process(&c, v, &s->process) < 0)
		goto out;
	if (json_object_object_get_ex(o, "hostname", &v) &&
	    oci_str(&c, v, "hostname", true, &s->hostname) < 0)
		goto out;
	if (json_object_object_get_ex(o, "domainname", &v) &&
	    oci_str(&c, v, "domainname", true, &s->domainname) < 0)
		goto out;
	if (json_object_object_get_ex(o, "mounts", &v) && oci_parse_mounts(&c, v, s) < 0)
		goto out;
	if (json_object_object_get_ex(o, "hooks", &v) && parse_hooks(&c, v, s) < 0)
		goto out;
	if (json_object_object_get_ex(o, "annotations", &v) &&
	    oci_kv(&c, v, "annotations", &s->annotations) < 0)
		goto out;
	if (json_object_object_get_ex(o, "linux", &v) && oci_parse_linux(&c, v, s) < 0)
		goto out;
	static const char *const others[] = { "windows", "solaris", "vm", "zos", "freebsd" };
	for (size_t k = 0; k < sizeof(others) / sizeof(others[0]); k++)
		if (json_object_object_get_ex(o, others[k], &v)) {
			oci_fail(&c, others[k], "is for another platform; abox runs Linux containers");
			goto out;
		}
	r = 0;
out:
	json_object_put(o);
	if (r < 0)
		oci_spec_free(s);
	return r;
}

int oci_spec_load(const char *bundle, struct oci_spec *out, abox_error *err)
{
	char path[4200], *text = NULL;
	size_t len = 0;
	safe_snprintf(path, sizeof(path), "%s/config.json", bundle);
	int r = read_file_at(AT_FDCWD, path, OCI_MAX_CONFIG + 1, &text, &len);
	if (r < 0) {
		memset(out, 0, sizeof(*out));
		return r == -ENOENT ? abox_error_setx(err, ENOENT, "%s: no such file (is '%s' a bundle?)",
						      path, bundle)
				    : abox_error_set(err, -r, "read '%s'", path);
	}
	r = oci_spec_parse(text, len, path, out, err);
	free(text);
	return r;
}

int oci_process_parse(const char *text, size_t len, const char *source, struct oci_process *out,
		      abox_error *err)
{
	memset(out, 0, sizeof(*out));
	struct oci_pc c = { .source = source ? source : "process.json", .err = err };
	char *copy = len <= OCI_MAX_CONFIG ? strndup(text, len) : NULL;
	json_object *o = copy && strlen(copy) == len ? js_parse_object(copy, 64) : NULL;
	free(copy);
	if (!o)
		return abox_error_setx(err, EINVAL, "%s: not one JSON object", c.source);
	int r = parse_process(&c, o, out) < 0 ? -EINVAL : 0;
	json_object_put(o);
	if (r < 0)
		oci_process_free(out);
	return r;
}

void oci_process_free(struct oci_process *p)
{
	free(p->additional_gids);
	strv_free(p->args);
	strv_free(p->env);
	free(p->cwd);
	free(p->rlimits);
	free(p->apparmor_profile);
	memset(p, 0, sizeof(*p));
}

void oci_spec_free(struct oci_spec *s)
{
	free(s->oci_version);
	free(s->root_path);
	oci_process_free(&s->process);
	free(s->hostname);
	free(s->domainname);
	for (size_t i = 0; i < s->nmounts; i++) {
		free(s->mounts[i].destination);
		free(s->mounts[i].type);
		free(s->mounts[i].source);
		strv_free(s->mounts[i].options);
	}
	free(s->mounts);
	for (int k = 0; k < OCI_HOOK_KINDS; k++) {
		for (size_t i = 0; i < s->nhooks[k]; i++) {
			free(s->hooks[k][i].path);
			strv_free(s->hooks[k][i].args);
			strv_free(s->hooks[k][i].env);
		}
		free(s->hooks[k]);
	}
	strv_free(s->annotations);
	for (int k = 0; k < OCI_NS_COUNT; k++)
		free(s->ns_path[k]);
	strv_free(s->sysctl);
	free(s->resources.cpu_cpus);
	free(s->resources.cpu_mems);
	free(s->resources.device_rules);
	for (size_t i = 0; i < s->resources.nhugepages; i++)
		free(s->resources.hugepages[i].page_size);
	free(s->resources.hugepages);
	strv_free(s->resources.unified);
	free(s->cgroups_path);
	free(s->seccomp_json);
	strv_free(s->masked_paths);
	strv_free(s->readonly_paths);
	for (size_t i = 0; i < s->ndevices; i++)
		free(s->devices[i].path);
	free(s->devices);
	free(s->rootfs_propagation);
	free(s->mount_label);
	memset(s, 0, sizeof(*s));
}
