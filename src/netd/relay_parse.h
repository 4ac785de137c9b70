/* netd/relay_parse — what a sandbox asks the relay (relay.c) for: an
 * HTTP proxy request (CONNECT host:port, or a request for an http://
 * URL) or a SOCKS5 greeting and CONNECT. Every byte is the sandbox's
 * choice: lengths are checked against what is there, a host comes out
 * only as a plain host name in lower case (letters, digits, '-', '_',
 * dots; no trailing dot) or a dotted IPv4 address, and a port only as
 * 1-65535. IPv6 destinations are refused (sandboxes have no IPv6).
 * Runs in abox-netd's relay; has a fuzz target (tests/fuzz/fuzz_relay.c). */
#ifndef ABOX_NETD_RELAY_PARSE_H
#define ABOX_NETD_RELAY_PARSE_H

#include <stddef.h>
#include <stdint.h>

#define RELAY_HOST_MAX 254
#define RELAY_HEAD_MAX 16384

enum relay_proto {
	RELAY_CONNECT, /* HTTP CONNECT: answer 200, then bytes both ways */
	RELAY_FORWARD, /* an http:// request: sent on in origin form */
	RELAY_SOCKS5,
};

struct relay_req {
	enum relay_proto proto;
	char host[RELAY_HOST_MAX];
	uint16_t port; /* host order */
	/* the bytes the request took; for RELAY_FORWARD: up to the end of
	 * the request line (the headers after it are sent on as they are) */
	size_t used;
	/* RELAY_FORWARD: the request line rebuilt in origin form
	 * ("GET /path HTTP/1.1\r\n"), what the server is sent first */
	char line[RELAY_HEAD_MAX];
	size_t line_len;
};

/* An HTTP proxy request at the start of b: 0 (r filled), 1 when more
 * bytes are needed, -EMSGSIZE (no end of head within RELAY_HEAD_MAX),
 * -EPROTONOSUPPORT (a URL other than http://), -EAFNOSUPPORT (an IPv6
 * destination), -EINVAL (anything else that is not a proxy request). */
int relay_http_parse(const uint8_t *b, size_t n, struct relay_req *r);

/* A SOCKS5 greeting: 0 when it offers "no authentication" (*used: its
 * length), 1 when more bytes are needed, -EACCES when it does not,
 * -EINVAL when it is no SOCKS5 greeting. */
int relay_socks_hello(const uint8_t *b, size_t n, size_t *used);

/* The SOCKS5 request after the greeting: 0 (r filled), 1 when more
 * bytes are needed, -EOPNOTSUPP (BIND, UDP ASSOCIATE), -EAFNOSUPPORT
 * (IPv6, or an unknown address type), -EINVAL otherwise. */
int relay_socks_parse(const uint8_t *b, size_t n, struct relay_req *r);

#endif
