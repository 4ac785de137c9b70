/* abox/sandbox.h — sandboxes: create, connect, list, kill, timeouts, pause
 * and resume, metrics. Part of the public API; abox/abox.h includes every
 * part. */
#ifndef ABOX_SANDBOX_H
#define ABOX_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <abox/common.h>
#include <abox/error.h>
#include <abox/version.h>
#include <abox/context.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- sandboxes -------------------------------------------------------- */

typedef struct abox_sandbox abox_sandbox;

/* The sandbox ends when its handle is freed (or its creator dies): what
 * `abox run` uses. Without it a sandbox is long-lived: it is recorded in the
 * state folder, outlives its creator, and is found again by id
 * (abox_sandbox_connect) until it is killed or reaches its timeout. */
#define ABOX_SANDBOX_EPHEMERAL (1u << 0)
/* At its deadline the sandbox is paused (with its memory: to disk when a
 * checkpointer works, else frozen in place), not killed (E2B's
 * autoPause). abox_reap does it: aboxd calls it every second, and every
 * abox_gc too. Long-lived sandboxes only. */
#define ABOX_SANDBOX_AUTO_PAUSE (1u << 1)
/* Where the writable layer (the sandbox's files) lives. On disk (an ext4
 * of disk_bytes on a loop device: its files never count against the
 * sandbox's memory) is the default of long-lived sandboxes; in memory (a
 * tmpfs of disk_bytes, faster to make, its files counted as the sandbox's
 * memory) the default of ephemeral ones. At most one of the two. */
#define ABOX_SANDBOX_LAYER_DISK (1u << 2)
#define ABOX_SANDBOX_LAYER_TMPFS (1u << 3)
/* With ABOX_SANDBOX_AUTO_PAUSE: the pause at the deadline keeps the files
 * only and ends the processes (E2B's autoPauseMemory: false); a resume
 * starts them afresh. */
#define ABOX_SANDBOX_AUTO_PAUSE_NO_MEMORY (1u << 4)
/* A user namespace of its own: the sandbox's ids 0-65535 are a range of
 * host ids no host account and no other sandbox holds, so its root is no
 * host root and its user no host user (docs/security.md). Without either
 * flag: the state folder's userns.json decides ("default"). */
#define ABOX_SANDBOX_USERNS (1u << 5)
#define ABOX_SANDBOX_NO_USERNS (1u << 6)
/* No `sudo` inside: by default the sandbox's /usr/bin/sudo asks its init
 * to run a command as root (or -u USER), passwordless as in E2B's
 * templates, which is what `user: root` through the API can do anyway.
 * With this flag a process of the sandbox cannot become another user of
 * it unless it already is root. */
#define ABOX_SANDBOX_NO_SUDO (1u << 7)
/* An OCI container (oci_bundle) under abox's own confinement where its
 * config asks for less, as with its annotation abox.confinement=abox:
 * capabilities beyond abox's set are dropped, abox's seccomp policy
 * replaces the config's profile (docs/kubernetes.md). */
#define ABOX_SANDBOX_OCI_ABOX_CONFINEMENT (1u << 8)
/* An OCI container run as a container engine's default asks
 * (annotation abox.confinement=compat): its noNewPrivileges false is
 * honoured and its capabilities up to containerd's default set are
 * granted (abox's set and CAP_NET_RAW, CAP_MKNOD, CAP_AUDIT_WRITE; more is
 * refused by name), its root keeps setuid binaries working. abox's seccomp
 * policy, masks and its own /dev stay: with CAP_MKNOD a node the container
 * makes opens nothing (every mount it can write is nodev, abox's nodes
 * are bound in). Not with ABOX_SANDBOX_OCI_ABOX_CONFINEMENT. */
#define ABOX_SANDBOX_OCI_COMPAT (1u << 9)

/* ---- networking -------------------------------------------------------- */

/* What a sandbox may reach outside itself (docs/networking.md). Whatever
 * the mode, it never reaches the host, other sandboxes, private and
 * link-local addresses (cloud metadata), loopback or multicast, and has
 * no IPv6; its DNS goes to abox's resolver, which applies the policy. */
