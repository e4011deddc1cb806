/// The recorded pushes: compact records in `seq` order, their bytes in an arena, an index of positions per
/// token, and the status counters. Not synchronized; ``SinkState`` guards it.
struct DeliveryLog {
    private(set) var records: [StoredDelivery] = []
    private var arena = ByteArena()
    private var tokens: [String] = []
    private var tokenIDs: [String: UInt32] = [:]
    private var positionsByToken: [[UInt32]] = []
    private var reasons: [String] = [""]
    private var reasonIDs: [String: UInt32] = [:]
    private var countsByStatus: [Int: Int] = [:]

    /// How many pushes are recorded.
    var count: Int { self.records.count }

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
        receivedAtMilliseconds: Int64
    ) {
        let tokenID = self.intern(token: token)
        let reasonID = reason.map { self.intern(reason: $0) } ?? 0
        let location = self.arena.append(blob)
        let position = UInt32(self.records.count)
        self.records.append(
            StoredDelivery(
                seq: Int64(seq),
                receivedAtMilliseconds: receivedAtMilliseconds,
                location: location,
                headersLength: UInt32(headersLength),
                bodyLength: UInt32(blob.count - headersLength),
                token: tokenID,
                reason: reasonID,
                status: UInt16(clamping: status),
                provider: provider,
                bodyIsJSON: bodyIsJSON
            )
        )
        self.positionsByToken[Int(tokenID)].append(position)
        self.countsByStatus[status, default: 0] += 1
    }

    /// The counters.
    var stats: SinkStats { SinkStats(received: self.records.count, byStatus: self.countsByStatus) }

    /// A copy of the records of `token` (every token when nil) with a `seq` greater than `after`, oldest first,
    /// and what is needed to read them after the lock is released.
    func snapshot(token: String?, after: Int?) -> DeliverySnapshot {
        let after = Int64(clamping: after ?? Int.min)
        var selected: [StoredDelivery]
        if let token {
            guard let tokenID = self.tokenIDs[token] else {
                return DeliverySnapshot(records: [], chunks: [], tokens: [], reasons: [])
            }
            let positions = self.positionsByToken[Int(tokenID)]
            let start = Self.partitionPoint(count: positions.count) { self.records[Int(positions[$0])].seq > after }
            selected = []
            selected.reserveCapacity(positions.count - start)
            for position in positions[start...] {
                selected.append(self.records[Int(position)])
            }
        } else {
            let start = Self.partitionPoint(count: self.records.count) { self.records[$0].seq > after }
            selected = start == 0 ? self.records : Array(self.records[start...])
        }
        return DeliverySnapshot(
            records: selected,
            chunks: self.arena.chunks,
            tokens: self.tokens,
            reasons: self.reasons
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
