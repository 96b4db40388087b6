/* seccomp.c — OCI/Docker seccomp profile → libseccomp filter → BPF, with an on-disk
 * BPF cache so a sandbox start costs a hash and a read instead of a compile. */
#include "seccomp.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <nettle/sha2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cleanup.h"
#include "fsutil.h"
#include "log.h"

/* Bigger than any sane profile (Docker's is 13 KB); bounds what we read and hash. */
#define PROFILE_MAX (1 << 20)
/* Bumped when the compiler's output for the same inputs changes, to retire old caches. */
#define CACHE_FORMAT "sandlot-seccomp-cache-v1"

static void sl_seccomp_releasep(scmp_filter_ctx *ctx)
{
	if (*ctx)
		seccomp_release(*ctx);
}
#define _cleanup_seccomp_ __attribute__((cleanup(sl_seccomp_releasep)))

uint64_t seccomp_default_caps(void)
{
	static const int caps[] = {CAP_CHOWN,	CAP_DAC_OVERRIDE,     CAP_FOWNER,    CAP_FSETID,
				   CAP_KILL,	CAP_NET_BIND_SERVICE, CAP_SETFCAP,   CAP_SETGID,
				   CAP_SETPCAP, CAP_SETUID,	      CAP_SYS_CHROOT};
	uint64_t mask = 0;
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++)
		mask |= 1ULL << caps[i];
	return mask;
}

/* Profiles name caps as CAP_SYS_ADMIN; a name missing here (newer than these
 * headers) counts as not held, which only ever leaves a rule out. */
static const char *const cap_names[] = {
    [CAP_CHOWN] = "CHOWN",
    [CAP_DAC_OVERRIDE] = "DAC_OVERRIDE",
    [CAP_DAC_READ_SEARCH] = "DAC_READ_SEARCH",
    [CAP_FOWNER] = "FOWNER",
    [CAP_FSETID] = "FSETID",
    [CAP_KILL] = "KILL",
    [CAP_SETGID] = "SETGID",
    [CAP_SETUID] = "SETUID",
    [CAP_SETPCAP] = "SETPCAP",
    [CAP_LINUX_IMMUTABLE] = "LINUX_IMMUTABLE",
    [CAP_NET_BIND_SERVICE] = "NET_BIND_SERVICE",
    [CAP_NET_BROADCAST] = "NET_BROADCAST",
    [CAP_NET_ADMIN] = "NET_ADMIN",
    [CAP_NET_RAW] = "NET_RAW",
    [CAP_IPC_LOCK] = "IPC_LOCK",
    [CAP_IPC_OWNER] = "IPC_OWNER",
    [CAP_SYS_MODULE] = "SYS_MODULE",
    [CAP_SYS_RAWIO] = "SYS_RAWIO",
    [CAP_SYS_CHROOT] = "SYS_CHROOT",
    [CAP_SYS_PTRACE] = "SYS_PTRACE",
    [CAP_SYS_PACCT] = "SYS_PACCT",
    [CAP_SYS_ADMIN] = "SYS_ADMIN",
    [CAP_SYS_BOOT] = "SYS_BOOT",
    [CAP_SYS_NICE] = "SYS_NICE",
    [CAP_SYS_RESOURCE] = "SYS_RESOURCE",
    [CAP_SYS_TIME] = "SYS_TIME",
    [CAP_SYS_TTY_CONFIG] = "SYS_TTY_CONFIG",
    [CAP_MKNOD] = "MKNOD",
    [CAP_LEASE] = "LEASE",
    [CAP_AUDIT_WRITE] = "AUDIT_WRITE",
    [CAP_AUDIT_CONTROL] = "AUDIT_CONTROL",
    [CAP_SETFCAP] = "SETFCAP",
    [CAP_MAC_OVERRIDE] = "MAC_OVERRIDE",
    [CAP_MAC_ADMIN] = "MAC_ADMIN",
    [CAP_SYSLOG] = "SYSLOG",
    [CAP_WAKE_ALARM] = "WAKE_ALARM",
    [CAP_BLOCK_SUSPEND] = "BLOCK_SUSPEND",
    [CAP_AUDIT_READ] = "AUDIT_READ",
    [CAP_PERFMON] = "PERFMON",
    [CAP_BPF] = "BPF",
    [CAP_CHECKPOINT_RESTORE] = "CHECKPOINT_RESTORE",
};

static bool cap_held(const char *name, uint64_t caps)
{
	if (!strncasecmp(name, "CAP_", 4))
		name += 4;
	for (size_t i = 0; i < sizeof(cap_names) / sizeof(cap_names[0]); i++)
		if (cap_names[i] && !strcasecmp(name, cap_names[i]))
			return i < 64 && (caps >> i) & 1;
	return false;
}

/* Profiles spell arches as Go (amd64), as libseccomp (x86_64) or as the constant
 * (SCMP_ARCH_X86_64); all become libseccomp's token, 0 when unknown. */
static uint32_t arch_token(const char *name)
{
	static const char *const alias[][2] = {
	    {"amd64", "x86_64"},
	    {"386", "x86"},
	    {"i386", "x86"},
	    {"arm64", "aarch64"},
	    {"mipsle", "mipsel"},
	    {"mips64le", "mipsel64"},
	    {"mipsn32", "mips64n32"},
	    {"mips64n32le", "mipsel64n32"},
	    {"mipsn32le", "mipsel64n32"},
	    {"loong64", "loongarch64"},
	};
	char buf[32];
	if (!strncasecmp(name, "SCMP_ARCH_", 10))
		name += 10;
	size_t n = strlen(name);
	if (n == 0 || n >= sizeof(buf))
		return 0;
	for (size_t i = 0; i <= n; i++)
		buf[i] = tolower((unsigned char)name[i]);
	const char *lib = buf;
	for (size_t i = 0; i < sizeof(alias) / sizeof(alias[0]); i++)
		if (!strcmp(buf, alias[i][0]))
			lib = alias[i][1];
	return seccomp_arch_resolve_name(lib);
}

