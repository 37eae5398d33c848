package main

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"

	"github.com/agenthost/agenthost/host/household"
)

func init() {
	commands["household"] = command{"several speakers that answer once: household create|join CODE|code|leave", cmdHousehold}
}

func cmdHousehold(e *env, args []string) error {
	fs := e.flags("household")
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
		fs.Usage()
		return errHelpShown
	}
	if err := e.parse(fs, args); err != nil {
		return err
	}
	args = fs.Args()
	operands := map[string]int{"create": 0, "join": 1, "code": 0, "leave": 0}
	if n, ok := operands[firstOr(args)]; !ok || len(args)-1 != n {
		return usageErr("usage: agenthost household create | join CODE | code | leave (agenthost help household)")
	}
	cfg, err := e.loadConfig()
	if err != nil {
		return err
	}
	state := cfg.Plugins.StateDirectory()
	if err := asStateOwner(state); err != nil {
		return err
	}
	key, in, err := household.LoadKey(state)
	if err != nil && args[0] != "leave" && args[0] != "join" {
		return err
	}
	restart := "the daemon takes it at its next restart: systemctl restart agenthost"
	switch args[0] {
	case "create":
		if in {
			return fmt.Errorf("this speaker is in household %s already: `agenthost household code` shows its code; `agenthost household leave` first to make another", key.ID())
		}
		if key, err = household.NewKey(); err != nil {
			return err
		}
		if err := household.SaveKey(state, key); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "household %s created; on each other speaker, run:\n\n  agenthost household join %s\n\n%s\n", key.ID(), key.Code(), restart)
	case "join":
		k, err := household.ParseCode(args[1])
		if err != nil {
			return &exitError{2, err}
		}
		if err := household.SaveKey(state, k); err != nil {
			return err
		}
		if in && key != k {
			fmt.Fprintf(e.stdout, "left household %s; ", key.ID())
		}
		fmt.Fprintf(e.stdout, "joined household %s; %s\n", k.ID(), restart)
	case "code":
		if !in {
			return fmt.Errorf("this speaker is in no household: `agenthost household create` makes one, `agenthost household join CODE` joins one")
		}
		fmt.Fprintln(e.stdout, key.Code())
	case "leave":
		if err := household.RemoveKey(state); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "this speaker is in no household now; %s\n", restart)
	}
	return nil
}

// asStateOwner refuses to write the key as another user than the one who
// owns the state folder: root would write through whatever that user put
// in its way, and the daemon could not read a key of root's.
func asStateOwner(state string) error {
	fi, err := os.Stat(state)
	if err != nil {
		return fmt.Errorf("the state folder: %w (is plugins.state_dir right? does the daemon run with this --config?)", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) == os.Geteuid() {
		return nil
	}
	name := strconv.Itoa(int(st.Uid))
	if u, err := user.LookupId(name); err == nil {
		name = u.Username
	}
	return fmt.Errorf("the state folder %s is %s's: run this as that user (sudo -u %s agenthost household …)", state, name, name)
}

func firstOr(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}
