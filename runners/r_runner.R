# abox's code runner for R contexts of the code plane (see python_runner.py
# for the protocol): one JSON request per stdin line, JSON lines out tagged
# with its id. Cells are evaluated in the global environment, so variables
# and functions persist between them; what a cell prints is its stdout,
# messages and warnings its stderr, the visible value of its last
# expression its main result (printed as R prints it), an error its error
# ("ERROR", as R kernels name it). SIGINT interrupts the running cell.
#   sh -c 'exec 3>&1 1>&2; exec Rscript --vanilla -e "$1"' sh "$(cat r_runner.R)"
# Messages go on fd 3 (the runner's original stdout): what a cell's
# processes write to fd 1 cannot forge or break one.
(function() {
  chan <- file("/dev/fd/3", open = "w")
  send <- function(x, id) {
    x$id <- id
    writeLines(as.character(jsonlite::toJSON(x, auto_unbox = TRUE, null = "null", digits = NA)), chan)
    flush(chan)
  }
  if (!requireNamespace("jsonlite", quietly = TRUE)) {
    writeLines('{"type":"missing","value":"R contexts need the jsonlite package (Debian: r-cran-jsonlite)","id":null}', chan)
    flush(chan)
    quit(save = "no", status = 3)
  }
  now_ns <- function() round(as.numeric(Sys.time()) * 1e9)
  input <- file("stdin", open = "r")
  count <- 0L
  send(list(type = "ready"), NULL)
  repeat {
    line <- tryCatch(readLines(input, n = 1), interrupt = function(e) NA)
    if (length(line) == 0) break
    if (is.na(line[1])) next
    req <- tryCatch(jsonlite::fromJSON(line, simplifyVector = FALSE), error = function(e) NULL)
    if (is.null(req) || is.null(req$id)) next
    id <- req$id
    count <- count + 1L
    out <- function(text, kind) if (nzchar(text)) send(list(type = kind, text = text, timestamp = now_ns()), id)
    # the run's envs, and what they replace
    env <- req$env
    saved <- NULL
    if (length(env)) {
      saved <- Sys.getenv(names(env), unset = NA, names = TRUE)
      do.call(Sys.setenv, lapply(env, as.character))
    }
    tryCatch(withCallingHandlers({
      exprs <- parse(text = if (is.null(req$code)) "" else req$code, keep.source = FALSE)
      for (i in seq_along(exprs)) {
        res <- NULL
        printed <- capture.output(res <- withVisible(eval(exprs[[i]], envir = globalenv())))
        if (length(printed)) out(paste0(paste(printed, collapse = "\n"), "\n"), "stdout")
        if (i == length(exprs) && isTRUE(res$visible)) {
          text <- paste(capture.output(print(res$value)), collapse = "\n")
          send(list(type = "result", is_main_result = TRUE, text = text, extra = structure(list(), names = character(0))), id)
        }
      }
    },
    message = function(m) {
      out(conditionMessage(m), "stderr")
      invokeRestart("muffleMessage")
    },
    warning = function(w) {
      out(paste0("Warning message:\n", conditionMessage(w), "\n"), "stderr")
      invokeRestart("muffleWarning")
    }),
    error = function(e) {
      call <- conditionCall(e)
      where <- if (is.null(call)) "" else paste0("Error in ", paste(deparse(call), collapse = " "), ": ")
      send(list(type = "error", name = "ERROR", value = conditionMessage(e),
                traceback = paste0(where, conditionMessage(e))), id)
    },
    interrupt = function(e) {
      send(list(type = "error", name = "KeyboardInterrupt", value = "the cell was interrupted", traceback = ""), id)
    })
    if (length(saved)) {
      for (k in names(saved)) {
        if (is.na(saved[[k]])) Sys.unsetenv(k) else do.call(Sys.setenv, structure(list(saved[[k]]), names = k))
      }
    }
    send(list(type = "number_of_executions", execution_count = count), id)
    send(list(type = "end_of_execution"), id)
  }
})()
