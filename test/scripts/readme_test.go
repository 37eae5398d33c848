package scripts

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/testbin"
)

// A documented command and what the document says it prints.
type docCommand struct {
	line   string   // the command as written, its comment cut off
	expect []string // the `# → …` lines after it: each must appear in its output
}

// skipMarker, on the line before a fenced block, keeps the block out of the
// run (commands that need a microphone, a speaker or a desktop client).
const skipMarker = "<!-- not run by the test"

// docSection returns the text of the section headed heading in doc, up to
// the next heading of the same level.
func docSection(t *testing.T, doc, heading string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("no %q section", heading)
	}
	level := strings.SplitN(heading, " ", 2)[0]
	section, _, _ := strings.Cut(rest, "\n"+level+" ")
	return section
}

// docCommands returns the commands of the ```sh blocks in section, in
// order, leaving out blocks marked with skipMarker.
func docCommands(t *testing.T, section string) []docCommand {
	t.Helper()
	var cmds []docCommand
	lines := strings.Split(section, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```sh" {
			continue
		}
		skip := i > 0 && strings.HasPrefix(strings.TrimSpace(lines[i-1]), skipMarker)
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			l := strings.TrimSpace(lines[i])
			switch {
			case skip || l == "":
			case strings.HasPrefix(l, "# →"):
				if len(cmds) == 0 {
					t.Fatalf("an expected output with no command before it: %q", l)
				}
				cmds[len(cmds)-1].expect = append(cmds[len(cmds)-1].expect, strings.TrimSpace(strings.TrimPrefix(l, "# →")))
			case strings.HasPrefix(l, "#"):
			default:
				if c, _, ok := strings.Cut(l, "  #"); ok {
					l = strings.TrimSpace(c)
				}
				cmds = append(cmds, docCommand{line: l})
			}
		}
	}
	return cmds
}

// startSimulator starts cmd/voicesim on a free loopback port and returns its address.
func startSimulator(t *testing.T, bin string) string {
	t.Helper()
	sim := exec.Command(bin, "--listen", "127.0.0.1:0")
	console, keep := io.Pipe() // its console stays open: EOF would end it
	sim.Stdin = console
	out, err := sim.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	sim.Stderr = &testbin.Buffer{}
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Process.Kill(); keep.Close(); sim.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("voicesim: %v", err)
	}
	go io.Copy(io.Discard, out)
	m := regexp.MustCompile(`listening on (\S+)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("voicesim said %q, not where it listens", line)
	}
	return m[1]
}

