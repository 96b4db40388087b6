// e2b_repl.java — one E2B code-interpreter context for Java, run inside the sandbox by
// sandlot's E2B façade (api/compat/e2b_interp.c) as a long-lived `java` (source-file mode).
// One JSON request a line on stdin ({"req","code","env_vars"}); the code interpreter's
// NDJSON events on stdout, each tagged "_req". Cells are JShell snippets run in this JVM
// (as IJava runs them), so declarations persist; the value of an expression is the result
// as IJava gives it (String.valueOf of the object); System.out and System.err are the
// cell's stdout and stderr. Env vars are system properties, as E2B's server sets them for
// IJava: the sandbox's (named in SANDLOT_E2B_PROPS) at the start, a call's for that call.
import java.io.*;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;
import jdk.jshell.*;
import jdk.jshell.execution.DirectExecutionControl;
import jdk.jshell.spi.ExecutionControl;
import jdk.jshell.spi.ExecutionControlProvider;
import jdk.jshell.spi.ExecutionEnv;

public class E2bRepl {
	static final PrintStream proto = new PrintStream(new FileOutputStream(FileDescriptor.out), false,
							 StandardCharsets.UTF_8);
	static final int TEXT_MAX = 256 << 10; // docs/e2b.md, "Long output"
	static String cur = "";
	static int count = 0;

