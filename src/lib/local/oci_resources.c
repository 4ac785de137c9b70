/* local/oci_resources.c — an OCI config's huge page limits and cgroup v2
 * files (linux.resources.hugepageLimits, .unified): checked before
 * anything is made, the files written into the container's cgroup before
 * its process starts. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "local/local.h"
#include "local/create_oci.h"
#include "cgroup/cgroup.h"

/* What the host's pool of one page size can give a cgroup at most, in
 * bytes (its pages and the surplus it may add), or -1 when the host has no
 * pool of that size. */
static int64_t pool_bytes(uint64_t kb)
{
	uint64_t total = 0;
	static const char *const files[] = { "nr_hugepages", "nr_overcommit_hugepages" };
	for (size_t i = 0; i < ELEMENTSOF(files); i++) {
		char path[128];
		snprintf(path, sizeof(path), "/sys/kernel/mm/hugepages/hugepages-%" PRIu64 "kB/%s", kb,
			 files[i]);
		FILE *f = fopen(path, "re");
		unsigned long long n = 0;
		bool ok = f && fscanf(f, "%llu", &n) == 1;
		if (f)
			fclose(f);
		if (!ok)
			return -1;
		total += n;
	}
	return (int64_t)(total * kb * 1024);
}

int oci_hugepages_check(const struct oci_resources *res, char *warning, size_t wn, abox_error *err)
{
	for (size_t i = 0; i < res->nhugepages; i++) {
		const struct oci_hugepage *h = &res->hugepages[i];
		int64_t pool = pool_bytes(h->page_kb);
		if (pool < 0)
			return abox_error_setx(
				err, EINVAL,
				"linux.resources.hugepageLimits[%zu].pageSize: '%s' is not a huge "
				"page size of this host",
				i, h->page_size);
		/* held when the host could not give more anyway (a kubelet
		 * sends a limit of 0 for every size the pod does not ask for,
		 * most hosts keep no pool); else said: abox makes no hugetlb
		 * cgroup */
		if ((uint64_t)pool > h->limit) {
			size_t w = strlen(warning);
			snprintf(warning + w, wn - w,
				 "%slinux.resources.hugepageLimits: %s pages read and not enforced (the "
				 "host's "
				 "pool holds %" PRId64 " bytes, the limit is %" PRIu64 ")",
				 w ? "; " : "", h->page_size, pool, h->limit);
		}
	}
	return 0;
}

/* Files abox itself keeps in a sandbox's cgroup: which processes are in
 * it, its sub-cgroups' controllers, freezing and killing. */
static const char *const abox_files[] = { "cgroup.procs", "cgroup.threads", "cgroup.subtree_control",
					  "cgroup.kill",  "cgroup.freeze",  "cgroup.type" };

/* Files that take CPUs away from the host's other cgroups (an exclusive
 * or isolated cpuset partition). */
static const char *const host_files[] = { "cpuset.cpus.partition", "cpuset.cpus.exclusive" };

/* Whether "name=value" names one of list's n files. */
static bool names_one(const char *kv, const char *const *list, size_t n)
{
	size_t len = strcspn(kv, "=");
	for (size_t k = 0; k < n; k++)
		if (strlen(list[k]) == len && !strncmp(kv, list[k], len))
			return true;
	return false;
}

int oci_unified_check(const struct oci_resources *res, abox_error *err)
{
	for (size_t i = 0; res->unified && res->unified[i]; i++) {
		const char *kv = res->unified[i];
		char name[72]; /* the parser keeps names to 64 bytes */
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(kv, "="), kv);
		if (names_one(kv, host_files, ELEMENTSOF(host_files)))
			return abox_error_setx(
				err, EPERM,
				"linux.resources.unified.%s: would take CPUs from the host's other "
				"cgroups",
				name);
		if (names_one(kv, abox_files, ELEMENTSOF(abox_files)))
			return abox_error_setx(err, EPERM,
					       "linux.resources.unified.%s: abox's own to write (it places, "
					       "freezes and kills the container's processes)",
					       name);
	}
	return 0;
}

