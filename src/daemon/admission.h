/* admission — what aboxd lets a key have: maxima per sandbox, quotas per
 * API key (concurrent sandboxes, memory, disk, snapshot storage) and the
 * host's capacity (see admission.c). Runs in aboxd. */
#ifndef ABOX_DAEMON_ADMISSION_H
#define ABOX_DAEMON_ADMISSION_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <abox/abox.h>

/* 0 in a field: no limit (for the per-sandbox maxima: the host's size). */
struct admission_limits {
	uint64_t sandbox_memory_mb, sandbox_disk_mb;
	uint32_t sandbox_cpus, sandbox_timeout_s;
	uint32_t key_sandboxes;
	uint64_t key_memory_mb, key_disk_mb, key_snapshot_mb;
	uint32_t host_overcommit;     /* memory limits of running sandboxes may add up to this many times the host's */
	uint64_t host_reserve_mb;     /* memory and disk kept free on the host */
};

extern struct admission_limits admission_cfg;

/* The config file's "limits" object; then the ABOXD_LIMIT_* environment
 * (which wins). -1 with why on a bad value. */
int admission_configure(json_object *limits, char *why, size_t whyn);
int admission_from_env(char *why, size_t whyn);

/* What a create or a fork asks for: count sandboxes of this size. */
struct admission_ask {
	const char *owner;            /* the key's owner tag */
	uint64_t memory_bytes, disk_bytes;
	uint32_t cpu_millis, timeout_s;
	unsigned count;
	bool resume;                  /* a paused sandbox coming back: quotas and capacity only */
};

/* A reservation held from admission until the sandboxes exist. */
struct admission_ticket {
	struct admission_ticket *next;
	char owner[17];
	uint64_t memory_bytes, disk_bytes;
	unsigned count;
	bool held;
};

/* 0: admitted, *t holds the reservation (release it once the create is
 * over, made or not). Else the HTTP status (400: over a per-sandbox
 * maximum; 429: over a key's quota or the host's capacity) and why, naming
 * the limit. */
unsigned admission_admit(abox_ctx *ctx, const struct admission_ask *a, struct admission_ticket *t, char *why,
			 size_t whyn);
void admission_release(struct admission_ticket *t);
/* Snapshot storage of owner (every block below its snapshots' folders):
 * 0 when that plus extra_bytes is within its quota, else 429 and why. */
unsigned admission_snapshot(abox_ctx *ctx, const char *owner, uint64_t extra_bytes, char *why, size_t whyn);

#endif
