# abox's code runner for Python (and bash) contexts of the code plane
# (aboxd, port 49999): a long-lived interpreter inside the sandbox that
# reads one JSON request per line on stdin, {"id", "code", "env"}, runs it
# in a namespace that persists between cells, and writes JSON lines, each
# tagged with the request's id: stdout/stderr text as it comes (with a
# timestamp), results (the main one, the value of the cell's last
# expression, and every display() or figure, with each rich form keyed as
# the E2B SDKs read it), an error with name, value and traceback, the
# execution count, and end_of_execution. SIGINT interrupts the running cell.
#
# Python cells run on IPython when the template has it (magics, !cmd,
# top-level await, rich display, matplotlib figures through its inline
# backend, tracebacks with source lines); otherwise on a plain interpreter
# that knows !cmd, %cd, %pwd, %env and %pip and top-level await, with
# repr() results and the object's own _repr_*_ forms (docs/daemon.md).
#   python3 -u -c "$(cat python_charts.py python_runner.py)" [python|bash]
# (python_charts.py gives figures their `chart` data; without it they have
# none)
import ast
import base64
import codecs
import importlib.abc
import importlib.util
import io
import json
import linecache
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time

# ---- the message channel -------------------------------------------------
# Messages go out on a private copy of fd 1 taken at start; fds 1 and 2
# then become pipes whose bytes are the running cell's stdout and stderr.
# So output of subprocesses and C code (os.system, a compiler, a library
# printing from C) reaches the cell as Jupyter gives it, and nothing a
# cell writes can forge or break a message.
chart_data = globals().get("chart_data", lambda obj: None)
_chan = os.fdopen(os.dup(1), "w", encoding="utf-8", errors="replace")
_chan_lock = threading.Lock()
current = {"id": None}


def emit(obj):
    obj["id"] = current["id"]
    if obj.get("type") in ("stdout", "stderr"):
        if obj["id"] is None:
            return  # output between cells (a background process): nobody's
        obj["timestamp"] = time.time_ns()  # the SDKs' OutputMessage reads it
    line = json.dumps(obj, default=str)
    with _chan_lock:
        _chan.write(line + "\n")
        _chan.flush()


SYNC = b"\x00abox-sync\x00"


class FdPump:
    """Reads what is written to fd `fd` and sends it as `kind` messages, a
    line or a batch of lines at a time (as a kernel's stream messages)."""

    def __init__(self, fd, kind):
        r, w = os.pipe()
        os.dup2(w, fd)
        os.close(w)
        self.fd, self.r, self.kind = fd, r, kind
        self.buf = ""
        self.dec = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.synced = threading.Event()
        threading.Thread(target=self.loop, daemon=True).start()

    def send(self, text):
        if text:
            emit({"type": self.kind, "text": text})

    def loop(self):
        pending = b""
        while True:
            try:
                data = os.read(self.r, 65536)
            except InterruptedError:
                continue
            if not data:
                return
            pending += data
            while True:
                i = pending.find(SYNC)
                if i < 0:
                    break
                self.buf += self.dec.decode(pending[:i])
                self.send(self.buf)
                self.buf = ""
                pending = pending[i + len(SYNC):]
                self.synced.set()
            # keep a possible start of the marker for the next read
            keep = 0
            for k in range(len(SYNC) - 1, 0, -1):
                if pending.endswith(SYNC[:k]):
                    keep = k
                    break
            self.buf += self.dec.decode(pending[:len(pending) - keep])
            pending = pending[len(pending) - keep:]
            cut = self.buf.rfind("\n") + 1
            if cut or len(self.buf) > 65536:
                cut = cut or len(self.buf)
                self.send(self.buf[:cut])
                self.buf = self.buf[cut:]

    def sync(self):
        """Sends whatever the cell wrote so far, before its end is told."""
        self.synced.clear()
        try:
            os.write(self.fd, SYNC)
        except OSError:
            return
        self.synced.wait(2)


