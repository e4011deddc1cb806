import BadgeCore

extension EventRules {
    /// A push of `kind` for `event` to `device`, carrying the user's counts, badge, `badge_version` and preferences.
    func push(_ kind: PushKind, for event: Event, to device: RegisteredDevice, user: UserRow) -> PlannedPush {
        PlannedPush(
            event: event, device: device, kind: kind, counts: user.counts,
            badge: policy.badge(for: user.counts, badgeEnabled: user.badgeEnabled), badgeVersion: user.badgeVersion,
            previews: user.previews)
    }

    /// One push of `kind` to each active device of the recipient, in token order (Swift string order, as the
    /// model, independent of the database's collation). An alert keeps its event's JSON for the outbox: `json` when
    /// the caller already encoded it (a new notification stores it too), else encoded here.
    mutating func planPushes(_ kind: PushKind, for event: Event, user: UserRow, json: String? = nil) {
        guard let tokens = tokensByUser[event.recipient], !tokens.isEmpty else { return }
        if kind.isAlert {
            eventJSON[event.id] = json ?? String(decoding: event.jsonData(), as: UTF8.self)
        }
        for token in tokens.sorted() {
            guard let row = devices[token] else { continue }
            planned.append(push(kind, for: event, to: row.device, user: user))
        }
    }
}
