/* local/oci_userns.c — an OCI container's user namespace (Kubernetes'
 * hostUsers: false): made from the config's linux.uidMappings and
 * gidMappings, or joined by path (a pod's, which abox made for the pod's
 * sandbox container).
 *
 * It works as abox's own sandboxes' namespaces do (spawn/userns.h): the
 * mounts, cgroups and every other namespace are made by host root before
 * init joins it, so they stay owned by the host's user namespace and the
 * container's root, whatever capabilities it keeps within its own, cannot
 * remount, reconfigure its network or leave its cgroup. Init is exec'd as
 * the host id the container's root maps to and joins the namespace as its
 * owner, so its /proc files stay host root's. What abox asks of the maps
 * follows from that: root (uid and gid 0) mapped, to one host id that
 * owns the namespace; never host id 0 (a container whose root is the
 * host's root is no container of a user namespace); never an id of abox's
 * own pool (a pod and a sandbox would share host ids, and each could
 * reach the other's files and processes). */
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "local/local.h"
#include "local/create_oci.h"
#include "spawn/userns.h"
#include "store/uidpool.h"

#ifndef NS_GET_NSTYPE
#define NS_GET_NSTYPE _IO(0xb7, 0x3)
#endif
#ifndef NS_GET_PARENT
#define NS_GET_PARENT _IO(0xb7, 0x2)
#endif
#ifndef NS_GET_OWNER_UID
#define NS_GET_OWNER_UID _IO(0xb7, 0x4)
#endif

bool oci_idmap_host(const struct oci_idmap *m, unsigned n, uint32_t id, uint32_t *host)
{
	for (unsigned i = 0; i < n; i++)
		if (id >= m[i].container_id && id - m[i].container_id < m[i].size) {
			*host = m[i].host_id + (id - m[i].container_id);
			return true;
		}
	return false;
}

/* One map's lines: each range of host ids, none holding host id 0. */
static int check_map(const struct oci_idmap *m, unsigned n, const char *what, abox_error *err)
{
	for (unsigned i = 0; i < n; i++) {
		if (!m[i].size)
			return abox_error_setx(err, EINVAL, "%s[%u]: a mapping of size 0", what, i);
		if ((uint64_t)m[i].host_id + m[i].size > UINT32_MAX ||
		    (uint64_t)m[i].container_id + m[i].size > UINT32_MAX)
			return abox_error_setx(err, EINVAL, "%s[%u]: runs past the last id", what, i);
		if (m[i].host_id == 0)
			return abox_error_setx(
				err, EPERM,
				"%s[%u]: maps host id 0 into the container: abox never gives a "
				"container the host's root, with a user namespace or without",
				what, i);
	}
	return 0;
}

/* Whether the namespace fd is a child of the one this process runs in
 * (the owner's ids then hold every capability within it). */
static bool child_of_ours(int fd)
{
	int parent = ioctl(fd, NS_GET_PARENT);
	if (parent < 0)
		return false;
	struct stat p, mine;
	bool yes = fstat(parent, &p) == 0 && stat("/proc/self/ns/user", &mine) == 0 &&
		   p.st_dev == mine.st_dev && p.st_ino == mine.st_ino;
	close(parent);
	return yes;
}