typedef enum abox_net_mode {
	ABOX_NET_NONE = 0, /* loopback only */
	ABOX_NET_OPEN = 1, /* out to the internet */
	ABOX_NET_FILTERED = 2, /* allow_out and deny_out decide, as E2B's allowOut/denyOut */
} abox_net_mode;

#define ABOX_NET_OPTS_VERSION 1
typedef struct abox_net_opts {
	uint32_t version;
	uint32_t mode; /* abox_net_mode */
	/* NULL-terminated lists, filtered mode only. allow_out: IP addresses,
	 * CIDR blocks, names ("example.com"; "*.example.com" for the names
	 * below it; "*" for any); names need "0.0.0.0/0" in deny_out.
	 * deny_out: IP addresses and CIDR blocks; "0.0.0.0/0" refuses all
	 * that allow_out does not name. allow_out wins over deny_out. */
	const char *const *allow_out;
	const char *const *deny_out;
} abox_net_opts;
#define ABOX_NET_OPTS_INIT                                                                                   \
	{                                                                                                    \
		ABOX_NET_OPTS_VERSION, ABOX_NET_NONE, NULL, NULL                                             \
	}

/* Checks network options as abox_sandbox_create and
 * abox_sandbox_set_network do, making nothing. The message is the cause
 * alone, in E2B's words where E2B has them ("invalid denied CIDR x",
 * "invalid allowed address x", "When specifying allowed domains in allow
 * out, you must include 'ALL_TRAFFIC' in deny out to block all other
 * traffic."). */
ABOX_EXPORT int abox_net_check(const abox_net_opts *net, abox_error *err);

#define ABOX_SANDBOX_OPTS_VERSION 5
typedef struct abox_sandbox_opts {
	uint32_t version;
	uint32_t flags;            /* ABOX_SANDBOX_* */
	const char *template_name; /* NULL: "host" */
	uint64_t memory_bytes;     /* 0: 512 MiB */
	uint64_t disk_bytes;       /* 0: 1 GiB (size of the writable layer) */
	uint64_t pids;             /* 0: 512 */
	uint32_t cpu_millis;       /* 0: 1000 (one CPU) */
	uint32_t timeout_ms;       /* 0: none; the sandbox is killed at the deadline */
	const char *seccomp_policy; /* path; NULL: the default policy */
	const char *const *metadata; /* NULL-terminated "key=value" entries, or NULL */
	const char *const *env;      /* "K=V" for every command of the sandbox (a command's own env wins), or NULL */
	/* version 2 */
	const char *snapshot;        /* id or name: start from that snapshot's files (and its template) */
	/* version 3 */
	const abox_net_opts *net; /* NULL: ABOX_NET_NONE */
	/* version 4: an OCI container (docs/kubernetes.md): the folder of an
	 * OCI runtime bundle, whose config.json gives the root filesystem
	 * (used in place, not copied), mounts, hostname, limits, network
	 * namespace to join and the container's process. The process is
	 * held until abox_sandbox_start; when it ends, the sandbox's init
	 * ends with its exit status (128 + signal when killed). What abox
	 * cannot honour in the config is an error naming its JSON path. Then
	 * template_name, snapshot, net, env and the limits above must be
	 * unset, the sandbox is long-lived, and its init keeps the creator's
	 * stdin, stdout and stderr for the process. */
	const char *oci_bundle;
	/* with oci_bundle and the config's process.terminal: receives the
	 * master of the process's terminal (close-on-exec; the caller's to
	 * hand to its engine and close). NULL: it is closed. */
	int *oci_console;
	/* version 5: with oci_bundle, the caller's fds 3 .. 3 + N - 1 are
	 * given to the container's process as its own 3 .. 3 + N - 1 (runc's
	 * --preserve-fds; at most 256, each must be open) */
	unsigned oci_preserve_fds;
} abox_sandbox_opts;
#define ABOX_SANDBOX_OPTS_INIT                                                                               \
	{                                                                                                    \
		ABOX_SANDBOX_OPTS_VERSION, 0, NULL, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, \
			0                                                                                    \
	}

/* Creates and starts a sandbox. On failure nothing is left behind. *out is
 * owned by the caller. */
