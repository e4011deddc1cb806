import BadgeStore
import BadgeWire
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ServiceLifecycle

extension APIServer {
    /// `GET /v1/me/stream` (contract 7.3): Server-Sent Events. First a `counts` event with the current counts
    /// (skipped when `Last-Event-ID` already names that version), then a `counts` event for every later change and
    /// a `notification` event for every new unread notification, as ``CountsWatcher`` finds them; each `counts`
    /// event's `id:` is its `badge_version`, never lower than one sent before; a comment line every
    /// ``CountsWatcher/keepAlive``. At most ``APIConfiguration/maxStreams`` streams per instance (`503`) and
    /// ``APIConfiguration/maxStreamsPerUser`` per user (`429`).
    ///
    /// A stream is the connection's own task and nothing more: it waits on the watcher's updates, which carry the
    /// keep-alives too (one ticker for the instance), so an idle stream holds no task or timer of its own.
    /// A client that left is noticed at the next write, a keep-alive at the latest.
    func stream(_ request: Request) async throws -> Response {
        // The token's check and the first reads run in a task of their own: a task keeps the frame memory of its
        // deepest call until it ends, and the connection's task lives as long as the stream, so it must never go
        // as deep as a JWT verification or a read on the thread pool.
        let opening = Task { try await openStream(request) }
        let (user, current, known, lastEventID) = try await withTaskCancellationHandler {
            try await opening.value
        } onCancel: {
            opening.cancel()
        }
        let watcher = watcher
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream; charset=UTF-8"
        headers[.cacheControl] = "no-cache"
        let body = ResponseBody { writer in
            let (id, updates) = watcher.watch(user, current: current, known: known)
            defer { watcher.stop(id, user: user) }
            var sent = lastEventID ?? -1
            try await writer.write(ByteBuffer(string: "retry: 1000\n\n"))
            if current.badgeVersion > sent {
                try await writer.write(ByteBuffer(bytes: Self.countsEvent(current)))
                sent = current.badgeVersion
            }
            // Updates and keep-alives until the client leaves or the instance shuts down (which ends the updates).
            try await withGracefulShutdownHandler {
                for await update in updates {
                    switch update {
                    case .keepAlive:
                        try await writer.write(ByteBuffer(string: ": keep-alive\n\n"))
                    case .notification(let notification):
                        var text = Array("event: notification\ndata: ".utf8)
                        text.append(contentsOf: APIJSON.notification(notification).serialized())
                        text.append(contentsOf: "\n\n".utf8)
                        try await writer.write(ByteBuffer(bytes: text))
                    case .counts(let counts):
                        guard counts.badgeVersion > sent else { continue }
                        try await writer.write(ByteBuffer(bytes: Self.countsEvent(counts)))
                        sent = counts.badgeVersion
                    }
                }
            } onGracefulShutdown: {
                watcher.stop(id, user: user)
            }
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: headers, body: body)
    }

    /// What a stream opens with: its user (`401` without a valid token, `503` or `429` without room), the current
    /// counts, the notifications the client has (the newest unread), and the `Last-Event-ID` it sent.
    private func openStream(
        _ request: Request
    ) async throws -> (String, UserCounts, [CountsWatcher.Known], Int64?) {
        let user = try await authenticate(request, allowQuery: true)
        guard watcher.streamCount < configuration.maxStreams else {
            throw APIError(.tooManyStreams, "this instance has no room for another stream", status: .serviceUnavailable)
        }
        guard watcher.streamCount(of: user) < configuration.maxStreamsPerUser else {
            throw APIError(.tooManyStreams, "too many open streams for this user", status: .tooManyRequests)
        }
        let lastEventID = request.headers[HTTPField.Name("Last-Event-ID")!].flatMap { Int64($0) }
        let (reads, policy) = (reads, configuration.badgePolicy)
        let (current, known) = try await readOrUnavailable {
            let current = try await reads.userCounts([user], policy: policy)[user] ?? .zero
            let known = try await reads.notifications(of: user, limit: 20, before: nil, unreadOnly: true).notifications
            // Only what the watcher needs of them: the stream holds this as long as it is open.
            return (current, known.map { CountsWatcher.Known(id: $0.id, storedAt: $0.storedAt) })
        }
        return (user, current, known, lastEventID)
    }

    /// `id: <badge_version>`, `event: counts`, `data: <counts>`.
    static func countsEvent(_ counts: UserCounts) -> [UInt8] {
        var text = Array("id: \(counts.badgeVersion)\nevent: counts\ndata: ".utf8)
        text.append(contentsOf: APIJSON.counts(counts).serialized())
        text.append(contentsOf: "\n\n".utf8)
        return text
    }
}