def flush_output(pumps):
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:
            pass
    for p in pumps:
        p.sync()


# ---- results as the SDKs read them -----------------------------------------
MIME_KEYS = {"text/plain": "text", "text/html": "html", "text/markdown": "markdown", "image/svg+xml": "svg",
             "image/png": "png", "image/jpeg": "jpeg", "application/pdf": "pdf", "text/latex": "latex",
             "application/json": "json", "application/javascript": "javascript", "e2b/data": "data",
             "e2b/chart": "chart"}


def unquote(text):
    # a string's repr is its text without the quotes, as E2B gives it
    if isinstance(text, str) and len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def emit_result(bundle, main):
    msg = {"type": "result", "is_main_result": main}
    extra = {}
    for mime, value in bundle.items():
        if isinstance(value, bytes):
            value = base64.b64encode(value).decode()
        key = MIME_KEYS.get(mime)
        if key:
            msg[key] = value
        else:
            extra[mime] = value
    if "text" in msg:
        msg["text"] = unquote(msg["text"])
    msg["extra"] = extra
    emit(msg)


def frame_data(df):
    """A DataFrame's columns as lists (E2B's `data`), times as ISO text."""
    out = {}
    for col, values in df.to_dict(orient="list").items():
        out[str(col)] = [v.isoformat() if hasattr(v, "isoformat") else v for v in values]
    return json.loads(json.dumps(out, default=str))


def json_form(value):
    """Lists and dicts are also sent as JSON (numpy values as numbers)."""
    if not isinstance(value, (list, dict)):
        return None
    try:
        return json.loads(json.dumps(value, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o)))
    except (TypeError, ValueError):
        return None


# ---- after-import hooks ------------------------------------------------------
class AfterImport(importlib.abc.MetaPathFinder):
    """Calls a function on a module once it is imported, without importing
    it before the cell does (PIL costs tens of milliseconds)."""

    def __init__(self, hooks):
        self.hooks = hooks

    def find_spec(self, name, path, target=None):
        hook = self.hooks.pop(name, None)
        if hook is None:
            return None
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return None
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            try:
                hook(module)
            except Exception:
                pass

        spec.loader.exec_module = exec_module
        return spec


def pil_display(show):
    """Image.show() and Image.save(path) display the image, as E2B's
    template does (no viewer exists in a sandbox)."""

    def hook(image_mod):
        original_save = image_mod.Image.save

        def show_image(self, *args, **kwargs):
            show(self)

        def save(self, fp, format=None, **params):
            if isinstance(fp, (str, os.PathLike)):
                show(self)
            return original_save(self, fp, format, **params)

        image_mod.Image.show = show_image
        image_mod.Image.save = save

    return hook


