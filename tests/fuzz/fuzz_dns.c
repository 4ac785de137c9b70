/* libFuzzer: the DNS messages abox-netd reads (src/netd/dns.c), from a
 * sandbox (queries) and from the network (answers): parsed as a query,
 * answered empty, walked for address records, and checked as the answer
 * to a query of its own. Must never crash or read out of bounds; a name
 * read from a message is NUL-terminated text without raw dots in labels. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dns.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int each(uint32_t addr, uint32_t ttl, void *ud)
{
	*(uint64_t *)ud += addr ^ ttl;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dns_query q;
	if (dns_parse_query(data, size, &q) == 0) {
		if (strlen(q.name) >= sizeof(q.name) || q.qend > size)
			abort();
		uint8_t out[4096];
		size_t n = dns_answer_empty(data, q.qend, DNS_RCODE_REFUSED, out, sizeof(out));
		if (n != 0 && n != q.qend)
			abort();
		/* a query of our own for the same plain name (no escaped
		 * byte: the proxy only asks for plain host names) parses back
		 * to it */
		uint8_t own[600];
		size_t on = strchr(q.name, '\\') ? 0 : dns_build_query(q.name, q.qtype, 7, own, sizeof(own));
		struct dns_query back;
		if (on && dns_parse_query(own, on, &back) == 0 && strcmp(back.name, q.name))
			abort();
	}
	uint64_t sum = 0;
	(void)dns_each_a(data, size, each, &sum);
	(void)dns_rcode(data, size);
	uint8_t qb[512];
	size_t qn = dns_build_query("allowed.test", DNS_TYPE_A, 0x1234, qb, sizeof(qb));
	struct dns_query mine;
	if (qn && dns_parse_query(qb, qn, &mine) == 0)
		(void)dns_answers(data, size, &mine, 0x1234);
	return 0;
}
