/* seccomp policy — internal interface between the reader (policy_json.c),
 * the parser (policy_parse.c over policy_fields.c), the compiler
 * (policy.c), its self-check (policy_verify.c) and the cache
 * (policy_cache.c). Not installed, not
 * used outside src/lib/seccomp/ (and its unit test). */
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
	uint64_t caps; /* bit set of the capabilities listed */
	bool has_caps;
	bool arch_native; /* the native arch is in "arches" */
	bool has_arches;
	unsigned min_kernel; /* major*1000+minor, 0 = not given */
};

struct policy_rule {
	unsigned pos;       /* index in "syscalls", for messages */
	bool legacy_name;   /* "name": "x" instead of "names": [...] */
	const char **names; /* point into the parsed JSON tree */
	int *nrs;           /* native syscall numbers, __NR_SCMP_ERROR = unknown */
	size_t n_names;
	uint32_t action; /* libseccomp action with its data */
	struct scmp_arg_cmp args[POLICY_MAX_ARGS];
	unsigned n_args;
	struct policy_filter includes, excludes;
};

struct policy_doc {
	json_object *root; /* owns every string the rules point to */
	const char *source;
	uint32_t default_action;
	uint32_t arches[POLICY_MAX_ARCHES];
	unsigned n_arches;
	struct policy_rule *rules;
	size_t n_rules;
};

/* Reads policy bytes into a json-c tree (policy_json.c): size, depth,
 * UTF-8, duplicate fields, integer range. *out is owned by the caller. */
int policy_json_read(const char *json, size_t len, const char *source, json_object **out,
		     abox_error *err);
/* Copies an untrusted string into buf for a message: bounded, printable
 * characters only, so a policy cannot forge lines or escape sequences in
 * logs. Returns buf. */
const char *policy_show(const char *s, char *buf, size_t n);

/* Strict parse of a policy document (see policy.h for the rules). On
 * success *out must be released with policy_doc_free. */
int policy_parse(const char *json, size_t len, const char *source, struct policy_doc *out,
		 abox_error *err);
void policy_doc_free(struct policy_doc *d);

/* Between the parser's walk (policy_parse.c) and its field values
 * (policy_fields.c). */
#define POLICY_MAX_LIST 64 /* caps, arches, flags, archMap entries */
#define POLICY_PATH_LEN 96 /* a JSON location in a message */

struct policy_pctx {
	const char *source;
	abox_error *err;
	size_t total_names;
};

/* Sets c->err to "source: path: message" (path may be NULL or empty);
 * returns -code. */
int policy_fail(struct policy_pctx *c, int code, const char *path, const char *fmt, ...) _printf_(4, 5);
void policy_pathf(char *buf, size_t n, const char *fmt, ...) _printf_(3, 4);
/* Typed getters: 0, or policy_fail with the location. */
int policy_want(struct policy_pctx *c, json_object *v, json_type t, const char *path, const char *what);
int policy_get_string(struct policy_pctx *c, json_object *v, const char *path, bool allow_empty,
		      const char **out);
int policy_get_uint(struct policy_pctx *c, json_object *v, const char *path, uint64_t max, uint64_t *out);
int policy_get_array(struct policy_pctx *c, json_object *v, const char *path, size_t max, size_t *n);
/* An action field (and its errno/trace data field, ret may be NULL) as a
 * libseccomp action. */
int policy_parse_action(struct policy_pctx *c, json_object *act, json_object *ret, const char *path,
			const char *act_field, const char *ret_field, uint32_t *out);
int policy_parse_arch(struct policy_pctx *c, json_object *v, const char *path, uint32_t *out);
/* Adds arch to d->arches once; refused when d is full or of the other
 * byte order. */
int policy_add_arch(struct policy_pctx *c, struct policy_doc *d, uint32_t arch, const char *path);
int policy_parse_arch_map(struct policy_pctx *c, json_object *v, struct policy_doc *d);
/* Docker's includes/excludes. */
int policy_parse_filter(struct policy_pctx *c, json_object *v, const char *path, struct policy_filter *f);
int policy_parse_arg(struct policy_pctx *c, json_object *v, const char *path, struct scmp_arg_cmp *out);
/* Whether a top-level "flags" entry is one abox accepts. */
bool policy_flag_known(const char *flag);

/* Whether a rule applies to a sandbox with this env (Docker's semantics:
 * excluded when any excluded cap is held, the arch is listed or the kernel
 * is new enough; included only when every listed cap is held, the arch is
 * listed and the kernel is new enough). */
bool policy_rule_applies(const struct policy_rule *r, const struct policy_env *env);

/* Fills in env->kernel from uname() when it is 0. */
void policy_env_resolve(const struct policy_env *in, struct policy_env *out);

/* Runs a classic-BPF seccomp program on one system call (as the kernel
 * would) and stores its return value. -EINVAL for an invalid program. */
struct seccomp_data;
int policy_bpf_run(const struct policy_bpf *b, const struct seccomp_data *d, uint32_t *ret);

/* The no-args part of an x86_64-only program as a binary search over
 * ranges of syscall numbers (policy_ranges.c): nrs sorted and distinct,
 * acts_of[i] the action of nrs[i], def everywhere else. -E2BIG when the
 * ranges are too many for BPF's short jumps. */
int policy_ranges_build(uint32_t def, const int *nrs, const uint32_t *acts_of, size_t n,
			struct policy_bpf *out);
/* Whether two such programs return the same for every syscall number that
 * exists and at the edges of the number space, on x86_64 and elsewhere. */
bool policy_ranges_agree(const struct policy_bpf *a, const struct policy_bpf *b);

/* Checks a compiled program against the policy it came from (see
 * policy_verify.c); -EPROTO with a message when they disagree. */
int policy_verify(const struct policy_doc *d, const struct policy_env *env, const uint32_t *arches,
		  unsigned n_arches, const struct policy_bpf *b, abox_error *err);

/* Whether an action refuses the call (anything but ALLOW and LOG). */
static inline bool policy_action_denies(uint32_t action)
{
	return action != SCMP_ACT_ALLOW && action != SCMP_ACT_LOG;
}

#endif
