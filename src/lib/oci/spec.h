/* oci/spec — an OCI runtime bundle's config.json, read strictly.
 *
 * The config comes from whoever wrote the bundle (a container engine, or
 * anyone who can write to its folder): every field is type-checked and
 * bounded, and a value abox cannot honour is an error naming its JSON path
 * (`linux.namespaces[2].type: unknown namespace type 'foo'`), never a
 * silent default. Fields the OCI runtime spec defines that abox does not
 * act on are listed by oci_spec_ignored() so callers can say so; unknown
 * fields are extensions and are skipped, as the spec allows.
 * linux.seccomp is kept as JSON text for the seccomp loader.
 * Runs in the CLI/daemon. */
#ifndef ABOX_OCI_SPEC_H
#define ABOX_OCI_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/base.h"

#define OCI_MAX_MOUNTS 256
#define OCI_MAX_HOOKS 64
#define OCI_MAX_IDMAPS 64
#define OCI_MAX_ARGS 4096

enum oci_ns {
	OCI_NS_PID,
	OCI_NS_NET,
	OCI_NS_MOUNT,
	OCI_NS_IPC,
	OCI_NS_UTS,
	OCI_NS_USER,
	OCI_NS_CGROUP,
	OCI_NS_TIME,
	OCI_NS_COUNT
};

struct oci_idmap {
	uint32_t container_id, host_id, size;
};

struct oci_mount {
	char *destination, *type, *source;
	char **options; /* NULL-terminated, or NULL */
	struct oci_idmap uid_map[OCI_MAX_IDMAPS], gid_map[OCI_MAX_IDMAPS];
	unsigned nuid, ngid;
};

struct oci_rlimit {
	int resource; /* RLIMIT_* */
	uint64_t soft, hard;
};

struct oci_hook {
	char *path;
	char **args, **env; /* NULL-terminated, or NULL */
	int timeout_s; /* 0: none */
};

enum oci_hook_kind {
	OCI_HOOK_PRESTART,
	OCI_HOOK_CREATE_RUNTIME,
	OCI_HOOK_CREATE_CONTAINER,
	OCI_HOOK_START_CONTAINER,
	OCI_HOOK_POSTSTART,
	OCI_HOOK_POSTSTOP,
	OCI_HOOK_KINDS
};

struct oci_process {
	bool present; /* the spec's process may be absent (create then fails) */
	bool terminal;
	unsigned console_width, console_height;
	uid_t uid;
	gid_t gid;
	gid_t *additional_gids;
	size_t nadditional_gids;
	char **args, **env; /* NULL-terminated */
	char *cwd;
	/* capability sets as bit masks of CAP_* numbers (has_capabilities:
	 * the object was there; without it a process keeps what it has) */
	bool has_capabilities;
	uint64_t cap_bounding, cap_effective, cap_inheritable, cap_permitted, cap_ambient;
	struct oci_rlimit *rlimits;
	size_t nrlimits;
	bool no_new_privileges;
	bool has_oom_score_adj;
	int oom_score_adj;
	bool has_umask;
	uint32_t umask;
	char *apparmor_profile; /* process.apparmorProfile, or NULL */
};

struct oci_resources {
	int64_t memory_limit, memory_reservation, memory_swap; /* -1: unset */
	uint64_t cpu_shares, cpu_quota_period;
	int64_t cpu_quota; /* -1: unset */
	char *cpu_cpus, *cpu_mems;
	int64_t pids_limit; /* 0: unset; -1: unlimited */
	bool has_blkio_weight;
	uint16_t blkio_weight;
	/* linux.resources.devices, in order (the device cgroup's rules) */
	struct oci_device_rule *device_rules;
	size_t ndevice_rules;
	/* linux.resources.hugepageLimits: a limit in bytes per page size */
	struct oci_hugepage *hugepages;
	size_t nhugepages;
	/* linux.resources.unified: cgroup v2 files as "name=value", the
	 * names checked to be plain file names ("memory.high"), or NULL */
	char **unified;
};

struct oci_hugepage {
	uint64_t page_kb; /* pageSize ("2MB", "1GB") in KiB, as the kernel names its pools */
	char *page_size; /* as the config gave it */
	uint64_t limit;
};

/* access bits of a device rule */
#define OCI_DEV_READ 1u
#define OCI_DEV_WRITE 2u
#define OCI_DEV_MKNOD 4u

struct oci_device_rule {
	bool allow;
	char type; /* 'a' (all), 'c' or 'b' */
	int64_t major, minor; /* -1: any */
	unsigned access; /* OCI_DEV_* */
};

struct oci_device {
	char *path;
	char type; /* 'c', 'b', 'u' or 'p' */
	int64_t major, minor;
	bool has_mode, has_uid, has_gid;
	uint32_t mode;
	uid_t uid;
	gid_t gid;
};

struct oci_spec {
	char *oci_version;
	char *root_path; /* as given (relative to the bundle, or absolute) */
	bool root_readonly;
	struct oci_process process;
	char *hostname, *domainname;
	struct oci_mount *mounts;
	size_t nmounts;
	struct oci_hook *hooks[OCI_HOOK_KINDS];
	size_t nhooks[OCI_HOOK_KINDS];
	char **annotations; /* "key=value", NULL-terminated, or NULL */
	/* linux */
	bool ns_wanted[OCI_NS_COUNT]; /* a namespace of this type */
	char *ns_path[OCI_NS_COUNT]; /* joined (the path given), or NULL: new */
	struct oci_idmap uid_map[OCI_MAX_IDMAPS], gid_map[OCI_MAX_IDMAPS];
	unsigned nuid, ngid;
	char **sysctl; /* "key=value", NULL-terminated, or NULL */
	struct oci_resources resources;
	char *cgroups_path;
	char *seccomp_json; /* linux.seccomp as JSON text, or NULL */
	char **masked_paths, **readonly_paths; /* NULL-terminated, or NULL */
	struct oci_device *devices;
	size_t ndevices;
	char *rootfs_propagation, *mount_label;
	/* linux.timeOffsets (for its time namespace): monotonic and boottime
	 * clocks' offsets, seconds and nanoseconds */
	bool has_time_offsets;
	int64_t time_offset_s[2]; /* [0] monotonic, [1] boottime */
	uint32_t time_offset_ns[2];
};

/* Parses the text of a config.json (len bytes) into *out (zeroed first);
 * source names it in errors. On failure *out is left empty. */
int oci_spec_parse(const char *text, size_t len, const char *source, struct oci_spec *out, abox_error *err);
/* Reads bundle/config.json (at most 4 MiB) and parses it. */
int oci_spec_load(const char *bundle, struct oci_spec *out, abox_error *err);
void oci_spec_free(struct oci_spec *s);
/* A process alone (what `runc exec --process FILE` reads: the config's
 * "process" object), as strictly; paths in errors start at "process". */
int oci_process_parse(const char *text, size_t len, const char *source, struct oci_process *out,
		      abox_error *err);
void oci_process_free(struct oci_process *p);
/* The namespace type's name in the spec ("pid", "network", ...). */
const char *oci_ns_name(enum oci_ns ns);

#endif