int oci_unified_apply(abox_sandbox *sb, const struct oci_resources *res, abox_error *err)
{
	for (size_t i = 0; res->unified && res->unified[i]; i++) {
		char name[72];
		const char *kv = res->unified[i], *eq = strchr(kv, '=');
		snprintf(name, sizeof(name), "%.*s", (int)(eq - kv), kv);
		abox_error e = ABOX_ERROR_INIT;
		int r = cgroup_unified_write(sb->cg, name, eq + 1, &e);
		if (r == -ENOENT)
			return abox_error_setx(
				err, ENOENT,
				"linux.resources.unified.%s: not a file of the container's "
				"cgroup v2 folder (its controller is on cgroup v1 on this host, or "
				"not enabled below abox's cgroup)",
				name);
		if (r < 0)
			return abox_error_setx(err, -r, "linux.resources.unified.%s: %s", name, e.msg);
	}
	return 0;
}

int oci_blkio_apply(abox_sandbox *sb, const struct oci_resources *res, abox_error *err)
{
	if (!res->has_blkio_weight || !res->blkio_weight)
		return 0;
	/* blkio.weight 10..1000 onto io.weight 1..10000, as runc maps them */
	unsigned bw = res->blkio_weight < 10 ? 10 : res->blkio_weight;
	char w[16];
	snprintf(w, sizeof(w), "%u", 1 + (bw - 10) * 9999 / 990);
	abox_error e = ABOX_ERROR_INIT;
	int r = cgroup_unified_write(sb->cg, "io.weight", w, &e);
	if (r == -ENOENT) {
		backend_log(
			sb->ctx, ABOX_LOG_WARNING,
			"create: linux.resources.blockIO.weight: read and not enforced (no io controller on "
			"cgroup v2 for abox's cgroups on this host)");
		return 0;
	}
	if (r < 0)
		return abox_error_setx(err, -r, "linux.resources.blockIO.weight: %s", e.msg);
	return 0;
}

int oci_cpuset_plan(abox_ctx *ctx, const char *id, struct oci_create *oc, char *planned, size_t n,
		    abox_error *err)
{
	const struct oci_resources *res = &oc->spec.resources;
	bool asked = (res->cpu_cpus && *res->cpu_cpus) || (res->cpu_mems && *res->cpu_mems);
	abox_error why = ABOX_ERROR_INIT;
	/* planned (and recorded) whether asked for or not: an update may
	 * set a cpuset later (a kubelet's static CPU manager does) */
	int r = cgroup_cpuset_plan(&ctx->cg, ctx->cgroup_parent, id, oc->cpuset_dir, sizeof(oc->cpuset_dir),
				   &why);
	if (r == -EOPNOTSUPP) {
		if (asked)
			backend_log(ctx, ABOX_LOG_WARNING,
				    "create %s: linux.resources.cpu.cpus/mems not enforced: %s", id, why.msg);
		return 0;
	}
	if (r < 0) {
		if (err)
			*err = why;
		return r;
	}
	size_t used = strlen(planned), k = strlen(oc->cpuset_dir);
	if (k && used + k + 2 > n)
		return abox_error_setx(err, ENOBUFS, "cgroup: too many folders");
	if (k) {
		memcpy(planned + used, oc->cpuset_dir, k);
		memcpy(planned + used + k, "\n", 2);
	}
	oc->cpuset = asked;
	return 0;
}

int oci_cpuset_apply(abox_sandbox *sb, const struct oci_create *oc, abox_error *err)
{
	if (!oc->cpuset)
		return 0;
	const struct oci_resources *res = &oc->spec.resources;
	return cgroup_cpuset_apply(sb->cg, oc->cpuset_dir, sb->ctx->cgroup_parent_own, res->cpu_cpus,
				   res->cpu_mems, err);
}

int oci_cpu_prepare(struct oci_create *oc, abox_error *err)
{
	const struct oci_resources *res = &oc->spec.resources;
	if (res->cpu_quota > 0) {
		/* kept as given (runc's 100 ms without a period) */
		unsigned period = res->cpu_quota_period ? (unsigned)res->cpu_quota_period : 100000;
		if (period < 1000)
			return abox_error_setx(err, EINVAL, "linux.resources.cpu.period: %u is below 1000",
					       period);
		uint64_t m = (uint64_t)res->cpu_quota * 1000 / period;
		oc->cpu_millis = m > UINT32_MAX ? UINT32_MAX : m ? (uint32_t)m : 1;
		oc->cpu_period = (uint32_t)period;
		oc->cpu_quota = (uint64_t)res->cpu_quota;
	}
	if (res->cpu_shares > 0)
		oc->cpu_shares = res->cpu_shares > 262144 ? 262144 : (uint32_t)res->cpu_shares;
	return 0;
}
