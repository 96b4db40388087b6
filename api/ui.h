/* ui.h — the dashboard's files as `make` embeds them (build/ui/ui_assets.c, from ui/), and
 * the name of its session cookie, which the preview proxy and the relays cut out. */
#ifndef SANDLOT_API_UI_H
#define SANDLOT_API_UI_H

#include <stddef.h>

#define UI_COOKIE_NAME "sandlot_session"

typedef struct ui_asset {
	const char *path; /* under /ui/: "index.html", "app.js", ... */
	const char *type; /* its Content-Type */
	const unsigned char *data;
	size_t len;
} ui_asset;

/* Ends with a NULL path. */
extern const ui_asset ui_assets[];

#endif
