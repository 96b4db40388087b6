/* image_build.c — `sandlot image build`: a Dockerfile build (runtime/build.c), or an image
 * recipe's build.sh (which caches by recipe hash), its tarball imported unless unchanged. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nettle/sha2.h>

#include "cleanup.h"
#include "cli.h"
#include "build.h"
#include "image.h"
#include "storage.h"

/* A recipe is a directory holding build.sh, called as `build.sh OUT`: it leaves the
 * image archive at OUT (and may skip the work when OUT is current). */
typedef struct recipe {
	char dir[PATH_MAX];
	char name[128];
	char out[PATH_MAX];
} recipe;

static bool is_recipe_dir(const char *dir)
{
	char p[PATH_MAX];
	struct stat st;
	return snprintf(p, sizeof(p), "%s/build.sh", dir) < (int)sizeof(p) && stat(p, &st) == 0 &&
	       S_ISREG(st.st_mode);
}

/* The directory of the running binary ("<src>/build" in a source tree). */
static int exe_dir(char *buf, size_t len, sl_err *err)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	if (n < 0)
		return sl_sysfail(err, "image build: read /proc/self/exe");
	buf[n] = '\0';
	char *slash = strrchr(buf, '/');
	if (slash)
		*slash = '\0';
	return 0;
}

/* A bare NAME is looked up in $SANDLOT_IMAGES_DIR, then the source tree the binary was
 * built in (<exe>/../images), then the installed share dirs; anything with a slash is
 * a directory. A recipe from the source tree builds into <exe dir>/images/, as
 * `make images` does, so the two share one cache; others into <state>/cache/images/. */
static int recipe_find(const sl_ctx *ctx, const char *arg, const char *name_or_null,
		       const char *out_or_null, recipe *r, sl_err *err)
{
	char exe[PATH_MAX], tree[PATH_MAX];
	if (exe_dir(exe, sizeof(exe), err) < 0)
		return -1;
	snprintf(tree, sizeof(tree), "%s/../images", exe);
	bool in_tree = false, found = false;
	if (strchr(arg, '/') || !strcmp(arg, ".") || !strcmp(arg, "..")) {
		found = realpath(arg, r->dir) && is_recipe_dir(r->dir);
	} else {
		const char *env = getenv("SANDLOT_IMAGES_DIR");
		const char *dirs[] = {env && *env ? env : NULL, tree,
				      "/usr/local/share/sandlot/images",
				      "/usr/share/sandlot/images"};
		for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]) && !found; i++) {
			char p[PATH_MAX];
			if (!dirs[i] ||
			    snprintf(p, sizeof(p), "%s/%s", dirs[i], arg) >= (int)sizeof(p))
				continue;
			found = realpath(p, r->dir) && is_recipe_dir(r->dir);
		}
	}
	if (!found)
		return sl_fail(
		    err, SL_NOTFOUND, 0,
		    "image build: no recipe \"%s\" (a directory with build.sh, or a name "
		    "under $SANDLOT_IMAGES_DIR, %s or /usr/share/sandlot/images)",
		    arg, tree);
	char tree_real[PATH_MAX];
	if (realpath(tree, tree_real)) {
		size_t n = strlen(tree_real);
		in_tree = !strncmp(r->dir, tree_real, n) && r->dir[n] == '/';
	}

	const char *base = strrchr(r->dir, '/') ? strrchr(r->dir, '/') + 1 : r->dir;
	snprintf(r->name, sizeof(r->name), "%s", name_or_null ? name_or_null : base);
	if (image_name_check(r->name, err) < 0)
		return sl_wrap(err, "image build: %s",
			       name_or_null ? "--name" : "recipe directory");
	int n;
	if (out_or_null)
		n = snprintf(r->out, sizeof(r->out), "%s", out_or_null);
	else if (in_tree)
		n = snprintf(r->out, sizeof(r->out), "%s/images/%s.tar.zst", exe, base);
	else
		n = snprintf(r->out, sizeof(r->out), "%s/cache/images/%s.tar.zst",
			     ctx->cfg.state_dir, base);
	if (n >= (int)sizeof(r->out))
		return sl_fail(err, SL_INVALID, ENAMETOOLONG, "image build: output path");
	return 0;
}

/* Run build.sh and wait for it. Ctrl-C on the terminal reaches the script directly
 * (same process group) and it cleans up after itself; a signal sent to this process
 * alone (kill, a service manager) is passed on, so the script still cleans up. */
