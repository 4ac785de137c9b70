/* layer/template_build.c — templates built from a recipe with debootstrap
 * (`abox template build NAME RECIPE`).
 *
 * A recipe is a small text file of `key = value` lines (see rootfs/):
 * the Debian suite, variant, extra packages and mirror, plus the
 * template's metadata. It is parsed strictly: an unknown key or a value
 * that is not what its key takes is an error naming the line.
 *
 * debootstrap runs in a mount namespace of its own (it mounts /proc and
 * friends inside the new root while configuring packages; those mounts
 * end with it and never show up on the host), into a scratch folder next
 * to the templates; its output is shown as progress. The tree is then
 * imported like any folder (device nodes, setuid bits and file
 * capabilities left out) and the scratch folder removed.
 * Runs in the CLI/daemon, as root. */
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "base/run.h"
#include "base/sha256.h"
#include "layer/layer.h"

#define RECIPE_MAX_BYTES (64u << 10)
#define RECIPE_MAX_ENV 64

#define LOWER "abcdefghijklmnopqrstuvwxyz"
#define DIGITS "0123456789"

/* The keys whose value is one string, given once: where it goes, and what
 * a value value_ok refuses is told after "PATH:LINE: KEY" (quote: with
 * the value quoted first). */
static const struct {
	const char *key;
	size_t off;
	const char *want;
	bool quote;
} strings[] = {
	{ "suite", offsetof(struct template_recipe, suite), " is not a Debian suite name", true },
	{ "variant", offsetof(struct template_recipe, variant), ": minbase, buildd or -", true },
	{ "include", offsetof(struct template_recipe, include), ": package names separated by commas",
	  false },
	{ "packages", offsetof(struct template_recipe, packages), ": package names separated by commas",
	  false },
	{ "components", offsetof(struct template_recipe, components), ": names separated by commas", false },
	{ "mirror", offsetof(struct template_recipe, mirror), " is not an http(s) or file URL", true },
	{ "user", offsetof(struct template_recipe, user), ": user or root", true },
	{ "workdir", offsetof(struct template_recipe, workdir), " must be absolute", false },
	{ "start", offsetof(struct template_recipe, start_cmd), "", false },
	{ "ready-cmd", offsetof(struct template_recipe, ready_cmd), "", false },
};

static char **string_at(struct template_recipe *r, size_t i)
{
	return (char **)((char *)r + strings[i].off);
}

/* Whether v will do for the string key k: the Debian words debootstrap
 * gets are checked strictly (they end up on its command line). */
static bool value_ok(const char *k, const char *v)
{
	if (strcmp(k, "suite") == 0)
		return str_of(v, LOWER DIGITS "-", 1, 32);
	if (strcmp(k, "variant") == 0)
		return strcmp(v, "minbase") == 0 || strcmp(v, "buildd") == 0 || strcmp(v, "-") == 0;
	if (strcmp(k, "include") == 0 || strcmp(k, "packages") == 0)
		return str_of(v, LOWER DIGITS "+.-,", 1, 4000);
	if (strcmp(k, "components") == 0)
		return str_of(v, LOWER DIGITS "-,", 1, 200);
	if (strcmp(k, "mirror") == 0)
		return (strncmp(v, "http://", 7) == 0 || strncmp(v, "https://", 8) == 0 ||
			strncmp(v, "file:///", 8) == 0) &&
		       !strpbrk(v, " \t\"'");
	if (strcmp(k, "user") == 0)
		return strcmp(v, "root") == 0 || strcmp(v, "user") == 0;
	if (strcmp(k, "workdir") == 0)
		return v[0] == '/';
	return true; /* the commands: whatever sh -c takes */
}

void template_recipe_free(struct template_recipe *r)
{
	for (size_t i = 0; i < ELEMENTSOF(strings); i++)
		free(*string_at(r, i));
	strv_free(r->env);
	memset(r, 0, sizeof(*r));
}

static int set_once(char **slot, const char *v, const char *path, unsigned line, const char *key, abox_error *err)
{
	if (*slot)
		return abox_error_setx(err, EINVAL, "%s:%u: '%s' given twice", path, line, key);
	if (!(*slot = strdup(v)))
		return abox_error_set(err, ENOMEM, "recipe");
	return 0;
}

