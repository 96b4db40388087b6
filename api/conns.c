/* conns.c — connection caps per client (a local uid, or a remote address) and in all,
 * and the head deadline: what keeps slow or idle clients from holding threads and fds. */
#include "conns.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "peer.h"

int api_caps_init(api_caps *c, const char *what, unsigned max, unsigned per_client)
{
	memset(c, 0, sizeof(*c));
	c->what = what;
	c->max = max ? max : 1;
	c->per_client = per_client;
	c->slot = calloc(c->max, sizeof(*c->slot));
	if (!c->slot)
		return -1;
	pthread_mutex_init(&c->lock, NULL);
	return 0;
}

/* Under the lock, and the lock kept: a thread that takes a place after this finds none
 * (max 0) and refuses its connection. */
static void caps_free(api_caps *c)
{
	free(c->slot);
	c->slot = NULL;
	c->max = 0;
}

void api_caps_fini(api_caps *c)
{
	pthread_mutex_lock(&c->lock);
	caps_free(c);
	pthread_mutex_unlock(&c->lock);
}

bool api_caps_fini_idle(api_caps *c)
{
	pthread_mutex_lock(&c->lock);
	bool idle = c->used == 0;
	if (idle)
		caps_free(c);
	pthread_mutex_unlock(&c->lock);
	return idle;
}

static bool addr_loopback(const unsigned char a[16])
{
	static const unsigned char v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	static const unsigned char one[16] = {[15] = 1};
	return !memcmp(a, one, 16) || (!memcmp(a, v4mapped, 12) && a[12] == 127);
}

void api_client_of(int fd, api_client *who)
{
	memset(who, 0, sizeof(*who));
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) < 0)
		return; /* gone already: counted as the address :: */
	if (ss.ss_family == AF_UNIX) {
		struct ucred cred;
		socklen_t cl = sizeof(cred);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0) {
			who->by_uid = true;
			who->uid = cred.uid;
		}
		return;
	}
	if (ss.ss_family == AF_INET) {
		who->addr[10] = who->addr[11] = 0xff;
		memcpy(who->addr + 12, &((struct sockaddr_in *)&ss)->sin_addr, 4);
	} else if (ss.ss_family == AF_INET6) {
		memcpy(who->addr, &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
	}
	/* Every local client is 127.0.0.1: they are told apart by their socket's owner. */
	uid_t uid;
	sl_err err = {0};
	if (addr_loopback(who->addr) && peer_uid(fd, &uid, &err) == 0) {
		who->by_uid = true;
		who->uid = uid;
	}
}

void api_client_name(const api_client *who, char *buf, size_t len)
{
	if (who->by_uid) {
		snprintf(buf, len, "uid %u", (unsigned)who->uid);
		return;
	}
	char a[INET6_ADDRSTRLEN] = "?";
	static const unsigned char v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	if (!memcmp(who->addr, v4mapped, 12))
		inet_ntop(AF_INET, who->addr + 12, a, sizeof(a));
	else
		inet_ntop(AF_INET6, who->addr, a, sizeof(a));
	snprintf(buf, len, "address %s", a);
}

static bool same_client(const api_client *a, const api_client *b)
{
	return a->by_uid == b->by_uid && (a->by_uid ? a->uid == b->uid : !memcmp(a->addr, b->addr, 16));
}

api_conn *api_caps_take(api_caps *c, const api_client *who, int fd, bool *client_cap)
{
	api_conn *free_slot = NULL;
	unsigned mine = 0;
	pthread_mutex_lock(&c->lock);
	for (unsigned i = 0; i < c->max; i++) {
		api_conn *k = &c->slot[i];
		if (!k->used)
			free_slot = free_slot ? free_slot : k;
		else if (same_client(&k->who, who))
			mine++;
	}
	*client_cap = c->per_client && mine >= c->per_client;
	if (*client_cap || !free_slot) {
		pthread_mutex_unlock(&c->lock);
		return NULL;
	}
	*free_slot = (api_conn){.who = *who, .fd = fd, .used = true, .waiting_head = false};
	c->used++;
	pthread_mutex_unlock(&c->lock);
	return free_slot;
}

