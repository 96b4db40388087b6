/* test_ocispec.c — config.json and process.json as sandlot-oci reads them: a full
 * containerd-like spec, path joins, mappings, limits, and every refusal with its message. */
#include <linux/capability.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>

#include <cmocka.h>

#include "ocispec.h"

#define NS_ALL                                                                                     \
	"{\"type\":\"pid\"},{\"type\":\"network\",\"path\":\"/proc/42/ns/net\"},"                  \
	"{\"type\":\"mount\"},{\"type\":\"ipc\"},{\"type\":\"uts\"}"

static char *spec_with(const char *process_extra, const char *linux_extra, const char *ns)
{
	static char buf[8192];
	snprintf(buf, sizeof(buf),
		 "{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"rootfs\",\"readonly\":true},"
		 "\"hostname\":\"h\",\"process\":{\"args\":[\"/bin/sh\",\"-c\",\"true\"],"
		 "\"env\":[\"PATH=/bin\"],\"cwd\":\"/\",\"user\":{\"uid\":1000,\"gid\":100,"
		 "\"additionalGids\":[10,20]},\"capabilities\":{\"bounding\":[\"CAP_KILL\","
		 "\"CAP_NET_RAW\"]},\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"soft\":1024,"
		 "\"hard\":1024}]%s},"
		 "\"mounts\":[{\"destination\":\"/proc\",\"type\":\"proc\",\"source\":\"proc\"},"
		 "{\"destination\":\"/etc/hosts\",\"type\":\"bind\",\"source\":\"/etc/hosts\","
		 "\"options\":[\"rbind\",\"ro\",\"nosuid\",\"rprivate\"]},"
		 "{\"destination\":\"/dev\",\"type\":\"tmpfs\",\"source\":\"tmpfs\","
		 "\"options\":[\"nosuid\",\"strictatime\",\"mode=755\",\"size=65536k\"]}],"
		 "\"annotations\":{\"io.kubernetes.cri.sandbox-id\":\"pod1\"},"
		 "\"linux\":{\"namespaces\":[%s],\"cgroupsPath\":\"/kubepods/pod1/c1\","
		 "\"resources\":{\"memory\":{\"limit\":1048576},\"cpu\":{\"quota\":50000,"
		 "\"period\":100000},\"pids\":{\"limit\":64}},\"maskedPaths\":[\"/proc/kcore\"],"
		 "\"readonlyPaths\":[\"/proc/sys\"],\"sysctl\":{\"net.ipv4.ip_forward\":\"0\"}%s}}",
		 process_extra, ns ? ns : NS_ALL, linux_extra);
	return buf;
}

static void parse_ok(const char *json, oci_spec *s)
{
	sl_err err = {0};
	if (oci_spec_parse(json, strlen(json), s, &err) != 0)
		fail_msg("refused: %s", err.msg);
}

static void parse_bad(const char *json, const char *needle)
{
	oci_spec s;
	sl_err err = {0};
	if (oci_spec_parse(json, strlen(json), &s, &err) == 0) {
		oci_spec_free(&s);
		fail_msg("accepted; want \"%s\"", needle);
	}
	assert_int_equal(err.kind, SL_INVALID);
	if (!strstr(err.msg, needle))
		fail_msg("message \"%s\" lacks \"%s\"", err.msg, needle);
}

static void test_full_spec(void **state)
{
	(void)state;
	oci_spec s;
	parse_ok(spec_with("", "", NULL), &s);
	assert_string_equal(s.root_path, "rootfs");
	assert_true(s.root_readonly);
	assert_string_equal(s.proc.args[2], "true");
	assert_int_equal(s.proc.uid, 1000);
	assert_int_equal(s.proc.ngids, 2);
	assert_int_equal(s.proc.caps, (1ULL << CAP_KILL) | (1ULL << CAP_NET_RAW));
	assert_int_equal(s.proc.nrlimits, 1);
	assert_int_equal(s.proc.rlimits[0].resource, RLIMIT_NOFILE);
	assert_true(s.ns[OCI_NS_NET]);
	assert_string_equal(s.ns_path[OCI_NS_NET], "/proc/42/ns/net");
	assert_string_equal(s.ns_path[OCI_NS_PID], "");
	assert_false(s.ns[OCI_NS_USER]);
	assert_int_equal(s.nmounts, 3);
	assert_true(s.mounts[1].bind && s.mounts[1].recursive);
	assert_int_equal(s.mounts[1].flags, MS_RDONLY | MS_NOSUID);
	assert_int_equal(s.mounts[1].propagation, MS_PRIVATE | MS_REC);
	assert_string_equal(s.mounts[2].data, "mode=755,size=65536k");
	assert_string_equal(s.cgroups_path, "/kubepods/pod1/c1");
	assert_int_equal(s.limits.memory_bytes, 1048576);
	assert_int_equal(s.limits.cpu_millicores, 500);
	assert_int_equal(s.limits.pids_max, 64);
	assert_string_equal(s.masked[0], "/proc/kcore");
	assert_string_equal(s.sysctl[0], "net.ipv4.ip_forward");
	assert_string_equal(s.pod_id, "pod1");
	assert_false(s.spec_only);
	assert_null(s.seccomp_json);
	oci_spec_free(&s);
}

