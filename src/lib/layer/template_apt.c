/* layer/template_apt.c — a recipe's `packages`, installed with apt-get in
 * the root debootstrap made.
 *
 * debootstrap's --include resolves dependencies only roughly (it knows no
 * alternatives and configures everything in one pass: a large set such
 * as npm's hundreds of node-* packages fails to configure), so a recipe
 * names its base packages there and the rest in `packages`, which apt-get
 * installs inside the new root with its own resolver, without the
 * recommended extras, and then drops the downloaded archives.
 *
 * apt runs chrooted in a mount namespace of its own with /proc and the
 * host's /dev mounted for the packages' scripts; the host's resolv.conf
 * is lent to the root for the downloads and a policy-rc.d keeps services
 * from starting; both are put back as they were afterwards. Runs in the
 * CLI/daemon, as root, on a tree of Debian's packages it just made.
 * Also here: the account of the template's default user, which
 * debootstrap does not make. */
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "base/run.h"
#include "layer/layer.h"

#define PACKAGES_MAX 256

/* Writes text to root/rel (replacing it; never through a symlink). */
static int put_file(const char *root, const char *rel, const char *text, size_t n, mode_t mode)
{
	char p[4400];
	safe_snprintf(p, sizeof(p), "%s/%s", root, rel);
	(void)unlink(p);
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	ssize_t w = write(fd, text, n);
	int e = w == (ssize_t)n ? 0 : -EIO;
	if (close(fd) < 0 && !e)
		e = -errno;
	return e;
}

int template_apt_install(const char *root, const char *packages, void (*log)(const char *line, void *ud),
			 void *ud, abox_error *err)
{
	/* apt-get install PKG... && apt-get clean, as one shell line with the
	 * names as its arguments (they were checked: letters, digits, +.-) */
	_cleanup_free_ char *names = strdup(packages);
	const char *argv[PACKAGES_MAX + 8];
	size_t k = 0;
	argv[k++] = "sh";
	argv[k++] = "-c";
	argv[k++] =
		"apt-get -q -y --no-install-recommends -o Dpkg::Use-Pty=0 install \"$@\" && apt-get clean";
	argv[k++] = "sh";
	if (!names)
		return abox_error_set(err, ENOMEM, "template build");
	for (char *save = NULL, *t = strtok_r(names, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (k == PACKAGES_MAX + 4)
			return abox_error_setx(err, E2BIG, "template build: more than %d packages",
					       PACKAGES_MAX);
		argv[k++] = t;
	}
	argv[k] = NULL;

	/* the host's resolver for the downloads; the root's own file back after */
	char rc_path[4400];
	safe_snprintf(rc_path, sizeof(rc_path), "%s/etc/resolv.conf", root);
	_cleanup_free_ char *host_rc = NULL, *own_rc = NULL;
	(void)read_file_at(AT_FDCWD, "/etc/resolv.conf", 1 << 16, &host_rc, NULL);
	struct stat st_rc;
	if (lstat(rc_path, &st_rc) == 0 && S_ISREG(st_rc.st_mode))
		(void)read_file_at(AT_FDCWD, rc_path, 1 << 16, &own_rc, NULL);
	if (host_rc)
		(void)put_file(root, "etc/resolv.conf", host_rc, strlen(host_rc), 0644);
	static const char no_services[] = "#!/bin/sh\n# abox template build: no service starts while "
					  "packages are installed\nexit 101\n";
	int pol = put_file(root, "usr/sbin/policy-rc.d", no_services, sizeof(no_services) - 1, 0755);

	int r;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		r = abox_error_set(err, errno, "template build: pipe");
		goto restore;
	}
	pid_t c = fork_with(p, err, "template build: fork");
	if (c < 0) {
		r = c;
		goto restore;
	}
	if (c == 0) {
		char proc[4400], dev[4400];
		safe_snprintf(proc, sizeof(proc), "%s/proc", root);
		safe_snprintf(dev, sizeof(dev), "%s/dev", root);
		/* the mounts end with this namespace, never on the host */
		if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount("proc", proc, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0 ||
		    mount("/dev", dev, NULL, MS_BIND, NULL) < 0 || chroot(root) < 0 || chdir("/") < 0)
			_exit(126);
		template_child_exec(p[1], "/bin/sh", argv);
	}
	close(p[1]);
	char last[2600];
	int st = template_child_lines(p[0], c, log, ud, last, sizeof(last), err);
	if (st < 0)
		r = st;
	else if (st > 0)
		r = abox_error_setx(err, EIO,
				    "template build: apt-get install of the recipe's packages failed (exit "
				    "%d); its last lines:%s",
				    WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), last);
	else
		r = 0;
restore:
	if (pol == 0) {
		char pp[4400];
		safe_snprintf(pp, sizeof(pp), "%s/usr/sbin/policy-rc.d", root);
		(void)unlink(pp);
	}
	if (own_rc)
		(void)put_file(root, "etc/resolv.conf", own_rc, strlen(own_rc), 0644);
	else
		(void)unlink(rc_path);
	return r;
}

/* Whether the account file text has an entry named name or with id id
 * (the third field). */
static bool has_account(const char *text, const char *name, const char *id)
{
	size_t nl = strlen(name), il = strlen(id);
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, name, nl) == 0 && l[nl] == ':')
			return true;
		const char *f = strchr(l, ':');
		f = f ? strchr(f + 1, ':') : NULL;
		if (f && strncmp(f + 1, id, il) == 0 && f[1 + il] == ':')
			return true;
	}
	return false;
}

/* Appends line to root/rel unless it names the account already. */
static int add_account(const char *root, const char *rel, const char *line, abox_error *err)
{
	char p[4400];
	safe_snprintf(p, sizeof(p), "%s/%s", root, rel);
	_cleanup_free_ char *text = NULL;
	int r = read_file_at(AT_FDCWD, p, 1 << 22, &text, NULL);
	if (r == -ENOENT)
		return 0; /* no such file in this tree (a shadow file, say) */
	if (r < 0)
		return abox_error_set(err, -r, "template build: read '%s'", p);
	if (has_account(text, "user", "1000"))
		return 0;
	int fd = open(p, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return abox_error_set(err, errno, "template build: open '%s'", p);
	size_t n = strlen(text);
	bool nl = n && text[n - 1] != '\n';
	int w = (nl ? write_full(fd, "\n", 1) : 0) < 0 ? -EIO : write_full(fd, line, strlen(line));
	close(fd);
	return w < 0 ? abox_error_set(err, -w, "template build: write '%s'", p) : 0;
}

int template_add_user(const char *root, abox_error *err)
{
	int r = add_account(root, "etc/passwd", "user:x:1000:1000:user:/home/user:/bin/bash\n", err);
	if (r >= 0)
		r = add_account(root, "etc/group", "user:x:1000:\n", err);
	if (r >= 0)
		r = add_account(root, "etc/shadow", "user:*:20000:0:99999:7:::\n", err);
	return r;
}
