package apiserver

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is one child server process with its log file.
type proc struct {
	name   string
	cmd    *exec.Cmd
	log    string
	exited chan struct{} // closed when the process has been reaped
	err    error         // Wait's result, valid once exited is closed
}

func startProc(name, bin string, args []string, logDir string) (*proc, error) {
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Its own process group, so a signal from the terminal to the test
		// does not hit it before Stop runs.
		Setpgid: true,
		// If the test binary dies without running Stop (a panic, a
		// timeout), the servers die with it instead of lingering.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.exited)
	}()
	return p, nil
}

func (p *proc) signal(sig syscall.Signal) error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s is not running (%v)", p.name, p.err)
	default:
	}
	return p.cmd.Process.Signal(sig)
}

// stop asks the process to exit and kills it if it has not after grace; it
// returns only once the process is reaped.
func (p *proc) stop(grace time.Duration) {
	// A stopped process would not act on SIGTERM.
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.exited:
		return
	case <-t.C:
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// logTail is the end of the process's log, for error messages.
func (p *proc) logTail(lines int) string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return ""
	}
	return string(tail(b, lines))
}

func tail(b []byte, lines int) []byte {
	b = bytes.TrimRight(b, "\n")
	for i, n := len(b)-1, 0; i >= 0; i-- {
		if b[i] == '\n' {
			n++
			if n == lines {
				return b[i+1:]
			}
		}
	}
	return b
}

// procCPUSeconds reads utime and stime of pid from /proc/<pid>/stat (fields 14 and 15, in
// clock ticks of 1/100 s on Linux).
func procCPUSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces: count from after it.
	rest := string(b)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %q %q", pid, f[11], f[12])
	}
	return (utime + stime) / 100, nil
}
