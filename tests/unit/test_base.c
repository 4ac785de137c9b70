/* Unit tests of base/: error helpers, the safe formatter, sizes, ids. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <string.h>

#include "base/base.h"

Test(base, error_set_appends_strerror_and_returns_negative)
{
	abox_error e = ABOX_ERROR_INIT;
	int r = abox_error_set(&e, EINVAL, "mount %s", "overlay");
	cr_assert_eq(r, -EINVAL);
	cr_assert_eq(e.code, EINVAL);
	cr_assert_str_eq(e.msg, "mount overlay: Invalid argument");
}

Test(base, error_zero_becomes_eio)
{
	abox_error e = ABOX_ERROR_INIT;
	cr_assert_eq(abox_error_setx(&e, 0, "x"), -EIO);
	cr_assert_eq(e.code, EIO);
}

Test(base, error_negative_code_is_normalised)
{
	abox_error e = ABOX_ERROR_INIT;
	cr_assert_eq(abox_error_set(&e, -ENOENT, "open"), -ENOENT);
	cr_assert_str_eq(e.msg, "open: No such file or directory");
}

Test(base, error_prefix_adds_context)
{
	abox_error e = ABOX_ERROR_INIT;
	abox_error_set(&e, EINVAL, "mount overlay");
	cr_assert_eq(abox_error_prefix(&e, "create"), -EINVAL);
	cr_assert_str_eq(e.msg, "create: mount overlay: Invalid argument");
}

Test(base, error_null_is_allowed)
{
	cr_assert_eq(abox_error_set(NULL, EPERM, "x"), -EPERM);
	cr_assert_eq(abox_error_prefix(NULL, "x"), -EIO);
}

Test(base, safe_format_numbers_and_strings)
{
	char b[128];
	safe_snprintf(b, sizeof(b), "%d %u %ld %lu %llu %x %zu %c %% %s", -42, 7u, -9L, 10UL, 123ULL, 255u,
		      (size_t)5, 'z', "ok");
	cr_assert_str_eq(b, "-42 7 -9 10 123 ff 5 z % ok");
	safe_snprintf(b, sizeof(b), "%.*s|", 3, "abcdef");
	cr_assert_str_eq(b, "abc|");
}

Test(base, safe_format_width_and_zeros)
{
	/* a cache folder was once named "extras-N-N.%?9ld": the nanoseconds'
	 * "%09ld" was not understood */
	char b[128];
	safe_snprintf(b, sizeof(b), "%09ld|%3d|%05d|%2u|%04x|%1d", 1234L, 7, -42, 123u, 255u, 99);
	cr_assert_str_eq(b, "000001234|  7|-0042|123|00ff|99");
}

Test(base, safe_format_truncates)
{
	char b[6];
	size_t n = safe_snprintf(b, sizeof(b), "%s", "abcdefgh");
	cr_assert_str_eq(b, "abcde");
	cr_assert_eq(n, 5);
}

Test(base, parse_size_units)
{
	uint64_t v;
	cr_assert_eq(parse_size("512M", &v), 0);
	cr_assert_eq(v, 512ULL << 20);
	cr_assert_eq(parse_size("1G", &v), 0);
	cr_assert_eq(v, 1ULL << 30);
	cr_assert_eq(parse_size("64k", &v), 0);
	cr_assert_eq(v, 64ULL << 10);
	cr_assert_eq(parse_size("2GiB", &v), 0);
	cr_assert_eq(v, 2ULL << 30);
	cr_assert_eq(parse_size("1000", &v), 0);
	cr_assert_eq(v, 1000);
}

Test(base, parse_size_rejects_garbage)
{
	uint64_t v = 77;
	cr_assert_eq(parse_size("", &v), -EINVAL);
	cr_assert_eq(parse_size("-1", &v), -EINVAL);
	cr_assert_eq(parse_size("12X", &v), -EINVAL);
	cr_assert_eq(parse_size("M", &v), -EINVAL);
	cr_assert_eq(parse_size("99999999999999999999", &v), -ERANGE);
	cr_assert_eq(parse_size("99999999999T", &v), -ERANGE);
	cr_assert_eq(v, 77, "output untouched on failure");
}

Test(base, format_size_round_trip)
{
	char b[32];
	format_size(512ULL << 20, b, sizeof(b));
	cr_assert_str_eq(b, "512M");
	format_size(1ULL << 30, b, sizeof(b));
	cr_assert_str_eq(b, "1G");
	format_size(1000, b, sizeof(b));
	cr_assert_str_eq(b, "1000");
}

Test(base, random_id_alphabet_and_uniqueness)
{
	char a[ABOX_ID_LEN + 1], b[ABOX_ID_LEN + 1];
	cr_assert_eq(random_id(a, 20), 0);
	cr_assert_eq(random_id(b, 20), 0);
	cr_assert_eq(strlen(a), 20);
	for (int i = 0; i < 20; i++)
		cr_assert((a[i] >= 'a' && a[i] <= 'z') || (a[i] >= '0' && a[i] <= '9'));
	cr_assert_str_neq(a, b);
}

Test(base, read_file_limit)
{
	char path[] = "/tmp/abox-test-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write_full(fd, "hello world", 11), 0);
	close(fd);
	char *s = NULL;
	size_t n;
	cr_assert_eq(read_file_at(AT_FDCWD, path, 64, &s, &n), 0);
	cr_assert_str_eq(s, "hello world");
	cr_assert_eq(n, 11);
	free(s);
	s = NULL;
	cr_assert_eq(read_file_at(AT_FDCWD, path, 5, &s, &n), -EFBIG);
	cr_assert_null(s);
	unlink(path);
	cr_assert_eq(read_file_at(AT_FDCWD, path, 5, &s, &n), -ENOENT);
}

/* the same words on every C library: glibc's, which musl does not share
 * for all codes ("Resource busy", "Filename too long", ...) */
Test(base, abox_strerror_is_the_same_on_every_libc)
{
	static const struct {
		int code;
		const char *words;
	} cases[] = {
		{ ENOENT, "No such file or directory" }, { EBUSY, "Device or resource busy" },
		{ ENAMETOOLONG, "File name too long" },  { ELOOP, "Too many levels of symbolic links" },
		{ ENOMEM, "Cannot allocate memory" },    { -EXDEV, "Invalid cross-device link" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_assert_str_eq(abox_strerror(cases[i].code), cases[i].words, "errno %d", cases[i].code);
	cr_assert_not_null(abox_strerror(4095));
}
