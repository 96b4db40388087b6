# code_runner.py — the warm Python runner of executeCode (runtime/code.c), one per
# sandbox: a zygote that started the interpreter once and forks a clean child per call.
# Run as `python3 -c THIS SOCKET WRAPPER` after a sandbox's first Python call has been
# answered (code.c's code_runner_start: that call ran cold), it lives on detached (no execution of its
# own, so it keeps no sandbox from going idle). sandlot-coderun (init/coderun.c) is each call's execution:
# it connects, sends its fds 0/1/2, cwd, argv and environment, and gets back the child's
# pid and then its wait status. The call's execution going away (its timeout, a kill)
# kills the child's process group. The child never returns into this loop: whatever
# the code does to the interpreter (globals, monkeypatched modules) ends with it.
#
# The child is forked ahead: one waits in accept() with its pages already its own, so a
# call pays neither the fork nor the copy-on-write faults after it (a fault costs ~15 µs
# on a VM host, and a call would touch ~1000 pages; docs/bench.md, "Issue 44").
import os, sys, socket, select, fcntl, time

# Read at interpreter start-up: a call whose environment differs in one of these gets
# a fresh interpreter (exec), as it would without the runner.
STARTUP = (b'PYTHON', b'LANG', b'LC_')
MADV_POPULATE_WRITE = 23  # Linux 5.14
TAIL = 0.03  # seconds after a node call ends before the next node starts


def startup_env(env, coerced=None):
    """ENV's variables read at start-up, as the interpreter leaves them: in the C locale
    it sets LC_CTYPE (to COERCED, what it set in the runner; PEP 538). """
    e = {k: v for k, v in env.items() if k.startswith(STARTUP)}
    if (coerced and b'LC_ALL' not in e and e.get(b'PYTHONCOERCECLOCALE') != b'0' and
            (e.get(b'LC_CTYPE') or e.get(b'LANG') or b'C') in (b'C', b'POSIX')):
        e[b'LC_CTYPE'] = coerced
    return e


def exit_code(e):
    c = e.code
    if c is None:
        return 0
    if isinstance(c, int):
        return c & 0xff
    try:
        sys.stderr.write(str(c) + '\n')
    except Exception:
        pass
    return 1


def finish(code, then=None):
    # What an interpreter does on its way out, then out without unwinding the runner.
    try:
        if 'threading' in sys.modules:
            sys.modules['threading']._shutdown()
        import atexit
        atexit._run_exitfuncs()
    except BaseException:
        pass
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except BaseException:
            pass
    if then:
        then()
    os._exit(code)


def madvise_fn():
    """libc's madvise, or None; ctypes is left out of sys.modules, as a fresh interpreter
    has it."""
    before = set(sys.modules)
    try:
        import ctypes
        f = ctypes.CDLL(None, use_errno=True).madvise
        f.argtypes = (ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int)
        f.restype = ctypes.c_int
    except Exception:
        f = None
    for m in set(sys.modules) - before:
        del sys.modules[m]
    return f


def writable():
    """This process's private writable mappings, as (start, end)."""
    with open('/proc/self/maps', 'rb') as f:
        maps = f.read().splitlines()
    out = []
    for line in maps:
        f = line.split()
        if f[1] == b'rw-p':
            a, b = f[0].split(b'-')
            out.append((int(a, 16), int(b, 16)))
    return out


