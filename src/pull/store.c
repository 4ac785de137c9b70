/* store.c — the blob store pulls share (STATE/blobs): sha256/HEX holds
 * complete, verified blobs, partial/HEX a download in progress. A blob
 * is renamed into sha256/ only after its size and digest were checked,
 * so anything there is what its name says; a second pull of an image
 * sharing layers finds them there and downloads only the rest, and an
 * interrupted pull resumes a partial file where it stopped (its bytes
 * are hashed again first). Two pulls of one blob take turns on a lock of
 * its partial file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/sha256.h"
#include "store.h"

int store_open(struct store *s, const char *path)
{
	if ((mkdir(path, 0700) < 0 && errno != EEXIST))
		return -1;
	s->dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (s->dir < 0)
		return -1;
	if ((mkdirat(s->dir, "sha256", 0700) < 0 && errno != EEXIST) ||
	    (mkdirat(s->dir, "partial", 0700) < 0 && errno != EEXIST))
		return -1;
	return 0;
}

bool store_has(struct store *s, const struct descriptor *d)
{
	char p[96];
	struct stat st;
	snprintf(p, sizeof(p), "sha256/%s", d->digest + 7);
	return fstatat(s->dir, p, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	       st.st_size == d->size;
}

struct sink {
	int fd;
	struct sha256 h;
	uint64_t off, size;
	const struct descriptor *d;
	struct registry *reg;
	void (*progress)(uint64_t done, uint64_t total, void *ud);
	void *ud;
	uint64_t told;
};

static bool sink_write(const void *data, size_t n, void *ud)
{
	struct sink *k = ud;
	if (k->off + n > k->size) {
		snprintf(k->reg->err, sizeof(k->reg->err),
			 "blob %.80s: the registry sent more than its %llu bytes", k->d->digest,
			 (unsigned long long)k->size);
		return false;
	}
	const char *p = data;
	for (size_t left = n; left;) {
		ssize_t w = write(k->fd, p, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			snprintf(k->reg->err, sizeof(k->reg->err), "blob %.80s: write: %s", k->d->digest,
				 strerror(errno));
			return false;
		}
		p += w;
		left -= (size_t)w;
	}
	sha256_update(&k->h, data, n);
	k->off += n;
	if (k->progress && (k->off - k->told >= (512u << 10) || k->off == k->size)) {
		k->told = k->off;
		k->progress(k->off, k->size, k->ud);
	}
	return true;
}

static bool sink_restart(void *ud)
{
	struct sink *k = ud;
	if (ftruncate(k->fd, 0) < 0 || lseek(k->fd, 0, SEEK_SET) < 0)
		return false;
	sha256_init(&k->h);
	k->off = k->told = 0;
	return true;
}

/* Hashes what a partial file already holds; 0 or -1. */
static int rehash(struct sink *k)
{
	char buf[1 << 16];
	if (lseek(k->fd, 0, SEEK_SET) < 0)
		return -1;
	uint64_t got = 0;
	for (;;) {
		ssize_t n = read(k->fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		sha256_update(&k->h, buf, (size_t)n);
		got += (uint64_t)n;
	}
	k->off = k->told = got;
	return 0;
}

int store_fetch(struct store *s, struct registry *reg, const struct descriptor *d, struct fetch_report *rep)
{
	char part[96], full[96], path[96];
	snprintf(part, sizeof(part), "partial/%s", d->digest + 7);
	snprintf(full, sizeof(full), "sha256/%s", d->digest + 7);
	snprintf(path, sizeof(path), "blobs/%s", d->digest);
	rep->state = FETCH_CACHED;
	if (store_has(s, d))
		return 0;
	int fd = openat(s->dir, part, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || flock(fd, LOCK_EX) < 0) {
		snprintf(reg->err, sizeof(reg->err), "blob store: open %s: %s", part, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	/* another pull may have finished it while we waited */
	if (store_has(s, d)) {
		close(fd);
		(void)unlinkat(s->dir, part, 0);
		return 0;
	}
	struct sink k = { .fd = fd,
			  .size = (uint64_t)d->size,
			  .d = d,
			  .reg = reg,
			  .progress = rep->progress,
			  .ud = rep->ud };
	sha256_init(&k.h);
	struct stat st;
	/* longer than the blob: not a prefix of it, start over */
	if (fstat(fd, &st) < 0 || ((uint64_t)st.st_size > k.size && ftruncate(fd, 0) < 0) || rehash(&k) < 0)
		goto io;
	rep->state = k.off ? FETCH_RESUMED : FETCH_NEW;
	rep->resumed_at = k.off;
	for (int attempt = 0; k.off < k.size; attempt++) {
		struct fetch f = {
			.path = path,
			.from = k.off,
			.sink = sink_write,
			.restart = sink_restart,
			.ud = &k,
		};
		if (registry_get(reg, &f) == 0 && k.off == k.size)
			break;
		if (f.sink_stopped || attempt >= 4 || (!f.transient && f.status != 200 && f.status != 206)) {
			if (f.status == 200 || f.status == 206)
				snprintf(reg->err + strlen(reg->err), sizeof(reg->err) - strlen(reg->err),
					 "%s",
					 k.off < k.size ? " (the download broke off; pull again to resume it)"
							: "");
			if (!reg->err[0])
				snprintf(reg->err, sizeof(reg->err),
					 "blob %.80s: the download broke off at %llu of "
					 "%llu bytes",
					 d->digest, (unsigned long long)k.off, (unsigned long long)k.size);
			close(fd);
			return -1;
		}
		/* broken off: resume after a pause (0.5, 1, 2, 4 s) */
		usleep(500000u << attempt);
		reg->err[0] = '\0';
		rep->retries++;
	}
	char hex[65];
	sha256_hex(&k.h, hex);
	if (strcmp(hex, d->digest + 7) != 0) {
		/* the bytes are not the image's: never keep or resume them */
		(void)unlinkat(s->dir, part, 0);
		close(fd);
		snprintf(reg->err, sizeof(reg->err),
			 "blob %.80s does not match its digest (got sha256:%s): damaged "
			 "or altered on the way; nothing of it was kept",
			 d->digest, hex);
		return -1;
	}
	if (fsync(fd) < 0 || renameat(s->dir, part, s->dir, full) < 0)
		goto io;
	close(fd);
	return 0;
io:
	snprintf(reg->err, sizeof(reg->err), "blob store: %s: %s", part, strerror(errno));
	close(fd);
	return -1;
}
