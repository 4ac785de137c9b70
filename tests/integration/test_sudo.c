/* `sudo` inside a sandbox (as E2B's templates have it, passwordless):
 * the forms agents and install scripts use, its stdin, stdout, stderr and
 * exit status, signals passed on, users made inside, and --sudo off. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

TestSuite(sudo, .init = sandbox_suite_init, .fini = sandbox_suite_fini, .timeout = 120);

/* `abox exec ID -- sh -c SCRIPT` as the sandbox's user: its status and
 * stdout must be these. */
static void as_user(const char *id, const char *script, int status, const char *out)
{
	ABOX_EXPECT(status, out, NULL, "exec", id, "--", "sh", "-c", script);
}

Test(sudo, forms)
{
	char *id = CREATE("--layer", "tmpfs");
	as_user(id, "sudo id -u; sudo -u user id -un; sudo --user=user id -u", 0, "0\nuser\n1000\n");
	/* stdin in, stdout out, through sudo */
	as_user(id,
		"echo secret | sudo tee /root/f >/dev/null && sudo cat /root/f && cat /root/f 2>/dev/null", 1,
		"secret\n");
	/* the command's status, and sudo's own for what cannot start */
	as_user(id, "sudo sh -c 'exit 7'; echo $?; sudo sh -c 'kill -9 $$'; echo $?", 0, "7\n137\n");
	ABOX_EXPECT(1, "", "sudo: no-such-command: command not found", "exec", id, "--", "sudo",
		    "no-such-command");
	ABOX_EXPECT(1, "", "unknown user", "exec", id, "--", "sudo", "-u", "nobody-here", "true");
	/* the environment: reset (as sudo's env_reset) unless -E keeps it;
	 * SUDO_UID and SUDO_USER say who asked */
	as_user(id,
		"export FOO=bar; sudo sh -c 'echo ${FOO:-unset} $HOME $USER $SUDO_UID $SUDO_USER'; "
		"sudo -E sh -c 'echo ${FOO:-unset}'; sudo --preserve-env=FOO sh -c 'echo ${FOO:-unset}'",
		0, "unset /root root 1000 user\nbar\nbar\n");
	/* where it runs: the caller's folder; -i: a login shell in the
	 * target's home; -s: a shell */
	as_user(id, "cd /tmp && sudo pwd; sudo -i pwd; sudo -i sh -c 'echo $HOME'; sudo -s -- echo 'a b'", 0,
		"/tmp\n/root\n/root\na b\n");
	/* what sudo users type that has nothing to do here */
	as_user(id, "sudo -k; sudo -v; sudo -n true && sudo -l | tail -1", 0,
		"    (ALL : ALL) NOPASSWD: ALL\n");
	ABOX_EXPECT(1, "", "unknown option '-Z'", "exec", id, "--", "sudo", "-Z", "true");
	/* root's files made through sudo are root's */
	as_user(id, "sudo mkdir /opt/made && stat -c '%u %U' /opt/made", 0, "0 root\n");
	kill_and_free(id);
}

Test(sudo, users_made_inside)
{
	char *id = CREATE("--layer", "tmpfs");
	as_user(id,
		"sudo useradd -m -u 1500 dev && sudo -u dev sh -c 'id -u; echo $HOME; touch ~/x' && "
		"sudo -u dev -i pwd",
		0, "1500\n/home/dev\n/home/dev\n");
	kill_and_free(id);
}

Test(sudo, signals_reach_the_command)
{
	char *id = CREATE("--layer", "tmpfs");
	/* TERM to sudo ends the command (its whole group), and sudo exits
	 * with its status */
	as_user(id,
		"sudo sh -c 'echo $$ > /tmp/pid; exec sleep 60' & s=$!; "
		"while [ ! -s /tmp/pid ]; do sleep 0.05; done; kill -TERM $s; wait $s; echo $?; "
		"kill -0 $(cat /tmp/pid) 2>/dev/null && echo alive || echo gone",
		0, "143\ngone\n");
	/* INT too (Ctrl-C in a terminal reaches sudo, which passes it on) */
	as_user(id,
		"sudo sh -c 'trap \"echo got INT; exit 3\" INT; echo ready; while :; do sleep 0.05; done' > "
		"/tmp/o & "
		"s=$!; while ! grep -q ready /tmp/o 2>/dev/null; do sleep 0.05; done; kill -INT $s; wait $s; "
		"echo $?; "
		"cat /tmp/o",
		0, "3\nready\ngot INT\n");
	kill_and_free(id);
}

Test(sudo, off)
{
	char *id = CREATE("--layer", "tmpfs", "--sudo", "off");
	/* no abox sudo; a host's own setuid sudo (if the host has one) grants
	 * nothing under no_new_privs */
	as_user(id, "sudo id -u 2>/dev/null || echo refused", 0, "refused\n");
	char *o = root_sh(id, "id -u");
	cr_assert_str_eq(o, "0\n", "root through the API still works");
	free(o);
	kill_and_free(id);
	ABOX_EXPECT(NONZERO, NULL, "expected on or off", "run", "--sudo", "maybe", "--", "true");
}

Test(sudo, in_abox_run_and_without_user_namespace)
{
	ABOX_EXPECT(0, "0\n", NULL, "run", "--", "sudo", "id", "-u");
	ABOX_EXPECT(0, "0\n", NULL, "run", "--userns", "off", "--", "sudo", "id", "-u");
}
