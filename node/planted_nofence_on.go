//go:build planted_nofence

package node

// plantedNoFence: see planted_nofence_off.go. Test builds only.
const plantedNoFence = true