/* "6.18.44-fc" → {6, 18, 44}; missing parts are 0. */
static int kernel_version_parse(const char *s, unsigned v[3])
{
	v[0] = v[1] = v[2] = 0;
	for (int i = 0; i < 3; i++) {
		if (!isdigit((unsigned char)*s))
			return i > 0 ? 0 : -1;
		char *end;
		unsigned long x = strtoul(s, &end, 10);
		if (x > 1000000)
			return -1;
		v[i] = x;
		s = end;
		if (*s != '.')
			return 0;
		s++;
	}
	return 0;
}

static int kernel_version_cmp(const unsigned a[3], const unsigned b[3])
{
	for (int i = 0; i < 3; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return 0;
}

/* State of one compile: the inputs the rules are evaluated against and what we
 * collect along the way. */
struct compile {
	uint64_t caps;
	uint32_t native;
	unsigned kver[3];
	uint32_t default_action;
	int default_errno;
	/* A runtime spec's profile, taken as runc takes it (seccomp_spec_profile_compile):
	 * rules for one syscall that disagree are left to libseccomp to merge. */
	bool as_runc;
	/* Syscall names libseccomp does not know, comma-separated, for one warning. */
	char *unknown;
	size_t unknown_len;
	unsigned unknown_count;
	/* Rules added so far, to refuse a profile whose rules libseccomp would
	 * silently merge (the first unconditional action wins there). */
	struct added {
		int nr;
		uint32_t action;
		bool conditional;
		int rule;
	} * added;
	size_t nadded, added_cap;
};

static void compile_freep(struct compile *c)
{
	free(c->unknown);
	free(c->added);
}

static int note_unknown(struct compile *c, const char *name, sl_err *err)
{
	size_t n = strlen(name);
	if (c->unknown) {
		/* The same name in several rules is one unknown name. */
		for (const char *p = c->unknown; (p = strstr(p, name)); p += n)
			if ((p == c->unknown || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0'))
				return 0;
	}
	char *grown = realloc(c->unknown, c->unknown_len + n + 3);
	if (!grown)
		return sl_fail(err, SL_EXHAUSTED, ENOMEM, "seccomp profile: unknown syscall list");
	c->unknown = grown;
	c->unknown_len +=
	    sprintf(c->unknown + c->unknown_len, "%s%s", c->unknown_count ? ", " : "", name);
	c->unknown_count++;
	return 0;
}

static int note_added(struct compile *c, int nr, const char *name, uint32_t action,
		      bool conditional, int rule, sl_err *err)
{
	for (size_t i = 0; i < c->nadded; i++) {
		const struct added *a = &c->added[i];
		if (!c->as_runc && a->nr == nr && a->action != action &&
		    (!a->conditional || !conditional))
			return sl_fail(
			    err, SL_INVALID, 0,
			    "seccomp profile: syscalls[%d]: \"%s\" already has a different "
			    "action from syscalls[%d]; an unconditional rule would "
			    "override the other, so give each syscall one action "
			    "(or make the rules exclusive with includes/excludes)",
			    rule, name, a->rule);
	}
	if (c->nadded == c->added_cap) {
		size_t cap = c->added_cap ? c->added_cap * 2 : 256;
		struct added *grown = realloc(c->added, cap * sizeof(*grown));
		if (!grown)
			return sl_fail(err, SL_EXHAUSTED, ENOMEM, "seccomp profile: rule table");
		c->added = grown;
		c->added_cap = cap;
	}
	c->added[c->nadded++] = (struct added){nr, action, conditional, rule};
	return 0;
}

/* An integral JSON number in [0, max]. cJSON keeps numbers as doubles, so values
 * past 2^53 cannot be read exactly and are refused rather than rounded. */
static int json_uint(const cJSON *item, uint64_t max, uint64_t *out)
{
	if (!cJSON_IsNumber(item))
		return -1;
	double d = item->valuedouble;
	if (d < 0 || d > 9007199254740992.0 || d > (double)max || d != (double)(uint64_t)d)
		return -1;
	*out = (uint64_t)d;
	return 0;
}

/* An action name plus its errnoRet; FIELD names the rule ("syscalls[3]"), NULL is
 * the profile's defaultAction. */
static int parse_action(const cJSON *name, const cJSON *errno_ret, int default_errno,
			const char *field, uint32_t *out, sl_err *err)
{
	char act_field[48];
	snprintf(act_field, sizeof(act_field), "%s%s", field ? field : "defaultAction",
		 field ? ".action" : "");
	if (!cJSON_IsString(name))
		return sl_fail(err, SL_INVALID, 0, "seccomp profile: %s: missing or not a string",
			       act_field);
	uint64_t ret = default_errno >= 0 ? (uint64_t)default_errno : EPERM;
	const char *a = name->valuestring;
	bool takes_ret = !strcmp(a, "SCMP_ACT_ERRNO") || !strcmp(a, "SCMP_ACT_TRACE");
	if (errno_ret && !cJSON_IsNull(errno_ret)) {
		uint64_t max = !strcmp(a, "SCMP_ACT_TRACE") ? 0xffff : 4095;
		if (json_uint(errno_ret, max, &ret) < 0)
			return sl_fail(err, SL_INVALID, 0,
				       "seccomp profile: %s.errnoRet: want an integer 0..%llu",
				       field, (unsigned long long)max);
		if (!takes_ret)
			return sl_fail(err, SL_INVALID, 0,
				       "seccomp profile: %s.errnoRet: only SCMP_ACT_ERRNO and "
				       "SCMP_ACT_TRACE take one, not %s",
				       field, a);
	}
	if (!strcmp(a, "SCMP_ACT_ALLOW"))
		*out = SCMP_ACT_ALLOW;
	else if (!strcmp(a, "SCMP_ACT_ERRNO"))
		*out = SCMP_ACT_ERRNO(ret);
	else if (!strcmp(a, "SCMP_ACT_TRACE"))
		*out = SCMP_ACT_TRACE(ret);
	else if (!strcmp(a, "SCMP_ACT_KILL") || !strcmp(a, "SCMP_ACT_KILL_THREAD"))
		*out = SCMP_ACT_KILL_THREAD;
	else if (!strcmp(a, "SCMP_ACT_KILL_PROCESS"))
		*out = SCMP_ACT_KILL_PROCESS;
	else if (!strcmp(a, "SCMP_ACT_TRAP"))
		*out = SCMP_ACT_TRAP;
	else if (!strcmp(a, "SCMP_ACT_LOG"))
		*out = SCMP_ACT_LOG;
	else
		return sl_fail(err, SL_INVALID, 0,
			       "seccomp profile: %s: unknown action \"%s\" (want "
			       "SCMP_ACT_ALLOW, _ERRNO, _KILL, _KILL_THREAD, _KILL_PROCESS, _TRAP, "
			       "_LOG or _TRACE)",
			       act_field, a);
	return 0;
}

static int parse_op(const cJSON *op, const char *field, enum scmp_compare *out, sl_err *err)
{
	static const struct {
		const char *name;
		enum scmp_compare op;
	} ops[] = {
	    {"SCMP_CMP_NE", SCMP_CMP_NE},
	    {"SCMP_CMP_LT", SCMP_CMP_LT},
	    {"SCMP_CMP_LE", SCMP_CMP_LE},
	    {"SCMP_CMP_EQ", SCMP_CMP_EQ},
	    {"SCMP_CMP_GE", SCMP_CMP_GE},
	    {"SCMP_CMP_GT", SCMP_CMP_GT},
	    {"SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ},
	};
	if (!cJSON_IsString(op))
		return sl_fail(err, SL_INVALID, 0,
			       "seccomp profile: %s.op: missing or not a string", field);
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(op->valuestring, ops[i].name)) {
			*out = ops[i].op;
			return 0;
		}
	return sl_fail(err, SL_INVALID, 0,
		       "seccomp profile: %s.op: unknown operator \"%s\" (want SCMP_CMP_NE, _LT, "
		       "_LE, _EQ, _GE, _GT or _MASKED_EQ)",
		       field, op->valuestring);
}

/* args[] of rule RULE into CONDS (at most 6, one per argument: libseccomp cannot
 * AND two comparisons of the same argument). AS_RUNC: up to 6 of any arguments, *REPEATS
 * set when one argument is compared twice (runc then adds each comparison as a rule of
 * its own, an OR where the profile wrote an AND; so does add_rule). */
static int parse_args(const cJSON *args, int rule, bool as_runc, struct scmp_arg_cmp conds[6],
		      unsigned *n, bool *repeats, sl_err *err)
{
	*n = 0;
	*repeats = false;
	if (!args || cJSON_IsNull(args))
		return 0;
	if (!cJSON_IsArray(args))
		return sl_fail(err, SL_INVALID, 0,
			       "seccomp profile: syscalls[%d].args: not an array", rule);
	unsigned seen = 0;
	int i = 0;
	for (const cJSON *a = args->child; a; a = a->next, i++) {
		char field[64];
		snprintf(field, sizeof(field), "syscalls[%d].args[%d]", rule, i);
		if (!cJSON_IsObject(a))
			return sl_fail(err, SL_INVALID, 0, "seccomp profile: %s: not an object",
				       field);
		uint64_t index, value, value2 = 0;
		if (json_uint(cJSON_GetObjectItemCaseSensitive(a, "index"), 5, &index) < 0)
			return sl_fail(err, SL_INVALID, 0,
				       "seccomp profile: %s.index: want an integer 0..5", field);
		if (json_uint(cJSON_GetObjectItemCaseSensitive(a, "value"), UINT64_MAX, &value) < 0)
			return sl_fail(err, SL_INVALID, 0,
				       "seccomp profile: %s.value: want an integer 0..2^53", field);
		const cJSON *v2 = cJSON_GetObjectItemCaseSensitive(a, "valueTwo");
		if (v2 && !cJSON_IsNull(v2) && json_uint(v2, UINT64_MAX, &value2) < 0)
			return sl_fail(err, SL_INVALID, 0,
				       "seccomp profile: %s.valueTwo: want an integer 0..2^53",
				       field);
		enum scmp_compare op = SCMP_CMP_EQ;
		if (parse_op(cJSON_GetObjectItemCaseSensitive(a, "op"), field, &op, err) < 0)
			return -1;
		if (*n == 6)
			return sl_fail(err, SL_INVALID, 0,
				       "seccomp profile: %s: more than 6 comparisons in one rule",
				       field);
		if (seen & (1u << index) && as_runc)
			*repeats = true;
		else if (seen & (1u << index))
			return sl_fail(
			    err, SL_INVALID, 0,
			    "seccomp profile: %s.index: argument %llu is already compared "
			    "in this rule; libseccomp cannot AND two comparisons of one "
			    "argument, split them into separate rules",
			    field, (unsigned long long)index);
		seen |= 1u << index;
		conds[(*n)++] = (struct scmp_arg_cmp){
		    .arg = index, .op = op, .datum_a = value, .datum_b = value2};
	}
	return 0;
}

/* Whether the rule's includes/excludes select it for these caps, arch and kernel. */
static int rule_applies(const struct compile *c, const cJSON *rule, int idx, bool *applies,
			sl_err *err)
{
	static const char *const which[] = {"includes", "excludes"};
	*applies = true;
	for (int w = 0; w < 2; w++) {
		bool inc = w == 0;
		const cJSON *sel = cJSON_GetObjectItemCaseSensitive(rule, which[w]);
		if (!sel || cJSON_IsNull(sel))
			continue;
		if (!cJSON_IsObject(sel))
			return sl_fail(err, SL_INVALID, 0,
				       "seccomp profile: syscalls[%d].%s: not an object", idx,
				       which[w]);
		const cJSON *caps = cJSON_GetObjectItemCaseSensitive(sel, "caps");
		const cJSON *arches = cJSON_GetObjectItemCaseSensitive(sel, "arches");
		if ((caps && !cJSON_IsNull(caps) && !cJSON_IsArray(caps)) ||
		    (arches && !cJSON_IsNull(arches) && !cJSON_IsArray(arches)))
			return sl_fail(
			    err, SL_INVALID, 0,
			    "seccomp profile: syscalls[%d].%s.%s: not an array of strings", idx,
			    which[w], caps && !cJSON_IsArray(caps) ? "caps" : "arches");
		/* Docker's rule: includes needs every cap listed, excludes any one. */
		int n = 0;
		for (const cJSON *cap = caps ? caps->child : NULL; cap; cap = cap->next, n++) {
			if (!cJSON_IsString(cap))
				return sl_fail(
				    err, SL_INVALID, 0,
				    "seccomp profile: syscalls[%d].%s.caps[%d]: not a string", idx,
				    which[w], n);
			if (cap_held(cap->valuestring, c->caps) != inc)
				*applies = false;
		}
		/* Only the native arch decides; sub-arches share the native's rules. */
		if (cJSON_GetArraySize(arches) > 0) {
			bool match = false;
			n = 0;
			for (const cJSON *a = arches->child; a; a = a->next, n++) {
				if (!cJSON_IsString(a))
					return sl_fail(
					    err, SL_INVALID, 0,
					    "seccomp profile: syscalls[%d].%s.arches[%d]: "
					    "not a string",
					    idx, which[w], n);
				match |= arch_token(a->valuestring) == c->native;
			}
			if (match != inc)
				*applies = false;
		}
		const cJSON *mk = cJSON_GetObjectItemCaseSensitive(sel, "minKernel");
		if (mk && !cJSON_IsNull(mk)) {
			unsigned want[3];
			if (!inc || !cJSON_IsString(mk) ||
			    kernel_version_parse(mk->valuestring, want) < 0)
				return sl_fail(err, SL_INVALID, 0,
					       "seccomp profile: syscalls[%d].%s.minKernel: want a "
					       "version string like \"4.8\" under includes",
					       idx, which[w]);
			if (kernel_version_cmp(c->kver, want) < 0)
				*applies = false;
		}
	}
	return 0;
}

static int add_rule(struct compile *c, scmp_filter_ctx ctx, const cJSON *rule, int idx, sl_err *err)
{
	char field[32];
	snprintf(field, sizeof(field), "syscalls[%d]", idx);
	if (!cJSON_IsObject(rule))
		return sl_fail(err, SL_INVALID, 0, "seccomp profile: %s: not an object", field);
	const cJSON *names = cJSON_GetObjectItemCaseSensitive(rule, "names");
	const cJSON *single = cJSON_GetObjectItemCaseSensitive(rule, "name");
	if (names ? !cJSON_IsArray(names) : !cJSON_IsString(single))
		return sl_fail(err, SL_INVALID, 0,
			       "seccomp profile: %s.names: missing or not an array of strings",
			       field);
	uint32_t action;
	if (parse_action(cJSON_GetObjectItemCaseSensitive(rule, "action"),
			 cJSON_GetObjectItemCaseSensitive(rule, "errnoRet"), c->default_errno,
			 field, &action, err) < 0)
		return -1;
	struct scmp_arg_cmp conds[6];
	unsigned nconds;
	bool repeats;
	if (parse_args(cJSON_GetObjectItemCaseSensitive(rule, "args"), idx, c->as_runc, conds,
		       &nconds, &repeats, err) < 0)
		return -1;
	bool applies;
	if (rule_applies(c, rule, idx, &applies, err) < 0)
		return -1;
	/* libseccomp refuses rules that repeat the default action; they are no-ops. */
	if (!applies || action == c->default_action)
		return 0;
	int n = 0;
	for (const cJSON *nm = names ? names->child : single; nm;
	     nm = names ? nm->next : NULL, n++) {
		if (!cJSON_IsString(nm))
			return sl_fail(err, SL_INVALID, 0,
				       "seccomp profile: %s.names[%d]: not a string", field, n);
		int nr = seccomp_syscall_resolve_name(nm->valuestring);
		if (nr == __NR_SCMP_ERROR) {
			if (note_unknown(c, nm->valuestring, err) < 0)
				return -1;
			continue;
		}
		if (note_added(c, nr, nm->valuestring, action, nconds > 0, idx, err) < 0)
			return -1;
		int rc = 0;
		for (unsigned k = 0; repeats && k < nconds && rc == 0; k++)
			rc = seccomp_rule_add_array(ctx, action, nr, 1, &conds[k]);
		if (!repeats)
			rc = seccomp_rule_add_array(ctx, action, nr, nconds, conds);
		if (rc < 0)
			return sl_fail(
			    err, SL_INVALID, -rc,
			    "seccomp profile: %s: libseccomp refused the rule for \"%s\"", field,
			    nm->valuestring);
	}
	return 0;
}

/* The native arch plus the sub-arches archMap (or the older "architectures" list)
 * names for it; arches this libseccomp does not support are left out. */
static int add_arches(const struct compile *c, scmp_filter_ctx ctx, const cJSON *root, sl_err *err)
{
	const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "archMap");
	const cJSON *subs = NULL;
	if (map && !cJSON_IsNull(map)) {
		if (!cJSON_IsArray(map))
			return sl_fail(err, SL_INVALID, 0,
				       "seccomp profile: archMap: not an array");
		int i = 0;
		for (const cJSON *e = map->child; e; e = e->next, i++) {
			const cJSON *arch = cJSON_GetObjectItemCaseSensitive(e, "architecture");
			const cJSON *sub = cJSON_GetObjectItemCaseSensitive(e, "subArchitectures");
			if (!cJSON_IsString(arch) ||
			    (sub && !cJSON_IsNull(sub) && !cJSON_IsArray(sub)))
				return sl_fail(
				    err, SL_INVALID, 0,
				    "seccomp profile: archMap[%d]: want {\"architecture\": "
				    "string, \"subArchitectures\": [strings]}",
				    i);
			if (arch_token(arch->valuestring) == c->native)
				subs = cJSON_IsArray(sub) ? sub : NULL;
		}
	} else {
		subs = cJSON_GetObjectItemCaseSensitive(root, "architectures");
		if (subs && !cJSON_IsNull(subs) && !cJSON_IsArray(subs))
			return sl_fail(err, SL_INVALID, 0,
				       "seccomp profile: architectures: not an array");
	}
	int i = 0;
	for (const cJSON *s = cJSON_IsArray(subs) ? subs->child : NULL; s; s = s->next, i++) {
		if (!cJSON_IsString(s))
			return sl_fail(
			    err, SL_INVALID, 0,
			    "seccomp profile: sub-architecture %d of the native arch: not "
			    "a string",
			    i);
		uint32_t arch = arch_token(s->valuestring);
		if (arch == c->native)
			continue;
		int rc = arch ? seccomp_arch_add(ctx, arch) : -EINVAL;
		if (rc < 0 && rc != -EEXIST)
			sl_log(SL_LOG_DEBUG, "seccomp profile: arch %s not added: %s",
			       s->valuestring, strerror(-rc));
	}
	return 0;
}

static int compile_defaults(struct compile *c, const cJSON *root, sl_err *err)
{
	const cJSON *def_errno = cJSON_GetObjectItemCaseSensitive(root, "defaultErrnoRet");
	c->default_errno = -1;
	if (def_errno && !cJSON_IsNull(def_errno)) {
		uint64_t v;
		if (json_uint(def_errno, 4095, &v) < 0)
			return sl_fail(err, SL_INVALID, 0,
				       "seccomp profile: defaultErrnoRet: want an integer 0..4095");
		c->default_errno = v;
	}
	const cJSON *def = cJSON_GetObjectItemCaseSensitive(root, "defaultAction");
	return parse_action(def, NULL, c->default_errno, NULL, &c->default_action, err);
}

/* The split of a compiled profile (CTX, rules added) around HELD: each must be left to the
 * default action by the profile's rules for these caps, arch and kernel, or the two
 * filters would not add up to the profile. CTX then allows them, and *LAST denies them
 * with that default action. */
static int split_held(const struct compile *c, scmp_filter_ctx ctx, const cJSON *root,
		      const char *const *held, scmp_filter_ctx *last, sl_err *err)
{
	if (c->default_action == SCMP_ACT_ALLOW)
		return sl_fail(err, SL_INVALID, 0,
			       "seccomp profile: allows by default: nothing to split");
	_cleanup_seccomp_ scmp_filter_ctx deny = seccomp_init(SCMP_ACT_ALLOW);
	if (!deny)
		return sl_fail(err, SL_INTERNAL, 0, "seccomp profile: seccomp_init failed");
	seccomp_attr_set(deny, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	seccomp_attr_set(deny, SCMP_FLTATR_API_SYSRAWRC, 1);
	if (add_arches(c, deny, root, err) < 0)
		return -1;
	for (const char *const *h = held; *h; h++) {
		int nr = seccomp_syscall_resolve_name(*h);
		if (nr == __NR_SCMP_ERROR)
			return sl_fail(err, SL_INVALID, 0,
				       "seccomp profile: cannot split at \"%s\": unknown to "
				       "libseccomp",
				       *h);
		for (size_t i = 0; i < c->nadded; i++)
			if (c->added[i].nr == nr)
				return sl_fail(err, SL_INVALID, 0,
					       "seccomp profile: cannot split at \"%s\": "
					       "syscalls[%d] has a rule for it",
					       *h, c->added[i].rule);
		int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
		if (rc == 0)
			rc = seccomp_rule_add(deny, c->default_action, nr, 0);
		if (rc < 0)
			return sl_fail(err, SL_INTERNAL, -rc,
				       "seccomp profile: split at \"%s\": libseccomp refused it",
				       *h);
	}
	*last = steal_ptr(&deny);
	return 0;
}

/* The profile compiled into *OUT; with HELD (syscall names, NULL-terminated), split in
 * two (seccomp_bpf_get_split): *OUT allows HELD as well, and *LAST denies HELD with the
 * default action and allows the rest. */
static int profile_compile(const char *json, size_t len, uint64_t caps, const char *kernel_release,
			   bool as_runc, const char *const *held, scmp_filter_ctx *out,
			   scmp_filter_ctx *last, sl_err *err)
{
	*out = NULL;
	if (last)
		*last = NULL;
	struct utsname uts;
	if (!kernel_release) {
		if (uname(&uts) < 0)
			return sl_sysfail(err, "seccomp profile: uname");
		kernel_release = uts.release;
	}
	__attribute__((cleanup(compile_freep))) struct compile c = {.caps = caps,
								    .as_runc = as_runc};
	c.native = seccomp_arch_native();
	if (kernel_version_parse(kernel_release, c.kver) < 0)
		return sl_fail(err, SL_INVALID, 0,
			       "seccomp profile: kernel release \"%s\": not a version",
			       kernel_release);

	_cleanup_cjson_ cJSON *root = cJSON_ParseWithLength(json, len);
	if (!root) {
		const char *at = cJSON_GetErrorPtr();
		long off = at && at >= json && at <= json + len ? (long)(at - json) : -1;
		return sl_fail(err, SL_INVALID, 0, "seccomp profile: malformed JSON near byte %ld",
			       off);
	}
	if (!cJSON_IsObject(root))
		return sl_fail(err, SL_INVALID, 0, "seccomp profile: top level is not an object");
	if (compile_defaults(&c, root, err) < 0)
		return -1;
	const cJSON *rules = cJSON_GetObjectItemCaseSensitive(root, "syscalls");
	if (rules && !cJSON_IsNull(rules) && !cJSON_IsArray(rules))
		return sl_fail(err, SL_INVALID, 0, "seccomp profile: syscalls: not an array");

	_cleanup_seccomp_ scmp_filter_ctx ctx = seccomp_init(c.default_action);
	if (!ctx)
		return sl_fail(err, SL_INTERNAL, 0, "seccomp profile: seccomp_init failed");
	/* A binary tree instead of a linear chain: each syscall then costs ~log2(400)
	 * comparisons instead of up to 400. Raw rc gives us real errno values. */
	seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1);
	/* Arches first: rules only reach the arches present when they are added. */
	if (add_arches(&c, ctx, root, err) < 0)
		return -1;
	int i = 0;
	for (const cJSON *r = rules ? rules->child : NULL; r; r = r->next, i++)
		if (add_rule(&c, ctx, r, i, err) < 0)
			return -1;
	if (c.unknown_count) {
		const struct scmp_version *v = seccomp_version();
		sl_log(SL_LOG_WARN,
		       "seccomp profile: skipped %u syscall name(s) unknown to libseccomp "
		       "%u.%u.%u: %s",
		       c.unknown_count, v->major, v->minor, v->micro, c.unknown);
	}
	if (held && split_held(&c, ctx, root, held, last, err) < 0)
		return -1;
	*out = steal_ptr(&ctx);
	return 0;
}

int seccomp_profile_compile(const char *json, size_t len, uint64_t caps, const char *kernel_release,
			    scmp_filter_ctx *out, sl_err *err)
{
	return profile_compile(json, len, caps, kernel_release, false, NULL, out, NULL, err);
}

int seccomp_spec_profile_compile(const char *json, size_t len, uint64_t caps,
				 const char *kernel_release, scmp_filter_ctx *out, sl_err *err)
{
	return profile_compile(json, len, caps, kernel_release, true, NULL, out, NULL, err);
}

static int read_all(int fd, void *buf, size_t len)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = read(fd, (char *)buf + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0) {
			errno = EIO; /* shorter than fstat said: changed under us */
			return -1;
		}
		done += n;
	}
	return 0;
}

