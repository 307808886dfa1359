package legacyflags

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// noEffect are klog flags whose release-0.14 behaviour is this syncer's anyway (logs on standard
// error, the default format), with what to say when one is given.
var noEffect = map[string]string{
	"logtostderr":         "logs always go to standard error",
	"alsologtostderr":     "logs always go to standard error",
	"stderrthreshold":     "every log line goes to standard error",
	"one_output":          "logs always go to standard error only",
	"add_dir_header":      "use --logging-format=json for structured output",
	"skip_headers":        "use --logging-format=json for structured output",
	"skip_log_headers":    "use --logging-format=json for structured output",
	"log_backtrace_at":    "use -v and --vmodule",
	"log_flush_frequency": "logs are flushed as they are written",
}

// takesValue are the noEffect flags that are not booleans (--stderrthreshold 2).
var takesValue = map[string]bool{"stderrthreshold": true, "log_backtrace_at": true, "log_flush_frequency": true}

// toFiles are klog flags that wrote logs to files, which this syncer does not.
var toFiles = []string{"log_dir", "log_file", "log_file_max_size"}

// Klog adds the release-0.14 klog flags to fs (hidden, deprecated) that fs does not have yet. The
// function returned says which given flags this binary cannot honour (logs to files), naming the
// replacement; nil when none was given.
func Klog(fs *pflag.FlagSet) func() error {
	names := make([]string, 0, len(noEffect))
	for name := range noEffect {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if fs.Lookup(name) != nil {
			continue
		}
		fs.String(name, "", "")
		if !takesValue[name] {
			fs.Lookup(name).NoOptDefVal = "true" // --logtostderr alone is a boolean
		}
		_ = fs.MarkDeprecated(name, "it has no effect: "+noEffect[name])
	}
	files := map[string]*string{}
	for _, name := range toFiles {
		if fs.Lookup(name) == nil {
			files[name] = fs.String(name, "", "")
			_ = fs.MarkHidden(name)
		}
	}
	return func() error {
		var given []string
		for _, name := range toFiles {
			if v, ok := files[name]; ok && fs.Changed(name) && *v != "" {
				given = append(given, "--"+name)
			}
		}
		if len(given) == 0 {
			return nil
		}
		return fmt.Errorf("%s: writing logs to files is not supported: logs go to standard error (read them with kubectl logs, or redirect them)",
			strings.Join(given, ", "))
	}
}
