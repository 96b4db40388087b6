# e2b_repl.R — one E2B code-interpreter context for R, run inside the sandbox by sandlot's
# E2B façade (api/compat/e2b_interp.c) as a long-lived Rscript. One JSON request a line on
# fd 3 ({"req","code","env_vars"}); the code interpreter's NDJSON events on fd 4, each
# tagged "_req" (the façade's shell sets the fds up; R reaches them through two `cat`s
# that ignore SIGINT, as an interrupt is sent to the whole group). Cells run in the global
# environment, so names persist; every top-level expression whose value is visible is
# printed as the R console prints it, a result as IRkernel gives it (display data, not the
# main result); its output (sink) is an event after each top-level expression; messages
# and warnings are stderr; an error ends the cell as IRkernel's "ERROR".
local({
	Sys.unsetenv(c("SANDLOT_E2B_REPL", "SANDLOT_E2B_LANGUAGE"))
	req_in <- pipe("trap '' INT; exec cat <&3", "r")
	proto <- pipe("trap '' INT; exec cat >&4", "w")
	cur <- ""
	count <- 0L
	text_max <- 262144L # the longest text of one event (docs/e2b.md, "Long output")
	out_file <- tempfile("sandlot-e2b-out")

	jq <- function(s) {
		s <- enc2utf8(as.character(s))
		s <- gsub("\\", "\\\\", s, fixed = TRUE)
		s <- gsub("\"", "\\\"", s, fixed = TRUE)
		s <- gsub("\n", "\\n", s, fixed = TRUE)
		s <- gsub("\r", "\\r", s, fixed = TRUE)
		s <- gsub("\t", "\\t", s, fixed = TRUE)
		for (cc in unique(regmatches(s, gregexpr("[\001-\037]", s, useBytes = TRUE))[[1]]))
			s <- gsub(cc, sprintf("\\u%04x", utf8ToInt(cc)), s, fixed = TRUE)
		paste0("\"", s, "\"")
	}
	emit <- function(type, ...) {
		f <- list(...)
		parts <- paste0("\"type\":", jq(type))
		for (k in names(f)) {
			v <- f[[k]]
			if (is.character(v) && isTRUE(nchar(v, allowNA = TRUE) > text_max + 64L))
				v <- paste0(substr(v, 1, text_max), "\u2026[cut: ",
					    nchar(substr(v, text_max + 1, nchar(v)), "bytes"), " bytes]")
			parts <- c(parts, paste0(jq(k), ":", if (is.logical(v)) tolower(v) else if (is.numeric(v)) v else jq(v)))
		}
		parts <- c(parts, paste0("\"_req\":", jq(cur)))
		cat("{", paste(parts, collapse = ","), "}\n", sep = "", file = proto)
		flush(proto)
	}

	# A request line: an object of strings (and env_vars, an object of strings), as
	# cJSON writes it.
	unesc <- function(s) {
		if (!grepl("\\", s, fixed = TRUE))
			return(s)
		m <- gregexpr("\\\\u[0-9a-fA-F]{4}|\\\\.", s, perl = TRUE)
		p <- regmatches(s, m, invert = NA)[[1]]
		for (i in seq(2, length(p), by = 2)) {
			e <- p[[i]]
			c1 <- substr(e, 2, 2)
			p[[i]] <- if (c1 == "u") intToUtf8(strtoi(substr(e, 3, 6), 16L)) else
				switch(c1, n = "\n", t = "\t", r = "\r", b = "\b", f = "\f", c1)
		}
		paste(p, collapse = "")
	}
	parse_json <- function(line) {
		tok <- regmatches(line, gregexpr("\"(?:[^\"\\\\]|\\\\.)*\"|[{}\\[\\]:,]|[^{}\\[\\]:,\\s\"]+",
						 line, perl = TRUE))[[1]]
		i <- 0L
		nxt <- function() { i <<- i + 1L; tok[[i]] }
		value <- function() {
			t <- nxt()
			if (t == "{") {
				o <- list()
				repeat {
					k <- nxt()
					if (k == "}") break
					if (k == ",") next
					nxt() # :
					o[[unesc(substr(k, 2, nchar(k) - 1))]] <- value()
				}
				o
			} else if (t == "[") {
				a <- list()
				repeat {
					t2 <- tok[[i + 1L]]
					if (t2 == "]") { nxt(); break }
					if (t2 == ",") { nxt(); next }
					a[[length(a) + 1L]] <- value()
				}
				a
			} else if (substr(t, 1, 1) == "\"") unesc(substr(t, 2, nchar(t) - 1))
			else if (t == "null") NULL
			else t
		}
		value()
	}

	take_output <- function() {
		sink()
		n <- file.size(out_file)
		if (!is.na(n) && n > 0) {
			s <- readChar(out_file, n, useBytes = TRUE)
			Encoding(s) <- "UTF-8"
			emit("stdout", text = s)
		}
	}
	# The call a condition names: none for the cell's own top level (as the console).
	call_of <- function(cnd) {
		call <- conditionCall(cnd)
		if (is.null(call) || identical(call, quote(eval(expr, globalenv())))) NULL else call
	}
	err_text <- function(e) {
		call <- call_of(e)
		if (is.null(call)) paste0("Error: ", conditionMessage(e), "\n")
		else paste0("Error in ", paste(deparse(call, nlines = 1L), collapse = ""), " : ",
			    conditionMessage(e), "\n")
	}
	# One top-level expression: FALSE when it ended the cell (an error, an interrupt).
	eval1 <- function(expr) {
		sink(out_file)
		ok <- TRUE
		r <- withCallingHandlers(
			tryCatch(withVisible(eval(expr, globalenv())),
				 error = function(e) {
					take_output()
					emit("error", name = "ERROR", value = conditionMessage(e),
					     traceback = err_text(e))
					NULL
				 },
				 interrupt = function(e) NULL),
			message = function(m) {
				emit("stderr", text = conditionMessage(m))
				invokeRestart("muffleMessage")
			},
			warning = function(w) {
				call <- call_of(w)
				emit("stderr", text = paste0("Warning message",
					if (is.null(call)) "" else paste0(" in ", deparse(call, nlines = 1L)),
					":\n", conditionMessage(w), "\n"))
				invokeRestart("muffleWarning")
			})
		if (is.null(r))
			return(FALSE)
		if (isTRUE(r$visible)) {
			txt <- tryCatch(paste(capture.output(print(r$value)), collapse = "\n"),
					error = function(e) paste("<print failed:", conditionMessage(e), ">"))
			take_output()
			emit("result", text = txt, is_main_result = FALSE)
		} else take_output()
		TRUE
	}

	run <- function(code, env) {
		count <<- count + 1L
		old <- if (length(env)) Sys.getenv(names(env), unset = NA, names = TRUE) else character()
		if (length(env))
			do.call(Sys.setenv, lapply(env, as.character))
		on.exit(for (k in names(old)) {
			if (is.na(old[[k]])) Sys.unsetenv(k)
			else do.call(Sys.setenv, setNames(list(old[[k]]), k))
		})
		exprs <- tryCatch(parse(text = code, keep.source = FALSE), error = function(e) {
			emit("error", name = "ERROR", value = conditionMessage(e),
			     traceback = paste0("Error in parse(text = code): ", conditionMessage(e), "\n"))
			NULL
		})
		for (e in exprs)
			if (!eval1(e))
				break
	}

	repeat {
		line <- tryCatch(readLines(req_in, n = 1L, encoding = "UTF-8"), interrupt = function(e) NA)
		if (length(line) == 0L)
			break
		if (is.na(line[[1]]))
			next
		req <- tryCatch(parse_json(line), error = function(e) NULL)
		if (!is.list(req))
			next
		cur <- if (is.null(req$req)) "" else req$req
		emit("accepted")
		tryCatch(run(if (is.null(req$code)) "" else req$code,
			     if (is.list(req$env_vars)) req$env_vars else list()),
			 interrupt = function(e) NULL)
		while (sink.number() > 0L) sink()
		emit("number_of_executions", execution_count = count)
		emit("end_of_execution")
	}
})
