/* netd/sni — the name a sandbox's connection asks for, read from its
 * first bytes without consuming them: the server_name of a TLS
 * ClientHello, or the Host header of an HTTP/1 request. Both parsers see
 * bytes a sandbox chose: every length is checked against what is there,
 * a name is returned only when it is a plain host name (lower case,
 * letters, digits, '-', '_' and dots; no port, no trailing dot), and two
 * Host headers or two server names make the request refused, not
 * guessed at.
 * Runs in abox-netd's proxy; has a fuzz target (tests/fuzz/fuzz_sni.c). */
#ifndef ABOX_NETD_SNI_H
#define ABOX_NETD_SNI_H

#include <stddef.h>
#include <stdint.h>

#define SNI_NAME_MAX 254
#define SNI_PEEK_MAX 16384

/* What the first bytes are. */
enum sni_kind {
	SNI_TLS,
	SNI_HTTP,
	SNI_OTHER
};
enum sni_kind sni_kind(const uint8_t *b, size_t n);

/* 0 and the name in name (SNI_NAME_MAX bytes), 1 when more bytes are
 * needed, -ENOENT when the request names no host (a ClientHello without
 * server_name, an HTTP/1.0 request without Host), -EINVAL when it is not
 * what it claims to be or names something that is not a host name. */
int sni_tls_name(const uint8_t *b, size_t n, char *name);
int sni_http_host(const uint8_t *b, size_t n, char *name);

#endif
