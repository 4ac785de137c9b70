/* local/oci_process.c — whether an OCI process (a container's, or one
 * exec'd into it) can be started as its config asks: its ambient
 * capabilities raisable, its AppArmor profile there to enter. Said
 * before anything is made, naming the field. */
#include <stdio.h>
#include <string.h>

#include "local/create_oci.h"
#include "caps/caps.h"

static int apparmor_check(const struct oci_process *p, abox_error *err)
{
	const char *prof = p->apparmor_profile;
	if (!prof || !*prof)
		return 0;
	if (strlen(prof) > 255 || strpbrk(prof, "\n "))
		return abox_error_setx(err, EINVAL, "process.apparmorProfile: not a profile name");
	/* as runc: a profile asked for on a host without AppArmor is an
	 * error, never a container run unconfined by it */
	char on[4] = "";
	FILE *f = fopen("/sys/module/apparmor/parameters/enabled", "re");
	if (f) {
		if (!fgets(on, sizeof(on), f))
			on[0] = '\0';
		fclose(f);
	}
	if (on[0] != 'Y')
		return abox_error_setx(err, EOPNOTSUPP,
				       "process.apparmorProfile: '%s': AppArmor is not enabled on this host",
				       prof);
	return 0;
}

int oci_process_check(const struct oci_process *p, abox_error *err)
{
	/* the kernel raises an ambient capability only when it is
	 * inheritable (and within the bounding set): said now, by name, not
	 * as EPERM from the process's start */
	uint64_t amb = p->cap_ambient & caps_default(),
		 missing = amb & ~(p->cap_inheritable & p->cap_bounding);
	for (int c = 0; c < 64 && p->has_capabilities && missing; c++)
		if (missing & (1ull << c))
			return abox_error_setx(
				err, EINVAL,
				"process.capabilities.ambient: %s is not in the inheritable and "
				"bounding sets too (the kernel raises no other)",
				caps_name(c) ? caps_name(c) : "a capability");
	return apparmor_check(p, err);
}
