//go:build planted_doublebook

package fsm

// plantedDoubleBook: see planted_doublebook_off.go. Test builds only.
const plantedDoubleBook = true
