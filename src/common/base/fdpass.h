/* base/fdpass — file descriptors over a unix socket (SCM_RIGHTS), the one
 * copy every process of abox uses: the library and the CLI (the spawn
 * handshake, checkpoint re-arm and restore, the spare disks' helper, the
 * init protocol), abox-init and aboxd.
 *
 * Received fds are always close-on-exec (a command started right after
 * must not inherit them), and fds beyond what the caller has room for are
 * closed, never leaked into the receiver (a peer could otherwise fill its
 * fd table). Async-signal-safe: used between clone and exec. */
#ifndef ABOX_BASE_FDPASS_H
#define ABOX_BASE_FDPASS_H

#include <stddef.h>
#include <sys/types.h>

/* the most fds one message carries (the spawn handshake's cgroups + 4,
 * the init protocol's PROTO_MAX_FDS) */
#define FDPASS_MAX 32

/* Sends len bytes (len ≥ 1: fds travel with data) and the n fds (n ≤
 * FDPASS_MAX, none when 0), retrying on EINTR. flags are added to
 * MSG_NOSIGNAL. The bytes sent (possibly fewer than len on a stream), or
 * -errno. */
ssize_t fd_send(int sock, const void *data, size_t len, const int *fds, size_t n, int flags);

/* Receives up to len bytes and up to max fds into fds (*nfds: how many
 * came), retrying on EINTR. flags are added to MSG_CMSG_CLOEXEC. The bytes
 * received (0: the peer closed), or -errno (-EPROTO: the kernel dropped
 * fds that did not fit; none are kept). */
ssize_t fd_recv(int sock, void *data, size_t len, int *fds, size_t max, size_t *nfds, int flags);

#endif
