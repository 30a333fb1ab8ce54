package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// pidfd_open(2) and pidfd_send_signal(2) have the same numbers on every
// Linux architecture (the unified syscall table since Linux 5.1/5.3).
const (
	sysPidfdSendSignal = 424
	sysPidfdOpen       = 434
)

// pidHandle holds a pidfd for the sandbox's pid 1 (bwrap's child), so it can
// be killed and waited for without ever touching a reused pid.
type pidHandle struct {
	mu sync.Mutex
	fd int // -1 when unknown
}

// open takes a pidfd for pid, kept only if pid is still the child of
// parent (bwrap, not yet reaped, so its pid cannot have been reused).
func (h *pidHandle) open(pid, parent int) {
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if errno != 0 {
		return
	}
	if ppid, err := parentOf(pid); err != nil || ppid != parent {
		syscall.Close(int(fd))
		return
	}
	syscall.CloseOnExec(int(fd))
	h.mu.Lock()
	h.fd = int(fd)
	h.mu.Unlock()
}

// kill sends SIGKILL through the pidfd; false when there is none.
func (h *pidHandle) kill() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fd < 0 {
		return false
	}
	_, _, errno := syscall.Syscall6(sysPidfdSendSignal, uintptr(h.fd), uintptr(syscall.SIGKILL), 0, 0, 0, 0)
	return errno == 0 || errno == syscall.ESRCH
}

// wait blocks until the process has exited (a pidfd polls readable then;
// for a pid namespace's init that is after every process in it is gone), or
// timeout. It reports false on timeout.
func (h *pidHandle) wait(timeout time.Duration) bool {
	h.mu.Lock()
	fd := h.fd
	h.mu.Unlock()
	if fd < 0 {
		return true
	}
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return true
	}
	defer syscall.Close(ep)
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd)}
	if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return true
	}
	deadline := time.Now().Add(timeout)
	events := make([]syscall.EpollEvent, 1)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		n, err := syscall.EpollWait(ep, events, int(left/time.Millisecond)+1)
		if err == syscall.EINTR {
			continue
		}
		return err == nil && n > 0
	}
}

func (h *pidHandle) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fd >= 0 {
		syscall.Close(h.fd)
		h.fd = -1
	}
}

// parentOf reads the parent pid from /proc/<pid>/stat.
func parentOf(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	return strconv.Atoi(string(f[1]))
}