static int profile_read(const char *path, char **out, size_t *len, sl_err *err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return sl_fail(err, errno == ENOENT ? SL_NOTFOUND : SL_INTERNAL, errno,
			       "seccomp profile %s: open", path);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return sl_sysfail(err, "seccomp profile %s: stat", path);
	if (!S_ISREG(st.st_mode))
		return sl_fail(err, SL_INVALID, 0, "seccomp profile %s: not a regular file", path);
	if (st.st_size > PROFILE_MAX)
		return sl_fail(err, SL_TOOLARGE, 0, "seccomp profile %s: %lld bytes, limit is %d",
			       path, (long long)st.st_size, PROFILE_MAX);
	_cleanup_free_ char *buf = malloc(st.st_size + 1);
	if (!buf)
		return sl_fail(err, SL_EXHAUSTED, ENOMEM, "seccomp profile %s", path);
	if (read_all(fd, buf, st.st_size) < 0)
		return sl_sysfail(err, "seccomp profile %s: read", path);
	buf[st.st_size] = '\0';
	*len = st.st_size;
	*out = steal_ptr(&buf);
	return 0;
}

/* Hex SHA-256 of everything that decides the compiled program; VARIANT names one half
 * of a split profile ("" for the whole). */
static int cache_key(const char *profile, size_t len, uint64_t caps, const char *release,
		     const char *variant, char hex[65], sl_err *err)
{
	const struct scmp_version *v = seccomp_version();
	uint32_t arch = seccomp_arch_native();
	uint32_t ver[3] = {v->major, v->minor, v->micro};
	uint8_t md[SHA256_DIGEST_SIZE];
	unsigned mdlen = SHA256_DIGEST_SIZE;
	struct sha256_ctx h;
	sha256_init(&h);
	sha256_update(&h, sizeof(CACHE_FORMAT), (const uint8_t *)CACHE_FORMAT);
	sha256_update(&h, sizeof(len), (const uint8_t *)&len);
	sha256_update(&h, len, (const uint8_t *)profile);
	sha256_update(&h, sizeof(caps), (const uint8_t *)&caps);
	sha256_update(&h, sizeof(arch), (const uint8_t *)&arch);
	sha256_update(&h, strlen(release) + 1, (const uint8_t *)release);
	sha256_update(&h, sizeof(ver), (const uint8_t *)ver);
	if (*variant)
		sha256_update(&h, strlen(variant) + 1, (const uint8_t *)variant);
	sha256_digest(&h, sizeof(md), md);
	(void)err;
	for (unsigned i = 0; i < mdlen; i++)
		sprintf(hex + 2 * i, "%02x", md[i]);
	return 0;
}

