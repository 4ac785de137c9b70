/* abox files / abox cp — files of a running sandbox, done by abox-init
 * inside it as the requested user (see docs/cli.md). On the host side,
 * `abox cp` out of a sandbox writes only below the destination folder,
 * never through a symlink (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS),
 * and makes no symlinks: a sandbox cannot steer the copy to other host
 * files. */
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <json-c/json.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "base/base.h"
#include "cli.h"
#include "base/openat2.h"

static const char *type_name(abox_file_type t)
{
	switch (t) {
	case ABOX_FILE_REGULAR: return "file";
	case ABOX_FILE_DIR: return "dir";
	case ABOX_FILE_SYMLINK: return "symlink";
	default: return "other";
	}
}

static json_object *info_obj(const abox_file_info *e)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "path", json_object_new_string(e->path));
	json_object_object_add(o, "name", json_object_new_string(e->name));
	json_object_object_add(o, "type", json_object_new_string(type_name(e->type)));
	json_object_object_add(o, "size", json_object_new_uint64(e->size));
	json_object_object_add(o, "mode", json_object_new_int((int)e->mode));
	json_object_object_add(o, "uid", json_object_new_int((int)e->uid));
	json_object_object_add(o, "gid", json_object_new_int((int)e->gid));
	json_object_object_add(o, "owner", json_object_new_string(e->uid == 0 ? "root" : e->uid == 1000 ? "user" : ""));
	json_object_object_add(o, "mtimeMs", json_object_new_int64(e->mtime_ms));
	if (e->target[0])
		json_object_object_add(o, "symlinkTarget", json_object_new_string(e->target));
	return o;
}

static void print_info(const abox_file_info *e)
{
	char when[32];
	cli_utc(e->mtime_ms, when, sizeof(when));
	printf("%-7s %04o %5u %5u %10llu %s %s%s%s\n", type_name(e->type), e->mode, e->uid, e->gid,
	       (unsigned long long)e->size, when, e->path, e->target[0] ? " -> " : "", e->target);
}

struct watch_ctx {
	uint64_t left; /* 0 = no limit */
};

static int on_fs_event(abox_fs_event_type type, const char *path, void *ud)
{
	static const char *const names[] = { "?", "create", "write", "remove", "rename", "chmod" };
	struct watch_ctx *w = ud;
	printf("%s %s\n", (unsigned)type < 6 ? names[type] : "?", path);
	fflush(stdout);
	return w->left && --w->left == 0;
}

static int out_chunk(const void *data, size_t len, void *ud)
{
	(void)ud;
	return write_full(1, data, len) < 0;
}

