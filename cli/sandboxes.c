/* sandboxes.c — `sandlot ls`, `inspect` and `rm`: reading and destroying sandboxes
 * through the runtime's records (the same ones the API serves). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "hibernate.h"
#include "view.h"

int cmd_ls(sl_ctx *ctx, int argc, char **argv)
{
	bool json = false, all = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--format") && i + 1 < argc && !strcmp(argv[i + 1], "json"))
			json = true, i++;
		else if (!strcmp(argv[i], "--format=json"))
			json = true;
		else if (!strcmp(argv[i], "-a") || !strcmp(argv[i], "--all"))
			all = true;
		else
			return cli_usage("ls: unknown option \"%s\"", argv[i]);
	}
	sl_sandbox *list;
	size_t n;
	sl_err err = { 0 };
	if ((all ? sandbox_list : sandbox_list_live)(ctx, &list, &n, &err) < 0)
		return cli_fail(&err);
	cJSON *arr = json ? cJSON_CreateArray() : NULL;
	if (!json)
		printf("%-24s  %-16s  %-10s  %-12s  %s\n", "ID", "NAME", "STATUS", "IMAGE", "CREATED");
	for (size_t i = 0; i < n; i++) {
		if (!all && list[i].status == SL_ST_TERMINATED)
			continue;
		if (json) {
			cJSON_AddItemToArray(arr, view_sandbox_json(&list[i]));
			continue;
		}
		char when[32];
		time_t t = list[i].created_ms / 1000;
		struct tm tm;
		localtime_r(&t, &tm);
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
		printf("%-24s  %-16s  %-10s  %-12s  %s\n", list[i].id,
		       list[i].name[0] ? list[i].name : "-", sandbox_status_name(list[i].status),
		       list[i].image, when);
	}
	if (json) {
		char *s = cJSON_Print(arr);
		puts(s);
		cJSON_free(s);
		cJSON_Delete(arr);
	}
	sandbox_free_list(list, n);
	return 0;
}

int cmd_inspect(sl_ctx *ctx, int argc, char **argv)
{
	if (argc != 2)
		return cli_usage("inspect: give one sandbox id or name");
	sl_sandbox sb;
	sl_err err = { 0 };
	if (sandbox_get(ctx, argv[1], &sb, &err) < 0)
		return cli_fail(&err);
	cJSON *o = view_sandbox_json(&sb);
	char cg[64];
	snprintf(cg, sizeof(cg), "sandlot/%s", sb.id);
	sl_cgusage use;
	if (sb.status == SL_ST_RUNNING && cgroup_usage(ctx->cg, cg, &use, &err) == 0) {
		cJSON *u = cJSON_AddObjectToObject(o, "usage");
		cJSON_AddNumberToObject(u, "cpuSeconds", use.cpu_usage_ns / 1e9);
		cJSON_AddNumberToObject(u, "memoryBytes", (double)use.memory_bytes);
		cJSON_AddNumberToObject(u, "pids", (double)use.pids_current);
		cJSON_AddNumberToObject(u, "oomKills", (double)use.oom_kills);
	}
	char *s = cJSON_Print(o);
	puts(s);
	cJSON_free(s);
	cJSON_Delete(o);
	sandbox_free(&sb);
	return 0;
}

int cmd_rm(sl_ctx *ctx, int argc, char **argv)
{
	bool force = false;
	int first = 1, code = 0;
	for (; first < argc && argv[first][0] == '-'; first++) {
		if (!strcmp(argv[first], "-f") || !strcmp(argv[first], "--force"))
			force = true;
		else
			return cli_usage("rm: unknown option \"%s\"", argv[first]);
	}
	if (first >= argc)
		return cli_usage("rm: give at least one sandbox id or name");
	for (int i = first; i < argc; i++) {
		sl_err err = { 0 };
		if (sandbox_destroy(ctx, argv[i], "deleted", &err) < 0) {
			if (force && err.kind == SL_NOTFOUND)
				continue;
			cli_fail(&err);
			code = EXIT_SANDLOT;
		}
	}
	return code;
}

/* pause|hibernate|resume|stop|start ID... */
int cmd_lifecycle(sl_ctx *ctx, int argc, char **argv)
{
	if (argc < 2)
		return cli_usage("%s: give at least one sandbox id or name", argv[0]);
	int code = 0;
	for (int i = 1; i < argc; i++) {
		sl_err err = { 0 };
		int r;
		if (!strcmp(argv[0], "pause"))
			r = sandbox_pause(ctx, argv[i], NULL, &err);
		else if (!strcmp(argv[0], "hibernate"))
			r = sandbox_hibernate(ctx, argv[i], NULL, &err);
		else if (!strcmp(argv[0], "resume"))
			r = sandbox_resume(ctx, argv[i], NULL, &err);
		else if (!strcmp(argv[0], "stop"))
			r = sandbox_stop(ctx, argv[i], 10000, NULL, &err);
		else
			r = sandbox_start(ctx, argv[i], NULL, &err);
		if (r < 0)
			code = cli_fail(&err);
	}
	return code;
}
