/* seccomp/policy_parse.c — strict reader for seccomp policies in the OCI
 * runtime-spec `linux.seccomp` JSON format, with Docker's extensions
 * (archMap, comment, includes/excludes, the legacy "name").
 *
 * What it does: walks the schema of the tree policy_json.c read: every
 * field of the document and of each rule known, required ones present,
 * one argument compared once, syscall names resolved (unknown in a
 * denying rule = error, in an allowing rule = skipped later); and whether
 * a parsed rule applies to a sandbox. Every error names the source and
 * the JSON location.
 * What it does not do: read the bytes (policy_json.c), check one field's
 * value (policy_fields.c), build a filter (policy.c) or cache
 * (policy_cache.c).
 * Runs in the CLI/daemon, on untrusted input: every size and count is
 * limited. Needs libseccomp only for its syscall name table. */
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

#include "seccomp/policy_internal.h"

static int parse_names(struct policy_pctx *c, json_object *v, const char *path, bool legacy,
		       struct policy_rule *rule)
{
	size_t n = 1;
	int r;
	if (!legacy) {
		if ((r = policy_get_array(c, v, path, POLICY_MAX_NAMES, &n)) < 0)
			return r;
		if (n == 0)
			return policy_fail(c, EINVAL, path, "empty list");
	}
	if (c->total_names + n > POLICY_MAX_NAMES)
		return policy_fail(c, E2BIG, path, "more than %u syscall names in the policy",
				   POLICY_MAX_NAMES);
	c->total_names += n;
	rule->names = calloc(n, sizeof(*rule->names));
	rule->nrs = calloc(n, sizeof(*rule->nrs));
	if (!rule->names || !rule->nrs)
		return policy_fail(c, ENOMEM, path, "out of memory");
	rule->n_names = n;
	rule->legacy_name = legacy;
	for (size_t i = 0; i < n; i++) {
		char p[POLICY_PATH_LEN];
		json_object *e = legacy ? v : json_object_array_get_idx(v, i);
		if (legacy)
			policy_pathf(p, sizeof(p), "%s", path);
		else
			policy_pathf(p, sizeof(p), "%s[%zu]", path, i);
		if ((r = policy_get_string(c, e, p, false, &rule->names[i])) < 0)
			return r;
		rule->nrs[i] = seccomp_syscall_resolve_name(rule->names[i]);
	}
	return 0;
}