# ---- Python on IPython -------------------------------------------------------
def ipython_engine():
    # IPython's package imports its terminal front end (prompt_toolkit and
    # more: a third of its start) for `IPython.embed`; a stand-in serves
    # that name until someone calls it, and the real module loads on use
    import types
    stub = types.ModuleType("IPython.terminal.embed")

    def embed(*args, **kwargs):
        sys.modules.pop("IPython.terminal.embed", None)
        from IPython.terminal.embed import embed as real
        return real(*args, **kwargs)

    stub.embed = embed
    sys.modules["IPython.terminal.embed"] = stub
    try:
        from IPython.core.displayhook import DisplayHook
        from IPython.core.displaypub import DisplayPublisher
        from IPython.core.formatters import BaseFormatter, JSONFormatter
        from IPython.core.interactiveshell import InteractiveShell
        from traitlets import ObjectName, Type, Unicode
        from traitlets.config import Config
    finally:
        if sys.modules.get("IPython.terminal.embed") is stub:
            del sys.modules["IPython.terminal.embed"]

    class Hook(DisplayHook):
        def write_output_prompt(self):
            pass

        def write_format_data(self, format_dict, md_dict=None):
            emit_result(dict(format_dict), True)

        def finish_displayhook(self):
            pass

    class Pub(DisplayPublisher):
        def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
            emit_result(dict(data), False)

        def clear_output(self, wait=False):
            pass

    class DataFormatter(BaseFormatter):
        format_type = Unicode("e2b/data")
        print_method = ObjectName("_repr_e2b_data_")
        _return_type = (dict, str)

        def __call__(self, obj):
            pandas = sys.modules.get("pandas")
            if pandas is not None and isinstance(obj, pandas.DataFrame):
                try:
                    return frame_data(obj)
                except Exception:
                    return None
            return super().__call__(obj)

    class ChartFormatter(BaseFormatter):
        format_type = Unicode("e2b/chart")
        print_method = ObjectName("_repr_e2b_chart_")
        _return_type = (dict, str)

        def __call__(self, obj):
            chart = chart_data(obj)
            return chart if chart is not None else super().__call__(obj)

    class JsonFormatter(JSONFormatter):
        def __call__(self, obj):
            form = json_form(obj)
            return form if form is not None else super().__call__(obj)

    class Shell(InteractiveShell):
        displayhook_class = Type(Hook)
        display_pub_class = Type(Pub)

        def _showtraceback(self, etype, evalue, stb):
            emit({"type": "error", "name": etype.__name__, "value": str(evalue), "traceback": "\n".join(stb)})

        def init_completer(self):
            # nothing asks a code plane's cell for completions: jedi (a
            # fifth of IPython's start) is not loaded
            self.Completer = types.SimpleNamespace(namespace=self.user_ns, global_namespace=self.user_global_ns,
                                                   custom_matchers=[], custom_completers=None)

        def system(self, cmd):
            # !cmd: through the shell with the cell's own stdout and
            # stderr (no pty: output as a pipe gives it)
            self.user_ns["_exit_code"] = subprocess.call(self.var_expand(cmd, depth=1), shell=True,
                                                         executable="/bin/bash")

    config = Config()
    config.HistoryManager.enabled = False  # no history database written in the sandbox
    shell = Shell.instance(config=config, colors="NoColor", separate_in="", separate_out="", separate_out2="")
    shell.display_formatter.formatters["e2b/data"] = DataFormatter(parent=shell.display_formatter)
    shell.display_formatter.formatters["application/json"] = JsonFormatter(parent=shell.display_formatter)
    # after image/png: the figure is drawn (its tick labels set) by then
    shell.display_formatter.formatters["e2b/chart"] = ChartFormatter(parent=shell.display_formatter)
    if importlib.util.find_spec("matplotlib_inline"):
        # pyplot picks the inline backend when a cell first imports it:
        # each figure becomes a PNG result at the cell's end
        os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    from IPython.display import display
    sys.meta_path.insert(0, AfterImport({"PIL.Image": pil_display(display)}))

    def run(code):
        count = shell.execution_count
        shell.run_cell(code, store_history=True)
        return count

    return run


