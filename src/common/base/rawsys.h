/* rawsys — system calls without libc: for code that runs in a task
 * sharing its parent's memory (CLONE_VM) and TLS, where libc's wrappers
 * would write the parent thread's errno or take its locks. Each returns
 * the kernel's answer: the result, or -errno.
 * Used by abox-init's command start (child_exec.c) and the library's user
 * namespace helpers (spawn/userns.c). */
#ifndef ABOX_BASE_RAWSYS_H
#define ABOX_BASE_RAWSYS_H

#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
static inline long rsys(long n, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d, r8 __asm__("r8") = e, r9 __asm__("r9") = f;
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}
#elif defined(__aarch64__)
static inline long rsys(long n, long a, long b, long c, long d, long e, long f)
{
	register long x8 __asm__("x8") = n, x0 __asm__("x0") = a, x1 __asm__("x1") = b, x2 __asm__("x2") = c,
			 x3 __asm__("x3") = d, x4 __asm__("x4") = e, x5 __asm__("x5") = f;
	__asm__ volatile("svc 0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory", "cc");
	return x0;
}
#else
/* elsewhere callers fork instead (their own memory): libc is safe to use */
static inline long rsys(long n, long a, long b, long c, long d, long e, long f)
{
	long r = syscall(n, a, b, c, d, e, f);
	return r < 0 ? -errno : r;
}
#endif
#define RS0(n) rsys(n, 0, 0, 0, 0, 0, 0)
#define RS1(n, a) rsys(n, (long)(a), 0, 0, 0, 0, 0)
#define RS2(n, a, b) rsys(n, (long)(a), (long)(b), 0, 0, 0, 0)
#define RS3(n, a, b, c) rsys(n, (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define RS4(n, a, b, c, d) rsys(n, (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)

#endif