int template_recipe_parse(const char *path, const char *text, struct template_recipe *r, abox_error *err)
{
	memset(r, 0, sizeof(*r));
	_cleanup_free_ char *copy = strdup(text);
	if (!copy)
		return abox_error_set(err, ENOMEM, "recipe");
	unsigned line = 0;
	int rc = 0;
	size_t nenv = 0;
	for (char *save = NULL, *l = strtok_r(copy, "\n", &save); l && rc == 0; l = strtok_r(NULL, "\n", &save)) {
		line++;
		while (*l == ' ' || *l == '\t')
			l++;
		size_t n = strlen(l);
		while (n && (l[n - 1] == ' ' || l[n - 1] == '\t' || l[n - 1] == '\r'))
			l[--n] = '\0';
		if (!*l || *l == '#')
			continue;
		char *eq = strchr(l, '=');
		if (!eq) {
			rc = abox_error_setx(err, EINVAL, "%s:%u: expected 'key = value'", path, line);
			break;
		}
		char *k = l, *v = eq + 1;
		char *ke = eq;
		while (ke > k && (ke[-1] == ' ' || ke[-1] == '\t'))
			ke--;
		*ke = '\0';
		while (*v == ' ' || *v == '\t')
			v++;
		size_t i = 0;
		while (i < ELEMENTSOF(strings) && strcmp(k, strings[i].key) != 0)
			i++;
		if (i < ELEMENTSOF(strings) && !value_ok(k, v)) {
			rc = strings[i].quote ? abox_error_setx(err, EINVAL, "%s:%u: %s '%s'%s", path, line,
								k, v, strings[i].want)
					      : abox_error_setx(err, EINVAL, "%s:%u: %s%s", path, line, k,
								strings[i].want);
		} else if (i < ELEMENTSOF(strings)) {
			rc = set_once(string_at(r, i), v, path, line, k, err);
		} else if (strcmp(k, "env") == 0) {
			if (!strchr(v, '=') || v[0] == '=' || nenv == RECIPE_MAX_ENV) {
				rc = abox_error_setx(err, EINVAL, "%s:%u: env: one K=V (at most %d)", path, line, RECIPE_MAX_ENV);
			} else {
				char **nv = realloc(r->env, (nenv + 2) * sizeof(char *));
				if (!nv || !(nv[nenv] = strdup(v))) {
					if (nv)
						r->env = nv;
					rc = abox_error_set(err, ENOMEM, "recipe");
				} else {
					r->env = nv;
					r->env[++nenv] = NULL;
				}
			}
		} else if (strcmp(k, "ready-port") == 0) {
			char *end;
			unsigned long p = strtoul(v, &end, 10);
			if (*end || !p || p > 65535)
				rc = abox_error_setx(err, EINVAL, "%s:%u: ready-port '%s': 1-65535", path, line, v);
			r->ready_port = (uint16_t)p;
		} else if (strcmp(k, "ready-timeout") == 0) {
			char *end;
			unsigned long s = strtoul(v, &end, 10);
			if (*end || !s || s > 3600)
				rc = abox_error_setx(err, EINVAL, "%s:%u: ready-timeout '%s': 1-3600 seconds", path, line, v);
			r->ready_timeout_ms = (uint32_t)s * 1000;
		} else {
			rc = abox_error_setx(err, EINVAL, "%s:%u: unknown key '%s'", path, line, k);
		}
	}
	if (rc == 0 && !r->suite)
		rc = abox_error_setx(err, EINVAL, "%s: no 'suite'", path);
	if (rc < 0)
		template_recipe_free(r);
	return rc;
}

/* The Debian mirror this machine's apt uses: the first deb source that is
 * not a security archive, in deb822 (*.sources) or one-line format. */
