/* Unit tests of the OCI config.json reader (src/lib/oci/spec.c): a full
 * config read field by field, and what is refused with the JSON path it
 * names (hostile mount destinations, unknown namespaces and capabilities,
 * wrong types, other platforms, what abox cannot apply). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/base.h"
#include "oci/spec.h"

static struct oci_spec parse_ok(const char *text)
{
	struct oci_spec s;
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(oci_spec_parse(text, strlen(text), "config.json", &s, &err), 0, "%s", err.msg);
	return s;
}

static void refused(const char *text, const char *why)
{
	struct oci_spec s;
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_lt(oci_spec_parse(text, strlen(text), "config.json", &s, &err), 0, "accepted: %s", text);
	cr_assert(strstr(err.msg, why), "'%s' does not say '%s'", err.msg, why);
	cr_assert_null(s.root_path, "a refused config is left empty");
}

#define MIN "\"ociVersion\":\"1.2.0\",\"root\":{\"path\":\"rootfs\"}"
#define PROC(x) "\"process\":{\"user\":{\"uid\":0,\"gid\":0},\"args\":[\"sh\"],\"cwd\":\"/\"" x "}"

Test(ocispec, the_seed_config_read_field_by_field)
{
	char *text = NULL, path[4096];
	size_t len = 0;
	const char *src = getenv("ABOX_SOURCE_DIR");
	cr_assert_not_null(src, "ABOX_SOURCE_DIR is set by meson");
	snprintf(path, sizeof(path), "%s/tests/fuzz/ocispec-seed.json", src);
	cr_assert_eq(read_file_at(AT_FDCWD, path, 1 << 20, &text, &len), 0, "%s", path);
	struct oci_spec s;
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(oci_spec_parse(text, len, "seed", &s, &err), 0, "%s", err.msg);
	free(text);
	cr_assert_str_eq(s.root_path, "rootfs");
	cr_assert(s.root_readonly);
	cr_assert(s.process.present && !s.process.terminal);
	cr_assert_eq(s.process.console_width, 80);
	cr_assert_eq(s.process.uid, 1000);
	cr_assert_eq(s.process.nadditional_gids, 2);
	cr_assert_eq(s.process.additional_gids[1], 10);
	cr_assert(s.process.has_umask && s.process.umask == 022);
	cr_assert_str_eq(s.process.args[2], "echo hi");
	cr_assert_str_eq(s.process.env[1], "TERM=xterm");
	cr_assert_eq(s.process.cap_bounding, (1ull << 0) | (1ull << 5)); /* CAP_CHOWN, CAP_KILL */
	cr_assert_eq(s.process.cap_ambient, 0);
	cr_assert_eq(s.process.nrlimits, 1);
	cr_assert_eq(s.process.rlimits[0].resource, RLIMIT_NOFILE);
	cr_assert(s.process.no_new_privileges && s.process.has_oom_score_adj &&
		  s.process.oom_score_adj == 100);
	cr_assert_str_eq(s.hostname, "box");
	cr_assert_eq(s.nmounts, 3);
	cr_assert_str_eq(s.mounts[1].options[3], "size=65536k");
	cr_assert_eq(s.mounts[2].nuid, 1);
	cr_assert_eq(s.mounts[2].uid_map[0].host_id, 100000);
	cr_assert_eq(s.nhooks[OCI_HOOK_PRESTART], 1);
	cr_assert_eq(s.hooks[OCI_HOOK_PRESTART][0].timeout_s, 5);
	cr_assert_eq(s.nhooks[OCI_HOOK_POSTSTOP], 1);
	cr_assert_str_eq(s.annotations[0], "io.abox.x=y");
	cr_assert(s.ns_wanted[OCI_NS_PID] && s.ns_wanted[OCI_NS_USER] && !s.ns_wanted[OCI_NS_TIME]);
	cr_assert_str_eq(s.ns_path[OCI_NS_NET], "/var/run/netns/cni-1");
	cr_assert_null(s.ns_path[OCI_NS_PID]);
	cr_assert_eq(s.nuid, 1);
	cr_assert_str_eq(s.sysctl[0], "net.ipv4.ip_forward=0");
	cr_assert_eq(s.resources.memory_limit, 536870912);
	cr_assert_eq(s.resources.memory_reservation, -1);
	cr_assert_eq(s.resources.cpu_quota, 100000);
	cr_assert_str_eq(s.resources.cpu_cpus, "0-1");
	cr_assert_eq(s.resources.pids_limit, 512);
	cr_assert(s.resources.has_blkio_weight && s.resources.blkio_weight == 500);
	cr_assert_eq(s.resources.ndevice_rules, 1);
	cr_assert(!s.resources.device_rules[0].allow && s.resources.device_rules[0].type == 'a' &&
		  s.resources.device_rules[0].major == -1 && s.resources.device_rules[0].access == 7);
	cr_assert_str_eq(s.resources.unified[0], "memory.high=400M");
	cr_assert_eq(s.resources.nhugepages, 1);
	cr_assert(s.resources.hugepages[0].page_kb == 2048 && s.resources.hugepages[0].limit == 0);
	cr_assert_str_eq(s.cgroups_path, "system.slice:abox:c1");
	cr_assert(strstr(s.seccomp_json, "SCMP_ACT_ERRNO"));
	cr_assert_str_eq(s.masked_paths[0], "/proc/kcore");
	cr_assert_eq(s.ndevices, 1);
	cr_assert(s.devices[0].type == 'c' && s.devices[0].major == 10 && s.devices[0].mode == 0666);
	cr_assert_str_eq(s.rootfs_propagation, "rslave");
	oci_spec_free(&s);
}

