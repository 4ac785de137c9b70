/* local/oci_sysctl.c — an OCI config's linux.sysctl: only the settings
 * that belong to the container's own namespaces (its network, ipc and uts
 * ones, as runc allows), written from a child that has joined them. The
 * kernel picks the namespace of /proc/sys/net, /proc/sys/kernel/shm*,
 * ... by the writer's namespaces, so the host's /proc serves; a setting
 * of the host's kernel (vm.*, kernel.pid_max, ...) is refused by name,
 * since it would change every sandbox and the host.
 * Runs in the CLI/daemon; the child only makes system calls. */
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "local/create_oci.h"

/* the ipc namespace's settings, by name (runc's list); fs.mqueue.* and
 * net.* are checked by prefix */
static const char *const ipc_keys[] = { "kernel.msgmax",          "kernel.msgmnb",
					"kernel.msgmni",          "kernel.sem",
					"kernel.shmall",          "kernel.shmmax",
					"kernel.shm_rmid_forced", "kernel.shmmni" };

/* "net.ipv4.ip_forward" → "net/ipv4/ip_forward"; a key with '/' in it is
 * taken as a path already (an interface name may hold dots) */
static int key_path(const char *key, size_t klen, char *out, size_t n)
{
	bool slashes = memchr(key, '/', klen) != NULL;
	if (klen + 10 >= n)
		return -1;
	memcpy(out, "/proc/sys/", 10);
	for (size_t i = 0; i < klen; i++)
		out[10 + i] = (!slashes && key[i] == '.') ? '/' : key[i];
	out[10 + klen] = '\0';
	return 0;
}

static bool namespaced(const char *key, size_t klen)
{
	char k[256];
	if (klen >= sizeof(k))
		return false;
	memcpy(k, key, klen);
	k[klen] = '\0';
	for (size_t i = 0; k[i]; i++)
		if (k[i] == '/')
			k[i] = '.';
	for (size_t i = 0; i < sizeof(ipc_keys) / sizeof(ipc_keys[0]); i++)
		if (!strcmp(k, ipc_keys[i]))
			return true;
	return !strncmp(k, "net.", 4) || !strncmp(k, "fs.mqueue.", 10) || !strcmp(k, "kernel.hostname") ||
	       !strcmp(k, "kernel.domainname");
}

int oci_sysctl_check(char *const *kv, abox_error *err)
{
	for (size_t i = 0; kv && kv[i]; i++) {
		const char *eq = strchr(kv[i], '=');
		size_t klen = eq ? (size_t)(eq - kv[i]) : 0;
		/* a path that stays in /proc/sys: no "..", no empty part */
		bool clean = klen > 0 && kv[i][0] != '.' && kv[i][0] != '/' && kv[i][klen - 1] != '/' &&
			     kv[i][klen - 1] != '.';
		for (size_t j = 0; clean && j < klen; j++) {
			char ch = kv[i][j];
			clean = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
				(ch >= '0' && ch <= '9') || ch == '_' || ch == '-' ||
				((ch == '.' || ch == '/') && kv[i][j + 1] != '.' && kv[i][j + 1] != '/');
		}
		if (!clean)
			return abox_error_setx(err, EINVAL, "linux.sysctl: '%.*s' is not a sysctl name",
					       (int)(klen ? klen : strlen(kv[i])), kv[i]);
		if (!namespaced(kv[i], klen))
			return abox_error_setx(
				err, EPERM,
				"linux.sysctl: '%.*s' is not the container's own (only network, ipc "
				"and uts namespace settings are; this one is the host kernel's)",
				(int)klen, kv[i]);
		if (strchr(eq + 1, '\n'))
			return abox_error_setx(err, EINVAL,
					       "linux.sysctl: '%.*s': a value of one line is needed",
					       (int)klen, kv[i]);
	}
	return 0;
}

int oci_sysctl_apply(int pidfd, char *const *kv, abox_error *err)
{
	size_t n = 0;
	while (kv && kv[n])
		n++;
	if (!n)
		return 0;
	char(*paths)[512] = calloc(n, sizeof(*paths));
	int pipefd[2];
	if (!paths || pipe2(pipefd, O_CLOEXEC) < 0) {
		free(paths);
		return abox_error_set(err, errno, "linux.sysctl");
	}
	for (size_t i = 0; i < n; i++)
		(void)key_path(kv[i], (size_t)(strchr(kv[i], '=') - kv[i]), paths[i], sizeof(paths[i]));
	pid_t pid = fork();
	if (pid == 0) {
		/* the container's network, ipc and uts namespaces at once,
		 * through its init's pidfd (no pid that could be reused) */
		struct {
			int32_t index, err;
		} fail = { -1, 0 };
		if (setns(pidfd, CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS) < 0)
			fail.err = errno;
		for (size_t i = 0; !fail.err && i < n; i++) {
			const char *val = strchr(kv[i], '=') + 1;
			int fd = open(paths[i], O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
			ssize_t w = fd < 0 ? -1 : write(fd, val, strlen(val));
			if (fd < 0 || w < 0) {
				fail.index = (int32_t)i;
				fail.err = errno;
			}
			if (fd >= 0)
				close(fd);
		}
		if (fail.err)
			(void)!write(pipefd[1], &fail, sizeof(fail));
		_exit(fail.err ? 1 : 0);
	}
	close(pipefd[1]);
	int r = 0;
	if (pid < 0)
		r = abox_error_set(err, errno, "linux.sysctl: fork");
	struct {
		int32_t index, err;
	} fail = { -1, 0 };
	if (pid > 0 && read(pipefd[0], &fail, sizeof(fail)) == (ssize_t)sizeof(fail) && fail.err) {
		if (fail.index < 0 || (size_t)fail.index >= n)
			r = abox_error_set(err, fail.err, "linux.sysctl: join the container's namespaces");
		else
			r = abox_error_set(err, fail.err, "linux.sysctl: %s", kv[fail.index]);
	}
	close(pipefd[0]);
	int st;
	while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	free(paths);
	return r;
}
