/// A small seeded random number generator (SplitMix64): the same seed gives the same sequence, so that the sink's
/// fault rates and the randomised tests can be replayed. The one seeded generator of the project.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// Creates a generator that produces the same sequence for the same seed.
    public init(seed: UInt64) {
        state = seed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }

    /// A number in `0..<bound` (0 when `bound` is not positive): `next() % bound`.
    public mutating func next(_ bound: Int) -> Int {
        Int(next() % UInt64(max(1, bound)))
    }
}
