import BadgeCore

/// The push guard's decisions for a set of outbox rows, in outbox (planning) order: pure, no I/O.
///
/// The `badge_version` of what reaches one device never decreases. For each row, given the device row of its
/// token as it stands after the rows before it:
/// - the token belongs to another user now: dropped (nothing of the old owner reaches it);
/// - the device was unregistered (or reported dead) after the push was planned: still sent. The push is the effect
///   of an event that took effect while the device was active, before the unregistration in the user's order, as
///   the contract's "an alert push to each of the recipient's active devices" asks; the unregistration stops every
///   push planned after it ("no more pushes to it"). The fleet suite's model expects exactly that;
/// - `badgeVersion` is at least the version last pushed to the token: claimed (the token's version moves up to it;
///   re-sending the same version is allowed);
/// - a newer version already went there: a badge-only push is superseded and dropped; an alert is never dropped,
///   it is rebuilt with the user's current counts and badge at a fresh `badge_version`, keeping its event and so
///   its `apns-id`; the fresh version is above every version planned so far, so every later push of the user to
///   that token is stale too;
/// - the token was never stored: sent as planned.
///
/// Then superseded badge-only pushes are coalesced: of one token's claimed pushes, a badge-only push followed by a
/// later one is dropped, since the later one carries a newer badge.
struct PushGuard {
    /// What the guard knows of one token's device row.
    struct Device: Equatable {
        var user: String
        var pushedVersion: Int64
    }

    /// What happens to one row.
    enum Decision: Equatable {
        /// Send it as planned.
        case send
        /// Send it rebuilt at a fresh version (assigned once the user's version is bumped).
        case rebuild
        /// Drop it: `superseded` (a newer push reached or will reach the device), or `foreign` (the token moved
        /// to another user).
        case drop(DropReason)
    }

    /// Why a row is dropped.
    enum DropReason: String, Equatable {
        case superseded
        case foreign
    }

    /// Rebuilt versions are above every planned one; this stands for "fresh, assigned later".
    static let fresh = Int64.max

    /// Device rows by token; absent for a token that was never stored.
    private(set) var devices: [String: Device]

    init(devices: [String: Device]) {
        self.devices = devices
    }

    /// The decision for each push, in order. Afterwards ``devices`` holds each token's new pushed version (with
    /// ``fresh`` where a rebuilt push went).
    mutating func decide(_ pushes: [PlannedPush]) -> [Decision] {
        var decisions: [Decision] = []
        decisions.reserveCapacity(pushes.count)
        for push in pushes {
            guard var device = devices[push.token] else {
                decisions.append(.send)
                continue
            }
            guard device.user == push.recipient else {
                decisions.append(.drop(.foreign))
                continue
            }
            if push.badgeVersion >= device.pushedVersion, device.pushedVersion != Self.fresh {
                device.pushedVersion = push.badgeVersion
                decisions.append(.send)
            } else if push.kind.isAlert {
                device.pushedVersion = Self.fresh
                decisions.append(.rebuild)
            } else {
                decisions.append(.drop(.superseded))
            }
            devices[push.token] = device
        }
        // Coalesce: a badge-only push followed by a later push to the same token is superseded.
        var followed: Set<String> = []
        for index in pushes.indices.reversed() {
            switch decisions[index] {
            case .drop: continue
            case .send, .rebuild:
                let token = pushes[index].token
                if followed.contains(token), !pushes[index].kind.isAlert {
                    decisions[index] = .drop(.superseded)
                } else {
                    followed.insert(token)
                }
            }
        }
        return decisions
    }
}
