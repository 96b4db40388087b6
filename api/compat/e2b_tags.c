/* e2b_tags.c — E2B's template tags ("name:tag", assignTags, removeTags, getTags) as image
 * names of one repository (runtime/image_tag.c): E2B's default tag is the bare name. See
 * docs/e2b.md, "Template tags". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "e2b.h"
#include "image.h"

#define E2B_DEFAULT_TAG "default"
#define MAX_TAGS	64

bool e2b_stock_template(const char *name)
{
	return !strcmp(name, "base") || !strcmp(name, "code-interpreter-v1") ||
	       !strcmp(name, "code-interpreter");
}

/* E2B's rule for a tag (its id.ValidateAndDeduplicateTags): trimmed and lower-cased,
 * then [a-z0-9_.-]+ and not a UUID. OUT the tag as E2B keeps it. */
static int tag_check(const char *in, char *out, size_t len, sl_err *err)
{
	while (*in == ' ' || *in == '\t')
		in++;
	size_t n = strlen(in);
	while (n && (in[n - 1] == ' ' || in[n - 1] == '\t'))
		n--;
	bool ok = n >= 1 && n < len;
	for (size_t i = 0; ok && i < n; i++) {
		char c = in[i] >= 'A' && in[i] <= 'Z' ? (char)(in[i] - 'A' + 'a') : in[i];
		ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || strchr("_.-", c);
		out[i] = c;
	}
	if (!ok)
		return sl_fail(err, SL_INVALID, 0, "invalid tag '%.80s': invalid tag: %.80s", in,
			       in);
	out[n] = '\0';
	bool uuid = n == 36;
	for (size_t i = 0; uuid && i < n; i++)
		uuid = (i == 8 || i == 13 || i == 18 || i == 23)
			   ? out[i] == '-'
			   : strchr("0123456789abcdef", out[i]) != NULL;
	if (uuid)
		return sl_fail(err, SL_INVALID, 0, "invalid tag '%s': tag cannot be a UUID", in);
	return 0;
}

int e2b_template_image(const char *name, const char *tag, char *out, size_t len, sl_err *err)
{
	if (!tag || !*tag || !strcmp(tag, E2B_DEFAULT_TAG)) {
		/* A stock template is refused or resolved (e2b_stock_image) before this. */
		snprintf(out, len, "%s", name);
		return 0;
	}
	return image_tag_name(name, tag, out, len, err);
}

int e2b_template_parse(const char *in, char *name, char *tag, sl_err *err)
{
	/* E2B's split: the name ends at the first ':' (its id.ParseName). */
	size_t rl = strcspn(in, ":");
	tag[0] = '\0';
	if (rl > IMAGE_NAME_MAX)
		return image_name_check(in, err);
	snprintf(name, IMAGE_NAME_MAX + 1, "%.*s", (int)rl, in);
	if (image_name_check(name, err) < 0)
		return -1;
	if (!in[rl])
		return 0;
	if (tag_check(in + rl + 1, tag, E2B_TAG_MAX + 1, err) < 0)
		return -1;
	if (!strcmp(tag, E2B_DEFAULT_TAG))
		tag[0] = '\0';
	return 0;
}

int e2b_template_tags(const cJSON *arr, char tags[][E2B_TAG_MAX + 1], size_t max, size_t *n,
		      sl_err *err)
{
	const cJSON *t;
	*n = 0;
	if (arr && !cJSON_IsArray(arr))
		return sl_fail(err, SL_INVALID, 0, "tags: an array of strings");
	cJSON_ArrayForEach(t, arr)
	{
		char tag[E2B_TAG_MAX + 1];
		if (!cJSON_IsString(t))
			return sl_fail(err, SL_INVALID, 0, "tags: an array of strings");
		if (tag_check(t->valuestring, tag, sizeof(tag), err) < 0)
			return -1;
		bool seen = false;
		for (size_t i = 0; i < *n && !seen; i++)
			seen = !strcmp(tags[i], tag);
		if (seen)
			continue;
		if (*n == max)
			return sl_fail(err, SL_INVALID, 0, "tags: at most %zu", max);
		snprintf(tags[(*n)++], E2B_TAG_MAX + 1, "%s", tag);
	}
	return 0;
}

