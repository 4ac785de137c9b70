/* base/error.c — abox_error helpers and an async-signal-safe formatter.
 *
 * The formatter exists because error messages are also produced in the
 * sandbox child between clone and exec, where snprintf (locale, malloc) is
 * not safe. It runs in every process: CLI, daemon, sandbox child, init. */
#include <string.h>

#include "base.h"

void abox_error_clear(abox_error *err)
{
	if (!err)
		return;
	err->code = 0;
	err->msg[0] = '\0';
}

const char *abox_strerror(int code)
{
	const char *s = errno_name(code < 0 ? -code : code);
	/* codes outside the table are rare enough for the C library's own
	 * words */
	return s ? s : strerror(code < 0 ? -code : code);
}

static size_t put_str(char *buf, size_t size, size_t pos, const char *s, size_t max)
{
	if (!s)
		s = "(null)";
	for (size_t i = 0; s[i] && i < max; i++) {
		if (pos + 1 < size)
			buf[pos] = s[i];
		pos++;
	}
	return pos;
}

/* width: at least that many characters, padded with zeros after the sign
 * when zero (a file name's "%09ld" nanoseconds), else with spaces before */
static size_t put_num(char *buf, size_t size, size_t pos, unsigned long long v, bool neg, unsigned base,
		      size_t width, bool zero)
{
	char tmp[24];
	size_t n = 0;

	do {
		unsigned d = (unsigned)(v % base);
		tmp[n++] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
		v /= base;
	} while (v && n < sizeof(tmp));
	for (size_t w = n + neg; !zero && w < width; w++) {
		if (pos + 1 < size)
			buf[pos] = ' ';
		pos++;
	}
	if (neg) {
		if (pos + 1 < size)
			buf[pos] = '-';
		pos++;
	}
	for (size_t w = n + neg; zero && w < width; w++) {
		if (pos + 1 < size)
			buf[pos] = '0';
		pos++;
	}
	while (n) {
		if (pos + 1 < size)
			buf[pos] = tmp[n - 1];
		pos++;
		n--;
	}
	return pos;
}

size_t safe_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	size_t pos = 0;

	if (size == 0)
		return 0;
	for (const char *p = fmt; *p; p++) {
		if (*p != '%') {
			if (pos + 1 < size)
				buf[pos] = *p;
			pos++;
			continue;
		}
		p++;
		int lng = 0;
		size_t prec = (size_t)-1, width = 0;
		bool is_size = false, zero = *p == '0';
		while (*p >= '0' && *p <= '9' && width < 64)
			width = width * 10 + (size_t)(*p++ - '0');
		if (p[0] == '.' && p[1] == '*' && p[2] == 's') {
			prec = (size_t)va_arg(ap, int);
			p += 2;
		}
		while (*p == 'l') {
			lng++;
			p++;
		}
		if (*p == 'z') {
			is_size = true;
			p++;
		}
		switch (*p) {
		case 's':
			pos = put_str(buf, size, pos, va_arg(ap, const char *), prec);
			break;
		case 'c': {
			char c = (char)va_arg(ap, int);
			if (pos + 1 < size)
				buf[pos] = c;
			pos++;
			break;
		}
		case 'd':
		case 'i': {
			long long v = lng >= 2 ? va_arg(ap, long long) : lng == 1 ? va_arg(ap, long) : is_size ? va_arg(ap, ssize_t) : va_arg(ap, int);
			pos = put_num(buf, size, pos,
				      v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v, v < 0, 10,
				      width, zero);
			break;
		}
		case 'u':
		case 'x': {
			unsigned long long v = lng >= 2 ? va_arg(ap, unsigned long long)
					       : lng == 1 ? va_arg(ap, unsigned long)
					       : is_size  ? va_arg(ap, size_t)
							  : va_arg(ap, unsigned);
			pos = put_num(buf, size, pos, v, false, *p == 'x' ? 16 : 10, width, zero);
			break;
		}
		case '%':
			if (pos + 1 < size)
				buf[pos] = '%';
			pos++;
			break;
		case '\0':
			p--;
			break;
		default:
			pos = put_str(buf, size, pos, "%?", 2);
			break;
		}
	}
	buf[pos < size ? pos : size - 1] = '\0';
	return pos < size ? pos : size - 1;
}

