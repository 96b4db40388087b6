/* daytona_secrets.c — the Daytona SDK's Secret service (/api/secret...) over the store
 * /v1/secrets uses (api_secret_put, secret.h): a secret's id is its name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "daytona.h"

#define PAGE_MAX 200

/* Daytona's Secret, never the value. sandlot sets the value itself in the sandbox's env,
 * so there is no placeholder ("") and no host list ([]). */
static cJSON *secret_dt_json(const sl_secret *s)
{
	char t[40];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", s->name);
	cJSON_AddStringToObject(o, "name", s->name);
	cJSON_AddStringToObject(o, "placeholder", "");
	cJSON_AddArrayToObject(o, "hosts");
	sl_iso_time(s->created_ms, t, sizeof(t));
	cJSON_AddStringToObject(o, "createdAt", t);
	sl_iso_time(s->updated_ms, t, sizeof(t));
	cJSON_AddStringToObject(o, "updatedAt", t);
	return o;
}

/* hosts limits where Daytona's egress proxy swaps the value in; sandlot hands the value
 * to the sandbox, so it could not keep that promise: refused. description is not kept,
 * and dropping it would lose what the caller meant to keep: refused too. Empty ones are
 * nothing to keep. */
static int unkept_check(const cJSON *body, sl_err *err)
{
	const cJSON *h = cJSON_GetObjectItemCaseSensitive(body, "hosts");
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(body, "description");
	if (h && !cJSON_IsNull(h) && !(cJSON_IsArray(h) && !h->child))
		return sl_fail(err, SL_INVALID, 0,
			       "hosts: sandlot puts the value itself in the sandbox, so it cannot "
			       "limit the hosts it is sent to (docs/daytona.md); leave hosts out");
	if (d && !cJSON_IsNull(d) && !(cJSON_IsString(d) && !d->valuestring[0]))
		return sl_fail(err, SL_INVALID, 0,
			       "description: sandlot keeps none on a secret; leave it out");
	return 0;
}

/* POST /api/secret {name, value, description?, hosts?} (create) and PATCH
 * /api/secret/{id} {value?, description?, hosts?} (update; no value: nothing changes). */
static enum MHD_Result put(api_req *r, secret_mode mode)
{
	static const char *const fields[] = {"name", "value", "description", "hosts", NULL};
	const cJSON *body = NULL;
	const char *name = mode == SECRET_CREATE ? NULL : r->param[0];
	sl_err err = {0};
	sl_secret s;
	bool created;
	int rc = -1;
	if (api_body_object(r, false, &body, &err) == 0 &&
	    api_json_fields(body, "", fields + (mode == SECRET_CREATE ? 0 : 1), &err) == 0 &&
	    (mode != SECRET_CREATE || api_json_string(body, "", "name", &name, &err) == 0) &&
	    unkept_check(body, &err) == 0) {
		if (mode == SECRET_REPLACE && !cJSON_GetObjectItemCaseSensitive(body, "value"))
			rc = secret_get(&r->srv->ctx->cfg, name, &s, &err);
		else
			rc = api_secret_put(r, body, name, mode, &s, &created, &err);
	}
	api_secret_wipe(r, body);
	if (rc < 0)
		return dt_error(r, &err, NULL);
	return api_reply_json(r, mode == SECRET_CREATE ? 201 : 200, secret_dt_json(&s));
}

enum MHD_Result dt_secret_create(api_req *r)
{
	return put(r, SECRET_CREATE);
}

enum MHD_Result dt_secret_update(api_req *r)
{
	return put(r, SECRET_REPLACE);
}

enum MHD_Result dt_secret_get(api_req *r)
{
	sl_secret s;
	sl_err err = {0};
	if (secret_get(&r->srv->ctx->cfg, r->param[0], &s, &err) < 0)
		return dt_error(r, &err, NULL);
	return api_reply_json(r, 200, secret_dt_json(&s));
}

enum MHD_Result dt_secret_delete(api_req *r)
{
	sl_err err = {0};
	if (secret_delete(&r->srv->ctx->cfg, r->param[0], &err) < 0)
		return dt_error(r, &err, NULL);
	return api_reply_empty(r, 204);
}

/* The list's order: sort=name|createdAt|updatedAt, order=asc|desc (Daytona's default:
 * createdAt, desc). */
