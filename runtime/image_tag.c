/* image_tag.c — tags: more names for one image, as `docker tag` makes them ("app:v1",
 * "app:prod"), and the names of one repository. See docs/images.md, "Tags". */
#include "image_internal.h"

#include "cleanup.h"
#include "log.h"
#include "owner.h"
#include "state.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

size_t image_name_repo_len(const char *name)
{
	if (strchr(name, '@'))
		return strcspn(name, "@"); /* app@sha256:...: a digest, no tag */
	const char *slash = strrchr(name, '/'), *colon = strrchr(name, ':');
	if (colon && (!slash || colon > slash))
		return (size_t)(colon - name);
	return strlen(name);
}

int image_tag_name(const char *name, const char *tag, char *buf, size_t len, sl_err *err)
{
	size_t n = tag ? strlen(tag) : 0;
	bool ok = n >= 1 && n <= 128 && tag[0] != '.' && tag[0] != '-';
	for (size_t i = 0; ok && i < n; i++)
		ok = (tag[i] >= 'a' && tag[i] <= 'z') || (tag[i] >= 'A' && tag[i] <= 'Z') ||
		     (tag[i] >= '0' && tag[i] <= '9') || strchr("_.-", tag[i]);
	if (!ok)
		return sl_fail(err, SL_INVALID, 0,
			       "tag '%.80s' is invalid: use 1-128 characters from a-z A-Z 0-9 _ . "
			       "-, not starting with . or -",
			       tag ? tag : "");
	int w = snprintf(buf, len, "%.*s:%s", (int)image_name_repo_len(name), name, tag);
	if (w < 0 || (size_t)w >= len || image_name_check(buf, NULL) < 0)
		return sl_fail(err, SL_INVALID, 0,
			       "tag '%s' of image %s: the name would be longer than %d characters",
			       tag, name, IMAGE_NAME_MAX);
	return 0;
}

int image_tag(const char *state_dir, const char *src, const char *target, sl_image *out,
	      sl_err *err)
{
	sl_image img;
	if (image_name_check(target, err) < 0 || image_lookup(state_dir, src, &img, err) < 0)
		return -1;
	char rec[PATH_MAX];
	if (img_record_path(state_dir, target, rec, sizeof(rec), err) < 0)
		return -1;
	_cleanup_unlock_ int lock = img_lock(state_dir, err);
	if (lock < 0)
		return -1;
	/* Again under the lock: a removal since the lookup must not leave a name on a layer
	 * that is going away. */
	if (img_load(state_dir, img.name, &img, err) < 0)
		return sl_wrap(err, "tag %s as %s", src, target);
	if (!strcmp(img.name, target)) {
		*out = img;
		return 0;
	}
	sl_image old;
	sl_err e;
	bool replaced = img_load(state_dir, target, &old, &e) == 0;
	if (replaced && !img_mine(old.owner))
		return sl_fail(err, SL_CONFLICT, 0,
			       "image name %s is taken (another API key's, or an admin image)",
			       target);
	sl_image t = img;
	snprintf(t.name, sizeof(t.name), "%s", target);
	snprintf(t.owner, sizeof(t.owner), "%s", owner_acting());
	t.created = (int64_t)time(NULL);
	t.shared_bytes = 0;
	t.picked[0] = '\0';
	_cleanup_free_ char *json = img_record_json(&t);
	if (!json)
		return sl_fail(err, SL_EXHAUSTED, ENOMEM, "tag %s as %s", src, target);
	if (state_write_atomic(rec, json, strlen(json), err) < 0)
		return sl_wrap(err, "tag %s as %s", src, target);
	if (replaced && strcmp(old.digest, t.digest))
		sl_log(SL_LOG_INFO,
		       "image %s now points to %s; its previous layer %s stays for sandboxes "
		       "made from it",
		       target, t.digest, old.digest);
	*out = t;
	return 0;
}

int image_tags(const char *state_dir, const char *name, sl_image **out, size_t *n, sl_err *err)
{
	if (image_list(state_dir, out, n, err) < 0)
		return -1;
	size_t rl = image_name_repo_len(name), k = 0;
	for (size_t i = 0; i < *n; i++) {
		const char *m = (*out)[i].name;
		if (image_name_repo_len(m) == rl && !strncmp(m, name, rl))
			(*out)[k++] = (*out)[i];
	}
	*n = k;
	return 0;
}