Test(ocispec, a_minimal_config_and_its_defaults)
{
	struct oci_spec s = parse_ok("{" MIN "}");
	cr_assert(!s.process.present);
	cr_assert(!s.root_readonly);
	cr_assert_eq(s.resources.memory_limit, -1);
	cr_assert_eq(s.resources.pids_limit, 0);
	oci_spec_free(&s);
	/* an empty namespace path means a new one; pids.limit 0 means none */
	s = parse_ok("{" MIN ",\"linux\":{\"namespaces\":[{\"type\":\"mount\",\"path\":\"\"}],"
		     "\"resources\":{\"pids\":{\"limit\":0}}},\"x-extension\":{\"anything\":1}}");
	cr_assert(s.ns_wanted[OCI_NS_MOUNT] && !s.ns_path[OCI_NS_MOUNT]);
	cr_assert_eq(s.resources.pids_limit, -1);
	oci_spec_free(&s);
}

Test(ocispec, hostile_and_malformed_configs_are_refused_naming_the_field)
{
	refused("", "not one JSON object");
	refused("[]", "not one JSON object");
	refused("{} {}", "not one JSON object");
	refused("{\"root\":{\"path\":\"r\"}}", "ociVersion: is required");
	refused("{\"ociVersion\":\"2.0.0\",\"root\":{\"path\":\"r\"}}", "not a 1.x version");
	refused("{\"ociVersion\":\"1.0.0\"}", "root: is required");
	refused("{\"ociVersion\":\"1.0.0\",\"root\":{}}", "root.path: is required");
	refused("{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":7}}", "root.path: must be a string");
	refused("{" MIN ",\"mounts\":[{\"destination\":\"/a/../../etc\",\"type\":\"bind\"}]}",
		"mounts[0].destination: '/a/../../etc' has a '.' or '..' component");
	refused("{" MIN ",\"mounts\":[{\"destination\":\"relative\"}]}",
		"mounts[0].destination: 'relative' must be");
	refused("{" MIN ",\"mounts\":[{\"type\":\"tmpfs\"}]}", "mounts[0].destination: is required");
	refused("{" MIN ",\"linux\":{\"namespaces\":[{\"type\":\"foo\"}]}}",
		"linux.namespaces[0].type: unknown namespace type 'foo'");
	refused("{" MIN ",\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"pid\"}]}}",
		"given twice");
	refused("{" MIN ",\"linux\":{\"namespaces\":[{\"type\":\"network\",\"path\":\"netns\"}]}}",
		"linux.namespaces[0].path: must be an absolute path");
	refused("{" MIN ",\"linux\":{\"uidMappings\":[{\"containerID\":0,\"hostID\":1000,\"size\":1}]}}",
		"need a user namespace");
	refused("{" MIN
		",\"linux\":{\"namespaces\":[{\"type\":\"user\"}],\"uidMappings\":[{\"containerID\":0,"
		"\"hostID\":4294967295,\"size\":2}]}}",
		"within 32 bits");
	refused("{" MIN "," PROC(",\"capabilities\":{\"bounding\":[\"CAP_EVERYTHING\"]}") "}",
		"process.capabilities.bounding[0]: unknown capability 'CAP_EVERYTHING'");
	refused("{" MIN "," PROC(",\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":1,\"soft\":2}]") "}",
		"soft limit above the hard one");
	refused("{" MIN "," PROC(",\"rlimits\":[{\"type\":\"RLIMIT_FOO\",\"hard\":1,\"soft\":1}]") "}",
		"unknown rlimit type 'RLIMIT_FOO'");
	refused("{" MIN "," PROC(",\"env\":[\"NOEQUALS\"]") "}", "process.env: entry 0 is not NAME=VALUE");
	refused("{" MIN "," PROC(",\"oomScoreAdj\":5000") "}", "process.oomScoreAdj: must be -1000 to 1000");
	refused("{" MIN "," PROC(",\"selinuxLabel\":\"x\"") "}", "process.selinuxLabel: is not supported");
	refused("{" MIN "," PROC(",\"apparmorProfile\":7") "}", "process.apparmorProfile: must be a string");
	refused("{" MIN ",\"process\":{\"user\":{\"uid\":-1,\"gid\":0},\"args\":[\"sh\"],\"cwd\":\"/\"}}",
		"process.user.uid: must not be negative");
	refused("{" MIN ",\"process\":{\"user\":{\"uid\":0,\"gid\":0},\"args\":[],\"cwd\":\"/\"}}",
		"process.args: must name a program");
	refused("{" MIN ",\"process\":{\"user\":{\"uid\":0,\"gid\":0},\"args\":[\"sh\"],\"cwd\":\"tmp\"}}",
		"process.cwd: must be an absolute path");
	refused("{" MIN ",\"linux\":{\"resources\":{\"unified\":{\"../../cgroup.procs\":\"1\"}}}}",
		"linux.resources.unified.../../cgroup.procs: is not a cgroup file name");
	refused("{" MIN ",\"linux\":{\"resources\":{\"unified\":{\"memory\":\"1\"}}}}",
		"is not a cgroup file name");
	refused("{" MIN
		",\"linux\":{\"resources\":{\"hugepageLimits\":[{\"pageSize\":\"2XB\",\"limit\":0}]}}}",
		"linux.resources.hugepageLimits[0].pageSize: must be a page size such as 2MB or 1GB");
	refused("{" MIN ",\"linux\":{\"resources\":{\"hugepageLimits\":[{\"pageSize\":\"2MB\"}]}}}",
		"linux.resources.hugepageLimits[0].limit: is missing");
	refused("{" MIN ",\"hooks\":{\"prestart\":[{\"path\":\"relative\"}]}}",
		"hooks.prestart[0].path: must be an absolute path");
	refused("{" MIN ",\"linux\":{\"devices\":[{\"path\":\"/dev/x\",\"type\":\"z\"}]}}",
		"linux.devices[0].type: must be c, b, u or p");
	refused("{" MIN ",\"linux\":{\"devices\":[{\"path\":\"/dev/x\",\"type\":\"c\"}]}}",
		"linux.devices[0].major: is required");
	refused("{" MIN ",\"linux\":{\"timeOffsets\":{\"boottime\":{\"secs\":1}}}}",
		"linux.timeOffsets: offsets need a time namespace");
	refused("{" MIN ",\"linux\":{\"namespaces\":[{\"type\":\"time\"}],"
		"\"timeOffsets\":{\"monotonic\":{\"nanosecs\":1000000000}}}}",
		"linux.timeOffsets.monotonic.nanosecs");
	refused("{" MIN ",\"linux\":{\"resources\":{\"devices\":[{\"type\":\"c\"}]}}}",
		"linux.resources.devices[0].allow: is required");
	refused("{" MIN ",\"linux\":{\"resources\":{\"devices\":[{\"allow\":true,\"type\":\"x\"}]}}}",
		"linux.resources.devices[0].type: must be a, c or b");
	refused("{" MIN ",\"linux\":{\"resources\":{\"devices\":[{\"allow\":true,\"access\":\"rwx\"}]}}}",
		"linux.resources.devices[0].access: must be a string of r, w and m");
	refused("{" MIN ",\"linux\":{\"resources\":{\"devices\":[{\"allow\":true,\"major\":-2}]}}}",
		"linux.resources.devices[0].major");
	refused("{" MIN ",\"linux\":{\"maskedPaths\":[\"/proc/../etc\"]}}", "linux.maskedPaths[0]");
	refused("{" MIN ",\"linux\":{\"rootfsPropagation\":\"weird\"}}", "unknown propagation 'weird'");
	refused("{" MIN ",\"linux\":{\"intelRdt\":{}}}", "linux.intelRdt: is not supported");
	refused("{" MIN ",\"windows\":{}}", "windows: is for another platform");
	refused("{" MIN ",\"annotations\":{\"a\":1}}", "annotations.a: must be a string");
	refused("{" MIN ",\"root\":{\"path\":\"a\\u0000b\"}}", "holds a NUL byte");
}