void api_caps_drop(api_caps *c, api_conn *k)
{
	if (!k)
		return;
	pthread_mutex_lock(&c->lock);
	if (k->used) {
		k->used = false;
		c->used--;
	}
	pthread_mutex_unlock(&c->lock);
}

api_conn *api_caps_start(api_caps *c, int fd)
{
	api_conn *found = NULL;
	pthread_mutex_lock(&c->lock);
	for (unsigned i = 0; i < c->max && !found; i++)
		if (c->slot[i].used && !c->slot[i].started && c->slot[i].fd == fd)
			found = &c->slot[i];
	if (found)
		found->started = true;
	pthread_mutex_unlock(&c->lock);
	return found;
}

void api_caps_wait_head(api_caps *c, api_conn *k, bool waiting)
{
	if (!k)
		return;
	pthread_mutex_lock(&c->lock);
	k->waiting_head = waiting && !k->upgraded;
	k->head_since = sl_mono_ms();
	pthread_mutex_unlock(&c->lock);
}

void api_caps_upgraded(api_caps *c, api_conn *k)
{
	if (!k)
		return;
	pthread_mutex_lock(&c->lock);
	k->upgraded = true;
	k->waiting_head = false;
	pthread_mutex_unlock(&c->lock);
}

unsigned api_caps_cut_slow(api_caps *c, int64_t limit_ms)
{
	unsigned n = 0;
	int64_t now = sl_mono_ms();
	/* Under the lock a used slot's fd is still its connection's: libmicrohttpd drops the
	 * place (NOTIFY_CLOSED, which takes this lock) before it closes the socket. */
	pthread_mutex_lock(&c->lock);
	for (unsigned i = 0; i < c->max; i++) {
		api_conn *k = &c->slot[i];
		if (!k->used || !k->waiting_head || k->cut || now - k->head_since <= limit_ms)
			continue;
		shutdown(k->fd, SHUT_RDWR);
		k->cut = true;
		n++;
	}
	pthread_mutex_unlock(&c->lock);
	return n;
}

void api_caps_forget(api_caps *c, api_conn *k)
{
	pthread_mutex_lock(&c->lock);
	if (k->used && !k->started) {
		k->used = false;
		c->used--;
	}
	pthread_mutex_unlock(&c->lock);
}

static void refuse_plain(int fd, const char *msg)
{
	char body[400], buf[700];
	snprintf(body, sizeof(body), "{\"error\":{\"code\":\"RESOURCE_EXHAUSTED\",\"message\":\"%s\"}}",
		 msg);
	int n = snprintf(buf, sizeof(buf),
			 "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\n"
			 "Retry-After: 1\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n%s",
			 strlen(body), body);
	/* A new socket's buffer is empty: this never blocks, and a client gone is fine. */
	if (n > 0 && (size_t)n < sizeof(buf))
		(void)!send(fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL);
	/* The client's request stays unread, so the close may reset the connection before it
	 * reads this answer: a reset is a refusal as well. */
	shutdown(fd, SHUT_WR);
}

void api_caps_refuse(api_caps *c, int fd, const api_client *who, bool client_cap, bool plain)
{
	char name[80], msg[300];
	api_client_name(who, name, sizeof(name));
	if (client_cap)
		snprintf(msg, sizeof(msg),
			 "%s has %u connections open to %s, its cap (sandlot serve "
			 "--max-conns-per-client): close some and retry",
			 name, c->per_client, c->what);
	else
		snprintf(msg, sizeof(msg),
			 "%s has %u connections open, its cap (sandlot serve --max-conns): retry "
			 "later",
			 c->what, c->max);
	if (plain)
		refuse_plain(fd, msg);
	close(fd);
	pthread_mutex_lock(&c->lock);
	int64_t now = sl_mono_ms();
	unsigned long n = ++c->refused;
	bool log = now - c->refused_logged_ms >= 10000;
	if (log) {
		c->refused = 0;
		c->refused_logged_ms = now;
	}
	pthread_mutex_unlock(&c->lock);
	if (log)
		sl_log(SL_LOG_WARN, "serve: refused %lu connection(s) in 10 s; the last: %s", n, msg);
}
