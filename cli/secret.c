/* secret.c — `sandlot secret set|ls|rm`: secrets sandboxes reference by name; the value
 * is read from stdin, never from the command line (where ps and shell history see it). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "clock.h"
#include "secret.h"

/* Stdin, up to one byte over the cap (so an over-long value is refused, not cut), one
 * trailing newline dropped: `echo TOKEN | sandlot secret set gh` stores TOKEN. */
static int read_value(char **out, size_t *len, sl_err *err)
{
	size_t cap = SECRET_VALUE_MAX + 2, n = 0;
	char *buf = malloc(cap);
	if (!buf)
		return sl_fail(err, SL_INTERNAL, 0, "read the value from stdin: out of memory");
	while (n < cap) {
		ssize_t r = read(STDIN_FILENO, buf + n, cap - n);
		if (r < 0) {
			secret_wipe(buf, n);
			return sl_sysfail(err, "read the value from stdin");
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n && buf[n - 1] == '\n')
		n--;
	if (n && buf[n - 1] == '\r')
		n--;
	*out = buf;
	*len = n;
	return 0;
}

int cmd_secret(sl_ctx *ctx, int argc, char **argv)
{
	sl_err err = {0};
	if (argc == 3 && !strcmp(argv[1], "set")) {
		char *value = NULL;
		size_t len = 0;
		sl_secret s;
		bool created;
		if (isatty(STDIN_FILENO))
			fprintf(stderr,
				"sandlot: reading the value of %s from stdin (end with ^D)\n",
				argv[2]);
		if (read_value(&value, &len, &err) < 0)
			return cli_fail(&err);
		int r = secret_set(&ctx->cfg, argv[2], value, len, &s, &created, &err);
		secret_wipe(value, SECRET_VALUE_MAX + 2);
		if (r < 0)
			return cli_fail(&err);
		printf("%s\n", s.name);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "ls")) {
		sl_secret *list;
		size_t n;
		if (secret_list(&ctx->cfg, &list, &n, &err) < 0)
			return cli_fail(&err);
		for (size_t i = 0; i < n; i++) {
			char t[40];
			sl_iso_time(list[i].updated_ms, t, sizeof(t));
			printf("%s\t%s\n", list[i].name, t);
		}
		free(list);
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "rm")) {
		int code = 0;
		for (int i = 2; i < argc; i++)
			if (secret_delete(&ctx->cfg, argv[i], &err) < 0)
				code = cli_fail(&err);
		return code;
	}
	return cli_usage("secret set NAME (value on stdin) | secret ls | secret rm NAME...");
}
