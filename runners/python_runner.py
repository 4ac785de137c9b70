# abox's code runner for Python (and bash) contexts of the code plane
# (aboxd, port 49999): a long-lived interpreter inside the sandbox that
# reads one JSON request per line on stdin, {"id", "code", "env"}, runs it
# in a namespace that persists between cells, and writes JSON lines on
# stdout, each tagged with the request's id: stdout/stderr text as it
# comes, results (the value of the cell's last expression is the main
# one, with every rich form the object offers; matplotlib figures as
# PNG), an error with name, value and traceback, the execution count, and
# end_of_execution. SIGINT interrupts the running cell.
#   python3 -u -c "$(cat python_runner.py)" [python|bash]
import ast
import base64
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback

real_out = sys.stdout
out_lock = threading.Lock()
current = {"id": None}


def emit(obj):
    obj["id"] = current["id"]
    if obj.get("type") in ("stdout", "stderr"):
        # the SDKs' OutputMessage carries it (Unix epoch in nanoseconds)
        obj["timestamp"] = time.time_ns()
    line = json.dumps(obj, default=str)
    with out_lock:
        real_out.write(line + "\n")
        real_out.flush()


class Stream(io.TextIOBase):
    """Line-buffered: print("a") is one "a\n" message, as Jupyter gives it."""

    def __init__(self, kind):
        self.kind = kind
        self.buf = ""

    def writable(self):
        return True

    def write(self, s):
        self.buf += s
        if "\n" in self.buf:
            cut = self.buf.rindex("\n") + 1
            emit({"type": self.kind, "text": self.buf[:cut]})
            self.buf = self.buf[cut:]
        return len(s)

    def flush(self):
        if self.buf:
            emit({"type": self.kind, "text": self.buf})
            self.buf = ""


FORMS = (("_repr_png_", "png"), ("_repr_jpeg_", "jpeg"), ("_repr_svg_", "svg"), ("_repr_html_", "html"),
         ("_repr_markdown_", "markdown"), ("_repr_latex_", "latex"), ("_repr_json_", "json"),
         ("_repr_javascript_", "javascript"), ("_repr_pdf_", "pdf"))


def forms(value):
    data = {"text": repr(value)}
    for attr, key in FORMS:
        f = getattr(value, attr, None)
        if not callable(f):
            continue
        try:
            v = f()
        except Exception:
            continue
        if isinstance(v, tuple):  # (data, metadata)
            v = v[0]
        if v is None:
            continue
        if isinstance(v, bytes):
            v = base64.b64encode(v).decode()
        data[key] = v
    if "png" not in data and type(value).__name__ == "Figure" and hasattr(value, "savefig"):
        buf = io.BytesIO()
        value.savefig(buf, format="png")
        data["png"] = base64.b64encode(buf.getvalue()).decode()
    return data


def figures():
    plt = sys.modules.get("matplotlib.pyplot")
    if not plt:
        return
    for num in plt.get_fignums():
        fig = plt.figure(num)
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        emit({"type": "result", "is_main_result": False, "text": repr(fig),
              "png": base64.b64encode(buf.getvalue()).decode()})
    plt.close("all")


def error(e):
    tb = traceback.format_exception(type(e), e, e.__traceback__)
    # the runner's own frames are not the user's business
    tb = [t for t in tb if "<string>" not in t or "<cell>" in t]
    emit({"type": "error", "name": type(e).__name__, "value": str(e), "traceback": "".join(tb)})


namespace = {"__name__": "__main__", "__builtins__": __builtins__}


def run_python(code):
    tree = ast.parse(code, "<cell>", "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, "<cell>", "exec"), namespace)
    if last is not None:
        value = eval(compile(last, "<cell>", "eval"), namespace)
        if value is not None:
            emit({"type": "result", "is_main_result": True, **forms(value)})


shell = None


def run_bash(code):
    global shell
    if shell is None or shell.poll() is not None:
        shell = subprocess.Popen(["bash", "--norc", "--noprofile"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, start_new_session=False)
        threading.Thread(target=pump, args=(shell.stderr, "stderr"), daemon=True).start()
    marker = "__abox_end_%s__" % current["id"]
    shell.stdin.write(("%s\nprintf '\\n%s %%s\\n' $?\n" % (code, marker)).encode())
    shell.stdin.flush()
    pending = b""
    while True:
        chunk = shell.stdout.readline()
        if not chunk:
            raise RuntimeError("the bash of this context ended")
        text = chunk.decode(errors="replace")
        if text.startswith(marker):
            status = int(text.split()[1])
            if status:
                emit({"type": "error", "name": "ExitCode", "value": "exit status %d" % status, "traceback": ""})
            return
        if pending:
            emit({"type": "stdout", "text": pending.decode(errors="replace")})
            pending = b""
        if text == "\n":
            pending = chunk  # may be the newline printed before the marker
            continue
        emit({"type": "stdout", "text": text})


def pump(pipe, kind):
    for chunk in iter(lambda: pipe.readline(), b""):
        emit({"type": kind, "text": chunk.decode(errors="replace")})


def main():
    language = sys.argv[1] if len(sys.argv) > 1 else "python"
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.environ.setdefault("MPLBACKEND", "Agg")
    count = 0
    stdin = sys.stdin
    while True:
        try:
            line = stdin.readline()
        except KeyboardInterrupt:
            continue
        if not line:
            return
        try:
            req = json.loads(line)
        except ValueError:
            continue
        current["id"] = req.get("id")
        saved = dict(os.environ)
        os.environ.update({k: str(v) for k, v in (req.get("env") or {}).items()})
        sys.stdout, sys.stderr = Stream("stdout"), Stream("stderr")
        count += 1
        try:
            if language == "bash":
                run_bash(req.get("code", ""))
            else:
                run_python(req.get("code", ""))
        except BaseException as e:  # KeyboardInterrupt and SystemExit too: the context lives on
            error(e)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            sys.stdout, sys.stderr = real_out, sys.__stderr__
            os.environ.clear()
            os.environ.update(saved)
        try:
            figures()
        except Exception as e:
            error(e)
        emit({"type": "number_of_executions", "execution_count": count})
        emit({"type": "end_of_execution"})


main()
