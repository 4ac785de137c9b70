/* local/create_oci — an OCI container's sandbox (abox_sandbox_opts
 * oci_bundle): its config read and turned into what the create's phases
 * use (the root bound in place, its mounts, limits, capabilities, the
 * network namespace to join), then its process handed to init, held until
 * abox_sandbox_start. Runs in the CLI/daemon. */
#ifndef ABOX_LOCAL_CREATE_OCI_H
#define ABOX_LOCAL_CREATE_OCI_H

#include <abox/sandbox.h>

#include "mount/rootfs.h"
#include "oci/spec.h"
#include "seccomp/policy.h"

struct abox_sandbox;

/* Where a config asks for less confinement than abox's (docs/kubernetes.md):
 * refused (strict, the default), abox's own kept (abox.confinement=abox),
 * or granted up to a container engine's default (abox.confinement=compat). */
enum oci_confinement {
	OCI_CONF_STRICT,
	OCI_CONF_ABOX,
	OCI_CONF_COMPAT
};

struct oci_create {
	struct oci_spec spec;
	enum oci_confinement conf;
	uint64_t init_caps; /* init's bounding set: abox's, and compat's extras the config asks for */
	char *root; /* root.path, resolved */
	struct rootfs_oci ro;
	struct rootfs_oci_mount *mounts;
	char **owned; /* strings made here, NULL-terminated */
	size_t nowned;
	int netns_fd; /* linux.namespaces' network path, or -1 */
	int pidns_fd; /* its pid path (a pod's shared one), or -1 */
	int mntns_fd; /* its mount path, or -1 */
	bool userns; /* a user namespace (oci_userns.c) */
	int userns_fd; /* ...joined: its path, or -1 */
	uint32_t userns_base; /* the host id its root is (and owner) */
	uint64_t memory_bytes, pids;
	uint32_t cpu_millis;
	uint32_t cpu_shares; /* linux.resources.cpu.shares, or 0 */
	uint32_t cpu_period; /* linux.resources.cpu.period and quota as given, or 0 */
	uint64_t cpu_quota;
	struct policy_bpf seccomp; /* linux.seccomp compiled, or empty */
	char warning[512]; /* what was read and not applied, for the log; or "" */
	unsigned preserve_fds; /* the creator's fds 3.. the process gets (runc's --preserve-fds) */
	struct rootfs_oci_device *devices; /* linux.devices that are made */
	bool cpuset; /* linux.resources.cpu.cpus or mems applied (oci_cpuset_plan) */
	char cpuset_dir[4096]; /* ...in this v1 folder; "": the sandbox's v2 one */
};

/* An oci_create holding nothing (every fd -1): the one way to make one,
 * so that a new fd field is never 0 (stdin) in some copy of it. */
#define OCI_CREATE_INIT                                                                                      \
	(struct oci_create)                                                                                  \
	{                                                                                                    \
		.netns_fd = -1, .pidns_fd = -1, .mntns_fd = -1, .userns_fd = -1,                             \
		.ro = {.ipc_fd = -1,                                                                         \
		       .uts_fd = -1 }                                                                        \
	}

/* the pids limit of a container whose config sets none */
#define OCI_NODE_PIDS 32768

struct spawn_config;
/* The create's options checked against an OCI bundle's (which must give
 * everything), the config read (oci_create_prepare) and the options
 * completed from it. */
int oci_create_check(abox_sandbox_opts *o, struct oci_create *oc, abox_error *err);
/* The clone's configuration for the container: its root, mounts,
 * hostname, capabilities, network namespace, stdio. */
void oci_create_spawn(struct oci_create *oc, struct spawn_config *cfg);
/* Reads bundle/config.json; errors name the JSON path of what abox
 * cannot honour. */
int oci_create_prepare(const char *bundle, enum oci_confinement node, struct oci_create *oc, abox_error *err);
void oci_create_free(struct oci_create *oc);
/* oc->spec's confinement (oci_confine.c): oc->conf from its annotation
 * abox.confinement and the node's choice, oc->init_caps, and an error
 * naming what the config asks beyond it (capabilities, noNewPrivileges,
 * host sysctls, ...). */
int oci_confine_prepare(struct oci_create *oc, enum oci_confinement node, abox_error *err);
/* linux.resources.hugepageLimits (oci_resources.c): each a page size of
 * the host's; one the host's pool could exceed is named in warning (abox
 * makes no hugetlb cgroup). */
int oci_hugepages_check(const struct oci_resources *res, char *warning, size_t wn, abox_error *err);
/* linux.resources.unified: none of the files abox keeps itself
 * (cgroup.procs, .kill, .freeze, ...), checked before anything is made;
 * then each written into the container's cgroup v2 folder, an error
 * naming the file that is not there. */
