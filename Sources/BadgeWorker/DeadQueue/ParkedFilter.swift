import BadgeWire

/// Which parked messages `badgepipe dead list` shows and `badgepipe dead replay` replays. Every condition given must
/// hold; within one condition, any of its values will do. The empty filter takes every message.
public struct ParkedFilter: Sendable, Hashable {
    /// Reason classes (``ParkedMessage/reason``), e.g. `unknown_type`.
    public var reasons: Set<String>
    /// Event types (the body's `type`); a message whose body has no `type` never matches.
    public var types: Set<String>
    /// Message ids or event ids.
    public var ids: Set<String>
    /// Parked at or after this time. A message whose park time is unknown never matches a time bound.
    public var since: Timestamp?
    /// Parked before this time.
    public var until: Timestamp?

    /// A filter; every condition is off by default.
    public init(
        reasons: Set<String> = [], types: Set<String> = [], ids: Set<String> = [], since: Timestamp? = nil,
        until: Timestamp? = nil
    ) {
        self.reasons = reasons
        self.types = types
        self.ids = ids
        self.since = since
        self.until = until
    }

    /// Whether `message` passes every condition.
    public func matches(_ message: ParkedMessage) -> Bool {
        if !reasons.isEmpty, !reasons.contains(message.reason) { return false }
        if !types.isEmpty, !(message.eventType.map(types.contains) ?? false) { return false }
        if !ids.isEmpty, !ids.contains(where: message.isNamed) { return false }
        if since != nil || until != nil {
            guard let parkedAt = message.parkedAt else { return false }
            if let since, parkedAt < since { return false }
            if let until, parkedAt >= until { return false }
        }
        return true
    }

    /// A time bound as the command line gives it: an RFC 3339 time (`2026-11-21T10:00:00Z`), or an age before
    /// `now`: a whole number followed by `s`, `m`, `h` or `d` (`90s`, `15m`, `2h`, `7d`). Nil for anything else.
    public static func time(_ text: String, now: Timestamp) -> Timestamp? {
        if let time = Timestamp.parse(text) { return time }
        guard let unit = text.last, let amount = Int64(text.dropLast()), amount >= 0 else { return nil }
        let seconds: Int64
        switch unit {
        case "s": seconds = 1
        case "m": seconds = 60
        case "h": seconds = 3600
        case "d": seconds = 86_400
        default: return nil
        }
        let (age, overflow) = amount.multipliedReportingOverflow(by: seconds * 1_000_000)
        guard !overflow, age <= now.microsecondsSinceEpoch else { return nil }
        return now.adding(microseconds: -age)
    }
}
