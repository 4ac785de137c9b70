/* local/create_oci.c — see create_oci.h. What a config asks that abox
 * cannot do is refused here, before anything is made, naming its JSON
 * path; nothing in a config makes a container less confined than abox's
 * own sandboxes (its seccomp policy, capability set, /proc and /sys
 * masks, no_new_privs stand) unless its annotation says compat, and then
 * only as far as a container engine's default (confinement, refuse). */
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "local/local.h"
#include "local/create_oci.h"
#include "base/mountapi.h"
#include "caps/caps.h"
#include "cgroup/cgroup.h"
#include "proto/messages.h"
#include "spawn/spawn.h"

#ifndef NS_GET_USERNS
#define NS_GET_USERNS _IO(0xb7, 0x1)
#endif
#ifndef NS_GET_NSTYPE
#define NS_GET_NSTYPE _IO(0xb7, 0x3)
#endif

static char *own(struct oci_create *oc, char *s)
{
	if (!s)
		return NULL;
	char **n = realloc(oc->owned, (oc->nowned + 2) * sizeof(*n));
	if (!n) {
		free(s);
		return NULL;
	}
	oc->owned = n;
	n[oc->nowned++] = s;
	n[oc->nowned] = NULL;
	return s;
}

/* The mount options runc knows as flags; the rest is the filesystem's. */
static const struct {
	const char *name;
	unsigned long flag; /* MS_* set */
	uint64_t attr; /* the same as MOUNT_ATTR_* (binds) */
	bool clear;
} flag_opts[] = {
	{ "ro", MS_RDONLY, MOUNT_ATTR_RDONLY, false },
	{ "rw", MS_RDONLY, MOUNT_ATTR_RDONLY, true },
	{ "nosuid", MS_NOSUID, MOUNT_ATTR_NOSUID, false },
	{ "suid", MS_NOSUID, MOUNT_ATTR_NOSUID, true },
	{ "nodev", MS_NODEV, MOUNT_ATTR_NODEV, false },
	{ "dev", MS_NODEV, MOUNT_ATTR_NODEV, true },
	{ "noexec", MS_NOEXEC, MOUNT_ATTR_NOEXEC, false },
	{ "exec", MS_NOEXEC, MOUNT_ATTR_NOEXEC, true },
	{ "sync", MS_SYNCHRONOUS, 0, false },
	{ "async", MS_SYNCHRONOUS, 0, true },
	{ "dirsync", MS_DIRSYNC, 0, false },
	{ "noatime", MS_NOATIME, 0, false },
	{ "atime", MS_NOATIME, 0, true },
	{ "nodiratime", MS_NODIRATIME, 0, false },
	{ "relatime", MS_RELATIME, 0, false },
	{ "norelatime", MS_RELATIME, 0, true },
	{ "strictatime", MS_STRICTATIME, 0, false },
	{ "nostrictatime", MS_STRICTATIME, 0, true },
};

/* Propagation: every mount of a container is private to it whatever the
 * config says (a shared one would let its mounts reach the host). */
static bool propagation_opt(const char *o)
{
	static const char *const p[] = { "private", "rprivate", "slave",      "rslave",
					 "shared",  "rshared",  "unbindable", "runbindable" };
	for (size_t i = 0; i < ELEMENTSOF(p); i++)
		if (!strcmp(o, p[i]))
			return true;
	return false;
}

/* abox makes these itself (its own /proc with masks, /dev with its
 * nodes, a private devpts, a read-only /sys of the container's network):
 * the config's are the same thing asked for. */
static bool abox_owns(const struct oci_mount *m)
{
	static const struct {
		const char *dest, *type;
	} own_mounts[] = {
		{ "/proc", "proc" }, { "/dev", "tmpfs" }, { "/dev/pts", "devpts" }, { "/sys", "sysfs" }
	};
	for (size_t i = 0; i < ELEMENTSOF(own_mounts); i++)
		if (!strcmp(m->destination, own_mounts[i].dest) && m->type &&
		    !strcmp(m->type, own_mounts[i].type))
			return true;
	return false;
}

