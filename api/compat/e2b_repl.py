# e2b_repl.py — one E2B code-interpreter context for Python, run inside the sandbox by
# sandlot's E2B façade (api/compat/e2b_interp.c) as a long-lived execution. It reads one
# JSON request a line on stdin ({"req","code","env_vars"}) and answers with the
# code interpreter's NDJSON events on stdout, each tagged "_req"; names, imports and
# definitions persist between requests, and the value of a final expression is the result.
# With SANDLOT_E2B_LANGUAGE=bash it drives one bash instead (_Shell): a bash context.
import ast
import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import traceback

_bash = os.environ.pop("SANDLOT_E2B_LANGUAGE", None) == "bash"
_rich_src = os.environ.pop("SANDLOT_E2B_RICH", "")
_proto = os.fdopen(os.dup(1), "w", encoding="utf-8", errors="replace")
_lock = threading.Lock()
_cur = [None]


# The longest text of one event, in characters; the rest is cut with a marker (the
# façade refuses lines much longer: docs/e2b.md, "Long output"). _MARK_ROOM: a text
# already cut by _Stream is that long at most, with its marker.
_TEXT_MAX = 256 << 10
_MARK_ROOM = 64


def _nbytes(s, a, b):
    """UTF-8 length of s[a:b], without copying a long slice at once."""
    if s.isascii():
        return max(0, b - a)
    return sum(len(s[j : min(b, j + 65536)].encode("utf-8", "replace")) for j in range(a, b, 65536))


def _emit(obj):
    for k in ("text", "value", "traceback"):
        v = obj.get(k)
        if isinstance(v, str) and len(v) > _TEXT_MAX + _MARK_ROOM:
            obj[k] = v[:_TEXT_MAX] + "\u2026[cut: %d bytes]" % _nbytes(v, _TEXT_MAX, len(v))
    obj["_req"] = _cur[0]
    line = json.dumps(obj)
    with _lock:
        _proto.write(line + "\n")
        _proto.flush()


class _Stream:
    """sys.stdout/sys.stderr: whole lines become events; the rest at the end of the cell.
    An event's text is cut at _TEXT_MAX characters, "…[cut: N bytes]" marking the place."""

    def __init__(self, kind):
        self.kind, self.buf, self.cut = kind, "", 0
        self.encoding, self.errors = "utf-8", "replace"

    def _keep(self, s, a, b):
        take = max(0, min(_TEXT_MAX - len(self.buf), b - a))
        if take:
            self.buf += s[a : a + take]
        self.cut += _nbytes(s, a + take, b)

    def _send(self, end):
        text = self.buf + ("\u2026[cut: %d bytes]" % self.cut if self.cut else "") + end
        self.buf, self.cut = "", 0
        if text:
            _emit({"type": self.kind, "text": text})

    def write(self, s):
        s = str(s)
        i = s.rfind("\n")
        if i < 0:
            self._keep(s, 0, len(s))
        else:
            self._keep(s, 0, i)
            self._send("\n")
            self._keep(s, i + 1, len(s))
        return len(s)

    def flush(self):
        self._send("")

    def isatty(self):
        return False

    def fileno(self):
        return 1 if self.kind == "stdout" else 2


class _Pump:
    """Output written to the fds themselves (subprocesses, C code) becomes events too. A
    thread forwards it as it comes; _drain takes the rest before a cell's end, under the
    same lock, so nothing is lost or reordered."""

    def __init__(self, fd, kind):
        self.kind, self.lock = kind, threading.Lock()
        self.r, w = os.pipe()
        os.dup2(w, fd)
        os.close(w)
        os.set_blocking(self.r, False)
        threading.Thread(target=self._run, daemon=True).start()

    def _take(self):
        while True:
            try:
                b = os.read(self.r, 65536)
            except BlockingIOError:
                return
            if not b:
                return
            _emit({"type": self.kind, "text": b.decode("utf-8", "replace")})

    def _run(self):
        while True:
            select.select([self.r], [], [])
            with self.lock:
                self._take()

    def drain(self):
        with self.lock:
            self._take()