# ---- Python without IPython --------------------------------------------------
def plain_engine():
    import asyncio
    import traceback

    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    loop = asyncio.new_event_loop()
    state = {"count": 0}

    def system(cmd):
        return subprocess.call(cmd, shell=True, executable="/bin/bash")

    def magic(line):
        name, _, arg = line.partition(" ")
        arg = arg.strip()
        if name == "cd":
            os.chdir(os.path.expanduser(arg or "~"))
            print(os.getcwd())
        elif name == "pwd":
            return os.getcwd()
        elif name == "env":
            if "=" in arg:
                k, _, v = arg.partition("=")
                os.environ[k.strip()] = v.strip()
            elif arg:
                return os.environ.get(arg)
            else:
                return dict(os.environ)
        elif name in ("pip", "pip3"):
            system(shlex.join([sys.executable, "-m", "pip"] + shlex.split(arg)))
        else:
            raise NameError("%%%s: this context has no IPython; it knows %%cd, %%pwd, %%env and %%pip" % name)
        return None

    namespace["__abox_system__"] = system
    namespace["__abox_magic__"] = magic

    def translate(code):
        # !cmd and %magic lines become calls (their indentation kept)
        out = []
        for line in code.split("\n"):
            body = line.lstrip()
            lead = line[:len(line) - len(body)]
            if body.startswith("!"):
                out.append("%s__abox_system__(%r)" % (lead, body[1:]))
            elif body.startswith("%") and not body.startswith("%%"):
                out.append("%s__abox_magic__(%r)" % (lead, body[1:]))
            else:
                out.append(line)
        return "\n".join(out)

    def value_forms(value):
        data = {"text/plain": repr(value)}
        for attr, mime in (("_repr_png_", "image/png"), ("_repr_jpeg_", "image/jpeg"),
                           ("_repr_svg_", "image/svg+xml"), ("_repr_html_", "text/html"),
                           ("_repr_markdown_", "text/markdown"), ("_repr_latex_", "text/latex"),
                           ("_repr_json_", "application/json"), ("_repr_javascript_", "application/javascript"),
                           ("_repr_pdf_", "application/pdf")):
            f = getattr(value, attr, None)
            if not callable(f):
                continue
            try:
                v = f()
            except Exception:
                continue
            if isinstance(v, tuple):  # (data, metadata)
                v = v[0]
            if v is not None:
                data[mime] = v
        form = json_form(value)
        if form is not None:
            data.setdefault("application/json", form)
        pandas = sys.modules.get("pandas")
        if pandas is not None and isinstance(value, pandas.DataFrame):
            try:
                data["e2b/data"] = frame_data(value)
            except Exception:
                pass
        return data

    def show(value):
        emit_result(value_forms(value), False)

    def display(*objs, **kwargs):
        for o in objs:
            show(o)

    namespace["display"] = display
    sys.meta_path.insert(0, AfterImport({"PIL.Image": pil_display(show)}))

    def figures():
        plt = sys.modules.get("matplotlib.pyplot")
        if not plt:
            return
        for num in plt.get_fignums():
            fig = plt.figure(num)
            buf = io.BytesIO()
            fig.savefig(buf, format="png")
            bundle = {"text/plain": repr(fig), "image/png": buf.getvalue()}
            chart = chart_data(fig)
            if chart is not None:
                bundle["e2b/chart"] = chart
            emit_result(bundle, False)
        plt.close("all")

    def execute(code, filename, mode):
        flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        compiled = compile(code, filename, mode, flags=flags)
        result = eval(compiled, namespace)
        if compiled.co_flags & 0x80:  # CO_COROUTINE: top-level await
            result = loop.run_until_complete(result)
        return result

    def run(code):
        state["count"] += 1
        n = state["count"]
        filename = "Cell In[%d]" % n
        # the cell's lines, for tracebacks that show them
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        try:
            tree = ast.parse(translate(code), filename, "exec", type_comments=False)
            last = None
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                last = ast.Expression(tree.body.pop().value)
            execute(tree, filename, "exec")
            if last is not None:
                value = execute(last, filename, "eval")
                if value is not None:
                    namespace["_"] = value
                    emit_result(value_forms(value), True)
        except BaseException as e:  # KeyboardInterrupt and SystemExit too: the context lives on
            tb = traceback.TracebackException(type(e), e, e.__traceback__)
            # the runner's own frames are not the user's business
            tb.stack = traceback.StackSummary.from_list([f for f in tb.stack if f.filename != "<string>"])
            emit({"type": "error", "name": type(e).__name__, "value": str(e), "traceback": "".join(tb.format())})
        try:
            figures()
        except Exception:
            pass
        return n

    return run