static int mount_prepare(struct oci_create *oc, const char *bundle, size_t i, struct rootfs_oci_mount *out,
			 abox_error *err)
{
	const struct oci_mount *m = &oc->spec.mounts[i];
	const char *type = m->type && *m->type ? m->type : NULL;
	bool bind = type && !strcmp(type, "bind");
	char data[4096];
	size_t used = 0;
	int r, ids = 0; /* uid= (1), gid= (2) given */
	data[0] = '\0';
	out->idmap_fd = -1;
	for (size_t k = 0; m->options && m->options[k]; k++) {
		const char *o = m->options[k];
		if (!strcmp(o, "bind") || !strcmp(o, "rbind")) {
			bind = true;
			out->recursive |= o[0] == 'r';
			continue;
		}
		if (propagation_opt(o))
			continue;
		if (!strcmp(o, "idmap") || !strcmp(o, "ridmap")) {
			out->idmap = true;
			out->idmap_recursive |= o[0] == 'r';
			continue;
		}
		if (!strcmp(o, "tmpcopyup") || !strcmp(o, "remount") || !strcmp(o, "mand") ||
		    !strcmp(o, "nomand") || !strncmp(o, "rro", 3) || !strncmp(o, "rnosuid", 7))
			return abox_error_setx(err, EOPNOTSUPP, "mounts[%zu].options: '%s' is not supported",
					       i, o);
		bool known = false;
		for (size_t f = 0; f < ELEMENTSOF(flag_opts) && !known; f++) {
			if (strcmp(o, flag_opts[f].name) != 0)
				continue;
			known = true;
			if (flag_opts[f].clear) {
				out->flags &= ~flag_opts[f].flag;
				out->attr_set &= ~flag_opts[f].attr;
			} else {
				out->flags |= flag_opts[f].flag;
				out->attr_set |= flag_opts[f].attr;
			}
		}
		if (known)
			continue;
		char idopt[32];
		if (oc->userns && !bind && (!strncmp(o, "uid=", 4) || !strncmp(o, "gid=", 4))) {
			if ((r = oci_userns_idopt(oc, i, o, idopt, sizeof(idopt), err)) < 0)
				return r;
			o = idopt;
			ids |= o[0] == 'u' ? 1 : 2;
		}
		int n = snprintf(data + used, sizeof(data) - used, "%s%s", used ? "," : "", o);
		if (n < 0 || (size_t)n >= sizeof(data) - used)
			return abox_error_setx(err, E2BIG, "mounts[%zu].options: too long", i);
		used += (size_t)n;
	}
	out->dest = m->destination;
	if ((r = oci_idmap_prepare(oc, i, bind, out, err)) < 0)
		return r;
	if (bind) {
		if (!m->source || !*m->source)
			return abox_error_setx(err, EINVAL, "mounts[%zu].source: a bind needs one", i);
		char path[4096];
		if (m->source[0] == '/')
			snprintf(path, sizeof(path), "%s", m->source);
		else
			snprintf(path, sizeof(path), "%s/%s", bundle, m->source);
		struct stat st;
		if (stat(path, &st) < 0)
			return abox_error_set(err, errno, "mounts[%zu].source: '%s'", i, path);
		if (!(out->source = own(oc, strdup(path))))
			return abox_error_set(err, ENOMEM, "mounts");
		out->file = !S_ISDIR(st.st_mode);
		out->type = NULL;
		/* a filesystem's options on a bind mean nothing to the kernel
		 * (runc passes them on, and they are dropped): said, not refused */
		if (used && !oc->warning[0])
			snprintf(oc->warning, sizeof(oc->warning),
				 "mounts[%zu].options: '%s' are not a bind's options, ignored", i, data);
		return 0;
	}
	if (!type)
		return abox_error_setx(err, EINVAL, "mounts[%zu].type: missing (and not a bind)", i);
	if (!strcmp(type, "cgroup") || !strcmp(type, "cgroup2")) {
		/* the container's own cgroup (its namespace's root) and only it,
		 * never writable: limits are abox's */
		type = "cgroup2";
		out->flags |= MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC;
		used = 0;
	} else if (strcmp(type, "tmpfs") != 0 && strcmp(type, "mqueue") != 0) {
		return abox_error_setx(
			err, EOPNOTSUPP,
			"mounts[%zu]: a '%s' mount on '%s' is not supported (abox makes /proc, /dev, "
			"/dev/pts and /sys itself; others may be bind, tmpfs, mqueue or cgroup)",
			i, type, m->destination);
	}
	/* with a user namespace, a tmpfs is its root's unless the config
	 * names an owner (as one mounted inside it would be): made by host
	 * root, it would belong to an id the container does not map */
	for (int k = 0; oc->userns && !strcmp(type, "tmpfs") && k < 2; k++) {
		if (ids & (1 << k))
			continue;
		int n = snprintf(data + used, sizeof(data) - used, "%s%cid=%u", used ? "," : "",
				 k ? 'g' : 'u', oc->userns_base);
		if (n < 0 || (size_t)n >= sizeof(data) - used)
			return abox_error_setx(err, E2BIG, "mounts[%zu].options: too long", i);
		used += (size_t)n;
	}
	out->type = type;
	out->source = m->source && *m->source ? m->source : type;
	out->data = used ? own(oc, strdup(data)) : NULL;
	if (used && !out->data)
		return abox_error_set(err, ENOMEM, "mounts");
	return 0;
}

