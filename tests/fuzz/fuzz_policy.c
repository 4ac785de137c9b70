/* libFuzzer target for the seccomp policy reader: any bytes go through the
 * strict parser (policy_check); small inputs also through libseccomp, the
 * two-filter join and the self-check (policy_compile). Neither may crash,
 * leak or write outside its buffers (ASan/UBSan).
 *   clang -fsanitize=fuzzer,address,undefined ... && ./fuzz_policy -max_len=65536 */
#include <stddef.h>
#include <stdint.h>

#include "seccomp/policy.h"

/* Compiling costs ~1 ms per kB; a cap keeps the fuzzer fast. */
#define COMPILE_MAX 16384

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct policy_env env = { .caps = UINT64_C(1) << 21, .kernel = 6001 };
	abox_error err = ABOX_ERROR_INIT;
	const char *json = (const char *)data;

	int r = policy_check(json, size, "fuzz.json", &err);
	if (r < 0 && (err.code != -r || err.msg[0] == '\0'))
		__builtin_trap(); /* every failure must come with its message */
	if (size <= COMPILE_MAX) {
		struct policy_bpf b = { 0 };
		abox_error err2 = ABOX_ERROR_INIT;
		if (policy_compile(json, size, "fuzz.json", &env, &b, &err2) == 0) {
			if (r < 0 || b.len == 0)
				__builtin_trap(); /* compile accepted what check refused */
			policy_bpf_free(&b);
		} else if (err2.msg[0] == '\0' || b.insns) {
			__builtin_trap();
		}
	}
	return 0;
}
