import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A client of `badgepipe api` (contract section 7) for Swift apps: the user's counts, as a live `AsyncSequence`
/// that always equals the icon badge, the notification list, reads and device registration.
///
/// ```swift
/// let client = BadgePipeClient(url: URL(string: "https://api.example.com")!) { try await backend.badgePipeToken() }
/// for try await counts in client.counts() { bell.count = counts.badge }
/// ```
///
/// `token` is called for every request (and every reconnect of the stream): return a current token from your
/// backend, cached until it nears its `exp`. Requests go over URLSession on Apple platforms and over
/// async-http-client elsewhere (``BadgePipeTransport``).
public struct BadgePipeClient: Sendable {
    public let url: URL
    let token: @Sendable () async throws -> String
    let transport: any BadgePipeTransport

    /// A client of the API at `url`, authenticating with `token`.
    public init(
        url: URL, transport: (any BadgePipeTransport)? = nil, token: @escaping @Sendable () async throws -> String
    ) {
        self.url = url
        self.token = token
        self.transport = transport ?? DefaultTransport()
    }

    // MARK: Reads

    /// The user's counts now.
    public func currentCounts() async throws -> BadgeCounts {
        try await get("/v1/me/counts", as: BadgeCounts.self)
    }

    /// One page of the user's notifications, newest first, after `before` (a page's ``NotificationPage/next``).
    public func notifications(
        limit: Int = 20, before: String? = nil, unreadOnly: Bool = false
    ) async throws
        -> NotificationPage
    {
        var query = [URLQueryItem(name: "limit", value: String(limit))]
        if let before { query.append(URLQueryItem(name: "before", value: before)) }
        if unreadOnly { query.append(URLQueryItem(name: "unread_only", value: "true")) }
        return try await get("/v1/me/notifications", query: query, as: NotificationPage.self)
    }

    // MARK: Writes

    /// Marks notifications read. With `idempotencyKey`, a retried call takes effect once.
    @discardableResult
    public func markRead(_ ids: [String], idempotencyKey: String? = nil) async throws -> String {
        try await write("POST", "/v1/me/notifications/read", body: ["ids": ids], idempotencyKey: idempotencyKey)
    }

    /// Marks every notification up to now read.
    @discardableResult
    public func markAllRead(idempotencyKey: String? = nil) async throws -> String {
        try await write(
            "POST", "/v1/me/notifications/read-all", body: [String: String](), idempotencyKey: idempotencyKey)
    }

    /// The notification list was opened: clears the unseen count.
    @discardableResult
    public func markOpened(idempotencyKey: String? = nil) async throws -> String {
        try await write("POST", "/v1/me/notifications/opened", body: [String: String](), idempotencyKey: idempotencyKey)
    }

    /// Registers this device's push token.
    @discardableResult
    public func register(
        token deviceToken: String, provider: String, topic: String? = nil, environment: String? = nil,
        idempotencyKey: String? = nil
    ) async throws -> String {
        var body = ["token": deviceToken, "provider": provider]
        if let topic { body["topic"] = topic }
        if let environment { body["environment"] = environment }
        return try await write("POST", "/v1/me/devices", body: body, idempotencyKey: idempotencyKey)
    }

    // MARK: The live count

    /// The user's counts now and at every change, as the API's stream sends them: never a lower `badge_version`
    /// than one already yielded. The stream reconnects by itself (after `retry`, doubling up to 30 s while it
    /// fails) with `Last-Event-ID`, and gets a fresh token for each connection; it ends only when the task is
    /// cancelled or the API refuses the token (``BadgePipeClientError`` with status 401).
    public func counts(retry: Duration = .seconds(1)) -> AsyncThrowingStream<BadgeCounts, any Error> {
        let (stream, continuation) = AsyncThrowingStream<BadgeCounts, any Error>.makeStream(
            bufferingPolicy: .bufferingNewest(16))
        let task = Task { [self] in
            var lastVersion: Int64 = -1
            var delay = retry
            while !Task.isCancelled {
                do {
                    let token = try await token()
                    var request = URLRequest(url: url.appendingPathComponent("v1/me/stream"))
                    request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
                    request.setValue("text/event-stream", forHTTPHeaderField: "Accept")
                    if lastVersion >= 0 { request.setValue(String(lastVersion), forHTTPHeaderField: "Last-Event-ID") }
                    var parser = ServerSentEvents()
                    for try await line in try await transport.lines(request) {
                        guard let event = parser.feed(line), event.name == "counts" else { continue }
                        let counts = try JSONDecoder().decode(BadgeCounts.self, from: Data(event.data.utf8))
                        guard counts.badgeVersion > lastVersion else { continue }
                        lastVersion = counts.badgeVersion
                        delay = retry
                        continuation.yield(counts)
                    }
                } catch let error as BadgePipeClientError where error.status == 401 {
                    continuation.finish(throwing: error)
                    return
                } catch {
                    if Task.isCancelled { break }
                }
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(30))
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    // MARK: Support

    private func get<T: Decodable>(_ path: String, query: [URLQueryItem] = [], as type: T.Type) async throws -> T {
        var components = URLComponents(
            url: url.appendingPathComponent(String(path.dropFirst())), resolvingAgainstBaseURL: false)!
        if !query.isEmpty { components.queryItems = query }
        var request = URLRequest(url: components.url!)
        request.setValue("Bearer \(try await token())", forHTTPHeaderField: "Authorization")
        let (status, body) = try await transport.send(request)
        guard status == 200 else { throw BadgePipeClientError(status: status, body: body) }
        return try JSONDecoder().decode(T.self, from: body)
    }

    private func write(
        _ method: String, _ path: String, body: some Encodable, idempotencyKey: String?
    ) async throws
        -> String
    {
        var request = URLRequest(url: url.appendingPathComponent(String(path.dropFirst())))
        request.httpMethod = method
        request.setValue("Bearer \(try await token())", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        if let idempotencyKey { request.setValue(idempotencyKey, forHTTPHeaderField: "Idempotency-Key") }
        request.httpBody = try JSONEncoder().encode(body)
        let (status, answer) = try await transport.send(request)
        guard status == 202 else { throw BadgePipeClientError(status: status, body: answer) }
        return try JSONDecoder().decode(AcceptedWrite.self, from: answer).eventID
    }
}

/// A write's answer: `{"event_id"}`.
struct AcceptedWrite: Decodable {
    var eventID: String

    enum CodingKeys: String, CodingKey {
        case eventID = "event_id"
    }
}

/// Reads Server-Sent Events line by line.
struct ServerSentEvents {
    struct Event {
        var name = "message"
        var id: String?
        var data = ""
    }

    private var current = Event()
    private var hasData = false

    /// Feeds one line (without its newline); returns an event when the line ends one.
    mutating func feed(_ line: String) -> Event? {
        if line.isEmpty {
            defer {
                current = Event()
                hasData = false
            }
            return hasData ? current : nil
        }
        if line.hasPrefix(":") { return nil }
        let (field, value) = Self.split(line)
        switch field {
        case "event": current.name = value
        case "id": current.id = value
        case "data":
            current.data += hasData ? "\n" + value : value
            hasData = true
        default: break
        }
        return nil
    }

    private static func split(_ line: String) -> (String, String) {
        guard let colon = line.firstIndex(of: ":") else { return (line, "") }
        var value = line[line.index(after: colon)...]
        if value.first == " " { value = value.dropFirst() }
        return (String(line[..<colon]), String(value))
    }
}