static bool bpf_size_sane(off_t size)
{
	return size > 0 && size % sizeof(struct sock_filter) == 0 &&
	       size / sizeof(struct sock_filter) <= BPF_MAXINSNS;
}

/* A cached program, or 1 when there is none we trust (missing, wrong size, not
 * ours, writable by others): the caller then compiles and rewrites it. */
static int cache_load(const char *path, sl_bpf *out)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		if (errno != ENOENT)
			sl_log(SL_LOG_DEBUG, "seccomp cache %s: open: %s", path, strerror(errno));
		return 1;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022) || !bpf_size_sane(st.st_size)) {
		sl_log(SL_LOG_INFO, "seccomp cache %s: ignored (bad size, type or owner)", path);
		return 1;
	}
	_cleanup_free_ struct sock_filter *insns = malloc(st.st_size);
	if (!insns || read_all(fd, insns, st.st_size) < 0) {
		sl_log(SL_LOG_INFO, "seccomp cache %s: unreadable, recompiling", path);
		return 1;
	}
	out->len = st.st_size / sizeof(struct sock_filter);
	out->insns = steal_ptr(&insns);
	return 0;
}

/* libseccomp 2.5 exports only to an fd; a memfd keeps that off the disk. */
static int bpf_export(scmp_filter_ctx ctx, sl_bpf *out, sl_err *err)
{
	_cleanup_close_ int fd = memfd_create("sandlot-seccomp", MFD_CLOEXEC);
	if (fd < 0)
		return sl_sysfail(err, "seccomp: memfd_create");
	int rc = seccomp_export_bpf(ctx, fd);
	if (rc < 0)
		return sl_fail(err, SL_INTERNAL, -rc, "seccomp: export BPF");
	off_t size = lseek(fd, 0, SEEK_CUR);
	if (size < 0 || lseek(fd, 0, SEEK_SET) < 0)
		return sl_sysfail(err, "seccomp: seek exported BPF");
	if (!bpf_size_sane(size))
		return sl_fail(err, SL_TOOLARGE, 0,
			       "seccomp: compiled program is %lld bytes, more than the kernel's "
			       "%d instructions or not whole instructions",
			       (long long)size, BPF_MAXINSNS);
	_cleanup_free_ struct sock_filter *insns = malloc(size);
	if (!insns)
		return sl_fail(err, SL_EXHAUSTED, ENOMEM, "seccomp: exported BPF");
	if (read_all(fd, insns, size) < 0)
		return sl_sysfail(err, "seccomp: read exported BPF");
	out->len = size / sizeof(struct sock_filter);
	out->insns = steal_ptr(&insns);
	return 0;
}