static int namespaces(struct oci_create *oc, abox_error *err)
{
	const struct oci_spec *s = &oc->spec;
	static const enum oci_ns needed[] = { OCI_NS_PID, OCI_NS_MOUNT, OCI_NS_IPC, OCI_NS_UTS, OCI_NS_NET };
	for (size_t i = 0; i < ELEMENTSOF(needed); i++)
		if (!s->ns_wanted[needed[i]])
			return abox_error_setx(err, EOPNOTSUPP,
					       "linux.namespaces: no '%s' namespace: abox does not share the "
					       "host's with a container",
					       oci_ns_name(needed[i]));
	int r = oci_userns_prepare(oc, err);
	if (r < 0)
		return r;
	/* joined by path: the network one its engine (a CNI plugin) made,
	 * and a pod's ipc, uts and pid ones (its sandbox container's; the
	 * pid one when the pod shares it, abox-init then not its PID 1),
	 * and a mount one its engine made for it; never a cgroup one */
	static const struct {
		enum oci_ns ns;
		int type;
	} joinable[] = { { OCI_NS_NET, CLONE_NEWNET },
			 { OCI_NS_IPC, CLONE_NEWIPC },
			 { OCI_NS_UTS, CLONE_NEWUTS },
			 { OCI_NS_PID, CLONE_NEWPID },
			 { OCI_NS_MOUNT, CLONE_NEWNS } };
	int *fds[] = { &oc->netns_fd, &oc->ro.ipc_fd, &oc->ro.uts_fd, &oc->pidns_fd, &oc->mntns_fd };
	for (int t = 0; t < OCI_NS_COUNT; t++) {
		const char *p = s->ns_path[t];
		size_t k = 0;
		while (k < ELEMENTSOF(joinable) && joinable[k].ns != (enum oci_ns)t)
			k++;
		if (!p || t == OCI_NS_USER)
			continue;
		if (k == ELEMENTSOF(joinable))
			return abox_error_setx(err, EOPNOTSUPP,
					       "linux.namespaces: joining a '%s' namespace is not supported "
					       "(network, ipc, uts, pid, mount and user are)",
					       oci_ns_name((enum oci_ns)t));
		int fd = *fds[k] = open(p, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return abox_error_set(err, errno, "linux.namespaces: %s path '%s'",
					      oci_ns_name((enum oci_ns)t), p);
		if (ioctl(fd, NS_GET_NSTYPE) != joinable[k].type)
			return abox_error_setx(err, EINVAL, "linux.namespaces: '%s' is not a %s namespace", p,
					       oci_ns_name((enum oci_ns)t));
	}
	/* a mount namespace the container's root is built in: never the
	 * runtime's own or the host's (PID 1's, where it can be seen), where
	 * pivot_root and the detach of the old root would take the host's
	 * tree away */
	struct stat ours, theirs, host;
	bool host_seen = stat("/proc/1/ns/mnt", &host) == 0;
	/* and owned by the runtime's user namespace: mounts made in one an
	 * unprivileged user owns are not locked, that user could take the
	 * masks and read-only binds away later */
	if (oc->mntns_fd >= 0) {
		int owner = ioctl(oc->mntns_fd, NS_GET_USERNS);
		struct stat o, mine;
		bool same = owner >= 0 && fstat(owner, &o) == 0 && stat("/proc/self/ns/user", &mine) == 0 &&
			    o.st_ino == mine.st_ino && o.st_dev == mine.st_dev;
		if (owner >= 0)
			close(owner);
		if (!same)
			return abox_error_setx(
				err, EPERM,
				"linux.namespaces: the mount path '%s' is a namespace of another "
				"user namespace than the runtime's",
				s->ns_path[OCI_NS_MOUNT]);
	}
	if (oc->mntns_fd >= 0 &&
	    (fstat(oc->mntns_fd, &theirs) < 0 || stat("/proc/self/ns/mnt", &ours) < 0 ||
	     (ours.st_ino == theirs.st_ino && ours.st_dev == theirs.st_dev) ||
	     (host_seen && host.st_ino == theirs.st_ino && host.st_dev == theirs.st_dev)))
		return abox_error_setx(err, EPERM,
				       "linux.namespaces: the mount path '%s' is the runtime's or the host's "
				       "mount namespace: abox builds a container's root in one of its own",
				       s->ns_path[OCI_NS_MOUNT]);
	/* a pod's pid namespace, never the one abox runs in (the host's, or
	 * whatever holds the runtime): a container there would see and
	 * signal every process of it */
	if (oc->pidns_fd >= 0 && (stat("/proc/self/ns/pid", &ours) < 0 || fstat(oc->pidns_fd, &theirs) < 0 ||
				  (ours.st_ino == theirs.st_ino && ours.st_dev == theirs.st_dev)))
		return abox_error_setx(
			err, EPERM,
			"linux.namespaces: the pid path '%s' is the runtime's own pid namespace: "
			"abox does not share it with a container",
			s->ns_path[OCI_NS_PID]);
	return 0;
}

int oci_create_prepare(const char *bundle, enum oci_confinement node, struct oci_create *oc, abox_error *err)
{
	*oc = OCI_CREATE_INIT;
	int r = oci_spec_load(bundle, &oc->spec, err);
	if (r < 0)
		return r;
	struct oci_spec *s = &oc->spec;
	if (!s->process.present || !s->process.args || !s->process.args[0])
		return abox_error_setx(err, EINVAL, "process.args: a container needs a process to run");
	if ((r = oci_confine_prepare(oc, node, err)) < 0 || (r = namespaces(oc, err)) < 0 ||
	    (r = oci_process_check(&s->process, oc->init_caps, err)) < 0)
		return r;
	if (!s->root_path)
		return abox_error_setx(err, EINVAL, "root.path: missing");
	char path[4096];
	if (s->root_path[0] == '/')
		snprintf(path, sizeof(path), "%s", s->root_path);
	else
		snprintf(path, sizeof(path), "%s/%s", bundle, s->root_path);
	struct stat st;
	if (!(oc->root = realpath(path, NULL)) || stat(oc->root, &st) < 0)
		return abox_error_set(err, errno, "root.path: '%s'", path);
	if (!S_ISDIR(st.st_mode))
		return abox_error_setx(err, ENOTDIR, "root.path: '%s' is not a folder", path);
	if (!(oc->mounts = calloc(s->nmounts + 1, sizeof(*oc->mounts))))
		return abox_error_set(err, ENOMEM, "mounts");
	unsigned n = 0;
	unsigned sys_at = UINT_MAX; /* the config's own /sys: before its n-th mount of the rest */
	for (size_t i = 0; i < s->nmounts; i++) {
		if (abox_owns(&s->mounts[i])) {
			if (!strcmp(s->mounts[i].destination, "/sys") && sys_at == UINT_MAX)
				sys_at = n;
			continue;
		}
		if ((r = mount_prepare(oc, bundle, i, &oc->mounts[n], err)) < 0)
			return r;
		n++;
	}
	unsigned ndev = 0;
	if ((r = oci_devices_prepare(s, oc->conf == OCI_CONF_ABOX, &oc->devices, &ndev, oc->warning,
				     sizeof(oc->warning), err)) < 0 ||
	    (r = oci_userns_devices(oc, ndev, err)) < 0)
		return r;
	oc->ro = (struct rootfs_oci){ .root = oc->root,
				      .readonly = s->root_readonly,
				      .domainname = s->domainname,
				      .ipc_fd = oc->ro.ipc_fd,
				      .uts_fd = oc->ro.uts_fd,
				      .mounts = oc->mounts,
				      .nmounts = n,
				      .masked = (const char *const *)s->masked_paths,
				      .readonly_paths = (const char *const *)s->readonly_paths,
				      .devices = oc->devices,
				      .ndevices = ndev,
				      .sys_at = sys_at };
	/* the config's profile over abox's own policy (both run, the
	 * stricter answer wins), matched against the capabilities the
	 * process keeps; compiled now, so a profile abox cannot load fails
	 * the create before anything is made */
	if (s->seccomp_json) {
		struct policy_env env = { .caps = (s->process.has_capabilities ? s->process.cap_bounding
									       : oc->init_caps) &
						  oc->init_caps,
					  .kernel = local_kernel_version() };
		if ((r = policy_compile(s->seccomp_json, strlen(s->seccomp_json), "linux.seccomp", &env,
					&oc->seccomp, err)) < 0)
			return r;
	}
	const struct oci_resources *res = &s->resources;
	if ((r = oci_hugepages_check(res, oc->warning, sizeof(oc->warning), err)) < 0)
		return r;
	if (res->memory_limit > 0)
		oc->memory_bytes = (uint64_t)res->memory_limit;
	if (res->pids_limit > 0)
		oc->pids = (uint64_t)res->pids_limit;
	if ((r = oci_cpu_prepare(oc, err)) < 0)
		return r;
	/* read and not enforced: said in the log, never dropped silently */
	const struct {
		bool set;
		const char *name;
	} unenforced[] = { { res->memory_reservation > 0, "resources.memory.reservation" },
			   { res->memory_swap > 0 && res->memory_swap != res->memory_limit,
			     "resources.memory.swap" } };
	char names[256] = "";
	for (size_t i = 0; i < ELEMENTSOF(unenforced); i++)
		if (unenforced[i].set)
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
				 names[0] ? ", linux." : "", unenforced[i].name);
	if (s->mount_label && *s->mount_label) {
		size_t w = strlen(oc->warning);
		snprintf(oc->warning + w, sizeof(oc->warning) - w,
			 "%slinux.mountLabel: SELinux is not enabled on this host, the label is ignored",
			 w ? "; " : "");
	}
	if (names[0]) {
		size_t w = strlen(oc->warning);
		snprintf(oc->warning + w, sizeof(oc->warning) - w,
			 "%sread and not enforced by abox (it enforces memory, pids, CPU quota and "
			 "shares): linux.%s",
			 w ? "; " : "", names);
	}
	return 0;
}

