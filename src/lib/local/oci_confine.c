/* local/oci_confine.c — how much confinement an OCI container gets (see
 * create_oci.h oci_confine_prepare): its annotation and the node's
 * setting read, and what a config asks beyond that refused by name before
 * anything is made. */
#include <errno.h>
#include <linux/capability.h>
#include <string.h>
#include <unistd.h>

#include "local/create_oci.h"
#include "caps/caps.h"

/* The annotation that says what happens where a config asks for less
 * confinement than abox's (docs/kubernetes.md): without it such a config
 * is an error (it never weakens abox, nor is quietly made stricter than it
 * says); "abox" drops capabilities beyond abox's set and keeps
 * no_new_privs; "compat" grants what a container engine's default asks
 * (its noNewPrivileges false, containerd's default capabilities) and no
 * more. (A seccomp profile needs no annotation: it runs over abox's
 * policy.) */
#define CONFINEMENT_ANNOTATION "abox.confinement"

/* containerd's (and Docker's) default set beyond abox's: raw sockets in
 * the container's own network namespace, device nodes that open nothing
 * (every mount it writes is nodev: rootfs_oci.dev_bound), audit records */
#define COMPAT_CAPS ((1ULL << CAP_NET_RAW) | (1ULL << CAP_MKNOD) | (1ULL << CAP_AUDIT_WRITE))

static int confinement(const struct oci_spec *s, enum oci_confinement node, enum oci_confinement *out,
		       abox_error *err)
{
	const size_t k = strlen(CONFINEMENT_ANNOTATION "=");
	enum oci_confinement own = OCI_CONF_STRICT;
	for (size_t i = 0; s->annotations && s->annotations[i]; i++) {
		const char *a = s->annotations[i];
		if (strncmp(a, CONFINEMENT_ANNOTATION "=", k))
			continue;
		if (!strcmp(a + k, "abox"))
			own = OCI_CONF_ABOX;
		else if (!strcmp(a + k, "compat"))
			own = OCI_CONF_COMPAT;
		else
			return abox_error_setx(err, EINVAL,
					       "annotations: " CONFINEMENT_ANNOTATION
					       ": '%s' is neither abox nor compat",
					       strnlen(a + k, 65) > 64 ? "(a value over 64 bytes)" : a + k);
	}
	/* abox's own confinement, where the node or the container asks for
	 * it, wins over compat */
	*out = own == OCI_CONF_ABOX || node == OCI_CONF_ABOX       ? OCI_CONF_ABOX
	       : own == OCI_CONF_COMPAT || node == OCI_CONF_COMPAT ? OCI_CONF_COMPAT
								   : OCI_CONF_STRICT;
	return 0;
}

static int refuse(const struct oci_spec *s, enum oci_confinement conf, abox_error *err)
{
	/* the hooks are `abox oci`'s to run (src/cli/oci/hooks.c) */
	int r = oci_sysctl_check(s->sysctl, err);
	if (r < 0)
		return r;
	/* a mount label means nothing where SELinux is off (runc and crun
	 * drop it there too; oci_create_prepare says so in the log); where it
	 * is on, abox cannot apply one */
	if (s->mount_label && *s->mount_label && access("/sys/fs/selinux/enforce", F_OK) == 0)
		return abox_error_setx(err, EOPNOTSUPP,
				       "linux.mountLabel: SELinux labels are not supported by abox");
	if ((r = oci_unified_check(&s->resources, err)) < 0)
		return r;
	if (!s->process.no_new_privileges && conf == OCI_CONF_STRICT)
		return abox_error_setx(err, EPERM,
				       "process.noNewPrivileges: false: abox sets no_new_privs unless the "
				       "annotation " CONFINEMENT_ANNOTATION
				       "=compat lets it go (with " CONFINEMENT_ANNOTATION
				       "=abox it stays, without this error)");
	const struct oci_process *p = &s->process;
	const uint64_t sets[] = { p->cap_bounding, p->cap_effective, p->cap_permitted, p->cap_inheritable,
				  p->cap_ambient };
	static const char *const names[] = { "bounding", "effective", "permitted", "inheritable", "ambient" };
	uint64_t granted = caps_default() | (conf == OCI_CONF_COMPAT ? COMPAT_CAPS : 0);
	for (size_t i = 0; i < 5 && conf != OCI_CONF_ABOX; i++) {
		uint64_t beyond = sets[i] & ~granted;
		for (int c = 0; c < 64 && beyond; c++)
			if (beyond & (1ull << c))
				return abox_error_setx(
					err, EPERM,
					conf == OCI_CONF_COMPAT
						? "process.capabilities.%s: %s is beyond a container "
						  "engine's "
						  "default set, the most abox grants (" CONFINEMENT_ANNOTATION
						  "=abox drops it)"
						: "process.capabilities.%s: %s is beyond what abox grants a "
						  "sandbox (the annotation " CONFINEMENT_ANNOTATION
						  "=abox drops it; =compat grants containerd's default set)",
					names[i], caps_name(c) ? caps_name(c) : "a capability");
	}
	return 0;
}

int oci_confine_prepare(struct oci_create *oc, enum oci_confinement node, abox_error *err)
{
	const struct oci_spec *s = &oc->spec;
	int r = confinement(s, node, &oc->conf, err);
	if (r < 0)
		return r;
	/* init's own set: what the config's process may have (its own
	 * bounding set is dropped to in init's child) */
	oc->init_caps =
		caps_default() | (oc->conf == OCI_CONF_COMPAT ? s->process.cap_bounding & COMPAT_CAPS : 0);
	return refuse(s, oc->conf, err);
}
