import Foundation

/// An instant in time with microsecond precision, as carried by events (`occurred_at`, `until`).
///
/// Timestamps are parsed from and formatted to RFC 3339. Comparison is by instant, so
/// `2026-11-21T11:00:00+01:00` equals `2026-11-21T10:00:00Z`.
public struct Timestamp: Comparable, Hashable, Sendable {
    /// Microseconds since 1970-01-01T00:00:00Z (negative before it).
    public let microsecondsSinceEpoch: Int64

    /// Creates a timestamp from microseconds since the Unix epoch.
    public init(microsecondsSinceEpoch: Int64) {
        self.microsecondsSinceEpoch = microsecondsSinceEpoch
    }

    /// Creates a timestamp from a Foundation `Date`, truncated to whole microseconds.
    public init(date: Date) {
        let micros = (date.timeIntervalSince1970 * 1_000_000).rounded(.down)
        self.microsecondsSinceEpoch = Int64(micros)
    }

    /// The current time.
    public static func now() -> Timestamp {
        Timestamp(date: Date())
    }

    /// This instant as a Foundation `Date`.
    public var date: Date {
        Date(timeIntervalSince1970: Double(microsecondsSinceEpoch) / 1_000_000)
    }

    /// Returns a timestamp `microseconds` later (or earlier when negative) than this one.
    public func adding(microseconds: Int64) -> Timestamp {
        Timestamp(microsecondsSinceEpoch: microsecondsSinceEpoch + microseconds)
    }

    /// Orders timestamps by instant.
    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
        lhs.microsecondsSinceEpoch < rhs.microsecondsSinceEpoch
    }
}

extension Timestamp: CustomStringConvertible {
    /// The RFC 3339 form, same as ``rfc3339``.
    public var description: String { rfc3339 }
}