ABOX_EXPORT int abox_sandbox_create(abox_ctx *ctx, const abox_sandbox_opts *opts,
				    abox_sandbox **out, abox_error *err);
/* Starts an OCI container's process (abox_sandbox_opts.oci_bundle) and
 * returns once it runs (*pid: its pid in the sandbox, may be NULL); its
 * exec failure is the error. -EALREADY when it was started before. */
ABOX_EXPORT int abox_sandbox_start(abox_sandbox *sb, int *pid, abox_error *err);
/* Kills a long-lived sandbox when it runs and removes what it left (its
 * cgroups, runtime folder, record), also when its init has ended already
 * (what abox_gc does, for this one alone). -ENOENT when there is no such
 * sandbox. */
ABOX_EXPORT int abox_sandbox_remove(abox_ctx *ctx, const char *id, abox_error *err);
/* Attaches to a long-lived sandbox by id. -ENOENT when there is no such
 * sandbox, -ESRCH when it is recorded but its init is gone (abox_gc
 * removes it). *out is owned by the caller; freeing it does not end the
 * sandbox. */
ABOX_EXPORT int abox_sandbox_connect(abox_ctx *ctx, const char *id, abox_sandbox **out, abox_error *err);

typedef enum abox_sandbox_state {
	ABOX_STATE_RUNNING = 1,
	ABOX_STATE_DEAD = 2, /* recorded, but its init is gone: abox_gc removes it */
	ABOX_STATE_PAUSED = 3, /* frozen by abox_sandbox_pause; its timeout clock is stopped */
} abox_sandbox_state;

#define ABOX_SANDBOX_INFO_VERSION 1
typedef struct abox_sandbox_info {
	uint32_t version;   /* set by the caller to ABOX_SANDBOX_INFO_VERSION */
	char id[ABOX_ID_LEN + 1];
	abox_sandbox_state state;
	int pid;            /* init, in the host's pid namespace */
	int64_t created_ms; /* Unix time in ms */
	int64_t deadline_ms; /* Unix time in ms; 0 = no timeout */
	char template_name[64];
	uint64_t memory_bytes, disk_bytes, pids;
	uint32_t cpu_millis;
	char *metadata_json; /* {"key":"value",...}; free with abox_sandbox_info_clear */
} abox_sandbox_info;

/* Information on a long-lived sandbox, from its record and a liveness check
 * (a reused pid is never taken for the sandbox's init). */
ABOX_EXPORT int abox_sandbox_info_get(abox_ctx *ctx, const char *id, abox_sandbox_info *out,
				      abox_error *err);
ABOX_EXPORT void abox_sandbox_info_clear(abox_sandbox_info *info);
/* Ids of all long-lived sandboxes, running or dead. *ids is a malloc'd
 * NULL-terminated array owned by the caller: free with abox_strv_free. */
ABOX_EXPORT int abox_sandbox_list(abox_ctx *ctx, char ***ids, abox_error *err);

#define ABOX_LIST_OPTS_VERSION 1
typedef struct abox_list_opts {
	uint32_t version;
	abox_sandbox_state state;      /* 0: any */
	const char *const *metadata;   /* "key=value" entries that must all match, or NULL */
	uint32_t limit;                /* 0: no limit */
	const char *next_token;        /* from the previous page, or NULL */
} abox_list_opts;
#define ABOX_LIST_OPTS_INIT { ABOX_LIST_OPTS_VERSION, 0, NULL, 0, NULL }

/* Sandboxes matching opts, in id order, one page at a time. *infos is a
 * malloc'd array of *n entries (clear each with abox_sandbox_info_clear,
 * then free the array); *next is a malloc'd token for the next page, or
 * NULL on the last one (next itself may be NULL: no more pages wanted). */
ABOX_EXPORT int abox_sandbox_query(abox_ctx *ctx, const abox_list_opts *opts, abox_sandbox_info **infos,
				   size_t *n, char **next, abox_error *err);
ABOX_EXPORT void abox_strv_free(char **v);

/* 20 characters of [a-z0-9]; owned by the sandbox handle. */
ABOX_EXPORT const char *abox_sandbox_id(const abox_sandbox *sb);
/* Kills every process of the sandbox and removes its mounts, cgroups,
 * sockets and state. Idempotent. */
