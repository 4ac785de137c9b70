/* base/util.c — fd, file, size and id helpers shared by all modules.
 * Runs in the CLI, the daemon and abox-init; write_full/read_full and
 * write_file_at are also used between clone and exec (they only make
 * system calls). */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>

#include <time.h>

#include "base.h"
#include "base/clock.h"

void strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

size_t strv_length(char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

char **strv_copy(char *const *v)
{
	size_t n = strv_length(v);
	char **c = n ? calloc(n + 1, sizeof(char *)) : NULL;
	for (size_t i = 0; c && i < n; i++)
		c[i] = strdup(v[i]);
	return c;
}

int strv_env_set(char ***env, const char *kv)
{
	const char *eq = strchr(kv, '=');
	if (!eq || eq == kv)
		return -EINVAL;
	size_t kl = (size_t)(eq - kv) + 1, n = strv_length(*env);
	char *copy = strdup(kv);
	if (!copy)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (strncmp((*env)[i], kv, kl) == 0) {
			free((*env)[i]);
			(*env)[i] = copy;
			return 0;
		}
	char **nv = realloc(*env, (n + 2) * sizeof(char *));
	if (!nv) {
		free(copy);
		return -ENOMEM;
	}
	nv[n] = copy;
	nv[n + 1] = NULL;
	*env = nv;
	return 0;
}

char **strv_env_merge(char *const *base, const char *const *over)
{
	size_t nb = strv_length(base), no = strv_length((char *const *)over), k = 0;
	char **v = calloc(nb + no + 1, sizeof(char *));
	for (size_t i = 0; v && i < nb + no; i++) {
		const char *e = i < nb ? base[i] : over[i - nb];
		const char *eq = strchr(e, '=');
		size_t kl = eq ? (size_t)(eq - e) + 1 : strlen(e);
		bool later = false;
		for (size_t j = i + 1; j < nb + no && !later; j++)
			later = strncmp(j < nb ? base[j] : over[j - nb], e, kl) == 0;
		if (later)
			continue;
		if (!(v[k++] = strdup(e))) {
			strv_free(v);
			return NULL;
		}
	}
	return v;
}

int write_full(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

ssize_t read_full(int fd, void *buf, size_t n)
{
	char *p = buf;
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, p + got, n - got);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

int write_file_at(int dirfd, const char *path, const char *s)
{
	int fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	size_t len = strlen(s);
	ssize_t w;
	do
		w = write(fd, s, len);
	while (w < 0 && errno == EINTR);
	int r = w < 0 ? -errno : (size_t)w != len ? -EIO : 0;
	close(fd);
	return r;
}

int read_all_fd(int fd, size_t limit, char **buf, size_t *cap, size_t *len)
{
	size_t n = 0;
	for (;;) {
		ssize_t r = read_full(fd, *buf + n, *cap - n);
		if (r < 0)
			return (int)r;
		n += (size_t)r;
		if (n < *cap)
			break; /* the end came first */
		if (*cap >= limit)
			return -EFBIG;
		size_t ncap = *cap * 2 > limit ? limit : *cap * 2;
		char *nb = realloc(*buf, ncap + 1);
		if (!nb)
			return -ENOMEM;
		*buf = nb;
		*cap = ncap;
	}
	(*buf)[n] = '\0';
	*len = n;
	return 0;
}

int read_file_at(int dirfd, const char *path, size_t limit, char **out, size_t *len)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	size_t cap = 4096 < limit ? 4096 : limit, n;
	/* a regular file says how big it is: one buffer, no regrowth (a
	 * file that grows meanwhile still grows the buffer) */
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
		cap = (size_t)st.st_size < limit ? (size_t)st.st_size + 1 : limit;
	_cleanup_free_ char *buf = malloc(cap + 1);
	if (!buf)
		return -ENOMEM;
	int r = read_all_fd(fd, limit, &buf, &cap, &n);
	if (r < 0)
		return r;
	if (len)
		*len = n;
	*out = TAKE_PTR(buf);
	return 0;
}

char *line_read(FILE *f)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n = getline(&line, &cap, f);
	if (n < 0) {
		free(line);
		return NULL;
	}
	while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		line[--n] = '\0';
	return line;
}