static int parse_rule(struct policy_pctx *c, json_object *v, unsigned pos, struct policy_rule *rule)
{
	char path[POLICY_PATH_LEN], p[POLICY_PATH_LEN], shown[64];
	json_object *names = NULL, *name = NULL, *action = NULL, *ret = NULL, *args = NULL;
	int r;

	policy_pathf(path, sizeof(path), "syscalls[%u]", pos);
	rule->pos = pos;
	if ((r = policy_want(c, v, json_type_object, path, "an object")) < 0)
		return r;
	json_object_object_foreach(v, key, val)
	{
		bool null = json_object_is_type(val, json_type_null);
		policy_pathf(p, sizeof(p), "%s.%s", path, key);
		if (strcmp(key, "names") == 0)
			names = val;
		else if (strcmp(key, "name") == 0)
			name = val;
		else if (strcmp(key, "action") == 0)
			action = val;
		else if (strcmp(key, "errnoRet") == 0)
			ret = null ? NULL : val;
		else if (strcmp(key, "args") == 0)
			args = null ? NULL : val;
		else if (strcmp(key, "comment") == 0) {
			const char *unused;
			if (!null && (r = policy_get_string(c, val, p, true, &unused)) < 0)
				return r;
		} else if (strcmp(key, "includes") == 0) {
			if (!null && (r = policy_parse_filter(c, val, p, &rule->includes)) < 0)
				return r;
		} else if (strcmp(key, "excludes") == 0) {
			if (!null && (r = policy_parse_filter(c, val, p, &rule->excludes)) < 0)
				return r;
		} else
			return policy_fail(c, EINVAL, path, "unknown field '%s'",
					   policy_show(key, shown, sizeof(shown)));
	}
	if (names && name)
		return policy_fail(c, EINVAL, path, "both 'name' and 'names': use one");
	if (!names && !name)
		return policy_fail(c, EINVAL, path, "missing field 'names'");
	if (!action)
		return policy_fail(c, EINVAL, path, "missing field 'action'");
	if ((r = policy_parse_action(c, action, ret, path, "action", "errnoRet", &rule->action)) < 0)
		return r;

	if (args) {
		size_t n;
		policy_pathf(p, sizeof(p), "%s.args", path);
		if ((r = policy_get_array(c, args, p, POLICY_MAX_ARGS, &n)) < 0)
			return r;
		for (size_t i = 0; i < n; i++) {
			policy_pathf(p, sizeof(p), "%s.args[%zu]", path, i);
			if ((r = policy_parse_arg(c, json_object_array_get_idx(args, i), p,
						  &rule->args[i])) < 0)
				return r;
			/* libseccomp 2.5 refuses two comparisons of one
			 * argument in a rule (EINVAL); runc silently turns
			 * them into an OR of separate rules, which reads as an
			 * AND. Say so instead of guessing. */
			for (size_t j = 0; j < i; j++)
				if (rule->args[j].arg == rule->args[i].arg)
					return policy_fail(
					    c, EINVAL, p,
					    "argument %u is already compared in args[%zu]: one rule can compare an argument once; write one rule per comparison",
					    rule->args[i].arg, j);
		}
		rule->n_args = (unsigned)n;
	}

	policy_pathf(p, sizeof(p), "%s.%s", path, names ? "names" : "name");
	if ((r = parse_names(c, names ? names : name, p, !names, rule)) < 0)
		return r;
	/* An unknown name in a rule that denies is an error: the policy's
	 * author believes that call is blocked. In a rule that allows, it
	 * is skipped at compile time (newer than libseccomp, or another
	 * architecture's call) and the call keeps the default action. */
	if (policy_action_denies(rule->action))
		for (size_t i = 0; i < rule->n_names; i++)
			if (rule->nrs[i] == __NR_SCMP_ERROR) {
				if (rule->legacy_name)
					policy_pathf(p, sizeof(p), "%s.name", path);
				else
					policy_pathf(p, sizeof(p), "%s.names[%zu]", path, i);
				return policy_fail(c, EINVAL, p,
						   "unknown syscall '%s' in a rule that denies",
						   policy_show(rule->names[i], shown, sizeof(shown)));
			}
	return 0;
}