char *template_host_mirror(void)
{
	char *found = NULL;
	DIR *d = opendir("/etc/apt/sources.list.d");
	struct dirent *de;
	while (!found && d && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (n < 9 || strcmp(de->d_name + n - 8, ".sources") != 0)
			continue;
		char p[512];
		safe_snprintf(p, sizeof(p), "/etc/apt/sources.list.d/%s", de->d_name);
		_cleanup_free_ char *s = NULL;
		if (read_file_at(AT_FDCWD, p, 1 << 20, &s, NULL) < 0)
			continue;
		bool deb = false;
		for (char *save = NULL, *l = strtok_r(s, "\n", &save); l && !found; l = strtok_r(NULL, "\n", &save)) {
			if (strncmp(l, "Types:", 6) == 0) {
				deb = false;
				for (char *s2 = NULL, *t = strtok_r(l + 6, " \t", &s2); t; t = strtok_r(NULL, " \t", &s2))
					deb = deb || strcmp(t, "deb") == 0;
				continue;
			}
			if (deb && strncmp(l, "URIs:", 5) == 0) {
				char *u = l + 5;
				while (*u == ' ')
					u++;
				u[strcspn(u, " \t")] = '\0';
				if (*u && !strstr(u, "security"))
					found = strdup(u);
			}
		}
	}
	if (d)
		closedir(d);
	_cleanup_free_ char *s = NULL;
	if (!found && read_file_at(AT_FDCWD, "/etc/apt/sources.list", 1 << 20, &s, NULL) >= 0) {
		for (char *save = NULL, *l = strtok_r(s, "\n", &save); l && !found; l = strtok_r(NULL, "\n", &save)) {
			if (strncmp(l, "deb ", 4) != 0)
				continue;
			char *u = l + 4;
			while (*u == ' ')
				u++;
			if (*u == '[') { /* options */
				char *e = strchr(u, ']');
				if (!e)
					continue;
				u = e + 1;
				while (*u == ' ')
					u++;
			}
			u[strcspn(u, " \t")] = '\0';
			if (*u && !strstr(u, "security"))
				found = strdup(u);
		}
	}
	return found;
}

void template_child_exec(int out, const char *bin, const char *const *argv)
{
	int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (nul < 0 || dup2(nul, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
		_exit(126);
	char *envp[] = { (char *)"PATH=/usr/sbin:/usr/bin:/sbin:/bin", (char *)"LANG=C.UTF-8",
			 (char *)"DEBIAN_FRONTEND=noninteractive", NULL };
	execve(bin, (char *const *)argv, envp);
	_exit(127);
}

/* Reads a child's output from fd (closed here) a line at a time into log,
 * then waits for the child: its wait status (0: it succeeded), with its
 * last five lines in last for the caller's error, or -errno. */
int template_child_lines(int fd, pid_t child, void (*log)(const char *line, void *ud), void *ud, char *last,
			 size_t last_size, abox_error *err)
{
	char buf[4096], tail[5][512] = { { 0 } };
	size_t len = 0;
	unsigned nt = 0;
	for (;;) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		char *nl;
		while ((nl = memchr(buf, '\n', len)) || len == sizeof(buf) - 1) {
			size_t l = nl ? (size_t)(nl - buf) : len;
			buf[l] = '\0';
			if (log)
				log(buf, ud);
			safe_snprintf(tail[nt++ % 5], sizeof(tail[0]), "%s", buf);
			size_t used = nl ? l + 1 : len;
			memmove(buf, buf + used, len - used);
			len -= used;
		}
	}
	close(fd);
	int st = wait_child(child, err, "template build: wait for its helper");
	last[0] = '\0';
	for (unsigned i = nt > 5 ? nt - 5 : 0; i < nt; i++) {
		size_t l = strlen(last);
		safe_snprintf(last + l, last_size - l, "\n  %s", tail[i % 5]);
	}
	return st;
}

/* Runs debootstrap for r into root (which must not exist), in a mount
 * namespace of its own; every output line goes to log. */
static int run_debootstrap(const struct template_recipe *r, const char *mirror, const char *root,
			   void (*log)(const char *line, void *ud), void *ud, abox_error *err)
{
	const char *bin = "/usr/sbin/debootstrap";
	if (access(bin, X_OK) < 0)
		return abox_error_setx(err, ENOENT, "template build: %s not found (apt-get install debootstrap)", bin);
	char variant[64], include[4100], components[256];
	const char *argv[10];
	int k = 0;
	argv[k++] = "debootstrap";
	if (!r->variant || strcmp(r->variant, "-") != 0) {
		safe_snprintf(variant, sizeof(variant), "--variant=%s", r->variant ? r->variant : "minbase");
		argv[k++] = variant;
	}
	if (r->include) {
		safe_snprintf(include, sizeof(include), "--include=%s", r->include);
		argv[k++] = include;
	}
	if (r->components) {
		safe_snprintf(components, sizeof(components), "--components=%s", r->components);
		argv[k++] = components;
	}
	argv[k++] = r->suite;
	argv[k++] = root;
	argv[k++] = mirror;
	argv[k] = NULL;

	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return abox_error_set(err, errno, "template build: pipe");
	pid_t c = fork_with(p, err, "template build: fork");
	if (c < 0)
		return c;
	if (c == 0) {
		/* its mounts (proc, sys, dev inside the new root) stay in
		 * this namespace and end with it */
		if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			_exit(126);
		template_child_exec(p[1], bin, argv);
	}
	close(p[1]);
	char last[2600];
	int st = template_child_lines(p[0], c, log, ud, last, sizeof(last), err);
	if (st <= 0)
		return st;
	return abox_error_setx(err, EIO, "template build: debootstrap %s %s failed (exit %d); its last lines:%s",
			       r->suite, mirror, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), last);
}

