/* The public header must stand alone and compile as strict ISO C (this file
 * is built with -std=c99 -pedantic -Werror): callers are not all gnu17. */
#include <abox/abox.h>
#include <abox/abox.h> /* include guards */

#include <criterion/criterion.h>

Test(header, option_structs_start_with_their_version)
{
	abox_ctx_opts c = ABOX_CTX_OPTS_INIT;
	abox_sandbox_opts s = ABOX_SANDBOX_OPTS_INIT;
	abox_proc_opts p = ABOX_PROC_OPTS_INIT;
	abox_error e = ABOX_ERROR_INIT;
	cr_assert_eq(c.version, ABOX_CTX_OPTS_VERSION);
	cr_assert_eq(s.version, ABOX_SANDBOX_OPTS_VERSION);
	cr_assert_eq(p.version, ABOX_PROC_OPTS_VERSION);
	cr_assert_eq(e.code, 0);
	cr_assert_eq(*(const uint32_t *)&s, ABOX_SANDBOX_OPTS_VERSION, "version is the first field");
}

Test(header, error_clear_accepts_null)
{
	abox_error e = { 5, "x" };
	abox_error_clear(&e);
	abox_error_clear(NULL);
	cr_assert_eq(e.code, 0);
	cr_assert_eq(e.msg[0], '\0');
}
