/* snapshot.c — `sandlot snapshot create|ls|rm`: snapshots of a sandbox's files. */
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "snapshot.h"
#include "view.h"

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
				cJSON_AddItemToArray(arr, view_snapshot_json(&list[i]));
			else
				printf("%-24s  %-16s  %-24s  %s\n", list[i].id,
				       list[i].name[0] ? list[i].name : "-", list[i].sandbox_id,
				       list[i].image);
		}
		if (json)
			cli_print_json(arr);
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
	if (argc == 3 && !strcmp(argv[1], "export")) {
		if (isatty(1))
			return cli_usage("snapshot export: redirect the output to a file");
		if (snapshot_export(ctx, argv[2], 1, &err) < 0)
			return cli_fail(&err);
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "import")) {
		int fd = strcmp(argv[3], "-") ? open(argv[3], O_RDONLY | O_CLOEXEC) : 0;
		if (fd < 0)
			return cli_usage("snapshot import: cannot open %s", argv[3]);
		sl_snapshot s;
		int r = snapshot_import(ctx, argv[2], fd, &s, &err);
		if (fd > 0)
			close(fd);
		if (r < 0)
			return cli_fail(&err);
		printf("%s\n", s.id);
		return 0;
	}
	return cli_usage("snapshot create ID [--name N] | ls | rm ID... | export ID > F.tar.zst | "
			 "import NAME F|-");
}