struct order {
	char key; /* 'n', 'c', 'u' */
	bool desc;
};

static int by_key(const void *a, const void *b, void *arg)
{
	const sl_secret *x = a, *y = b;
	const struct order *o = arg;
	int c = 0;
	if (o->key == 'c')
		c = (x->created_ms > y->created_ms) - (x->created_ms < y->created_ms);
	else if (o->key == 'u')
		c = (x->updated_ms > y->updated_ms) - (x->updated_ms < y->updated_ms);
	if (!c)
		c = strcmp(x->name, y->name);
	return o->desc ? -c : c;
}

static int order_parse(api_req *r, struct order *o, sl_err *err)
{
	const char *sort = api_query(r, "sort"), *dir = api_query(r, "order");
	o->key = !sort || !strcmp(sort, "createdAt") ? 'c'
		 : !strcmp(sort, "updatedAt")	     ? 'u'
		 : !strcmp(sort, "name")	     ? 'n'
						     : 0;
	if (!o->key)
		return sl_fail(err, SL_INVALID, 0, "sort: name, createdAt or updatedAt");
	if (dir && strcmp(dir, "asc") && strcmp(dir, "desc"))
		return sl_fail(err, SL_INVALID, 0, "order: asc or desc");
	o->desc = !dir || !strcmp(dir, "desc");
	return 0;
}

/* The acting key's secrets whose name holds NAME (all when NULL), in O's order. */
static int listed(api_req *r, const char *name, const struct order *o, sl_secret **out, size_t *n,
		  sl_err *err)
{
	if (secret_list(&r->srv->ctx->cfg, out, n, err) < 0)
		return -1;
	size_t k = 0;
	for (size_t i = 0; i < *n; i++)
		if (!name || strstr((*out)[i].name, name))
			(*out)[k++] = (*out)[i];
	*n = k;
	if (k)
		qsort_r(*out, k, sizeof(**out), by_key, (void *)o);
	return 0;
}

/* GET /api/secret: every secret, newest first. */
enum MHD_Result dt_secret_list(api_req *r)
{
	struct order o = {'c', true};
	sl_secret *all;
	size_t n;
	sl_err err = {0};
	if (listed(r, NULL, &o, &all, &n, &err) < 0)
		return dt_error(r, &err, NULL);
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(arr, secret_dt_json(&all[i]));
	free(all);
	return api_reply_json(r, 200, arr);
}

/* GET /api/secret/paginated?cursor=&limit=&name=&sort=&order=: {items, total,
 * nextCursor}; the cursor is the offset of the next item. */
enum MHD_Result dt_secret_page(api_req *r)
{
	const char *lim = api_query(r, "limit"), *cur = api_query(r, "cursor");
	const char *name = api_query(r, "name");
	char *end;
	unsigned long limit = lim ? strtoul(lim, &end, 10) : 100, off = 0;
	struct order o;
	sl_err err = {0};
	if (lim && (*end || !limit || limit > PAGE_MAX))
		return dt_fail(r, SL_INVALID, NULL, "limit: a whole number 1..%d", PAGE_MAX);
	if (cur && *cur) {
		off = strtoul(cur, &end, 10);
		if (*end)
			return dt_fail(r, SL_INVALID, NULL, "cursor: not one this server gave");
	}
	if (order_parse(r, &o, &err) < 0)
		return dt_error(r, &err, NULL);
	sl_secret *all;
	size_t n;
	if (listed(r, name && *name ? name : NULL, &o, &all, &n, &err) < 0)
		return dt_error(r, &err, NULL);
	cJSON *page = cJSON_CreateObject();
	cJSON *items = cJSON_AddArrayToObject(page, "items");
	for (size_t i = off; i < n && i < off + limit; i++)
		cJSON_AddItemToArray(items, secret_dt_json(&all[i]));
	free(all);
	cJSON_AddNumberToObject(page, "total", (double)n);
	if (off + limit < n) {
		char next[32];
		snprintf(next, sizeof(next), "%lu", off + limit);
		cJSON_AddStringToObject(page, "nextCursor", next);
	} else {
		cJSON_AddNullToObject(page, "nextCursor");
	}
	return api_reply_json(r, 200, page);
}