static int mkdir_p(const char *dir, mode_t mode)
{
	_cleanup_free_ char *p = strdup(dir);
	if (!p)
		return -1;
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST)
			return -1;
		*s = c;
		if (!c)
			return 0;
	}
}

/* temp file + fsync + rename: readers see the old file, no file, or the whole new one. */
static int cache_store(const char *dir, const char *path, const sl_bpf *bpf, sl_err *err)
{
	if (mkdir_p(dir, 0700) < 0)
		return sl_sysfail(err, "seccomp cache %s: mkdir", dir);
	char tmp[4096];
	if (snprintf(tmp, sizeof(tmp), "%s/.tmp-bpf-XXXXXX", dir) >= (int)sizeof(tmp))
		return sl_fail(err, SL_INVALID, 0, "seccomp cache %s: path too long", dir);
	_cleanup_close_ int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return sl_sysfail(err, "seccomp cache %s: create temp file", dir);
	if (fchmod(fd, 0600) < 0 ||
	    fs_write_all(fd, bpf->insns, bpf->len * sizeof(struct sock_filter), -1) < 0 ||
	    fsync(fd) < 0 || rename(tmp, path) < 0) {
		int saved = errno;
		unlink(tmp);
		return sl_fail(err, SL_INTERNAL, saved, "seccomp cache %s: write", path);
	}
	return 0;
}

