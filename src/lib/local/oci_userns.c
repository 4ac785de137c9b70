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
#include <sys/wait.h>
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

/* One map's text ("inside host count" lines) into m. */
static int parse_map(char *text, struct oci_idmap *m, unsigned *n)
{
	*n = 0;
	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		unsigned a, b, c;
		if (sscanf(l, "%u %u %u", &a, &b, &c) != 3 || *n == OCI_MAX_IDMAPS)
			return -EPROTO;
		m[(*n)++] = (struct oci_idmap){ a, b, c };
	}
	return 0;
}

/* The maps the user namespace fd really has, as the host sees them: read
 * by a child that joined it (a reader inside sees the parent's ids). */
static int ns_maps(int fd, struct oci_idmap *u, unsigned *nu, struct oci_idmap *g, unsigned *ng,
		   abox_error *err)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return abox_error_set(err, errno, "user namespace: pipe");
	pid_t c = fork();
	if (c == 0) {
		close(p[0]);
		char *um = NULL, *gm = NULL;
		if (setns(fd, CLONE_NEWUSER) < 0 ||
		    read_file_at(AT_FDCWD, "/proc/self/uid_map", 8192, &um, NULL) < 0 ||
		    read_file_at(AT_FDCWD, "/proc/self/gid_map", 8192, &gm, NULL) < 0)
			_exit(1);
		_exit(write_full(p[1], um, strlen(um) + 1) < 0 || write_full(p[1], gm, strlen(gm) + 1) < 0);
	}
	close(p[1]);
	char buf[16384];
	size_t got = 0;
	ssize_t k;
	while (c > 0 && got < sizeof(buf) - 1 &&
	       ((k = read(p[0], buf + got, sizeof(buf) - 1 - got)) > 0 || (k < 0 && errno == EINTR)))
		got += k > 0 ? (size_t)k : 0;
	close(p[0]);
	int st = 0;
	while (c > 0 && waitpid(c, &st, 0) < 0 && errno == EINTR)
		;
	buf[got] = '\0';
	size_t first = strlen(buf);
	if (c < 0 || !WIFEXITED(st) || WEXITSTATUS(st) || first + 1 >= got || parse_map(buf, u, nu) < 0 ||
	    parse_map(buf + first + 1, g, ng) < 0)
		return abox_error_setx(err, EIO, "user namespace: its maps could not be read");
	return 0;
}

static bool same_maps(const struct oci_idmap *a, unsigned na, const struct oci_idmap *b, unsigned nb)
{
	return na == nb && !memcmp(a, b, na * sizeof(*a));
}

/* A user namespace to join by path: made from the runtime's own (the
 * host's would be no namespace at all, one of another's nesting not ours
 * to hand out), owned by the id its root maps to (init joins it as that
 * id), and its own maps (read from it, never taken from the config) as
 * a new one's must be; the config's maps, when given, the same. */
static int join_check(struct oci_create *oc, const char *path, abox_error *err)
{
	struct oci_spec *s = &oc->spec;
	int fd = oc->userns_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return abox_error_set(err, errno, "linux.namespaces: user path '%s'", path);
	if (ioctl(fd, NS_GET_NSTYPE) != CLONE_NEWUSER)
		return abox_error_setx(err, EINVAL, "linux.namespaces: '%s' is not a user namespace", path);
	uid_t owner = (uid_t)-1;
	if (!child_of_ours(fd) || ioctl(fd, NS_GET_OWNER_UID, &owner) < 0)
		return abox_error_setx(
			err, EPERM,
			"linux.namespaces: the user path '%s' is not a user namespace made from "
			"the runtime's own",
			path);
	struct oci_idmap u[OCI_MAX_IDMAPS], g[OCI_MAX_IDMAPS];
	unsigned nu = 0, ng = 0;
	int r = ns_maps(fd, u, &nu, g, &ng, err);
	if (r < 0)
		return abox_error_prefix(err, "linux.namespaces: '%s'", path);
	uint32_t uid0 = 0, gid0 = 0;
	if (owner == 0 || !oci_idmap_host(u, nu, 0, &uid0) || !oci_idmap_host(g, ng, 0, &gid0) ||
	    uid0 != owner || gid0 != owner)
		return abox_error_setx(
			err, EPERM,
			"linux.namespaces: the user namespace '%s' belongs to host uid %u, not to "
			"the id its root maps to: abox joins only one it made for a pod",
			path, (unsigned)owner);
	if ((s->nuid || s->ngid) &&
	    (!same_maps(u, nu, s->uid_map, s->nuid) || !same_maps(g, ng, s->gid_map, s->ngid)))
		return abox_error_setx(
			err, EINVAL,
			"linux.uidMappings/gidMappings: not the maps of the user namespace '%s' "
			"the container joins",
			path);
	memcpy(s->uid_map, u, nu * sizeof(*u));
	memcpy(s->gid_map, g, ng * sizeof(*g));
	s->nuid = nu;
	s->ngid = ng;
	return 0;
}

