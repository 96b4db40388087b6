/* volume.c — `sandlot volume create|ls|rm`: named volumes that outlive sandboxes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "volume.h"

int cmd_volume(sl_ctx *ctx, int argc, char **argv)
{
	sl_err err = { 0 };
	if (argc == 3 && !strcmp(argv[1], "create")) {
		sl_volume v;
		if (volume_create(ctx, argv[2], &v, &err) < 0)
			return cli_fail(&err);
		printf("%s\n", v.name);
		return 0;
	}
	if (argc >= 2 && !strcmp(argv[1], "ls")) {
		sl_volume *list;
		size_t n;
		if (volume_list(ctx, &list, &n, &err) < 0)
			return cli_fail(&err);
		for (size_t i = 0; i < n; i++)
			printf("%s\n", list[i].name);
		free(list);
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "rm")) {
		int code = 0;
		for (int i = 2; i < argc; i++)
			if (volume_delete(ctx, argv[i], &err) < 0)
				code = cli_fail(&err);
		return code;
	}
	return cli_usage("volume create NAME | volume ls | volume rm NAME...");
}