/* The cache's file for VARIANT of the profile text, or -1. */
static int cache_file(const char *cache_dir, const char *profile, size_t len, uint64_t caps,
		      const char *release, const char *variant, char *path, size_t size,
		      sl_err *err)
{
	char key[65];
	if (cache_key(profile, len, caps, release, variant, key, err) < 0)
		return -1;
	if (snprintf(path, size, "%s/%s.bpf", cache_dir, key) >= (int)size)
		return sl_fail(err, SL_INVALID, 0, "seccomp cache %s: path too long", cache_dir);
	return 0;
}

/* The cache only saves time: a read-only or full disk must not stop a sandbox. */
static void cache_store_logged(const char *cache_dir, const char *path, const sl_bpf *bpf)
{
	sl_err cerr = {0};
	if (cache_store(cache_dir, path, bpf, &cerr) < 0)
		sl_log(SL_LOG_WARN, "%s (compiling on every start until fixed)", cerr.msg);
}

/* The profile's text and the kernel it is compiled for: what a cache key is made of. */
static int profile_and_kernel(const char *path, char **profile, size_t *len, struct utsname *uts,
			      sl_err *err)
{
	if (profile_read(path, profile, len, err) < 0)
		return -1;
	if (uname(uts) < 0)
		return sl_sysfail(err, "seccomp: uname");
	return 0;
}

