# e2b_repl.py — one E2B code-interpreter context for Python, run inside the sandbox by
# sandlot's E2B façade (api/compat/e2b_interp.c) as a long-lived execution. It reads one
# JSON request a line on stdin ({"req","code","env_vars"}) and answers with the
# code interpreter's NDJSON events on stdout, each tagged "_req"; names, imports and
# definitions persist between requests, and the value of a final expression is the result.
import ast
import json
import os
import select
import sys
import threading
import traceback

os.environ.pop("SANDLOT_E2B_LANGUAGE", None)
_proto = os.fdopen(os.dup(1), "w", encoding="utf-8", errors="replace")
_lock = threading.Lock()
_cur = [None]


def _emit(obj):
    obj["_req"] = _cur[0]
    line = json.dumps(obj)
    with _lock:
        _proto.write(line + "\n")
        _proto.flush()


class _Stream:
    """sys.stdout/sys.stderr: whole lines become events; the rest at the end of the cell."""

    def __init__(self, kind):
        self.kind, self.buf = kind, ""
        self.encoding, self.errors = "utf-8", "replace"

    def write(self, s):
        s = str(s)
        self.buf += s
        i = self.buf.rfind("\n")
        if i >= 0:
            _emit({"type": self.kind, "text": self.buf[: i + 1]})
            self.buf = self.buf[i + 1 :]
        return len(s)

    def flush(self):
        if self.buf:
            _emit({"type": self.kind, "text": self.buf})
            self.buf = ""

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


def _result(value, main):
    """A result event: repr() as text, plus the formats the value offers (IPython's
    _repr_*_ protocol; png and jpeg as base64)."""
    ev = {"type": "result", "text": repr(value), "is_main_result": main}
    for key, meth in _REPRS + (("png", "_repr_png_"), ("jpeg", "_repr_jpeg_")):
        f = getattr(value, meth, None)
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


_ns = {"__name__": "__main__", "__builtins__": __builtins__, "display": display}
_count = 0


def _run(code, env):
    global _count
    _count += 1
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update({k: str(v) for k, v in env.items()})
    try:
        tree = ast.parse(code, "<cell>", "exec")
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
        sys.stdout.flush()
        sys.stderr.flush()
        for p in _pumps:
            p.drain()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


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
            _run(req.get("code", ""), req.get("env_vars") or {})
        except KeyboardInterrupt:
            pass
        _emit({"type": "number_of_executions", "execution_count": _count})
        _emit({"type": "end_of_execution"})


_main()