ABOX_EXPORT int abox_sandbox_kill(abox_sandbox *sb, abox_error *err);
/* Releases the handle; an ephemeral sandbox is killed, a long-lived one
 * keeps running. Accepts NULL. */
ABOX_EXPORT void abox_sandbox_free(abox_sandbox *sb);
/* Moves a long-lived sandbox's deadline to timeout_ms from now, earlier or
 * later (0: no timeout). Its init enforces it even with no abox process
 * running. */
ABOX_EXPORT int abox_sandbox_set_timeout(abox_sandbox *sb, uint32_t timeout_ms, abox_error *err);

#define ABOX_LIMITS_VERSION 2
typedef struct abox_limits {
	uint32_t version; /* ABOX_LIMITS_VERSION */
	uint64_t memory_bytes; /* the commands' memory (as abox_sandbox_opts'); 0: unchanged */
	uint64_t pids; /* 0: unchanged */
	uint32_t cpu_millis; /* 1000 = one CPU; 0: unchanged */
	/* CPU weight as OCI's cpu.shares (2..262144, 1024 the default); 0: unchanged */
	uint32_t cpu_shares;
	/* version 2: the CPU limit as a CFS quota (OCI's cpu.quota), instead
	 * of cpu_millis, over cpu_period_us (1000..1000000) or, 0, over the
	 * period in force; 0: unchanged */
	uint64_t cpu_quota_us;
	uint32_t cpu_period_us;
	/* version 2: an OCI container's cpuset (the kernel's list format,
	 * "0-3,6"), its CPUs and memory nodes; NULL: unchanged */
	const char *cpuset_cpus, *cpuset_mems;
} abox_limits;
#define ABOX_LIMITS_INIT                                                                                     \
	{                                                                                                    \
		ABOX_LIMITS_VERSION, 0, 0, 0, 0, 0, 0, NULL, NULL                                            \
	}
/* Changes a running sandbox's limits (`abox oci update`): those set in l,
 * the others stay; recorded, so a resume or restore keeps them. A memory
 * limit below what the sandbox uses makes the kernel reclaim, or fail
 * with -EBUSY (cgroup v1) or OOM-kill (v2) as for any cgroup. A sandbox
 * made without a memory limit gets one on its whole cgroup (init's
 * share included). Not over a remote daemon (-EOPNOTSUPP). */
ABOX_EXPORT int abox_sandbox_set_limits(abox_sandbox *sb, const abox_limits *l, abox_error *err);

/* Freezes every process of a long-lived sandbox (its cgroup's freezer)
 * and returns once the kernel reports it frozen. A paused sandbox uses no
 * CPU, keeps its memory, and its timeout clock stops; commands and file
 * requests fail with -EAGAIN ("paused") until abox_sandbox_resume; kill
 * works. -EALREADY when it is paused already. */
ABOX_EXPORT int abox_sandbox_pause(abox_sandbox *sb, abox_error *err);
/* Pause without memory (E2B's keepMemory=false): the sandbox's files are
 * kept (a snapshot layer of their own), every process ends and its memory
 * is freed. abox_sandbox_resume then starts a fresh init on those files,
 * with the same id, limits, environment and metadata; background
 * processes are gone. Works on a running or a paused sandbox. */
#define ABOX_PAUSE_NO_MEMORY (1u << 0)
/* Pause to disk (E2B's pause): the processes are checkpointed by the
 * checkpoint hook (CRIU) into the state folder, with the files as in
 * ABOX_PAUSE_NO_MEMORY, and their memory is freed; abox_sandbox_resume
 * restores them where they were (a running counter keeps counting). Fails
 * with -EOPNOTSUPP, the sandbox untouched, when there is no working
 * checkpointer (`abox doctor`). */
#define ABOX_PAUSE_TO_DISK (1u << 1)

ABOX_EXPORT int abox_sandbox_pause_flags(abox_sandbox *sb, uint32_t flags, abox_error *err);
/* Thaws a paused sandbox: processes go on where they were, the deadline
 * moves by the time spent paused. -EALREADY when it is not paused. */
