/* build/build_ignore.c — .dockerignore: which files of the build context
 * COPY and ADD leave out (docker's patterns: a match names a file or a
 * whole folder, ** any number of folders, ! an exception, the last
 * matching line wins). */
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build/build.h"

/* ---- .dockerignore */

void build_ignore_load(int ctx, struct build_ignore *ig)
{
	ig->pat = NULL;
	char *text = NULL;
	long fd = build_beneath(ctx, ".dockerignore", O_RDONLY);
	size_t len = 0;
	if (fd < 0)
		return;
	size_t cap = 4096;
	text = malloc(cap + 1);
	int r = text ? read_all_fd((int)fd, 1u << 20, &text, &cap, &len) : -ENOMEM;
	close((int)fd);
	if (r < 0) {
		free(text);
		return;
	}
	size_t n = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		size_t l = strlen(line);
		while (l && (line[l - 1] == '\r' || line[l - 1] == ' ' || line[l - 1] == '/'))
			line[--l] = '\0';
		while (*line == ' ')
			line++;
		if (!*line || *line == '#')
			continue;
		bool neg = *line == '!';
		char *p = line + neg;
		while (*p == '/')
			p++;
		if (strncmp(p, "./", 2) == 0)
			p += 2;
		char **nv = realloc(ig->pat, (n + 2) * sizeof(char *));
		if (!nv)
			break;
		ig->pat = nv;
		if (asprintf(&ig->pat[n], "%s%s", neg ? "!" : "", p) < 0)
			break;
		ig->pat[++n] = NULL;
	}
	free(text);
}

/* "**" matches any number of folders; otherwise fnmatch per component */
static bool pattern_match(const char *pat, const char *path)
{
	if (strncmp(pat, "**/", 3) == 0) {
		for (const char *p = path; p; p = strchr(p, '/'), p = p ? p + 1 : NULL)
			if (pattern_match(pat + 3, p))
				return true;
		return false;
	}
	if (strcmp(pat, "**") == 0)
		return true;
	return fnmatch(pat, path, FNM_PATHNAME | FNM_PERIOD) == 0;
}

/* Is path (or a folder it is in) excluded? The last matching line wins. */
bool build_ignored(const struct build_ignore *ig, const char *path)
{
	bool out = false;
	for (size_t i = 0; ig->pat && ig->pat[i]; i++) {
		bool neg = ig->pat[i][0] == '!';
		const char *pat = ig->pat[i] + neg;
		/* a pattern naming a folder excludes what is in it */
		char prefix[4096];
		bool hit = pattern_match(pat, path);
		for (const char *s = strchr(path, '/'); !hit && s; s = strchr(s + 1, '/')) {
			safe_snprintf(prefix, sizeof(prefix), "%.*s", (int)(s - path), path);
			hit = pattern_match(pat, prefix);
		}
		if (hit)
			out = !neg;
	}
	return out;
}
