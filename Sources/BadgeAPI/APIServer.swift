import AMQPClient
import BadgeCore
import BadgeOperations
import BadgeStore
import BadgeWire
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Metrics
import NIOCore
import Prometheus
import ServiceLifecycle

/// `badgepipe api`: the app's API of contract section 7 over HTTP, a `Service`. Stateless: it reads the store
/// (``AppReads``) and publishes writes as events; any number of instances may serve one deployment. Its routes
/// are those of `/openapi.json` (``APIDocument``), the document's source of truth.
public struct APIServer: Service {
    let configuration: APIConfiguration
    let reads: any AppReads
    let verifier: TokenVerifier
    let watcher: CountsWatcher
    let publisher: APIEventPublisher
    let logger: Logger
    let metrics: PrometheusCollectorRegistry?
    let onRunning: (@Sendable (Int) async -> Void)?

    /// An API over `reads`, verifying tokens with `verifier`, its streams fed by `watcher` (run it beside this
    /// service, in the same group); with `metrics`, `GET /metrics` serves that registry in Prometheus's format.
    public init(
        configuration: APIConfiguration, reads: any AppReads, verifier: TokenVerifier, watcher: CountsWatcher,
        logger: Logger, metrics: PrometheusCollectorRegistry? = nil, onRunning: (@Sendable (Int) async -> Void)? = nil
    ) {
        self.metrics = metrics
        self.configuration = configuration
        self.reads = reads
        self.verifier = verifier
        self.watcher = watcher
        self.publisher = APIEventPublisher(
            configuration: configuration.amqp, exchange: configuration.exchange, logger: logger)
        self.logger = logger
        self.onRunning = onRunning
    }