static void test_mapping_and_seccomp(void **state)
{
	(void)state;
	oci_spec s;
	parse_ok(spec_with("",
			   ",\"uidMappings\":[{\"containerID\":0,\"hostID\":200000,\"size\":"
			   "65536}],\"gidMappings\":[{\"containerID\":0,\"hostID\":200000,"
			   "\"size\":65536}],\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ERRNO\"}",
			   NULL),
		 &s);
	assert_true(s.has_mapping);
	assert_int_equal(s.map_host, 200000);
	assert_non_null(strstr(s.seccomp_json, "SCMP_ACT_ERRNO"));
	oci_spec_free(&s);
}

/* The spec with FROM replaced by TO. */
static char *replaced(const char *from, const char *to)
{
	static char out[8192];
	char *s = spec_with("", "", NULL), *at = strstr(s, from);
	snprintf(out, sizeof(out), "%.*s%s%s", (int)(at - s), s, to, at + strlen(from));
	return out;
}

static void test_refusals(void **state)
{
	(void)state;
	parse_bad("{", "not a valid JSON object");
	parse_bad("{\"process\":{}}", "root.path");
	parse_bad(spec_with("", "", NS_ALL ",{\"type\":\"foo\"}"), "unknown namespace type foo");
	parse_bad(spec_with("", "",
			    "{\"type\":\"network\"},{\"type\":\"mount\"},{\"type\":\"ipc\"},"
			    "{\"type\":\"uts\"}"),
		  "host's pid namespace is refused");
	parse_bad(replaced("CAP_NET_RAW", "CAP_SYS_ADMIN"),
		  "CAP_SYS_ADMIN is beyond sandlot's capability set");
	parse_bad(replaced("CAP_NET_RAW", "CAP_BOGUS"), "unknown capability CAP_BOGUS");
	parse_bad(spec_with("",
			    ",\"uidMappings\":[{\"containerID\":0,\"hostID\":0,\"size\":"
			    "4294967295}]",
			    NULL),
		  "only one range of 65536");
	parse_bad(replaced("net.ipv4.ip_forward", "../../x"), "linux.sysctl");
	parse_bad(spec_with("", "",
			    "{\"type\":\"pid\"},{\"type\":\"network\"},{\"type\":\"mount\","
			    "\"path\":\"/proc/42/ns/mnt\"},{\"type\":\"ipc\"},{\"type\":\"uts\"}"),
		  "joining the mount namespace /proc/42/ns/mnt is not supported");
	parse_bad(spec_with("",
			    ",\"devices\":[{\"path\":\"/dev/sda\",\"type\":\"b\","
			    "\"major\":8,\"minor\":0}]",
			    NULL),
		  "linux.devices: device nodes from the host are refused");
	parse_bad(
	    replaced("\"hostname\":\"h\",",
		     "\"hostname\":\"h\",\"hooks\":{\"createContainer\":[{\"path\":\"/x\"}]},"),
	    "hooks.createContainer: hooks run inside the container's namespaces are not "
	    "supported");
	parse_bad(replaced("\"hostname\":\"h\",",
			   "\"hostname\":\"h\",\"hooks\":{\"prestart\":[{\"path\":\"true\"}]},"),
		  "hooks.prestart[0].path: missing or not absolute");
	/* Empty lists (what engines write when there is nothing) are fine. */
	oci_spec s;
	parse_ok(replaced("\"hostname\":\"h\",",
			  "\"hostname\":\"h\",\"hooks\":{\"prestart\":[],\"poststop\":null},"),
		 &s);
	oci_spec_free(&s);
	parse_ok(spec_with("", ",\"devices\":[]", NULL), &s);
	oci_spec_free(&s);
}

/* Hooks: every kind sandlot-oci runs, kept in the spec's text and read back in order. */
/* The base spec with FROM (once in it) replaced by TO. */
static char *spec_replaced(const char *from, const char *to)
{
	static char buf[8192];
	const char *base = spec_with("", "", NULL), *at = strstr(base, from);
	assert_non_null(at);
	snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - base), base, to, at + strlen(from));
	return buf;
}

/* Numbers past what their fields hold: runtime-spec's unlimited (2^64 - 1, a double of
 * 2^64) saturates; an id out of range or a non-array of gids is refused (fuzz_ocispec
 * found the unchecked casts). */
static void test_number_ranges(void **state)
{
	(void)state;
	oci_spec s;
	parse_ok(spec_replaced("\"soft\":1024,\"hard\":1024",
			       "\"soft\":18446744073709551615,\"hard\":1e24"),
		 &s);
	assert_true(s.proc.rlimits[0].soft == UINT64_MAX && s.proc.rlimits[0].hard == UINT64_MAX);
	oci_spec_free(&s);
	parse_ok(spec_replaced("\"limit\":1048576", "\"limit\":-1"), &s);
	assert_int_equal(s.limits.memory_bytes, 0);
	oci_spec_free(&s);
	parse_bad(spec_replaced("\"uid\":1000", "\"uid\":1e24"), "process.user");
	parse_bad(spec_replaced("\"uid\":1000", "\"uid\":-1"), "process.user");
	parse_bad(spec_replaced("\"gid\":100", "\"gid\":1.5"), "process.user");
	parse_bad(spec_replaced("[10,20]", "[10,4294967296]"), "additionalGids");
	parse_bad(spec_replaced("[10,20]", "{\"a\":1,\"b\":2}"), "not an array");
}