def own_pages():
    """The ranges of this process's pages that are its own (present, mapped once): in a
    child that ran a call, the pages the call wrote or made. [] if pagemap cannot say."""
    out = []
    try:
        fd = os.open('/proc/self/pagemap', os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return out
    try:
        for a, b in writable():
            n = (b - a) >> 12
            ent = memoryview(os.pread(fd, n * 8, (a >> 12) * 8)).cast('Q')
            start = None
            for i in range(len(ent) + 1):
                own = i < len(ent) and ent[i] >> 56 & 0x81 == 0x81  # present, exclusive
                if own and start is None:
                    start = i
                elif not own and start is not None:
                    out.append((a + (start << 12), (i - start) << 12))
                    start = None
    except (OSError, ValueError):
        return []
    finally:
        os.close(fd)
    return out


def populate(madvise, pages):
    """Copy PAGES (every private writable page when there is no list) now, one call per
    range, rather than one fault per page during a call."""
    if madvise is None:
        return
    for a, n in pages or [(a, b - a) for a, b in writable()]:
        madvise(a, n, MADV_POPULATE_WRITE)


def learn(code, wrapper, ctl):
    """The scout, forked once at start: it runs print(1) as a call would (stdout is
    /dev/null here) and sends the pages that took, the ones each waiting child copies
    ahead (a few hundred of the runner's thousands)."""
    src = os.memfd_create('rehearsal')
    os.write(src, b'print(1)\n')

    def report():
        pages = own_pages()[:4000]
        msg = b''.join(a.to_bytes(8, 'little') + n.to_bytes(8, 'little') for a, n in pages)
        try:
            ctl.send(msg)
        except OSError:
            pass

    run([b'/proc/self/fd/%d' % src, b'/dev/null'], dict(os.environb), code, wrapper, report)


def request(conn):
    """A call's request: its argv and environment (its fds are made 0, 1, 2 and cwd)."""
    msg, fds, _, _ = socket.recv_fds(conn, 1 << 16, 4)
    if len(msg) < 4 or len(fds) != 4:
        os._exit(255)
    n = int.from_bytes(msg[:4], 'little')
    data = msg[4:]
    while len(data) < n:
        b = conn.recv(n - len(data))
        if not b:
            os._exit(255)
        data += b
    for i in range(3):
        os.dup2(fds[i], i)
    os.fchdir(fds[3])
    for fd in fds + [conn.detach()]:
        os.close(fd)
    parts = data.split(b'\0')[:-1]
    argc = int(parts[0])
    argv, envl = parts[1:1 + argc], parts[1 + argc:]
    return argv, dict(e.split(b'=', 1) for e in envl if b'=' in e)


def run(argv, env, code, wrapper, then=None):
    want = startup_env(env, os.environb.get(b'LC_CTYPE'))
    if want != startup_env(os.environb):
        exe = os.fsencode(sys.executable)
        os.execve(exe, [exe, b'-c', wrapper.encode()] + argv, env)
    env.update(want)
    # Only what differs: each putenv or unsetenv costs (~20 µs here), and a call's
    # environment is mostly the runner's own.
    cur = os.environb
    for k in [k for k in cur if k not in env]:
        del cur[k]
    for k, v in env.items():
        if cur.get(k) != v:
            cur[k] = v
    sys.argv = ['-c'] + [os.fsdecode(a) for a in argv]
    try:
        exec(code, {'__name__': '__main__', '__builtins__': __builtins__})
        rc = 0
    except SystemExit as e:
        rc = exit_code(e)
    finish(rc, then)


def waiting(ls, ctl, gone, keep, code, wrapper, madvise, pages, node=None):
    """The child forked ahead: ready before a call comes, it takes the next one off the
    socket, tells the zygote (which forks the next), and serves it. It ends if the zygote
    does (GONE hangs up), so a killed runner leaves no one listening. For node (NODE: its
    command) it becomes a node started ahead, which does the same (code.c's js_runner)."""
    os.setsid()
    for fd in keep:
        os.close(fd)
    if node:
        fds = [ls.fileno(), ctl.fileno(), gone]
        for fd in fds:
            os.set_inheritable(fd, True)
        try:
            os.execvp(node[0], node + [wrapper] + [str(fd) for fd in fds])
        except OSError:
            os._exit(127)
    if pages is not None:
        populate(madvise, pages)
    p = select.poll()
    p.register(ls, select.POLLIN)
    p.register(gone, select.POLLIN)
    while True:
        ready = dict(p.poll())
        if gone in ready:
            os._exit(0)
        try:
            conn, _ = ls.accept()
            conn.setblocking(True)
            break
        except OSError:
            continue
    pid = os.getpid().to_bytes(4, 'little')
    try:
        socket.send_fds(ctl, [pid], [conn.fileno()])
    except OSError:
        os._exit(255)  # the zygote is gone: the call sees no pid, and starts another
    for fd in (ls.detach(), ctl.detach(), gone):
        os.close(fd)
    try:
        conn.sendall(pid)
    except OSError:
        os._exit(255)
    argv, env = request(conn)
    run(argv, env, code, wrapper)


def scout(ctl, ctl_child, keep, code, wrapper):
    """The pages a call writes, from a scout child that ran one ([] if it could not
    say: each waiting child then copies all)."""
    pid = os.fork()
    if pid == 0:
        for fd in keep:
            os.close(fd)
        learn(code, wrapper, ctl_child)
    pages = []
    if select.select([ctl], [], [], 5)[0]:
        try:
            msg = ctl.recv(4000 * 16)
            pages = [(int.from_bytes(msg[i:i + 8], 'little'),
                      int.from_bytes(msg[i + 8:i + 16], 'little'))
                     for i in range(0, len(msg) - 15, 16)]
        except OSError:
            pass
    os.waitpid(pid, 0)
    return pages


def listen(path):
    """The runner's socket and lock, or (None, None) where another runner serves PATH
    (two first calls at once) or none can listen."""
    try:
        lock = os.open(path + '.lock', os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return None, None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        ls.bind(path)
        ls.listen(128)
        # Two waiting nodes poll it: the one that loses a call's accept() polls again
        # (where it sees the zygote end) rather than blocking in accept().
        ls.setblocking(False)
    except OSError:
        os.close(lock)
        return None, None
    return ls, lock


def serve(path, wrapper, node=None):
    ls, lock = listen(path)
    if ls is None:
        return
    if os.fork():
        os._exit(0)  # detached: not the child of the call that started it
    os.setsid()
    nul = os.open('/dev/null', os.O_RDWR)
    for i in range(3):
        os.dup2(nul, i)
    os.close(nul)
    if node:  # the calls are node's: nothing of Python's to prepare
        madvise, code = None, None
    else:
        import json, traceback  # noqa: F401  what the wrapper needs on failure
        madvise = madvise_fn()
        code = compile(wrapper, '<string>', 'exec')
    ctl, ctl_child = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    gone, alive = os.pipe()  # the zygote holds ALIVE: its end hangs GONE up
    ctl.setblocking(False)  # (recv_fds drops its flags argument)
    pages = scout(ctl, ctl_child, [ctl.fileno(), lock, alive],
                  code, wrapper) if madvise else []
    p = select.poll()
    p.register(ctl, select.POLLIN)
    calls, conns = {}, {}  # pidfd -> [pid, conn]; conn fd -> [pid, conn]
    waiters = {}  # pidfd -> pid of the children forked ahead
    # Node keeps two waiting: a call that comes while the node after the last call
    # still starts (~0.1 s of a CPU, more on a busy host) takes the other.
    want = 2 if node else 1
    born = again = tail = 0.0  # when one was last forked; not before AGAIN when one died
    # waiting, nor (unless a call waits) before TAIL
    pending = watching = False  # a call waits with no child to take it; LS polled
    while True:
        # Forked while no call runs: a fork (and the child's copying), or a node's
        # start, beside a call would take the CPU it needs and hold up its status (a
        # node started as a call is taken made calls slower: docs/bench.md). A call that
        # comes while another runs, with none waiting, gets a child at once.
        while len(waiters) < want and time.monotonic() >= again and (
                pending or not conns and time.monotonic() >= tail):
            born = time.monotonic()
            pid = os.fork()
            if pid == 0:
                keep = [ctl.detach(), lock, alive] + list(conns) + list(calls)
                waiting(ls, ctl_child, gone, keep, code, wrapper, madvise,
                        None if pending else pages, node)
            pidfd = os.pidfd_open(pid)
            waiters[pidfd] = pid
            calls[pidfd] = [pid, None]
            p.register(pidfd, select.POLLIN)
            pending = False
        if watching != (not waiters and not pending):
            watching = not watching
            (p.register(ls, select.POLLIN) if watching else p.unregister(ls))
        wait = (again if pending else max(again, tail)) - time.monotonic()
        ready = p.poll(wait * 1000 if len(waiters) < want and wait > 0 else None)
        pending = pending or any(fd == ls.fileno() for fd, _ in ready)
        # A waiting child's "took a call" comes before its end: read it first.
        while True:
            try:
                msg, fds, _, _ = socket.recv_fds(ctl, 16, 1)
            except BlockingIOError:
                break
            pid = int.from_bytes(msg[:4], 'little')
            took = next((fd for fd, w in waiters.items() if w == pid), None)
            for fd in fds:
                conn = socket.socket(fileno=fd)
                if took is not None:
                    calls[took][1] = conn
                    conns[fd] = [pid, conn]
                    p.register(conn, select.POLLRDHUP)
                else:
                    conn.close()
            if took is not None:
                del waiters[took]
        for fd, ev in ready:
            if fd in calls:
                pid, c = calls.pop(fd)
                p.unregister(fd)
                os.close(fd)
                _, st = os.waitpid(pid, 0)
                if fd in waiters:
                    # Gone before a call (killed): forked again above, at once unless
                    # it did not last a second (a memory limit), so it cannot spin.
                    del waiters[fd]
                    if time.monotonic() - born < 1:
                        if node:  # node cannot start here: calls run cold
                            try:
                                os.unlink(path)
                            except OSError:
                                pass
                            os._exit(0)
                        again = time.monotonic() + 0.5
                    continue
                if c is not None and c.fileno() >= 0:  # not closed by the call going away
                    del conns[c.fileno()]
                    p.unregister(c)
                    try:
                        c.sendall(st.to_bytes(4, 'little'))
                    except OSError:
                        pass
                    c.close()
                if node and waiters:
                    # The other node serves a call that comes now: the next starts
                    # once this call's answer is on its way (init, the daemon).
                    tail = time.monotonic() + TAIL
            elif fd in conns:
                pid, c = conns.pop(fd)
                p.unregister(fd)
                c.close()
                for target in (-pid, pid):
                    try:
                        os.kill(target, 9)
                    except OSError:
                        pass


serve(sys.argv[1], sys.argv[2], sys.argv[3:])