size_t safe_snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	size_t n = safe_vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

const char *errno_name(int code)
{
	/* A fixed table rather than strerror(): strerror may touch locale data
	 * and is not async-signal-safe. Unknown codes fall back to "error N" in
	 * the caller. */
	switch (code) {
	case EPERM: return "Operation not permitted";
	case ENOENT: return "No such file or directory";
	case ESRCH: return "No such process";
	case EINTR: return "Interrupted system call";
	case EIO: return "Input/output error";
	case ENXIO: return "No such device or address";
	case E2BIG: return "Argument list too long";
	case ENOEXEC: return "Exec format error";
	case EBADF: return "Bad file descriptor";
	case ECHILD: return "No child processes";
	case EAGAIN: return "Resource temporarily unavailable";
	case ENOMEM: return "Cannot allocate memory";
	case EACCES: return "Permission denied";
	case EFAULT: return "Bad address";
	case EBUSY: return "Device or resource busy";
	case EEXIST: return "File exists";
	case EXDEV: return "Invalid cross-device link";
	case ENODEV: return "No such device";
	case ENOTDIR: return "Not a directory";
	case EISDIR: return "Is a directory";
	case EINVAL: return "Invalid argument";
	case ENFILE: return "Too many open files in system";
	case EMFILE: return "Too many open files";
	case ENOTTY: return "Inappropriate ioctl for device";
	case ETXTBSY: return "Text file busy";
	case EFBIG: return "File too large";
	case ENOSPC: return "No space left on device";
	case ESPIPE: return "Illegal seek";
	case EROFS: return "Read-only file system";
	case EMLINK: return "Too many links";
	case EPIPE: return "Broken pipe";
	case ERANGE: return "Numerical result out of range";
	case ENAMETOOLONG: return "File name too long";
	case ENOSYS: return "Function not implemented";
	case ENOTEMPTY: return "Directory not empty";
	case ELOOP: return "Too many levels of symbolic links";
	case ENODATA: return "No data available";
	case ETIME: return "Timer expired";
	case EPROTO: return "Protocol error";
	case EBADMSG: return "Bad message";
	case EOVERFLOW: return "Value too large for defined data type";
	case EMSGSIZE: return "Message too long";
	case EPROTONOSUPPORT: return "Protocol not supported";
	case EOPNOTSUPP: return "Operation not supported";
	case EAFNOSUPPORT: return "Address family not supported by protocol";
	case EADDRINUSE: return "Address already in use";
	case ECONNRESET: return "Connection reset by peer";
	case ECONNREFUSED: return "Connection refused";
	case ENOTCONN: return "Transport endpoint is not connected";
	case ETIMEDOUT: return "Connection timed out";
	case ESTALE: return "Stale file handle";
	case EDQUOT: return "Disk quota exceeded";
	case ECANCELED: return "Operation canceled";
	case EOWNERDEAD: return "Owner died";
	default: return NULL;
	}
}

int abox_error_vset(abox_error *err, int code, bool with_errno, const char *fmt, va_list ap)
{
	if (code < 0)
		code = -code;
	if (code == 0)
		code = EIO;
	if (err) {
		size_t n = safe_vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		if (with_errno) {
			const char *name = errno_name(code);
			if (name)
				safe_snprintf(err->msg + n, sizeof(err->msg) - n, ": %s", name);
			else
				safe_snprintf(err->msg + n, sizeof(err->msg) - n, ": error %d", code);
		}
		err->code = code;
	}
	return -code;
}

int abox_error_set(abox_error *err, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = abox_error_vset(err, code, true, fmt, ap);
	va_end(ap);
	return r;
}

int abox_error_setx(abox_error *err, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = abox_error_vset(err, code, false, fmt, ap);
	va_end(ap);
	return r;
}

int abox_error_prefix(abox_error *err, const char *fmt, ...)
{
	if (!err || err->code == 0)
		return -EIO;
	char old[ABOX_ERROR_MSG_MAX];
	memcpy(old, err->msg, sizeof(old));
	va_list ap;
	va_start(ap, fmt);
	size_t n = safe_vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	safe_snprintf(err->msg + n, sizeof(err->msg) - n, ": %s", old);
	return -err->code;
}
