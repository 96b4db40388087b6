/* image.c — `sandlot image import|ls|rm`: the image store from the command line. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "image.h"
#include "pull.h"
#include "storage.h"

#define OCI_MAX_LAYERS_CLI 128 /* oci.h's OCI_MAX_LAYERS */

static int image_import_cmd(sl_ctx *ctx, int argc, char **argv)
{
	const char *user = NULL, *workdir = NULL, *pos[2];
	int npos = 0;
	for (int i = 1; i < argc; i++) {
		if ((!strcmp(argv[i], "--user") || !strcmp(argv[i], "-u")) && i + 1 < argc)
			user = argv[++i];
		else if ((!strcmp(argv[i], "--workdir") || !strcmp(argv[i], "-w")) && i + 1 < argc)
			workdir = argv[++i];
		else if (npos < 2)
			pos[npos++] = argv[i];
		else
			return cli_usage("image import: unexpected argument \"%s\"", argv[i]);
	}
	if (npos != 2)
		return cli_usage("image import NAME FILE|- [--user U] [--workdir DIR]");
	int fd = 0;
	if (strcmp(pos[1], "-") != 0 && (fd = open(pos[1], O_RDONLY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "sandlot: image import: open %s: %s\n", pos[1], strerror(errno));
		return EXIT_SANDLOT;
	}
	sl_image img;
	sl_err err = {0};
	/* The store holds the sandboxes' writable layers; mounting it here keeps the
	 * first create fast and the host's mount table stable afterwards. */
	int r = store_ensure(&ctx->cfg, &err);
	if (r == 0)
		r = image_import(ctx->cfg.state_dir, &ctx->cfg.min_free, pos[0], fd, user, workdir,
				 &img, &err);
	if (fd > 0)
		close(fd);
	if (r < 0)
		return cli_fail(&err);
	if (img.picked[0]) /* an index of several platforms: say which was taken */
		fprintf(stderr, "sandlot: image %s: took the %s manifest\n", img.name, img.picked);
	printf("%s %s\n", img.name, img.digest);
	return 0;
}

int cli_registry_flag(sl_config *cfg, const char *flag, const char *value)
{
	char *dst = cfg->registry_auth;
	size_t len = sizeof(cfg->registry_auth);
	if (!strcmp(flag, "--registry-mirror"))
		dst = cfg->registry_mirror, len = sizeof(cfg->registry_mirror);
	if (!strcmp(flag, "--insecure-registry")) {
		size_t used = strlen(cfg->insecure_registries);
		if (used + strlen(value) + 2 > sizeof(cfg->insecure_registries) ||
		    strpbrk(value, ", ")) {
			fprintf(stderr, "sandlot: %s \"%s\": one host[:port], and fewer in all\n",
				flag, value);
			return -1;
		}
		snprintf(cfg->insecure_registries + used, sizeof(cfg->insecure_registries) - used,
			 "%s%s", used ? "," : "", value);
		return 0;
	}
	if (strlen(value) >= len) {
		fprintf(stderr, "sandlot: %s: too long\n", flag);
		return -1;
	}
	snprintf(dst, len, "%s", value);
	return 0;
}

/* `docker pull`'s display: a line per layer, redrawn in place on a terminal; elsewhere
 * each change of a layer's status once (not every byte count). */
struct pull_view {
	bool tty;
	size_t lines; /* printed so far */
	struct {
		char id[13], status[32];
		size_t line;
	} rows[OCI_MAX_LAYERS_CLI];
	size_t nrows;
};

static void pull_bytes(char *buf, size_t len, uint64_t n)
{
	if (n >= 1000000000)
		snprintf(buf, len, "%.2fGB", n / 1e9);
	else if (n >= 1000000)
		snprintf(buf, len, "%.1fMB", n / 1e6);
	else
		snprintf(buf, len, "%.1fkB", n / 1e3);
}

static void pull_show(void *arg, const char *status, const char *layer, uint64_t cur,
		      uint64_t total)
{
	struct pull_view *v = arg;
	if (!layer[0]) {
		fprintf(stderr, "%s\n", status);
		v->lines++;
		return;
	}
	size_t k = 0;
	while (k < v->nrows && strcmp(v->rows[k].id, layer))
		k++;
	bool downloading = !strcmp(status, "Downloading");
	if (k == v->nrows) {
		if (k == OCI_MAX_LAYERS_CLI)
			return;
		snprintf(v->rows[k].id, sizeof(v->rows[k].id), "%s", layer);
		v->rows[k].line = v->lines++;
		v->rows[k].status[0] = '\0';
		v->nrows++;
		if (v->tty)
			fputc('\n', stderr);
	} else if (!v->tty && downloading && !strcmp(v->rows[k].status, status)) {
		return;
	}
	snprintf(v->rows[k].status, sizeof(v->rows[k].status), "%s", status);
	char text[128], a[16], b[16];
	if (downloading) {
		pull_bytes(a, sizeof(a), cur);
		pull_bytes(b, sizeof(b), total);
		snprintf(text, sizeof(text), "%s: %s %s/%s", layer, status, a, b);
	} else {
		snprintf(text, sizeof(text), "%s: %s", layer, status);
	}
	if (!v->tty) {
		fprintf(stderr, "%s\n", text);
		return;
	}
	size_t up = v->lines - v->rows[k].line;
	fprintf(stderr, "\033[%zuA\r\033[2K%s\033[%zuB\r", up, text, up);
	fflush(stderr);
}

static int image_pull_cmd(sl_ctx *ctx, int argc, char **argv)
{
	const char *ref = NULL, *name = NULL;
	bool quiet = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--name") && i + 1 < argc)
			name = argv[++i];
		else if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet"))
			quiet = true;
		else if ((!strcmp(argv[i], "--registry-mirror") ||
			  !strcmp(argv[i], "--insecure-registry") ||
			  !strcmp(argv[i], "--auth-file")) &&
			 i + 1 < argc) {
			if (cli_registry_flag(&ctx->cfg, argv[i], argv[i + 1]) < 0)
				return EXIT_SANDLOT;
			i++;
		} else if (!ref && argv[i][0] != '-')
			ref = argv[i];
		else
			return cli_usage("image pull: unexpected argument \"%s\"", argv[i]);
	}
	if (!ref)
		return cli_usage(
		    "image pull REF [--name NAME] [--registry-mirror URL] "
		    "[--insecure-registry HOST[:PORT]] [--auth-file config.json] [-q]");
	static struct pull_view view;
	view.tty = isatty(2);
	sl_pull_opts o = image_pull_opts(&ctx->cfg, quiet ? NULL : pull_show, &view);
	o.name = name;
	sl_image img;
	sl_err err = {0};
	int r = store_ensure(&ctx->cfg, &err);
	if (r == 0)
		r = image_pull(ctx->cfg.state_dir, ref, &o, &img, &err);
	if (r < 0)
		return cli_fail(&err);
	if (img.picked[0] && !quiet)
		fprintf(stderr, "took the %s manifest\n", img.picked);
	printf("%s %s\n", img.name, img.digest);
	return 0;
}