static int parse_root(struct policy_pctx *c, json_object *root, struct policy_doc *d)
{
	json_object *def = NULL, *def_ret = NULL, *archs = NULL, *arch_map = NULL, *syscalls = NULL;
	char p[POLICY_PATH_LEN], shown[64];
	int r;

	json_object_object_foreach(root, key, val)
	{
		bool null = json_object_is_type(val, json_type_null);
		if (strcmp(key, "defaultAction") == 0)
			def = val;
		else if (strcmp(key, "defaultErrnoRet") == 0)
			def_ret = null ? NULL : val;
		else if (strcmp(key, "architectures") == 0)
			archs = null ? NULL : val;
		else if (strcmp(key, "archMap") == 0)
			arch_map = null ? NULL : val;
		else if (strcmp(key, "syscalls") == 0)
			syscalls = null ? NULL : val;
		else if (strcmp(key, "flags") == 0) {
			size_t n = 0;
			if (!null && (r = policy_get_array(c, val, "flags", POLICY_MAX_LIST, &n)) < 0)
				return r;
			for (size_t i = 0; i < n; i++) {
				const char *flag = NULL;
				policy_pathf(p, sizeof(p), "flags[%zu]", i);
				if ((r = policy_get_string(c, json_object_array_get_idx(val, i), p, false,
							   &flag)) < 0)
					return r;
				if (!policy_flag_known(flag))
					return policy_fail(c, EINVAL, p, "unknown flag '%s'",
							   policy_show(flag, shown, sizeof(shown)));
			}
		} else if (strcmp(key, "listenerPath") == 0 ||
			   strcmp(key, "listenerMetadata") == 0) {
			if (!null)
				return policy_fail(c, ENOTSUP, key,
						   "seccomp user notification is not supported by abox");
		} else if (strcmp(key, "comment") == 0) {
			const char *unused;
			if (!null && (r = policy_get_string(c, val, "comment", true, &unused)) < 0)
				return r;
		} else
			return policy_fail(c, EINVAL, NULL, "unknown top-level field '%s'",
					   policy_show(key, shown, sizeof(shown)));
	}
	if (!def)
		return policy_fail(c, EINVAL, NULL, "missing field 'defaultAction'");
	if ((r = policy_parse_action(c, def, def_ret, "", "defaultAction", "defaultErrnoRet",
				     &d->default_action)) < 0)
		return r;

	if (archs && arch_map)
		return policy_fail(c, EINVAL, NULL, "both 'architectures' and 'archMap': use one");
	if (archs) {
		size_t n;
		if ((r = policy_get_array(c, archs, "architectures", POLICY_MAX_ARCHES, &n)) < 0)
			return r;
		for (size_t i = 0; i < n; i++) {
			uint32_t arch;
			policy_pathf(p, sizeof(p), "architectures[%zu]", i);
			if ((r = policy_parse_arch(c, json_object_array_get_idx(archs, i), p, &arch)) < 0)
				return r;
			if ((r = policy_add_arch(c, d, arch, p)) < 0)
				return r;
		}
	}
	if (arch_map && (r = policy_parse_arch_map(c, arch_map, d)) < 0)
		return r;

	if (syscalls) {
		size_t n;
		if ((r = policy_get_array(c, syscalls, "syscalls", POLICY_MAX_RULES, &n)) < 0)
			return r;
		d->rules = calloc(n ? n : 1, sizeof(*d->rules));
		if (!d->rules)
			return policy_fail(c, ENOMEM, "syscalls", "out of memory");
		for (size_t i = 0; i < n; i++) {
			/* Counted before parsing so policy_doc_free sees the
			 * half-built rule and frees its arrays. */
			d->n_rules = i + 1;
			if ((r = parse_rule(c, json_object_array_get_idx(syscalls, i), (unsigned)i,
					    &d->rules[i])) < 0)
				return r;
		}
	}
	return 0;
}

void policy_doc_free(struct policy_doc *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n_rules; i++) {
		free(d->rules[i].names);
		free(d->rules[i].nrs);
	}
	free(d->rules);
	if (d->root)
		json_object_put(d->root);
	*d = (struct policy_doc){ 0 };
}

int policy_parse(const char *json, size_t len, const char *source, struct policy_doc *out,
		 abox_error *err)
{
	struct policy_pctx c = { .source = source ? source : "(policy)", .err = err };
	struct policy_doc d = { .source = c.source };

	int r = policy_json_read(json, len, c.source, &d.root, err);
	if (r < 0)
		return r;
	if ((r = parse_root(&c, d.root, &d)) < 0) {
		policy_doc_free(&d);
		return r;
	}
	*out = d;
	return 0;
}

bool policy_rule_applies(const struct policy_rule *r, const struct policy_env *env)
{
	const struct policy_filter *ex = &r->excludes, *in = &r->includes;
	if (ex->present) {
		if (ex->has_arches && ex->arch_native)
			return false;
		if (ex->has_caps && (ex->caps & env->caps))
			return false;
		if (ex->min_kernel && env->kernel >= ex->min_kernel)
			return false;
	}
	if (in->present) {
		if (in->has_arches && !in->arch_native)
			return false;
		if (in->has_caps && (in->caps & env->caps) != in->caps)
			return false;
		if (in->min_kernel && env->kernel < in->min_kernel)
			return false;
	}
	return true;
}

void policy_env_resolve(const struct policy_env *in, struct policy_env *out)
{
	*out = in ? *in : (struct policy_env){ 0 };
	if (out->kernel)
		return;
	struct utsname u;
	unsigned major = 0, minor = 0;
	if (uname(&u) == 0 && sscanf(u.release, "%u.%u", &major, &minor) == 2 && minor < 1000)
		out->kernel = major * 1000 + minor;
}
