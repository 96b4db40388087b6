/* secrets.c — /v1/secrets: set (create or replace), list (names and dates), delete.
 * Values go in and never come out: no route returns one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "http.h"
#include "secret.h"

static cJSON *secret_json(const sl_secret *s)
{
	char t[40];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", s->name);
	sl_iso_time(s->created_ms, t, sizeof(t));
	cJSON_AddStringToObject(o, "createdAt", t);
	sl_iso_time(s->updated_ms, t, sizeof(t));
	cJSON_AddStringToObject(o, "updatedAt", t);
	return o;
}

void api_secret_wipe(api_req *r, const cJSON *body)
{
	const cJSON *value =
	    cJSON_IsObject(body) ? cJSON_GetObjectItemCaseSensitive(body, "value") : NULL;
	if (r->body)
		explicit_bzero(r->body, r->body_cap);
	if (cJSON_IsString(value))
		explicit_bzero(value->valuestring, strlen(value->valuestring));
}

int api_secret_put(api_req *r, const cJSON *body, const char *name, secret_mode mode,
		   sl_secret *out, bool *created, sl_err *err)
{
	const cJSON *value = cJSON_GetObjectItemCaseSensitive(body, "value");
	if (value && !cJSON_IsString(value))
		return sl_fail(err, SL_INVALID, 0, "value: must be a string");
	if (!name || !value)
		return sl_fail(err, SL_INVALID, 0, "%s: required", name ? "value" : "name");
	return secret_put(&r->srv->ctx->cfg, name, value->valuestring, strlen(value->valuestring),
			  mode, out, created, err);
}

enum MHD_Result api_secrets_set(api_req *r)
{
	static const char *const fields[] = {"name", "value", NULL};
	const cJSON *body;
	const char *name = NULL;
	sl_err err = {0};
	int rc = -1;
	sl_secret s;
	bool created = false;
	if (api_body_object(r, false, &body, &err) == 0 &&
	    api_json_fields(body, "", fields, &err) == 0 &&
	    api_json_string(body, "", "name", &name, &err) == 0)
		rc = api_secret_put(r, body, name, SECRET_PUT, &s, &created, &err);
	api_secret_wipe(r, body);
	if (rc < 0)
		return api_reply_error(r, &err);
	return api_reply_json(r, created ? 201 : 200, secret_json(&s));
}

enum MHD_Result api_secrets_list(api_req *r)
{
	sl_secret *list;
	size_t n;
	sl_err err = {0};
	if (secret_list(&r->srv->ctx->cfg, &list, &n, &err) < 0)
		return api_reply_error(r, &err);
	cJSON *o = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(o, "secrets");
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(arr, secret_json(&list[i]));
	free(list);
	return api_reply_json(r, 200, o);
}

enum MHD_Result api_secrets_delete(api_req *r)
{
	sl_err err = {0};
	if (secret_delete(&r->srv->ctx->cfg, r->param[0], &err) < 0)
		return api_reply_error(r, &err);
	return api_reply_empty(r, 204);
}