Test(ocispec, a_bundle_without_config)
{
	struct oci_spec s;
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(oci_spec_load("/nonexistent-bundle", &s, &err), -ENOENT);
	cr_assert(strstr(err.msg, "is '/nonexistent-bundle' a bundle?"), "%s", err.msg);
}

/* what crun and runc write with `spec` (and `spec --rootless`) reads, with
 * the process and namespaces they put in it */
Test(ocispec, the_configs_crun_and_runc_write_read)
{
	const char *const cmds[] = { "crun spec", "crun spec --rootless", "runc spec",
				     "runc spec --rootless" };
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		char dir[] = "/tmp/abox-ocispec.XXXXXX", cmd[256];
		cr_assert_not_null(mkdtemp(dir));
		snprintf(cmd, sizeof(cmd), "cd %s && %s", dir, cmds[i]);
		cr_assert_eq(system(cmd), 0,
			     "'%s' failed (crun and runc are installed by scripts/bootstrap.sh)", cmds[i]);
		struct oci_spec s;
		abox_error err = ABOX_ERROR_INIT;
		cr_assert_eq(oci_spec_load(dir, &s, &err), 0, "%s: %s", cmds[i], err.msg);
		cr_assert_str_eq(s.root_path, "rootfs", "%s", cmds[i]);
		cr_assert(s.process.present && s.process.args && s.process.args[0], "%s", cmds[i]);
		cr_assert(s.ns_wanted[OCI_NS_PID] && s.ns_wanted[OCI_NS_MOUNT], "%s", cmds[i]);
		cr_assert_eq(s.ns_wanted[OCI_NS_USER], strstr(cmds[i], "rootless") != NULL, "%s", cmds[i]);
		cr_assert(s.nmounts > 3 && s.masked_paths, "%s", cmds[i]);
		oci_spec_free(&s);
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		cr_assert_eq(system(cmd), 0);
	}
}
