// Package gpu finds the GPUs of this node. It owns NVML discovery (index,
// UUID, model, memory, NUMA node, NVLink peers), the simulated GPUs that
// development clusters and tests announce instead, and the agent's --gpus
// flag syntax. It reports what the hardware says and nothing else: it must
// never touch gossip, raft, the FSM or running tasks, and it keeps no
// state between calls.
//
// Contracts that are not obvious:
//
//   - NVML is reached through NVIDIA/go-nvml, which needs cgo but loads
//     libnvidia-ml.so.1 at run time (dlopen), so one binary runs on hosts
//     with and without the driver. A missing library, a library without a
//     loaded driver, and a binary built without cgo all return an error
//     wrapping ErrNoNVML, so callers can fall back to Simulated with one
//     clear log line.
//   - Index is NVML's enumeration index, which follows PCI bus order. The
//     executor must run tasks with CUDA_DEVICE_ORDER=PCI_BUS_ID so that
//     CUDA_VISIBLE_DEVICES means the same devices.
//   - NVML symbols newer than the oldest supported driver
//     (nvmlDeviceGetNumaNodeId, nvmlDeviceGetNvLinkRemoteDeviceType) are
//     looked up before use: calling a symbol the loaded library lacks
//     would crash the process. Without the NUMA call, the NUMA node comes
//     from /sys/bus/pci/devices/<bus id>/numa_node; -1 when unknown.
//   - NVLink peers: a link whose remote end is another local GPU makes the
//     two peers. A link whose remote end is an NVSwitch (or any device
//     that is not a local GPU) makes its GPU part of the switch fabric, and
//     every GPU with an active link into the fabric is a peer of every
//     other one, as on HGX boards, where all GPUs talk through NVSwitches
//     at full bandwidth.
package gpu