int write_file_replace(const char *path, const char *tmp, const void *data, size_t len, mode_t mode,
		       bool durable)
{
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		return -errno;
	int r = write_full(fd, data, len);
	if (r == 0 && durable && fsync(fd) < 0)
		r = -errno;
	close(fd);
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

int parse_size(const char *s, uint64_t *out)
{
	if (!s || !*s)
		return -EINVAL;
	uint64_t v = 0;
	const char *p = s;
	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	unsigned shift = 0;
	switch (*p) {
	case '\0': break;
	case 'k': case 'K': shift = 10; p++; break;
	case 'm': case 'M': shift = 20; p++; break;
	case 'g': case 'G': shift = 30; p++; break;
	case 't': case 'T': shift = 40; p++; break;
	default: return -EINVAL;
	}
	if (shift && (*p == 'i' || *p == 'I'))
		p++;
	if (shift && (*p == 'b' || *p == 'B'))
		p++;
	if (*p != '\0')
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = v << shift;
	return 0;
}

void format_size(uint64_t v, char *buf, size_t n)
{
	static const char units[] = "KMGT";
	int u = -1;
	while (v >= 1024 && v % 1024 == 0 && u < 3) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		safe_snprintf(buf, n, "%llu", (unsigned long long)v);
	else
		safe_snprintf(buf, n, "%llu%c", (unsigned long long)v, units[u]);
}

int random_bytes(void *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = getrandom((uint8_t *)buf + got, n - got, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)r;
	}
	return 0;
}

int random_id(char *buf, size_t n)
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	uint8_t rnd[64];
	if (n > sizeof(rnd))
		return -EINVAL;
	int r = random_bytes(rnd, n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		/* 252 = 7 * 36: reject the top values to keep the draw uniform */
		while (rnd[i] >= 252) {
			if (getrandom(&rnd[i], 1, 0) != 1)
				return -EIO;
		}
		buf[i] = alphabet[rnd[i] % 36];
	}
	buf[n] = '\0';
	return 0;
}

/* Removes name below dfd, recursively, never following symlinks; with
 * stop, the first failure ends the walk and is the answer. */
static int rm_tree(int dfd, const char *name, unsigned depth, bool stop)
{
	if (depth > 300)
		return -ELOOP;
	if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (sub < 0)
		return -errno;
	DIR *d = fdopendir(sub);
	if (!d) {
		close(sub);
		return -errno;
	}
	struct dirent *de;
	int r = 0;
	while ((de = readdir(d)) && !(stop && r < 0))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			r = rm_tree(dirfd(d), de->d_name, depth + 1, stop);
	closedir(d);
	if (stop && r < 0)
		return r;
	return unlinkat(dfd, name, AT_REMOVEDIR) < 0 ? -errno : 0;
}

int rm_rf_at(int dfd, const char *name, unsigned depth)
{
	return rm_tree(dfd, name, depth, false);
}

int rm_rf_strict_at(int dfd, const char *name)
{
	return rm_tree(dfd, name, 0, true);
}

bool str_head(const char *s, const char *stop, char *buf, size_t n)
{
	size_t len = strcspn(s, stop);
	if (len >= n)
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	return true;
}

bool str_of(const char *s, const char *set, size_t min, size_t max)
{
	size_t n = strspn(s, set);
	return n >= min && n <= max && s[n] == '\0';
}

bool id_ok(const char *id)
{
	return str_of(id, "abcdefghijklmnopqrstuvwxyz0123456789", 20, 20);
}

int read_proc_file(pid_t pid, const char *name, char **out)
{
	char p[64];
	safe_snprintf(p, sizeof(p), "/proc/%d/%s", (int)pid, name);
	return read_file_at(AT_FDCWD, p, 65536, out, NULL);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int list_ids(const char *dir, char ***out, abox_error *err)
{
	size_t n = 0, cap = 16;
	char **v = calloc(cap + 1, sizeof(char *));
	if (!v)
		return abox_error_set(err, ENOMEM, "list '%s'", dir);
	DIR *d = opendir(dir);
	if (!d && errno != ENOENT) {
		int e = errno;
		free(v);
		return abox_error_set(err, e, "list '%s'", dir);
	}
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (!id_ok(de->d_name))
			continue;
		if (n == cap) {
			char **nv = realloc(v, (cap * 2 + 1) * sizeof(char *));
			if (!nv)
				break;
			v = nv;
			cap *= 2;
		}
		if (!(v[n] = strdup(de->d_name)))
			break;
		v[++n] = NULL;
	}
	if (d)
		closedir(d);
	qsort(v, n, sizeof(char *), cmp_str);
	*out = v;
	return 0;
}

int64_t lock_timeout_ms(void)
{
	const char *e = getenv("ABOX_LOCK_TIMEOUT_MS");
	long long v = e && *e ? strtoll(e, NULL, 10) : 0;
	return v > 0 ? v : 30000;
}

/* Polled (flock has no timeout), from 1 ms up to 50 ms between tries. */
int flock_timeout(int fd, int op, int64_t ms)
{
	int64_t end = clock_mono_ms() + ms;
	long delay_us = 1000;
	for (;;) {
		if (flock(fd, op | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		if (clock_mono_ms() >= end)
			return -ETIMEDOUT;
		struct timespec ts = { 0, delay_us * 1000 };
		nanosleep(&ts, NULL);
		if (delay_us < 50000)
			delay_us *= 2;
	}
}