/* seccomp_bpf_get, or with AS_RUNC seccomp_bpf_get_spec: the two are cached apart. */
static int bpf_get(const char *profile_path, const char *cache_dir, uint64_t caps, bool as_runc,
		   sl_bpf *out, sl_err *err)
{
	*out = (sl_bpf){0};
	_cleanup_free_ char *profile = NULL;
	size_t len = 0;
	struct utsname uts;
	if (profile_and_kernel(profile_path, &profile, &len, &uts, err) < 0)
		return -1;
	char path[4096];
	if (cache_file(cache_dir, profile, len, caps, uts.release, as_runc ? "runc" : "", path,
		       sizeof(path), err) < 0)
		return -1;
	if (cache_load(path, out) == 0)
		return 0;

	_cleanup_seccomp_ scmp_filter_ctx ctx = NULL;
	if (profile_compile(profile, len, caps, uts.release, as_runc, NULL, &ctx, NULL, err) < 0)
		return sl_wrap(err, "%s", profile_path);
	if (bpf_export(ctx, out, err) < 0)
		return sl_wrap(err, "%s", profile_path);
	cache_store_logged(cache_dir, path, out);
	return 0;
}

int seccomp_bpf_get(const char *profile_path, const char *cache_dir, uint64_t caps, sl_bpf *out,
		    sl_err *err)
{
	return bpf_get(profile_path, cache_dir, caps, false, out, err);
}