/* E2B's build id of a tag: a tag names an image, so the image's digest in a UUID's shape
 * (tags assigned from one build share it, as E2B's do). */
static void build_id_of(const sl_image *img, char out[37])
{
	const char *h = img->digest + 7;
	snprintf(out, 37, "%.8s-%.4s-%.4s-%.4s-%.12s", h, h + 8, h + 12, h + 16, h + 20);
}

/* ---- POST /templates/tags {target: "name[:tag]", tags: [...]} ---- */

enum MHD_Result e2b_template_tags_assign(api_req *r)
{
	static const char *const fields[] = {"target", "tags", NULL};
	const cJSON *in;
	const char *target = NULL;
	char name[IMAGE_NAME_MAX + 1], tag[E2B_TAG_MAX + 1], src[IMAGE_NAME_MAX + 1];
	char tags[MAX_TAGS][E2B_TAG_MAX + 1];
	size_t n;
	sl_err err = {0};
	sl_image img;
	const char *state = r->srv->ctx->cfg.state_dir;
	if (api_body_object(r, false, &in, &err) < 0 || api_json_fields(in, "", fields, &err) < 0 ||
	    api_json_string(in, "", "target", &target, &err) < 0)
		return e2b_reply_err(r, &err);
	if (!target || e2b_template_parse(target, name, tag, &err) < 0)
		return e2b_reply_code(r, 400, "Invalid target template format: %s%s%s",
				      target ? target : "(none)", target ? ": " : "", err.msg);
	if (e2b_stock_template(name))
		return e2b_reply_code(r, 400,
				      "template %s: E2B's stock template, sandlot's default image, "
				      "takes no tags",
				      name);
	if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(in, "tags")) < 1)
		return e2b_reply_code(r, 400, "At least one tag is required");
	if (e2b_template_image(name, tag, src, sizeof(src), &err) < 0)
		return e2b_reply_code(r, 400, "Invalid target template format: %s: %s", target,
				      err.msg);
	if (image_lookup(state, src, &img, &err) < 0)
		return e2b_reply_code(r, 404, "Template '%s' not found", target);
	if (e2b_template_tags(cJSON_GetObjectItemCaseSensitive(in, "tags"), tags, MAX_TAGS, &n,
			      &err) < 0)
		return e2b_reply_code(r, 400, "Invalid tag: %s", err.msg);
	char dst[MAX_TAGS][IMAGE_NAME_MAX + 1];
	for (size_t i = 0; i < n; i++)
		if (e2b_template_image(name, tags[i], dst[i], sizeof(dst[i]), &err) < 0)
			return e2b_reply_code(r, 400, "Invalid tag: %s", err.msg);
	for (size_t i = 0; i < n; i++) {
		sl_image made;
		if (image_tag(state, img.name, dst[i], &made, &err) < 0)
			return e2b_reply_err(r, &err);
	}
	char bid[37];
	build_id_of(&img, bid);
	cJSON *o = cJSON_CreateObject();
	cJSON *a = cJSON_AddArrayToObject(o, "tags");
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(tags[i]));
	cJSON_AddStringToObject(o, "buildID", bid);
	return api_reply_json(r, 201, o);
}

/* ---- DELETE /templates/tags {name, tags: [...]} ---- */

