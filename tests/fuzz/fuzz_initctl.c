/* fuzz_initctl.c — the daemon reading a reply from a sandbox's init (initctl_recv, runtime/
 * initctl.c): init runs the workload's sandbox, so its replies and passed fds are hostile. */
#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz.h"
#include "initctl.h"

/* Input: <flags> <reply bytes>. Flags: bits 0-1 the number of fds passed with it (each
 * /dev/null), bit 2: init hangs up instead. A reply taken is NUL-terminated with the
 * protocol's magic; a refused one passes no fd on; and no fd is left open either way
 * (any fd init sent beyond the one kept is closed). */

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	if (!d)
		abort();
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* What init sends, as the daemon's own sender sends to init (initctl_send). */
static void send_reply(int sock, const uint8_t *p, size_t n, int nfds)
{
	int fds[3];
	for (int i = 0; i < nfds; i++)
		if ((fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
			abort();
	if (initctl_send(sock, p, n, fds, nfds) < 0)
		abort();
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_in in = {data, size};
	uint8_t flags = fuzz_u8(&in);
	if (in.n > 4096)
		return 0;
	int before = open_fds(), sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	if (flags & 4)
		close(sv[1]);
	else
		send_reply(sv[1], in.p, in.n, flags & 3);
	struct sl_rep rep;
	int passed = -2;
	sl_err err = {0};
	int r = initctl_recv(sv[0], &rep, &passed, 1000, &err);
	if (r == 0 && (rep.hdr.magic != SL_PROTO_MAGIC || !memchr(rep.msg, 0, sizeof(rep.msg))))
		abort();
	if (r < 0 && (passed != -1 || !err.msg[0]))
		abort();
	if (r == 1)
		abort(); /* the reply was there: no timeout */
	if (passed >= 0)
		close(passed);
	close(sv[0]);
	if (!(flags & 4))
		close(sv[1]);
	if (open_fds() != before)
		abort(); /* an fd init sent was kept open */
	return 0;
}
