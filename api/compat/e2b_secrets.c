/* e2b_secrets.c — the E2B SDK's Secret client (/secrets, /secrets/{secretID}) over the
 * store /v1/secrets uses (api_secret_put, secret.h): a secret's ID is its name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "e2b.h"

#define SECRET_LIST_MAX 1000

/* E2B's Secret: metadata only, never the value. sandlot keeps no metadata: always {}. */
static cJSON *secret_e2b_json(const sl_secret *s)
{
	char t[40];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "secretID", s->name);
	cJSON_AddStringToObject(o, "name", s->name);
	cJSON_AddNumberToObject(o, "currentVersion", (double)s->version);
	cJSON_AddObjectToObject(o, "metadata");
	sl_iso_time(s->created_ms, t, sizeof(t));
	cJSON_AddStringToObject(o, "createdAt", t);
	sl_iso_time(s->updated_ms, t, sizeof(t));
	cJSON_AddStringToObject(o, "updatedAt", t);
	return o;
}

/* metadata: absent, null or {} only. Dropping it would lose what the caller meant to
 * keep, so anything else is refused. */
static int metadata_check(const cJSON *body, sl_err *err)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(body, "metadata");
	if (!m || cJSON_IsNull(m) || (cJSON_IsObject(m) && !m->child))
		return 0;
	return sl_fail(err, SL_INVALID, 0,
		       "metadata: sandlot keeps no metadata on secrets (docs/e2b.md); leave it "
		       "out");
}

/* POST /secrets {name, value, metadata?} (create) and POST /secrets/{id} {value,
 * metadata?} (update: a new version of the value). */
static enum MHD_Result put(api_req *r, secret_mode mode)
{
	static const char *const create_fields[] = {"name", "value", "metadata", NULL};
	static const char *const update_fields[] = {"value", "metadata", NULL};
	const cJSON *body = NULL;
	const char *name = mode == SECRET_CREATE ? NULL : r->param[0];
	sl_err err = {0};
	sl_secret s;
	bool created;
	int rc = -1;
	if (api_body_object(r, false, &body, &err) == 0 &&
	    api_json_fields(body, "", mode == SECRET_CREATE ? create_fields : update_fields,
			    &err) == 0 &&
	    (mode != SECRET_CREATE || api_json_string(body, "", "name", &name, &err) == 0) &&
	    metadata_check(body, &err) == 0)
		rc = api_secret_put(r, body, name, mode, &s, &created, &err);
	api_secret_wipe(r, body);
	if (rc < 0)
		return e2b_reply_err(r, &err);
	return api_reply_json(r, mode == SECRET_CREATE ? 201 : 200, secret_e2b_json(&s));
}

enum MHD_Result e2b_secret_create(api_req *r)
{
	return put(r, SECRET_CREATE);
}

enum MHD_Result e2b_secret_update(api_req *r)
{
	return put(r, SECRET_REPLACE);
}

enum MHD_Result e2b_secret_get(api_req *r)
{
	sl_secret s;
	sl_err err = {0};
	if (secret_get(&r->srv->ctx->cfg, r->param[0], &s, &err) < 0)
		return e2b_reply_err(r, &err);
	return api_reply_json(r, 200, secret_e2b_json(&s));
}

enum MHD_Result e2b_secret_delete(api_req *r)
{
	sl_err err = {0};
	if (secret_delete(&r->srv->ctx->cfg, r->param[0], &err) < 0)
		return e2b_reply_err(r, &err);
	return api_reply_empty(r, 204);
}

static int by_created(const void *a, const void *b)
{
	const sl_secret *x = a, *y = b;
	if (x->created_ms != y->created_ms)
		return x->created_ms < y->created_ms ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* GET /secrets?limit=&nextToken=: oldest first; nextToken is the offset of the next
 * item, X-Next-Token set while there are more. */
enum MHD_Result e2b_secret_list(api_req *r)
{
	const char *lim = api_query(r, "limit"), *tok = api_query(r, "nextToken");
	char *end;
	unsigned long limit = lim ? strtoul(lim, &end, 10) : 100, off = 0;
	if (lim && (*end || !limit || limit > SECRET_LIST_MAX))
		return e2b_reply_code(r, 400, "limit: a whole number 1..%d", SECRET_LIST_MAX);
	if (tok && *tok) {
		off = strtoul(tok, &end, 10);
		if (*end)
			return e2b_reply_code(r, 400, "nextToken: not one this server gave");
	}
	sl_secret *all;
	size_t n;
	sl_err err = {0};
	if (secret_list(&r->srv->ctx->cfg, &all, &n, &err) < 0)
		return e2b_reply_err(r, &err);
	if (n)
		qsort(all, n, sizeof(*all), by_created);
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = off; i < n && i < off + limit; i++)
		cJSON_AddItemToArray(arr, secret_e2b_json(&all[i]));
	free(all);
	char *text = cJSON_PrintUnformatted(arr);
	cJSON_Delete(arr);
	if (!text)
		return MHD_NO;
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", "application/json");
	if (off + limit < n) {
		char next[32];
		snprintf(next, sizeof(next), "%lu", off + limit);
		MHD_add_response_header(resp, "X-Next-Token", next);
	}
	return api_reply(r, 200, resp);
}
