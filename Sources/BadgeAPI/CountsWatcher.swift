import BadgeCore
import BadgeStore
import Foundation
import Logging
import Metrics
import ServiceLifecycle
import Synchronization

/// How changes reach this instance's open streams: every ``interval`` it reads the current counts of every user
/// with an open stream (``AppReadLimits/usersPerRead`` users per statement) and, in one more statement for them
/// all, the new unread notifications of those whose `badge_version` moved; each of the user's streams gets them.
/// Two statements per thousand watched users a round, however many changed. Every ``keepAlive`` it also tells
/// every stream to send a keep-alive: one ticker for the instance, not a timer per stream. A `Service`.
///
/// Why polling the database rather than a message from the workers: the database is the one authority on the
/// counts, so a stream can never miss a change or show counts no push carries, whatever restarts or loses a
/// message (a worker's SIGKILL between its commit and a publish, an API instance's broker reconnect); every
/// instance serves every user without routing; and the workers' hot path is unchanged. It costs one statement per
/// thousand watched users every ``interval``, which keeps a change within the contract's second (guarantee 10).
public final class CountsWatcher: Service, Sendable {
    /// How often the watched users' counts are read.
    public static let defaultInterval: Duration = .milliseconds(250)
    /// How often every stream is told to send a keep-alive comment by default.
    public static let defaultKeepAlive: Duration = .seconds(15)
    /// The most new notifications one change announces (the rest are in the list).
    static let notificationsPerChange = 20

    /// What a stream is told.
    enum Update: Sendable {
        case counts(UserCounts)
        case notification(StoredNotification)
        /// Nothing new: send a comment line, which also finds out whether the client is still there.
        case keepAlive
    }

    /// A notification a stream's client already has: its id and `stored_at`.
    struct Known: Sendable {
        var id: String
        var storedAt: Int64
    }

    private struct Watched {
        var streams: [UUID: AsyncStream<Update>.Continuation] = [:]
        var counts: UserCounts?
        /// The newest `stored_at` of the notifications announced (or present when the stream opened).
        var storedAfter: Int64 = 0
        /// The notifications announced lately: the next read looks back ``CountsWatcher/storedSlack`` before
        /// ``storedAfter`` (a transaction that read the clock earlier may commit later) and leaves these out. Only
        /// those within that window are kept (the read cannot return the others), at most
        /// ``CountsWatcher/announcedMemory``.
        var announced: [Known] = []

        func wasAnnounced(_ id: String) -> Bool { announced.contains { $0.id == id } }

        /// Remembers `notification` as announced (or present when a stream opened).
        mutating func remember(_ notification: Known) {
            storedAfter = max(storedAfter, notification.storedAt)
            announced.append(notification)
        }

        /// Forgets the announced notifications the next read cannot return, and the oldest beyond the bound.
        mutating func forgetOld() {
            let horizon = storedAfter - CountsWatcher.storedSlack
            announced.removeAll { $0.storedAt < horizon }
            if announced.count > CountsWatcher.announcedMemory {
                announced.removeFirst(announced.count - CountsWatcher.announcedMemory)
            }
        }
    }

    /// `badgepipe_api_streams`: this instance's open streams.
    static let streamsGauge = Gauge(label: "badgepipe_api_streams")
    /// `badgepipe_api_count_changes_total`: changes of a watched user's counts found (each goes to all their streams).
    static let changes = Counter(label: "badgepipe_api_count_changes_total")

    /// How far before the newest announced `stored_at` the next read looks.
    static let storedSlack: Int64 = 5_000_000
    /// How many announced ids a watched user remembers.
    static let announcedMemory = 256

    private let reads: any AppReads
    private let policy: BadgePolicy
    private let interval: Duration
    /// How often every stream is told to send a keep-alive comment.
    let keepAlive: Duration
    private let logger: Logger
    private let watched = Mutex<[String: Watched]>([:])

    public init(
        reads: any AppReads, policy: BadgePolicy, interval: Duration = defaultInterval,
        keepAlive: Duration = defaultKeepAlive, logger: Logger
    ) {
        self.reads = reads
        self.policy = policy
        self.interval = interval
        self.keepAlive = keepAlive
        self.logger = logger
    }

    /// Open streams now.
    var streamCount: Int { watched.withLock { $0.values.reduce(0) { $0 + $1.streams.count } } }