void oci_create_free(struct oci_create *oc)
{
	/* the idmapped mounts' namespaces, before the spec and mounts go
	 * (the array has a slot per config mount, unused ones zeroed) */
	for (size_t i = 0; oc->mounts && i < oc->spec.nmounts; i++)
		if (oc->mounts[i].idmap && oc->mounts[i].idmap_fd >= 0)
			close(oc->mounts[i].idmap_fd);
	oci_spec_free(&oc->spec);
	policy_bpf_free(&oc->seccomp);
	free(oc->root);
	free(oc->mounts);
	free(oc->devices);
	for (size_t i = 0; i < oc->nowned; i++)
		free(oc->owned[i]);
	free(oc->owned);
	if (oc->netns_fd >= 0)
		close(oc->netns_fd);
	if (oc->pidns_fd >= 0)
		close(oc->pidns_fd);
	if (oc->mntns_fd >= 0)
		close(oc->mntns_fd);
	if (oc->ro.ipc_fd >= 0)
		close(oc->ro.ipc_fd);
	if (oc->ro.uts_fd >= 0)
		close(oc->ro.uts_fd);
	if (oc->userns_fd >= 0)
		close(oc->userns_fd);
	*oc = OCI_CREATE_INIT;
}

int oci_create_hold(abox_sandbox *sb, const struct oci_create *oc, int *console, abox_error *err)
{
	const struct oci_spec *spec = &oc->spec;
	int master = -1, slave = -1, r;
	/* the limits on the config's cgroupsPath too, where runc has them
	 * and a container engine reads them (abox's own folder is below) */
	if (sb->ctx->cgroup_parent_own && (r = cgroup_parent_limits(&sb->ctx->cg, sb->cg, err)) < 0)
		return abox_error_prefix(err, "linux.cgroupsPath");
	/* before the process exists, as runc writes them in its init */
	if ((r = oci_cpuset_apply(sb, oc, err)) < 0 || (r = oci_blkio_apply(sb, &spec->resources, err)) < 0 ||
	    (r = oci_unified_apply(sb, &spec->resources, err)) < 0 ||
	    (r = oci_sysctl_apply(sb->pidfd, spec->sysctl, err)) < 0)
		return r;
	if (spec->process.terminal && (r = oci_pty(sb->pid, &spec->process, &master, &slave, err)) < 0)
		return r;
	struct proto_msg m;
	/* the preserved fds first, a few a request, in order */
	for (unsigned i = 0; i < oc->preserve_fds && r >= 0; i += PROTO_MAX_FDS) {
		proto_msg_init(&m, MSG_REQ_OCI_FDS, ++sb->next_req);
		for (unsigned k = i; k < oc->preserve_fds && k < i + PROTO_MAX_FDS; k++)
			proto_put_fd(&m, 3 + (int)k);
		r = backend_call(sb, &m, "create: the preserved fds", NULL, NULL, err);
	}
	if (r < 0) {
		if (slave >= 0)
			close(slave);
		if (master >= 0)
			close(master);
		return r;
	}
	proto_msg_init(&m, MSG_REQ_EXEC, ++sb->next_req);
	oci_process_put(&m, &spec->process, oc->init_caps);
	proto_put_u64(&m, F_FLAGS, EXEC_HELD | (slave >= 0 ? EXEC_TTY : 0));
	if (oc->seccomp.len)
		proto_put_bytes(&m, F_SECCOMP, oc->seccomp.insns,
				oc->seccomp.len * sizeof(*oc->seccomp.insns));
	if (slave >= 0)
		proto_put_fd(&m, slave);
	r = backend_call(sb, &m, "create: the container's process", NULL, NULL, err);
	if (slave >= 0)
		close(slave);
	if (r < 0 || !console) {
		if (master >= 0)
			close(master);
	} else {
		*console = master;
	}
	return r;
}