/* The fields `image ls --format json` and `image inspect` share. */
static cJSON *image_json(const sl_image *img)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", img->name);
	cJSON_AddStringToObject(o, "digest", img->digest);
	cJSON_AddNumberToObject(o, "sizeBytes", (double)img->size_bytes);
	cJSON_AddNumberToObject(o, "sharedBytes", (double)img->shared_bytes);
	cJSON_AddNumberToObject(o, "ownBytes", (double)(img->size_bytes - img->shared_bytes));
	cJSON_AddStringToObject(o, "user", img->user);
	cJSON_AddStringToObject(o, "workingDirectory", img->workdir);
	cJSON_AddNumberToObject(o, "created", (double)img->created);
	cJSON_AddStringToObject(o, "format", img->format);
	if (img->platform[0])
		cJSON_AddStringToObject(o, "platform", img->platform);
	cJSON_AddNumberToObject(o, "layers", img->nlayers);
	return o;
}

static void print_json(cJSON *o)
{
	char *s = cJSON_Print(o);
	puts(s);
	cJSON_free(s);
	cJSON_Delete(o);
}

static int image_ls_cmd(sl_ctx *ctx, int argc, char **argv)
{
	bool json =
	    argc > 1 && (!strcmp(argv[1], "--format=json") ||
			 (argc > 2 && !strcmp(argv[1], "--format") && !strcmp(argv[2], "json")));
	sl_image *list;
	size_t n;
	sl_err err = {0};
	if (image_list(ctx->cfg.state_dir, &list, &n, &err) < 0)
		return cli_fail(&err);
	cJSON *arr = cJSON_CreateArray();
	if (!json)
		printf("%-20s  %-19s  %10s  %10s  %10s  %6s  %-8s  %s\n", "NAME", "DIGEST", "SIZE",
		       "SHARED", "OWN", "LAYERS", "USER", "WORKDIR");
	for (size_t i = 0; i < n; i++) {
		if (json) {
			cJSON_AddItemToArray(arr, image_json(&list[i]));
		} else {
			printf("%-20s  %.19s  %9.1fM  %9.1fM  %9.1fM  %6u  %-8s  %s\n",
			       list[i].name, list[i].digest, list[i].size_bytes / 1048576.0,
			       list[i].shared_bytes / 1048576.0,
			       (list[i].size_bytes - list[i].shared_bytes) / 1048576.0,
			       list[i].nlayers, list[i].user, list[i].workdir);
		}
	}
	if (json)
		print_json(arr);
	else
		cJSON_Delete(arr);
	free(list);
	return 0;
}