int oci_userns_prepare(struct oci_create *oc, abox_error *err)
{
	struct oci_spec *s = &oc->spec;
	if (!s->ns_wanted[OCI_NS_USER])
		return 0;
	int r;
	const char *path = s->ns_path[OCI_NS_USER];
	if (path && (r = join_check(oc, path, err)) < 0)
		return r;
	if ((r = check_map(s->uid_map, s->nuid, "linux.uidMappings", err)) < 0 ||
	    (r = check_map(s->gid_map, s->ngid, "linux.gidMappings", err)) < 0)
		return r;
	uint32_t uid0 = 0, gid0 = 0;
	if (!oci_idmap_host(s->uid_map, s->nuid, 0, &uid0) || !oci_idmap_host(s->gid_map, s->ngid, 0, &gid0))
		return abox_error_setx(err, EINVAL,
				       "linux.uidMappings: a new user namespace needs uid 0 and gid 0 mapped "
				       "(abox's init runs as the container's root)");
	if (uid0 != gid0)
		return abox_error_setx(
			err, EINVAL,
			"linux.gidMappings: gid 0 maps to host gid %u and uid 0 to host uid %u: "
			"abox needs the same host id for both (as Kubernetes maps them)",
			gid0, uid0);
	oc->userns_base = uid0;
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
	/* no host id shared with a sandbox of abox's pool: this context's,
	 * and the machine's own abox's (its state folder's userns.json) */
	const char *env = getenv("ABOX_ROOT");
	const char *pools[2] = { ctx->state_dir, env && *env ? env : "/var/lib/abox" };
	const struct oci_spec *s = &oc->spec;
	int r;
	for (int p = 0; p < 2; p++) {
		struct uidpool_cfg pool;
		if (p && !strcmp(pools[0], pools[1]))
			break;
		if ((r = uidpool_config(pools[p], &pool, err)) < 0)
			return r;
		for (int g = 0; g < 2; g++) {
			const struct oci_idmap *m = g ? s->gid_map : s->uid_map;
			unsigned n = g ? s->ngid : s->nuid;
			uint32_t slot;
			for (unsigned i = 0; i < n; i++)
				if (uidpool_overlaps(&pool, m[i].host_id, m[i].size, &slot))
					return abox_error_setx(
						err, EBUSY,
						"linux.%s[%u]: host ids %u-%u meet the range %u-%u of abox's "
						"own pool "
						"of sandbox ids (%s): give the container engine's range an "
						"/etc/subuid or /etc/subgid entry (the pool leaves those "
						"out) or "
						"move the pool",
						g ? "gidMappings" : "uidMappings", i, m[i].host_id,
						m[i].host_id + m[i].size - 1, slot, slot + UIDPOOL_RANGE - 1,
						pool.path[0] ? pool.path : "its defaults");
		}
	}
	if (oc->userns_fd >= 0)
		return 0; /* joined: made for the pod already */
	char um[1280], gm[1280];
	if ((r = map_text(s->uid_map, s->nuid, um, sizeof(um), err)) < 0 ||
	    (r = map_text(s->gid_map, s->ngid, gm, sizeof(gm), err)) < 0)
		return r;
	return userns_begin_maps(oc->userns_base, um, gm, j, err);
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

int oci_userns_devices(struct oci_create *oc, unsigned n, abox_error *err)
{
	for (unsigned i = 0; oc->userns && i < n; i++) {
		struct rootfs_oci_device *d = &oc->devices[i];
		uint32_t u, g;
		if (!oci_idmap_host(oc->spec.uid_map, oc->spec.nuid, (uint32_t)d->uid, &u) ||
		    !oci_idmap_host(oc->spec.gid_map, oc->spec.ngid, (uint32_t)d->gid, &g))
			return abox_error_setx(
				err, EINVAL,
				"linux.devices: '%s' is owned by %u:%u, which the container does not map",
				d->path, (unsigned)d->uid, (unsigned)d->gid);
		/* made outside the namespace: the host's ids of the owner */
		d->uid = u;
		d->gid = g;
	}
	return 0;
}