    /// Open streams of `user` now.
    func streamCount(of user: String) -> Int { watched.withLock { $0[user]?.streams.count ?? 0 } }

    /// Watches `user` for a new stream, whose first counts are `current` and whose `known` notifications (the
    /// newest unread ones when it opened) are not announced as new; returns its updates and the id to
    /// ``stop(_:user:)`` it with.
    func watch(_ user: String, current: UserCounts, known: [Known]) -> (UUID, AsyncStream<Update>) {
        let id = UUID()
        let (stream, continuation) = AsyncStream<Update>.makeStream(bufferingPolicy: .bufferingNewest(64))
        watched.withLock { all in
            var entry = all[user] ?? Watched()
            entry.streams[id] = continuation
            if entry.counts.map({ $0.badgeVersion < current.badgeVersion }) ?? true { entry.counts = current }
            for notification in known where !entry.wasAnnounced(notification.id) { entry.remember(notification) }
            entry.forgetOld()
            all[user] = entry
        }
        Self.streamsGauge.record(streamCount)
        return (id, stream)
    }

    /// The stream `id` of `user` ended.
    func stop(_ id: UUID, user: String) {
        let continuation = watched.withLock { all -> AsyncStream<Update>.Continuation? in
            let removed = all[user]?.streams.removeValue(forKey: id)
            if all[user]?.streams.isEmpty == true { all[user] = nil }
            return removed
        }
        continuation?.finish()
        Self.streamsGauge.record(streamCount)
    }

    public func run() async throws {
        let clock = ContinuousClock()
        var lastKeepAlive = clock.now
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            if clock.now - lastKeepAlive >= keepAlive {
                lastKeepAlive = clock.now
                tellEveryStream(.keepAlive)
            }
            do {
                try await poll()
            } catch is CancellationError {
                break
            } catch {
                logger.warning("reading the watched users' counts failed", metadata: ["api.error": "\(error)"])
            }
            try? await cancelWhenGracefulShutdown { [interval] in try await Task.sleep(for: interval) }
        }
        let all = watched.withLock { all in
            defer { all = [:] }
            return all
        }
        for entry in all.values { for continuation in entry.streams.values { continuation.finish() } }
    }

    /// Gives `update` to every open stream.
    func tellEveryStream(_ update: Update) {
        let streams = watched.withLock { all in all.values.flatMap { $0.streams.values } }
        for continuation in streams { continuation.yield(update) }
    }

    /// One round: the watched users' counts, and the new notifications of those whose version moved.
    func poll() async throws {
        let users = watched.withLock { Array($0.keys) }
        var start = 0
        while start < users.count {
            let chunk = Array(users[start..<min(users.count, start + AppReadLimits.usersPerRead)])
            start += chunk.count
            let current = try await reads.userCounts(chunk, policy: policy)
            // The users whose version moved, and from where to read their new notifications.
            var moved: [String: Int64] = [:]
            for user in chunk {
                guard let counts = current[user] else { continue }
                let storedAfter = watched.withLock { all -> Int64? in
                    guard var entry = all[user] else { return nil }
                    guard entry.counts.map({ $0.badgeVersion < counts.badgeVersion }) ?? true else { return nil }
                    entry.counts = counts
                    all[user] = entry
                    return entry.storedAfter
                }
                if let storedAfter { moved[user] = max(0, storedAfter - Self.storedSlack) }
            }
            guard !moved.isEmpty else { continue }
            Self.changes.increment(by: moved.count)
            // One statement for all of them, whatever their number (at most a chunk's).
            let unread = try await reads.unreadNotifications(since: moved, limit: Self.notificationsPerChange)
            for user in moved.keys.sorted() {
                guard let counts = current[user] else { continue }
                let read = unread[user] ?? []
                let (streams, fresh) = watched.withLock {
                    all -> ([AsyncStream<Update>.Continuation], [StoredNotification]) in
                    guard var entry = all[user] else { return ([], []) }
                    let known = Set(entry.announced.map(\.id))
                    let fresh = read.filter { !known.contains($0.id) && $0.storedAt > 0 }
                    for notification in fresh {
                        entry.remember(Known(id: notification.id, storedAt: notification.storedAt))
                    }
                    entry.forgetOld()
                    all[user] = entry
                    return (Array(entry.streams.values), fresh)
                }
                for continuation in streams {
                    for notification in fresh { continuation.yield(.notification(notification)) }
                    continuation.yield(.counts(counts))
                }
            }
        }
    }
}
