/* local/create_opts.c — a create's options checked before anything is
 * made, each refusal naming the option and the bound; and the kernel's
 * version (the seccomp compiler's input).
 * Runs in the CLI/daemon. */
#include <stdio.h>
#include <sys/utsname.h>

#include "local/local.h"

unsigned local_kernel_version(void)
{
	struct utsname u;
	unsigned maj = 0, min = 0;
	if (uname(&u) == 0)
		sscanf(u.release, "%u.%u", &maj, &min);
	return maj * 1000 + min;
}

int local_create_opts_check(const abox_sandbox_opts *o, abox_error *err)
{
	if (o->memory_bytes && o->memory_bytes < (8ULL << 20))
		return abox_error_setx(err, EINVAL, "memory limit %llu bytes is below the minimum of 8M",
				       (unsigned long long)o->memory_bytes);
	if (o->disk_bytes && o->disk_bytes < (1ULL << 20))
		return abox_error_setx(err, EINVAL, "disk limit %llu bytes is below the minimum of 1M",
				       (unsigned long long)o->disk_bytes);
	if (o->cpu_millis && o->cpu_millis < 10)
		return abox_error_setx(err, EINVAL, "cpu limit %.3f is below the minimum of 0.01",
				       o->cpu_millis / 1000.0);
	if (o->pids && o->pids < 2)
		return abox_error_setx(err, EINVAL, "pids limit %llu is below the minimum of 2",
				       (unsigned long long)o->pids);
	if ((o->flags & ABOX_SANDBOX_AUTO_PAUSE) && (o->flags & ABOX_SANDBOX_EPHEMERAL))
		return abox_error_setx(err, EINVAL, "an ephemeral sandbox cannot pause at its deadline");
	if ((o->flags & ABOX_SANDBOX_AUTO_PAUSE_NO_MEMORY) && !(o->flags & ABOX_SANDBOX_AUTO_PAUSE))
		return abox_error_setx(err, EINVAL, "auto-pause without memory needs auto-pause");
	if ((o->flags & ABOX_SANDBOX_LAYER_DISK) && (o->flags & ABOX_SANDBOX_LAYER_TMPFS))
		return abox_error_setx(err, EINVAL,
				       "the writable layer cannot be both on disk and in memory");
	if ((o->flags & ABOX_SANDBOX_USERNS) && (o->flags & ABOX_SANDBOX_NO_USERNS))
		return abox_error_setx(err, EINVAL,
				       "a sandbox cannot be both with and without a user namespace");
	if (o->flags & ~(ABOX_SANDBOX_EPHEMERAL | ABOX_SANDBOX_AUTO_PAUSE |
			 ABOX_SANDBOX_AUTO_PAUSE_NO_MEMORY | ABOX_SANDBOX_LAYER_DISK |
			 ABOX_SANDBOX_LAYER_TMPFS | ABOX_SANDBOX_USERNS | ABOX_SANDBOX_NO_USERNS |
			 ABOX_SANDBOX_NO_SUDO | ABOX_SANDBOX_OCI_ABOX_CONFINEMENT | ABOX_SANDBOX_OCI_COMPAT))
		return abox_error_setx(err, EINVAL, "unknown sandbox flags 0x%x", o->flags);
	if (o->oci_preserve_fds && !o->oci_bundle)
		return abox_error_setx(err, EINVAL, "oci_preserve_fds is for OCI containers (oci_bundle)");
	if ((o->flags & ABOX_SANDBOX_OCI_ABOX_CONFINEMENT) && !o->oci_bundle)
		return abox_error_setx(
			err, EINVAL, "ABOX_SANDBOX_OCI_ABOX_CONFINEMENT is for OCI containers (oci_bundle)");
	if ((o->flags & ABOX_SANDBOX_OCI_COMPAT) && !o->oci_bundle)
		return abox_error_setx(err, EINVAL,
				       "ABOX_SANDBOX_OCI_COMPAT is for OCI containers (oci_bundle)");
	if ((o->flags & ABOX_SANDBOX_OCI_COMPAT) && (o->flags & ABOX_SANDBOX_OCI_ABOX_CONFINEMENT))
		return abox_error_setx(err, EINVAL,
				       "an OCI container is under abox's confinement or a container engine's "
				       "default (compat), not both");
	return 0;
}
