import Foundation
import ProviderAuth
import Synchronization

/// Signs APNs provider tokens with a `.p8` key on the schedule of ``APNsTokenSchedule`` and hands out the current
/// `authorization` header value. Shared by every concurrent push; signing happens under its lock (an ES256
/// signature takes microseconds, once per 50 minutes).
final class APNsAuthenticator: Sendable {
    private let key: APNsSigningKey
    private let schedule: Mutex<APNsTokenSchedule>

    init(key: APNsSigningKey, refreshAge: Int64 = 50 * 60) {
        self.key = key
        self.schedule = Mutex(APNsTokenSchedule(refreshAge: refreshAge))
    }

    /// The current provider token (signed now if it is due).
    func token(now: Int64 = Int64(Date().timeIntervalSince1970)) throws -> String {
        try schedule.withLock { schedule in
            switch schedule.next(now: now) {
            case .use(let token): return token
            case .sign(let issuedAt): return try sign(&schedule, issuedAt: issuedAt)
            }
        }
    }

    /// Apple called `refused` expired: the token to retry with once, or nil when the request must not be retried.
    func renew(afterExpired refused: String, now: Int64 = Int64(Date().timeIntervalSince1970)) throws -> String? {
        try schedule.withLock { schedule in
            switch schedule.expired(refused, now: now) {
            case nil: return nil
            case .use(let token): return token
            case .sign(let issuedAt): return try sign(&schedule, issuedAt: issuedAt)
            }
        }
    }

    private func sign(_ schedule: inout APNsTokenSchedule, issuedAt: Int64) throws -> String {
        let token = try key.token(issuedAt: issuedAt)
        schedule.signed(token, issuedAt: issuedAt)
        return token
    }
}