/* What names a build: the recipe's text, the mirror and the caller's
 * metadata, hashed. */
static void recipe_digest(const char *text, const char *mirror, const struct template_import_req *q,
			  char out[65])
{
	struct sha256 h;
	sha256_init(&h);
	/* what the build itself does, too: a change to it makes older
	 * builds of the same recipe out of date */
	static const char builder[] = "abox template build 2 (the default user's account)";
	sha256_update(&h, builder, sizeof(builder));
	const char *parts[] = { text, mirror, q->user, q->workdir, q->start_cmd, q->ready_cmd };
	for (size_t i = 0; i < ELEMENTSOF(parts); i++) {
		sha256_update(&h, parts[i] ? parts[i] : "", parts[i] ? strlen(parts[i]) : 0);
		sha256_update(&h, "", 1);
	}
	for (size_t i = 0; q->env && q->env[i]; i++)
		sha256_update(&h, q->env[i], strlen(q->env[i]) + 1);
	char nums[32];
	safe_snprintf(nums, sizeof(nums), "%u:%u", (unsigned)q->ready_port, (unsigned)q->ready_timeout_ms);
	sha256_update(&h, nums, strlen(nums));
	sha256_hex(&h, out);
}

/* 1 with *out filled when template name's current version was built by
 * the recipe digest names (the same text, mirror and metadata, wherever
 * the recipe file lies), 0 when it was not (or there is none), -errno
 * when its record cannot be read. */
static int up_to_date(const char *state_dir, const char *name, const char *digest, struct template_meta *out)
{
	struct template_info t;
	if (template_open(state_dir, name, &t, NULL) < 0)
		return 0;
	char mark[100];
	safe_snprintf(mark, sizeof(mark), ", recipe sha256:%s) from ", digest);
	bool same = t.meta.source && strncmp(t.meta.source, "debootstrap ", 12) == 0 &&
		    strstr(t.meta.source, mark);
	int r = same ? template_meta_read(t.root, out, NULL) : 0;
	template_info_free(&t);
	return r < 0 ? r : same;
}

