/* snapshot.c — `sandlot snapshot create|ls|rm`: snapshots of a sandbox's files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "snapshot.h"

int cmd_snapshot(sl_ctx *ctx, int argc, char **argv)
{
	sl_err err = { 0 };
	if (argc >= 3 && !strcmp(argv[1], "create")) {
		const char *name = NULL;
		if (argc == 5 && !strcmp(argv[3], "--name"))
			name = argv[4];
		else if (argc != 3)
			return cli_usage("snapshot create ID [--name NAME]");
		sl_snapshot s;
		if (snapshot_create(ctx, argv[2], name, &s, &err) < 0)
			return cli_fail(&err);
		printf("%s\n", s.id);
		return 0;
	}
	if (argc >= 2 && !strcmp(argv[1], "ls")) {
		sl_snapshot *list;
		size_t n;
		if (snapshot_list(ctx, &list, &n, &err) < 0)
			return cli_fail(&err);
		bool json = argc > 2 && !strcmp(argv[argc - 1], "json");
		cJSON *arr = cJSON_CreateArray();
		if (!json)
			printf("%-24s  %-16s  %-24s  %s\n", "ID", "NAME", "SANDBOX", "IMAGE");
		for (size_t i = 0; i < n; i++) {
			if (json)
				cJSON_AddItemToArray(arr, snapshot_to_json(&list[i]));
			else
				printf("%-24s  %-16s  %-24s  %s\n", list[i].id,
				       list[i].name[0] ? list[i].name : "-", list[i].sandbox_id,
				       list[i].image);
		}
		if (json) {
			char *s = cJSON_Print(arr);
			puts(s);
			free(s);
		}
		cJSON_Delete(arr);
		free(list);
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "rm")) {
		int code = 0;
		for (int i = 2; i < argc; i++)
			if (snapshot_delete(ctx, argv[i], &err) < 0)
				code = cli_fail(&err);
		return code;
	}
	return cli_usage("snapshot create ID [--name N] | snapshot ls | snapshot rm ID...");
}