_pumps = [_Pump(1, "stdout"), _Pump(2, "stderr")]
sys.stdout, sys.stderr = _Stream("stdout"), _Stream("stderr")
_requests = os.fdopen(os.dup(0), "rb")
_null = os.open(os.devnull, os.O_RDONLY)
os.dup2(_null, 0)
os.close(_null)
sys.stdin = open(os.devnull)
sys.argv = [""]
_REPRS = (("html", "_repr_html_"), ("markdown", "_repr_markdown_"), ("svg", "_repr_svg_"),
          ("latex", "_repr_latex_"), ("json", "_repr_json_"), ("javascript", "_repr_javascript_"))


_rich_ns = {}


def _rich():
    """e2b_repl_rich.py (figures, charts, PIL, DataFrames), run once it is needed."""
    if not _rich_ns:
        _rich_ns.update({"__name__": "_sandlot_rich", "display": display})
        exec(compile(_rich_src, "<sandlot-rich>", "exec"), _rich_ns)
    return _rich_ns


class _AfterImport:
    """A meta path finder that lets the modules rich results hook into load as they
    would, then hooks them: matplotlib (the inline backend) and PIL.Image (show)."""

    hooks = {"matplotlib": lambda m: _rich()["install_matplotlib"](m, os.environ),
             "PIL.Image": lambda m: _rich()["install_pil"](m)}

    def find_spec(self, name, path, target=None):
        hook = self.hooks.get(name)
        if hook is None or not _rich_src:
            return None
        for f in sys.meta_path:
            spec = None if f is self else getattr(f, "find_spec", lambda *a: None)(
                name, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _HookedLoader(spec.loader, hook)
                return spec
        return None


class _HookedLoader:
    def __init__(self, loader, hook):
        self._loader, self._hook = loader, hook

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        try:
            self._hook(module)
        except Exception:  # the module works without rich results
            traceback.print_exc()

    def __getattr__(self, name):
        return getattr(self._loader, name)


sys.meta_path.insert(0, _AfterImport())


def _result(value, main):
    """A result event: repr() as text, plus the formats the value offers (IPython's
    _repr_*_ protocol; png and jpeg as base64); a matplotlib figure's png and chart,
    a DataFrame's data."""
    ev = {"type": "result", "text": repr(value), "is_main_result": main}
    mod = type(value).__module__
    try:
        if mod.startswith("matplotlib.") and _rich_src:
            from matplotlib.figure import Figure

            if isinstance(value, Figure):
                _rich()["figure_formats"](value, ev)
        elif mod.startswith("pandas.") and _rich_src:
            from pandas import DataFrame

            if isinstance(value, DataFrame):
                ev["data"] = _rich()["dataframe_data"](value)
    except Exception:
        traceback.print_exc()
    for key, meth in _REPRS + (("png", "_repr_png_"), ("jpeg", "_repr_jpeg_")):
        f = None if key in ev else getattr(value, meth, None)
        if not callable(f):
            continue
        try:
            out = f()
        except Exception:
            continue
        if isinstance(out, tuple):
            out = out[0]
        if out is None:
            continue
        if isinstance(out, bytes):
            import base64

            out = base64.b64encode(out).decode()
        ev[key] = out
    _emit(ev)


def display(*objs):
    """IPython's display(): each object as a result that is not the main one."""
    sys.stdout.flush()
    for o in objs:
        _result(o, False)


def _drain():
    sys.stdout.flush()
    sys.stderr.flush()
    for p in _pumps:
        p.drain()


def _system(cmd):
    """IPython's `!cmd`: a shell line whose output streams as the cell's."""
    _drain()
    _ns["_exit_code"] = subprocess.run(cmd, shell=True, executable="/bin/bash").returncode
    _drain()


def _getoutput(cmd):
    """IPython's `x = !cmd`: the output's lines."""
    r = subprocess.run(cmd, shell=True, executable="/bin/bash", stdout=subprocess.PIPE)
    _ns["_exit_code"] = r.returncode
    return r.stdout.decode("utf-8", "replace").splitlines()


_ns = {"__name__": "__main__", "__builtins__": __builtins__, "display": display,
       "_sandlot_system": _system, "_sandlot_getoutput": _getoutput}
_count = 0
_BANG = re.compile(r"^(\s*)(?:([\w.]+)\s*=\s*)?!(.*)$")


def _ipython_lines(code):
    """What IPython does to a cell before Python sees it: leading blank lines dropped,
    the first line's indentation taken off every line that has it, and, when the cell
    is not Python as it is, `!cmd` and `x = !cmd` lines made shell calls."""
    lines = code.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    indent = re.match(r"[ \t]*", lines[0]).group(0) if lines else ""
    if indent:
        lines = [l[len(indent):] if l.startswith(indent) else l for l in lines]
    code = "\n".join(lines)
    try:
        ast.parse(code, "<cell>", "exec")
        return code
    except SyntaxError:
        pass
    out = []
    for l in lines:
        m = _BANG.match(l)
        if not m:
            out.append(l)
        elif m.group(2):
            out.append("%s%s = _sandlot_getoutput(%r)" % (m.group(1), m.group(2), m.group(3)))
        else:
            out.append("%s_sandlot_system(%r)" % (m.group(1), m.group(3)))
    return "\n".join(out)


def _run(code, env):
    global _count
    _count += 1
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update({k: str(v) for k, v in env.items()})
    try:
        tree = ast.parse(_ipython_lines(code), "<cell>", "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, "<cell>", "exec"), _ns)
        if last is not None:
            value = eval(compile(last, "<cell>", "eval"), _ns)
            if value is not None:
                _ns["_"] = value
                sys.stdout.flush()
                _result(value, True)
    except BaseException as e:  # the cell's error is a result, not the context's end
        sys.stdout.flush()
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != "<cell>":
            tb = tb.tb_next
        text = "".join(traceback.format_exception(type(e), e, tb))
        _emit({"type": "error", "name": type(e).__name__, "value": str(e), "traceback": text})
    finally:
        if _rich_ns:
            try:
                _rich_ns["flush_figures"]()
            except BaseException:
                traceback.print_exc()
        _drain()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _sq(s):
    return "'" + str(s).replace("'", "'\\''") + "'"


class _Shell:
    """A bash context: one bash for the context's life, so variables, functions and the
    working directory persist. A cell is eval'd with /dev/null as its stdin; its output
    goes to the pumped fds; bash then writes the cell's status on a pipe of its own."""

    def __init__(self):
        self.p = None

    def _start(self):
        r, self.fd = os.pipe()
        self.p = subprocess.Popen(["bash", "--norc", "--noprofile"], stdin=subprocess.PIPE,
                                  pass_fds=(self.fd,), start_new_session=True)
        os.close(self.fd)
        self.done = os.fdopen(r, "rb")

    def send(self, line):
        self.p.stdin.write((line + "\n").encode())
        self.p.stdin.flush()

    def stop(self):
        if self.p:
            try:
                os.killpg(self.p.pid, signal.SIGKILL)
            except OSError:
                pass
            self.p.wait()
            self.done.close()
            self.p = None

    def run(self, code, env):
        global _count
        _count += 1
        if self.p is None or self.p.poll() is not None:
            self.stop()
            self._start()
        sets = ["export %s=%s" % (k, _sq(v)) for k, v in env.items()]
        back = ["export %s=%s" % (k, _sq(os.environ[k])) if k in os.environ else "unset " + k
                for k in env]
        try:
            # The status fd closed for the cell, so that nothing it starts in the
            # background holds it open past a bash that ends.
            for line in sets + ["eval -- %s </dev/null %d>&-" % (_sq(code), self.fd),
                                "echo $? >&%d" % self.fd] + back:
                self.send(line)
            status = self.done.readline()
        except (OSError, KeyboardInterrupt):
            status = b""
        _drain()
        if not status:  # interrupted, or bash ended: the next cell gets a fresh one
            self.stop()
            _emit({"type": "error", "name": "ShellEnded",
                   "value": "the context's bash ended; the next cell starts a fresh one",
                   "traceback": ""})


def _main():
    while True:
        try:
            line = _requests.readline()
        except KeyboardInterrupt:
            continue
        if not line:
            return
        try:
            req = json.loads(line)
        except ValueError:
            continue
        _cur[0] = req.get("req")
        _emit({"type": "accepted"})  # the façade's: this request reached the interpreter
        try:
            if _bash:
                _shell.run(req.get("code", ""), req.get("env_vars") or {})
            else:
                _run(req.get("code", ""), req.get("env_vars") or {})
        except KeyboardInterrupt:
            pass
        _emit({"type": "number_of_executions", "execution_count": _count})
        _emit({"type": "end_of_execution"})


_shell = _Shell()
_main()