int cmd_files(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "user", required_argument, NULL, 'u' },
		{ "parents", no_argument, NULL, 'p' },
		{ "depth", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "recursive", no_argument, NULL, 'r' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "count", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *user = NULL;
	bool recursive = false;
	uint32_t timeout_ms = 0;
	uint64_t count = 0;
	bool parents = false, json = false;
	uint64_t depth = 1;
	int c;
	/* options may come before or after the operation word: getopt
	 * (without "+") moves the words behind the options */
	optind = 1;
	while ((c = getopt_long(argc, argv, "u:pd:jrh", longopts, NULL)) != -1) {
		switch (c) {
		case 'r': recursive = true; break;
		case 'T':
			if (cli_opt_secs("files", "--timeout", optarg, &timeout_ms) < 0)
				return EXIT_ABOX;
			break;
		case 'c':
			if (cli_opt_count("files", "--count", optarg, &count) < 0)
				return EXIT_ABOX;
			break;
		case 'u': user = optarg; break;
		case 'p': parents = true; break;
		case 'j': json = true; break;
		case 'd':
			if (cli_opt_count("files", "--depth", optarg, &depth) < 0)
				return EXIT_ABOX;
			break;
		case 'h':
			printf("usage: abox files [--user U] [--json] OP ID ARG...\n\n"
			       "  cat ID PATH            print a file\n"
			       "  write [-p] ID PATH     write stdin to a file (-p: make parent folders)\n"
			       "  ls [--depth N] ID PATH list a folder\n"
			       "  stat ID PATH           type, size, mode, owner, mtime, symlink target\n"
			       "  exists ID PATH         exit 0 if it exists, 1 if not\n"
			       "  mkdir ID PATH          make a folder and its parents\n"
			       "  mv ID FROM TO          move or rename\n"
			       "  rm ID PATH             remove a file or a whole folder\n"
			       "  watch [-r] [--timeout S] [--count N] ID PATH\n"
			       "                         print changes below a folder as they happen\n");
			return 0;
		default:
			return EXIT_ABOX;
		}
	}
	if (argc - optind < 3) {
		cli_err("files: usage: abox files OP ID PATH... (see abox files --help)");
		return EXIT_ABOX;
	}
	const char *op = argv[optind], *id = argv[optind + 1], *path = argv[optind + 2];
	const char *to = argc - optind > 3 ? argv[optind + 3] : NULL;
	if (strcmp(op, "mv") == 0 && !to) {
		cli_err("files: mv needs FROM and TO");
		return EXIT_ABOX;
	}
	_cleanup_(cli_close) struct cli_sandbox s = { 0 };
	int rc = cli_open(id, &s);
	if (rc)
		return rc;
	abox_sandbox *sb = s.sb;
	abox_error err = ABOX_ERROR_INIT;
	int r = 0;
	if (strcmp(op, "cat") == 0) {
		r = abox_file_read(sb, path, user, out_chunk, NULL, NULL, &err);
	} else if (strcmp(op, "write") == 0) {
		uint64_t n;
		r = abox_file_write_fd(sb, path, user, 0, parents, &n, &err);
		if (r == -ENOENT && !parents) {
			rc = cli_fail(&err);
			cli_err("(-p makes the missing parent folders)");
			r = 0;
		}
	} else if (strcmp(op, "stat") == 0) {
		abox_file_info e;
		r = abox_file_stat(sb, path, user, &e, &err);
		if (r >= 0 && json) {
			cli_print_json(info_obj(&e),
				       JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
		} else if (r >= 0) {
			print_info(&e);
		}
	} else if (strcmp(op, "exists") == 0) {
		int ex = 0;
		r = abox_file_exists(sb, path, user, &ex, &err);
		if (r >= 0 && !ex)
			rc = 1;
	} else if (strcmp(op, "ls") == 0) {
		abox_file_info *v = NULL;
		size_t n = 0;
		r = abox_file_list(sb, path, user, (unsigned)depth, &v, &n, &err);
		if (r >= 0) {
			json_object *arr = json ? json_object_new_array() : NULL;
			for (size_t i = 0; i < n; i++) {
				if (json)
					json_object_array_add(arr, info_obj(&v[i]));
				else
					print_info(&v[i]);
			}
			if (json)
				cli_print_json(arr, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
			free(v);
		}
	} else if (strcmp(op, "watch") == 0) {
		struct watch_ctx w = { .left = count };
		fflush(stdout);
		r = abox_file_watch(sb, path, user, recursive, timeout_ms ? (int)timeout_ms : -1, on_fs_event, &w, &err);
	} else if (strcmp(op, "mkdir") == 0) {
		r = abox_file_mkdir(sb, path, user, NULL, &err);
	} else if (strcmp(op, "mv") == 0) {
		r = abox_file_move(sb, path, to, user, &err);
	} else if (strcmp(op, "rm") == 0) {
		r = abox_file_remove(sb, path, user, &err);
	} else {
		cli_err("files: unknown operation '%s' (cat, write, ls, stat, exists, mkdir, mv, rm)", op);
		rc = EXIT_ABOX;
	}
	if (r < 0)
		rc = cli_fail(&err);
	return rc;
}

/* ---- cp ----------------------------------------------------------------- */

struct fd_sink {
	int fd;
};

static int to_fd(const void *data, size_t len, void *ud)
{
	return write_full(((struct fd_sink *)ud)->fd, data, len) < 0;
}

/* Opens rel below dirfd for writing, refusing any symlink on the way and
 * any escape from dirfd. */
static int open_beneath(int dfd, const char *rel, int flags, mode_t mode)
{
	struct open_how how = { .flags = (uint64_t)flags | O_CLOEXEC, .mode = mode,
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	return (int)openat2_retry(dfd, rel, &how, sizeof(how));
}

static int mkdir_beneath(int dfd, const char *rel)
{
	/* parent first (beneath, no symlinks), then the last component */
	char parent[4096];
	safe_snprintf(parent, sizeof(parent), "%s", rel);
	char *slash = strrchr(parent, '/');
	int pfd = dfd;
	const char *leaf = rel;
	if (slash) {
		*slash = '\0';
		pfd = open_beneath(dfd, parent, O_RDONLY | O_DIRECTORY, 0);
		if (pfd < 0)
			return -errno;
		leaf = slash + 1;
	}
	int r = mkdirat(pfd, leaf, 0755) < 0 && errno != EEXIST ? -errno : 0;
	if (pfd != dfd)
		close(pfd);
	return r;
}

static int cp_out(abox_sandbox *sb, const char *src, const char *dst, const char *user)
{
	abox_error err = ABOX_ERROR_INIT;
	abox_file_info top;
	if (abox_file_stat(sb, src, user, &top, &err) < 0)
		return cli_fail(&err);
	if (top.type == ABOX_FILE_REGULAR) {
		struct stat st;
		char target[4096];
		if (stat(dst, &st) == 0 && S_ISDIR(st.st_mode))
			safe_snprintf(target, sizeof(target), "%s/%s", dst, top.name);
		else
			safe_snprintf(target, sizeof(target), "%s", dst);
		int fd = open(target, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) {
			cli_err("cp: create '%s': %s", target, abox_strerror(errno));
			return EXIT_ABOX;
		}
		struct fd_sink s = { fd };
		int r = abox_file_read(sb, src, user, to_fd, &s, NULL, &err);
		close(fd);
		return r < 0 ? cli_fail(&err) : 0;
	}
	if (top.type != ABOX_FILE_DIR) {
		cli_err("cp: '%s' is a %s: only files and folders are copied", src, type_name(top.type));
		return EXIT_ABOX;
	}
	/* a folder: like `docker cp`, DST becomes the copy (made if missing) */
	if (mkdir(dst, 0755) < 0 && errno != EEXIST) {
		cli_err("cp: mkdir '%s': %s", dst, abox_strerror(errno));
		return EXIT_ABOX;
	}
	int dfd = open(dst, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		cli_err("cp: open '%s': %s", dst, abox_strerror(errno));
		return EXIT_ABOX;
	}
	abox_file_info *v = NULL;
	size_t n = 0;
	if (abox_file_list(sb, src, user, 16, &v, &n, &err) < 0) {
		close(dfd);
		return cli_fail(&err);
	}
	int rc = 0;
	size_t base = strlen(src);
	while (base > 1 && src[base - 1] == '/')
		base--;
	for (size_t i = 0; i < n && rc == 0; i++) {
		const char *rel = v[i].path + base + 1;
		if (strncmp(v[i].path, src, base) != 0 || !*rel || strstr(rel, "..")) {
			cli_err("cp: skipping unexpected entry '%s'", v[i].path);
			continue;
		}
		if (v[i].type == ABOX_FILE_DIR) {
			int r = mkdir_beneath(dfd, rel);
			if (r < 0) {
				cli_err("cp: mkdir '%s/%s': %s", dst, rel, abox_strerror(-r));
				rc = EXIT_ABOX;
			}
		} else if (v[i].type == ABOX_FILE_REGULAR) {
			int fd = open_beneath(dfd, rel, O_WRONLY | O_CREAT | O_TRUNC, v[i].mode & 0777);
			if (fd < 0) {
				cli_err("cp: create '%s/%s': %s", dst, rel, abox_strerror(errno));
				rc = EXIT_ABOX;
				break;
			}
			struct fd_sink s = { fd };
			if (abox_file_read(sb, v[i].path, user, to_fd, &s, NULL, &err) < 0)
				rc = cli_fail(&err);
			close(fd);
		} else {
			cli_err("cp: skipping %s '%s' (only files and folders are copied)", type_name(v[i].type), v[i].path);
		}
	}
	free(v);
	close(dfd);
	return rc;
}

static int cp_in_tree(abox_sandbox *sb, int dfd, const char *host, const char *dst, const char *user,
		      unsigned depth)
{
	abox_error err = ABOX_ERROR_INIT;
	if (depth > 64)
		return 0;
	if (abox_file_mkdir(sb, dst, user, NULL, &err) < 0) {
		close(dfd);
		return cli_fail(&err);
	}
	DIR *d = fdopendir(dfd);
	if (!d)
		return EXIT_ABOX;
	struct dirent *de;
	int rc = 0;
	while ((de = readdir(d)) && rc == 0) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char to[4096], from[4096];
		safe_snprintf(to, sizeof(to), "%s/%s", dst, de->d_name);
		safe_snprintf(from, sizeof(from), "%s/%s", host, de->d_name);
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
			if (sub >= 0)
				rc = cp_in_tree(sb, sub, from, to, user, depth + 1);
		} else if (S_ISREG(st.st_mode)) {
			int fd = openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
			if (fd < 0)
				continue;
			if (abox_file_write_fd(sb, to, user, fd, 0, NULL, &err) < 0)
				rc = cli_fail(&err);
			close(fd);
		} else {
			cli_err("cp: skipping '%s' (only files and folders are copied)", from);
		}
	}
	closedir(d);
	return rc;
}

static int cp_in(abox_sandbox *sb, const char *src, const char *dst, const char *user)
{
	abox_error err = ABOX_ERROR_INIT;
	struct stat st;
	if (stat(src, &st) < 0) {
		cli_err("cp: '%s': %s", src, abox_strerror(errno));
		return EXIT_ABOX;
	}
	if (S_ISDIR(st.st_mode)) {
		int fd = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			cli_err("cp: open '%s': %s", src, abox_strerror(errno));
			return EXIT_ABOX;
		}
		return cp_in_tree(sb, fd, src, dst, user, 0);
	}
	int fd = open(src, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		cli_err("cp: open '%s': %s", src, abox_strerror(errno));
		return EXIT_ABOX;
	}
	char to[4096];
	abox_file_info di;
	const char *base = strrchr(src, '/') ? strrchr(src, '/') + 1 : src;
	if (abox_file_stat(sb, dst, user, &di, NULL) >= 0 && di.type == ABOX_FILE_DIR)
		safe_snprintf(to, sizeof(to), "%s/%s", dst, base);
	else
		safe_snprintf(to, sizeof(to), "%s", dst);
	int r = abox_file_write_fd(sb, to, user, fd, 1, NULL, &err);
	close(fd);
	return r < 0 ? cli_fail(&err) : 0;
}

int cmd_cp(int argc, char **argv)
{
	const char *user = NULL;
	int i = 1;
	if (argc > 2 && (strcmp(argv[1], "-u") == 0 || strcmp(argv[1], "--user") == 0)) {
		user = argv[2];
		i = 3;
	}
	if (argc - i != 2) {
		cli_err("cp: usage: abox cp [-u USER] ID:PATH HOSTPATH | HOSTPATH ID:PATH");
		return EXIT_ABOX;
	}
	const char *a = argv[i], *b = argv[i + 1];
	const char *ca = strchr(a, ':'), *cb = strchr(b, ':');
	bool out = ca && (size_t)(ca - a) == 20, in = cb && (size_t)(cb - b) == 20;
	if (out == in) {
		cli_err("cp: exactly one side must be ID:PATH (a 20-character sandbox id)");
		return EXIT_ABOX;
	}
	char id[ABOX_ID_LEN + 1];
	memcpy(id, out ? a : b, 20);
	id[20] = '\0';
	_cleanup_(cli_close) struct cli_sandbox s = { 0 };
	int rc = cli_open(id, &s);
	if (rc)
		return rc;
	return out ? cp_out(s.sb, ca + 1, b, user) : cp_in(s.sb, a, cb + 1, user);
}
