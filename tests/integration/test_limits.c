/* Resource limits: memory (OOM inside only, reported), pids, disk, CPU. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

TestSuite(limits, .init = sandbox_suite_init, .fini = sandbox_suite_fini, .timeout = 180);

Test(limits, memory_hog_is_oom_killed_and_reported)
{
	struct run_result r;
	ABOX(&r, "run", "--memory", "64M", "--", "python3", "-c",
	     "a = bytearray(400 << 20)\nprint('survived')");
	cr_assert_eq(r.status, 137, "stderr: %s", r.err);
	cr_assert(strstr(r.err, "killed: out of memory (limit 64M)"), "stderr: %s", r.err);
	cr_assert_eq(strstr(r.out, "survived"), NULL);
	run_result_free(&r);
}

Test(limits, default_memory_limit_is_512M)
{
	ABOX_EXPECT(137, NULL, "killed: out of memory (limit 512M)", "run", "--", "python3", "-c",
		    "a = bytearray(700 << 20)");
}

Test(limits, oom_of_a_child_is_reported_and_the_command_goes_on)
{
	ABOX_EXPECT(0, "child=137\n", "out of memory", "run", "--memory", "64M", "--", "sh", "-c",
		    "python3 -c 'a = bytearray(400 << 20)'; echo \"child=$?\"");
}

/* Unread TCP buffers on the sandbox's own loopback: 128 connections
 * written to until the kernel refuses could hold ≈ 1 GiB of host memory
 * (478 MiB did, in a 256 MiB sandbox, before socket memory was charged to
 * it). Now they stop inside the sandbox's limit: at most its TCP bound
 * (64 MiB) on a v1 memory controller, its memory limit on v2. */
Test(limits, tcp_buffers_stay_within_the_sandbox)
{
	struct run_result r;
	ABOX(&r, "run", "--memory", "256M", "--", "python3", "-c",
	     "import socket\n"
	     "srv = socket.socket(); srv.bind(('127.0.0.1', 0)); srv.listen(256)\n"
	     "held, total = [], 0\n"
	     "for i in range(128):\n"
	     "    c = socket.create_connection(srv.getsockname()); a, _ = srv.accept()\n"
	     "    c.setblocking(False); held += [c, a]\n"
	     "    while True:\n"
	     "        try:\n"
	     "            n = c.send(b'x' * (1 << 20))\n"
	     "        except OSError:\n"
	     "            break\n"
	     "        total += n\n"
	     "print(total >> 20)\n");
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	int mib = atoi(r.out);
	cr_assert_gt(mib, 0, "out: %s", r.out);
	cr_assert_lt(mib, 256, "%d MiB of TCP buffers held by a 256 MiB sandbox", mib);
	run_result_free(&r);
}

Test(limits, fork_bomb_is_stopped_by_pids)
{
	struct run_result r;
	ABOX(&r, "run", "--pids", "32", "--", "python3", "-c",
	     "import os, time\n"
	     "n = 0\n"
	     "try:\n"
	     "    for i in range(200):\n"
	     "        if os.fork() == 0:\n"
	     "            time.sleep(30); os._exit(0)\n"
	     "        n += 1\n"
	     "except OSError as e:\n"
	     "    print('stopped', n, e.errno)\n");
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	int n = -1, e = -1;
	cr_assert_eq(sscanf(r.out, "stopped %d %d", &n, &e), 2, "out: %s", r.out);
	cr_assert_lt(n, 32);
	cr_assert_eq(e, 11 /* EAGAIN */);
	cr_assert_lt(r.seconds, 20.0, "children must die with the sandbox");
	run_result_free(&r);
}

Test(limits, disk_filler_gets_enospc)
{
	char *out = ABOX_OUT("run", "--disk", "16M", "--", "sh", "-c",
			     "dd if=/dev/zero of=/tmp/fill bs=1M count=64 2>&1; echo rc=$?");
	cr_assert(strstr(out, "No space left on device"), "out: %s", out);
	cr_assert(strstr(out, "rc=1"), "out: %s", out);
	free(out);
}

Test(limits, cpu_quota_holds)
{
	/* A busy loop for 2 s of wall time under --cpus 0.5 gets about 1 s of
	 * CPU. Loose bounds: this is a check that the quota applies, not a
	 * benchmark. */
	struct run_result r;
	ABOX(&r, "run", "--cpus", "0.5", "--", "python3", "-c",
	     "import time\n"
	     "t0 = time.monotonic(); c0 = time.process_time()\n"
	     "while time.monotonic() - t0 < 2: pass\n"
	     "print(round((time.process_time() - c0) / (time.monotonic() - t0), 2))");
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	double share = atof(r.out);
	cr_assert_lt(share, 0.75, "share %f", share);
	cr_assert_gt(share, 0.2, "share %f", share);
	run_result_free(&r);
}

/* OOM kills are counted per cgroup for the sandbox's whole life: a later
 * command that ran clean must not inherit an earlier one's OOM report. */
Test(limits, oom_report_is_per_command_in_a_long_lived_sandbox)
{
	char *id = CREATE("--memory", "64M");
	struct run_result r;
	ABOX(&r, "exec", id, "--", "python3", "-c", "a = bytearray(400 << 20)");
	int hog = r.status;
	char *hog_err = strdup(r.err);
	run_result_free(&r);
	ABOX(&r, "exec", id, "--", "true");
	int clean = r.status;
	char *clean_err = strdup(r.err);
	run_result_free(&r);
	ABOX_ANY("kill", id);
	free(id);

	cr_assert_eq(hog, 137, "stderr: %s", hog_err);
	cr_assert(strstr(hog_err, "killed: out of memory"), "stderr: %s", hog_err);
	cr_assert_eq(clean, 0, "stderr: %s", clean_err);
	cr_assert_eq(strstr(clean_err, "out of memory"), NULL, "a clean command reported an OOM: %s",
		     clean_err);
	free(hog_err);
	free(clean_err);
}
