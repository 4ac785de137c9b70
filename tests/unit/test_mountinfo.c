/* Unit tests of the mountinfo parser on lines as the kernel writes them
 * (fs/proc_namespace.c), the odd ones in particular: nsfs roots, escaped
 * names, optional fields, empty sources, unescaped super options. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mount/mountinfo.h"

static struct mountinfo_entry parse_ok(const char *text)
{
	static char line[4096];
	snprintf(line, sizeof(line), "%s", text);
	struct mountinfo_entry e;
	int r = mountinfo_parse_line(line, &e);
	cr_assert_eq(r, 0, "'%s' was refused: %d", text, r);
	return e;
}

static void parse_bad(const char *text)
{
	char line[4096];
	snprintf(line, sizeof(line), "%s", text);
	struct mountinfo_entry e;
	cr_assert_eq(mountinfo_parse_line(line, &e), -EINVAL, "'%s' was accepted", text);
}

Test(mountinfo, plain_line)
{
	struct mountinfo_entry e =
		parse_ok("36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue");
	cr_assert_eq(e.id, 36);
	cr_assert_eq(e.parent, 35);
	cr_assert_eq(e.major, 98);
	cr_assert_eq(e.minor, 0);
	cr_assert_str_eq(e.root, "/mnt1");
	cr_assert_str_eq(e.mount_point, "/mnt2");
	cr_assert_str_eq(e.mount_opts, "rw,noatime");
	cr_assert_str_eq(e.optional, "master:1");
	cr_assert_str_eq(e.fstype, "ext3");
	cr_assert_str_eq(e.source, "/dev/root");
	cr_assert_str_eq(e.super_opts, "rw,errors=continue");
}

/* what `ip netns add` makes: the root is not a path */
Test(mountinfo, nsfs_root_is_not_a_path)
{
	struct mountinfo_entry e =
		parse_ok("1089 28 0:4 net:[4026532281] /run/netns/foo rw shared:608 - nsfs nsfs rw");
	cr_assert_str_eq(e.root, "net:[4026532281]");
	cr_assert_str_eq(e.mount_point, "/run/netns/foo");
	cr_assert_str_eq(e.fstype, "nsfs");
	/* and a namespace file bound onto a file anywhere */
	e = parse_ok("70 66 0:4 mnt:[4026531841] /tmp/x rw - nsfs nsfs rw");
	cr_assert_str_eq(e.root, "mnt:[4026531841]");
}

Test(mountinfo, octal_escapes)
{
	struct mountinfo_entry e = parse_ok(
		"40 30 0:50 /a\\040b /tmp/sp\\040ace\\011tab\\012nl\\134bs rw - fuse.my\\040fs s\\040rc rw,user_id=0");
	cr_assert_str_eq(e.root, "/a b");
	cr_assert_str_eq(e.mount_point, "/tmp/sp ace\ttab\nnl\\bs");
	cr_assert_str_eq(e.fstype, "fuse.my fs");
	cr_assert_str_eq(e.source, "s rc");
	/* a backslash not followed by three octal digits is kept as is */
	e = parse_ok("40 30 0:50 / /x\\9 rw - tmpfs a\\04 rw");
	cr_assert_str_eq(e.mount_point, "/x\\9");
	cr_assert_str_eq(e.source, "a\\04");
}

Test(mountinfo, optional_fields)
{
	struct mountinfo_entry e = parse_ok("25 1 0:22 / /sys rw,nosuid shared:7 master:3 propagate_from:2 "
					    "unbindable - sysfs sysfs rw");
	cr_assert_str_eq(e.optional, "shared:7 master:3 propagate_from:2 unbindable");
	cr_assert_str_eq(e.fstype, "sysfs");
	e = parse_ok("25 1 0:22 / /sys rw - sysfs sysfs rw");
	cr_assert_str_eq(e.optional, "");
	cr_assert_str_eq(e.mount_opts, "rw");
	/* a mount point or root named "-" is a field, not the separator */
	e = parse_ok("25 1 0:22 - /- rw shared:1 - tmpfs - rw");
	cr_assert_str_eq(e.root, "-");
	cr_assert_str_eq(e.optional, "shared:1");
	cr_assert_str_eq(e.source, "-");
}

