/* fork.c — `sandlot fork`, `checkpoint create|ls|rm` and `rollback`: copies of a
 * sandbox, and putting one back as it was (docs/forks.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fork.h"
#include "snapshot.h"
#include "view.h"

/* sandlot fork ID [-n N] [--name NAME] [--memory]: the copies' ids, one a line. */
int cmd_fork(sl_ctx *ctx, int argc, char **argv)
{
	sl_fork_opts fo = {.count = 1};
	const char *id = NULL;
	for (int i = 1; i < argc; i++) {
		if ((!strcmp(argv[i], "-n") || !strcmp(argv[i], "--count")) && i + 1 < argc) {
			char *end;
			unsigned long v = strtoul(argv[++i], &end, 10);
			if (*end || !*argv[i] || v > SL_FORK_MAX * 10UL)
				return cli_usage("fork: -n takes a number of copies (1-%d)",
						 SL_FORK_MAX);
			fo.count = (unsigned)v;
		} else if (!strcmp(argv[i], "--name") && i + 1 < argc) {
			fo.name = argv[++i];
		} else if (!strcmp(argv[i], "--memory")) {
			fo.memory = true;
		} else if (argv[i][0] != '-' && !id) {
			id = argv[i];
		} else {
			return cli_usage("fork ID [-n N] [--name NAME] [--memory]");
		}
	}
	if (!id)
		return cli_usage("fork ID [-n N] [--name NAME] [--memory]");
	sl_sandbox *list;
	size_t n;
	sl_err err = {0};
	if (sandbox_fork(ctx, id, &fo, &list, &n, &err) < 0)
		return cli_fail(&err);
	for (size_t i = 0; i < n; i++)
		printf("%s\n", list[i].id);
	sandbox_free_list(list, n);
	return 0;
}

static int checkpoint_ls(sl_ctx *ctx, const char *id, bool json)
{
	sl_snapshot *list;
	size_t n;
	sl_err err = {0};
	if (checkpoint_list(ctx, id, &list, &n, &err) < 0)
		return cli_fail(&err);
	cJSON *arr = cJSON_CreateArray();
	if (!json)
		printf("%-24s  %s\n", "ID", "NAME");
	for (size_t i = 0; i < n; i++) {
		if (json)
			cJSON_AddItemToArray(arr, view_checkpoint_json(&list[i]));
		else
			printf("%-24s  %s\n", list[i].id, list[i].name);
	}
	if (json)
		cli_print_json(arr);
	cJSON_Delete(arr);
	free(list);
	return 0;
}

/* sandlot checkpoint create ID NAME [--memory] | ls ID [--format json] | rm ID NAME... */
int cmd_checkpoint(sl_ctx *ctx, int argc, char **argv)
{
	sl_err err = {0};
	bool memory = argc == 5 && !strcmp(argv[4], "--memory");
	if ((argc == 4 || memory) && !strcmp(argv[1], "create")) {
		sl_snapshot s;
		if (checkpoint_create(ctx, argv[2], argv[3], memory, &s, &err) < 0)
			return cli_fail(&err);
		printf("%s\n", s.id);
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "ls"))
		return checkpoint_ls(ctx, argv[2], argc > 3 && !strcmp(argv[argc - 1], "json"));
	if (argc >= 4 && !strcmp(argv[1], "rm")) {
		int code = 0;
		for (int i = 3; i < argc; i++)
			if (checkpoint_delete(ctx, argv[2], argv[i], &err) < 0)
				code = cli_fail(&err);
		return code;
	}
	return cli_usage(
	    "checkpoint create ID NAME [--memory] | ls ID [--format json] | rm ID NAME...");
}

/* sandlot rollback ID CHECKPOINT */
int cmd_rollback(sl_ctx *ctx, int argc, char **argv)
{
	if (argc != 3)
		return cli_usage("rollback ID CHECKPOINT");
	sl_err err = {0};
	_cleanup_sandbox_ sl_sandbox sb = {0};
	if (sandbox_rollback(ctx, argv[1], argv[2], &sb, &err) < 0)
		return cli_fail(&err);
	printf("%s\n", sb.id);
	return 0;
}
