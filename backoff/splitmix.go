package backoff

// SplitMix64 is a tiny deterministic random source held by value, so a pure
// state machine can keep it in its snapshot and replay draws exactly. It is
// Vigna's SplitMix64; the value is the generator's state (any seed is fine).
type SplitMix64 uint64

// Next returns a uniform float64 in [0, 1) and the advanced state.
func (s SplitMix64) Next() (float64, SplitMix64) {
	s += 0x9e3779b97f4a7c15
	z := uint64(s)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	// The top 53 bits fill a float64 mantissa exactly, so 1 is unreachable.
	return float64(z>>11) * 0x1p-53, s
}
