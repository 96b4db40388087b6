/* mcp.h — the Model Context Protocol server: api/mcp.c speaks JSON-RPC 2.0 over
 * streamable HTTP at /mcp; api/mcp_tools.c is the tools, over the calls /v1 makes. */
#ifndef SANDLOT_API_MCP_H
#define SANDLOT_API_MCP_H

#include "http.h"

/* One tool as tools/list shows it, and its call. */
typedef struct mcp_tool {
	const char *name, *title, *description;
	const char *input_schema; /* JSON Schema text of the arguments */
	/* 0 with *OUT, the result as an object (its structuredContent), and *TEXT (malloc'd)
	 * when a model should read something else than OUT printed as JSON; -1 with ERR,
	 * answered as a tool error (isError) carrying the daemon's message. */
	int (*call)(api_req *r, const cJSON *args, cJSON **out, char **text, sl_err *err);
} mcp_tool;

extern const mcp_tool mcp_tools[];
extern const size_t mcp_ntools;

#endif
