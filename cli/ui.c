/* ui.c — `sandlot ui`: prints the dashboard's address with a one-time sign-in token, which
 * the daemon makes on its unix socket (POST /ui/token). It opens nothing by itself. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "config.h"
#include "state.h"

int cmd_ui(int argc, char **argv)
{
	const char *socket_path = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--socket") && i + 1 < argc) {
			socket_path = argv[++i];
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			puts("usage: sandlot ui [--socket PATH]\n"
			     "Prints the dashboard's address with a one-time sign-in token (valid "
			     "5\n"
			     "minutes) from the running daemon (`sandlot serve --listen ...`); "
			     "open\n"
			     "it in a browser. See docs/dashboard.md.");
			return 0;
		} else {
			return cli_usage("ui: unexpected argument \"%s\"", argv[i]);
		}
	}
	char sock[PATH_MAX];
	sl_err err = {0};
	if (socket_path) {
		snprintf(sock, sizeof(sock), "%s", socket_path);
	} else {
		sl_config cfg;
		if (config_load(&cfg, &err) < 0)
			return cli_fail(&err);
		state_api_socket_path(&cfg, sock, sizeof(sock));
	}
	cli_http_reply rep;
	if (cli_daemon_http(sock, "POST", "/ui/token", NULL, "", 0, &rep, &err) < 0) {
		free(rep.buf);
		return cli_fail(&err);
	}
	cJSON *o = rep.status == 200 ? cJSON_Parse(rep.body) : NULL;
	const cJSON *url = cJSON_GetObjectItemCaseSensitive(o, "url");
	int rc = 0;
	if (cJSON_IsString(url)) {
		puts(url->valuestring);
	} else if (o) {
		fprintf(stderr,
			"sandlot: the daemon has no TCP listener, so no dashboard: start it "
			"with `sandlot serve --listen 127.0.0.1:PORT`\n");
		rc = EXIT_SANDLOT;
	} else {
		fprintf(stderr, "sandlot: the daemon on %s answered %d: %s\n", sock, rep.status,
			rep.body ? rep.body : "");
		rc = EXIT_SANDLOT;
	}
	cJSON_Delete(o);
	free(rep.buf);
	return rc;
}