# ---- bash --------------------------------------------------------------------
def bash_engine():
    """One bash for the context: variables, functions and the folder last
    between cells. Each cell is a file the shell sources (a syntax error
    ends that cell, not the shell's reading of the next); its end and
    status come back on a pipe of their own."""
    folder = tempfile.mkdtemp(prefix="abox-bash-")
    state = {"shell": None, "done": None, "count": 0}

    def start():
        r, w = os.pipe()
        os.dup2(w, 63)
        os.close(w)
        state["shell"] = subprocess.Popen(["bash", "--norc", "--noprofile"], stdin=subprocess.PIPE,
                                          pass_fds=(63,), start_new_session=True)
        os.close(63)
        state["done"] = os.fdopen(r, "r")
        # an interrupt ends the cell's command, not the shell (whose
        # variables and folder the next cell expects)
        state["shell"].stdin.write(b"trap : INT\n")

    def quote(v):
        return "'" + str(v).replace("'", "'\\''") + "'"

    def run(code, env):
        shell = state["shell"]
        if shell is None or shell.poll() is not None:
            start()
            shell = state["shell"]
        state["count"] += 1
        path = os.path.join(folder, "cell")
        with open(path, "w") as f:
            f.write(code + "\n")
        lines = []
        for k, v in env.items():
            if k.isidentifier():
                lines.append("export %s=%s" % (k, quote(v)))
        lines.append(". %s" % quote(path))
        lines.append("__abox_rc=$?")
        # the run's envs go again: the values from before, or unset
        for k in env:
            if not k.isidentifier():
                continue
            if k in os.environ:
                lines.append("export %s=%s" % (k, quote(os.environ[k])))
            else:
                lines.append("unset %s" % k)
        lines.append("printf '%d\\n' \"$__abox_rc\" >&63")
        shell.stdin.write(("\n".join(lines) + "\n").encode())
        shell.stdin.flush()
        try:
            status = state["done"].readline()
        except KeyboardInterrupt:
            # the cell's commands get the interrupt; the shell tells its end
            os.killpg(shell.pid, signal.SIGINT)
            status = state["done"].readline()
            emit({"type": "error", "name": "KeyboardInterrupt", "value": "interrupted", "traceback": ""})
            return state["count"]
        if not status:
            state["shell"] = None
            raise RuntimeError("the bash of this context ended (exit); the next cell starts a new one")
        status = int(status.strip() or 0)
        if status:
            emit({"type": "error", "name": "ExitCode", "value": "exit status %d" % status, "traceback": ""})
        return state["count"]

    return run


def main():
    language = sys.argv[1] if len(sys.argv) > 1 else "python"
    signal.signal(signal.SIGINT, signal.default_int_handler)
    # requests come on a private copy of fd 0; cells and their processes
    # read an empty stdin (no input() can swallow the next request)
    stdin = os.fdopen(os.dup(0), "r", encoding="utf-8", errors="replace")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = io.StringIO("")
    pumps = [FdPump(1, "stdout"), FdPump(2, "stderr")]
    if language == "bash":
        engine, takes_env = bash_engine(), True
    else:
        takes_env = False
        try:
            engine = ipython_engine()
        except ImportError:
            engine = plain_engine()
    emit({"type": "ready"})  # aboxd answers the context's creation now
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
        env = {k: str(v) for k, v in (req.get("env") or {}).items()}
        saved = dict(os.environ)
        count = None
        try:
            if takes_env:
                count = engine(req.get("code", ""), env)
            else:
                os.environ.update(env)
                count = engine(req.get("code", ""))
        except BaseException as e:  # an interrupt between the engine's steps too
            emit({"type": "error", "name": type(e).__name__, "value": str(e), "traceback": ""})
        finally:
            if not takes_env:
                os.environ.clear()
                os.environ.update(saved)
        try:
            flush_output(pumps)
        except KeyboardInterrupt:
            pass
        if count is not None:
            emit({"type": "number_of_executions", "execution_count": count})
        emit({"type": "end_of_execution"})
        current["id"] = None


main()
