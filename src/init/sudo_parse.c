/* sudo_parse.c — see sudo_parse.h. */
#include <errno.h>
#include <string.h>

#include "base/sudo_wire.h"
#include "sudo_parse.h"

int sudo_parse(char *buf, size_t len, struct sudo_req *req)
{
	static const char magic[] = SUDO_MAGIC;
	size_t na = 0, ne = 0;
	req->user = req->cwd = NULL;
	req->login = false;
	req->args[0] = req->env[0] = NULL;
	if (len < sizeof(magic) || memcmp(buf, magic, sizeof(magic)) != 0 || buf[len - 1] != '\0')
		return -EINVAL;
	for (size_t off = sizeof(magic); off < len;) {
		char *f = buf + off;
		size_t fl = strlen(f); /* ends within buf: its last byte is NUL */
		off += fl + 1;
		if (fl < 2 || f[1] != '=')
			return -EINVAL;
		char *v = f + 2;
		switch (f[0]) {
		case 'u':
			req->user = v;
			break;
		case 'c':
			req->cwd = v;
			break;
		case 'f':
			req->login = strchr(v, 'i') != NULL;
			break;
		case 'a':
			if (na == SUDO_ARGS_MAX)
				return -E2BIG;
			req->args[na++] = v;
			break;
		case 'e':
			if (ne == SUDO_ENV_MAX)
				return -E2BIG;
			if (strchr(v, '=') && v[0] != '=')
				req->env[ne++] = v;
			break;
		default:
			return -EINVAL;
		}
	}
	req->args[na] = NULL;
	req->env[ne] = NULL;
	if (!na || !req->user || !req->user[0] || !req->args[0][0])
		return -EINVAL;
	return 0;
}
