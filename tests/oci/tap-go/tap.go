// Package tap writes Test Anything Protocol (version 13) reports. The OCI
// runtime-tools validation programs import it as github.com/mndrix/tap-go,
// which Debian does not package: abox's test builds them against this
// package instead (tests/oci/validation.py), written for the calls they
// make: New, Header, Ok, Pass, Fail, Skip, Todo, YAML, AutoPlan,
// Diagnostic and Diagnosticf. YAML blocks hold the value as indented JSON
// (JSON is YAML).
package tap

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// T is one report: its writer, the number of the last test line and
// whether the next one is a TODO.
type T struct {
	w    io.Writer
	n    int
	todo bool
	// Writer is where the report goes (os.Stdout by default).
	Writer io.Writer
}

// New starts a report on standard output.
func New() *T {
	return &T{w: os.Stdout}
}

func (t *T) out() io.Writer {
	if t.Writer != nil {
		return t.Writer
	}
	return t.w
}

// Header names the protocol version and, when count > 0, the plan.
func (t *T) Header(count int) {
	fmt.Fprintln(t.out(), "TAP version 13")
	if count > 0 {
		fmt.Fprintf(t.out(), "1..%d\n", count)
	}
}

// Ok writes one test line: ok or not ok, numbered, with its description.
func (t *T) Ok(test bool, description string) {
	t.n++
	word := "ok"
	if !test {
		word = "not ok"
	}
	line := fmt.Sprintf("%s %d - %s", word, t.n, description)
	if t.todo {
		line += " # TODO"
		t.todo = false
	}
	fmt.Fprintln(t.out(), line)
}

// Pass and Fail are Ok(true, ...) and Ok(false, ...).
func (t *T) Pass(description string) { t.Ok(true, description) }
func (t *T) Fail(description string) { t.Ok(false, description) }

// Skip writes count skipped tests, each with the reason.
func (t *T) Skip(count int, description string) {
	for i := 0; i < count; i++ {
		t.n++
		fmt.Fprintf(t.out(), "ok %d # SKIP %s\n", t.n, description)
	}
}

// Todo marks the next test line as a TODO and returns t.
func (t *T) Todo() *T {
	t.todo = true
	return t
}

// Count is the number of test lines written so far.
func (t *T) Count() int { return t.n }

// AutoPlan writes the plan from the number of test lines written.
func (t *T) AutoPlan() {
	fmt.Fprintf(t.out(), "1..%d\n", t.n)
}

// Diagnostic writes message as comment lines.
func (t *T) Diagnostic(message string) {
	for _, l := range strings.Split(strings.TrimRight(message, "\n"), "\n") {
		fmt.Fprintf(t.out(), "# %s\n", l)
	}
}

// Diagnosticf is Diagnostic with a format.
func (t *T) Diagnosticf(format string, a ...interface{}) {
	t.Diagnostic(fmt.Sprintf(format, a...))
}

// YAML writes message as a YAML block below the last test line.
func (t *T) YAML(message interface{}) error {
	b, err := json.MarshalIndent(message, "  ", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(t.out(), "  ---\n  %s\n  ...\n", b)
	return nil
}
