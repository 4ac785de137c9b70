/* mount/mountinfo.c — see mountinfo.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mount/mountinfo.h"

/* A changed table is read again at most this often before the last read
 * is kept: mounts made and removed in a tight loop must not stall us. */
#define READ_TRIES 8

/* The kernel writes a byte of " \t\n\\" as '\' and three octal digits
 * (seq_escape); anything else stays as it is. */
static void unescape(char *s)
{
	char *w = s;
	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)(((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/* Cuts the field that starts at *p at the next space; NULL at the end of
 * the line. An empty field ("a  b") is returned as "". */
static char *field(char **p)
{
	char *s = *p;
	if (!s)
		return NULL;
	char *sp = strchr(s, ' ');
	if (sp) {
		*sp = '\0';
		*p = sp + 1;
	} else {
		*p = NULL;
	}
	return s;
}

static int parse_uint(const char *s, unsigned *out)
{
	unsigned long v = 0;
	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		v = v * 10 + (unsigned)(*s - '0');
		if (v > 0xffffffffUL)
			return -EINVAL;
	}
	*out = (unsigned)v;
	return 0;
}

int mountinfo_parse_line(char *line, struct mountinfo_entry *e)
{
	struct mountinfo_entry m = { 0 };
	char *p = line;
	char *id = field(&p), *parent = field(&p), *dev = field(&p);
	m.root = field(&p);
	m.mount_point = field(&p);
	m.mount_opts = field(&p);
	if (!m.mount_opts || parse_uint(id, &m.id) < 0 || parse_uint(parent, &m.parent) < 0)
		return -EINVAL;
	char *colon = strchr(dev, ':');
	if (!colon)
		return -EINVAL;
	*colon = '\0';
	if (parse_uint(dev, &m.major) < 0 || parse_uint(colon + 1, &m.minor) < 0)
		return -EINVAL;
	/* the kernel writes at least "/" or a name such as "net:[...]" as
	 * root, an absolute path as mount point (a mount outside the
	 * reader's root is left out, not shown relative) */
	if (!*m.root || m.mount_point[0] != '/' || !*m.mount_opts)
		return -EINVAL;

	/* optional fields up to the lone "-"; none of them is empty */
	char *opt = p, *dash = NULL;
	while (p) {
		char *sp = strchr(p, ' ');
		size_t n = sp ? (size_t)(sp - p) : strlen(p);
		if (n == 0)
			return -EINVAL;
		if (n == 1 && p[0] == '-') {
			dash = p;
			p = sp ? sp + 1 : NULL;
			break;
		}
		p = sp ? sp + 1 : NULL;
	}
	if (!dash)
		return -EINVAL;
	if (dash == opt) {
		m.optional = opt - 1; /* the end of mount_opts: "" */
	} else {
		dash[-1] = '\0'; /* the space before "-" */
		m.optional = opt;
	}

	m.fstype = field(&p);
	m.source = field(&p);
	if (!m.fstype || !*m.fstype || !m.source)
		return -EINVAL;
	/* the rest of the line: "rw,..." always, so never missing */
	m.super_opts = p;
	if (!m.super_opts || !*m.super_opts)
		return -EINVAL;
	unescape(m.root);
	unescape(m.mount_point);
	unescape(m.fstype);
	unescape(m.source);
	*e = m;
	return 0;
}

int mountinfo_parse(char *text, int (*fn)(const struct mountinfo_entry *e, void *ud), void *ud,
		    abox_error *err)
{
	unsigned lineno = 0;
	for (char *line = text; line;) {
		char *nl = strchr(line, '\n');
		if (!nl && !*line)
			break; /* the text ended with its last line's '\n' */
		if (nl)
			*nl = '\0';
		lineno++;
		struct mountinfo_entry e;
		if (mountinfo_parse_line(line, &e) < 0)
			return abox_error_setx(err, EPROTO, "mountinfo line %u is not in the kernel's format",
					       lineno);
		int r = fn(&e, ud);
		if (r < 0)
			return r;
		line = nl ? nl + 1 : NULL;
	}
	return 0;
}

/* Reads fd from offset 0 to its end into *buf (grown as needed). */
static int read_all(int fd, char **buf, size_t *cap, size_t *len)
{
	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	return read_all_fd(fd, MOUNTINFO_MAX, buf, cap, len);
}

/* Whether the mount table changed since fd was opened or last polled:
 * the kernel's mountinfo poll reports that as POLLERR|POLLPRI (and
 * resets it, so the next read is measured from here). */
static bool changed(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLPRI };
	int r;
	do
		r = poll(&pfd, 1, 0);
	while (r < 0 && errno == EINTR);
	return r > 0 && (pfd.revents & (POLLPRI | POLLERR));
}

int mountinfo_read(const char *path, char **out, size_t *len, abox_error *err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return abox_error_set(err, errno, "read '%s'", path);
	struct stat st;
	bool regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	size_t cap = 16384, n = 0;
	_cleanup_free_ char *buf = malloc(cap + 1);
	if (!buf)
		return abox_error_set(err, ENOMEM, "read '%s'", path);
	for (int attempt = 0;; attempt++) {
		int r = read_all(fd, &buf, &cap, &n);
		if (r < 0)
			return abox_error_set(err, -r, "read '%s'", path);
		if (regular || attempt + 1 >= READ_TRIES || !changed(fd))
			break;
	}
	if (len)
		*len = n;
	*out = TAKE_PTR(buf);
	return 0;
}