int seccomp_bpf_get_spec(const char *profile_path, const char *cache_dir, uint64_t caps,
			 sl_bpf *out, sl_err *err)
{
	return bpf_get(profile_path, cache_dir, caps, true, out, err);
}

int seccomp_bpf_get_split(const char *profile_path, const char *cache_dir, uint64_t caps,
			  const char *const *held, sl_bpf *ahead, sl_bpf *last, sl_err *err)
{
	*ahead = *last = (sl_bpf){0};
	_cleanup_free_ char *profile = NULL;
	size_t len = 0;
	struct utsname uts;
	if (profile_and_kernel(profile_path, &profile, &len, &uts, err) < 0)
		return -1;
	char names[512] = "", va[600], vl[600];
	size_t off = 0;
	for (const char *const *h = held; *h; h++) {
		int n = snprintf(names + off, sizeof(names) - off, "%s,", *h);
		if (n < 0 || (size_t)n >= sizeof(names) - off)
			return sl_fail(err, SL_INVALID, 0, "seccomp: split: too many names");
		off += n;
	}
	snprintf(va, sizeof(va), "ahead:%s", names);
	snprintf(vl, sizeof(vl), "last:%s", names);
	char pa[4096], pl[4096];
	if (cache_file(cache_dir, profile, len, caps, uts.release, va, pa, sizeof(pa), err) < 0 ||
	    cache_file(cache_dir, profile, len, caps, uts.release, vl, pl, sizeof(pl), err) < 0)
		return -1;
	if (cache_load(pa, ahead) == 0 && cache_load(pl, last) == 0)
		return 0;
	seccomp_bpf_free(ahead);
	seccomp_bpf_free(last);

	_cleanup_seccomp_ scmp_filter_ctx a = NULL, l = NULL;
	if (profile_compile(profile, len, caps, uts.release, false, held, &a, &l, err) < 0 ||
	    bpf_export(a, ahead, err) < 0 || bpf_export(l, last, err) < 0) {
		seccomp_bpf_free(ahead);
		return sl_wrap(err, "%s", profile_path);
	}
	cache_store_logged(cache_dir, pa, ahead);
	cache_store_logged(cache_dir, pl, last);
	return 0;
}

int seccomp_bpf_install(const sl_bpf *bpf, sl_err *err)
{
	if (!bpf || !bpf->insns || bpf->len == 0)
		return sl_fail(err, SL_INVALID, 0, "seccomp: install: empty BPF program");
	struct sock_fprog prog = {.len = bpf->len, .filter = bpf->insns};
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0) {
		if (errno == EACCES)
			return sl_fail(err, SL_INTERNAL, errno,
				       "seccomp: install filter (set PR_SET_NO_NEW_PRIVS first)");
		return sl_sysfail(err, "seccomp: install filter of %u instructions", bpf->len);
	}
	return 0;
}

void seccomp_bpf_free(sl_bpf *bpf)
{
	if (bpf) {
		free(bpf->insns);
		*bpf = (sl_bpf){0};
	}
}