int oci_create_check(abox_sandbox_opts *o, struct oci_create *oc, abox_error *err)
{
	if (o->template_name || o->snapshot || (o->net && o->net->mode != ABOX_NET_NONE) || o->env ||
	    o->memory_bytes || o->pids || o->cpu_millis || o->disk_bytes || o->seccomp_policy ||
	    o->timeout_ms)
		return abox_error_setx(
			err, EINVAL,
			"an OCI container takes everything from its bundle: no template, snapshot, "
			"network, environment, limits, policy or timeout besides");
	if (o->flags & (ABOX_SANDBOX_EPHEMERAL | ABOX_SANDBOX_AUTO_PAUSE | ABOX_SANDBOX_USERNS))
		return abox_error_setx(
			err, EINVAL, "an OCI container is long-lived, without auto-pause or user namespace");
	/* runc's --preserve-fds: each is there now (a closed one would be
	 * whatever the library opens in its place by the time it is sent) */
	if (o->oci_preserve_fds > 256)
		return abox_error_setx(err, EMFILE, "--preserve-fds %u: abox passes at most 256",
				       o->oci_preserve_fds);
	for (unsigned i = 0; i < o->oci_preserve_fds; i++)
		if (fcntl(3 + (int)i, F_GETFD) < 0)
			return abox_error_setx(err, EBADF, "--preserve-fds %u: descriptor %u is not open",
					       o->oci_preserve_fds, 3 + i);
	int r = oci_create_prepare(o->oci_bundle,
				   (o->flags & ABOX_SANDBOX_OCI_ABOX_CONFINEMENT) ? OCI_CONF_ABOX
				   : (o->flags & ABOX_SANDBOX_OCI_COMPAT)         ? OCI_CONF_COMPAT
										  : OCI_CONF_STRICT,
				   oc, err);
	if (r < 0)
		return r;
	oc->preserve_fds = o->oci_preserve_fds;
	/* its files are its bundle's: the writable layer only holds what
	 * abox itself writes */
	o->flags |= ABOX_SANDBOX_NO_USERNS | ABOX_SANDBOX_NO_SUDO | ABOX_SANDBOX_LAYER_TMPFS;
	o->disk_bytes = 16u << 20;
	/* a limit the config does not set is the node's, as a container
	 * engine's user expects of a pod without limits (abox's own defaults,
	 * made for agents' sandboxes, would cap it at 512 MiB and one CPU):
	 * still a bound, as every sandbox has */
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE),
	     cpus = sysconf(_SC_NPROCESSORS_ONLN);
	o->memory_bytes = oc->memory_bytes        ? oc->memory_bytes
			  : pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page
						  : 0;
	o->pids = oc->pids ? oc->pids : OCI_NODE_PIDS;
	o->cpu_millis = oc->cpu_millis ? oc->cpu_millis : cpus > 0 ? (uint32_t)cpus * 1000u : 0;
	return 0;
}

