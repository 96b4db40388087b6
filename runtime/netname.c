/* netname.c — domain names in egress rules: which strings are names, checking and
 * normalising them, and matching a queried name against a sandbox's lists. */
#include "netname.h"

#include <ctype.h>
#include <string.h>

bool netname_is_name(const char *s)
{
	for (; *s; s++)
		if (!isdigit((unsigned char)*s) && *s != '.' && *s != '/')
			return true;
	return false;
}

static bool label_char(char c)
{
	return isalnum((unsigned char)c) || c == '-' || c == '_';
}

/* The labels of S (LEN bytes, no wildcard): how many, or -1 if one is malformed. */
static int check_labels(const char *s, size_t len)
{
	int labels = 0;
	size_t i = 0;
	while (i < len) {
		size_t j = i;
		while (j < len && s[j] != '.') {
			if (!label_char(s[j]))
				return -1;
			j++;
		}
		if (j == i || j - i > 63 || s[i] == '-' || s[j - 1] == '-')
			return -1;
		labels++;
		if (j == len)
			break;
		i = j + 1;
		if (i == len)
			return -1; /* "a..": an empty last label */
	}
	return labels;
}

int netname_parse(const char *field, const char *s, char out[SL_NAME_MAX + 1], sl_err *err)
{
	size_t len = strlen(s);
	if (len && s[len - 1] == '.')
		len--;
	bool wild = len >= 2 && s[0] == '*' && s[1] == '.';
	const char *base = wild ? s + 2 : s;
	size_t blen = wild ? len - 2 : len;
	int labels = len <= SL_NAME_MAX ? check_labels(base, blen) : -1;
	const char *last = base + blen;
	while (last > base && last[-1] != '.')
		last--;
	bool numeric = true;
	for (const char *p = last; p < base + blen; p++)
		numeric &= isdigit((unsigned char)*p) != 0;
	if (labels < 1 || (!wild && labels < 2) || numeric)
		return sl_fail(
		    err, SL_INVALID, 0,
		    "%s: \"%.300s\" is neither a CIDR nor a domain name (\"example.com\", "
		    "\"*.example.com\"; labels of letters, digits and '-', at most %d "
		    "characters)",
		    field, s, SL_NAME_MAX);
	for (size_t i = 0; i < len; i++)
		out[i] = (char)tolower((unsigned char)s[i]);
	out[len] = '\0';
	return 0;
}

bool netname_match(const char *rule, const char *name)
{
	if (rule[0] != '*')
		return !strcmp(rule, name);
	size_t rl = strlen(rule + 1), nl = strlen(name); /* rule + 1: ".example.com" */
	return nl > rl && !strcmp(name + nl - rl, rule + 1);
}

static bool list_matches(const cJSON *list, const char *name, bool *has_names)
{
	const cJSON *it;
	bool hit = false;
	cJSON_ArrayForEach(it, list)
	{
		if (!cJSON_IsString(it) || !netname_is_name(it->valuestring))
			continue;
		*has_names = true;
		hit |= netname_match(it->valuestring, name);
	}
	return hit;
}

netname_verdict netname_decide(const cJSON *allow, const cJSON *deny, const char *name)
{
	bool deny_names = false, allow_names = false;
	if (list_matches(deny, name, &deny_names))
		return NETNAME_REFUSE;
	bool allowed = list_matches(allow, name, &allow_names);
	if (!allow_names)
		return NETNAME_FORWARD;
	return allowed ? NETNAME_ADMIT : NETNAME_REFUSE;
}

bool netname_any(const cJSON *list)
{
	bool any = false;
	list_matches(list, "", &any);
	return any;
}
