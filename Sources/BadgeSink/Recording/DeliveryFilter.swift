import BadgeWire

/// Which deliveries `GET /deliveries` lists: by token, `seq`, provider, status, push type, kind (alert or
/// badge-only) and text, the oldest `limit` of those that match.
public struct DeliveryFilter: Sendable, Equatable {
    /// Only these tokens'; nil for every token.
    public var tokens: [String]?
    /// Only those with a greater `seq`.
    public var after: Int?
    /// At most this many, the oldest that match.
    public var limit: Int?
    /// Only pushes through this service.
    public var provider: PushProvider?
    /// Only pushes answered with one of these statuses (0: a broken connection).
    public var statuses: Set<Int>?
    /// Only pushes whose payload's `type` is this.
    public var type: String?
    /// Only alerts, or only badge-only pushes.
    public var kind: PushKind?
    /// Only pushes whose body, as received, holds this text (ASCII letters in any case).
    public var text: String?

    /// An alert or a badge-only push, as the `kind` filter names them.
    public enum PushKind: String, Sendable, Equatable, CaseIterable {
        /// A push with `aps.alert`.
        case alert
        /// A push with a badge and no alert.
        case badgeOnly = "badge_only"
    }

    /// Creates a filter; every member nil matches every delivery.
    public init(
        tokens: [String]? = nil, after: Int? = nil, limit: Int? = nil, provider: PushProvider? = nil,
        statuses: Set<Int>? = nil, type: String? = nil, kind: PushKind? = nil, text: String? = nil
    ) {
        self.tokens = tokens
        self.after = after
        self.limit = limit
        self.provider = provider
        self.statuses = statuses
        self.type = type
        self.kind = kind
        self.text = text
    }

    /// Whether the filter looks inside bodies (type, kind or text), which the store's indexes cannot answer.
    var readsBodies: Bool { self.type != nil || self.kind != nil || self.text != nil }

    /// Whether it needs more than the store's token and `seq` indexes.
    var isNarrowerThanIndexes: Bool { self.readsBodies || self.provider != nil || self.statuses != nil }

    /// Whether `record` of `snapshot` matches the members not answered by the indexes.
    func matches(_ record: ReceivedPushRecord, in snapshot: ReceivedPushSnapshot) -> Bool {
        if let provider, record.provider != provider {
            return false
        }
        if let statuses, !statuses.contains(Int(record.status)) {
            return false
        }
        guard self.readsBodies else { return true }
        let body = snapshot.bytes(of: record).body
        if let text, !Self.contains(body, text) {
            return false
        }
        if self.type != nil || self.kind != nil {
            let content = PushContent(body: body, provider: record.provider)
            if let type, content.type != type {
                return false
            }
            if let kind, content.kind.rawValue != kind.rawValue {
                return false
            }
        }
        return true
    }

    /// Whether `haystack` holds `needle`'s UTF-8, ASCII letters compared without case.
    static func contains(_ haystack: ArraySlice<UInt8>, _ needle: String) -> Bool {
        let needle = Array(needle.utf8).map(Self.lower)
        guard !needle.isEmpty else { return true }
        guard haystack.count >= needle.count else { return false }
        var start = haystack.startIndex
        let last = haystack.endIndex - needle.count
        while start <= last {
            var offset = 0
            while offset < needle.count, Self.lower(haystack[start + offset]) == needle[offset] {
                offset += 1
            }
            if offset == needle.count {
                return true
            }
            start += 1
        }
        return false
    }

    private static func lower(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
    }
}

extension ReceivedPushSnapshot {
    /// The records that `filter` keeps, at most its `limit`.
    func filtered(by filter: DeliveryFilter) -> ReceivedPushSnapshot {
        guard filter.isNarrowerThanIndexes else { return self }
        let limit = max(0, filter.limit ?? Int.max)
        var kept: [ReceivedPushRecord] = []
        for record in self.records where filter.matches(record, in: self) {
            guard kept.count < limit else { break }
            kept.append(record)
        }
        return ReceivedPushSnapshot(
            records: kept, chunks: self.chunks, tokens: self.tokens, reasons: self.reasons,
            authorizations: self.authorizations)
    }
}