static int recipe_run(const recipe *r, sl_err *err)
{
	char script[PATH_MAX + 16];
	snprintf(script, sizeof(script), "%s/build.sh", r->dir);
	sigset_t fwd, old;
	sigemptyset(&fwd);
	sigaddset(&fwd, SIGINT);
	sigaddset(&fwd, SIGTERM);
	sigaddset(&fwd, SIGHUP);
	sigaddset(&fwd, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &fwd, &old) < 0)
		return sl_sysfail(err, "image build: block signals");
	pid_t pid = fork();
	if (pid < 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		return sl_sysfail(err, "image build: fork");
	}
	if (pid == 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		if (access(script, X_OK) == 0)
			execl(script, script, r->out, (char *)NULL);
		else
			execl("/bin/sh", "sh", script, r->out, (char *)NULL);
		fprintf(stderr, "sandlot: image build: run %s: %s\n", script, strerror(errno));
		_exit(EXIT_CANNOT_EXEC);
	}
	int status = 0;
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			sigprocmask(SIG_SETMASK, &old, NULL);
			return sl_sysfail(err, "image build: wait for %s", script);
		}
		siginfo_t si;
		if (sigwaitinfo(&fwd, &si) < 0 || si.si_signo == SIGCHLD)
			continue;
		/* SIGINT from the terminal (SI_KERNEL) already reached the script. */
		if (si.si_signo != SIGINT || si.si_code == SI_USER)
			kill(pid, si.si_signo);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFSIGNALED(status))
		return sl_fail(err, SL_INTERNAL, 0, "image build: %s was killed by signal %d",
			       script, WTERMSIG(status));
	return sl_fail(err, SL_INTERNAL, 0,
		       "image build: %s failed (exit %d); see its output above", script,
		       WEXITSTATUS(status));
}

/* "sha256:<hex>" of the file at FD, read to the end: the digest an import would give. */
static int file_digest(int fd, char out[72], sl_err *err)
{
	struct sha256_ctx h;
	sha256_init(&h);
	_cleanup_free_ uint8_t *buf = malloc(1 << 20);
	if (!buf)
		return sl_fail(err, SL_INTERNAL, ENOMEM, "image build: digest");
	for (;;) {
		ssize_t n = read(fd, buf, 1 << 20);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sl_sysfail(err, "image build: read the image archive");
		if (n == 0)
			break;
		sha256_update(&h, (size_t)n, buf);
	}
	uint8_t d[SHA256_DIGEST_SIZE];
	sha256_digest(&h, sizeof(d), d);
	int k = snprintf(out, 72, "sha256:");
	for (size_t i = 0; i < sizeof(d); i++)
		k += snprintf(out + k, 72 - (size_t)k, "%02x", d[i]);
	return 0;
}

/* Import OUT as NAME, unless NAME already holds exactly these bytes: a second
 * `make images` costs a hash of the archive, not a full extraction. */
