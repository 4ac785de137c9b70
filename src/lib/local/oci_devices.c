/* local/oci_devices.c — an OCI config's device nodes (linux.devices)
 * under its device rules (linux.resources.devices).
 *
 * Every node listed is made, as runc makes them. abox makes no device
 * cgroup (yet): what a container can open is the nodes in its /dev, the
 * only mount without nodev that abox gives it (its root, its binds and
 * tmpfs mounts are nodev). So a rule is kept by the node's mount: a node
 * the rules allow to read and write opens; one they deny wholly is made
 * after /dev went nodev, with the allowed ones and abox's own each bound
 * over themselves first (rootfs_oci.dev_bound), so it is there and opening
 * it fails (EACCES where a device cgroup gives EPERM); one they allow
 * only to read or only to write is refused by name, since nothing here
 * could hold that half. As with runc, a device no rule allows is denied;
 * abox's own nodes (null, zero, full, random, urandom, tty, ptmx) stay
 * usable whatever the rules say, as runc always allows them too.
 *
 * The host's memory and I/O ports (c 1:1, 1:2, 1:4) are never made: they
 * are the host kernel itself. Under abox's confinement (the annotation)
 * neither are block devices, host terminals and consoles (c 4:*, c 5:*
 * but abox's own, c 1:* but abox's own): a privileged pod's config lists
 * every device of the host, and the annotation says abox's confinement
 * stands in place of what the config asks for. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "local/create_oci.h"

/* What the rules leave of read and write for a device: each rule that
 * matches it sets or clears its bits, in order, from nothing allowed (as
 * runc's device rules start). */
static unsigned access_of(const struct oci_resources *res, char type, int64_t major, int64_t minor)
{
	unsigned acc = 0;
	for (size_t i = 0; i < res->ndevice_rules; i++) {
		const struct oci_device_rule *r = &res->device_rules[i];
		if ((r->type != 'a' && r->type != type) || (r->major >= 0 && r->major != major) ||
		    (r->minor >= 0 && r->minor != minor))
			continue;
		unsigned bits = r->access & (OCI_DEV_READ | OCI_DEV_WRITE);
		acc = r->allow ? acc | bits : acc & ~bits;
	}
	return acc;
}

/* A device the host is made of (c 1:1 mem, 1:2 kmem, 1:4 port). */
static bool host_itself(char type, int64_t major, int64_t minor)
{
	return type == 'c' && major == 1 && (minor == 1 || minor == 2 || minor == 4);
}

/* What abox's confinement leaves out: block devices, and character
 * devices of the memory (1), terminal (4) and console (5) majors but
 * those abox makes itself. */
static bool confined_out(char type, int64_t major, int64_t minor)
{
	if (type == 'b')
		return true;
	if (type != 'c')
		return false;
	if (major == 1)
		return minor != 3 && minor != 5 && minor != 7 && minor != 8 && minor != 9;
	if (major == 5)
		return minor != 0 && minor != 2;
	return major == 4;
}

int oci_devices_prepare(const struct oci_spec *s, bool ours, struct rootfs_oci_device **out, unsigned *n,
			char *warning, size_t wn, abox_error *err)
{
	*out = NULL;
	*n = 0;
	if (!s->ndevices)
		return 0;
	struct rootfs_oci_device *d = calloc(s->ndevices, sizeof(*d));
	if (!d)
		return abox_error_set(err, ENOMEM, "linux.devices");
	for (size_t i = 0; i < s->ndevices; i++) {
		const struct oci_device *c = &s->devices[i];
		/* /dev is the one place a node opens; the mounts abox makes in
		 * it are its terminals, shared memory and message queues */
		static const char *const not_in[] = { "/dev/pts", "/dev/shm", "/dev/mqueue" };
		bool bad = strncmp(c->path, "/dev/", 5) != 0 || !c->path[5] || strstr(c->path, "//");
		for (size_t k = 0; k < sizeof(not_in) / sizeof(not_in[0]) && !bad; k++) {
			size_t l = strlen(not_in[k]);
			bad = !strncmp(c->path, not_in[k], l) && (c->path[l] == '/' || !c->path[l]);
		}
		if (bad) {
			free(d);
			return abox_error_setx(
				err, EINVAL,
				"linux.devices[%zu].path: '%s': abox makes device nodes in /dev only "
				"(outside /dev/pts, /dev/shm and /dev/mqueue)",
				i, c->path);
		}
		char type = c->type == 'u' ? 'c' : c->type;
		if (host_itself(type, c->major, c->minor)) {
			free(d);
			*n = 0;
			return abox_error_setx(
				err, EPERM,
				"linux.devices[%zu]: '%s' (c %lld:%lld) is the host's memory or I/O "
				"ports: abox never gives it to a container",
				i, c->path, (long long)c->major, (long long)c->minor);
		}
		if (ours && confined_out(type, c->major, c->minor)) {
			size_t w = strlen(warning);
			if (w + 80 < wn)
				snprintf(warning + w, wn - w,
					 "%slinux.devices: '%s' left out (abox's confinement)", w ? "; " : "",
					 c->path);
			continue;
		}
		unsigned acc = type == 'p' ? OCI_DEV_READ | OCI_DEV_WRITE
					   : access_of(&s->resources, type, c->major, c->minor);
		if (acc == (OCI_DEV_READ | OCI_DEV_WRITE) || !acc) {
			d[*n] = (struct rootfs_oci_device){
				.path = c->path,
				.mode = (type == 'p'   ? S_IFIFO
					 : type == 'b' ? S_IFBLK
						       : S_IFCHR) |
					(c->has_mode ? c->mode & 07777 : 0666),
				.rdev = type == 'p' ? 0 : makedev((unsigned)c->major, (unsigned)c->minor),
				.uid = c->has_uid ? c->uid : 0,
				.gid = c->has_gid ? c->gid : 0,
				.denied = !acc,
			};
			(*n)++;
		} else if (acc) {
			free(d);
			*n = 0;
			return abox_error_setx(
				err, EOPNOTSUPP,
				"linux.resources.devices: %c %lld:%lld ('%s') may only be %s: abox "
				"keeps device rules by making a node or not, and cannot hold half",
				type, (long long)c->major, (long long)c->minor, c->path,
				acc == OCI_DEV_READ ? "read" : "written");
		}
	}
	*out = d;
	return 0;
}
