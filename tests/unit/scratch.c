/* A scratch folder for unit tests (see scratch.h). */
#include <criterion/criterion.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "scratch.h"

void scratch_make(char *dir)
{
	cr_assert_not_null(mkdtemp(dir), "mkdtemp %s", dir);
}

void scratch_put(const char *dir, const char *rel, const char *content)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	for (char *p = path + strlen(dir) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "fopen %s", path);
	fputs(content, f);
	fclose(f);
}

const char *scratch_path(const char *dir, const char *rel)
{
	static char buf[4][PATH_MAX];
	static int i;
	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, rel + (rel[0] == '/'));
	return buf[i];
}

static int remove_one(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
	return remove(p);
}

void scratch_remove(const char *dir)
{
	nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}
