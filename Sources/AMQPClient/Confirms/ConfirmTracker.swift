/// Tracks publisher confirms on one channel: which delivery tags are in flight, which were returned as
/// unroutable, and what each `basic.ack` / `basic.nack` (with or without `multiple`) resolves.
///
/// A value type with no I/O: the connection feeds it the broker's frames and carries out the resolutions
/// it returns. Tags are assigned by the tracker in publish order, starting at 1, exactly as the broker
/// numbers messages on a channel in confirm mode.
struct ConfirmTracker<Waiter> {
    /// How a published message ended.
    enum Outcome: Equatable {
        /// The broker took responsibility for the message.
        case confirmed
        /// The broker refused the message (`basic.nack`).
        case nacked
        /// The message was returned as unroutable (`basic.return` on a mandatory publish) before it was acked.
        case returned(replyCode: UInt16, replyText: String)
    }

    /// One message whose fate is now known.
    struct Resolution {
        var tag: UInt64
        var waiter: Waiter
        var outcome: Outcome
    }

    private struct Slot {
        var waiter: Waiter
        var returned: (replyCode: UInt16, replyText: String)?
        var resolved: Bool
    }

    /// Slots for tags `firstTag ..< nextTag`, oldest first. Resolved slots at the front are dropped eagerly.
    private var slots: [Slot?] = []
    private var head = 0
    private var firstTag: UInt64 = 1
    private var unresolvedCount = 0

    /// The tag the next published message will get.
    private(set) var nextTag: UInt64 = 1

    init() {}

    /// Number of messages published and not yet confirmed, nacked or failed.
    var inFlight: Int { unresolvedCount }

    /// Records a publish and returns its delivery tag.
    mutating func published(_ waiter: Waiter) -> UInt64 {
        let tag = nextTag
        nextTag += 1
        slots.append(Slot(waiter: waiter, returned: nil, resolved: false))
        unresolvedCount += 1
        return tag
    }

    /// Records a `basic.return` for `tag`; the message resolves as returned when its ack arrives.
    /// Returns false when the tag is unknown or already resolved.
    @discardableResult
    mutating func returned(tag: UInt64, replyCode: UInt16, replyText: String) -> Bool {
        guard let index = index(of: tag), var slot = slots[index], !slot.resolved else { return false }
        slot.returned = (replyCode, replyText)
        slots[index] = slot
        return true
    }

    /// Applies a `basic.ack`.
    mutating func ack(tag: UInt64, multiple: Bool) -> [Resolution] {
        resolve(tag: tag, multiple: multiple, nack: false)
    }

    /// Applies a `basic.nack`.
    mutating func nack(tag: UInt64, multiple: Bool) -> [Resolution] {
        resolve(tag: tag, multiple: multiple, nack: true)
    }

    /// Removes every unresolved message (the channel or connection is gone) and returns their waiters, oldest first.
    mutating func failAll() -> [(tag: UInt64, waiter: Waiter)] {
        var failed: [(tag: UInt64, waiter: Waiter)] = []
        for offset in head..<slots.count {
            if let slot = slots[offset], !slot.resolved {
                failed.append((firstTag + UInt64(offset - head), slot.waiter))
            }
        }
        firstTag = nextTag
        slots.removeAll(keepingCapacity: false)
        head = 0
        unresolvedCount = 0
        return failed
    }

    private func index(of tag: UInt64) -> Int? {
        guard tag >= firstTag, tag < nextTag else { return nil }
        return head + Int(tag - firstTag)
    }

    private mutating func resolve(tag: UInt64, multiple: Bool, nack: Bool) -> [Resolution] {
        var resolutions: [Resolution] = []
        if multiple {
            // Every unresolved tag up to and including `tag`.
            guard tag >= firstTag else { return [] }
            let last = min(tag, nextTag - 1)
            if last >= firstTag {
                for current in firstTag...last {
                    if let resolution = take(tag: current, nack: nack) { resolutions.append(resolution) }
                }
            }
        } else if let resolution = take(tag: tag, nack: nack) {
            resolutions.append(resolution)
        }
        compact()
        return resolutions
    }

    private mutating func take(tag: UInt64, nack: Bool) -> Resolution? {
        guard let index = index(of: tag), var slot = slots[index], !slot.resolved else { return nil }
        slot.resolved = true
        slots[index] = slot
        unresolvedCount -= 1
        let outcome: Outcome
        if nack {
            outcome = .nacked
        } else if let returned = slot.returned {
            outcome = .returned(replyCode: returned.replyCode, replyText: returned.replyText)
        } else {
            outcome = .confirmed
        }
        return Resolution(tag: tag, waiter: slot.waiter, outcome: outcome)
    }

    /// Drops resolved slots from the front so memory stays proportional to what is in flight.
    private mutating func compact() {
        while head < slots.count, slots[head]?.resolved ?? true {
            slots[head] = nil
            head += 1
            firstTag += 1
        }
        if head > 1024, head * 2 > slots.count {
            slots.removeFirst(head)
            head = 0
        }
    }
}