	static String jq(String s) {
		StringBuilder b = new StringBuilder(s.length() + 2).append('"');
		for (int i = 0; i < s.length(); i++) {
			char c = s.charAt(i);
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

	static String cut(String s) {
		if (s.length() <= TEXT_MAX + 64) return s;
		int n = s.substring(TEXT_MAX).getBytes(StandardCharsets.UTF_8).length;
		return s.substring(0, TEXT_MAX) + "\u2026[cut: " + n + " bytes]";
	}

	/** An event: "type" then key, value pairs (String, Boolean or Integer). */
	static synchronized void emit(String type, Object... kv) {
		StringBuilder b = new StringBuilder("{\"type\":").append(jq(type));
		for (int i = 0; i + 1 < kv.length; i += 2) {
			Object v = kv[i + 1];
			b.append(',').append(jq((String) kv[i])).append(':');
			b.append(v instanceof String ? jq(cut((String) v)) : String.valueOf(v));
		}
		b.append(",\"_req\":").append(jq(cur)).append("}\n");
		proto.print(b);
		proto.flush();
	}

	/** System.out, System.err: whole lines become events; the rest at the cell's end. */
	static final class Sink extends OutputStream {
		final String kind;
		final ByteArrayOutputStream buf = new ByteArrayOutputStream();
		Sink(String kind) { this.kind = kind; }
		@Override public void write(int b) { write(new byte[] {(byte) b}, 0, 1); }
		@Override public void write(byte[] b, int off, int len) {
			synchronized (E2bRepl.class) {
				int last = -1;
				for (int i = off; i < off + len; i++)
					if (b[i] == '\n') last = i;
				if (last < 0) {
					buf.write(b, off, len);
					return;
				}
				buf.write(b, off, last + 1 - off);
				send();
				buf.write(b, last + 1, off + len - last - 1);
			}
		}
		void send() {
			synchronized (E2bRepl.class) {
				if (buf.size() == 0) return;
				emit(kind, "text", buf.toString(StandardCharsets.UTF_8));
				buf.reset();
			}
		}
	}
	static final Sink out = new Sink("stdout"), err = new Sink("stderr");

	/** Snippets run in this JVM, each in a thread of its own (so an interrupt can stop
	 * it); the value of the last one is kept as an object, as IJava keeps it. */
	static final class Control extends DirectExecutionControl {
		static Object value;
		static volatile Thread running;
		@Override protected String invoke(Method doit) throws Exception {
			Object[] res = new Object[1];
			Throwable[] thrown = new Throwable[1];
			Thread t = new Thread(() -> {
				try {
					res[0] = doit.invoke(null);
				} catch (Throwable e) {
					thrown[0] = e;
				}
			}, "cell");
			running = t;
			t.start();
			t.join();
			running = null;
			if (thrown[0] instanceof InvocationTargetException
			    && thrown[0].getCause() instanceof ThreadDeath)
				throw new ExecutionControl.StoppedException();
			if (thrown[0] instanceof Exception) throw (Exception) thrown[0];
			if (thrown[0] != null) throw new InvocationTargetException(thrown[0]);
			value = res[0];
			return valueString(res[0]);
		}
		@SuppressWarnings("removal")
		@Override public void stop() {
			Thread t = running;
			if (t != null) t.stop();
		}
	}

	// ---- the request: a JSON object of strings and one object of strings ----
	static int pos;
	static String src;
	static void ws() { while (pos < src.length() && Character.isWhitespace(src.charAt(pos))) pos++; }
	static Object value() {
		ws();
		char c = src.charAt(pos);
		if (c == '{') {
			Map<String, Object> m = new LinkedHashMap<>();
			pos++;
			for (;;) {
				ws();
				if (src.charAt(pos) == '}') { pos++; return m; }
				if (src.charAt(pos) == ',') { pos++; continue; }
				String k = (String) value();
				ws();
				pos++; // ':'
				m.put(k, value());
			}
		}
		if (c == '"') {
			StringBuilder b = new StringBuilder();
			for (pos++; src.charAt(pos) != '"'; pos++) {
				char d = src.charAt(pos);
				if (d != '\\') { b.append(d); continue; }
				d = src.charAt(++pos);
				switch (d) {
				case 'n': b.append('\n'); break;
				case 't': b.append('\t'); break;
				case 'r': b.append('\r'); break;
				case 'b': b.append('\b'); break;
				case 'f': b.append('\f'); break;
				case 'u': b.append((char) Integer.parseInt(src.substring(pos + 1, pos + 5), 16)); pos += 4; break;
				default: b.append(d);
				}
			}
			pos++;
			return b.toString();
		}
		int start = pos;
		while (pos < src.length() && ",}] \t\n".indexOf(src.charAt(pos)) < 0) pos++;
		return src.substring(start, pos);
	}

	static JShell shell;

	static String diagnostics(Snippet s) {
		StringBuilder b = new StringBuilder();
		shell.diagnostics(s).forEach(d -> b.append(d.getMessage(Locale.ROOT)).append('\n'));
		return b.toString();
	}

	static String trace(EvalException e) {
		StringBuilder b = new StringBuilder(e.getExceptionClassName());
		if (e.getMessage() != null) b.append(": ").append(e.getMessage());
		for (StackTraceElement f : e.getStackTrace())
			b.append("\n\tat ").append(f);
		return b.append('\n').toString();
	}

	/** One snippet: false when it ended the cell (an error). */
	static boolean snippet(String code, boolean last) {
		Control.value = null;
		List<SnippetEvent> evs = shell.eval(code);
		for (SnippetEvent ev : evs) {
			if (ev.causeSnippet() != null) continue;
			Snippet s = ev.snippet();
			if (ev.exception() instanceof EvalException) {
				EvalException x = (EvalException) ev.exception();
				String v = x.getMessage() == null ? "" : x.getMessage();
				emit("error", "name", x.getExceptionClassName(), "value", v, "traceback", trace(x));
				return false;
			}
			if (ev.exception() != null) { // stopped, or a JShell failure
				emit("error", "name", ev.exception().getClass().getSimpleName(), "value",
				     String.valueOf(ev.exception().getMessage()), "traceback", "");
				return false;
			}
			if (ev.status() == Snippet.Status.REJECTED) {
				String d = diagnostics(s);
				emit("error", "name", "CompilationException", "value", d.trim(), "traceback", d);
				return false;
			}
			boolean expr = s instanceof ExpressionSnippet
				|| (s instanceof VarSnippet && s.subKind() == Snippet.SubKind.TEMP_VAR_EXPRESSION_SUBKIND);
			if (last && expr && ev.value() != null && Control.value != null) {
				out.send();
				err.send();
				emit("result", "text", String.valueOf(Control.value), "is_main_result", true);
			}
		}
		return true;
	}

	static void run(String code, Map<String, Object> env, Set<String> props) {
		count++;
		for (Map.Entry<String, Object> e : env.entrySet())
			System.setProperty(e.getKey(), String.valueOf(e.getValue()));
		try {
			SourceCodeAnalysis sca = shell.sourceCodeAnalysis();
			String rest = code;
			while (!rest.isBlank()) {
				SourceCodeAnalysis.CompletionInfo ci = sca.analyzeCompletion(rest);
				if (ci.completeness() == SourceCodeAnalysis.Completeness.EMPTY) break;
				if (!ci.completeness().isComplete()) {
					emit("error", "name", "CompilationException", "value",
					     "incomplete input", "traceback", rest);
					break;
				}
				rest = ci.remaining();
				if (!snippet(ci.source(), rest.isBlank())) break;
			}
		} finally {
			out.send();
			err.send();
			for (String k : env.keySet()) {
				String g = props.contains(k) ? System.getenv(k) : null;
				if (g != null) System.setProperty(k, g);
				else System.clearProperty(k);
			}
		}
	}

	@SuppressWarnings("unchecked")
	public static void main(String[] args) throws Exception {
		if (args.length > 0) { // our source, compiled by now: its file and directory go
			Path p = Paths.get(args[0]);
			Files.deleteIfExists(p);
			Files.deleteIfExists(p.toAbsolutePath().getParent());
		}
		BufferedReader in = new BufferedReader(new InputStreamReader(new FileInputStream(FileDescriptor.in),
									     StandardCharsets.UTF_8));
		System.setIn(new ByteArrayInputStream(new byte[0]));
		System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
		System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
		Set<String> props = new HashSet<>();
		String names = System.getenv("SANDLOT_E2B_PROPS");
		for (String k : names == null ? new String[0] : names.split(" "))
			if (!k.isEmpty() && System.getenv(k) != null) {
				props.add(k);
				System.setProperty(k, System.getenv(k));
			}
		ExecutionControlProvider local = new ExecutionControlProvider() {
			public String name() { return "sandlot"; }
			public ExecutionControl generate(ExecutionEnv env, Map<String, String> p) { return new Control(); }
		};
		shell = JShell.builder().executionEngine(local, null).out(System.out).err(System.err).build();
		// jshell's default imports (its DEFAULT startup), which also warm the compiler up.
		for (String p : new String[] {"java.io", "java.math", "java.net", "java.nio.file", "java.util",
					      "java.util.concurrent", "java.util.function", "java.util.prefs",
					      "java.util.regex", "java.util.stream"})
			shell.eval("import " + p + ".*;");
		try {
			sun.misc.Signal.handle(new sun.misc.Signal("INT"), s -> shell.stop());
		} catch (Throwable ignored) {
		}
		for (String line; (line = in.readLine()) != null;) {
			Map<String, Object> req;
			try {
				src = line;
				pos = 0;
				req = (Map<String, Object>) value();
			} catch (RuntimeException e) {
				continue;
			}
			Object r = req.get("req"), code = req.get("code"), env = req.get("env_vars");
			cur = r instanceof String ? (String) r : "";
			emit("accepted");
			run(code instanceof String ? (String) code : "",
			    env instanceof Map ? (Map<String, Object>) env : Map.of(), props);
			emit("number_of_executions", "execution_count", count);
			emit("end_of_execution");
		}
		System.exit(0);
	}
}
