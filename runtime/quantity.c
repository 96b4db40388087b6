/* quantity.c — strict parsers for Kubernetes quantities and Go-style durations, done in
 * exact integer arithmetic so "0.1Gi" or "1.0001" never depend on float rounding. */
#include "quantity.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned __int128 u128;

#define MAX_SIG_DIGITS 19 /* keeps the mantissa below 2^64, so mant << 60 fits in 128 bits */
#define MAX_EXP10      10000

/* A parsed decimal: value = mant * 10^exp10; REST is the unit suffix that followed. */
typedef struct qnum {
	uint64_t mant;
	int exp10;
	bool has_exp;
	const char *rest;
} qnum;

enum qstatus { Q_OK, Q_SYNTAX, Q_NEGATIVE, Q_RANGE, Q_DIGITS };

/* Quote user input for a message: printable ASCII kept, the rest escaped, long input cut. */
static const char *quote(const char *s, char *buf, size_t len)
{
	size_t o = 0;
	buf[o++] = '"';
	for (; *s && o + 8 < len; s++) {
		unsigned char c = (unsigned char)*s;
		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
			buf[o++] = (char)c;
		else
			o += (size_t)snprintf(buf + o, len - o, "\\x%02x", c);
	}
	if (*s && o + 4 < len) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return buf;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int parse_exponent(const char **pp, int *exp10)
{
	const char *p = *pp;
	bool neg = false;
	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	if (!is_digit(*p))
		return Q_SYNTAX;
	long e = 0;
	for (; is_digit(*p); p++)
		if (e < MAX_EXP10)
			e = e * 10 + (*p - '0');
	if (e > MAX_EXP10)
		e = MAX_EXP10; /* saturate: far beyond any representable value either way */
	*exp10 += (int)(neg ? -e : e);
	*pp = p;
	return Q_OK;
}

/* Parse "[+]digits[.digits][(e|E)[+-]digits]" and leave the suffix in q->rest. */
static int parse_decimal(const char *s, qnum *q)
{
	const char *p = s;
	memset(q, 0, sizeof(*q));
	if (*p == '-')
		return Q_NEGATIVE;
	if (*p == '+')
		p++;
	int sig = 0, ndigits = 0;
	bool frac = false;
	for (;; p++) {
		if (*p == '.' && !frac) {
			frac = true;
			continue;
		}
		if (!is_digit(*p))
			break;
		ndigits++;
		int d = *p - '0';
		if (q->mant == 0 && d == 0) {
			if (frac)
				q->exp10--;
			continue;
		}
		if (sig == MAX_SIG_DIGITS) {
			if (!frac)
				return Q_RANGE; /* 20+ integer digits: beyond INT64_MAX */
			if (d != 0)
				return Q_DIGITS;
			continue; /* trailing fraction zeros change nothing */
		}
		q->mant = q->mant * 10 + (uint64_t)d;
		sig++;
		if (frac)
			q->exp10--;
	}
	if (ndigits == 0)
		return Q_SYNTAX;
	bool exp_follows =
	    *p == 'e' ||
	    (*p == 'E' && (is_digit(p[1]) || ((p[1] == '+' || p[1] == '-') && is_digit(p[2]))));
	if (exp_follows) {
		p++;
		if (parse_exponent(&p, &q->exp10) != Q_OK)
			return Q_SYNTAX;
		q->has_exp = true;
	}
	q->rest = p;
	return Q_OK;
}

/* mant * 2^exp2 * 10^exp10 as an integer no larger than LIMIT; INEXACT reports a dropped
 * fraction, which ROUND_UP turns into +1. */
static int scale(const qnum *q, unsigned exp2, bool round_up, uint64_t limit, uint64_t *out,
		 bool *inexact)
{
	u128 v = (u128)q->mant << exp2;
	*inexact = false;
	if (q->exp10 >= 0) {
		for (int i = 0; i < q->exp10 && v != 0 && v <= limit; i++)
			v *= 10;
	} else {
		int d = -q->exp10;
		u128 rem = v;
		if (d <= 38) {
			u128 p10 = 1;
			for (int i = 0; i < d; i++)
				p10 *= 10;
			rem = v % p10;
			v /= p10;
		} else {
			v = 0;
		}
		*inexact = rem != 0;
		if (*inexact && round_up)
			v++;
	}
	if (v > limit)
		return Q_RANGE;
	*out = (uint64_t)v;
	return Q_OK;
}

#define CPU_FORMS "use \"500m\", \"0.5\" or \"2\""

int quantity_parse_cpu(const char *field, const char *s, uint64_t *millicores, sl_err *err)
{
	char qb[96];
	if (!field)
		field = "cpu";
	if (!s || !*s)
		return sl_fail(err, SL_INVALID, 0, "%s: empty CPU quantity (%s)", field, CPU_FORMS);
	qnum q;
	int st = parse_decimal(s, &q);
	if (st == Q_NEGATIVE)
		return sl_fail(err, SL_INVALID, 0, "%s: %s must not be negative (%s)", field,
			       quote(s, qb, sizeof(qb)), CPU_FORMS);
	if (st == Q_RANGE)
		return sl_fail(err, SL_INVALID, 0, "%s: %s is too large", field,
			       quote(s, qb, sizeof(qb)));
	if (st == Q_DIGITS)
		return sl_fail(err, SL_INVALID, 0, "%s: %s has too many digits", field,
			       quote(s, qb, sizeof(qb)));
	if (st != Q_OK || (strcmp(q.rest, "") != 0 && (strcmp(q.rest, "m") != 0 || q.has_exp)))
		return sl_fail(err, SL_INVALID, 0, "%s: %s is not a CPU quantity (%s)", field,
			       quote(s, qb, sizeof(qb)), CPU_FORMS);
	if (*q.rest == '\0')
		q.exp10 += 3; /* cores to millicores */
	bool inexact;
	if (scale(&q, 0, false, INT64_MAX, millicores, &inexact) != Q_OK)
		return sl_fail(err, SL_INVALID, 0, "%s: %s is too large", field,
			       quote(s, qb, sizeof(qb)));
	if (inexact)
		return sl_fail(err, SL_INVALID, 0,
			       "%s: %s is finer than the smallest CPU step, 1 millicore (\"1m\" = "
			       "\"0.001\")",
			       field, quote(s, qb, sizeof(qb)));
	if (*millicores == 0)
		return sl_fail(err, SL_INVALID, 0, "%s: %s must be greater than zero (%s)", field,
			       quote(s, qb, sizeof(qb)), CPU_FORMS);
	return 0;
}

static const struct {
	const char *suffix;
	unsigned exp2;
	int exp10;
} byte_units[] = {
    {"", 0, 0},	   {"k", 0, 3},	  {"M", 0, 6},	 {"G", 0, 9},	{"T", 0, 12},
    {"P", 0, 15},  {"E", 0, 18},  {"Ki", 10, 0}, {"Mi", 20, 0}, {"Gi", 30, 0},
    {"Ti", 40, 0}, {"Pi", 50, 0}, {"Ei", 60, 0},
};

#define BYTE_FORMS "use e.g. \"512Mi\", \"1Gi\", \"1G\" or a plain number of bytes"

/* Explain a unit that is not Kubernetes' but close to one ("64MB", "1K", "1m"). */
static int bad_byte_unit(const char *field, const char *s, const char *rest, sl_err *err)
{
	char qb[96];
	int numlen = (int)(rest - s);
	const char *prefixes = "kKMGTPE";
	char p = rest[0];
	if (p == 'm' && rest[1] == '\0')
		return sl_fail(
		    err, SL_INVALID, 0,
		    "%s: %s would mean milli-bytes; use \"%.*sMi\" (mebibytes) or \"%.*sM\" "
		    "(megabytes)",
		    field, quote(s, qb, sizeof(qb)), numlen, s, numlen, s);
	if ((p == 'u' || p == 'n') && rest[1] == '\0')
		return sl_fail(err, SL_INVALID, 0, "%s: %s is a fraction of a byte (%s)", field,
			       quote(s, qb, sizeof(qb)), BYTE_FORMS);
	if (p && strchr(prefixes, p)) {
		char up = p == 'k' ? 'K' : p, dec = p == 'K' ? 'k' : p;
		bool bytes_suffix = (rest[1] == 'B' || rest[1] == 'b') && rest[2] == '\0';
		bool ib_suffix = rest[1] == 'i' && rest[2] == 'B' && rest[3] == '\0';
		if (bytes_suffix || ib_suffix || (p == 'K' && rest[1] == '\0'))
			return sl_fail(err, SL_INVALID, 0,
				       "%s: %s has unit \"%s\"; use \"%.*s%ci\" (binary, 2^%d) or "
				       "\"%.*s%c\" (decimal, 10^%d)",
				       field, quote(s, qb, sizeof(qb)), rest, numlen, s, up,
				       10 * (int)(strchr(prefixes, up) - prefixes), numlen, s, dec,
				       3 * (int)(strchr(prefixes, up) - prefixes));
	}
	return sl_fail(err, SL_INVALID, 0, "%s: %s is not a byte quantity (%s)", field,
		       quote(s, qb, sizeof(qb)), BYTE_FORMS);
}

int quantity_parse_bytes(const char *field, const char *s, uint64_t *bytes, sl_err *err)
{
	char qb[96];
	if (!field)
		field = "bytes";
	if (!s || !*s)
		return sl_fail(err, SL_INVALID, 0, "%s: empty byte quantity (%s)", field,
			       BYTE_FORMS);
	qnum q;
	int st = parse_decimal(s, &q);
	if (st == Q_NEGATIVE)
		return sl_fail(err, SL_INVALID, 0, "%s: %s must not be negative (%s)", field,
			       quote(s, qb, sizeof(qb)), BYTE_FORMS);
	if (st == Q_RANGE)
		return sl_fail(err, SL_INVALID, 0, "%s: %s is too large (at most 8Ei - 1)", field,
			       quote(s, qb, sizeof(qb)));
	if (st == Q_DIGITS)
		return sl_fail(err, SL_INVALID, 0, "%s: %s has too many digits", field,
			       quote(s, qb, sizeof(qb)));
	if (st != Q_OK)
		return sl_fail(err, SL_INVALID, 0, "%s: %s is not a byte quantity (%s)", field,
			       quote(s, qb, sizeof(qb)), BYTE_FORMS);
	size_t u = 0, nunits = sizeof(byte_units) / sizeof(byte_units[0]);
	while (u < nunits && strcmp(q.rest, byte_units[u].suffix) != 0)
		u++;
	if (u == nunits)
		return bad_byte_unit(field, s, q.rest, err);
	if (q.has_exp && u != 0)
		return sl_fail(err, SL_INVALID, 0, "%s: %s mixes an exponent with a unit (%s)",
			       field, quote(s, qb, sizeof(qb)), BYTE_FORMS);
	q.exp10 += byte_units[u].exp10;
	bool inexact;
	if (scale(&q, byte_units[u].exp2, true, INT64_MAX, bytes, &inexact) != Q_OK)
		return sl_fail(err, SL_INVALID, 0, "%s: %s is too large (at most 8Ei - 1)", field,
			       quote(s, qb, sizeof(qb)));
	if (*bytes == 0)
		return sl_fail(err, SL_INVALID, 0, "%s: %s must be greater than zero (%s)", field,
			       quote(s, qb, sizeof(qb)), BYTE_FORMS);
	return 0;
}

#define DURATION_FORMS "use e.g. \"500ms\", \"30s\", \"5m\", \"1h30m\" or plain milliseconds"
#define NS_PER_MS      1000000ULL

static const struct {
	const char *unit;
	uint64_t ns;
} duration_units[] = {
    /* longest first, so "ms" is not read as "m" followed by garbage */
    {"ns", 1ULL},
    {"us", 1000ULL},
    {"\xc2\xb5s", 1000ULL}, /* µs, MICRO SIGN */
    {"\xce\xbcs", 1000ULL}, /* μs, GREEK SMALL LETTER MU */
    {"ms", NS_PER_MS},
    {"s", 1000 * NS_PER_MS},
    {"m", 60 * 1000 * NS_PER_MS},
    {"h", 3600 * 1000 * NS_PER_MS},
};

/* One "<number><unit>" segment of a duration, in nanoseconds; advances *PP. */
static int duration_segment(const char **pp, u128 *ns)
{
	const char *p = *pp;
	u128 whole = 0, frac = 0, frac_scale = 1;
	bool any = false, frac_rest = false;
	for (; is_digit(*p); p++, any = true) {
		if (whole > (u128)UINT64_MAX)
			return Q_RANGE;
		whole = whole * 10 + (u128)(*p - '0');
	}
	if (*p == '.') {
		for (p++; is_digit(*p); p++, any = true) {
			if (frac_scale < 1000000000000000000ULL) {
				frac = frac * 10 + (u128)(*p - '0');
				frac_scale *= 10;
			} else if (*p != '0') {
				frac_rest = true;
			}
		}
	}
	if (!any)
		return Q_SYNTAX;
	size_t i, n = sizeof(duration_units) / sizeof(duration_units[0]);
	for (i = 0; i < n; i++)
		if (strncmp(p, duration_units[i].unit, strlen(duration_units[i].unit)) == 0)
			break;
	if (i == n)
		return Q_SYNTAX;
	u128 unit = duration_units[i].ns, f = frac * unit;
	*ns = whole * unit + f / frac_scale + ((f % frac_scale) != 0 || frac_rest);
	*pp = p + strlen(duration_units[i].unit);
	return Q_OK;
}

int duration_parse(const char *field, const char *s, uint64_t *ms, sl_err *err)
{
	char qb[96];
	if (!field)
		field = "duration";
	if (!s || !*s)
		return sl_fail(err, SL_INVALID, 0, "%s: empty duration (%s)", field,
			       DURATION_FORMS);
	const char *p = s;
	if (*p == '-')
		return sl_fail(err, SL_INVALID, 0, "%s: %s must not be negative", field,
			       quote(s, qb, sizeof(qb)));
	if (*p == '+')
		p++;
	if (*p && strspn(p, "0123456789") == strlen(p)) {
		errno = 0;
		char *end;
		unsigned long long v = strtoull(p, &end, 10);
		if (errno == ERANGE || v > INT64_MAX)
			return sl_fail(err, SL_INVALID, 0, "%s: %s is too long", field,
				       quote(s, qb, sizeof(qb)));
		*ms = v;
		return 0;
	}
	const u128 limit_ns = (u128)INT64_MAX * NS_PER_MS;
	u128 total = 0;
	do {
		u128 seg;
		int st = duration_segment(&p, &seg);
		if (st == Q_RANGE || (st == Q_OK && (seg > limit_ns || total + seg > limit_ns)))
			return sl_fail(err, SL_INVALID, 0, "%s: %s is too long", field,
				       quote(s, qb, sizeof(qb)));
		if (st != Q_OK)
			return sl_fail(err, SL_INVALID, 0, "%s: %s is not a duration (%s)", field,
				       quote(s, qb, sizeof(qb)), DURATION_FORMS);
		total += seg;
	} while (*p);
	*ms = (uint64_t)((total + NS_PER_MS - 1) / NS_PER_MS);
	return 0;
}

static int format_into(char *buf, size_t len, uint64_t v, const char *suffix)
{
	int n = snprintf(buf, len, "%" PRIu64 "%s", v, suffix);
	if (n < 0 || (size_t)n >= len) {
		errno = ERANGE;
		return -1;
	}
	return 0;
}

int quantity_format_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = {"Ei", "Pi", "Ti", "Gi", "Mi", "Ki"};
	for (int i = 0; i < 6 && bytes != 0; i++) {
		unsigned shift = 10 * (unsigned)(6 - i);
		if ((bytes & ((1ULL << shift) - 1)) == 0)
			return format_into(buf, len, bytes >> shift, units[i]);
	}
	return format_into(buf, len, bytes, "");
}

int quantity_format_cpu(uint64_t millicores, char *buf, size_t len)
{
	if (millicores % 1000 == 0)
		return format_into(buf, len, millicores / 1000, "");
	return format_into(buf, len, millicores, "m");
}