enum MHD_Result e2b_template_tags_remove(api_req *r)
{
	static const char *const fields[] = {"name", "tags", NULL};
	const cJSON *in;
	const char *given = NULL;
	char name[IMAGE_NAME_MAX + 1], tag[E2B_TAG_MAX + 1];
	char tags[MAX_TAGS][E2B_TAG_MAX + 1];
	size_t n, have;
	sl_err err = {0};
	const char *state = r->srv->ctx->cfg.state_dir;
	if (api_body_object(r, false, &in, &err) < 0 || api_json_fields(in, "", fields, &err) < 0 ||
	    api_json_string(in, "", "name", &given, &err) < 0)
		return e2b_reply_err(r, &err);
	if (!given || e2b_template_parse(given, name, tag, &err) < 0)
		return e2b_reply_code(r, 400, "Invalid template name format: %s",
				      given ? given : "(none)");
	if (tag[0])
		return e2b_reply_code(
		    r, 400,
		    "Template name should not contain a tag, use the 'tags' field "
		    "instead");
	if (e2b_template_tags(cJSON_GetObjectItemCaseSensitive(in, "tags"), tags, MAX_TAGS, &n,
			      &err) < 0)
		return e2b_reply_code(r, 400, "Invalid tag: %s", err.msg);
	if (!n)
		return e2b_reply_code(r, 400, "At least one tag is required");
	for (size_t i = 0; i < n; i++)
		if (!strcmp(tags[i], E2B_DEFAULT_TAG))
			return e2b_reply_code(r, 400, "Cannot delete the '%s' tag",
					      E2B_DEFAULT_TAG);
	if (e2b_stock_template(name))
		return e2b_reply_code(r, 400,
				      "template %s: E2B's stock template, sandlot's default image, "
				      "has no tags to remove",
				      name);
	_cleanup_free_ sl_image *v = NULL;
	if (image_tags(state, name, &v, &have, &err) < 0)
		return e2b_reply_err(r, &err);
	if (!have)
		return e2b_reply_code(r, 404, "Template '%s' not found", name);
	for (size_t i = 0; i < n; i++) {
		char img[IMAGE_NAME_MAX + 1];
		if (e2b_template_image(name, tags[i], img, sizeof(img), &err) < 0)
			return e2b_reply_code(r, 400, "Invalid tag: %s", err.msg);
		/* A tag that is not there is gone already, as E2B's removal is idempotent. */
		if (api_image_remove(r->srv, img, &err) < 0 && err.kind != SL_NOTFOUND)
			return e2b_reply_err(r, &err);
	}
	return api_reply_empty(r, 204);
}

/* ---- GET /templates/{tid}/tags ---- */

enum MHD_Result e2b_template_tags_list(api_req *r)
{
	char name[IMAGE_NAME_MAX + 1], tag[E2B_TAG_MAX + 1];
	_cleanup_free_ sl_image *v = NULL;
	size_t n = 0;
	sl_err err = {0};
	const char *state = r->srv->ctx->cfg.state_dir;
	if (e2b_template_parse(r->param[0], name, tag, &err) < 0)
		return e2b_reply_code(r, 404, "Template '%s' not found", r->param[0]);
	if (e2b_stock_template(name)) {
		if (!(v = calloc(1, sizeof(*v))) || image_lookup(state, "default", v, &err) < 0)
			return e2b_reply_code(r, 404, "Template '%s' not found", name);
		n = 1;
	} else if (image_tags(state, name, &v, &n, &err) < 0) {
		return e2b_reply_err(r, &err);
	}
	if (!n)
		return e2b_reply_code(r, 404, "Template '%s' not found", name);
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		const char *t = v[i].name + image_name_repo_len(v[i].name);
		char bid[37], at[32];
		time_t c = v[i].created;
		struct tm tm;
		gmtime_r(&c, &tm);
		strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", &tm);
		build_id_of(&v[i], bid);
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "tag", *t == ':' ? t + 1 : E2B_DEFAULT_TAG);
		cJSON_AddStringToObject(o, "buildID", bid);
		cJSON_AddStringToObject(o, "createdAt", at);
		cJSON_AddItemToArray(a, o);
	}
	return api_reply_json(r, 200, a);
}
