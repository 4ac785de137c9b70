/* e2b/errors.c — Connect's error codes as abox's two sides read them:
 * aboxd names an errno by a code and the HTTP status Connect gives it,
 * and the remote backend turns a code back into an errno. The two maps
 * are not inverses (several errnos share a code, and the client sees
 * only the code), which is why both live here, side by side. What an
 * error's message says is each side's own. Runs in aboxd and in the
 * library (remote backend). */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <abox/error.h>

#include "e2b/e2b.h"

const char *e2b_code_of_errno(int e, unsigned *status)
{
	switch (e) {
	case ABOX_ENOUSER:
		*status = 401;
		return "unauthenticated";
	case ENOENT:
	case ESRCH:
		*status = 404;
		return "not_found";
	case EEXIST:
		*status = 409;
		return "already_exists";
	case EACCES:
	case EPERM:
	case EROFS:
		*status = 403;
		return "permission_denied";
	case EINVAL:
	case ENOTDIR:
	case EISDIR:
	case ENAMETOOLONG:
	case EXDEV:
	case E2BIG:
	case ELOOP:
		*status = 400;
		return "invalid_argument";
	case ENOTEMPTY:
		*status = 409;
		return "already_exists";
	case ENOSPC:
	case EDQUOT:
	case EMFILE: /* a count limit (watchers) */
		*status = 429;
		return "resource_exhausted";
	case EAGAIN:
		*status = 412;
		return "failed_precondition";
	case EOPNOTSUPP:
		*status = 501;
		return "unimplemented";
	default:
		*status = 500;
		return "internal";
	}
}

int e2b_errno_of_code(const char *code)
{
	static const struct {
		const char *code;
		int e;
	} codes[] = {
		{ "not_found", ENOENT },	 { "already_exists", EEXIST },	     { "permission_denied", EACCES },
		{ "unauthenticated", EACCES },	 { "invalid_argument", EINVAL },     { "resource_exhausted", ENOSPC },
		{ "failed_precondition", EAGAIN }, { "unimplemented", EOPNOTSUPP }, { E2B_DEADLINE_EXCEEDED, ETIMEDOUT },
		{ "unavailable", EAGAIN },
	};
	for (size_t i = 0; code && i < sizeof(codes) / sizeof(codes[0]); i++)
		if (!strcmp(code, codes[i].code))
			return codes[i].e;
	return 0;
}
