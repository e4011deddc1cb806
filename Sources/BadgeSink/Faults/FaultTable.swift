import BadgeSupport

/// The active faults, in insertion order, and the random source for their rates.
struct FaultTable {
    private var faults: [Fault] = []
    private var random: SeededGenerator

    /// Creates an empty table whose rate draws come from `seed`.
    init(seed: UInt64) {
        self.random = SeededGenerator(seed: seed)
    }

    /// The active faults, oldest first, each with the count it still fires for.
    var all: [Fault] { self.faults }

    /// Whether no fault is active.
    var isEmpty: Bool { self.faults.isEmpty }

    /// Adds a fault after the existing ones.
    mutating func add(_ fault: Fault) {
        self.faults.append(fault)
    }

    /// Removes every fault; returns how many there were.
    @discardableResult
    mutating func removeAll() -> Int {
        let count = self.faults.count
        self.faults.removeAll()
        return count
    }

    /// The fault for a push to `token`: the first in insertion order that matches and fires.
    ///
    /// A fault with a rate that does not fire this time lets the next one be considered. A fault with a count
    /// uses one up when it fires and expires when none is left.
    mutating func fire(token: String) -> Fault? {
        var index = 0
        while index < self.faults.count {
            let fault = self.faults[index]
            defer { index += 1 }
            if let faultToken = fault.token, faultToken != token {
                continue
            }
            if let rate = fault.rate, !(Double.random(in: 0..<1, using: &self.random) < rate) {
                continue
            }
            if let times = fault.times {
                if times <= 1 {
                    self.faults.remove(at: index)
                } else {
                    self.faults[index] = fault.with(remaining: times - 1)
                }
            }
            return fault
        }
        return nil
    }
}