int oci_userns_prepare(struct oci_create *oc, abox_error *err)
{
	const struct oci_spec *s = &oc->spec;
	if (!s->ns_wanted[OCI_NS_USER])
		return 0;
	int r;
	if ((r = check_map(s->uid_map, s->nuid, "linux.uidMappings", err)) < 0 ||
	    (r = check_map(s->gid_map, s->ngid, "linux.gidMappings", err)) < 0)
		return r;
	uint32_t uid0 = 0, gid0 = 0;
	bool have_u = oci_idmap_host(s->uid_map, s->nuid, 0, &uid0),
	     have_g = oci_idmap_host(s->gid_map, s->ngid, 0, &gid0);
	const char *path = s->ns_path[OCI_NS_USER];
	if (!path && (!have_u || !have_g))
		return abox_error_setx(err, EINVAL,
				       "linux.uidMappings: a new user namespace needs uid 0 and gid 0 mapped "
				       "(abox's init runs as the container's root)");
	if (have_u && have_g && uid0 != gid0)
		return abox_error_setx(
			err, EINVAL,
			"linux.gidMappings: gid 0 maps to host gid %u and uid 0 to host uid %u: "
			"abox needs the same host id for both (as Kubernetes maps them)",
			gid0, uid0);
	oc->userns_base = uid0;
	if (path) {
		int fd = oc->userns_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return abox_error_set(err, errno, "linux.namespaces: user path '%s'", path);
		if (ioctl(fd, NS_GET_NSTYPE) != CLONE_NEWUSER)
			return abox_error_setx(err, EINVAL, "linux.namespaces: '%s' is not a user namespace",
					       path);
		/* the runtime's own (the host's) would be no namespace at all,
		 * and one of another's nesting is not ours to hand out */
		uid_t owner = (uid_t)-1;
		if (!child_of_ours(fd) || ioctl(fd, NS_GET_OWNER_UID, &owner) < 0)
			return abox_error_setx(
				err, EPERM,
				"linux.namespaces: the user path '%s' is not a user namespace made "
				"from the runtime's own",
				path);
		/* init joins it as its owner, the id the container's root is:
		 * a namespace another runtime (or host root) made is refused */
		if (owner == 0 || ((have_u || have_g) && owner != uid0))
			return abox_error_setx(
				err, EPERM,
				"linux.namespaces: the user namespace '%s' belongs to host uid %u, not to "
				"the "
				"id the container's root maps to: abox joins only one it made for a pod",
				path, (unsigned)owner);
		oc->userns_base = owner;
	}
	oc->userns = true;
	return 0;
}

int oci_userns_idopt(const struct oci_create *oc, size_t i, const char *o, char *out, size_t n,
		     abox_error *err)
{
	char *end;
	errno = 0;
	unsigned long id = strtoul(o + 4, &end, 10);
	uint32_t host;
	bool gid = o[0] == 'g';
	if (errno || end == o + 4 || *end || id > UINT32_MAX)
		return abox_error_setx(err, EINVAL, "mounts[%zu].options: '%s' is not an id", i, o);
	if (!oci_idmap_host(gid ? oc->spec.gid_map : oc->spec.uid_map, gid ? oc->spec.ngid : oc->spec.nuid,
			    (uint32_t)id, &host))
		return abox_error_setx(err, EINVAL,
				       "mounts[%zu].options: '%s' is not mapped in the container", i, o);
	snprintf(out, n, "%cid=%u", o[0], host);
	return 0;
}

/* "inside host count" lines of one map. */
static int map_text(const struct oci_idmap *m, unsigned n, char *out, size_t len, abox_error *err)
{
	size_t used = 0;
	out[0] = '\0';
	for (unsigned i = 0; i < n; i++) {
		int k = snprintf(out + used, len - used, "%u %u %u\n", m[i].container_id, m[i].host_id,
				 m[i].size);
		if (k < 0 || (size_t)k >= len - used)
			return abox_error_setx(err, E2BIG, "linux.uidMappings: too many mappings (%u)", n);
		used += (size_t)k;
	}
	return 0;
}