    public func run() async throws {
        let router = Router()
        addRoutes(to: router)
        let (logger, onRunning, host, port) = (logger, onRunning, configuration.host, configuration.port)
        let app = Application(
            router: router,
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: nil),
            onServerRunning: { channel in
                let bound = channel.localAddress?.port ?? port
                logger.info("api listening", metadata: ["api.host": "\(host)", "api.port": "\(bound)"])
                await onRunning?(bound)
            },
            logger: logger)
        try await app.runService()
        await publisher.close()
    }

    func addRoutes(to router: Router<BasicRequestContext>) {
        router.get("/openapi.json") { _, _ in
            Self.json(APIDocument.text, status: .ok)
        }
        router.get("/healthz") { _, _ in Self.json(#"{"status":"ok"}"#, status: .ok) }
        if let metrics {
            router.get("/metrics") { _, _ in OperationsServer.metrics(metrics) }
        }
        if configuration.demo { DemoPage.addRoutes(to: router) }
        router.get("/readyz") { _, _ in
            do {
                _ = try await reads.userCounts([], policy: configuration.badgePolicy)
                return Self.json(#"{"status":"ok"}"#, status: .ok)
            } catch {
                return Self.json(
                    APIJSON.error("unavailable", "the database cannot be read: \(error)").serializedString,
                    status: .serviceUnavailable)
            }
        }
        let me = router.group("/v1/me")
        me.get("counts") { request, _ in try await counts(request) }
        me.get("notifications") { request, _ in try await notifications(request) }
        me.get("conversations") { request, _ in try await conversations(request) }
        me.get("stream") { request, _ in try await stream(request) }
        me.post("notifications/read") { request, _ in
            try await write(request, type: "notification_read") { body in
                guard let ids = body["ids"], ids.arrayValue != nil else {
                    throw APIError.badRequest("the body needs \"ids\": an array of notification ids")
                }
                return [("notification_ids", ids)]
            }
        }
        me.post("notifications/read-all") { request, _ in
            try await write(request, type: "notifications_read_all") { body in Self.until(body) }
        }
        me.post("notifications/opened") { request, _ in
            try await write(request, type: "notifications_opened") { body in Self.until(body) }
        }
        me.post("conversations/:conversation_id/read") { request, context in
            let conversation = try context.parameters.require("conversation_id")
            return try await write(request, type: "conversation_read") { body in
                [("conversation_id", .string(conversation))] + Self.until(body)
            }
        }
        me.post("devices") { request, _ in
            try await write(request, type: "device_registered") { body in
                var device: [(key: String, value: JSONValue)] = []
                for field in ["token", "provider", "topic", "environment", "app"] {
                    if let value = body[field] { device.append((key: field, value: value)) }
                }
                return [("device", .object(device))]
            }
        }
        me.delete("devices/:token") { request, context in
            let token = try context.parameters.require("token")
            return try await write(request, type: "device_unregistered", needsBody: false) { _ in
                [("device", .object([(key: "token", value: .string(token))]))]
            }
        }
        me.put("preferences") { request, _ in
            try await write(request, type: "preferences_updated") { body in
                var preferences: [(key: String, value: JSONValue)] = []
                for field in ["badge_enabled", "previews"] {
                    if let value = body[field] { preferences.append((key: field, value: value)) }
                }
                return [("preferences", .object(preferences))]
            }
        }
    }

    // MARK: Reads

    private func counts(_ request: Request) async throws -> Response {
        let user = try await authenticate(request)
        let current = try await userCounts(user)
        let etag = "\"\(current.badgeVersion)\""
        var headers = HTTPFields()
        headers[.eTag] = etag
        headers[.cacheControl] = "no-cache"
        if let match = request.headers[.ifNoneMatch],
            match.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == etag })
        {
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentType] = "application/json"
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: APIJSON.counts(current).serialized())))
    }

    private func notifications(_ request: Request) async throws -> Response {
        let user = try await authenticate(request)
        let query = request.uri.queryParameters
        let limit = try Self.limit(query["limit"].map(String.init))
        let before = try query["before"].map { try Cursor.decode(String($0)) }
        let unreadOnly = query["unread_only"].map { $0 == "true" } ?? false
        let (page, current) = try await readOrUnavailable {
            async let page = reads.notifications(
                of: user, limit: limit,
                before: before.map { NotificationCursor(occurredAt: $0.microseconds, id: $0.id) },
                unreadOnly: unreadOnly)
            async let current = reads.userCounts([user], policy: configuration.badgePolicy)
            return try await (page, current[user] ?? .zero)
        }
        let body = JSONValue.object([
            (key: "notifications", value: .array(page.notifications.map(APIJSON.notification))),
            (key: "next", value: page.next.map { .string(Cursor.encode($0.occurredAt, $0.id)) } ?? .null),
            (key: "counts", value: APIJSON.counts(current)),
        ])
        return Self.json(body.serializedString, status: .ok)
    }

    private func conversations(_ request: Request) async throws -> Response {
        let user = try await authenticate(request)
        let query = request.uri.queryParameters
        let limit = try Self.limit(query["limit"].map(String.init))
        let before = try query["before"].map { try Cursor.decode(String($0)) }
        let page = try await readOrUnavailable {
            try await reads.conversations(
                of: user, limit: limit,
                before: before.map { ConversationCursor(lastMessageAt: $0.microseconds, conversationID: $0.id) })
        }
        let body = JSONValue.object([
            (key: "conversations", value: .array(page.conversations.map(APIJSON.conversation))),
            (
                key: "next",
                value: page.next.map { .string(Cursor.encode($0.lastMessageAt, $0.conversationID)) } ?? .null
            ),
        ])
        return Self.json(body.serializedString, status: .ok)
    }

    private func userCounts(_ user: String) async throws -> UserCounts {
        try await readOrUnavailable {
            try await reads.userCounts([user], policy: configuration.badgePolicy)[user] ?? .zero
        }
    }

    /// Runs a read; a database failure answers `503`.
    func readOrUnavailable<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as APIError {
            throw error
        } catch {
            logger.warning("a read failed", metadata: ["api.error": "\(error)"])
            throw APIError(.unavailable, "the database cannot be read now", status: .serviceUnavailable)
        }
    }

    // MARK: Writes

    /// Builds the event of a write (`type`, for the token's user, with the members `fields` makes of the body),
    /// checks it as a worker would (`400` with the reason when it is invalid, nothing published), publishes it
    /// with confirms and answers `202 {"event_id"}`.
    private func write(
        _ request: Request, type: String, needsBody: Bool = true,
        fields: (JSONValue) throws -> [(String, JSONValue)]
    ) async throws -> Response {
        let user = try await authenticate(request)
        var body = JSONValue.object([])
        if needsBody {
            if let contentType = request.headers[.contentType],
                !contentType.lowercased().hasPrefix("application/json")
            {
                throw APIError(.badRequest, "the body must be application/json", status: .unsupportedMediaType)
            }
            let bytes: ByteBuffer
            do {
                bytes = try await request.body.collect(upTo: configuration.maxBodyBytes)
            } catch {
                throw APIError(
                    .bodyTooLarge, "the body is larger than \(configuration.maxBodyBytes) bytes",
                    status: .contentTooLarge)
            }
            if bytes.readableBytes > 0 {
                do {
                    body = try JSONValue.parse(Array(buffer: bytes))
                } catch {
                    throw APIError.badRequest("the body is not JSON: \(error)")
                }
                guard body.objectMembers != nil else { throw APIError.badRequest("the body must be a JSON object") }
            }
        }
        let id: String
        if let key = request.headers[HTTPField.Name("Idempotency-Key")!] {
            guard (1...128).contains(key.utf8.count), key.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) else {
                throw APIError.badRequest("Idempotency-Key must be 1 to 128 printable ASCII characters")
            }
            id = IdempotentEventID.make(user: user, key: key)
        } else {
            id = UUID().uuidString
        }
        var members: [(key: String, value: JSONValue)] = [
            (key: "id", value: .string(id)), (key: "type", value: .string(type)),
            (key: "recipient", value: .string(user)),
            (key: "occurred_at", value: .string(Timestamp(date: Date()).rfc3339Milliseconds)),
        ]
        for (key, value) in try fields(body) { members.append((key: key, value: value)) }
        let event = JSONValue.object(members)
        if case .failure(let invalid) = EventDecoder.decode(json: event) {
            throw APIError.badRequest("\(invalid.code): \(invalid.message)")
        }
        try await publisher.publish(event.serialized(), recipient: user, eventID: id, type: type)
        Counter(label: "badgepipe_api_writes_total", dimensions: [("type", type)]).increment()
        return Self.json(
            JSONValue.object([(key: "event_id", value: .string(id))]).serializedString, status: .accepted)
    }

    /// The optional `until` of a read-state write.
    private static func until(_ body: JSONValue) -> [(String, JSONValue)] {
        guard let until = body["until"] else { return [] }
        return [("until", until)]
    }

    // MARK: Support

    /// The user of the request's bearer token (the stream also takes `?access_token=`); `401` otherwise. Tokens
    /// and query strings are never logged.
    func authenticate(_ request: Request, allowQuery: Bool = false) async throws -> String {
        var token: String?
        if let header = request.headers[.authorization] {
            let parts = header.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "bearer" else {
                throw APIError.unauthorized("the Authorization header is not a bearer token")
            }
            token = String(parts[1])
        } else if allowQuery, let query = request.uri.queryParameters["access_token"] {
            token = String(query)
        }
        guard let token, !token.isEmpty else { throw APIError.unauthorized("a bearer token is required") }
        return try await verifier.user(of: token)
    }

    static func limit(_ text: String?) throws -> Int {
        guard let text else { return APIConfiguration.defaultPageSize }
        guard let limit = Int(text), (1...AppReadLimits.pageSize).contains(limit) else {
            throw APIError.badRequest("limit must be 1 to \(AppReadLimits.pageSize)")
        }
        return limit
    }

    static func json(_ text: String, status: HTTPResponse.Status) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        headers[.cacheControl] = "no-store"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
}

extension JSONValue {
    /// The serialized JSON as a string.
    var serializedString: String { String(decoding: serialized(), as: UTF8.self) }
}
