/* netd/dns — the parts of DNS messages abox's resolver reads and writes
 * (RFC 1035): a query's header and its one question, the address
 * records of an answer, error answers, and a query of its own. Every
 * message comes from a sandbox or from the network, so every read is
 * bounded: names of at most 255 bytes in labels of at most 63, at most
 * 64 compression jumps, offsets checked against the length. A label
 * byte that no host name has (a '.', a NUL, anything outside letters,
 * digits, '-', '_' and '*') is written as \DDD, so such a name can never
 * equal a pattern of a policy (a sandbox cannot smuggle "evil.com\0" or
 * "a.allowed.com" as one label past a match).
 * Runs in abox-netd; has a fuzz target (tests/fuzz/fuzz_dns.c). */
#ifndef ABOX_NETD_DNS_H
#define ABOX_NETD_DNS_H

#include <stddef.h>
#include <stdint.h>

#define DNS_TYPE_A 1
#define DNS_TYPE_CNAME 5
#define DNS_TYPE_AAAA 28
#define DNS_RCODE_NOERROR 0
#define DNS_RCODE_FORMERR 1
#define DNS_RCODE_SERVFAIL 2
#define DNS_RCODE_NXDOMAIN 3
#define DNS_RCODE_REFUSED 5
#define DNS_NAME_TEXT 1024 /* 255 bytes, each up to 4 characters when escaped */
#define DNS_MSG_MAX 65535

struct dns_query {
	uint16_t id, flags;
	char name[DNS_NAME_TEXT]; /* lower case, no trailing dot; "" is the root */
	uint16_t qtype, qclass;
	size_t qend; /* offset just past the question */
};

/* A standard query (QR 0, opcode QUERY) with exactly one question.
 * -EINVAL when malformed (then q->id is set when the header was there,
 * for a FORMERR), -EOPNOTSUPP for another opcode or question count. */
int dns_parse_query(const uint8_t *m, size_t n, struct dns_query *q);
/* An answer to query (its first qend bytes: header and question) with
 * rcode and no records: written to out, its length (0: no room). */
size_t dns_answer_empty(const uint8_t *query, size_t qend, uint8_t rcode, uint8_t *out, size_t cap);

/* Calls fn for every A record of a response (any section), with its
 * TTL; a non-zero return stops the walk and is returned. -EINVAL when
 * the response is malformed. */
int dns_each_a(const uint8_t *m, size_t n, int (*fn)(uint32_t addr, uint32_t ttl, void *ud), void *ud);
/* Whether a response answers q: its id, QR set, and the same question. */
int dns_answers(const uint8_t *m, size_t n, const struct dns_query *q, uint16_t id);
/* A recursive query for name (text, as dns_query.name) and type. */
size_t dns_build_query(const char *name, uint16_t type, uint16_t id, uint8_t *out, size_t cap);
/* The response code of a message (its low 4 bits of the flags). */
int dns_rcode(const uint8_t *m, size_t n);

#endif