/* `image inspect NAME`: the image's record and, for a container image, its config
 * (Env, Entrypoint, Cmd, Labels, ExposedPorts) and layers, as JSON. */
static int image_inspect_cmd(sl_ctx *ctx, int argc, char **argv)
{
	if (argc != 2)
		return cli_usage("image inspect NAME");
	sl_image img;
	sl_err err = {0};
	if (image_lookup(ctx->cfg.state_dir, argv[1], &img, &err) < 0)
		return cli_fail(&err);
	/* Shared sizes are relative to the other images: take this one from the list. */
	sl_image *list;
	size_t n;
	if (image_list(ctx->cfg.state_dir, &list, &n, &err) < 0)
		return cli_fail(&err);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i].name, img.name))
			img = list[i];
	free(list);
	cJSON *cfg = NULL;
	if (image_config(ctx->cfg.state_dir, &img, &cfg, &err) < 0)
		return cli_fail(&err);
	cJSON *o = image_json(&img);
	if (cfg)
		cJSON_AddItemToObject(o, "config", cfg);
	print_json(o);
	return 0;
}

static int image_rm_cmd(sl_ctx *ctx, int argc, char **argv)
{
	if (argc < 2)
		return cli_usage("image rm NAME...");
	int code = 0;
	for (int i = 1; i < argc; i++) {
		sl_image img;
		sl_err err = {0};
		bool used = false;
		if (image_lookup(ctx->cfg.state_dir, argv[i], &img, &err) < 0 ||
		    sandbox_image_in_use(ctx, img.digest, &used, &err) < 0) {
			code = cli_fail(&err);
			continue;
		}
		if (used) {
			sl_fail(&err, SL_CONFLICT, 0,
				"image %s is used by a sandbox, a snapshot or a daemon's pool; "
				"remove those first",
				argv[i]);
			code = cli_fail(&err);
			continue;
		}
		if (image_remove(ctx->cfg.state_dir, img.name, &err) < 0)
			code = cli_fail(&err);
	}
	return code;
}

int cmd_image(sl_ctx *ctx, int argc, char **argv)
{
	if (argc < 2)
		return cli_usage("image: import, pull, ls, inspect, rm or build");
	if (!strcmp(argv[1], "import"))
		return image_import_cmd(ctx, argc - 1, argv + 1);
	if (!strcmp(argv[1], "pull"))
		return image_pull_cmd(ctx, argc - 1, argv + 1);
	if (!strcmp(argv[1], "ls"))
		return image_ls_cmd(ctx, argc - 1, argv + 1);
	if (!strcmp(argv[1], "rm"))
		return image_rm_cmd(ctx, argc - 1, argv + 1);
	if (!strcmp(argv[1], "inspect"))
		return image_inspect_cmd(ctx, argc - 1, argv + 1);
	if (!strcmp(argv[1], "build"))
		return cmd_image_build(ctx, argc - 1, argv + 1);
	return cli_usage("image: unknown subcommand \"%s\" (import, pull, ls, inspect, rm, build)",
			 argv[1]);
}
