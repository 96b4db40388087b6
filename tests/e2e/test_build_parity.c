/* test_build_parity.c — the same Dockerfile built by buildah (vfs storage, chroot isolation,
 * from the local busybox, never the network) and by sandlot gives the same file tree:
 * paths, types, modes, owners, symlink targets, contents (tests/e2e/tree_compare.py). */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The intended differences (docs/images.md, "Differences from docker and buildah"). */
static const char *const ignored[] = {"etc/hosts", "etc/resolv.conf", "etc/hostname", NULL};

static char *sh_ok(const char *cmd)
{
	e2e_result r;
	char *argv[] = {"/bin/sh", "-c", (char *)cmd, NULL};
	if (e2e_run(&r, NULL, 0, 600000, argv) != 0)
		fail_msg("`%s` exited %d:\n%s%s", cmd, r.status, r.out, r.err);
	char *out = strdup(r.out);
	out[strcspn(out, "\n")] = '\0';
	e2e_result_free(&r);
	return out;
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		fail_msg("write %s", path);
}

static const char dockerfile[] =
    "ARG GREETING=hello\n"
    "FROM busybox AS tools\n"
    "RUN mkdir -p /opt/tool/bin && echo '#!/bin/sh' > /opt/tool/bin/t && \\\n"
    "    chmod 0750 /opt/tool/bin/t && ln -s t /opt/tool/bin/t-link\n"
    "\n"
    "FROM busybox\n"
    "ARG GREETING\n"
    "ENV APP=/srv/app\n"
    "WORKDIR $APP\n"
    "COPY src/ ./src/\n"
    "COPY --chown=1000:100 conf.txt /etc/app/conf.txt\n"
    "COPY --from=tools /opt/tool /opt/tool\n"
    "ADD files.tar /srv/unpacked/\n"
    "RUN echo \"$GREETING from $APP\" > greeting && \\\n"
    "    mkdir -m 0711 private && touch private/.keep && chown -R 1000:1000 private && \\\n"
    "    rm /bin/vi && ln -sf /srv/app/greeting /greeting-link && \\\n"
    "    chmod 4755 /srv/app/src/run.sh\n"
    "USER 1000\n"
    "CMD [\"cat\", \"greeting\"]\n";

static void test_same_tree_as_buildah(void **state)
{
	const char *root = e2e_root();
	char *ctx = e2e_printf("%s/parity-ctx", root);
	char *cmd =
	    e2e_printf("mkdir -p %s/src/sub %s/tarsrc/d && cd %s && "
		       "printf 'echo run\\n' > src/run.sh && chmod 755 src/run.sh && "
		       "printf 'x' > src/sub/x && chmod 600 src/sub/x && ln -s run.sh src/link && "
		       "printf 'k=v\\n' > conf.txt && printf 'in tar\\n' > tarsrc/d/f && "
		       "tar --owner=7 --group=8 -C tarsrc -cf files.tar d && rm -rf tarsrc",
		       ctx, ctx, ctx);
	free(sh_ok(cmd));
	free(cmd);
	char *df = e2e_printf("%s/Dockerfile", ctx);
	put(df, dockerfile);

	/* sandlot */
	char *res = e2e_sandlot_ok("image", "build", "-t", "parity", ctx, NULL);
	char *hex = strstr(res, "sha256:");
	assert_non_null(hex);
	char *ours = e2e_printf("%s/images/layers/%s", getenv("SANDLOT_STATE_DIR"), hex + 7);

	/* buildah, from the same busybox tarball, its storage under the test root */
	char *bb = e2e_build_path("images/busybox.tar");
	char *B = e2e_printf(
	    "buildah --root %s/buildah --runroot %s/buildah-run --storage-driver vfs", root, root);
	cmd = e2e_printf("set -e; c=$(%s from scratch); %s add $c %s / >/dev/null; "
			 "%s commit -q $c busybox >/dev/null; %s rm $c >/dev/null",
			 B, B, bb, B, B);
	free(sh_ok(cmd));
	free(cmd);
	cmd = e2e_printf("%s bud --isolation chroot --pull=never -q -t parity %s "
			 ">/dev/null && c=$(%s from parity) && %s mount $c",
			 B, ctx, B, B);
	char *theirs = sh_ok(cmd);
	free(cmd);

	char *ign = strdup("");
	for (size_t i = 0; ignored[i]; i++) {
		char *n = e2e_printf("%s --ignore %s", ign, ignored[i]);
		free(ign);
		ign = n;
	}
	cmd = e2e_printf("python3 tests/e2e/tree_compare.py %s %s %s 2>&1", ours, theirs, ign);
	e2e_result r;
	char *argv[] = {"/bin/sh", "-c", cmd, NULL};
	e2e_run(&r, NULL, 0, 120000, argv);
	int st = r.status;
	char *report = strdup(r.out);
	e2e_result_free(&r);
	free(cmd);
	/* buildah's storage: unmounted, removed (its files are under the test root). */
	cmd = e2e_printf("%s umount -a >/dev/null 2>&1; %s rm -a >/dev/null 2>&1; "
			 "%s rmi -a -f >/dev/null 2>&1; true",
			 B, B, B);
	free(sh_ok(cmd));
	free(cmd);
	if (st != 0)
		fail_msg("sandlot's tree (<) and buildah's (>) differ:\n%s", report);
	free(e2e_sandlot_ok("image", "rm", "parity", NULL));
	free(report);
	free(ign);
	free(theirs);
	free(B);
	free(bb);
	free(ours);
	free(res);
	free(df);
	free(ctx);
}

int main(void)
{
	if (access("/usr/bin/buildah", X_OK) != 0) {
		fprintf(stderr, "test_build_parity: buildah is not installed (scripts/setup)\n");
		return 1;
	}
	const struct CMUnitTest tests[] = {
	    E2E_TEST(test_same_tree_as_buildah),
	};
	return e2e_run_tests(tests);
}
