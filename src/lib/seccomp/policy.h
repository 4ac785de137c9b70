/* seccomp policy — loads seccomp policies written in the OCI runtime-spec
 * `linux.seccomp` JSON format (plus the extra fields of Docker's profiles:
 * archMap, comment, includes/excludes) and compiles them to BPF.
 *
 * What it does: strict parsing (unknown field, unknown action, unknown
 * syscall in a denying rule, bad op or index are errors naming the
 * culprit), compilation with libseccomp, export to a BPF program that can be
 * installed with one system call, and a cache of compiled programs.
 * What it does not do: decide which policy a sandbox gets (backend) or set
 * no_new_privs (spawn does, right before installing).
 * Runs in the CLI/daemon; policy_bpf_install runs in the sandbox child
 * between clone and exec and is async-signal-safe. */
#ifndef ABOX_SECCOMP_POLICY_H
#define ABOX_SECCOMP_POLICY_H

#include <stddef.h>
#include <stdint.h>
#include <linux/filter.h>

#include "base/base.h"

/* Limits on untrusted policy input. */
#define POLICY_MAX_BYTES (4u << 20)
#define POLICY_MAX_RULES 4096
#define POLICY_MAX_NAMES 4096
#define POLICY_MAX_DEPTH 16

struct policy_env {
	/* Capabilities the sandbox keeps (bit n = capability n): rules with
	 * includes.caps / excludes.caps are matched against it. */
	uint64_t caps;
	/* Kernel version for includes.minKernel, as major*1000+minor. */
	unsigned kernel;
};

struct policy_bpf {
	struct sock_filter *insns;
	unsigned short len;
};

/* Parses and compiles a policy from memory. `source` names it in errors
 * ("policies/default.json: syscalls[3].action: unknown action ..."). */
int policy_compile(const char *json, size_t len, const char *source, const struct policy_env *env,
		   struct policy_bpf *out, abox_error *err);
/* Parses only (no libseccomp context): used by the fuzzer and `abox doctor`. */
int policy_check(const char *json, size_t len, const char *source, abox_error *err);
/* Reads path, then uses a compiled copy from cache_dir when one exists for
 * exactly these policy bytes and env (the cache stores the policy bytes and
 * compares them in full, so no hash collision can select a wrong program);
 * otherwise compiles and stores the result (atomically). cache_dir may be
 * NULL to disable caching; it must be a root-only directory. */
int policy_load(const char *path, const char *cache_dir, const struct policy_env *env,
		struct policy_bpf *out, abox_error *err);
void policy_bpf_free(struct policy_bpf *b);
/* seccomp(SECCOMP_SET_MODE_FILTER) with the program. no_new_privs must be
 * set already. Async-signal-safe. Returns 0 or -errno. */
int policy_bpf_install(const struct policy_bpf *b);

#endif
