package control

// ActAsDaemon makes s refuse the descendants of pid rather than of this
// process, for tests whose client is this process.
func ActAsDaemon(s *Server, pid int) { s.daemonPID = pid }

// Decide is decide for the tests: may peer use the socket of the daemon
// pid, running as uid, a subreaper or not?
func Decide(p Peer, pid, uid int, subreaper bool) (Verdict, error) {
	s := &Server{daemonPID: pid}
	d, err := s.thisDaemon()
	d.UID, d.Subreaper = uid, subreaper
	return decide(p, d), err
}

// BootTicks is bootTicks.
var BootTicks = bootTicks
