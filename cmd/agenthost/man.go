package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// `agenthost man` writes the man pages agenthost(1), from the commands'
// own help, and agenthost.yaml(5), from the example configuration: the
// packages build them with it, so neither can drift from what it tells.
func init() {
	hiddenCommands["man"] = command{"write the man pages agenthost.1 and agenthost.yaml.5", cmdMan}
}

func cmdMan(e *env, args []string) error {
	fs := e.flags("man")
	example := fs.String("example", "agenthost.example.yaml", "the example configuration agenthost.yaml(5) is made of")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErr("usage: agenthost man [--example FILE] DIR")
	}
	dir := fs.Arg(0)
	yaml, err := os.ReadFile(*example)
	if err != nil {
		return fmt.Errorf("the example configuration: %w", err)
	}
	conf, err := configPage(yaml)
	if err != nil {
		return fmt.Errorf("%s: %w", *example, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agenthost.1"), commandPage(), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "agenthost.yaml.5"), conf, 0o644)
}

// roffText escapes s for roff: backslashes, minus signs, and a line's
// leading dot or quote.
func roffText(s string) string {
	s = strings.NewReplacer(`\`, `\e`, "-", `\-`).Replace(s)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			lines[i] = `\&` + l
		}
	}
	return strings.Join(lines, "\n")
}

// verbatim writes s as a block kept as it is.
func verbatim(w io.Writer, s string) {
	fmt.Fprintf(w, ".nf\n%s\n.fi\n", roffText(strings.TrimRight(s, "\n")))
}

func header(w io.Writer, name, section, title string) {
	fmt.Fprintf(w, ".TH %s %s \"\" \"agenthost %s\" %q\n", strings.ToUpper(name), section, version, title)
}

// commandPage is agenthost(1): every command's help as `agenthost help
// CMD` prints it.
func commandPage() []byte {
	var b bytes.Buffer
	header(&b, "agenthost", "1", "User Commands")
	fmt.Fprintf(&b, ".SH NAME\nagenthost \\- plugin host of a voice speaker\n")
	fmt.Fprintf(&b, ".SH SYNOPSIS\n.B agenthost\n.I COMMAND\n[\\fIflags\\fR] [\\fIarguments\\fR]\n")
	fmt.Fprintf(&b, ".SH DESCRIPTION\n%s\n", roffText(wrap("agenthost runs on a voice speaker: `agenthost run` is the daemon, which keeps one link to a cloud voice-AI server, streams the microphone to it, plays its answers and lends it services from plugins and MCP servers; the other commands check its configuration and talk to it through its control socket. "+
		"Every command takes --config FILE (default /etc/agenthost/agenthost.yaml, or $AGENTHOST_CONFIG), --set KEY=VALUE (repeatable) and --log-level; flags may come before, between or after the arguments. "+
		"The configuration is described in agenthost.yaml(5).", 78)))
	fmt.Fprintln(&b, ".SH COMMANDS")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		var out bytes.Buffer
		cmdHelp([]string{n}, &out, &out)
		fmt.Fprintf(&b, ".SS %s\n%s\n", n, roffText(commands[n].summary))
		verbatim(&b, out.String())
	}
	fmt.Fprintf(&b, ".SH EXIT STATUS\n0 on success, 1 on a failure, 2 on a usage error, 78 when the configuration has problems.\n")
	fmt.Fprintf(&b, ".SH FILES\n.TP\n/etc/agenthost/agenthost.yaml\nthe configuration, see agenthost.yaml(5)\n.TP\n/usr/lib/agenthost/plugins\nthe bundled plugins\n")
	fmt.Fprintf(&b, ".SH SEE ALSO\n.BR agenthost.yaml (5),\n.BR systemctl (1)\n")
	return b.Bytes()
}

// configPage is agenthost.yaml(5): the example configuration's opening
// comment, then each top-level key with its block, comments and all.
func configPage(yaml []byte) ([]byte, error) {
	var intro []string
	type section struct {
		key   string
		lines []string
	}
	var sections []section
	var pending []string // comments and blank lines not yet placed
	for _, line := range strings.Split(strings.TrimRight(string(yaml), "\n"), "\n") {
		top := line != "" && line[0] != ' ' && line[0] != '#'
		switch {
		case top:
			key, _, ok := strings.Cut(line, ":")
			if !ok {
				return nil, fmt.Errorf("top-level line %q is not KEY: VALUE", line)
			}
			lead := strings.TrimLeft(strings.Join(pending, "\n"), "\n")
			s := section{key: key}
			if lead != "" {
				s.lines = strings.Split(lead, "\n")
			}
			s.lines = append(s.lines, line)
			sections, pending = append(sections, s), nil
		case len(sections) == 0:
			if strings.HasPrefix(line, "#") {
				intro = append(intro, strings.TrimSpace(strings.TrimPrefix(line, "#")))
			}
		case line == "" || strings.HasPrefix(line, "#"):
			pending = append(pending, line) // a comment may open the next key
		default:
			last := &sections[len(sections)-1]
			last.lines, pending = append(append(last.lines, pending...), line), nil
		}
	}
	if len(sections) == 0 {
		return nil, errors.New("no top-level key")
	}
	sections[len(sections)-1].lines = append(sections[len(sections)-1].lines, pending...)
	var b bytes.Buffer
	header(&b, "agenthost.yaml", "5", "File Formats")
	fmt.Fprintf(&b, ".SH NAME\nagenthost.yaml \\- configuration of the agenthost daemon\n")
	fmt.Fprintf(&b, ".SH SYNOPSIS\n/etc/agenthost/agenthost.yaml\n")
	fmt.Fprintf(&b, ".SH DESCRIPTION\n")
	verbatim(&b, strings.Join(intro, "\n"))
	fmt.Fprintf(&b, ".SH KEYS\nEach top-level key, as the example configuration gives it: every key below it with its default value and what it does.\n")
	for _, s := range sections {
		fmt.Fprintf(&b, ".SS %s\n", s.key)
		verbatim(&b, strings.TrimRight(strings.Join(s.lines, "\n"), "\n"))
	}
	fmt.Fprintf(&b, ".SH SEE ALSO\n.BR agenthost (1)\n")
	return b.Bytes(), nil
}