static int recipe_import(const sl_ctx *ctx, const recipe *r, sl_image *img, bool *changed,
			 sl_err *err)
{
	_cleanup_close_ int fd = open(r->out, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return sl_sysfail(err, "image build: open %s", r->out);
	char digest[72];
	if (file_digest(fd, digest, err) < 0)
		return -1;
	sl_err lookup_err = {0};
	if (image_lookup(ctx->cfg.state_dir, r->name, img, &lookup_err) == 0 &&
	    !strcmp(img->name, r->name) && !strcmp(img->digest, digest)) {
		*changed = false;
		return 0;
	}
	if (lseek(fd, 0, SEEK_SET) < 0)
		return sl_sysfail(err, "image build: rewind %s", r->out);
	*changed = true;
	if (store_ensure(&ctx->cfg, err) < 0)
		return -1;
	return image_import(ctx->cfg.state_dir, &ctx->cfg.min_free, r->name, fd, NULL, NULL, img,
			    err);
}

static void print_line(void *arg, const char *line)
{
	(void)arg;
	fprintf(stderr, "%s\n", line);
}

/* `image build -t NAME [-f FILE] [--build-arg K=V]... [--network] [--start-cmd CMD]
 * [--ready-cmd CMD] DIR`: O has the options, DIR is the context. */
static int dockerfile_build(sl_ctx *ctx, const sl_build_opts *o_in, const char *dir)
{
	if (!o_in->name)
		return cli_usage("image build: a Dockerfile build needs -t NAME");
	sl_build_opts o = *o_in;
	o.context = dir;
	o.out = print_line;
	sl_image img;
	sl_err err = {0};
	if (build_image(ctx, &o, &img, &err) < 0)
		return cli_fail(&err);
	printf("%s %s\n", img.name, img.digest);
	return 0;
}

int cmd_image_build(sl_ctx *ctx, int argc, char **argv)
{
	const char *name = NULL, *out = NULL, *arg = NULL, *file = NULL, *start = NULL,
		   *ready = NULL;
	bool no_import = false, network = false;
	_cleanup_free_ const char **args = calloc((size_t)argc + 1, sizeof(*args));
	size_t nargs = 0;
	if (!args)
		return cli_usage("image build: out of memory");
	for (int i = 1; i < argc; i++) {
		if ((!strcmp(argv[i], "--name") || !strcmp(argv[i], "-t") ||
		     !strcmp(argv[i], "--tag")) &&
		    i + 1 < argc)
			name = argv[++i];
		else if ((!strcmp(argv[i], "-f") || !strcmp(argv[i], "--file")) && i + 1 < argc)
			file = argv[++i];
		else if (!strcmp(argv[i], "--build-arg") && i + 1 < argc)
			args[nargs++] = argv[++i];
		else if (!strcmp(argv[i], "--network"))
			network = true;
		else if (!strcmp(argv[i], "--start-cmd") && i + 1 < argc)
			start = argv[++i];
		else if (!strcmp(argv[i], "--ready-cmd") && i + 1 < argc)
			ready = argv[++i];
		else if ((!strcmp(argv[i], "--output") || !strcmp(argv[i], "-o")) && i + 1 < argc)
			out = argv[++i];
		else if (!strcmp(argv[i], "--no-import"))
			no_import = true;
		else if (argv[i][0] == '-' && argv[i][1])
			return cli_usage("image build: unknown option \"%s\"", argv[i]);
		else if (!arg)
			arg = argv[i];
		else
			return cli_usage("image build: unexpected argument \"%s\"", argv[i]);
	}
	if (!arg)
		return cli_usage(
		    "image build -t NAME [-f Dockerfile] [--build-arg K=V] [--network] "
		    "[--start-cmd CMD] [--ready-cmd CMD] DIR\n"
		    "       image build [--name NAME] [-o FILE] [--no-import] "
		    "RECIPE|default");
	/* -f names a file relative to DIR (docker's -f is relative to the current
	 * directory: an absolute or ./ path is made relative to DIR when inside it). */
	char rel[PATH_MAX], dir_real[PATH_MAX];
	if (file && realpath(arg, dir_real)) {
		char f_real[PATH_MAX];
		size_t n = strlen(dir_real);
		if (realpath(file, f_real) && !strncmp(f_real, dir_real, n) && f_real[n] == '/') {
			snprintf(rel, sizeof(rel), "%s", f_real + n + 1);
			file = rel;
		}
	}
	if (file || build_is_dockerfile_dir(arg, NULL)) {
		if (out || no_import)
			return cli_usage("image build: -o and --no-import are for recipes");
		sl_build_opts o = {.name = name,
				   .dockerfile = file,
				   .build_args = args,
				   .network = network,
				   .start_cmd = start,
				   .ready_cmd = ready};
		return dockerfile_build(ctx, &o, arg);
	}
	if (nargs || network || start || ready)
		return cli_usage("image build: %s has no Dockerfile (--build-arg, --network, "
				 "--start-cmd and --ready-cmd are for Dockerfile builds)",
				 arg);

	recipe r;
	sl_image img;
	bool changed = false;
	sl_err err = {0};
	if (recipe_find(ctx, arg, name, out, &r, &err) < 0 || recipe_run(&r, &err) < 0)
		return cli_fail(&err);
	if (no_import) {
		printf("%s\n", r.out);
		return 0;
	}
	if (recipe_import(ctx, &r, &img, &changed, &err) < 0)
		return cli_fail(&err);
	if (!changed && isatty(STDERR_FILENO))
		fprintf(stderr, "sandlot: image %s is already this build\n", img.name);
	printf("%s %s\n", img.name, img.digest);
	return 0;
}