// firstConfig writes the example config with the changes the README's "A
// first config" asks for: the simulator, a token, the plugins built here,
// runtime and state folders of this user, no sound card.
func firstConfig(t *testing.T, root, dir, address, pluginDir string, more ...[2]string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "agenthost.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(b)
	run, state := filepath.Join(dir, "run"), filepath.Join(dir, "state")
	for _, d := range []string{run, state} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range append([][2]string{
		{"  address: 127.0.0.1:8009", "  address: " + address},
		{`  token: ""`, "  token: demo-token"},
		{"    - /usr/lib/agenthost/plugins", "    - " + pluginDir},
		{`  runtime_dir: ""`, "  runtime_dir: " + run},
		{`  state_dir: ""`, "  state_dir: " + state},
		{"  backend: portaudio", "  backend: none"},
	}, more...) {
		if !strings.Contains(cfg, r[0]) {
			t.Fatalf("agenthost.example.yaml has no line %q, which the README tells a reader to change: update README.md and this test", r[0])
		}
		cfg = strings.Replace(cfg, r[0], r[1], 1)
	}
	path := filepath.Join(dir, "my.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReadmeCommands runs the ```sh blocks of the README's "Using it", in
// order, against the simulator and a daemon on the example config changed
// as "A first config" says, with the bundled plugins; each command must
// succeed and print what its `# →` lines say. Every CLI command must be
// found in the section.
func TestReadmeCommands(t *testing.T) {
	root := testbin.ModuleRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	using := docSection(t, string(doc), "## Using it")
	cmds := docCommands(t, using)
	if len(cmds) < 10 {
		t.Fatalf("the README's Using it has %d commands to run; is the ```sh fence gone?", len(cmds))
	}

	host := testbin.Build(t, "./cmd/agenthost")
	help, _, _ := runErr(root, nil, host, "help")
	for _, m := range regexp.MustCompile(`(?m)^  (\w+) `).FindAllStringSubmatch(help, -1) {
		if !strings.Contains(using, "agenthost "+m[1]) {
			t.Errorf("`agenthost %s` is not in the README's Using it", m[1])
		}
	}

	d := startReadmeDaemon(t, root, host)
	host, cfg, dir, daemonLog := d.host, d.cfg, d.dir, d.log

	for _, c := range cmds {
		if !strings.HasPrefix(c.line, "agenthost ") {
			t.Fatalf("%q: the README's Using it runs only agenthost commands", c.line)
		}
		line := host + strings.TrimPrefix(c.line, "agenthost") + " --config " + cfg
		out, errOut, err := runErr(dir, nil, "bash", "-c", line)
		if err != nil {
			t.Fatalf("README: `%s` failed: %v\n%s%s\ndaemon:\n%s", c.line, err, out, errOut, daemonLog)
		}
		for _, want := range c.expect {
			if !strings.Contains(out+errOut, want) {
				t.Errorf("README: `%s` printed\n%s%s\nnot %q as the README says", c.line, out, errOut, want)
			}
		}
	}
	t.Logf("ran %d of the README's commands", len(cmds))
}

// readmeDaemon is a daemon on the README's first config, against voicesim.
type readmeDaemon struct {
	host, cfg, dir, pluginDir string
	log                       *testbin.Buffer
}

// startReadmeDaemon starts voicesim and a daemon on the example config
// changed as the README's "A first config" says (more: further changes),
// with the bundled plugins, and waits until it is connected and has
// described its plugins.
func startReadmeDaemon(t *testing.T, root, host string, more ...[2]string) readmeDaemon {
	t.Helper()
	dir := t.TempDir()
	pluginDir := filepath.Join(dir, "plugins")
	if err := os.Mkdir(pluginDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"clock", "files", "media", "sysinfo"} {
		b, err := os.ReadFile(testbin.Build(t, "./plugins/"+p))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pluginDir, p), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	address := startSimulator(t, testbin.Build(t, "./cmd/voicesim"))
	cfg := firstConfig(t, root, dir, address, pluginDir, more...)

	daemonLog := &testbin.Buffer{}
	daemon := exec.Command(host, "run", "--config", cfg)
	daemon.Dir = dir
	daemon.Stdout, daemon.Stderr = daemonLog, daemonLog
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	daemon.WaitDelay = 10 * time.Second // a child that kept its output open does not hold the test
	exited := make(chan struct{})
	go func() { daemon.Wait(); close(exited) }()
	t.Cleanup(func() {
		daemon.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(2 * time.Minute): // not an assertion: the end of a daemon that would not stop
			daemon.Process.Kill()
			<-exited
		}
	})

	// Ready: connected to the simulator, and the plugins described.
	ready := func() bool {
		status, _, _ := runErr(dir, nil, host, "status", "--config", cfg)
		plugins, _, _ := runErr(dir, nil, host, "plugins", "--config", cfg)
		return strings.Contains(status, `"connected": true`) && strings.Contains(plugins, "get_current_time")
	}
	for deadline := time.Now().Add(3 * time.Minute); !ready(); time.Sleep(200 * time.Millisecond) {
		select {
		case <-exited:
			t.Fatalf("the daemon exited:\n%s", daemonLog)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon did not connect and describe its plugins:\n%s", daemonLog)
		}
	}

	return readmeDaemon{host: host, cfg: cfg, dir: dir, pluginDir: pluginDir, log: daemonLog}
}

// fencedBlock returns the first fenced block of kind (```go, ```sh, …) in section.
func fencedBlock(t *testing.T, section, kind string) string {
	t.Helper()
	_, rest, ok := strings.Cut(section, "```"+kind+"\n")
	if !ok {
		t.Fatalf("no ```%s block in\n%s", kind, section)
	}
	block, _, _ := strings.Cut(rest, "\n```")
	return block
}

// TestPluginGuideCommands follows the plugin guide (plugins/README.md) as a
// reader would: the complete plugin's code, built in a module of its own
// with the guide's commands, installed with its commands into the folder of
// a running daemon configured with its YAML, started by hand, and called as
// "Debug it" says; its greeting must be the configured one.
func TestPluginGuideCommands(t *testing.T) {
	root, err := filepath.Abs(testbin.ModuleRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	guideBytes, err := os.ReadFile(filepath.Join(root, "plugins", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	guide := string(guideBytes)
	code := fencedBlock(t, docSection(t, guide, "## A complete plugin"), "go")
	ownModule := fencedBlock(t, docSection(t, guide, "## A plugin in a module of its own"), "sh")
	install := fencedBlock(t, docSection(t, guide, "## Install it"), "sh")
	configure := fencedBlock(t, docSection(t, guide, "## Configure it"), "yaml")
	call := regexp.MustCompile("`(agenthost call say_hello [^`]+)`").FindStringSubmatch(docSection(t, guide, "## Debug it"))
	if call == nil {
		t.Fatal(`the guide's "Debug it" has no agenthost call say_hello`)
	}

	// Build it in a module of its own: the checkout is this one, the code
	// the guide's; offline, so go.sum comes from this module and tidy
	// keeps going past test-only packages the module cache lacks.
	work := t.TempDir()
	mainGo := filepath.Join(work, "main.go.txt")
	if err := os.WriteFile(mainGo, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	var script []string
	for _, l := range strings.Split(ownModule, "\n") {
		l, _, _ = strings.Cut(l, "  #")
		switch l = strings.TrimSpace(l); {
		case strings.HasPrefix(l, "git clone "):
		case strings.HasPrefix(l, "# write main.go"):
			script = append(script, "cp "+mainGo+" main.go")
		case l == "go mod tidy":
			script = append(script, "cp "+filepath.Join(root, "go.sum")+" . && go mod tidy -e")
		case l == "" || strings.HasPrefix(l, "#"):
		default:
			script = append(script, strings.ReplaceAll(l, "$HOME/src/agenthost", root))
		}
	}
	env := []string{"GOPROXY=off", "GOSUMDB=off", "GOFLAGS=-mod=mod -buildvcs=false", "GOWORK=off"}
	if out, errOut, err := runErr(work, env, "bash", "-ec", strings.Join(script, "\n")); err != nil {
		t.Fatalf("the guide's build in a module of its own:\n%s\n%v\n%s%s", strings.Join(script, "\n"), err, out, errOut)
	}
	built := filepath.Join(work, "hello", "hello")

	// Started by hand, it says what it is and exits 1.
	out, errOut, err := runErr(work, nil, built)
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 || !strings.Contains(out+errOut, "This is an agenthost plugin.") {
		t.Errorf("hello started by hand: %v\n%s%s\nnot the guide's message and status 1", err, out, errOut)
	}

	// Configure it (before the start) and install it (into the running daemon's folder).
	yaml, ok := strings.CutPrefix(configure, "plugins:\n")
	if !ok {
		t.Fatalf("the guide's YAML does not start with plugins:\n%s", configure)
	}
	host := testbin.Build(t, "./cmd/agenthost")
	d := startReadmeDaemon(t, root, host, [2]string{"  config: {}", strings.TrimRight(yaml, "\n")})
	installScript := strings.ReplaceAll(install, "/usr/lib/agenthost/plugins", d.pluginDir)
	if out, errOut, err := runErr(filepath.Join(work, "hello"), nil, "bash", "-ec", installScript); err != nil {
		t.Fatalf("the guide's install:\n%s\n%v\n%s%s", installScript, err, out, errOut)
	}
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		plugins, _, _ := runErr(d.dir, nil, host, "plugins", "--config", d.cfg)
		if strings.Contains(plugins, "say_hello") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon did not take the installed plugin:\n%s\n%s", plugins, d.log)
		}
	}

	// Debug it: the call the guide shows answers with the configured greeting.
	line := host + strings.TrimPrefix(call[1], "agenthost") + " --config " + d.cfg
	out, errOut, err = runErr(d.dir, nil, "bash", "-c", line)
	if err != nil || !strings.Contains(out, "Servus, Ann! Great to hear from you!") {
		t.Errorf("`%s`: %v\n%s%s\nnot the greeting the guide's code and YAML give\ndaemon:\n%s", call[1], err, out, errOut, d.log)
	}
}

// TestDocLinksResolve: every relative link of the README, docs/ and the
// plugin guide leads to a file or folder of the tree (a link from docs/x.md
// to a repository file needs ../).
func TestDocLinksResolve(t *testing.T) {
	root := testbin.ModuleRoot(t)
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files := append([]string{filepath.Join(root, "README.md"), filepath.Join(root, "plugins", "README.md")}, docs...)
	link := regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			if strings.Contains(m[1], "://") || strings.HasPrefix(m[1], "mailto:") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(f), m[1])); err != nil {
				rel, _ := filepath.Rel(root, f)
				t.Errorf("%s links to %s, which is not there", rel, m[1])
			}
		}
	}
}

// TestReadmeIsAManual: the README stays a manual read in ten minutes
// (issue 43); what is longer belongs in docs/.
func TestReadmeIsAManual(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testbin.ModuleRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > 250 {
		t.Errorf("README.md has %d lines, over 250: move the detail to a topic in docs/ (indexed in docs/README.md)", n)
	}
}
