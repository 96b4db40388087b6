/* agentuity.c — the agentuity compatibility façade (issue: "agentuity compatibility"). Not built yet:
 * it claims no request, so everything falls through to /v1. */
#include "../http.h"

static bool claims(api_req *r)
{
	return false;
}

const api_facade api_facade_agentuity = {.name = "agentuity", .claims = claims};
