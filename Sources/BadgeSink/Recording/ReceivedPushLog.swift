import BadgeWire

/// The recorded pushes: compact records in `seq` order, their bytes in an arena, an index of positions per
/// token, and the status counters. Not synchronized; ``SinkState`` guards it.
///
/// At most `capacity` deliveries and `byteCapacity` bytes are kept: beyond either the oldest are dropped at once
/// (hidden below `start`), and their storage is reclaimed by a compaction once a quarter of either has been
/// dropped, so that a push costs amortised constant time.
struct ReceivedPushLog {
    /// The most deliveries kept.
    let capacity: Int
    /// The most bytes kept: each delivery's headers and body as stored plus its fixed-size record.
    let byteCapacity: Int
    private(set) var records: [ReceivedPushRecord] = []
    /// Records below this index were dropped.
    private var start = 0
    /// Deliveries dropped since the log was created.
    private(set) var dropped = 0
    /// Bytes of the deliveries dropped since the log was created.
    private(set) var droppedBytes = 0
    /// Bytes of the deliveries kept (see ``byteCapacity``).
    private(set) var keptBytes = 0
    /// Bytes of the dropped records still stored, reclaimed by the next compaction.
    private var bytesBelowStart = 0
    private var arena = ByteArena()
    private var tokens: [String] = []
    private var tokenIDs: [String: UInt32] = [:]
    private var positionsByToken: [[UInt32]] = []
    private var reasons: [String] = [""]
    private var reasonIDs: [String: UInt32] = [:]
    private var authorizations: [RecordedAuthorization?] = [nil]
    private var authorizationIDs: [RecordedAuthorization: UInt32] = [:]
    private var countsByStatus: [Int: Int] = [:]

    /// The bytes a record costs besides its headers and body.
    static let recordOverhead = MemoryLayout<ReceivedPushRecord>.stride

    init(capacity: Int = 1_000_000, byteCapacity: Int = SinkConfiguration.defaultMaxDeliveryBytes) {
        self.capacity = max(1, capacity)
        self.byteCapacity = max(1, byteCapacity)
    }

    /// How many pushes are kept.
    var count: Int { self.records.count - self.start }

