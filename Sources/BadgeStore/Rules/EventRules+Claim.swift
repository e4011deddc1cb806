import BadgeCore

extension EventRules {
    /// The name of the claim part, whose `RETURNING` the outbox insert reads.
    static let claimPart = "claimed_tokens"

    /// The lease epoch of each partition whose pushes the batch may claim: on PostgreSQL, with
    /// ``claimsPushes``, the partitions of ``leases`` (those the batch's first statement checks).
    var claimEpochs: [Int: Int64] {
        guard claimsPushes, sql.dialect == .postgres else { return [:] }
        return Dictionary(leases.map { ($0.partition, $0.epoch) }, uniquingKeysWith: max)
    }

    /// Adds the claim part when the batch claims pushes (see ``ApplyContext/claimsPushes``), of the partitions in
    /// `epochs` (``claimEpochs``); returns whether it did.
    ///
    /// A device's first ``ClaimedPushes/perDeviceLimit`` pushes of the batch (its share: a delivery claim takes no
    /// more of one device, since more would be one long handed round, the device's pushes one after another, ahead
    /// of the other devices' pushes) are claimed together, exactly as a fenced claim right after the commit would
    /// claim and send them (`DeliveryQueries.claimDueAtOnce`); the device's later pushes of the batch are planned
    /// unclaimed, behind them, for the delivery stage's claims once the share is recorded. The share is claimed
    /// when:
    /// - in memory: its row is stored, active and its user's, and the batch did not touch it (a registration in
    ///   the batch writes the row in this same statement); the share's pushes are of partitions whose lease the
    ///   batch holds; no badge-only push of the share is followed by another of it (the claim would coalesce it);
    ///   their versions do not go down;
    /// - in the database, as the statement finds the row (the newest version of it, as an `UPDATE` does): it is
    ///   still the user's and active, its `pushed_version` is at most the first push's, no outbox row of the token
    ///   exists (nothing of it waits, is in flight or is unrecorded: the batch's pushes would overtake it), and
    ///   nobody else holds a lock on it (`SKIP LOCKED`: a claim in progress; the batch never waits for one, so it
    ///   cannot deadlock with it).
    ///
    /// For each such device the part moves `pushed_version` to the share's last push and returns the token; the
    /// outbox insert marks the share's pushes claimed (``pushesInShare()``). Every other push is planned as before and claimed by the delivery stage.
    func addClaim(to batch: inout SQLWriteBatch, epochs: [Int: Int64]) -> Bool {
        guard !epochs.isEmpty, !planned.isEmpty else { return false }
        struct Claim {
            var user: String
            var first: Int64
            var last: Int64
            var lastIsBadgeOnly = false
            var eligible = true
            var count = 1
        }
        var claims: [String: Claim] = [:]
        for (push, partition) in zip(planned, plannedPartitions) {
            let token = push.token
            guard var claim = claims[token] else {
                let device = devices[token]
                let eligible =
                    device.map { $0.stored && $0.active && !$0.touched && $0.user == push.recipient } ?? false
                    && partition.map { epochs[$0] != nil } ?? false
                claims[token] = Claim(
                    user: push.recipient, first: push.badgeVersion, last: push.badgeVersion,
                    lastIsBadgeOnly: !push.kind.isAlert, eligible: eligible)
                continue
            }
            // Past the share, the device's pushes are left to the delivery stage's claims.
            guard claim.count < ClaimedPushes.perDeviceLimit else { continue }
            if claim.lastIsBadgeOnly || push.badgeVersion < claim.last || push.recipient != claim.user
                || !(partition.map { epochs[$0] != nil } ?? false)
            {
                claim.eligible = false
            }
            claim.count += 1
            claim.last = push.badgeVersion
            claim.lastIsBadgeOnly = !push.kind.isAlert
            claims[token] = claim
        }
        var set = SQLRowSet([("token", .text), ("user_id", .text), ("first_version", .int), ("last_version", .int)])
        for (token, claim) in claims.sorted(by: { $0.key < $1.key }) where claim.eligible {
            set.append([.text(token), .text(claim.user), .int(claim.first), .int(claim.last)])
        }
        guard !set.isEmpty else { return false }
        batch.add(set, as: Self.claimPart) {
            """
            UPDATE devices SET pushed_version = s.last_version FROM \($0)
            WHERE devices.token = s.token AND devices.user_id = s.user_id AND devices.active
                AND devices.pushed_version <= s.first_version
                AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.token = s.token\(SQLDialect.postgres.perRowSubquery))
                AND devices.token IN (SELECT l.token FROM devices l WHERE l.token = s.token
                    FOR NO KEY UPDATE SKIP LOCKED)
            RETURNING devices.token
            """
        }
        return true
    }

    /// Whether each push of ``planned`` is within its device's share of the batch: among the device's first
    /// ``ClaimedPushes/perDeviceLimit`` pushes in planning order (those ``addClaim(to:epochs:)`` may claim).
    func pushesInShare() -> [Bool] {
        var counts: [String: Int] = [:]
        return planned.map { push in
            counts[push.token, default: 0] += 1
            return counts[push.token, default: 0] <= ClaimedPushes.perDeviceLimit
        }
    }
}
