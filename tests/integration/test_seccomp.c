/* Seccomp inside real sandboxes. The static probe binary is copied into the
 * sandbox through stdin and calls every blocked operation with harmless
 * arguments: an allowed call fails with EFAULT/EBADF/EINVAL, a blocked one
 * with the policy's errno. A test policy rewrites every deny rule of the
 * default policy to the distinctive errno 1337, so a pass proves the
 * filter itself fired. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static const char *const blocked[] = {
	"mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount",
	"fspick", "mount_setattr", "unshare", "setns", "clone_newuser", "clone_newns", "clone_newnet",
	"clone_newpid", "clone3", "keyctl", "add_key", "request_key", "bpf", "perf_event_open",
	"userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "kexec_load",
	"kexec_file_load", "init_module", "finit_module", "delete_module", "open_by_handle_at",
	"ioctl_tiocsti", "ioctl_tiocsti_hi", "ioctl_tioclinux", "socket_alg", "socket_vsock",
};
static const char *const allowed[] = { "getpid", "clone_plain", "socket_unix" };

TestSuite(seccomp, .init = sandbox_suite_init, .fini = sandbox_suite_fini, .timeout = 120);

static char *probe_bytes(size_t *len)
{
	const char *p = getenv("ABOX_PROBE");
	cr_assert(p && *p, "ABOX_PROBE not set");
	char *b = read_whole(p, len);
	cr_assert_not_null(b, "cannot read %s", p);
	return b;
}

/* slurp() stops at NUL bytes for strlen: re-read the binary properly */
static void *read_binary(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	void *b = malloc((size_t)n);
	cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return b;
}

static char *run_probe(const char *policy, const char *user)
{
	size_t len;
	(void)probe_bytes;
	void *bin = read_binary(getenv("ABOX_PROBE"), &len);
	struct run_result r;
	const char *script = "cat > /tmp/probe && chmod 755 /tmp/probe && exec /tmp/probe all";
	if (policy)
		run_abox(&r, bin, len, (const char *const[]){ "run", "-i", "--user", user, "--seccomp", policy, "--", "sh", "-c", script, NULL });
	else
		run_abox(&r, bin, len, (const char *const[]){ "run", "-i", "--user", user, "--", "sh", "-c", script, NULL });
	free(bin);
	cr_assert_eq(r.status, 0, "probe failed: %s", r.err);
	free(r.err);
	return r.out;
}

static int item_errno(const char *out, const char *name)
{
	char key[128];
	snprintf(key, sizeof(key), "\n%s errno=", name);
	char *buf = malloc(strlen(out) + 2);
	buf[0] = '\n';
	strcpy(buf + 1, out);
	const char *p = strstr(buf, key);
	cr_assert_not_null(p, "probe did not report %s:\n%s", name, out);
	int e = atoi(p + strlen(key));
	free(buf);
	return e;
}

static char *distinct_policy(void)
{
	char src[4096];
	snprintf(src, sizeof(src), "%s/policies/default.json", getenv("ABOX_SOURCE_DIR"));
	json_object *root = json_object_from_file(src);
	cr_assert_not_null(root, "cannot parse %s", src);
	json_object *calls;
	cr_assert(json_object_object_get_ex(root, "syscalls", &calls));
	int changed = 0;
	for (size_t i = 0; i < json_object_array_length(calls); i++) {
		json_object *rule = json_object_array_get_idx(calls, i), *action;
		if (json_object_object_get_ex(rule, "action", &action) &&
		    strcmp(json_object_get_string(action), "SCMP_ACT_ERRNO") == 0) {
			json_object_object_add(rule, "errnoRet", json_object_new_int(1337));
			changed++;
		}
	}
	cr_assert_gt(changed, 0);
	static char path[] = "/tmp/abox-policy-1337-XXXXXX.json";
	int fd = mkstemps(path, 5);
	cr_assert_geq(fd, 0);
	const char *txt = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY);
	cr_assert_eq(write(fd, txt, strlen(txt)), (ssize_t)strlen(txt));
	close(fd);
	json_object_put(root);
	return path;
}

Test(seccomp, every_deny_item_fires_with_distinct_errno)
{
	char *policy = distinct_policy();
	char *out = run_probe(policy, "root");
	unlink(policy);
	for (size_t i = 0; i < sizeof(blocked) / sizeof(blocked[0]); i++)
		cr_expect_eq(item_errno(out, blocked[i]), 1337, "%s was not stopped by the filter", blocked[i]);
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
		cr_expect_eq(item_errno(out, allowed[i]), 0, "%s must stay allowed", allowed[i]);
	free(out);
}

Test(seccomp, default_policy_eperm_and_enosys)
{
	char *out = run_probe(NULL, "root");
	for (size_t i = 0; i < sizeof(blocked) / sizeof(blocked[0]); i++) {
		int want = strcmp(blocked[i], "clone3") == 0 ? 38 : 1;
		cr_expect_eq(item_errno(out, blocked[i]), want, "%s", blocked[i]);
	}
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
		cr_expect_eq(item_errno(out, allowed[i]), 0, "%s must stay allowed", allowed[i]);
	/* syscalls the policy does not know: ENOSYS, so libc falls back */
	cr_expect_eq(item_errno(out, "unknown_mseal"), 38);
	cr_expect_eq(item_errno(out, "unknown_1000"), 38);
	/* an allowed ioctl reaches the kernel (EBADF on fd -1) */
	cr_expect_eq(item_errno(out, "ioctl_tcgets"), 9);
	free(out);
}

Test(seccomp, thirty_two_bit_abi_is_killed)
{
	/* int 0x80 enters the i386 table, which the default policy does not
	 * cover: the process dies with SIGSYS instead of reaching it. On a
	 * kernel without the i386 entry (IA32 emulation off) the instruction
	 * itself faults, outside any sandbox too: then SIGSEGV, the same as
	 * on the host, is the kernel's answer, and the call reached nothing. */
	static const char prog[] =
		"import ctypes, mmap\n"
		"code = bytes([0xb8, 20, 0, 0, 0, 0xcd, 0x80, 0xc3])  # mov eax, 20 (getpid); int 0x80; ret\n"
		"m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)\n"
		"m.write(code)\n"
		"addr = ctypes.addressof(ctypes.c_char.from_buffer(m))\n"
		"print('pid', ctypes.CFUNCTYPE(ctypes.c_int)(addr)())\n";
	struct run_result host;
	run_abox_argv(&host, (const char *const[]){ "/usr/bin/python3", "-c", prog, NULL });
	bool ia32 = host.status == 0 && strstr(host.out, "pid ");
	cr_assert(ia32 || host.status == 128 + 11, "on the host: status %d, out %s, err %s", host.status,
		  host.out, host.err);
	run_result_free(&host);
	struct run_result r;
	ABOX(&r, "run", "--", "python3", "-c", prog);
	int want = ia32 ? 128 + 31 /* SIGSYS */ : 128 + 11 /* SIGSEGV: no i386 entry at all */;
	cr_assert_eq(r.status, want, "status %d (the host %s the i386 entry), out %s, err %s", r.status,
		     ia32 ? "has" : "lacks", r.out, r.err);
	run_result_free(&r);
}

Test(seccomp, default_policy_as_user)
{
	char *out = run_probe(NULL, "user");
	cr_expect_eq(item_errno(out, "mount"), 1);
	cr_expect_eq(item_errno(out, "unshare"), 1);
	cr_expect_eq(item_errno(out, "ioctl_tiocsti"), 1);
	cr_expect_eq(item_errno(out, "getpid"), 0);
	free(out);
}
