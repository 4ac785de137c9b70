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

/* The text fields a line must give (NULL: not checked). */
struct fields {
	const char *root, *mount_point, *mount_opts, *optional, *fstype, *source, *super_opts;
};

/* Parses text, which must parse, checks the fields want names and returns
 * the entry (its strings live until the next parse). */
static struct mountinfo_entry parse_expect(const char *text, struct fields want)
{
	struct mountinfo_entry e = parse_ok(text);
	const struct {
		const char *name, *got, *want;
	} f[] = {
		{ "root", e.root, want.root },
		{ "mount point", e.mount_point, want.mount_point },
		{ "mount options", e.mount_opts, want.mount_opts },
		{ "optional fields", e.optional, want.optional },
		{ "fstype", e.fstype, want.fstype },
		{ "source", e.source, want.source },
		{ "super options", e.super_opts, want.super_opts },
	};
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (f[i].want)
			cr_assert_str_eq(f[i].got, f[i].want, "the %s of '%s'", f[i].name, text);
	return e;
}

Test(mountinfo, plain_line)
{
	struct mountinfo_entry e =
		parse_expect("36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue",
			     (struct fields){ .root = "/mnt1",
					      .mount_point = "/mnt2",
					      .mount_opts = "rw,noatime",
					      .optional = "master:1",
					      .fstype = "ext3",
					      .source = "/dev/root",
					      .super_opts = "rw,errors=continue" });
	cr_assert_eq(e.id, 36);
	cr_assert_eq(e.parent, 35);
	cr_assert_eq(e.major, 98);
	cr_assert_eq(e.minor, 0);
}

/* what `ip netns add` makes: the root is not a path */
Test(mountinfo, nsfs_root_is_not_a_path)
{
	parse_expect("1089 28 0:4 net:[4026532281] /run/netns/foo rw shared:608 - nsfs nsfs rw",
		     (struct fields){
			     .root = "net:[4026532281]", .mount_point = "/run/netns/foo", .fstype = "nsfs" });
	/* and a namespace file bound onto a file anywhere */
	parse_expect("70 66 0:4 mnt:[4026531841] /tmp/x rw - nsfs nsfs rw",
		     (struct fields){ .root = "mnt:[4026531841]" });
}

Test(mountinfo, octal_escapes)
{
	parse_expect("40 30 0:50 /a\\040b /tmp/sp\\040ace\\011tab\\012nl\\134bs rw - fuse.my\\040fs s\\040rc "
		     "rw,user_id=0",
		     (struct fields){ .root = "/a b",
				      .mount_point = "/tmp/sp ace\ttab\nnl\\bs",
				      .fstype = "fuse.my fs",
				      .source = "s rc" });
	/* a backslash not followed by three octal digits is kept as is */
	parse_expect("40 30 0:50 / /x\\9 rw - tmpfs a\\04 rw",
		     (struct fields){ .mount_point = "/x\\9", .source = "a\\04" });
}

Test(mountinfo, optional_fields)
{
	parse_expect(
		"25 1 0:22 / /sys rw,nosuid shared:7 master:3 propagate_from:2 unbindable - sysfs sysfs rw",
		(struct fields){ .optional = "shared:7 master:3 propagate_from:2 unbindable",
				 .fstype = "sysfs" });
	parse_expect("25 1 0:22 / /sys rw - sysfs sysfs rw",
		     (struct fields){ .optional = "", .mount_opts = "rw" });
	/* a mount point or root named "-" is a field, not the separator */
	parse_expect("25 1 0:22 - /- rw shared:1 - tmpfs - rw",
		     (struct fields){ .root = "-", .optional = "shared:1", .source = "-" });
}

Test(mountinfo, empty_source_and_spaces_in_super_options)
{
	/* mount("", ...) leaves an empty source: two spaces in a row */
	parse_expect("50 20 0:60 / /mnt/e rw - tmpfs  rw,size=64k",
		     (struct fields){ .source = "", .super_opts = "rw,size=64k" });
	/* a filesystem that does not escape its options: the rest of the line */
	parse_expect("51 20 0:61 / /mnt/f rw - fuse.x host:/p rw,opt=a b,c",
		     (struct fields){ .source = "host:/p", .super_opts = "rw,opt=a b,c" });
	/* a deleted bind source keeps its marker in the root */
	parse_expect("52 20 8:1 /gone//deleted /mnt/g rw - ext4 /dev/sda1 rw",
		     (struct fields){ .root = "/gone//deleted" });
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
