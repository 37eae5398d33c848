package scripts

import (
	"os/exec"
	"strings"
	"testing"
)

// TestPackageVersionsFollowCommitOrderInEveryZone: two commits 40 minutes
// apart across the end of summer time in Europe (2026-10-25 01:00 UTC) get
// versions in commit order, and each commit gets the same version whatever
// the build machine's zone (found by review: the version was the commit time
// in local time, so in Berlin the later commit sorted first and apt refused
// the fix).
func TestPackageVersionsFollowCommitOrderInEveryZone(t *testing.T) {
	need(t, "git", "dpkg")
	repo := t.TempDir()
	git := func(env []string, args ...string) string {
		return strings.TrimSpace(run(t, repo, append([]string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@invalid",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@invalid", "GIT_CONFIG_GLOBAL=/dev/null"}, env...), "git", args...))
	}
	git(nil, "init", "-q")
	var commits []string
	for _, at := range []string{"2026-10-25T00:40:00Z", "2026-10-25T01:20:00Z"} {
		env := []string{"GIT_COMMITTER_DATE=" + at, "GIT_AUTHOR_DATE=" + at}
		git(env, "commit", "-q", "--allow-empty", "-m", at)
		commits = append(commits, git(nil, "rev-parse", "HEAD"))
	}
	versions := map[string][]string{}
	for _, zone := range []string{"Europe/Berlin", "America/New_York"} {
		for _, c := range commits {
			versions[zone] = append(versions[zone], strings.TrimSpace(run(t, repo, []string{"TZ=" + zone}, script(t, "version.sh"), c)))
		}
		earlier, later := versions[zone][0], versions[zone][1]
		if err := exec.Command("dpkg", "--compare-versions", earlier, "lt", later).Run(); err != nil {
			t.Errorf("in %s the earlier commit's version %s does not sort below the later one's %s", zone, earlier, later)
		}
	}
	for i := range commits {
		if b, n := versions["Europe/Berlin"][i], versions["America/New_York"][i]; b != n {
			t.Errorf("commit %d: version %s in Berlin, %s in New York", i+1, b, n)
		}
	}
	t.Logf("versions: %v", versions)
}
