package cgroup

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Device confinement on cgroup v2 is a BPF program of type
// BPF_PROG_TYPE_CGROUP_DEVICE attached to the cgroup, which the kernel
// runs on every open of a device node by a process in it (and in its
// descendants) and whose 0 denies it, as runc and Slurm's cgroup/v2
// plugin do. The program here allows everything but NVIDIA GPUs (major
// 195, minors 0 to 253) the job was not given: like the v1 deny list.

// bpfInsn is one eBPF instruction.
type bpfInsn struct {
	op   uint8
	regs uint8 // dst in the low nibble, src in the high
	off  int16
	imm  int32
}

// eBPF opcodes the program uses.
const (
	opLdxW    = 0x61 // BPF_LDX | BPF_MEM | BPF_W: dst = *(u32 *)(src + off)
	opAndK    = 0x57 // BPF_ALU64 | BPF_AND | BPF_K: dst &= imm
	opJneK    = 0x55 // BPF_JMP | BPF_JNE | BPF_K: if dst != imm goto +off
	opJeqK    = 0x15 // BPF_JMP | BPF_JEQ | BPF_K: if dst == imm goto +off
	opJgtK    = 0x25 // BPF_JMP | BPF_JGT | BPF_K: if dst > imm goto +off, unsigned
	opMovK    = 0xb7 // BPF_ALU64 | BPF_MOV | BPF_K: dst = imm
	opExit    = 0x95 // BPF_JMP | BPF_EXIT
	devcgChar = 2    // BPF_DEVCG_DEV_CHAR
)

// gpuFilter is the device program allowing every device but the NVIDIA
// GPU minors not in allowed. Its context is struct bpf_cgroup_dev_ctx:
// u32 access_type (access << 16 | type), u32 major, u32 minor. It is
// pure.
//
//	0      r2 = ctx->access_type
//	1      r2 &= 0xffff                   the type
//	2      r4 = ctx->major
//	3      r5 = ctx->minor
//	4      if r2 != char goto allow       block devices: not GPUs
//	5      if r4 != 195 goto allow
//	6..    if r5 == m goto allow          one per allowed GPU
//	6+k    if r5 > 253 goto allow         nvidia-modeset, nvidiactl
//	7+k    r0 = 0; exit                   a GPU the job was not given
//	9+k    r0 = 1; exit                   allow
func gpuFilter(allowed []int) []bpfInsn {
	var allow []int
	for _, m := range allowed {
		if m >= 0 && m <= nvidiaMaxMinor {
			allow = append(allow, m)
		}
	}
	slices.Sort(allow)
	allow = slices.Compact(allow)
	k := len(allow)
	allowAt := 9 + k
	rel := func(at int) int16 { return int16(allowAt - at - 1) } // jumps count from the next instruction
	prog := []bpfInsn{
		{op: opLdxW, regs: 2 | 1<<4, off: 0},
		{op: opAndK, regs: 2, imm: 0xffff},
		{op: opLdxW, regs: 4 | 1<<4, off: 4},
		{op: opLdxW, regs: 5 | 1<<4, off: 8},
		{op: opJneK, regs: 2, off: rel(4), imm: devcgChar},
		{op: opJneK, regs: 4, off: rel(5), imm: nvidiaMajor},
	}
	for i, m := range allow {
		prog = append(prog, bpfInsn{op: opJeqK, regs: 5, off: rel(6 + i), imm: int32(m)})
	}
	prog = append(prog,
		bpfInsn{op: opJgtK, regs: 5, off: rel(6 + k), imm: nvidiaMaxMinor},
		bpfInsn{op: opMovK, regs: 0, imm: 0}, bpfInsn{op: opExit},
		bpfInsn{op: opMovK, regs: 0, imm: 1}, bpfInsn{op: opExit},
	)
	return prog
}

func encodeInsns(prog []bpfInsn) []byte {
	b := make([]byte, 0, 8*len(prog))
	for _, in := range prog {
		b = append(b, in.op, in.regs)
		b = binary.LittleEndian.AppendUint16(b, uint16(in.off))
		b = binary.LittleEndian.AppendUint32(b, uint32(in.imm))
	}
	return b
}

// progLoadAttr is the head of union bpf_attr for BPF_PROG_LOAD.
type progLoadAttr struct {
	progType           uint32
	insnCnt            uint32
	insns              uint64
	license            uint64
	logLevel           uint32
	logSize            uint32
	logBuf             uint64
	kernVersion        uint32
	progFlags          uint32
	progName           [16]byte
	progIfindex        uint32
	expectedAttachType uint32
}

// progAttachAttr is union bpf_attr for BPF_PROG_ATTACH.
type progAttachAttr struct {
	targetFD     uint32
	attachBPFFD  uint32
	attachType   uint32
	attachFlags  uint32
	replaceBPFFD uint32
}

// loadDeviceProg loads prog as a cgroup device program and returns its
// descriptor.
func loadDeviceProg(prog []bpfInsn) (int, error) {
	code := encodeInsns(prog)
	license := []byte("Apache-2.0\x00")
	logBuf := make([]byte, 4096)
	attr := progLoadAttr{
		progType: unix.BPF_PROG_TYPE_CGROUP_DEVICE,
		insnCnt:  uint32(len(prog)),
		insns:    uint64(uintptr(unsafe.Pointer(&code[0]))),
		license:  uint64(uintptr(unsafe.Pointer(&license[0]))),
		logLevel: 1,
		logSize:  uint32(len(logBuf)),
		logBuf:   uint64(uintptr(unsafe.Pointer(&logBuf[0]))),
	}
	copy(attr.progName[:], "shoal_gpus")
	fd, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_PROG_LOAD, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	runtime.KeepAlive(code)
	runtime.KeepAlive(license)
	runtime.KeepAlive(logBuf)
	if errno != 0 {
		verifier := string(logBuf[:max(0, slices.Index(logBuf, 0))])
		return -1, fmt.Errorf("load the device program: %w: %s", errno, verifier)
	}
	return int(fd), nil
}

// attachDeviceProg attaches the program fd to the cgroup directory dir,
// replacing the one attached before (no BPF_F_ALLOW_MULTI): a cgroup
// given its limits again gets the new program, not two.
func attachDeviceProg(dir string, prog int) error {
	cg, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(cg)
	attr := progAttachAttr{targetFD: uint32(cg), attachBPFFD: uint32(prog), attachType: unix.BPF_CGROUP_DEVICE}
	if _, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_PROG_ATTACH, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr)); errno != 0 {
		return fmt.Errorf("attach the device program to %s: %w", dir, errno)
	}
	return nil
}

// confineGPUs attaches to dir the program that denies the NVIDIA GPUs
// not in allowed.
func confineGPUs(dir string, allowed []int) error {
	fd, err := loadDeviceProg(gpuFilter(allowed))
	if err != nil {
		return err
	}
	defer unix.Close(fd) // the attachment holds its own reference
	return attachDeviceProg(dir, fd)
}

// probeDeviceProgs reports whether this kernel and process may load a
// cgroup device program (CONFIG_CGROUP_BPF, CAP_BPF or CAP_SYS_ADMIN).
func probeDeviceProgs() error {
	fd, err := loadDeviceProg(gpuFilter(nil))
	if err != nil {
		return err
	}
	return unix.Close(fd)
}
