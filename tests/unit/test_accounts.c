/* Unit tests of base/accounts: a sandbox's passwd and group text, read
 * as getpwnam/getgrouplist would, with hostile lines skipped. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "base/accounts.h"

static const char passwd[] = "root:x:0:0:root:/root:/bin/bash\n"
			     "user:x:1000:1000::/home/user:/bin/bash\n"
			     "broken:x:12a:5::/home/broken:/bin/sh\n"
			     "agent:x:1001:1002:Agent,,,:/home/agent:/bin/bash\n"
			     "agent:x:1:1::/second:/bin/sh\n"
			     "big:x:4294967295:0::/:/bin/sh\n"
			     "nohome:x:1003:1003::relative:/bin/sh\n"
			     "short:x:1004\n"
			     "last:x:1005:1005::/home/last:/bin/sh"; /* no final newline */

static const char group[] = "root:x:0:\n"
			    "sudo:x:27:user,agent\n"
			    "agent:x:1002:\n"
			    "docker:x:999:agentx,agent\n"
			    "dup:x:27:agent\n"
			    "huge:x:70000:agent\n"
			    "users:x:100:other\n";

Test(accounts, finds_a_user_made_inside)
{
	struct acct_user u;
	cr_assert_eq(acct_find_user(passwd, strlen(passwd), "agent", &u), 0);
	cr_assert_eq(u.uid, 1001);
	cr_assert_eq(u.gid, 1002);
	cr_assert_str_eq(u.home, "/home/agent");
	cr_assert_str_eq(u.name, "agent");
	/* the last line counts without its newline */
	cr_assert_eq(acct_find_user(passwd, strlen(passwd), "last", &u), 0);
	cr_assert_eq(u.uid, 1005);
}

Test(accounts, refuses_what_would_be_misread)
{
	struct acct_user u;
	cr_assert_eq(acct_find_user(passwd, strlen(passwd), "nobody", &u), -ENOENT);
	cr_assert_eq(acct_find_user(passwd, strlen(passwd), "broken", &u), -ENOENT);
	cr_assert_eq(acct_find_user(passwd, strlen(passwd), "short", &u), -ENOENT);
	/* (uid_t)-1 would mean "keep root" to setresuid */
	cr_assert_eq(acct_find_user(passwd, strlen(passwd), "big", &u), -ERANGE);
	/* a name with ':' could match across fields */
	cr_assert_eq(acct_find_user(passwd, strlen(passwd), "agent:x", &u), -ENOENT);
	cr_assert_eq(acct_find_user(passwd, strlen(passwd), "nohome", &u), 0);
	cr_assert_str_eq(u.home, "/");
}

Test(accounts, groups_of_a_member)
{
	uint32_t g[8];
	size_t n = acct_groups(group, strlen(group), "agent", 1002, g, 8);
	cr_assert_eq(n, 3, "got %zu", n); /* 1002, sudo 27, docker 999; dup 27 once, 70000 refused */
	cr_assert_eq(g[0], 1002);
	cr_assert_eq(g[1], 27);
	cr_assert_eq(g[2], 999);
	cr_assert_eq(acct_groups(group, strlen(group), "agent", 1002, g, 2), 2);
	cr_assert_eq(acct_groups(group, strlen(group), "", 5, g, 8), 1);
}

Test(accounts, names_of_ids)
{
	char name[ACCT_NAME_MAX + 1];
	cr_assert_eq(acct_name_of(passwd, strlen(passwd), 1001, name, sizeof(name)), 0);
	cr_assert_str_eq(name, "agent");
	cr_assert_eq(acct_name_of(group, strlen(group), 27, name, sizeof(name)), 0);
	cr_assert_str_eq(name, "sudo");
	cr_assert_eq(acct_name_of(group, strlen(group), 4242, name, sizeof(name)), -ENOENT);
}

Test(accounts, name_rules)
{
	cr_assert(acct_name_ok("agent"));
	cr_assert(acct_name_ok("build$"));
	cr_assert(acct_name_ok("a.b-c_d"));
	cr_assert_not(acct_name_ok(""));
	cr_assert_not(acct_name_ok("-rf"));
	cr_assert_not(acct_name_ok("a:b"));
	cr_assert_not(acct_name_ok("a b"));
	cr_assert_not(acct_name_ok("a$b"));
	cr_assert_not(acct_name_ok("a/b"));
	cr_assert_not(acct_name_ok("abcdefghijabcdefghijabcdefghijabc")); /* 33 */
}