int oci_unified_check(const struct oci_resources *res, abox_error *err);
int oci_unified_apply(abox_sandbox *sb, const struct oci_resources *res, abox_error *err);
/* linux.resources.blockIO.weight as the container's io.weight where its
 * cgroup v2 folder has one; else said in the log (abox makes no v1 blkio
 * cgroup). */
int oci_blkio_apply(abox_sandbox *sb, const struct oci_resources *res, abox_error *err);
/* linux.resources.cpu's quota, period and shares (oci_resources.c): the
 * quota kept with its period as given (runc's 100 ms without one). */
int oci_cpu_prepare(struct oci_create *oc, abox_error *err);
/* linux.resources.cpu.cpus and mems (oci_resources.c): where the cpuset
 * will be, its v1 folder added to the sandbox's planned cgroups (kill and
 * gc remove it with them); a host without cpusets is named in the log
 * (not enforced, as before). Then, once the sandbox exists, set and its
 * processes moved in; a list the kernel refuses is an error naming it. */
int oci_cpuset_plan(abox_ctx *ctx, const char *id, struct oci_create *oc, char *planned, size_t n,
		    abox_error *err);
int oci_cpuset_apply(abox_sandbox *sb, const struct oci_create *oc, abox_error *err);
/* linux.namespaces' user namespace and the id maps (oci_userns.c):
 * checked (root mapped, to one host id that owns it; never host id 0), a
 * path opened; oc->userns set. */
int oci_userns_prepare(struct oci_create *oc, abox_error *err);
struct userns_job;
/* The new namespace begun from the maps (j untouched, pid -1, when joined
 * or none), after a check that no mapped host id is one of abox's pool. */
int oci_userns_begin(abox_ctx *ctx, struct oci_create *oc, struct userns_job *j, abox_error *err);
/* mounts[i]'s tmpfs option o, uid=N or gid=N (a container's id), as the
 * host's id the config's map gives (abox mounts it outside the user
 * namespace) into out. */
int oci_userns_idopt(const struct oci_create *oc, size_t i, const char *o, char *out, size_t n,
		     abox_error *err);
/* mounts[i]'s idmap, ridmap and mappings (out->idmap set by the caller
 * from the options): checked (a bind; mappings both or neither, none of
 * host id 0; none, or the container's own: its namespace, which it must
 * have) and a namespace of the mount's own maps made (out->idmap_fd).
 * Before the container's own namespace is begun (spawn/userns.h: one
 * job per thread at a time). */
int oci_idmap_prepare(const struct oci_create *oc, size_t i, bool bind, struct rootfs_oci_mount *out,
		      abox_error *err);
/* With a user namespace, linux.devices' owners as the host's ids (the
 * nodes are made outside it); an owner the maps lack is an error. */
int oci_userns_devices(struct oci_create *oc, unsigned n, abox_error *err);
/* The host id that container id maps to in m. */
bool oci_idmap_host(const struct oci_idmap *m, unsigned n, uint32_t id, uint32_t *host);
struct proto_msg;
/* An OCI process's fields of an exec request (args, env, cwd, ids,
 * groups, umask, rlimits). */
/* A process's ambient capabilities can be raised (each inheritable and
 * bounding too) and its apparmorProfile entered here (AppArmor on, a sane
 * name), or the error that says why not. */
int oci_process_check(const struct oci_process *p, uint64_t within, abox_error *err);
/* The bounding set of the container whose init is init_pid: what its
 * processes may hold (abox's set where it cannot be read). */
uint64_t oci_init_caps(pid_t init_pid);
/* linux.devices kept by linux.resources.devices (oci_devices.c): the
 * nodes to make (*out, the caller's to free; its strings the spec's), or
 * the error naming the field abox cannot hold. ours: under abox's
 * confinement, which leaves out the host's disks and consoles (said in
 * warning, appended). */
int oci_devices_prepare(const struct oci_spec *s, bool ours, struct rootfs_oci_device **out, unsigned *n,
			char *warning, size_t wn, abox_error *err);
/* within: the capabilities the container may have (oci_create.init_caps) */
void oci_process_put(struct proto_msg *m, const struct oci_process *p, uint64_t within);
/* A terminal in the container whose init is init_pid, of p's console
 * size: *master (the caller's) and *slave (for the process). */
int oci_pty(pid_t init_pid, const struct oci_process *p, int *master, int *slave, abox_error *err);
/* linux.sysctl ("key=value" entries): every key one of the container's
 * own namespaces (network, ipc, uts), checked before anything is made;
 * then written from a child that joined the namespaces of the container
 * whose init pidfd is given. */
int oci_sysctl_check(char *const *kv, abox_error *err);
int oci_sysctl_apply(int pidfd, char *const *kv, abox_error *err);
/* Hands the container's process to init, held until the start, with the
 * config's seccomp profile; with process.terminal, its terminal too, and
 * *console (unless NULL) gets the terminal's master. */
int oci_create_hold(struct abox_sandbox *sb, const struct oci_create *oc, int *console, abox_error *err);

#endif
