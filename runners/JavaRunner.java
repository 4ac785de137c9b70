// abox's code runner for Java contexts of the code plane (see
// python_runner.py for the protocol): one JSON request per stdin line, JSON
// lines out tagged with its id. Cells are snippets for jshell, evaluated in
// this JVM (jshell's local execution), so declarations persist between
// cells; what a cell prints is its stdout/stderr, the value of its last
// expression its main result, an exception or a rejected snippet its
// error. A run's envs are system properties for that run (what Java code
// can change), as E2B's Java kernel does. SIGINT stops the running cell.
//   sh -c 'exec 3>&1 1>&2; exec java FILE' sh   (the source launcher)
// Messages go on fd 3 (the runner's original stdout).
import java.io.ByteArrayOutputStream;
import java.io.FileOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import jdk.jshell.EvalException;
import jdk.jshell.JShell;
import jdk.jshell.Snippet;
import jdk.jshell.SnippetEvent;
import jdk.jshell.SourceCodeAnalysis;

public class JavaRunner {
    static PrintStream chan;
    static volatile String current;

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
            case '"': b.append("\\\""); break;
            case '\\': b.append("\\\\"); break;
            case '\n': b.append("\\n"); break;
            case '\r': b.append("\\r"); break;
            case '\t': b.append("\\t"); break;
            default:
                if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                else b.append(c);
            }
        }
        return b.append('"').toString();
    }

    // JSON text sent as it is
    static final class Raw {
        final String json;
        Raw(String json) { this.json = json; }
        @Override public String toString() { return json; }
    }

    // one message: "k", v pairs (strings quoted, other values as given)
    static synchronized void send(String id, Object... kv) {
        StringBuilder b = new StringBuilder("{");
        for (int i = 0; i < kv.length; i += 2) {
            Object v = kv[i + 1];
            b.append(quote((String) kv[i])).append(':');
            b.append(v instanceof String ? quote((String) v) : String.valueOf(v)).append(',');
        }
        b.append("\"id\":").append(id == null ? "null" : quote(id)).append('}');
        chan.println(b);
        chan.flush();
    }

    // what a cell writes: sent a line (or a batch) at a time as its stdout/stderr
    static class CellStream extends OutputStream {
        final String kind;
        final ByteArrayOutputStream buf = new ByteArrayOutputStream();
        CellStream(String kind) { this.kind = kind; }
        @Override public synchronized void write(int c) {
            buf.write(c);
            if (c == '\n') flush();
        }
        @Override public synchronized void flush() {
            if (buf.size() == 0) return;
            String text = new String(buf.toByteArray(), StandardCharsets.UTF_8);
            buf.reset();
            if (current != null)
                send(current, "type", kind, "text", text, "timestamp", System.currentTimeMillis() * 1000000L);
        }
    }

    // the request: a flat JSON object of strings, and "env" an object of strings
    static Map<String, Object> parse(String s) {
        int[] at = { 0 };
        Object v = value(s, at);
        @SuppressWarnings("unchecked") Map<String, Object> m = v instanceof Map ? (Map<String, Object>) v : null;
        return m;
    }

    static void ws(String s, int[] at) { while (at[0] < s.length() && Character.isWhitespace(s.charAt(at[0]))) at[0]++; }

    static Object value(String s, int[] at) {
        ws(s, at);
        if (at[0] >= s.length()) return null;
        char c = s.charAt(at[0]);
        if (c == '"') return string(s, at);
        if (c == '{') {
            Map<String, Object> m = new LinkedHashMap<>();
            at[0]++;
            ws(s, at);
            if (at[0] < s.length() && s.charAt(at[0]) == '}') { at[0]++; return m; }
            while (at[0] < s.length()) {
                ws(s, at);
                String k = string(s, at);
                ws(s, at);
                at[0]++; // ':'
                m.put(k, value(s, at));
                ws(s, at);
                if (at[0] < s.length() && s.charAt(at[0]++) == '}') break;
            }
            return m;
        }
        int start = at[0]; // a number, true, false or null: kept as text
        while (at[0] < s.length() && ",}] \t\r\n".indexOf(s.charAt(at[0])) < 0) at[0]++;
        return s.substring(start, at[0]);
    }

    static String string(String s, int[] at) {
        StringBuilder b = new StringBuilder();
        at[0]++; // '"'
        while (at[0] < s.length()) {
            char c = s.charAt(at[0]++);
            if (c == '"') break;
            if (c != '\\') { b.append(c); continue; }
            char e = s.charAt(at[0]++);
            switch (e) {
            case 'n': b.append('\n'); break;
            case 't': b.append('\t'); break;
            case 'r': b.append('\r'); break;
            case 'b': b.append('\b'); break;
            case 'f': b.append('\f'); break;
            case 'u': b.append((char) Integer.parseInt(s.substring(at[0], at[0] + 4), 16)); at[0] += 4; break;
            default: b.append(e);
            }
        }
        return b.toString();
    }

    static String unquote(String t) {
        if (t != null && t.length() >= 2 && t.charAt(0) == '"' && t.charAt(t.length() - 1) == '"')
            return t.substring(1, t.length() - 1);
        return t;
    }

    public static void main(String[] args) throws Exception {
        chan = new PrintStream(new FileOutputStream("/dev/fd/3"), true, StandardCharsets.UTF_8);
        System.setOut(new PrintStream(new CellStream("stdout"), true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(new CellStream("stderr"), true, StandardCharsets.UTF_8));
        JShell js = JShell.builder().executionEngine("local").build();
        SourceCodeAnalysis sca = js.sourceCodeAnalysis();
        js.eval("int __abox_warm = 0;"); // the compiler loaded before the first cell
        try {
            sun.misc.Signal.handle(new sun.misc.Signal("INT"), sig -> js.stop());
        } catch (Throwable t) { }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        int count = 0;
        send(null, "type", "ready");
        String line;
        while ((line = in.readLine()) != null) {
            Map<String, Object> req = parse(line);
            if (req == null || !(req.get("id") instanceof String)) continue;
            current = (String) req.get("id");
            count++;
            Map<String, String> saved = new LinkedHashMap<>();
            if (req.get("env") instanceof Map) {
                for (Map.Entry<?, ?> e : ((Map<?, ?>) req.get("env")).entrySet()) {
                    String k = String.valueOf(e.getKey());
                    saved.put(k, System.getProperty(k));
                    System.setProperty(k, String.valueOf(e.getValue()));
                }
            }
            String rest = req.get("code") instanceof String ? (String) req.get("code") : "";
            String last = null;
            boolean failed = false;
            while (!rest.isBlank() && !failed) {
                SourceCodeAnalysis.CompletionInfo ci = sca.analyzeCompletion(rest);
                String src = ci.completeness().isComplete() ? ci.source() : rest;
                rest = ci.completeness().isComplete() ? ci.remaining() : "";
                last = null;
                for (SnippetEvent ev : js.eval(src)) {
                    // rejected, or a declaration naming what does not exist
                    // (jshell keeps it for later; a cell says why)
                    boolean unresolved = ev.status() == Snippet.Status.RECOVERABLE_NOT_DEFINED
                        && ev.snippet() instanceof jdk.jshell.DeclarationSnippet;
                    if (ev.status() == Snippet.Status.REJECTED || unresolved) {
                        List<String> msgs = new ArrayList<>();
                        if (unresolved)
                            js.unresolvedDependencies((jdk.jshell.DeclarationSnippet) ev.snippet())
                                .forEach(u -> msgs.add("cannot find symbol: " + u));
                        js.diagnostics(ev.snippet()).forEach(d -> msgs.add(d.getMessage(null)));
                        send(current, "type", "error", "name", "CompilationException",
                             "value", String.join("\n", msgs), "traceback", src.strip() + "\n" + String.join("\n", msgs));
                        failed = true;
                    } else if (ev.exception() != null) {
                        Throwable t = ev.exception();
                        String name = t instanceof EvalException ? ((EvalException) t).getExceptionClassName() : t.getClass().getName();
                        String msg = t.getMessage() == null ? "" : t.getMessage();
                        StringBuilder tb = new StringBuilder(name + (msg.isEmpty() ? "" : ": " + msg));
                        for (StackTraceElement e : t.getStackTrace()) tb.append("\n\tat ").append(e);
                        send(current, "type", "error", "name", name.substring(name.lastIndexOf('.') + 1),
                             "value", msg, "traceback", tb.toString());
                        failed = true;
                    } else if (ev.value() != null && ev.snippet().kind() == Snippet.Kind.EXPRESSION) {
                        last = ev.value();
                    } else if (ev.value() != null && ev.snippet().kind() == Snippet.Kind.VAR
                               && ev.snippet().subKind() == Snippet.SubKind.TEMP_VAR_EXPRESSION_SUBKIND) {
                        last = ev.value();
                    }
                }
            }
            System.out.flush();
            System.err.flush();
            if (!failed && last != null)
                send(current, "type", "result", "is_main_result", true, "text", unquote(last), "extra", new Raw("{}"));
            for (Map.Entry<String, String> e : saved.entrySet()) {
                if (e.getValue() == null) System.clearProperty(e.getKey());
                else System.setProperty(e.getKey(), e.getValue());
            }
            send(current, "type", "number_of_executions", "execution_count", count);
            send(current, "type", "end_of_execution");
            current = null;
        }
    }
}