static void test_hooks(void **state)
{
	(void)state;
	oci_spec s;
	oci_hooks h;
	sl_err err = {0};
	parse_ok(replaced("\"hostname\":\"h\",",
			  "\"hostname\":\"h\",\"hooks\":{\"prestart\":[{\"path\":\"/bin/a\"},"
			  "{\"path\":\"/bin/b\",\"args\":[\"b\",\"1\"],\"env\":[\"X=1\"],"
			  "\"timeout\":5}],\"createRuntime\":[{\"path\":\"/c\"}],"
			  "\"poststart\":[{\"path\":\"/d\"}],\"poststop\":[{\"path\":\"/e\"}],"
			  "\"createContainer\":[]},"),
		 &s);
	assert_non_null(s.hooks_json);
	assert_int_equal(oci_hooks_parse(s.hooks_json, strlen(s.hooks_json), &h, &err), 0);
	assert_int_equal(h.n[OCI_HOOK_PRESTART], 2);
	assert_string_equal(h.list[OCI_HOOK_PRESTART][0].path, "/bin/a");
	assert_null(h.list[OCI_HOOK_PRESTART][0].args[0]);
	assert_int_equal(h.list[OCI_HOOK_PRESTART][0].timeout, 0);
	assert_string_equal(h.list[OCI_HOOK_PRESTART][1].args[1], "1");
	assert_string_equal(h.list[OCI_HOOK_PRESTART][1].env[0], "X=1");
	assert_int_equal(h.list[OCI_HOOK_PRESTART][1].timeout, 5);
	assert_string_equal(h.list[OCI_HOOK_CREATE_RUNTIME][0].path, "/c");
	assert_string_equal(h.list[OCI_HOOK_POSTSTART][0].path, "/d");
	assert_string_equal(h.list[OCI_HOOK_POSTSTOP][0].path, "/e");
	oci_hooks_free(&h);
	oci_spec_free(&s);
	const char *bad[][2] = {
	    {"{\"startContainer\":[{\"path\":\"/x\"}]}", "hooks.startContainer: hooks run inside"},
	    {"{\"prestop\":[{\"path\":\"/x\"}]}", "hooks.prestop: unknown hook"},
	    {"{\"poststop\":{\"path\":\"/x\"}}", "hooks.poststop: not an array"},
	    {"{\"poststart\":[{\"path\":\"/x\",\"timeout\":0}]}", "poststart[0].timeout"},
	    {"{\"poststart\":[{\"path\":\"/x\",\"args\":[1]}]}", "poststart[0].args[0]"},
	    {"[1]", "hooks: not an object"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&err, 0, sizeof(err));
		assert_int_equal(oci_hooks_parse(bad[i][0], strlen(bad[i][0]), &h, &err), -1);
		assert_int_equal(err.kind, SL_INVALID);
		if (!strstr(err.msg, bad[i][1]))
			fail_msg("%s: got %s", bad[i][0], err.msg);
	}
}

static void test_process_and_signals(void **state)
{
	(void)state;
	oci_process p;
	sl_err err = {0};
	const char *j = "{\"args\":[\"/bin/ls\"],\"cwd\":\"/tmp\",\"terminal\":true}";
	assert_int_equal(oci_process_parse(j, strlen(j), &p, &err), 0);
	assert_true(p.terminal);
	assert_string_equal(p.cwd, "/tmp");
	oci_process_free(&p);
	j = "{\"args\":[],\"cwd\":\"/\"}";
	assert_int_equal(oci_process_parse(j, strlen(j), &p, &err), -1);
	assert_non_null(strstr(err.msg, "process.args: empty"));
	j = "{\"args\":[\"x\"],\"cwd\":\"rel\"}";
	assert_int_equal(oci_process_parse(j, strlen(j), &p, &err), -1);
	assert_int_equal(oci_signal_parse("KILL"), SIGKILL);
	assert_int_equal(oci_signal_parse("SIGTERM"), SIGTERM);
	assert_int_equal(oci_signal_parse("9"), 9);
	assert_int_equal(oci_signal_parse("NOPE"), -1);
	sl_limits lim = {1, 2, 3};
	j = "{\"pids\":{\"limit\":10}}";
	assert_int_equal(oci_resources_parse(j, strlen(j), &lim, &err), 0);
	assert_int_equal(lim.pids_max, 10);
	assert_int_equal(lim.memory_bytes, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_full_spec), cmocka_unit_test(test_mapping_and_seccomp),
	    cmocka_unit_test(test_refusals),  cmocka_unit_test(test_number_ranges),
	    cmocka_unit_test(test_hooks),     cmocka_unit_test(test_process_and_signals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