void oci_create_spawn(struct oci_create *oc, struct spawn_config *cfg)
{
	cfg->rootfs.oci = &oc->ro;
	cfg->rootfs.lower = NULL;
	cfg->rootfs.ntrees = 0;
	if (oc->spec.hostname && *oc->spec.hostname)
		cfg->rootfs.hostname = oc->spec.hostname;
	/* init keeps abox's own set (and compat's extras the config asks
	 * for): it needs CAP_SETUID, CAP_SETGID and CAP_KILL for the
	 * process, whose set it applies to that process alone
	 * (oci_process_put) */
	cfg->caps_keep = oc->init_caps;
	cfg->no_nnp = oc->conf == OCI_CONF_COMPAT;
	/* only for a process that asks to run without no_new_privs: an exec
	 * that asks for that later gets it all the same (init/child_exec.c) */
	cfg->keep_admin = cfg->no_nnp && oc->seccomp.len && !oc->spec.process.no_new_privileges;
	oc->ro.dev_bound = (oc->init_caps & (1ULL << CAP_MKNOD)) != 0;
	for (unsigned i = 0; i < oc->ro.ndevices; i++)
		oc->ro.dev_bound |= oc->devices[i].denied;
	oc->ro.suid = oc->conf == OCI_CONF_COMPAT;
	cfg->keep_stdio = true;
	if (oc->pidns_fd >= 0) {
		cfg->pidns_join = true;
		cfg->pidns_fd = oc->pidns_fd;
	}
	if (oc->mntns_fd >= 0) {
		cfg->mntns_join = true;
		cfg->mntns_fd = oc->mntns_fd;
	}
	if (oc->spec.ns_wanted[OCI_NS_TIME]) {
		cfg->timens = true;
		for (int k = 0; k < 2; k++) {
			cfg->time_offset_s[k] = oc->spec.time_offset_s[k];
			cfg->time_offset_ns[k] = oc->spec.time_offset_ns[k];
		}
	}
	/* its user namespace (oci_userns.c): a new one is the create's own
	 * (already in cfg->rootfs.userns_fd), a joined one the config's */
	if (oc->userns) {
		if (oc->userns_fd >= 0)
			cfg->rootfs.userns_fd = oc->userns_fd;
		cfg->rootfs.id_base = oc->userns_base;
	}
	if (oc->netns_fd >= 0) {
		cfg->net_premade = true;
		cfg->net_premade_fd = oc->netns_fd;
	}
}