int oci_userns_begin(abox_ctx *ctx, struct oci_create *oc, struct userns_job *j, abox_error *err)
{
	*j = (struct userns_job){ .pid = -1, .ready_fd = -1 };
	if (!oc->userns)
		return 0;
	/* no host id shared with a sandbox of abox's pool */
	struct uidpool_cfg pool;
	int r = uidpool_config(ctx->state_dir, &pool, err);
	if (r < 0)
		return r;
	uint64_t lo = pool.start, hi = (uint64_t)pool.start + (uint64_t)pool.ranges * UIDPOOL_RANGE;
	const struct oci_spec *s = &oc->spec;
	for (int g = 0; g < 2; g++) {
		const struct oci_idmap *m = g ? s->gid_map : s->uid_map;
		unsigned n = g ? s->ngid : s->nuid;
		for (unsigned i = 0; i < n; i++)
			if (m[i].host_id < hi && (uint64_t)m[i].host_id + m[i].size > lo)
				return abox_error_setx(
					err, EBUSY,
					"linux.%s[%u]: host ids %u-%u overlap abox's own pool of sandbox ids "
					"(%llu-%llu, %s): give the container engine's range an /etc/subuid "
					"entry, which abox's pool leaves out, or move the pool",
					g ? "gidMappings" : "uidMappings", i, m[i].host_id,
					m[i].host_id + m[i].size - 1, (unsigned long long)lo,
					(unsigned long long)hi - 1, pool.path[0] ? pool.path : "the default");
	}
	if (oc->userns_fd >= 0)
		return 0; /* joined: made for the pod already */
	char um[1280], gm[1280];
	if ((r = map_text(s->uid_map, s->nuid, um, sizeof(um), err)) < 0 ||
	    (r = map_text(s->gid_map, s->ngid, gm, sizeof(gm), err)) < 0)
		return r;
	return userns_begin_maps(oc->userns_base, um, gm, j, err);
}

static bool same_maps(const struct oci_idmap *a, unsigned na, const struct oci_idmap *b, unsigned nb)
{
	return na == nb && !memcmp(a, b, na * sizeof(*a));
}

int oci_idmap_prepare(const struct oci_create *oc, size_t i, bool bind, struct rootfs_oci_mount *out,
		      abox_error *err)
{
	const struct oci_mount *m = &oc->spec.mounts[i];
	if (!out->idmap && !m->nuid && !m->ngid)
		return 0;
	if (!bind)
		return abox_error_setx(err, EINVAL, "mounts[%zu]: only a bind can be idmapped (%s)", i,
				       out->idmap ? "idmap/ridmap in options" : "uidMappings/gidMappings");
	if (!out->idmap)
		return abox_error_setx(
			err, EINVAL,
			"mounts[%zu]: uidMappings/gidMappings without the idmap or ridmap option", i);
	if (!m->nuid != !m->ngid)
		return abox_error_setx(err, EINVAL,
				       "mounts[%zu]: an idmapped mount needs both uidMappings and "
				       "gidMappings, or neither (the container's own)",
				       i);
	char what[64];
	int r;
	snprintf(what, sizeof(what), "mounts[%zu].uidMappings", i);
	if ((r = check_map(m->uid_map, m->nuid, what, err)) < 0)
		return r;
	snprintf(what, sizeof(what), "mounts[%zu].gidMappings", i);
	if ((r = check_map(m->gid_map, m->ngid, what, err)) < 0)
		return r;
	const struct oci_spec *s = &oc->spec;
	bool theirs = !m->nuid || (same_maps(m->uid_map, m->nuid, s->uid_map, s->nuid) &&
				   same_maps(m->gid_map, m->ngid, s->gid_map, s->ngid));
	if (theirs && !oc->userns)
		return abox_error_setx(err, EINVAL,
				       "mounts[%zu]: idmapped through the container's user namespace, and it "
				       "has none (linux.namespaces)",
				       i);
	if (theirs)
		return 0; /* made later, with the container */
	char um[1280], gm[1280];
	struct userns_job j;
	if ((r = map_text(m->uid_map, m->nuid, um, sizeof(um), err)) < 0 ||
	    (r = map_text(m->gid_map, m->ngid, gm, sizeof(gm), err)) < 0 ||
	    (r = userns_begin_maps(m->uid_map[0].host_id, um, gm, &j, err)) < 0)
		return r;
	int fd = userns_finish(&j, err);
	if (fd < 0)
		return abox_error_prefix(err, "mounts[%zu]", i);
	out->idmap_fd = fd;
	return 0;
}