ABOX_EXPORT int abox_sandbox_resume(abox_sandbox *sb, abox_error *err);
#define ABOX_METRICS_VERSION 1
typedef struct abox_metrics {
	uint32_t version;       /* set by the caller to ABOX_METRICS_VERSION */
	int64_t timestamp_ms;   /* Unix time in ms */
	uint64_t cpu_used_usec; /* CPU time since create; UINT64_MAX if the host cannot tell */
	double cpu_pct;         /* % of one CPU since the previous call on this handle (the first: since create) */
	uint64_t mem_used, mem_limit;   /* bytes (the writable layer lives in memory and counts) */
	uint64_t disk_used, disk_limit; /* bytes of the writable layer */
	uint64_t pids;          /* processes and threads */
} abox_metrics;

/* What the sandbox uses now. */
ABOX_EXPORT int abox_sandbox_metrics(abox_sandbox *sb, abox_metrics *out, abox_error *err);
/* Replaces a long-lived sandbox's egress policy, atomically: no packet
 * meets half of the old one and half of the new, and flows to what the
 * new one denies are cut. The mode can change between open and filtered;
 * a sandbox made without networking (ABOX_NET_NONE) cannot get it later
 * (-EOPNOTSUPP), nor lose it (use filtered with deny_out 0.0.0.0/0). */
ABOX_EXPORT int abox_sandbox_set_network(abox_sandbox *sb, const abox_net_opts *net, abox_error *err);

#define ABOX_NET_INFO_VERSION 1
typedef struct abox_net_info {
	uint32_t version; /* set by the caller to ABOX_NET_INFO_VERSION */
	uint32_t mode; /* abox_net_mode in force */
	char **allow_out; /* as given, NULL-terminated or NULL */
	char **deny_out;
	char address[16]; /* the sandbox's IPv4 address; "" without networking */
	char gateway[16]; /* where its DNS goes */
	uint64_t tx_bytes, rx_bytes; /* sent and received through its interface */
	uint64_t dns_queries, dns_refused; /* refused: names its policy does not allow */
	uint64_t proxy_connections, proxy_refused; /* decided by name (filtered with names) */
	uint64_t dns_rebind_dropped; /* answers emptied: an allowed name gave a private address */
	uint64_t proxy_bytes_out, proxy_bytes_in;
	/* on a host without CAP_NET_ADMIN egress is relayed, proxy only: the
	 * HTTP/SOCKS5 proxy its processes are given ("127.0.0.1:3128");
	 * "" when its traffic is routed (address and gateway then set) */
	char proxy[24];
} abox_net_info;

/* A long-lived sandbox's network: its policy and counters. Free what it
 * holds with abox_net_info_clear. */
ABOX_EXPORT int abox_sandbox_network(abox_ctx *ctx, const char *id, abox_net_info *out, abox_error *err);
ABOX_EXPORT void abox_net_info_clear(abox_net_info *info);

#define ABOX_NET_TOTALS_VERSION 1
typedef struct abox_net_totals {
	uint32_t version; /* set by the caller to ABOX_NET_TOTALS_VERSION */
	uint32_t sandboxes; /* with networking, served now */
	uint64_t tx_bytes, rx_bytes;
	uint64_t dns_queries, dns_refused, dns_rebind_dropped;
	uint64_t proxy_connections, proxy_refused;
	/* packets refused by the kernel: to the host or another sandbox, to
	 * the always-denied ranges, to TCP 25, by the sandbox's own policy */
	uint64_t refused_host, refused_private, refused_smtp, refused_policy;
} abox_net_totals;
/* Every sandbox's network counters, added up (zeros when none has
 * networking: nothing is started to ask). */
ABOX_EXPORT int abox_net_totals_get(abox_ctx *ctx, abox_net_totals *out, abox_error *err);

/* Number of processes the kernel's OOM killer ended inside the sandbox. */
ABOX_EXPORT int abox_sandbox_oom_kills(abox_sandbox *sb, uint64_t *out, abox_error *err);
/* Effective memory limit in bytes. */
ABOX_EXPORT uint64_t abox_sandbox_memory_limit(const abox_sandbox *sb);

#ifdef __cplusplus
}
#endif
#endif
