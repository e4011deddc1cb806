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

/// When an APNs provider token is signed anew: a value-type state machine, tested directly.
///
/// Apple accepts a token for an hour after its `iat` and answers 429 `TooManyProviderTokenUpdates` to a provider
/// that changes tokens more often than every 20 minutes. So the current token is reused until it is
/// `refreshAge` old (50 minutes by default, always within 20…60), and a 403 `ExpiredProviderToken` (a clock that
/// disagrees with Apple's) leads to one early re-sign, at most once per `minimumAge`; a token refused again
/// within that time is a configuration error, not a reason to sign again.
struct APNsTokenSchedule: Sendable {
    /// What the caller does next.
    enum Action: Equatable {
        /// Send with this token.
        case use(String)
        /// Sign a token with `iat` = `issuedAt`, report it with ``signed(_:issuedAt:)``, and send with it.
        case sign(issuedAt: Int64)
    }

    /// The age (seconds) at which a token is replaced on the next request.
    let refreshAge: Int64
    /// The least time (seconds) between two tokens signed because Apple called the current one expired.
    let minimumAge: Int64
    private(set) var token: String?
    private(set) var issuedAt: Int64 = 0
    private var lastEarlyRenewal: Int64?

    /// A schedule that replaces tokens once they are `refreshAge` seconds old (clamped to 20…60 minutes).
    init(refreshAge: Int64 = 50 * 60, minimumAge: Int64 = 20 * 60) {
        self.minimumAge = minimumAge
        self.refreshAge = min(max(refreshAge, minimumAge), 60 * 60 - 60)
    }

    /// The token to send with at `now` (seconds since the epoch).
    func next(now: Int64) -> Action {
        if let token, now - issuedAt < refreshAge, now >= issuedAt - 60 { return .use(token) }
        return .sign(issuedAt: now)
    }

    /// A token was signed as asked.
    mutating func signed(_ token: String, issuedAt: Int64) {
        self.token = token
        self.issuedAt = issuedAt
    }

    /// Apple answered `ExpiredProviderToken` to a request sent with `refused` at `now`: the token to retry that
    /// request with once, or nil when it must not be retried (the current token was itself an early renewal of
    /// less than `minimumAge` ago: re-signing again would only earn `TooManyProviderTokenUpdates`).
    mutating func expired(_ refused: String, now: Int64) -> Action? {
        if let token, token != refused { return .use(token) }  // Already replaced by a concurrent request.
        if let last = lastEarlyRenewal, now - last < minimumAge { return nil }
        lastEarlyRenewal = now
        return .sign(issuedAt: now)
    }
}