int template_build(const char *state_dir, const char *name, const char *recipe_path,
		   const struct template_import_req *req, void (*log)(const char *line, void *ud), void *ud,
		   struct template_meta *out, abox_error *err)
{
	_cleanup_free_ char *text = NULL;
	int r = read_file_at(AT_FDCWD, recipe_path, RECIPE_MAX_BYTES, &text, NULL);
	if (r < 0)
		return abox_error_set(err, -r, "template build: read '%s'", recipe_path);
	struct template_recipe rec;
	if ((r = template_recipe_parse(recipe_path, text, &rec, err)) < 0)
		return r;
	_cleanup_free_ char *host_mirror = rec.mirror ? NULL : template_host_mirror();
	const char *mirror = rec.mirror ? rec.mirror : host_mirror;
	if (!mirror) {
		template_recipe_free(&rec);
		return abox_error_setx(err, ENOENT,
				       "template build: no Debian mirror in this machine's apt sources; "
				       "add 'mirror = URL' to %s", recipe_path);
	}
	/* the recipe's metadata, under what the caller set */
	struct template_import_req q = *req;
	q.user = req->user ? req->user : rec.user;
	q.workdir = req->workdir ? req->workdir : rec.workdir;
	q.start_cmd = req->start_cmd ? req->start_cmd : rec.start_cmd;
	q.ready_cmd = req->ready_cmd ? req->ready_cmd : rec.ready_cmd;
	q.ready_port = req->ready_port ? req->ready_port : rec.ready_port;
	q.ready_timeout_ms = req->ready_timeout_ms ? req->ready_timeout_ms : rec.ready_timeout_ms;
	size_t nr = strv_length(rec.env), nq = strv_length(req->env);
	_cleanup_free_ char **env = calloc(nr + nq + 1, sizeof(char *));
	if (!env) {
		template_recipe_free(&rec);
		return abox_error_set(err, ENOMEM, "template build");
	}
	for (size_t i = 0; i < nr; i++)
		env[i] = rec.env[i];
	for (size_t i = 0; i < nq; i++)
		env[nr + i] = req->env[i];
	q.env = env;
	_cleanup_free_ char *abs = realpath(recipe_path, NULL);
	char source[4300], digest[65];
	recipe_digest(text, mirror, &q, digest);
	safe_snprintf(source, sizeof(source), "debootstrap %s (%s, recipe sha256:%s) from %s", rec.suite,
		      abs ? abs : recipe_path, digest, mirror);
	q.source = source;
	if (!req->rebuild && (r = up_to_date(state_dir, name, digest, out)) != 0) {
		template_recipe_free(&rec);
		if (r > 0 && log) {
			char msg[300];
			safe_snprintf(msg, sizeof(msg),
				      "abox: template '%s' is up to date (this recipe, mirror and options "
				      "built it); --rebuild builds it again",
				      name);
			log(msg, ud);
		}
		return r > 0 ? 0 : r;
	}

	char tdir[4096], scratch[4200], root[4300], gen[9];
	safe_snprintf(tdir, sizeof(tdir), "%s/templates", state_dir);
	if ((mkdir(state_dir, 0700) < 0 && errno != EEXIST) || (mkdir(tdir, 0700) < 0 && errno != EEXIST)) {
		template_recipe_free(&rec);
		return abox_error_set(err, errno, "template build: create '%s'", tdir);
	}
	int lk = template_lock(tdir, err);
	if (lk < 0 || (r = random_id(gen, 8)) < 0) {
		template_recipe_free(&rec);
		if (lk >= 0)
			close(lk);
		return lk < 0 ? lk : abox_error_set(err, -r, "template build: random");
	}
	/* a .build. folder: if we die, the next sweep (under the lock) removes it */
	safe_snprintf(scratch, sizeof(scratch), "%s/.build.debootstrap-%s", tdir, gen);
	safe_snprintf(root, sizeof(root), "%s/root", scratch);
	if (mkdir(scratch, 0700) < 0) {
		r = abox_error_set(err, errno, "template build: create '%s'", scratch);
	} else if ((r = run_debootstrap(&rec, mirror, root, log, ud, err)) >= 0 &&
		   (!rec.packages || (r = template_apt_install(root, rec.packages, log, ud, err)) >= 0) &&
		   /* `whoami`, pip --user, git and ssh look the default user up */
		   ((q.user && strcmp(q.user, "root") == 0) || (r = template_add_user(root, err)) >= 0)) {
		if (log)
			log("abox: importing the new root filesystem", ud);
		r = template_import_locked(state_dir, tdir, name, root, &q, out, err);
	}
	(void)rm_rf_at(AT_FDCWD, scratch, 0);
	close(lk);
	template_recipe_free(&rec);
	return r;
}
