import BadgeWire

/// The recorded pushes: compact records in `seq` order, their bytes in an arena, an index of positions per
/// token, and the status counters. Not synchronized; ``SinkState`` guards it.
///
/// At most `capacity` deliveries are kept: beyond it the oldest are dropped at once (hidden below `start`), and
/// their storage is reclaimed by a compaction once a quarter of the capacity has been dropped, so that a push
/// costs amortised constant time.
struct ReceivedPushLog {
    /// The most deliveries kept.
    let capacity: Int
    private(set) var records: [ReceivedPushRecord] = []
    /// Records below this index were dropped.
    private var start = 0
    /// Deliveries dropped since the log was created.
    private(set) var dropped = 0
    private var arena = ByteArena()
    private var tokens: [String] = []
    private var tokenIDs: [String: UInt32] = [:]
    private var positionsByToken: [[UInt32]] = []
    private var reasons: [String] = [""]
    private var reasonIDs: [String: UInt32] = [:]
    private var authorizations: [RecordedAuthorization?] = [nil]
    private var authorizationIDs: [RecordedAuthorization: UInt32] = [:]
    private var countsByStatus: [Int: Int] = [:]

    init(capacity: Int = 1_000_000) {
        self.capacity = max(1, capacity)
    }

    /// How many pushes are kept.
    var count: Int { self.records.count - self.start }

    /// Records a push; `seq` must be greater than every recorded one.
    mutating func append(
        seq: Int,
        provider: PushProvider,
        token: String,
        blob: [UInt8],
        headersLength: Int,
        bodyIsJSON: Bool,
        status: Int,
        reason: String?,
        authorization: RecordedAuthorization? = nil,
        receivedAtMilliseconds: Int64,
        httpVersion: ReceivedPushRecord.HTTPVersion = .http1
    ) {
        let tokenID = self.intern(token: token)
        let reasonID = reason.map { self.intern(reason: $0) } ?? 0
        let authorizationID = authorization.map { self.intern(authorization: $0) } ?? 0
        let location = self.arena.append(blob)
        let position = UInt32(self.records.count)
        self.records.append(
            ReceivedPushRecord(
                seq: Int64(seq),
                receivedAtMilliseconds: receivedAtMilliseconds,
                location: location,
                headersLength: UInt32(headersLength),
                bodyLength: UInt32(blob.count - headersLength),
                token: tokenID,
                reason: reasonID,
                authorization: authorizationID,
                status: UInt16(clamping: status),
                provider: provider,
                bodyIsJSON: bodyIsJSON,
                httpVersion: httpVersion
            )
        )
        self.positionsByToken[Int(tokenID)].append(position)
        self.countsByStatus[status, default: 0] += 1
        self.received += 1
        if self.count > self.capacity {
            self.start += 1
            self.dropped += 1
            if self.start >= max(1024, self.capacity / 4) { self.compact() }
        }
    }

    /// Pushes recorded since the log was created.
    private var received = 0

    /// The counters.
    var stats: SinkStats {
        SinkStats(received: self.received, byStatus: self.countsByStatus, dropped: self.dropped)
    }

    /// Rebuilds the storage without the dropped records.
    private mutating func compact() {
        var fresh = ReceivedPushLog(capacity: self.capacity)
        let snapshot = self.snapshot(token: nil, after: nil, limit: nil)
        for record in snapshot.records {
            let (headers, body) = snapshot.bytes(of: record)
            fresh.append(
                seq: Int(record.seq), provider: record.provider, token: self.tokens[Int(record.token)],
                blob: Array(headers) + Array(body), headersLength: headers.count, bodyIsJSON: record.bodyIsJSON,
                status: Int(record.status), reason: record.reason == 0 ? nil : self.reasons[Int(record.reason)],
                authorization: self.authorizations[Int(record.authorization)],
                receivedAtMilliseconds: record.receivedAtMilliseconds, httpVersion: record.httpVersion)
        }
        fresh.countsByStatus = self.countsByStatus
        fresh.received = self.received
        fresh.dropped = self.dropped
        self = fresh
    }

    /// A copy of the first `limit` (all when nil) kept records of `token` (every token when nil) with a `seq`
    /// greater than `after`, oldest first, and what is needed to read them after the lock is released.
    func snapshot(token: String?, after: Int?, limit: Int?) -> ReceivedPushSnapshot {
        let after = Int64(clamping: after ?? Int.min)
        let limit = max(0, limit ?? Int.max)
        var selected: [ReceivedPushRecord]
        if let token {
            guard let tokenID = self.tokenIDs[token] else {
                return ReceivedPushSnapshot(records: [], chunks: [], tokens: [], reasons: [], authorizations: [])
            }
            let positions = self.positionsByToken[Int(tokenID)]
            let first = Self.partitionPoint(count: positions.count) {
                Int(positions[$0]) >= self.start && self.records[Int(positions[$0])].seq > after
            }
            selected = []
            selected.reserveCapacity(min(limit, positions.count - first))
            for position in positions[first...].prefix(limit) {
                selected.append(self.records[Int(position)])
            }
        } else {
            let first =
                self.start + Self.partitionPoint(count: self.count) { self.records[self.start + $0].seq > after }
            let end = first + min(limit, self.records.count - first)
            selected = first == 0 && end == self.records.count ? self.records : Array(self.records[first..<end])
        }
        return ReceivedPushSnapshot(
            records: selected,
            chunks: self.arena.chunks,
            tokens: self.tokens,
            reasons: self.reasons,
            authorizations: self.authorizations
        )
    }

    /// The first index in `0..<count` for which `isAfter` holds, given that it holds for a suffix.
    private static func partitionPoint(count: Int, _ isAfter: (Int) -> Bool) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = low + (high - low) / 2
            if isAfter(middle) {
                high = middle
            } else {
                low = middle + 1
            }
        }
        return low
    }

    private mutating func intern(token: String) -> UInt32 {
        if let id = self.tokenIDs[token] {
            return id
        }
        let id = UInt32(self.tokens.count)
        self.tokens.append(token)
        self.tokenIDs[token] = id
        self.positionsByToken.append([])
        return id
    }

    private mutating func intern(authorization: RecordedAuthorization) -> UInt32 {
        if let id = self.authorizationIDs[authorization] {
            return id
        }
        let id = UInt32(self.authorizations.count)
        self.authorizations.append(authorization)
        self.authorizationIDs[authorization] = id
        return id
    }

    private mutating func intern(reason: String) -> UInt32 {
        if let id = self.reasonIDs[reason] {
            return id
        }
        let id = UInt32(self.reasons.count)
        self.reasons.append(reason)
        self.reasonIDs[reason] = id
        return id
    }
}
