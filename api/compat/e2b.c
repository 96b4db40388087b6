/* e2b.c — the e2b compatibility façade (issue: "e2b compatibility"). Not built yet:
 * it claims no request, so everything falls through to /v1. */
#include "../http.h"

static bool claims(api_req *r)
{
	return false;
}

const api_facade api_facade_e2b = {.name = "e2b", .claims = claims};
