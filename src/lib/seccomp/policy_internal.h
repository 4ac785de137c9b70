/* seccomp policy — internal interface between the parser (policy_parse.c),
 * the compiler (policy.c) and the cache (policy_cache.c). Not installed,
 * not used outside src/lib/seccomp/. */
#ifndef ABOX_SECCOMP_POLICY_INTERNAL_H
#define ABOX_SECCOMP_POLICY_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>
#include <seccomp.h>

#include "seccomp/policy.h"

#define POLICY_MAX_ARCHES 24
#define POLICY_MAX_ARGS 6

/* includes/excludes of Docker's profile format. */
struct policy_filter {
	bool present;
	uint64_t caps;       /* bit set of the capabilities listed */
	bool has_caps;
	bool arch_native;    /* the native arch is in "arches" */
	bool has_arches;
	unsigned min_kernel; /* major*1000+minor, 0 = not given */
};

struct policy_rule {
	unsigned pos;            /* index in "syscalls", for messages */
	bool legacy_name;        /* "name": "x" instead of "names": [...] */
	const char **names;      /* point into the parsed JSON tree */
	int *nrs;                /* native syscall numbers, __NR_SCMP_ERROR = unknown */
	size_t n_names;
	uint32_t action;         /* libseccomp action with its data */
	struct scmp_arg_cmp args[POLICY_MAX_ARGS];
	unsigned n_args;
	struct policy_filter includes, excludes;
};

struct policy_doc {
	json_object *root;       /* owns every string the rules point to */
	const char *source;
	uint32_t default_action;
	uint32_t arches[POLICY_MAX_ARCHES];
	unsigned n_arches;
	struct policy_rule *rules;
	size_t n_rules;
};

/* Strict parse of a policy document (see policy.h for the rules). On
 * success *out must be released with policy_doc_free. */
int policy_parse(const char *json, size_t len, const char *source, struct policy_doc *out,
		 abox_error *err);
void policy_doc_free(struct policy_doc *d);

/* Whether a rule applies to a sandbox with this env (Docker's semantics:
 * excluded when any excluded cap is held, the arch is listed or the kernel
 * is new enough; included only when every listed cap is held, the arch is
 * listed and the kernel is new enough). */
bool policy_rule_applies(const struct policy_rule *r, const struct policy_env *env);

/* Fills in env->kernel from uname() when it is 0. */
void policy_env_resolve(const struct policy_env *in, struct policy_env *out);

/* Whether an action refuses the call (anything but ALLOW and LOG). */
static inline bool policy_action_denies(uint32_t action)
{
	return action != SCMP_ACT_ALLOW && action != SCMP_ACT_LOG;
}

#endif