Test(mountinfo, empty_source_and_spaces_in_super_options)
{
	/* mount("", ...) leaves an empty source: two spaces in a row */
	struct mountinfo_entry e = parse_ok("50 20 0:60 / /mnt/e rw - tmpfs  rw,size=64k");
	cr_assert_str_eq(e.source, "");
	cr_assert_str_eq(e.super_opts, "rw,size=64k");
	/* a filesystem that does not escape its options: the rest of the line */
	e = parse_ok("51 20 0:61 / /mnt/f rw - fuse.x host:/p rw,opt=a b,c");
	cr_assert_str_eq(e.source, "host:/p");
	cr_assert_str_eq(e.super_opts, "rw,opt=a b,c");
	/* a deleted bind source keeps its marker in the root */
	e = parse_ok("52 20 8:1 /gone//deleted /mnt/g rw - ext4 /dev/sda1 rw");
	cr_assert_str_eq(e.root, "/gone//deleted");
}

Test(mountinfo, malformed_lines)
{
	parse_bad("");
	parse_bad("36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 ext3 /dev/root rw"); /* no "-" */
	parse_bad("36 35 98:0 /mnt1 /mnt2");
	parse_bad("x 35 98:0 / /m rw - ext3 /dev/root rw");
	parse_bad("36 35 98 / /m rw - ext3 /dev/root rw");     /* no major:minor */
	parse_bad("36 35 98:x / /m rw - ext3 /dev/root rw");
	parse_bad("36 35 98:0 / m rw - ext3 /dev/root rw");    /* relative mount point */
	parse_bad("36 35 98:0  /m rw - ext3 /dev/root rw");    /* empty root */
	parse_bad("36 35 98:0 / /m rw  shared:1 - ext3 x rw"); /* empty optional field */
	parse_bad("36 35 98:0 / /m rw - ext3 /dev/root");      /* no super options */
	parse_bad("36 35 98:0 / /m rw -  /dev/root rw");       /* empty fstype */
	parse_bad("36 35 98:0 / /m rw - ext3");
	parse_bad("99999999999 35 98:0 / /m rw - ext3 x rw");  /* id overflows */
}

static int count(const struct mountinfo_entry *e, void *ud)
{
	(void)e;
	(*(unsigned *)ud)++;
	return 0;
}

Test(mountinfo, whole_text)
{
	char ok[] = "1 0 0:1 / / rw - ext4 /dev/root rw\n"
		    "2 1 0:4 net:[4026532281] /run/netns/a rw - nsfs nsfs rw\n"
		    "3 1 0:5 / /a\\040b rw - tmpfs x rw"; /* no final newline */
	unsigned n = 0;
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(mountinfo_parse(ok, count, &n, &err), 0, "%s", err.msg);
	cr_assert_eq(n, 3);

	char empty_line[] = "1 0 0:1 / / rw - ext4 /dev/root rw\n\n3 1 0:5 / /a rw - tmpfs x rw\n";
	n = 0;
	cr_assert_eq(mountinfo_parse(empty_line, count, &n, &err), -EPROTO);
	cr_assert_not_null(strstr(err.msg, "line 2"), "%s", err.msg);

	char none[] = "";
	n = 0;
	cr_assert_eq(mountinfo_parse(none, count, &n, NULL), 0);
	cr_assert_eq(n, 0);
}

static int stop_at_second(const struct mountinfo_entry *e, void *ud)
{
	(void)e;
	return ++*(unsigned *)ud == 2 ? -ECANCELED : 0;
}

Test(mountinfo, callback_stops)
{
	char t[] = "1 0 0:1 / / rw - ext4 r rw\n2 1 0:1 / /b rw - ext4 r rw\n3 1 0:1 / /c rw - ext4 r rw\n";
	unsigned n = 0;
	cr_assert_eq(mountinfo_parse(t, stop_at_second, &n, NULL), -ECANCELED);
	cr_assert_eq(n, 2);
}

/* this process's own table parses, line by line */
Test(mountinfo, own_table)
{
	char *text = NULL;
	size_t len = 0;
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(mountinfo_read("/proc/self/mountinfo", &text, &len, &err), 0, "%s", err.msg);
	cr_assert_gt(len, 0);
	cr_assert_eq(strlen(text), len);
	unsigned n = 0;
	cr_assert_eq(mountinfo_parse(text, count, &n, &err), 0, "%s", err.msg);
	cr_assert_gt(n, 0);
	free(text);
	cr_assert_lt(mountinfo_read("/nonexistent/mountinfo", &text, &len, &err), 0);
}
