package testenv

// FreePort returns a TCP port of 127.0.0.1 that nothing listens on now, for a process under test
// to bind (it may be taken again before the process binds it, as with any such probe).
func FreePort() (int, error) { return freePort() }
