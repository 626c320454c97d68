//go:build planted_nofence

package agent

// plantedNoFence: see planted_nofence_off.go. Test builds only.
const plantedNoFence = true
