# code_runner.py — the warm Python runner of executeCode (runtime/code.c), one per
# sandbox: a zygote that started the interpreter once and forks a clean child per call.
# Run as `python3 -c THIS SOCKET WRAPPER`; the starting execution ends once SOCKET
# listens, and the runner lives on detached (no execution of its own, so it keeps no
# sandbox from going idle). sandlot-coderun (init/coderun.c) is each call's execution:
# it connects, sends its fds 0/1/2, cwd, argv and environment, and gets back the child's
# pid and then its wait status. The call's execution going away (its timeout, a kill)
# kills the child's process group. The child never returns into this loop: whatever
# the code does to the interpreter (globals, monkeypatched modules) ends with it.
import os, sys, socket, select, fcntl

# Read at interpreter start-up: a call whose environment differs in one of these gets
# a fresh interpreter (exec), as it would without the runner.
STARTUP = (b'PYTHON', b'LANG', b'LC_')


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


def finish(code):
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
    os._exit(code)


def child(conn, wrapper, own_fds):
    os.setsid()
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
    for fd in fds + own_fds + [conn.detach()]:
        os.close(fd)
    parts = data.split(b'\0')[:-1]
    argc = int(parts[0])
    argv, envl = parts[1:1 + argc], parts[1 + argc:]
    env = dict(e.split(b'=', 1) for e in envl if b'=' in e)
    want = startup_env(env, os.environb.get(b'LC_CTYPE'))
    if want != startup_env(os.environb):
        exe = os.fsencode(sys.executable)
        os.execve(exe, [exe, b'-c', wrapper.encode()] + argv, env)
    env.update(want)
    os.environb.clear()
    os.environb.update(env)
    sys.argv = ['-c'] + [os.fsdecode(a) for a in argv]
    try:
        exec(compile(wrapper, '<string>', 'exec'),
             {'__name__': '__main__', '__builtins__': __builtins__})
        code = 0
    except SystemExit as e:
        code = exit_code(e)
    finish(code)


def serve(path, wrapper):
    lock = os.open(path + '.lock', os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # a runner serves PATH already (two first calls at once)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ls.bind(path)
    ls.listen(128)
    if os.fork():
        os._exit(0)  # the starting execution ends: the socket is ready
    os.setsid()
    nul = os.open('/dev/null', os.O_RDWR)
    for i in range(3):
        os.dup2(nul, i)
    os.close(nul)
    p = select.poll()
    p.register(ls, select.POLLIN)
    conns, pidfds = {}, {}  # conn fd -> (pid, conn); pidfd -> (pid, conn)
    warm = False
    while True:
        ready = p.poll(None if warm else 50)
        if not ready and not warm:
            # What the wrapper needs on failure, loaded while nobody waits.
            import json, traceback  # noqa: F401
            warm = True
        for fd, ev in ready:
            if fd == ls.fileno():
                try:
                    conn, _ = ls.accept()
                except OSError:
                    continue
                pid = os.fork()
                if pid == 0:
                    own = [ls.detach(), lock] + list(conns) + list(pidfds)
                    child(conn, wrapper, own)
                pfd = os.pidfd_open(pid)
                try:
                    conn.sendall(pid.to_bytes(4, 'little'))
                except OSError:
                    pass
                conns[conn.fileno()] = (pid, conn)
                pidfds[pfd] = (pid, conn)
                p.register(conn, select.POLLRDHUP)
                p.register(pfd, select.POLLIN)
            elif fd in pidfds:
                pid, c = pidfds.pop(fd)
                p.unregister(fd)
                os.close(fd)
                _, st = os.waitpid(pid, 0)
                if c.fileno() >= 0:  # not closed by the call going away
                    del conns[c.fileno()]
                    p.unregister(c)
                    try:
                        c.sendall(st.to_bytes(4, 'little'))
                    except OSError:
                        pass
                    c.close()
            elif fd in conns:
                pid, c = conns.pop(fd)
                p.unregister(fd)
                c.close()
                for target in (-pid, pid):
                    try:
                        os.kill(target, 9)
                    except OSError:
                        pass


serve(sys.argv[1], sys.argv[2])