    /// Records a push; `seq` must be greater than every recorded one.
    /// - Returns: How many of the oldest deliveries were dropped to make room.
    @discardableResult
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
        httpVersion: ReceivedPushRecord.HTTPVersion = .http1,
        environment: ReceivedPushRecord.Environment = .none,
        delayMilliseconds: Int = 0
    ) -> Int {
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
                delayMilliseconds: UInt32(clamping: delayMilliseconds),
                status: UInt16(clamping: status),
                provider: provider,
                bodyIsJSON: bodyIsJSON,
                httpVersion: httpVersion,
                environment: environment
            )
        )
        self.positionsByToken[Int(tokenID)].append(position)
        self.countsByStatus[status, default: 0] += 1
        self.received += 1
        self.keptBytes += blob.count + Self.recordOverhead
        var evicted = 0
        while self.count > 1, self.count > self.capacity || self.keptBytes > self.byteCapacity {
            let oldest = self.records[self.start]
            let bytes = Int(oldest.headersLength) + Int(oldest.bodyLength) + Self.recordOverhead
            self.start += 1
            self.dropped += 1
            self.droppedBytes += bytes
            self.keptBytes -= bytes
            self.bytesBelowStart += bytes
            evicted += 1
        }
        if evicted > 0, self.start >= max(1024, self.capacity / 4) || self.bytesBelowStart >= self.byteCapacity / 4 {
            self.compact()
        }
        return evicted
    }

    /// Pushes recorded since the log was created.
    private var received = 0

    /// The counters.
    var stats: SinkStats {
        SinkStats(
            received: self.received, byStatus: self.countsByStatus, dropped: self.dropped, keptBytes: self.keptBytes,
            droppedBytes: self.droppedBytes)
    }

    /// Rebuilds the storage without the dropped records (and without those of `tokens`).
    /// - Returns: How many kept records of `tokens` were left out.
    @discardableResult
    private mutating func compact(removing tokens: Set<String> = []) -> Int {
        var fresh = ReceivedPushLog(capacity: self.capacity, byteCapacity: self.byteCapacity)
        var counts = self.countsByStatus
        var removed = 0
        let snapshot = self.snapshot(tokens: nil, after: nil, limit: nil)
        for record in snapshot.records {
            let token = self.tokens[Int(record.token)]
            if tokens.contains(token) {
                let status = Int(record.status)
                counts[status] = (counts[status] ?? 1) > 1 ? counts[status, default: 1] - 1 : nil
                removed += 1
                continue
            }
            let (headers, body) = snapshot.bytes(of: record)
            fresh.append(
                seq: Int(record.seq), provider: record.provider, token: token,
                blob: Array(headers) + Array(body), headersLength: headers.count, bodyIsJSON: record.bodyIsJSON,
                status: Int(record.status), reason: record.reason == 0 ? nil : self.reasons[Int(record.reason)],
                authorization: self.authorizations[Int(record.authorization)],
                receivedAtMilliseconds: record.receivedAtMilliseconds, httpVersion: record.httpVersion,
                environment: record.environment, delayMilliseconds: Int(record.delayMilliseconds))
        }
        fresh.countsByStatus = counts
        fresh.received = self.received - removed
        fresh.dropped = self.dropped
        fresh.droppedBytes = self.droppedBytes
        self = fresh
        return removed
    }

    /// Forgets the kept deliveries of `tokens`, and takes them out of the counters.
    /// - Returns: How many were forgotten.
    mutating func remove(tokens: Set<String>) -> Int {
        guard tokens.contains(where: { self.tokenIDs[$0] != nil }) else { return 0 }
        return self.compact(removing: tokens)
    }

    /// A copy of the first `limit` (all when nil) kept records of `tokens` (every token when nil) with a `seq`
    /// greater than `after`, oldest first, and what is needed to read them after the lock is released.
    func snapshot(tokens: [String]?, after: Int?, limit: Int?) -> ReceivedPushSnapshot {
        let after = Int64(clamping: after ?? Int.min)
        let limit = max(0, limit ?? Int.max)
        var selected: [ReceivedPushRecord]
        if let tokens {
            selected = []
            for token in Set(tokens) {
                guard let tokenID = self.tokenIDs[token] else { continue }
                let positions = self.positionsByToken[Int(tokenID)]
                let first = Self.partitionPoint(count: positions.count) {
                    Int(positions[$0]) >= self.start && self.records[Int(positions[$0])].seq > after
                }
                for position in positions[first...].prefix(limit) {
                    selected.append(self.records[Int(position)])
                }
            }
            if tokens.count > 1 {
                selected.sort { $0.seq < $1.seq }
                selected = Array(selected.prefix(limit))
            }
        } else {
            let first =
                self.start + Self.partitionPoint(count: self.count) { self.records[self.start + $0].seq > after }
            let end = first + min(limit, self.records.count - first)
            selected = first == 0 && end == self.records.count ? self.records : Array(self.records[first..<end])
        }
        return self.snapshot(of: selected)
    }

    /// Every stored record with a `seq` greater than `after`, the dropped ones not yet reclaimed included.
    func snapshotIncludingDropped(after: Int) -> ReceivedPushSnapshot {
        let first = Self.partitionPoint(count: self.records.count) { self.records[$0].seq > Int64(after) }
        return self.snapshot(of: first == 0 ? self.records : Array(self.records[first...]))
    }

    /// The most records a snapshot copies the bytes of, rather than sharing the arena's chunks.
    static let copiedSnapshotLimit = 1024

    /// A snapshot of `records`. A small one (the event stream's batches, a wait's checks) copies their bytes
    /// into a chunk of its own: sharing the arena's last chunk would make the next push copy that whole chunk
    /// (copy on write) while the snapshot lives.
    private func snapshot(of records: [ReceivedPushRecord]) -> ReceivedPushSnapshot {
        guard records.count <= Self.copiedSnapshotLimit else {
            return ReceivedPushSnapshot(
                records: records, chunks: self.arena.chunks, tokens: self.tokens, reasons: self.reasons,
                authorizations: self.authorizations)
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(records.reduce(0) { $0 + Int($1.headersLength) + Int($1.bodyLength) })
        var moved = records
        for index in moved.indices {
            let record = moved[index]
            let chunk = self.arena.chunks[Int(record.location.chunk)]
            let start = Int(record.location.offset)
            moved[index].location = ByteArena.Location(chunk: 0, offset: UInt32(bytes.count))
            bytes.append(contentsOf: chunk[start..<start + Int(record.headersLength) + Int(record.bodyLength)])
        }
        return ReceivedPushSnapshot(
            records: moved, chunks: [bytes], tokens: self.tokens, reasons: self.reasons,
            authorizations: self.authorizations)
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
